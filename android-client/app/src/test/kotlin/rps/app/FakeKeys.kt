package rps.app

import kotlinx.coroutines.CompletableDeferred
import rps.client.ActionAuth
import rps.client.Crypto
import rps.client.HeadSignatures
import rps.client.KeyEvent
import rps.client.KeyLogs
import rps.client.KeysApi
import rps.client.RpsException

/**
 * Key logs as the server keeps them (core's [KeyLogs]), one per account: what the app adds or
 * retires is written with the signature it sent, and checked only when read back (as the app's KeyWatch and
 * rpsverify check a real server's), so a wrong signature shows as a broken key log.
 */
class FakeKeys(private val me: String) : KeysApi {
    val logs = HashMap<String, KeyLogs>()

    /** Keys added through [addKey], in order. */
    val added = ArrayList<String>()

    /** The retirements asked through [retireKey], in order, as sent (accepted or refused). */
    val retireRequests = ArrayList<Retirement>()

    data class Retirement(val keyId: String, val idempotencyKey: String, val auth: ActionAuth)

    /** What the server answers the next retirement instead of doing it (a refusal). */
    var refuseRetire: RpsException? = null

    /** When set, the next retirement is answered only once it completes (to see the screen while it runs). */
    var holdRetire: CompletableDeferred<Unit>? = null

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

    /** How often each account's key log was read. */
    val reads = HashMap<String, Int>()

    override suspend fun keyLog(accountId: String): List<KeyEvent> {
        reads[accountId] = (reads[accountId] ?: 0) + 1
        return logs[accountId]?.events?.toList().orEmpty()
    }

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

    override suspend fun retireKey(keyId: String, idempotencyKey: String, auth: ActionAuth) {
        retireRequests += Retirement(keyId, idempotencyKey, auth)
        holdRetire?.let {
            holdRetire = null
            it.await()
        }
        refuseRetire?.let {
            refuseRetire = null
            throw it
        }
        of(me).add(
            KeyEvent.KEY_RETIRED,
            KeyLogs.data(
                "keyId" to keyId,
                "signer" to auth.keyId,
                "signedAt" to auth.signedAt,
                "signature" to auth.signature,
                "idempotencyKey" to idempotencyKey,
            ),
        )
    }

    companion object {
        /** The recorded server's log origin (`GET /v1/log`), which the app's signatures bind; one of its own for a recording without a log. */
        val ORIGIN: String get() = Fakes.server.recording.log?.origin ?: "fake.test/log"

        fun keyIdOf(publicKey: String) = HeadSignatures.keyIdOf(Crypto.unhex(publicKey))
    }
}
