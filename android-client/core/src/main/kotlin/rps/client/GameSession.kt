package rps.client

import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CoroutineDispatcher
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.Job
import kotlinx.coroutines.cancelChildren
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.MutableStateFlow
import kotlinx.coroutines.flow.StateFlow
import kotlinx.coroutines.flow.asStateFlow
import kotlinx.coroutines.flow.collectLatest
import kotlinx.coroutines.launch
import kotlinx.coroutines.sync.Mutex
import kotlinx.coroutines.sync.withLock
import kotlinx.coroutines.withContext
import java.security.SecureRandom
import java.util.UUID
import kotlin.coroutines.coroutineContext

/** A deadline in the server's clock and the same instant on this device's clock. */
data class Deadline(val serverMs: Long, val localMs: Long) {
    fun remainingMs(localNowMs: Long): Long = maxOf(0L, localMs - localNowMs)
}

/** How a round ended. Masks have bit m for move m. */
data class RoundOutcome(
    val round: Int,
    val present: Int,
    val survivors: Int,
    val counts: List<Long>,
    /** Players still in the game after the round. */
    val remaining: Int,
    val yourMove: Int?,
) {
    val youSurvived: Boolean? get() = yourMove?.let { survivors and (1 shl it) != 0 }
}

/** What the player sees. */
sealed interface GameUiState {
    data object Connecting : GameUiState

    /** Not registered in the lobby's current game; [join] pays the bet. */
    data class NotJoined(val lobby: LobbyView) : GameUiState
    data class WaitingForPlayers(val players: Int, val limit: Int, val pot: Long, override val deadline: Deadline?) : GameUiState
    data class YourMove(
        val round: Int,
        override val deadline: Deadline?,
        val committed: Int,
        val remaining: Int,
        val pot: Long,
        val lastRound: RoundOutcome?,
    ) : GameUiState
    data class WaitingForOthers(
        val round: Int,
        override val deadline: Deadline?,
        val committed: Int,
        val remaining: Int,
        val pot: Long,
        val move: Int?,
    ) : GameUiState

    /** The reveal stage: ours is sent automatically ([sent] once the server has it). */
    data class Revealing(
        val round: Int,
        override val deadline: Deadline?,
        val revealed: Int,
        val committed: Int,
        val pot: Long,
        val move: Int?,
        val sent: Boolean,
    ) : GameUiState
    data class RoundResult(val outcome: RoundOutcome) : GameUiState
    data class Won(val amount: Long, val round: Int) : GameUiState
    data class Lost(val round: Int, val lastRound: RoundOutcome?) : GameUiState
    data class Stopped(val reason: String, val share: Long?) : GameUiState

    /** [fatal]: the session has stopped (a broken chain, a revoked token); otherwise the next update replaces it. */
    data class Error(val error: RpsException, val fatal: Boolean, val previous: GameUiState?) : GameUiState {
        val message: String get() = error.playerMessage
    }

    val isFinal: Boolean get() = this is Won || this is Lost || this is Stopped || (this is Error && fatal)

    /** The deadline of the stage shown, if it has one. */
    val deadline: Deadline? get() = null

    /** Whether [other] is the same screen (the same state of the same round), whatever its figures. */
    fun sameScreen(other: GameUiState): Boolean = this::class == other::class && roundShown == other.roundShown

    private val roundShown: Int
        get() = when (this) {
            is YourMove -> round
            is WaitingForOthers -> round
            is Revealing -> round
            else -> 0
        }
}

data class RetryPolicy(val maxAttempts: Int = 8, val initialDelayMs: Long = 100, val maxDelayMs: Long = 2_000)

/**
 * One player's session in one lobby: joins the current game, follows the lobby's events (checking
 * the hash chain of every event as it arrives, and the signature of every head the server sends,
 * keeping the newest as a receipt with the [checkpoints]), commits the chosen weapon (after
 * writing it to the [vault]) and reveals it by itself as soon as the reveal stage opens. A new
 * session over the same vault picks up where a killed one stopped.
 */
class GameSession(
    val lobbyId: String,
    private val api: PlayerApi,
    private val feed: EventFeed,
    private val vault: Vault,
    private val scope: CoroutineScope,
    private val clock: Clock = Clock.SYSTEM,
    private val random: SecureRandom = SecureRandom(),
    private val retry: RetryPolicy = RetryPolicy(),
    private val io: CoroutineDispatcher = Dispatchers.IO,
    private val checkpoints: ChainCheckpoints? = null,
) {
    private val _state = MutableStateFlow<GameUiState>(GameUiState.Connecting)
    val state: StateFlow<GameUiState> = _state.asStateFlow()

    private val lock = Mutex()
    private var verifier = ChainVerifier()
    private val signatures = HeadSignatures { retrying { api.signingKeys() } }
    private val refreshes = Channel<Unit>(Channel.CONFLATED)
    private var job: Job? = null

    private var me: AccountInfo? = null
    private var snapshot: LobbyView? = null

    /** server clock minus local clock, from the last snapshot. */
    @Volatile var clockOffsetMs: Long = 0
        private set
    private var joinedGameId: String? = null
    private var joinKey: String? = null
    private var entry: VaultEntry? = null
    private var lastOutcome: RoundOutcome? = null
    private var final: GameUiState? = null
    private var fatal: GameUiState.Error? = null
    private val moves = HashMap<Int, Int>()
    private var commitInFlight = false
    private val revealsStarted = HashSet<String>()
    private var finalLookup = false

    /** The last event verified, for diagnostics. */
    val verifiedSeq: Long get() = verifier.lastSeq

    /** The newest signed head verified on the log (also saved with the checkpoint). */
    val receipt: SignedHead? get() = verifier.head

    /** Starts the session: reads the account, the lobby and the vault, then follows the events. */
    fun start(): Job {
        job?.let { return it }
        val j = scope.launch {
            try {
                me = retrying { api.me() }
                withContext(io) { checkpoints?.load(lobbyId) }?.let { verifier = ChainVerifier(it.seq, it.hash, it.head) }
                entry = withContext(io) { vault.load(lobbyId) }
                entry?.let { moves[it.round] = it.move }
                refreshNow()
                launch { for (x in refreshes) runCatchingRps { refreshNow() } }
                launch { refreshWhenDeadlinesPass() }
                feed.follow(lobbyId, verifier.lastSeq).collect {
                    when (it) {
                        is ChainEvent -> onEvent(it)
                        is SignedHead -> onHead(it)
                    }
                }
            } catch (e: CancellationException) {
                throw e
            } catch (e: RpsException) {
                lock.withLock {
                    fatal = GameUiState.Error(e, true, _state.value)
                    publish()
                }
                coroutineContext.cancelChildren()
            }
        }
        job = j
        return j
    }

    fun stop() {
        job?.cancel()
    }

    /**
     * Not every change of a deadline writes an event (only the first extension of a stage does):
     * once the deadline shown has passed, the lobby is read again, every [DEADLINE_GRACE_MS] until
     * the state moves on.
     */
    private suspend fun refreshWhenDeadlinesPass() {
        state.collectLatest { s ->
            val d = s.deadline ?: return@collectLatest
            while (true) {
                delay(d.remainingMs(clock.nowMs()) + DEADLINE_GRACE_MS)
                refreshes.trySend(Unit)
            }
        }
    }

    /** Registers in the lobby's current game, paying the bet. Failures show as a non-fatal [GameUiState.Error]. */
    suspend fun join(): Boolean {
        val key = lock.withLock { joinKey ?: UUID.randomUUID().toString().also { joinKey = it } }
        return try {
            apply(timed { retrying { api.register(lobbyId, key) } })
            true
        } catch (e: RpsException.Problem) {
            lock.withLock { joinKey = null }
            if (e.code == ErrorCode.ALREADY_REGISTERED) {
                refreshNow()
                true
            } else {
                showError(e)
                false
            }
        } catch (e: RpsException) {
            showError(e)
            false
        }
    }

    /**
     * Commits [move]: a fresh random password is written to the vault first, then the commitment
     * is sent (retried with the same Idempotency-Key). A second tap while one is being sent does
     * nothing. A tap the server would refuse, judged on the last state seen, is refused here the
     * same way, through [state] like every refusal, so an update already on its way cannot hide it.
     */
    suspend fun commit(move: Int): Boolean {
        val e = lock.withLock {
            if (commitInFlight) return false
            val g = snapshot?.game
            commitRefusal(g)?.let { return@withLock it }
            commitInFlight = true
            VaultEntry(
                lobbyId,
                g!!.id,
                g.round,
                move,
                Commitments.newPassword(random),
                UUID.randomUUID().toString(),
                UUID.randomUUID().toString(),
            )
        }
        if (e is ErrorCode) {
            showError(RpsException.Problem(e, 409, "refused by the client before sending"))
            return false
        }
        e as VaultEntry
        try {
            withContext(io) { vault.save(e) }
        } catch (ex: Exception) {
            lock.withLock { commitInFlight = false }
            throw ex
        }
        lock.withLock {
            entry = e
            moves[e.round] = e.move
        }
        return sendCommit(e)
    }

    /** The code the server would refuse a commitment in [g] with; null when it would take one. Holds [lock]. */
    private fun commitRefusal(g: GameView?): ErrorCode? {
        val you = g?.you
        return when {
            joinedGameId == null -> ErrorCode.NOT_IN_GAME
            g == null || g.id != joinedGameId || g.stage != Stage.MOVES -> ErrorCode.WRONG_STAGE
            you == null || !you.inGame -> ErrorCode.NOT_IN_GAME
            you.committed -> ErrorCode.ALREADY_COMMITTED
            else -> null
        }
    }

    private suspend fun sendCommit(e: VaultEntry): Boolean {
        lock.withLock { commitInFlight = true }
        try {
            apply(timed { retrying { api.commit(lobbyId, e.commitment, e.commitKey) } })
            return true
        } catch (p: RpsException.Problem) {
            if (p.code == ErrorCode.ALREADY_COMMITTED || p.code == ErrorCode.WRONG_STAGE) runCatchingRps { refreshNow() }
            if (p.code != ErrorCode.ALREADY_COMMITTED) showError(p)
            return p.code == ErrorCode.ALREADY_COMMITTED
        } catch (ex: RpsException) {
            showError(ex)
            return false
        } finally {
            lock.withLock { commitInFlight = false }
        }
    }

    private suspend fun sendReveal(e: VaultEntry) {
        try {
            val l = timed { retrying { api.reveal(lobbyId, e.reveal, e.revealKey) } }
            clearVault(e)
            apply(l)
        } catch (p: RpsException.Problem) {
            when (p.code) {
                ErrorCode.ALREADY_REVEALED -> {
                    clearVault(e)
                    runCatchingRps { refreshNow() }
                }
                ErrorCode.WRONG_STAGE -> runCatchingRps { refreshNow() }
                else -> showError(p)
            }
        } catch (ex: RpsException) {
            lock.withLock { revealsStarted.remove("${e.gameId}/${e.round}") }
            showError(ex)
            runCatchingRps { refreshNow() } // try again from a fresh state
        }
    }

    private suspend fun clearVault(e: VaultEntry) {
        withContext(io) { vault.clear(lobbyId) }
        lock.withLock { if (entry == e) entry = null }
    }

    private suspend fun refreshNow() {
        apply(timed { retrying { api.getLobby(lobbyId) } })
    }

    private suspend fun <T> timed(block: suspend () -> T): Pair<T, Long> {
        val t0 = clock.nowMs()
        val v = block()
        return v to (t0 + clock.nowMs()) / 2
    }

    /** Applies a lobby snapshot read at local time [at] (the middle of its request). */
    private suspend fun apply(read: Pair<LobbyView, Long>) {
        val (l, at) = read
        lock.withLock {
            val prev = snapshot
            if (prev != null && l.serverTime < prev.serverTime) return
            snapshot = l
            clockOffsetMs = l.serverTime - at
            val g = l.game
            if (g != null && g.you?.registered == true && joinedGameId == null) joinedGameId = g.id
            if (g != null && g.id == joinedGameId) g.you?.move?.let { moves[g.round] = it }
            publish()
            sideEffects()
        }
    }

    /** Starts whatever the snapshot calls for: resume a commit, reveal, forget stale entries. Holds [lock]. */
    private fun sideEffects() {
        val g = snapshot?.game ?: return
        if (g.id != joinedGameId) return
        val you = g.you ?: return
        val e = entry
        if (e != null && (e.gameId != g.id || e.round < g.round || (e.round == g.round && you.revealed))) {
            entry = null
            scope.launch(io) { if (vault.load(lobbyId) == e) vault.clear(lobbyId) }
            return
        }
        when (g.stage) {
            Stage.MOVES -> if (you.inGame && !you.committed && e != null && e.isFor(g.id, g.round) && !commitInFlight) {
                commitInFlight = true
                scope.launch { sendCommit(e) }
            }
            Stage.REVEAL -> if (you.committed && !you.revealed && revealsStarted.add("${g.id}/${g.round}")) {
                if (e == null || !e.isFor(g.id, g.round) || (you.commitment != null && you.commitment != e.commitment)) {
                    _state.value = GameUiState.Error(RpsException.VaultMissing(g.round), false, _state.value)
                } else {
                    scope.launch { sendReveal(e) }
                }
            }
            else -> {}
        }
    }

    private suspend fun onEvent(e: ChainEvent) {
        var refresh = false
        var shown = false // a round's result is on screen until the next update
        lock.withLock {
            if (e.seq <= verifier.lastSeq) return
            try {
                verifier.accept(e)
            } catch (b: ChainBrokenException) {
                throw RpsException.ChainBroken(b)
            }
            saveCheckpoint()
            val mine = joinedGameId != null && e.gameId == joinedGameId
            val g = snapshot?.game
            val current = g != null && e.gameId == g.id
            when (val d = e.typed) {
                is EventData.MoveCommitted -> if (current && d.round == g!!.round) patch(g.copy(committed = d.committed))
                is EventData.MoveRevealed -> if (current && d.round == g!!.round) patch(g.copy(revealed = d.revealed))
                is EventData.PlayerRegistered -> if (current) {
                    patch(g!!.copy(players = d.players, pot = d.pot, deadlineMs = d.deadline))
                    refresh = d.player == me?.id
                } else {
                    refresh = true
                }
                is EventData.PlayerLeft -> if (current) patch(g!!.copy(players = d.players, pot = d.pot)) else refresh = true
                is EventData.RoundResolved -> {
                    if (mine) {
                        val o = RoundOutcome(d.round, d.present, d.survivors, d.counts, d.remaining, moves[d.round])
                        lastOutcome = o
                        // A response may already have shown a later round: then that state shows
                        // the outcome as its last round instead of going back to it.
                        val later = g != null && g.id == e.gameId && g.round > d.round
                        if (fatal == null && final == null && !later) {
                            _state.value = GameUiState.RoundResult(o)
                            shown = true
                        }
                    }
                    refresh = true
                }
                is EventData.GameFinished -> {
                    if (mine) final = if (d.winner == me?.id) GameUiState.Won(d.amount, d.round) else GameUiState.Lost(d.round, lastOutcome)
                    refresh = true
                }
                is EventData.GameStopped -> {
                    if (mine) final = GameUiState.Stopped(d.reason, d.share)
                    refresh = true
                }
                // The lobby's state after these (and after types this client does not know) is read again.
                is EventData.LobbyCreated, is EventData.GameOpened, is EventData.RoundStarted, is EventData.MovesClosed,
                is EventData.StageExtended, is EventData.ClockShifted, is EventData.NextConfigChanged, EventData.LobbyClosed,
                is EventData.Unknown,
                -> refresh = true
            }
            if (!shown) publish()
        }
        if (refresh) refreshes.trySend(Unit)
    }

    /**
     * Keeps [h] as the receipt when its signature verifies and it names the last verified event.
     * A bad signature or an unknown key stops the session ([RpsException.BadHead]), as does a
     * validly signed head that contradicts the log; when the keys cannot be read the head is
     * dropped, unchecked, with a non-fatal error.
     */
    private suspend fun onHead(h: SignedHead) {
        if (h.lobbyId != lobbyId) throw RpsException.BadHead(h, "it names lobby ${h.lobbyId}")
        try {
            signatures.check(h)
        } catch (e: RpsException.BadHead) {
            throw e
        } catch (e: RpsException) {
            showError(e)
            return
        }
        lock.withLock {
            val kept = try {
                verifier.acceptHead(h)
            } catch (b: ChainBrokenException) {
                throw RpsException.ChainBroken(b)
            }
            if (kept) saveCheckpoint()
        }
    }

    /** Holds [lock]. */
    private suspend fun saveCheckpoint() {
        checkpoints?.let { c -> withContext(io) { c.save(lobbyId, verifier.checkpoint) } }
    }

    private fun patch(g: GameView) {
        snapshot = snapshot?.copy(game = g)
    }

    /** Holds [lock]. */
    private fun publish() {
        val next = derive() ?: return
        val shown = _state.value
        // A refusal stays shown over the screen it happened on, which goes on updating beneath it,
        // until the screen changes: an update already on its way must not erase the message.
        _state.value = if (shown is GameUiState.Error && !shown.fatal && shown.previous?.sameScreen(next) == true) {
            shown.copy(previous = next)
        } else {
            next
        }
    }

    private fun derive(): GameUiState? {
        fatal?.let { return it }
        final?.let { return it }
        val l = snapshot ?: return GameUiState.Connecting
        val joined = joinedGameId ?: return GameUiState.NotJoined(l)
        val g = l.game
        if (g == null || g.id != joined || !g.stage.isOpen) {
            lookUpFinal(joined)
            return null // keep what is shown until the result is known
        }
        val you = g.you ?: return GameUiState.NotJoined(l)
        val outRound = lastOutcome?.takeIf { it.youSurvived == false }?.round ?: g.round
        val deadline = g.deadlineMs?.let { Deadline(it, it - clockOffsetMs) }
        return when (g.stage) {
            Stage.REGISTRATION -> GameUiState.WaitingForPlayers(g.players, l.config.playersCountLimit, g.pot, deadline)
            Stage.MOVES -> when {
                !you.inGame -> GameUiState.Lost(outRound, lastOutcome)
                you.committed -> GameUiState.WaitingForOthers(g.round, deadline, g.committed, g.remaining, g.pot, moves[g.round])
                else -> GameUiState.YourMove(g.round, deadline, g.committed, g.remaining, g.pot, lastOutcome)
            }
            Stage.REVEAL -> when {
                !you.inGame || !you.committed -> GameUiState.Lost(outRound, lastOutcome)
                else -> {
                    val s = GameUiState.Revealing(
                        g.round,
                        deadline,
                        g.revealed,
                        g.committed,
                        g.pot,
                        moves[g.round] ?: you.move,
                        you.revealed,
                    )
                    // Keep a "saved move lost" error visible rather than hiding it behind the reveal screen.
                    val cur = _state.value
                    if (cur is GameUiState.Error && cur.error is RpsException.VaultMissing && !you.revealed) cur else s
                }
            }
            else -> null
        }
    }

    /** The joined game ended without its final event being seen yet: ask for its summary. Holds [lock]. */
    private fun lookUpFinal(gameId: String) {
        if (finalLookup || final != null) return
        finalLookup = true
        scope.launch {
            try {
                val r = retrying { api.getGame(gameId) }
                lock.withLock {
                    if (final == null && !r.stage.isOpen) {
                        final = when {
                            r.stage == Stage.FINISHED && r.winner == me?.id -> GameUiState.Won(r.payout, r.round)
                            r.stage == Stage.FINISHED -> GameUiState.Lost(r.round, lastOutcome)
                            else -> GameUiState.Stopped(r.stopReason ?: "stopped", null)
                        }
                    }
                    finalLookup = false
                    publish()
                }
            } catch (e: RpsException) {
                lock.withLock { finalLookup = false }
                showError(e)
            }
        }
    }

    private suspend fun showError(e: RpsException) {
        lock.withLock {
            if (fatal != null || final != null) return
            val fatalNow = e is RpsException.Problem && e.code == ErrorCode.UNAUTHORIZED
            val shown = _state.value
            val err = GameUiState.Error(e, fatalNow, if (shown is GameUiState.Error && !shown.fatal) shown.previous else shown)
            if (fatalNow) fatal = err
            _state.value = err
        }
        if (e is RpsException.Problem && e.code == ErrorCode.UNAUTHORIZED) job?.cancel()
    }

    private suspend fun runCatchingRps(block: suspend () -> Unit) {
        try {
            block()
        } catch (e: RpsException) {
            showError(e)
        }
    }

    companion object {
        /** How long after a deadline the lobby is read again when no event has come. */
        const val DEADLINE_GRACE_MS = 1_000L
    }

    /** Retries network errors, 5xx and 429 with backoff; the caller reuses its Idempotency-Key. */
    private suspend fun <T> retrying(block: suspend () -> T): T {
        var wait = retry.initialDelayMs
        var attempt = 1
        while (true) {
            try {
                return block()
            } catch (e: RpsException) {
                if (!e.retryable || attempt >= retry.maxAttempts) throw e
                val ra = (e as? RpsException.Problem)?.retryAfterSeconds
                delay(if (ra != null) ra * 1000L else wait)
                wait = minOf(wait * 2, retry.maxDelayMs)
                attempt++
            }
        }
    }
}
