package rps.client

import kotlinx.coroutines.test.runTest
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/** Retiring a lost phone's key through [AccountKeys]: retried with one Idempotency-Key over a lost connection. */
class AccountKeysTest {
    private val phone = KeyLogs.key(1)
    private val lost = KeyLogs.key(2)
    private val log = KeyLogs().signUp(phone).addKey(lost, phone)

    /** The server: [failures] lost connections before it retires the key (written as signed by this phone's key). */
    private inner class Server(var failures: Int) : KeysApi {
        val idempotencyKeys = ArrayList<String>()

        override suspend fun keyLog(accountId: String) = log.events.toList()

        override suspend fun addKey(publicKey: String, idempotencyKey: String, auth: ActionAuth) = error("not used")

        override suspend fun retireKey(keyId: String, idempotencyKey: String, auth: ActionAuth) {
            idempotencyKeys += idempotencyKey
            if (failures-- > 0) throw RpsException.Network(java.io.IOException("connection reset"))
            log.retire(keyId, phone)
        }
    }

    private fun keysOf(server: Server) = AccountKeys(
        server,
        log.accountId,
        { log.origin },
        object : DeviceKeyHolder {
            override fun key() = phone
            override val inKeystore = false
            override fun create() = error("has one")
            override fun known() = setOf(phone.keyId, lost.keyId)
            override fun addKnown(keyId: String) = Unit
        },
        retry = RetryPolicy(maxAttempts = 3, initialDelayMs = 1, maxDelayMs = 1),
    )

    private val AccountKeys.keys get() = state.value as KeysUiState.Keys

    @Test
    fun `a lost connection is retried with the same idempotency key and the key is retired`() = runTest {
        val server = Server(failures = 2)
        val keys = keysOf(server)
        keys.refresh()
        keys.askRetire(lost.keyId)
        keys.retire()
        assertEquals(3, server.idempotencyKeys.size)
        assertEquals(1, server.idempotencyKeys.distinct().size)
        assertEquals(KeysOutcome.KeyRetired(lost.keyId), keys.keys.outcome)
        assertEquals(KeyLine.Kind.RETIRED, keys.keys.lines.single { it.keyId == lost.keyId }.kind)
        assertEquals(null, keys.keys.confirmRetire)
    }

    @Test
    fun `when the connection stays lost the confirmation stays open to try again`() = runTest {
        val server = Server(failures = 3)
        val keys = keysOf(server)
        keys.refresh()
        keys.askRetire(lost.keyId)
        keys.retire()
        assertTrue((keys.keys.outcome as KeysOutcome.Failed).error is RpsException.Network)
        assertEquals(lost.keyId, keys.keys.confirmRetire?.keyId)
        keys.retire()
        assertEquals(KeysOutcome.KeyRetired(lost.keyId), keys.keys.outcome)
        // The second try is a new request: a fresh idempotency key.
        assertEquals(2, server.idempotencyKeys.distinct().size)
    }
}
