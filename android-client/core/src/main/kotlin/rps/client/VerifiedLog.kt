package rps.client

import kotlinx.coroutines.CoroutineDispatcher
import kotlinx.coroutines.flow.MutableStateFlow
import kotlinx.coroutines.flow.StateFlow
import kotlinx.coroutines.flow.asStateFlow
import kotlinx.coroutines.withContext

/**
 * One thing this device has checked about a lobby's history; the status line shows one clause per
 * check. New kinds of proof (a transparency log's inclusion and consistency proofs) are new
 * variants, shown after these.
 */
sealed interface TrustCheck {
    /** Events 1 to [upTo] link into one hash chain (checked here, or by an earlier session up to its checkpoint). */
    data class ChainVerified(val upTo: Long) : TrustCheck

    /** The newest head naming the verified log is signed by the server's key [keyId]. */
    data class HeadSigned(val keyId: String, val seq: Long) : TrustCheck
}

/** Every check that holds, in the order they are shown. Failures are not here: they stop the session. */
data class TrustStatus(val checks: List<TrustCheck> = emptyList())

/**
 * A lobby's event log as this device has verified it: every event's link and hash as it arrives,
 * and every signed head against the server's published keys. Resumes from the stored checkpoint and
 * keeps it (with the newest signed head, the receipt) after each step. Used by one coroutine at a
 * time (the session's feed).
 */
class VerifiedLog(
    private val lobbyId: String,
    private val checkpoints: ChainCheckpoints?,
    private val signatures: HeadSignatures,
    private val io: CoroutineDispatcher,
) {
    @Volatile private var verifier = ChainVerifier()
    private val _status = MutableStateFlow(TrustStatus())

    /** What has been checked so far. */
    val status: StateFlow<TrustStatus> = _status.asStateFlow()

    /** The last event verified. */
    val lastSeq: Long get() = verifier.lastSeq

    /** The newest signed head verified on the log (also saved with the checkpoint). */
    val receipt: SignedHead? get() = verifier.head

    /** Starts from the stored checkpoint, if there is one. */
    suspend fun resume() {
        withContext(io) { checkpoints?.load(lobbyId) }?.let { verifier = ChainVerifier(it.seq, it.hash, it.head) }
        publish()
    }

    /**
     * Verifies [e] and saves the new checkpoint; false for an event already verified (a feed may
     * repeat one after a reconnection). A link or hash that does not verify is [RpsException.ChainBroken].
     */
    suspend fun accept(e: ChainEvent): Boolean {
        if (e.seq <= verifier.lastSeq) return false
        try {
            verifier.accept(e)
        } catch (b: ChainBrokenException) {
            throw RpsException.ChainBroken(b)
        }
        save()
        return true
    }

    /**
     * Keeps [h] as the receipt when its signature verifies and it names the last verified event.
     * A bad signature or an unknown key is [RpsException.BadHead], a validly signed head that
     * contradicts the log [RpsException.ChainBroken]; when the keys cannot be read, the fetch's
     * error is thrown and the head is not kept.
     */
    suspend fun acceptHead(h: SignedHead) {
        if (h.lobbyId != lobbyId) throw RpsException.BadHead(h, "it names lobby ${h.lobbyId}")
        signatures.check(h)
        val kept = try {
            verifier.acceptHead(h)
        } catch (b: ChainBrokenException) {
            throw RpsException.ChainBroken(b)
        }
        if (kept) save()
    }

    private suspend fun save() {
        checkpoints?.let { c -> withContext(io) { c.save(lobbyId, verifier.checkpoint) } }
        publish()
    }

    private fun publish() {
        val v = verifier
        _status.value = TrustStatus(
            listOfNotNull(
                TrustCheck.ChainVerified(v.lastSeq).takeIf { v.lastSeq > 0 },
                v.head?.let { TrustCheck.HeadSigned(it.keyId, it.seq) },
            ),
        )
    }
}
