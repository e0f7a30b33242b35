package rps.client

import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive

/**
 * Builds an account's key log as the server writes it (spec of issue 31, "The key log"): each
 * change signed by the key the test names, chained and hashed, so a test can also write what a
 * dishonest operator would (a recovery, a key signed by no key of the account).
 */
class KeyLogs(val accountId: String = "6f1c2a9e-3b7d-4c5e-8f10-2a3b4c5d6e7f", val origin: String = "rps.example.com/log") {
    val events = ArrayList<KeyEvent>()
    private var ms = 1_795_000_000_000L

    fun signUp(key: PlayerKey, name: String = "alice"): KeyLogs {
        val m = message(SignedAction.SIGN_UP, null, ActionPayloads.signUp(name, key.publicKeyHex), null, key)
        return add(
            "key_added",
            data(
                "keyId" to key.keyId,
                "publicKey" to key.publicKeyHex,
                "via" to "sign_up",
                "signer" to key.keyId,
                "signedAt" to m.signedAt,
                "signature" to Crypto.hex(m.sign(key)),
                "idempotencyKey" to null,
                "name" to name,
            ),
        )
    }

    /** [key] added by [signer] (a first key by itself). */
    fun addKey(key: PlayerKey, signer: PlayerKey): KeyLogs {
        val idem = "add-${events.size + 1}"
        val m = message(SignedAction.ADD_KEY, accountId, ActionPayloads.addKey(key.publicKeyHex), idem, signer)
        return add(
            "key_added",
            data(
                "keyId" to key.keyId,
                "publicKey" to key.publicKeyHex,
                "via" to "add_key",
                "signer" to signer.keyId,
                "signedAt" to m.signedAt,
                "signature" to Crypto.hex(m.sign(signer)),
                "idempotencyKey" to idem,
            ),
        )
    }

    fun retire(keyId: String, signer: PlayerKey): KeyLogs {
        val idem = "retire-${events.size + 1}"
        val m = message(SignedAction.RETIRE_KEY, accountId, ActionPayloads.retireKey(keyId), idem, signer)
        return add(
            "key_retired",
            data(
                "keyId" to keyId,
                "signer" to signer.keyId,
                "signedAt" to m.signedAt,
                "signature" to Crypto.hex(m.sign(signer)),
                "idempotencyKey" to idem,
            ),
        )
    }

    /** The operator's recovery: [retired] out, [key] in, no player signature. */
    fun recover(key: PlayerKey, retired: List<String>, reason: String = "lost phone"): KeyLogs = add(
        "keys_recovered",
        JsonObject(
            mapOf(
                "keyId" to JsonPrimitive(key.keyId),
                "publicKey" to JsonPrimitive(key.publicKeyHex),
                "retired" to JsonArray(retired.map { JsonPrimitive(it) }),
                "admin" to JsonPrimitive("admin-1"),
                "reason" to JsonPrimitive(reason),
            ),
        ),
    )

    /** Any event, chained and hashed after the last. */
    fun add(type: String, data: JsonObject): KeyLogs {
        ms += 60_000
        val prev = events.lastOrNull()?.hash ?: EventChain.ZERO_HASH
        val e = KeyEvent(events.size + 1L, type, accountId, at(ms), data, prev, "")
        events += e.copy(hash = KeyEvent.hashOf(e))
        return this
    }

    /** The instant of the last event, in the log's time format, plus [plusMs]. */
    fun now(plusMs: Long = 1): String = at(ms + plusMs)

    val nowMs: Long get() = ms

    fun history(): KeyHistory = KeyHistory.verify(accountId, origin, events)

    fun api(): KeysApi = object : KeysApi {
        override suspend fun keyLog(accountId: String) = if (accountId == this@KeyLogs.accountId) events.toList() else emptyList()
        override suspend fun addKey(publicKey: String, idempotencyKey: String, auth: ActionAuth) = error("read only")
        override suspend fun retireKey(keyId: String, idempotencyKey: String, auth: ActionAuth) = error("read only")
    }

    private fun message(
        action: SignedAction,
        player: String?,
        payload: JsonObject,
        idem: String?,
        signer: PlayerKey,
    ) = ActionMessage(origin, action, player, null, null, null, payload, idem, signer.keyId, ms + 30_000)

    companion object {
        fun key(n: Int): SoftwarePlayerKey = SoftwarePlayerKey(ByteArray(32) { (n * 31 + it).toByte() })

        fun at(ms: Long): String = java.time.format.DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSS'Z'")
            .withZone(java.time.ZoneOffset.UTC).format(java.time.Instant.ofEpochMilli(ms))

        fun data(vararg members: Pair<String, Any?>) = JsonObject(
            members.associate { (k, v) ->
                k to when (v) {
                    null -> JsonNull
                    is String -> JsonPrimitive(v)
                    is Number -> JsonPrimitive(v)
                    is JsonElement -> v
                    else -> error("$v")
                }
            },
        )
    }
}
