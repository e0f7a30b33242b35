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
import java.security.SecureRandom
import java.util.UUID
import kotlin.coroutines.coroutineContext

/**
 * One player's session in one lobby. It ties three parts together: the [VerifiedLog] (every event
 * and signed head checked as it arrives), the [MoveProtocol] (commit from the vault, reveal by
 * itself as soon as the reveal stage opens) and [uiStateOf] (what the player sees). It keeps the
 * [SessionSnapshot] those read, updated by lobby reads and by events. A new session over the same
 * vault picks up where a killed one stopped.
 */
class GameSession(
    val lobbyId: String,
    private val api: PlayerApi,
    private val feed: EventFeed,
    vault: Vault,
    private val scope: CoroutineScope,
    private val clock: Clock = Clock.SYSTEM,
    random: SecureRandom = SecureRandom(),
    private val retry: RetryPolicy = RetryPolicy(),
    io: CoroutineDispatcher = Dispatchers.IO,
    checkpoints: ChainCheckpoints? = null,
    /** The server's transparency log, shared by the server's sessions; null: not checked. */
    private val logAuditor: LogAuditor? = null,
    /** The rounds resolved before a kept checkpoint, for a session resumed from one; null: not looked up. */
    private val pastRounds: PastRounds? = null,
    /** Signs the player's actions with its key; null: sent unsigned (an account without a key). */
    private val signer: ActionSigner? = null,
    /** Checks that every player's action read was signed by its player; null: not checked. */
    private val signatures: PlayerSignatures? = null,
    /** Checks that every admin's act read was signed by that admin, and counts the unsigned ones; null: not checked. */
    private val adminSignatures: AdminSignatures? = null,
) {
    private val _state = MutableStateFlow<GameUiState>(GameUiState.Connecting)
    val state: StateFlow<GameUiState> = _state.asStateFlow()

    private val _rounds = MutableStateFlow<List<RoundOutcome>>(emptyList())

    /** The rounds of the player's game resolved while they were in it (those this session saw), oldest first. */
    val rounds: StateFlow<List<RoundOutcome>> = _rounds.asStateFlow()

    private val log = VerifiedLog(lobbyId, checkpoints, HeadSignatures { retry.run { api.signingKeys() } }, io)
    private val protocol = MoveProtocol(lobbyId, api, vault, random, retry, io, signer)

    /** Guards everything below and every change of [_state]. */
    private val lock = Mutex()

    @Volatile private var snap = SessionSnapshot()
    private var me: AccountInfo? = null
    private var saved: VaultEntry? = null
    private var joinKey: String? = null
    private var commitInFlight = false
    private val revealsStarted = HashSet<String>()
    private var endingLookup = false

    private val refreshes = Channel<Unit>(Channel.CONFLATED)

    /** Verified events, in order, for [signatures] and [adminSignatures]. */
    private val toCheck = Channel<ChainEvent>(Channel.UNLIMITED)
    private var job: Job? = null

    /** server clock minus local clock, from the last lobby read. */
    val clockOffsetMs: Long get() = snap.clockOffsetMs

    /** The last event verified. */
    val verifiedSeq: Long get() = log.lastSeq

    /** The newest signed head verified on the log (also saved with the checkpoint). */
    val receipt: SignedHead? get() = log.receipt

    /** What has been verified of the lobby's history, for the status line. */
    val trust: StateFlow<TrustStatus> get() = log.status

    /** The player's account as the session read it at start. */
    val account: AccountInfo? get() = me

    /** The lobby's name, once the lobby has been read (for the notifications, which have no screen to show it). */
    val lobbyName: String? get() = snap.lobby?.name

    /** Starts the session: reads the account, the lobby and the vault, then follows the events. */
    fun start(): Job {
        job?.let { return it }
        val j = scope.launch {
            try {
                me = retry.run { api.me() }
                log.resume()
                val resumed = log.lastSeq > 0
                protocol.saved()?.let { e -> lock.withLock { saved = e } }
                lock.withLock { saved?.let { snap = snap.copy(moves = snap.moves + (it.round to it.move)) } }
                refreshNow()
                launch { for (x in refreshes) runCatchingRps { refreshNow() } }
                launch { refreshWhenDeadlinesPass() }
                logAuditor?.let { launch { proveHeadsInLog(it) } }
                if (resumed) pastRounds?.let { launch { restoreRounds(it) } }
                if (signatures != null || adminSignatures != null) launch { checkSignatures() }
                feed.follow(lobbyId, log.lastSeq).collect {
                    when (it) {
                        is ChainEvent -> if (log.accept(it)) {
                            if (signatures != null || adminSignatures != null) toCheck.trySend(it)
                            onEvent(it)
                        }
                        is SignedHead -> onHead(it)
                    }
                }
            } catch (e: CancellationException) {
                throw e
            } catch (e: RpsException) {
                showFatal(e)
                coroutineContext.cancelChildren()
            }
        }
        job = j
        return j
    }

    /**
     * Checks each verified event's signature by its player, and an admin's act's by its admin, in
     * order. An action its player did not sign, an admin's act whose signature does not hold (an
     * unsigned one is only counted), or a key log that does not verify, stops the session as a
     * broken chain does; a
     * key log or transcript that cannot be read is said, and that event is not checked.
     */
    private suspend fun checkSignatures() {
        for (e in toCheck) {
            try {
                signatures?.check(e)
                adminSignatures?.check(e)
            } catch (x: RpsException.UnsignedAction) {
                showFatal(x)
                job?.cancel()
            } catch (x: RpsException.KeyLogBroken) {
                showFatal(x)
                job?.cancel()
            } catch (x: RpsException) {
                showError(x)
            }
        }
    }

    /** Stops believing the server: [e] stays on screen, over everything else. */
    private suspend fun showFatal(e: RpsException) {
        lock.withLock {
            snap = snap.copy(fatal = GameUiState.Error(e, true, _state.value))
            publish()
        }
    }

    /**
     * Proves each new signed head in the server's transparency log, [LOG_LAG_MS] after it came (the
     * log runs about a second behind play), again every [LOG_RETRY_MS] while the log does not hold
     * it yet, and after a network failure with a backoff up to [LOG_MAX_BACKOFF_MS], quietly: the
     * game does not wait for the log. A log that contradicts itself or this device stops the
     * session like a forged head.
     */
    private suspend fun proveHeadsInLog(auditor: LogAuditor) {
        var backoff = LOG_RETRY_MS
        while (true) {
            log.awaitUnprovenHead()
            delay(LOG_LAG_MS)
            while (true) {
                val progress = try {
                    log.proveInLog(auditor).also { backoff = LOG_RETRY_MS }
                } catch (e: RpsException.LogMisbehavior) {
                    showFatal(e)
                    job?.cancel()
                    return
                } catch (e: RpsException) {
                    backoff = minOf(backoff * 2, LOG_MAX_BACKOFF_MS)
                    delay(backoff)
                    continue
                }
                when (progress) {
                    LogProgress.PROVEN -> break
                    LogProgress.PENDING -> delay(LOG_RETRY_MS)
                    LogProgress.NO_LOG -> return
                }
            }
        }
    }

    fun stop() {
        job?.cancel()
    }

    /**
     * A session resumed from a kept checkpoint does not read the events before it again: the rounds
     * of the joined game they resolved come from [source] (the game's transcript); a round an event
     * after the checkpoint resolved keeps the event's account. Rounds after the one the player went
     * out in are not theirs to show. Quietly left out when the transcript cannot be read: the
     * game goes on without them.
     */
    private suspend fun restoreRounds(source: PastRounds) {
        val (gameId, upTo) = lock.withLock {
            val g = snap.lobby?.game?.takeIf { it.id == snap.joinedGameId && it.stage.isOpen } ?: return
            g.id to g.round - 1
        }
        val accountId = me?.id ?: return
        val past = try {
            retry.run { source.of(gameId, 1..upTo, accountId) }
        } catch (e: RpsException) {
            return
        }
        lock.withLock {
            if (snap.joinedGameId != gameId || past.isEmpty()) return
            val all = (snap.rounds + past).distinctBy { it.round }.sortedBy { it.round }
            val out = all.indexOfFirst { it.youSurvived == false }
            val rounds = if (out >= 0) all.take(out + 1) else all
            snap = snap.copy(rounds = rounds, lastOutcome = snap.lastOutcome ?: rounds.last())
            _rounds.value = rounds
            publish()
        }
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
            val auth = signer?.let { s ->
                if (lock.withLock { snap.lobby?.game } == null) refreshNow()
                val (lobby, game) = lock.withLock { snap.lobby to snap.lobby?.game }
                // The message names the game the player sees; a newer one on the server is a stale_signature.
                s.sign(SignedAction.REGISTER, ActionPayloads.register(lobby?.config?.betSize ?: 0), key, lobbyId, game?.id)
            }
            apply(timed { retry.run { api.register(lobbyId, key, auth) } })
            true
        } catch (e: RpsException.Problem) {
            lock.withLock { joinKey = null }
            if (e.code == ErrorCode.ALREADY_REGISTERED) {
                refreshNow()
                true
            } else {
                if (e.code == ErrorCode.STALE_SIGNATURE) runCatchingRps { refreshNow() }
                showError(e)
                false
            }
        } catch (e: RpsException) {
            showError(e)
            false
        }
    }

    /**
     * Leaves the game during registration; the bet comes back. The session ends with
     * [GameUiState.Left]. Failures show as a non-fatal [GameUiState.Error].
     */
    suspend fun leave(): Boolean {
        val (bet, game) = lock.withLock { (snap.lobby?.config?.betSize ?: 0) to snap.lobby?.game?.id }
        return try {
            val key = UUID.randomUUID().toString()
            val auth = signer?.sign(SignedAction.LEAVE, ActionPayloads.leave(), key, lobbyId, game)
            val l = retry.run { api.leave(lobbyId, key, auth) }
            lock.withLock {
                snap = snap.copy(lobby = l, ending = GameUiState.Left(bet))
                publish()
            }
            true
        } catch (e: RpsException) {
            showError(e)
            runCatchingRps { refreshNow() }
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
        val game = lock.withLock {
            if (commitInFlight) return false
            val g = snap.lobby?.game
            val refusal = commitRefusal(g)
            if (refusal == null) commitInFlight = true
            refusal ?: g!!
        }
        if (game is ErrorCode) {
            showError(RpsException.Problem(game, 409, "refused by the client before sending"))
            return false
        }
        val e = try {
            protocol.choose(game as GameView, move)
        } catch (ex: Exception) {
            lock.withLock { commitInFlight = false }
            throw ex
        }
        lock.withLock {
            saved = e
            snap = snap.copy(moves = snap.moves + (e.round to e.move))
        }
        return sendCommit(e)
    }

    /** The code the server would refuse a commitment in [g] with; null when it would take one. Holds [lock]. */
    private fun commitRefusal(g: GameView?): ErrorCode? {
        val you = g?.you
        return when {
            snap.joinedGameId == null -> ErrorCode.NOT_IN_GAME
            g == null || g.id != snap.joinedGameId || g.stage != Stage.MOVES -> ErrorCode.WRONG_STAGE
            you == null || !you.inGame -> ErrorCode.NOT_IN_GAME
            you.committed -> ErrorCode.ALREADY_COMMITTED
            else -> null
        }
    }

    private suspend fun sendCommit(e: VaultEntry): Boolean {
        lock.withLock { commitInFlight = true }
        try {
            apply(timed { protocol.commit(e) })
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
            val l = timed { protocol.reveal(e) }
            forget(e)
            apply(l)
        } catch (p: RpsException.Problem) {
            when (p.code) {
                ErrorCode.ALREADY_REVEALED -> {
                    forget(e)
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

    private suspend fun forget(e: VaultEntry) {
        protocol.forget(e)
        lock.withLock { if (saved == e) saved = null }
    }

    private suspend fun refreshNow() {
        apply(timed { retry.run { api.getLobby(lobbyId) } })
    }

    private suspend fun <T> timed(block: suspend () -> T): Pair<T, Long> {
        val t0 = clock.nowMs()
        val v = block()
        return v to (t0 + clock.nowMs()) / 2
    }

    /** Applies a lobby read at local time [at] (the middle of its request). */
    private suspend fun apply(read: Pair<LobbyView, Long>) {
        val (fresh, at) = read
        lock.withLock {
            val l = newerLobby(snap.lobby, fresh) ?: return
            val g = l.game
            // The clock's offset comes from this read only when its own serverTime is the one kept.
            val offset = if (l.serverTime == fresh.serverTime) fresh.serverTime - at else snap.clockOffsetMs
            var s = snap.copy(lobby = l, clockOffsetMs = offset)
            if (g != null && g.you?.registered == true && s.joinedGameId == null) s = s.copy(joinedGameId = g.id)
            if (g != null && g.id == s.joinedGameId) g.you?.move?.let { s = s.copy(moves = s.moves + (g.round to it)) }
            snap = s
            publish()
            startProtocolStep()
        }
    }

    /** Starts whatever the lobby calls for: resume a commit, reveal, forget a stale move. Holds [lock]. */
    private fun startProtocolStep() {
        val g = snap.lobby?.game ?: return
        if (g.id != snap.joinedGameId) return
        when (val step = ProtocolStep.of(g, saved)) {
            ProtocolStep.Nothing -> {}
            is ProtocolStep.Forget -> {
                saved = null
                scope.launch { protocol.forget(step.entry) }
            }
            is ProtocolStep.ResumeCommit -> if (!commitInFlight) {
                commitInFlight = true
                scope.launch { sendCommit(step.entry) }
            }
            is ProtocolStep.Reveal -> if (revealsStarted.add("${g.id}/${g.round}")) scope.launch { sendReveal(step.entry) }
            is ProtocolStep.VaultLost -> if (revealsStarted.add("${g.id}/${g.round}")) {
                snap = snap.copy(vaultLost = RpsException.VaultMissing(step.round))
                publish()
            }
        }
    }

    /** Folds a verified event into the snapshot; reads the lobby again when the event's effects are not all in it. */
    private suspend fun onEvent(e: ChainEvent) {
        var refresh = false
        lock.withLock {
            val s = snap
            val joined = s.joinedGameId
            val mine = joined != null && e.gameId == joined
            val g = s.lobby?.game?.takeIf { it.id == e.gameId }
            when (val d = e.typed) {
                is EventData.MoveCommitted -> if (g != null && d.round == g.round) patch(g.copy(committed = d.committed))
                is EventData.MoveRevealed -> if (g != null && d.round == g.round) patch(g.copy(revealed = d.revealed))
                is EventData.PlayerRegistered -> if (g != null) {
                    patch(g.copy(players = d.players, pot = d.pot, deadlineMs = d.deadline))
                    refresh = d.player == me?.id
                } else {
                    refresh = true
                }
                is EventData.PlayerLeft -> if (g != null) patch(g.copy(players = d.players, pot = d.pot)) else refresh = true
                is EventData.RoundResolved -> {
                    // Once the player is out, the rounds the others play on are not theirs to show.
                    if (mine && s.lastOutcome?.youSurvived != false) {
                        val o = RoundOutcome(d.round, d.present, d.survivors, d.counts, d.remaining, s.moves[d.round])
                        snap = snap.copy(lastOutcome = o, rounds = snap.rounds.filter { it.round < o.round } + o)
                        _rounds.value = snap.rounds
                        // A response may already have shown a later round: then that state shows
                        // the outcome as its last round instead of going back to it.
                        val later = g != null && g.round > d.round
                        if (snap.fatal == null && snap.ending == null && !later) {
                            _state.value = GameUiState.RoundResult(o) // on screen until the next update
                            refreshes.trySend(Unit)
                            return
                        }
                    }
                    refresh = true
                }
                is EventData.GameFinished -> {
                    if (mine) {
                        val ending = if (d.winner == me?.id) GameUiState.Won(d.amount, d.round, snap.lastOutcome) else lost(d.round)
                        snap = snap.copy(ending = ending)
                    }
                    refresh = true
                }
                is EventData.GameStopped -> {
                    if (mine) snap = snap.copy(ending = GameUiState.Stopped(d.reason, d.share))
                    refresh = true
                }
                // The lobby's state after these (and after types this client does not know) is read again.
                is EventData.LobbyCreated, is EventData.GameOpened, is EventData.RoundStarted, is EventData.MovesClosed,
                is EventData.StageExtended, is EventData.ClockShifted, is EventData.NextConfigChanged, EventData.LobbyClosed,
                is EventData.Unknown,
                -> refresh = true
            }
            publish()
        }
        if (refresh) refreshes.trySend(Unit)
    }

    /** A head whose keys cannot be read is dropped, unchecked, with a non-fatal error; a bad one stops the session. */
    private suspend fun onHead(h: SignedHead) {
        try {
            log.acceptHead(h)
        } catch (e: RpsException.BadHead) {
            throw e
        } catch (e: RpsException.ChainBroken) {
            throw e
        } catch (e: RpsException) {
            showError(e)
        }
    }

    /** Holds [lock]. */
    private fun patch(g: GameView) {
        snap = snap.copy(lobby = snap.lobby?.copy(game = g))
    }

    /** Shows what the snapshot calls for. Holds [lock]. */
    private fun publish() {
        val next = uiStateOf(snap)
        if (next == null) {
            snap.joinedGameId?.let(::lookUpEnding)
            return // keep what is shown until the ending is known
        }
        _state.value = keepRefusal(_state.value, next)
    }

    /** The joined game ended without its final event being seen yet: ask for its summary. Holds [lock]. */
    private fun lookUpEnding(gameId: String) {
        if (endingLookup || snap.ending != null) return
        endingLookup = true
        scope.launch {
            try {
                val r = retry.run { api.getGame(gameId) }
                lock.withLock {
                    if (snap.ending == null && !r.stage.isOpen) {
                        val ending = when {
                            r.stage == Stage.FINISHED && r.winner == me?.id -> GameUiState.Won(r.payout, r.round, snap.lastOutcome)
                            r.stage == Stage.FINISHED -> lost(r.round)
                            else -> GameUiState.Stopped(r.stopReason ?: "stopped", null)
                        }
                        snap = snap.copy(ending = ending)
                    }
                    endingLookup = false
                    publish()
                }
            } catch (e: RpsException) {
                lock.withLock { endingLookup = false }
                showError(e)
            }
        }
    }

    /** Lost: in the round the player went out in, or [lastRound] (the game's) when they were in it to the end. Holds [lock]. */
    private fun lost(lastRound: Int): GameUiState.Lost {
        val o = snap.lastOutcome
        return GameUiState.Lost(o?.takeIf { it.youSurvived == false }?.round ?: lastRound, o)
    }

    private suspend fun showError(e: RpsException) {
        val fatalNow = e is RpsException.Problem && e.code == ErrorCode.UNAUTHORIZED
        lock.withLock {
            if (snap.fatal != null || snap.ending != null) return
            val shown = _state.value
            val err = GameUiState.Error(e, fatalNow, if (shown is GameUiState.Error && !shown.fatal) shown.previous else shown)
            if (fatalNow) snap = snap.copy(fatal = err)
            _state.value = err
        }
        if (fatalNow) job?.cancel()
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

        /** How long after a head is kept its proof is first asked for: the log integrates about once a second. */
        const val LOG_LAG_MS = 1_500L

        /** How often a head the log does not hold yet is asked about again. */
        const val LOG_RETRY_MS = 1_000L

        /** The longest wait between two attempts when the log cannot be reached. */
        const val LOG_MAX_BACKOFF_MS = 30_000L
    }
}
