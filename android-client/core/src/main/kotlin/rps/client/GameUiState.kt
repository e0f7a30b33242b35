package rps.client

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

/** What the player sees of one lobby. */
sealed interface GameUiState {
    data object Connecting : GameUiState

    /** Not registered in the lobby's current game; [GameSession.join] pays the bet. */
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

    /** The player won [amount] in [round]; [lastRound] is the last round resolved (none when the others ran out of time). */
    data class Won(val amount: Long, val round: Int, val lastRound: RoundOutcome?) : GameUiState
    data class Lost(val round: Int, val lastRound: RoundOutcome?) : GameUiState

    /** The game was stopped; [share] is the player's part of the escrow when the stop event said so. */
    data class Stopped(val reason: String, val share: Long?) : GameUiState

    /** The player left during registration and got the bet back. */
    data class Left(val refund: Long) : GameUiState

    /** [fatal]: the session has stopped (a broken chain, a revoked token); otherwise the next update replaces it. */
    data class Error(val error: RpsException, val fatal: Boolean, val previous: GameUiState?) : GameUiState {
        val message: String get() = error.playerMessage
    }

    val isFinal: Boolean get() = this is Won || this is Lost || this is Stopped || this is Left || (this is Error && fatal)

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
