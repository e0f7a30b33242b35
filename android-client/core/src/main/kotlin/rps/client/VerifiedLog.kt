package rps.client

import kotlinx.coroutines.CoroutineDispatcher
import kotlinx.coroutines.flow.MutableStateFlow
import kotlinx.coroutines.flow.StateFlow
import kotlinx.coroutines.flow.asStateFlow
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.withContext

/**
 * One thing this device has checked about a lobby's history; the status line shows one clause per
 * check: the chain, the signed head, and where the server's transparency log stands on it.
 */
sealed interface TrustCheck {
    /** Events 1 to [upTo] link into one hash chain (checked here, or by an earlier session up to its checkpoint). */
    data class ChainVerified(val upTo: Long) : TrustCheck

    /** The newest head naming the verified log is signed by the server's key [keyId]. */
    data class HeadSigned(val keyId: String, val seq: Long) : TrustCheck

    /**
     * Event [seq] (the head shown, or an earlier one while a newer head waits for the log) is leaf
     * [leafIndex] of the log's checkpoint of [treeSize] leaves, signed by the log's pinned key
     * [keyId], cosigned by [cosigners] and consistent with the checkpoint this device kept before
     * ([consistentWith] leaves, null on first contact). Through the chain it vouches for events 1 to [seq].
     */
    data class InLog(
        val seq: Long,
        val leafIndex: Long,
        val treeSize: Long,
        val keyId: String,
        val cosigners: List<String>,
        val consistentWith: Long?,
    ) : TrustCheck

    /** The head [seq] is not in a published checkpoint yet (the log runs about a second behind play); asked again shortly. */
    data class NotInLogYet(val seq: Long) : TrustCheck

    /** The checkpoint holding event [seq] has [cosigners], fewer than the [quorum] the witness policy asks for; asked again. */
    data class NotCosigned(val seq: Long, val treeSize: Long, val cosigners: List<String>, val quorum: Int) : TrustCheck
}

/** Where the proof of the shown head in the transparency log stands after one attempt. */
enum class LogProgress {
    /** Proven, or nothing new to prove. */
    PROVEN,

    /** Not in the log yet, or not cosigned enough yet: ask again later. */
    PENDING,

    /** The server keeps no log: nothing to ask. */
    NO_LOG,
}

/** Every check that holds, in the order they are shown. Failures are not here: they stop the session. */
data class TrustStatus(val checks: List<TrustCheck> = emptyList())

/**
 * A lobby's event log as this device has verified it: every event's link and hash as it arrives,
 * and every signed head against the server's published keys. Resumes from the stored checkpoint and
 * keeps it (with the newest signed head, the receipt) after each step. The session's feed verifies
 * events and heads; a second coroutine proves the heads in the server's transparency log
 * ([proveInLog]).
 */
class VerifiedLog(
    private val lobbyId: String,
    private val checkpoints: ChainCheckpoints?,
    private val signatures: HeadSignatures,
    private val io: CoroutineDispatcher,
) {
    @Volatile private var verifier = ChainVerifier()
    private val _status = MutableStateFlow(TrustStatus())

    /** The seq of the newest signed head kept. */
    private val headSeq = MutableStateFlow(0L)

    /** The newest proof of a head in the transparency log, and the head waiting for one (the log's loop alone writes these). */
    @Volatile private var inLog: TrustCheck.InLog? = null

    @Volatile private var logPending: TrustCheck? = null
    private var proving: SignedHead? = null

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

    /** Suspends until a signed head newer than the last one proven in the transparency log is kept. */
    suspend fun awaitUnprovenHead() {
        headSeq.first { it > (inLog?.seq ?: 0L) }
    }

    /**
     * Asks [auditor] to prove the newest signed head in the server's transparency log. A head the
     * log does not hold yet stays the one asked about until it is proven, so a busy lobby's newest
     * head, always younger than the log, does not keep the proof away. Throws
     * [RpsException.LogMisbehavior] when the log contradicts itself or this device, and the
     * request's error when the server cannot be asked.
     */
    suspend fun proveInLog(auditor: LogAuditor): LogProgress {
        val head = proving ?: verifier.head?.takeIf { it.seq > (inLog?.seq ?: 0L) } ?: return LogProgress.PROVEN
        proving = head
        val progress = when (val o = auditor.prove(lobbyId, head.seq, head.hash)) {
            is LogOutcome.Included -> {
                inLog = TrustCheck.InLog(o.seq, o.leafIndex, o.treeSize, o.keyId, o.cosigners, o.consistentWith)
                logPending = null
                proving = null
                LogProgress.PROVEN
            }
            is LogOutcome.NotLogged -> {
                logPending = TrustCheck.NotInLogYet(o.seq)
                LogProgress.PENDING
            }
            is LogOutcome.NotCosigned -> {
                logPending = TrustCheck.NotCosigned(o.seq, o.treeSize, o.cosigners, o.quorum)
                LogProgress.PENDING
            }
            LogOutcome.NoLog -> {
                proving = null
                LogProgress.NO_LOG
            }
        }
        publish()
        return progress
    }

    private suspend fun save() {
        checkpoints?.let { c -> withContext(io) { c.save(lobbyId, verifier.checkpoint) } }
        publish()
    }

    /** Synchronized, with every field read inside, so the feed's and the log's updates never overwrite each other with stale values. */
    @Synchronized
    private fun publish() {
        val v = verifier
        v.head?.let { headSeq.value = it.seq }
        _status.value = TrustStatus(
            listOfNotNull(
                TrustCheck.ChainVerified(v.lastSeq).takeIf { v.lastSeq > 0 },
                v.head?.let { TrustCheck.HeadSigned(it.keyId, it.seq) },
                inLog ?: logPending,
            ),
        )
    }
}
