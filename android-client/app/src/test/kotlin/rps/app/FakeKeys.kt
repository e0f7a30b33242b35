package rps.app

import rps.client.ActionAuth
import rps.client.Crypto
import rps.client.HeadSignatures
import rps.client.KeyEvent
import rps.client.KeyLogs
import rps.client.KeysApi

/**
 * Key logs as the server keeps them (core's [KeyLogs]), one per account: what the app adds is
 * written with the signature it sent, and checked only when read back (as the app's KeyWatch and
 * rpsverify check a real server's), so a wrong signature shows as a broken key log.
 */
class FakeKeys(private val me: String) : KeysApi {
    val logs = HashMap<String, KeyLogs>()

    /** Keys added through [addKey], in order. */
    val added = ArrayList<String>()

    fun of(accountId: String): KeyLogs = logs.getOrPut(accountId) { KeyLogs(accountId, ORIGIN) }

    fun signUp(name: String, publicKey: String, auth: ActionAuth) {
        of(me).add(
            KeyEvent.KEY_ADDED,
            KeyLogs.data(
                "keyId" to keyIdOf(publicKey),
                "publicKey" to publicKey,
                "via" to "sign_up",
                "signer" to auth.keyId,
                "signedAt" to auth.signedAt,
                "signature" to auth.signature,
                "idempotencyKey" to null,
                "name" to name,
            ),
        )
    }

    override suspend fun keyLog(accountId: String): List<KeyEvent> = logs[accountId]?.events?.toList().orEmpty()

    override suspend fun addKey(publicKey: String, idempotencyKey: String, auth: ActionAuth) {
        added += publicKey
        of(me).add(
            KeyEvent.KEY_ADDED,
            KeyLogs.data(
                "keyId" to keyIdOf(publicKey),
                "publicKey" to publicKey,
                "via" to "add_key",
                "signer" to auth.keyId,
                "signedAt" to auth.signedAt,
                "signature" to auth.signature,
                "idempotencyKey" to idempotencyKey,
            ),
        )
    }

    override suspend fun retireKey(keyId: String, idempotencyKey: String, auth: ActionAuth) = error("not used by the app's tests")

    companion object {
        /** The recorded server's log origin (`GET /v1/log`), which the app's signatures bind; one of its own for a recording without a log. */
        val ORIGIN: String get() = Fakes.server.recording.log?.origin ?: "fake.test/log"

        fun keyIdOf(publicKey: String) = HeadSignatures.keyIdOf(Crypto.unhex(publicKey))
    }
}
