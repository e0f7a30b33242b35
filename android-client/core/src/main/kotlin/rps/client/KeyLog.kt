package rps.client

import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.longOrNull

/**
 * One event of an account's key log (`KeyEvent` in the contract): its own hash chain, each event
 * a leaf of the transparency log. [data] is kept exactly as received, as the chain hashes it.
 */
data class KeyEvent(
    val seq: Long,
    val type: String,
    val accountId: String,
    /** The log's time format (`tournament.FormatTime`), the very string hashed. */
    val at: String,
    val data: JsonObject,
    val prevHash: String,
    val hash: String,
) {
    fun str(k: String): String? = (data[k] as? JsonPrimitive)?.takeIf { it.isString }?.content

    /** The event as rpsverify prints it: the evidence shown with a notice. */
    val evidence: String get() = "key event $seq of account $accountId at $at: $type ${CanonicalJson.encode(data)} (hash $hash)"

    /**
     * [data] for a player to read, a field a line, in the order a player asks (which key, signed by
     * which, when, how, then the long hex and the rest by name): each value exact as logged (a
     * string as it is, a list comma-separated, anything else as JSON); `signedAt`, the signer's
     * clock in Unix milliseconds, with its time in front. A null field says nothing and is left out.
     */
    val dataToRead: List<Pair<String, String>>
        get() = data.entries.filter { it.value !is JsonNull }
            .sortedWith(compareBy({ READING_ORDER.indexOf(it.key).let { i -> if (i < 0) READING_ORDER.size else i } }, { it.key }))
            .map { (k, v) -> k to valueToRead(k, v) }

    companion object {
        /** The fields of [data] a player reads first, in this order ([dataToRead]). */
        private val READING_ORDER =
            listOf("keyId", "signer", "signedAt", "via", "admin", "reason", "retired", "name", "publicKey", "signature", "idempotencyKey")

        private fun valueToRead(field: String, v: JsonElement): String = when {
            v is JsonArray -> v.joinToString(", ") { valueToRead("", it) }
            v !is JsonPrimitive -> CanonicalJson.encode(v)
            v.isString -> v.content
            else -> v.longOrNull?.takeIf { field == "signedAt" }?.let { "${Mappers.iso(it)} (${v.content})" } ?: v.content
        }

        const val KEY_ADDED = "key_added"
        const val KEY_RETIRED = "key_retired"
        const val KEYS_RECOVERED = "keys_recovered"

        /** `blake2b-256(prevHash || RFC 8785 of {accountId, at, data, seq, type})`, hex. */
        fun hashOf(e: KeyEvent): String {
            val body = JsonObject(
                mapOf(
                    "accountId" to JsonPrimitive(e.accountId),
                    "at" to JsonPrimitive(e.at),
                    "data" to e.data,
                    "seq" to JsonPrimitive(e.seq),
                    "type" to JsonPrimitive(e.type),
                ),
            )
            return Crypto.hex(Crypto.blake2b256(Crypto.unhex(e.prevHash), CanonicalJson.encodeToBytes(body)))
        }

        /** The events of a `GET /v1/accounts/{id}/keys` answer, data as received. */
        fun listOf(answer: JsonObject): List<KeyEvent> = answer["events"]!!.jsonArray.map { x ->
            val o = x.jsonObject
            fun s(k: String) = o[k]!!.jsonPrimitive.content
            KeyEvent(
                o["seq"]!!.jsonPrimitive.longOrNull!!,
                s("type"),
                s("accountId"),
                s("at"),
                o["data"]!!.jsonObject,
                s("prevHash"),
                s("hash"),
            )
        }
    }
}

/** A key of an account, as its key log made it: when it was added and, once retired, when. */
data class KeyRecord(
    val keyId: String,
    val publicKey: String,
    val addedSeq: Long,
    val addedAt: String,
    /** How it came: `sign_up`, `add_key`, or `recovery` (the operator's word, no player signature). */
    val via: String,
    /** The key that signed its addition (itself for a first key); null for a recovery. */
    val signer: String?,
    val retiredSeq: Long? = null,
    val retiredAt: String? = null,
) {
    val recovery: Boolean get() = via == VIA_RECOVERY
    val active: Boolean get() = retiredSeq == null

    /** Whether the key could sign at [at] (the log's time format): added no later, retired no earlier. */
    fun activeAt(at: String): Boolean {
        val t = epochMsOf(at) ?: return false
        val added = epochMsOf(addedAt) ?: return false
        return added <= t && (retiredAt == null || (epochMsOf(retiredAt) ?: return false) >= t)
    }

    companion object {
        const val VIA_RECOVERY = "recovery"
    }
}

/** An account's key log does not verify: the chain, or a key change not made by a key the account had. */
class KeyLogBrokenException(val event: KeyEvent?, reason: String) :
    Exception(if (event != null) "key event ${event.seq} of account ${event.accountId}: $reason" else reason)

/**
 * An account's keys as its verified key log says: every event linked and hashed, every key added
 * or retired by the signature of a key the account had at that point (a first key by itself),
 * and every recovery by the operator kept as exactly that ([recoveries]).
 */
data class KeyHistory(val accountId: String, val keys: List<KeyRecord>, val events: List<KeyEvent>) {
    val active: List<KeyRecord> get() = keys.filter { it.active }
    val recoveries: List<KeyEvent> get() = events.filter { it.type == KeyEvent.KEYS_RECOVERED }
    val head: KeyEvent? get() = events.lastOrNull()

    fun key(keyId: String): KeyRecord? = keys.firstOrNull { it.keyId == keyId }

    /** Whether the account had any key at [at]: an action then must be signed. */
    fun hadKeyAt(at: String): Boolean = keys.any { it.activeAt(at) }

    /**
     * When the account signed up with its first key (null: an account made before keys were,
     * its first key added later). It has had a key since: an action before it is one the
     * operator dated back, to pass it as a keyless player's.
     */
    val signedUpAt: String? get() = keys.firstOrNull { it.addedSeq == 1L && it.via == "sign_up" }?.addedAt

    /** Whether [at] is before the account's sign-up with a key. */
    fun beforeSignUp(at: String): Boolean {
        val signedUp = signedUpAt?.let { epochMsOf(it) } ?: return false
        return epochMsOf(at)?.let { it < signedUp } ?: false
    }

    companion object {
        /**
         * Verifies [events] (the whole log, from seq 1) of [accountId] under the log's [origin]
         * (what the signatures bind); throws [KeyLogBrokenException] at the first that does not hold.
         */
        fun verify(accountId: String, origin: String, events: List<KeyEvent>): KeyHistory {
            val keys = LinkedHashMap<String, KeyRecord>()
            var prev = EventChain.ZERO_HASH
            events.forEachIndexed { i, e ->
                fun broken(reason: String): Nothing = throw KeyLogBrokenException(e, reason)
                if (e.seq != i + 1L) broken("expected seq ${i + 1}")
                if (e.accountId != accountId) broken("belongs to account ${e.accountId}")
                if (e.prevHash != prev) broken("prevHash does not link to key event ${e.seq - 1}")
                val h = try {
                    KeyEvent.hashOf(e)
                } catch (ex: IllegalArgumentException) {
                    broken("cannot canonicalize: ${ex.message}")
                }
                if (h != e.hash) broken("hash mismatch (computed $h, served ${e.hash})")
                prev = e.hash
                fun active(id: String?) = id?.let { keys[it] }?.takeIf { it.active }
                when (e.type) {
                    KeyEvent.KEY_ADDED -> {
                        val (keyId, publicKey) = newKey(e)
                        val via = e.str("via")
                        val signer = e.str("signer") ?: broken("no signer")
                        val action = when (via) {
                            "sign_up" -> if (e.seq == 1L) SignedAction.SIGN_UP else broken("a sign-up key after the account's first event")
                            "add_key" -> SignedAction.ADD_KEY
                            else -> broken("added via \"$via\"")
                        }
                        // A first key proves possession of itself; any later one is vouched for by a key the account has.
                        val signerKey = when {
                            keys.isEmpty() && signer == keyId -> publicKey
                            else -> active(signer)?.publicKey ?: broken("signed by key $signer, which the account did not have")
                        }
                        val payload = if (action == SignedAction.SIGN_UP) {
                            ActionPayloads.signUp(e.str("name") ?: broken("a sign-up without its name"), publicKey)
                        } else {
                            ActionPayloads.addKey(publicKey)
                        }
                        checkSignature(
                            e,
                            origin,
                            action,
                            if (action ==
                                SignedAction.SIGN_UP
                            ) {
                                null
                            } else {
                                accountId
                            },
                            payload,
                            signer,
                            signerKey,
                        )
                        keys[keyId] = KeyRecord(keyId, publicKey, e.seq, e.at, via, signer)
                    }
                    KeyEvent.KEY_RETIRED -> {
                        val keyId = e.str("keyId") ?: broken("no keyId")
                        val retired = active(keyId) ?: broken("retires key $keyId, which is not an active key of the account")
                        val signer = e.str("signer") ?: broken("no signer")
                        val signerKey = active(signer)?.publicKey ?: broken("signed by key $signer, which the account did not have")
                        checkSignature(e, origin, SignedAction.RETIRE_KEY, accountId, ActionPayloads.retireKey(keyId), signer, signerKey)
                        keys[keyId] = retired.copy(retiredSeq = e.seq, retiredAt = e.at)
                    }
                    KeyEvent.KEYS_RECOVERED -> {
                        val (keyId, publicKey) = newKey(e)
                        val retired = (e.data["retired"] as? kotlinx.serialization.json.JsonArray)?.map { it.jsonPrimitive.content }
                            ?: broken("no list of retired keys")
                        val wasActive = keys.values.filter { it.active }.map { it.keyId }.toSet()
                        if (retired.toSet() !=
                            wasActive
                        ) {
                            broken("retires $retired, but the account's active keys were ${wasActive.sorted()}")
                        }
                        for (id in retired) keys[id] = keys.getValue(id).copy(retiredSeq = e.seq, retiredAt = e.at)
                        keys[keyId] = KeyRecord(keyId, publicKey, e.seq, e.at, KeyRecord.VIA_RECOVERY, null)
                    }
                    else -> broken("unknown key event type ${e.type}")
                }
            }
            return KeyHistory(accountId, keys.values.toList(), events)
        }

        private fun newKey(e: KeyEvent): Pair<String, String> {
            val keyId = e.str("keyId") ?: throw KeyLogBrokenException(e, "no keyId")
            val publicKey = e.str("publicKey") ?: throw KeyLogBrokenException(e, "no publicKey")
            val raw = unhexOrNull(publicKey)
            if (raw == null || raw.size != 32 || HeadSignatures.keyIdOf(raw) != keyId || publicKey != publicKey.lowercase()) {
                throw KeyLogBrokenException(e, "key $keyId is not the id of public key $publicKey")
            }
            return keyId to publicKey
        }

        private fun checkSignature(
            e: KeyEvent,
            origin: String,
            action: SignedAction,
            player: String?,
            payload: JsonObject,
            signer: String,
            signerKey: String,
        ) {
            val signedAt = (e.data["signedAt"] as? JsonPrimitive)?.longOrNull ?: throw KeyLogBrokenException(e, "no signedAt")
            val idem = e.data["idempotencyKey"]?.takeIf { it != JsonNull }?.jsonPrimitive?.content
            val m = ActionMessage(origin, action, player, null, null, null, payload, idem, signer, signedAt)
            val sig = e.str("signature") ?: throw KeyLogBrokenException(e, "no signature")
            if (!m.verify(signerKey, sig)) {
                throw KeyLogBrokenException(e, "the signature by key $signer does not verify over ${String(m.bytes(), Charsets.UTF_8)}")
            }
        }
    }
}

/**
 * `at` in the key log's and the lobby log's time format, in Unix milliseconds for comparisons
 * (null: not such a time). Not java.time, which needs API 26: the app runs from API 23, where
 * verifying a key log would fail with NoClassDefFoundError.
 */
internal fun epochMsOf(at: String): Long? = try {
    Mappers.epochMs(at)
} catch (_: IllegalStateException) {
    null
}
