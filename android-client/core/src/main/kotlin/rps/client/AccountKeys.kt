package rps.client

import kotlinx.coroutines.flow.MutableStateFlow
import kotlinx.coroutines.flow.StateFlow
import kotlinx.coroutines.flow.asStateFlow
import kotlinx.coroutines.sync.Mutex
import kotlinx.coroutines.sync.withLock
import kotlinx.serialization.json.JsonObject
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
 * watches the account's key log ([KeyWatch]), binds this device's first key, adds another
 * phone's key and retires a lost one, signed by this device's. [state] is [keysUiStateOf] of what it knows.
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
        val (idem, auth) = signed(SignedAction.ADD_KEY, ActionPayloads.addKey(publicKey), signer)
        // Known before it is sent: the watch must never flag the key this device is adding.
        holder.addKnown(HeadSignatures.keyIdOf(Crypto.unhex(publicKey)))
        retry.run { api.addKey(publicKey, idem, auth) }
    }

    /** Asks to retire [keyId] (another phone's key): the screen shows what that does until [retire] or [cancelRetire]. */
    suspend fun askRetire(keyId: String) = update { it.copy(confirmingRetire = keyId, outcome = null) }

    suspend fun cancelRetire() = update { it.copy(confirmingRetire = null) }

    /**
     * Retires the key the screen is confirming (a lost phone's), signed by this device's key: that
     * phone can no longer act for the account. Only a line [keysUiStateOf] offers is retired, never
     * this device's own. A refusal closes the confirmation; a lost connection (after the retries,
     * with the same Idempotency-Key) leaves it open to try again.
     */
    suspend fun retire() {
        val s = state.value as? KeysUiState.Keys ?: return
        // A second tap while the first is on its way (the button waits, but a click can be queued).
        if (s.busy) return
        val keyId = s.confirmRetire?.keyId ?: return
        act(keepConfirming = { it.retryable }) {
            val key = holder.key() ?: throw IllegalStateException("no key on this device")
            val (idem, auth) = signed(SignedAction.RETIRE_KEY, ActionPayloads.retireKey(keyId), key)
            retry.run { api.retireKey(keyId, idem, auth) }
            KeysOutcome.KeyRetired(keyId)
        }
    }

    /** A fresh Idempotency-Key and [signer]'s signature over [action] on this account, now. */
    private suspend fun signed(action: SignedAction, payload: JsonObject, signer: PlayerKey): Pair<String, ActionAuth> {
        val idem = UUID.randomUUID().toString()
        val m = ActionMessage(origin(), action, accountId, null, null, null, payload, idem, signer.keyId, clock.nowMs())
        return idem to ActionAuth.of(m, signer)
    }

    /** Runs [block] with the buttons waiting, then reads the key log again; [keepConfirming] says which failures leave a confirmation open. */
    private suspend fun act(keepConfirming: (RpsException) -> Boolean = { false }, block: suspend () -> KeysOutcome?) {
        update { it.copy(busy = true, outcome = null) }
        var failure: RpsException? = null
        val outcome = try {
            block()
        } catch (e: RpsException) {
            failure = e
            KeysOutcome.Failed(e)
        }
        update {
            it.copy(
                busy = false,
                outcome = outcome,
                deviceKey = holder.key(),
                confirmingRetire = it.confirmingRetire.takeIf { failure?.let(keepConfirming) == true },
            )
        }
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
