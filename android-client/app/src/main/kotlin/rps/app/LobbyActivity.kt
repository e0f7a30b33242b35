package rps.app

import android.app.Activity
import android.content.Intent
import android.os.Bundle
import android.os.Handler
import android.os.Looper
import android.util.TypedValue
import android.view.View
import android.widget.ScrollView
import android.widget.TextView
import kotlinx.coroutines.MainScope
import kotlinx.coroutines.cancel
import kotlinx.coroutines.launch
import rps.client.GameSession
import rps.client.GameUiState
import rps.client.RoundOutcome
import rps.client.RpsException
import rps.client.RulesetInfo
import rps.client.Weapon

/**
 * One lobby's game: join (or leave while it takes players), draw a weapon on the grid tile by tile
 * or pick it in the legend, commit it; the session (owned by [RpsApp], so it outlives this screen)
 * reveals by itself. Shows the stage's countdown with what it counts down to, how many are still in
 * and have chosen or revealed, the pot, every round played so far, and once the game is over how it
 * ended, with the next game of the lobby or the way back to the lobbies. Refusals show in red above
 * the controls.
 */
class LobbyActivity : Activity() {
    private val scope = MainScope()
    private val app get() = application as RpsApp
    internal lateinit var session: GameSession
    private lateinit var lobbyId: String
    private var ruleset: RulesetInfo? = null

    /** The round the grid is drawn for: a new round starts from an empty grid. */
    private var drawingRound = 0

    /** Why the lobby or its ruleset could not be read (kept across state updates). */
    private var loadFailure = ""

    /** The rounds the session saw resolved, oldest first. */
    private var rounds: List<RoundOutcome> = emptyList()

    internal val scroll by lazy { ScrollView(this) }
    internal val heading by lazy { text(Type.TITLE) }

    /** Says which account the screen switched to, when it was opened for another signed-in account's game. */
    internal val accountNote by lazy { text(Type.BODY).apply { visibility = View.GONE } }
    internal val balance by lazy { text(Type.BODY, muted = true) }
    internal val stateText by lazy { text(Type.HEADING) }
    internal val countdown by lazy { text(Type.TITLE) }
    internal val progress by lazy { text(Type.BODY) }
    internal val pot by lazy { text(Type.BODY) }
    internal val notice by lazy { notice() }
    internal val weaponName by lazy { text(Type.HEADING) }
    internal val grid by lazy { GridView(this) }
    internal val legend by lazy { LegendView(this) }
    internal val roundsTitle by lazy { text(Type.HEADING).apply { setText(R.string.rounds_title) } }
    internal val roundList by lazy { text(Type.BODY) }

    /** The quiet line saying what this device verified of the lobby's history (failures are the [notice]). */
    internal val verification by lazy { text(Type.LABEL, muted = true) }
    internal val join by lazy { button(R.string.join) { scope.launch { session.join() } } }
    internal val leave by lazy { button(R.string.leave, primary = false) { scope.launch { session.leave() } } }
    internal val commit by lazy {
        button(R.string.play_weapon) {
            val move = grid.analysis?.matchedMove ?: return@button
            scope.launch { session.commit(move) }
        }
    }
    internal val nextGame by lazy {
        button(R.string.next_game) {
            startActivity(Intent(this, LobbyActivity::class.java).putExtra(EXTRA_LOBBY, lobbyId))
            finish()
        }
    }
    internal val back by lazy {
        button(R.string.back_to_lobbies, primary = false) {
            startActivity(
                Intent(this, LobbyListActivity::class.java).addFlags(Intent.FLAG_ACTIVITY_CLEAR_TOP or Intent.FLAG_ACTIVITY_SINGLE_TOP),
            )
            finish()
        }
    }
    private val ticker = Handler(Looper.getMainLooper())
    private val tick = object : Runnable {
        override fun run() {
            showCountdown(session.state.value)
            ticker.postDelayed(this, 250)
        }
    }

    override fun onCreate(savedInstanceState: Bundle?) {
        super.onCreate(savedInstanceState)
        lobbyId = intent.getStringExtra(EXTRA_LOBBY) ?: return finish()
        // A notification of another signed-in account's game: the game is played as that account.
        val switchedTo = app.switchForGame(intent.getStringExtra(EXTRA_ACCOUNT))?.name
            ?: savedInstanceState?.getString(STATE_SWITCHED)
        switchedTo?.let { show(accountNote, getString(R.string.switched_account, it)) }
        // Recreated (a new theme, a rotation): the same session, even when its game is over.
        session = app.session(lobbyId, keepEnded = savedInstanceState != null)
        grid.onChange = { showWeapon() }
        legend.onPick = ::pick
        // Scrolls on small screens, so the result and the buttons are never cut off.
        scroll.addView(
            column().add(heading).add(accountNote).add(balance).add(stateText).add(countdown).add(progress).add(pot).add(notice)
                .add(join).add(leave).add(nextGame).add(back)
                .addCentered(grid).add(weaponName).add(commit).add(verification).add(legend).add(roundsTitle).add(roundList),
        )
        setContentView(scroll)
        // Half-drawn weapons survive rotation; the session itself never restarts.
        savedInstanceState?.getInt(STATE_GRID)?.let { grid.pendingGrid = it }
        scope.launch {
            try {
                val b = app.backend()
                val lobby = b.player.getLobby(lobbyId)
                title = lobby.name
                heading.text = getString(R.string.lobby_heading, lobby.name, lobby.config.betSize)
                ruleset = b.directory.getRuleset(lobby.config.ruleset).also {
                    grid.weapons = it.grid
                    legend.show(it)
                }
                showWeapon()
                render(session.state.value)
            } catch (e: RpsException) {
                loadFailure = describeFailure(e)
                render(session.state.value)
            }
        }
        refreshBalance()
        scope.launch { session.state.collect(::render) }
        scope.launch {
            session.rounds.collect {
                rounds = it
                render(session.state.value)
            }
        }
        scope.launch {
            session.trust.collect { t ->
                val line = trustLine(t)
                verification.text = line ?: ""
                verification.visibility = if (line == null) View.GONE else View.VISIBLE
            }
        }
    }

    override fun onSaveInstanceState(outState: Bundle) {
        super.onSaveInstanceState(outState)
        outState.putInt(STATE_GRID, grid.grid)
        if (accountNote.isShown) outState.putString(STATE_SWITCHED, app.account?.name)
    }

    override fun onResume() {
        super.onResume()
        ticker.post(tick)
    }

    override fun onPause() {
        ticker.removeCallbacks(tick)
        super.onPause()
    }

    /** The player picked [w] in the legend: the grid shows it, ready to be played. */
    private fun pick(w: Weapon) {
        val p = grid.weapons?.centered(w.move) ?: return
        grid.grid = p.tiles
        showWeapon()
        scroll.post { scroll.smoothScrollTo(0, grid.top) }
    }

    private fun showWeapon() {
        val a = grid.analysis ?: return
        val m = a.matchedMove
        weaponName.text = when {
            grid.grid == 0 -> getString(R.string.draw_hint)
            m != null -> getString(R.string.your_weapon, name(m))
            a.candidates == 0 -> getString(R.string.no_weapon)
            else -> getString(R.string.could_become, a.candidateMoves.joinToString(getString(R.string.list_separator)) { name(it) })
        }
        commit.isEnabled = m != null && session.state.value is GameUiState.YourMove
        grid.contentDescription = getString(R.string.grid_description, weaponName.text)
    }

    internal fun render(s: GameUiState) {
        // A refusal keeps the screen of the state it happened in, with the message above it.
        val shown = if (s is GameUiState.Error && !s.fatal) s.previous ?: s else s
        show(notice, (s as? GameUiState.Error)?.let { message(it.error) } ?: loadFailure)
        val over = shown is GameUiState.Won || shown is GameUiState.Lost || shown is GameUiState.Stopped || shown is GameUiState.Left
        visible(join, shown is GameUiState.NotJoined)
        visible(leave, shown is GameUiState.WaitingForPlayers)
        visible(nextGame, over)
        // A session stopped for good (a forged history, a revoked token) can only be left.
        visible(back, over || (shown is GameUiState.Error && shown.fatal))
        val moving = shown is GameUiState.YourMove
        grid.enabledForInput = moving
        legend.picking = moving
        visible(grid, moving || shown is GameUiState.WaitingForOthers || shown is GameUiState.Revealing)
        visible(weaponName, grid.visibility == View.VISIBLE)
        visible(commit, moving)
        commit.isEnabled = moving && grid.analysis?.matchedMove != null
        val playing = shown !is GameUiState.Connecting && shown !is GameUiState.Error && !over
        visible(legend, playing && ruleset != null)
        stateText.setTextSize(TypedValue.COMPLEX_UNIT_PX, resources.getDimension(if (over) R.dimen.text_title else R.dimen.text_heading))
        stateText.text = when (shown) {
            GameUiState.Connecting -> getString(R.string.state_connecting)
            is GameUiState.NotJoined -> getString(R.string.state_open)
            is GameUiState.WaitingForPlayers -> getString(R.string.state_waiting_players, shown.players, shown.limit)
            is GameUiState.YourMove -> getString(R.string.state_your_move, shown.round)
            is GameUiState.WaitingForOthers -> getString(R.string.state_waiting_others, shown.round, name(shown.move))
            is GameUiState.Revealing ->
                getString(if (shown.sent) R.string.state_revealed else R.string.state_revealing, shown.round, name(shown.move))
            is GameUiState.RoundResult -> getString(R.string.state_round_over, shown.outcome.round)
            is GameUiState.Won -> getString(R.string.state_won, shown.amount)
            is GameUiState.Lost -> getString(R.string.state_lost, shown.round)
            is GameUiState.Stopped ->
                shown.share?.let { getString(R.string.state_stopped_share, shown.reason, it) }
                    ?: getString(R.string.state_stopped, shown.reason)
            is GameUiState.Left -> getString(R.string.state_left, shown.refund)
            is GameUiState.Error -> getString(R.string.state_session_stopped)
        }
        show(
            progress,
            when (shown) {
                is GameUiState.YourMove -> getString(R.string.progress_moves, shown.remaining, shown.committed)
                is GameUiState.WaitingForOthers -> getString(R.string.progress_moves, shown.remaining, shown.committed)
                is GameUiState.Revealing -> getString(R.string.progress_reveals, shown.committed, shown.revealed)
                else -> ""
            },
        )
        // The pot of a game that is over has been paid out: no longer shown.
        show(pot, potOf(shown)?.let { getString(R.string.pot, it) } ?: "")
        showRounds(shown)
        if (shown is GameUiState.YourMove && shown.round != drawingRound) {
            if (drawingRound != 0) grid.grid = 0
            drawingRound = shown.round
            showWeapon()
        }
        if (shown.isFinal || shown is GameUiState.RoundResult) refreshBalance()
        showCountdown(shown)
    }

    /** Every round seen so far, oldest first: those the session saw resolved and the one the state carries. */
    private fun showRounds(shown: GameUiState) {
        val carried = when (shown) {
            is GameUiState.RoundResult -> shown.outcome
            is GameUiState.YourMove -> shown.lastRound
            is GameUiState.Lost -> shown.lastRound
            is GameUiState.Won -> shown.lastRound
            else -> null
        }
        val all = (rounds + listOfNotNull(carried)).distinctBy { it.round }.sortedBy { it.round }
        show(roundList, all.joinToString("\n\n") { describe(it) })
        visible(roundsTitle, all.isNotEmpty())
    }

    private fun potOf(s: GameUiState): Long? = when (s) {
        is GameUiState.WaitingForPlayers -> s.pot
        is GameUiState.YourMove -> s.pot
        is GameUiState.WaitingForOthers -> s.pot
        is GameUiState.Revealing -> s.pot
        else -> null
    }

    private fun describe(o: RoundOutcome): String {
        val sep = getString(R.string.list_separator)
        val played = o.counts.withIndex().filter { it.value > 0 }
            .joinToString(sep) { getString(R.string.weapon_count, name(it.index), it.value) }
        val survivors = (0..9).filter { o.survivors and (1 shl it) != 0 }.joinToString(sep) { name(it) }
        val left = resources.getQuantityString(R.plurals.players_left, o.remaining, o.remaining)
        val you = when (o.youSurvived) {
            true -> " " + getString(if (o.remaining == 1) R.string.you_last_standing else R.string.you_go_on)
            false -> " " + getString(R.string.you_are_out)
            null -> ""
        }
        return getString(R.string.round_summary, o.round, played, survivors.ifEmpty { getString(R.string.none) }, left) + you
    }

    private fun name(m: Int?): String =
        m?.let { ruleset?.weapons?.firstOrNull { w -> w.move == it }?.name ?: getString(R.string.unknown_move, it) }
            ?: getString(R.string.unknown_weapon)

    /** The stage's deadline, labelled with what it closes. */
    private fun showCountdown(s: GameUiState) {
        val shown = if (s is GameUiState.Error && !s.fatal) s.previous ?: s else s
        val label = when (shown) {
            is GameUiState.WaitingForPlayers -> R.string.countdown_registration
            is GameUiState.YourMove -> R.string.countdown_choose
            is GameUiState.WaitingForOthers -> R.string.countdown_moves_close
            is GameUiState.Revealing -> R.string.countdown_reveals_close
            else -> null
        }
        val d = shown.deadline
        show(countdown, if (label != null && d != null) getString(label, (d.remainingMs(app.clock.nowMs()) + 999) / 1000) else "")
    }

    private fun refreshBalance() {
        scope.launch {
            try {
                balance.text = getString(R.string.balance, app.backend().player.me().balance)
            } catch (e: RpsException) {
                balance.text = describeFailure(e)
            }
        }
    }

    override fun onDestroy() {
        scope.cancel()
        super.onDestroy()
    }

    /** Whether this screen shows [s] (its lobby, as its account). */
    fun shows(s: GameSession): Boolean = ::session.isInitialized && session === s

    companion object {
        const val EXTRA_LOBBY = "lobbyId"

        /** The account the game is played as, when it may not be the one in use (a notification's). */
        const val EXTRA_ACCOUNT = "accountId"
        private const val STATE_GRID = "grid"
        private const val STATE_SWITCHED = "switchedTo"

        /** The screen of [lobbyId]'s game, played as [accountId] (switched to if it is not the one in use). */
        fun intent(context: android.content.Context, lobbyId: String, accountId: String): Intent =
            Intent(context, LobbyActivity::class.java).putExtra(EXTRA_LOBBY, lobbyId).putExtra(EXTRA_ACCOUNT, accountId)
    }
}

/** Shows [text] in [v], or hides [v] when there is none (an empty line would still take room). */
private fun show(v: TextView, text: String) {
    v.text = text
    visible(v, text.isNotEmpty())
}

private fun visible(v: View, shown: Boolean) {
    v.visibility = if (shown) View.VISIBLE else View.GONE
}
