package rps.client

import kotlinx.coroutines.flow.MutableStateFlow
import kotlinx.coroutines.flow.StateFlow
import kotlinx.coroutines.flow.asStateFlow
import kotlinx.coroutines.sync.Mutex
import kotlinx.coroutines.sync.withLock
import java.util.UUID

/** Where a device keeps its key for one account, and the keys it added to it (the app: the Keystore and the account's record). */
interface DeviceKeyHolder {
    /** This device's key for the account, or null. */
    fun key(): PlayerKey?

    /** Whether [key] never leaves the Android Keystore. */
    val inKeystore: Boolean

    /** Makes this device's key for the account and keeps it. */
    fun create(): PlayerKey

    /** The keys this device added to the account (its own among them). */
    fun known(): Set<String>

    fun addKnown(keyId: String)
}

/**
 * The keys screen's work, outside the screen (as [GameSession] is the game screen's): reads and
 * watches the account's key log ([KeyWatch]), binds this device's first key, and adds another
 * phone's key signed by this device's. [state] is [keysUiStateOf] of what it knows.
 */
class AccountKeys(
    private val api: KeysApi,
    private val accountId: String,
    private val origin: suspend () -> String,
    private val holder: DeviceKeyHolder,
    private val clock: Clock = Clock.SYSTEM,
    private val retry: RetryPolicy = RetryPolicy(),
) {
    private val lock = Mutex()
    private var snap = KeysSnapshot(holder.key(), holder.inKeystore)
    private val _state = MutableStateFlow(keysUiStateOf(snap))
    val state: StateFlow<KeysUiState> = _state.asStateFlow()

    private val watch = KeyWatch(api, accountId) { origin() }

    /** Reads the key log again and reports what this device did not do. */
    suspend fun refresh() {
        val key = holder.key()
        try {
            val report = watch.check(key?.keyId ?: "", holder.known())
            update { it.copy(deviceKey = key, report = report, readFailure = null) }
        } catch (e: RpsException) {
            update { it.copy(readFailure = e, report = null) }
        }
    }

    /**
     * Makes this device's key. An account with no key at all binds it at once, signed by itself
     * (proof of possession); otherwise it waits to be added by a phone that has a key (its QR code).
     */
    suspend fun makeKey() = act {
        val key = holder.key() ?: holder.create()
        val firstKey = snap.report?.history?.keys?.isEmpty() == true
        if (firstKey) {
            add(key.publicKeyHex, key)
            KeysOutcome.KeyBound
        } else {
            null
        }
    }

    /** Adds another phone's key ([text], its 64 hex characters, as typed or scanned), signed by this device's key. */
    suspend fun addPhone(text: String) {
        val publicKey = text.trim().lowercase()
        if (!PUBLIC_KEY.matches(publicKey)) {
            update { it.copy(outcome = KeysOutcome.NotAKey) }
            return
        }
        act {
            val key = holder.key() ?: throw IllegalStateException("no key on this device")
            add(publicKey, key)
            val id = HeadSignatures.keyIdOf(Crypto.unhex(publicKey))
            KeysOutcome.PhoneAdded(id)
        }
    }

    private suspend fun add(publicKey: String, signer: PlayerKey) {
        val idem = UUID.randomUUID().toString()
        val m = ActionMessage(
            origin(), SignedAction.ADD_KEY, accountId, null, null, null,
            ActionPayloads.addKey(
                publicKey,
            ),
            idem, signer.keyId, clock.nowMs(),
        )
        val auth = ActionAuth.of(m, signer)
        // Known before it is sent: the watch must never flag the key this device is adding.
        holder.addKnown(HeadSignatures.keyIdOf(Crypto.unhex(publicKey)))
        retry.run { api.addKey(publicKey, idem, auth) }
    }

    private suspend fun act(block: suspend () -> KeysOutcome?) {
        update { it.copy(busy = true, outcome = null) }
        val outcome = try {
            block()
        } catch (e: RpsException) {
            KeysOutcome.Failed(e)
        }
        update { it.copy(busy = false, outcome = outcome, deviceKey = holder.key()) }
        refresh()
    }

    private suspend fun update(change: (KeysSnapshot) -> KeysSnapshot) = lock.withLock {
        snap = change(snap)
        _state.value = keysUiStateOf(snap)
    }

    companion object {
        private val PUBLIC_KEY = Regex("[0-9a-f]{64}")
    }
}
