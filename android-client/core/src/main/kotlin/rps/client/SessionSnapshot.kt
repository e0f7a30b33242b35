package rps.client

/**
 * Everything a [GameSession] knows about its lobby at one moment: the last lobby read from the
 * server (patched by the events that followed it), the game this player joined, what the events
 * said about its rounds and ending, and the moves this device chose. [uiStateOf] turns it into
 * what the player sees; nothing else decides that.
 */
data class SessionSnapshot(
    val lobby: LobbyView? = null,
    /** The game this player registered in, once the server said so. */
    val joinedGameId: String? = null,
    /** The last round of the joined game that was resolved. */
    val lastOutcome: RoundOutcome? = null,
    /** Every round of the joined game resolved while the player was in it, oldest first. */
    val rounds: List<RoundOutcome> = emptyList(),
    /** How the joined game ended for the player, once known (Won, Lost, Stopped, Left). */
    val ending: GameUiState? = null,
    /** The error that stopped the session for good. */
    val fatal: GameUiState.Error? = null,
    /** The move chosen in each round of the joined game (from the vault, a commit, or the server). */
    val moves: Map<Int, Int> = emptyMap(),
    /** The server's clock minus this device's, from the last lobby read. */
    val clockOffsetMs: Long = 0,
    /** Set when the saved password of a committed move is gone and the move cannot be revealed. */
    val vaultLost: RpsException.VaultMissing? = null,
)

/**
 * What the player sees for [s]; null while the joined game has ended but how it ended is not known
 * yet (the screen keeps what it shows until the session has looked it up).
 */
fun uiStateOf(s: SessionSnapshot): GameUiState? {
    s.fatal?.let { return it }
    s.ending?.let { return it }
    val l = s.lobby ?: return GameUiState.Connecting
    val joined = s.joinedGameId ?: return GameUiState.NotJoined(l)
    val g = l.game
    if (g == null || g.id != joined || !g.stage.isOpen) return null
    val you = g.you ?: return GameUiState.NotJoined(l)
    val outRound = s.lastOutcome?.takeIf { it.youSurvived == false }?.round ?: g.round
    val deadline = g.deadlineMs?.let { Deadline(it, it - s.clockOffsetMs) }
    return when (g.stage) {
        Stage.REGISTRATION -> if (you.registered) {
            GameUiState.WaitingForPlayers(g.players, l.config.playersCountLimit, g.pot, deadline)
        } else {
            GameUiState.NotJoined(l)
        }
        Stage.MOVES -> when {
            !you.inGame -> GameUiState.Lost(outRound, s.lastOutcome)
            you.committed -> GameUiState.WaitingForOthers(g.round, deadline, g.committed, g.remaining, g.pot, s.moves[g.round])
            else -> GameUiState.YourMove(g.round, deadline, g.committed, g.remaining, g.pot, s.lastOutcome)
        }
        Stage.REVEAL -> when {
            !you.inGame || !you.committed -> GameUiState.Lost(outRound, s.lastOutcome)
            else -> {
                val revealing = GameUiState.Revealing(
                    g.round,
                    deadline,
                    g.revealed,
                    g.committed,
                    g.pot,
                    s.moves[g.round] ?: you.move,
                    you.revealed,
                )
                // A lost saved move stays in view rather than hidden behind the reveal screen.
                if (s.vaultLost != null && !you.revealed) GameUiState.Error(s.vaultLost, false, revealing) else revealing
            }
        }
        Stage.FINISHED, Stage.STOPPED -> null
    }
}

/**
 * What replaces [shown] when the session's state becomes [next]: a refusal stays over the screen
 * it happened on, which goes on updating beneath it, until the screen changes (an update already
 * on its way must not erase the message).
 */
fun keepRefusal(shown: GameUiState, next: GameUiState): GameUiState =
    if (shown is GameUiState.Error && !shown.fatal && shown.previous?.sameScreen(next) == true) shown.copy(previous = next) else next

/**
 * The lobby to keep when [read] arrives after [shown]; null when [read] adds nothing. A read's
 * `serverTime` is when its transaction began, so it orders reads badly around a change being
 * committed: a read that began while this player's commitment was being committed is later by the
 * clock yet misses it, and the commitment's own answer, coming back after that read, is older by
 * the clock yet holds it. A game's progress never goes back: a read of an earlier game, round or
 * stage is dropped, a read further on is taken, and of two reads of the same stage the later one
 * by the clock is kept with what either knew of that stage (who committed or revealed, and how
 * many).
 */
fun newerLobby(shown: LobbyView?, read: LobbyView): LobbyView? {
    if (shown == null) return read
    val p = shown.game
    val g = read.game
    if (p == null || g == null) return read.takeIf { it.serverTime >= shown.serverTime }
    val progress = compareValuesBy(g, p, { it.number }, { it.round }, { it.stage.ordinal })
    if (progress < 0) return null
    if (progress > 0 || g.id != p.id) return read
    val (base, other) = if (read.serverTime >= shown.serverTime) g to p else p to g
    val you = base.you?.let { y ->
        val was = other.you ?: return@let y
        y.copy(
            committed = y.committed || was.committed,
            revealed = y.revealed || was.revealed,
            commitment = y.commitment ?: was.commitment,
            move = y.move ?: was.move,
        )
    }
    val merged = base.copy(committed = maxOf(g.committed, p.committed), revealed = maxOf(g.revealed, p.revealed), you = you)
    val lobby = if (base === g) read else shown
    return if (base === p && merged == p) null else lobby.copy(game = merged)
}
