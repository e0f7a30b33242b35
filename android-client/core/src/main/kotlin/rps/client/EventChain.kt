package rps.client

import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive

/** What a lobby's feed delivers, in order: its events, and the server's signed heads between them. */
sealed interface FeedItem

/** One entry of a lobby's hash-chained event log, as served. */
data class ChainEvent(
    val seq: Long,
    val type: String,
    val lobbyId: String,
    val gameId: String?,
    /** RFC 3339 UTC with milliseconds, the very string that was hashed. */
    val at: String,
    /** The data exactly as received: what the chain hashes. */
    val data: JsonObject,
    val prevHash: String,
    val hash: String,
    /** The same data typed by [type] (Mappers.eventData): what the client reads. */
    val typed: EventData,
) : FeedItem

/**
 * The server's signed statement that a lobby's log has [seq] events, the last with [hash]
 * (`SignedHead` in openapi.yaml). Kept as a receipt: a validly signed head that is not on the log
 * later proves that the operator rewrote it (`rpsverify --receipts` checks a file of them).
 */
data class SignedHead(
    val lobbyId: String,
    val seq: Long,
    val hash: String,
    val at: String,
    val keyId: String,
    val signature: String,
) : FeedItem

/** The log does not verify: a hash, a link or the sequence is wrong. */
class ChainBrokenException(val seq: Long, reason: String) : Exception("event $seq: $reason")

object EventChain {
    val ZERO_HASH: String = "0".repeat(64)

    /** The object whose canonical form is hashed: `{seq, type, lobbyId, gameId, at, data}`. */
    fun canonical(e: ChainEvent): String = CanonicalJson.encode(
        JsonObject(
            mapOf(
                "seq" to JsonPrimitive(e.seq),
                "type" to JsonPrimitive(e.type),
                "lobbyId" to JsonPrimitive(e.lobbyId),
                "gameId" to (e.gameId?.let { JsonPrimitive(it) } ?: JsonNull),
                "at" to JsonPrimitive(e.at),
                "data" to e.data,
            ),
        ),
    )

    /** `blake2b-256(prevHash || canonical)` in lower-case hex, with [prevHash] as given in hex. */
    fun hash(prevHash: String, e: ChainEvent): String =
        Crypto.hex(Crypto.blake2b256(Crypto.unhex(prevHash), canonical(e).toByteArray(Charsets.UTF_8)))
}

/**
 * Checks events one at a time as they arrive: consecutive `seq`, `prevHash` equal to the previous
 * event's hash (zeros before seq 1), and `hash` recomputed. Start it from a trusted checkpoint
 * ([lastSeq], [lastHash], and the receipt [head] kept with it) or from the beginning of the log.
 */
class ChainVerifier(lastSeq: Long = 0, lastHash: String = EventChain.ZERO_HASH, head: SignedHead? = null) {
    var lastSeq: Long = lastSeq
        private set
    var lastHash: String = lastHash
        private set

    /** The newest signed head found on the verified log: the receipt kept with the checkpoint. */
    var head: SignedHead? = head
        private set

    /**
     * Takes a head whose signature has been checked. One naming the last verified event with its
     * hash becomes [head] and true is returned; one naming it with another hash is proof that the
     * server forked the log ([ChainBrokenException]). A head of any other event (or of the empty
     * log) cannot be checked against the log here and is not kept.
     */
    fun acceptHead(h: SignedHead): Boolean {
        if (h.seq == 0L || h.seq != lastSeq) return false
        if (h.hash != lastHash) throw ChainBrokenException(h.seq, "signed head ${h.hash} conflicts with the log's $lastHash")
        if (h == head) return false
        head = h
        return true
    }

    /** Verifies [e] and advances; throws [ChainBrokenException] and stays put when it does not verify. */
    fun accept(e: ChainEvent) {
        if (e.seq != lastSeq + 1) throw ChainBrokenException(e.seq, "expected seq ${lastSeq + 1}")
        if (e.prevHash != lastHash) throw ChainBrokenException(e.seq, "prevHash does not link to event $lastSeq")
        val h = try {
            EventChain.hash(e.prevHash, e)
        } catch (ex: IllegalArgumentException) {
            throw ChainBrokenException(e.seq, "cannot canonicalize: ${ex.message}")
        }
        if (h != e.hash) throw ChainBrokenException(e.seq, "hash mismatch (computed $h, served ${e.hash})")
        lastSeq = e.seq
        lastHash = e.hash
    }

    /** Where verification stands, to be saved and resumed from. */
    val checkpoint: ChainCheckpoint get() = ChainCheckpoint(lastSeq, lastHash, head)
}
