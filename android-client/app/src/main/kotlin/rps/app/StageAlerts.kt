package rps.app

import rps.client.GameUiState

/** What the player is told about a game they are in while its screen is not in front of them. */
sealed interface StageAlert {
    val round: Int

    /** The moves stage of [round] opened: the player has to draw and commit a weapon. */
    data class MoveOpened(override val round: Int, val secondsLeft: Long?) : StageAlert

    /** The moves stage of [round] closes in [secondsLeft] and the player has not committed. */
    data class DeadlineNear(override val round: Int, val secondsLeft: Long) : StageAlert
}

/**
 * Decides, for one game session, when to tell the player: once when a stage that needs them opens
 * (the moves stage: reveals are sent by the session itself) and once [warnBeforeMs] before its
 * deadline if they still have not moved. Pure: the state and the time are passed in.
 */
class StageAlerts(private val warnBeforeMs: Long = WARN_BEFORE_MS) {
    private var toldOpen = 0
    private var warned = 0

    /** The alert due now for [state] at local time [nowMs], at most one; each is given once per round. */
    fun due(state: GameUiState, nowMs: Long): StageAlert? {
        val s = movePending(state) ?: return null
        val left = s.deadline?.remainingMs(nowMs)
        if (left != null && left <= warnBeforeMs) {
            if (warned >= s.round || left <= 0) return null
            warned = s.round
            toldOpen = maxOf(toldOpen, s.round) // one alert when the stage opens this late
            return StageAlert.DeadlineNear(s.round, secondsOf(left))
        }
        if (toldOpen >= s.round) return null
        toldOpen = s.round
        return StageAlert.MoveOpened(s.round, left?.let(::secondsOf))
    }

    /** When (local time) [due] may have something new for [state] without the state changing. */
    fun nextCheckAt(state: GameUiState): Long? {
        val s = movePending(state) ?: return null
        if (warned >= s.round) return null
        return s.deadline?.let { it.localMs - warnBeforeMs }
    }

    companion object {
        const val WARN_BEFORE_MS = 10_000L

        /** The moves stage waiting for this player's weapon, whatever refusal is shown above it. */
        fun movePending(state: GameUiState): GameUiState.YourMove? = shown(state) as? GameUiState.YourMove

        /**
         * Whether the player is in a game that is running: registered and waiting for players, or
         * playing a round and not out. Not while connecting (not known yet), nor once it is over.
         */
        fun inRunningGame(state: GameUiState): Boolean = when (val s = shown(state)) {
            is GameUiState.WaitingForPlayers, is GameUiState.YourMove, is GameUiState.WaitingForOthers, is GameUiState.Revealing -> true
            is GameUiState.RoundResult -> s.outcome.youSurvived != false
            else -> false
        }

        /** A refusal keeps the state it happened in. */
        private fun shown(s: GameUiState): GameUiState = if (s is GameUiState.Error && !s.fatal) s.previous ?: s else s

        private fun secondsOf(ms: Long) = (ms + 999) / 1000
    }
}
