package rps.app

import android.app.Activity
import android.os.Bundle
import android.os.Handler
import android.os.Looper
import android.view.View
import kotlinx.coroutines.MainScope
import kotlinx.coroutines.cancel
import kotlinx.coroutines.launch
import rps.client.GameSession
import rps.client.GameUiState
import rps.client.RoundOutcome
import rps.client.RpsException
import rps.client.RulesetInfo

/**
 * One lobby: join, draw a weapon on the grid, commit it; the session (owned by [RpsApp], so it
 * outlives this screen) reveals by itself. Shows the countdown to the stage's deadline, the pot,
 * the round results, the winner and the balance; refusals show in red above the controls.
 */
class LobbyActivity : Activity() {
    private val scope = MainScope()
    private val app get() = application as RpsApp
    internal lateinit var session: GameSession
    private var ruleset: RulesetInfo? = null

    /** The round the grid is drawn for: a new round starts from an empty grid. */
    private var drawingRound = 0

    /** Why the lobby or its ruleset could not be read (kept across state updates). */
    private var loadFailure = ""

    internal val heading by lazy { text(Type.TITLE) }
    internal val balance by lazy { text(Type.BODY, muted = true) }
    internal val stateText by lazy { text(Type.HEADING) }
    internal val countdown by lazy { text(Type.DISPLAY) }
    internal val pot by lazy { text(Type.BODY) }
    internal val notice by lazy { notice() }
    internal val result by lazy { text(Type.BODY) }
    internal val weaponName by lazy { text(Type.HEADING) }
    internal val grid by lazy { GridView(this) }
    internal val join by lazy { button(R.string.join) { scope.launch { session.join() } } }
    internal val commit by lazy {
        button(R.string.play_weapon) {
            val move = grid.analysis?.matchedMove ?: return@button
            scope.launch { session.commit(move) }
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
        val lobbyId = intent.getStringExtra(EXTRA_LOBBY) ?: return finish()
        // Recreated (a new theme, a rotation): the same session, even when its game is over.
        session = app.session(lobbyId, keepEnded = savedInstanceState != null)
        grid.onChange = { showWeapon() }
        // Scrolls on small screens, so the result and the buttons are never cut off.
        setContentView(
            android.widget.ScrollView(this).apply {
                addView(
                    column().add(heading).add(balance).add(stateText).add(countdown).add(pot).add(result).add(notice).add(join)
                        .addCentered(grid).add(weaponName).add(commit),
                )
            },
        )
        // Half-drawn weapons survive rotation; the session itself never restarts.
        savedInstanceState?.getInt(STATE_GRID)?.let { grid.pendingGrid = it }
        scope.launch {
            try {
                val b = app.backend()
                val lobby = b.player.getLobby(lobbyId)
                title = lobby.name
                heading.text = getString(R.string.lobby_heading, lobby.name, lobby.config.betSize)
                ruleset = b.directory.getRuleset(lobby.config.ruleset).also { grid.weapons = it.grid }
                showWeapon()
                render(session.state.value)
            } catch (e: RpsException) {
                loadFailure = describeFailure(e)
                notice.text = loadFailure
            }
        }
        refreshBalance()
        scope.launch { session.state.collect(::render) }
    }

    override fun onSaveInstanceState(outState: Bundle) {
        super.onSaveInstanceState(outState)
        outState.putInt(STATE_GRID, grid.grid)
    }

    override fun onResume() {
        super.onResume()
        ticker.post(tick)
    }

    override fun onPause() {
        ticker.removeCallbacks(tick)
        super.onPause()
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
        notice.text = (s as? GameUiState.Error)?.let { message(it.error) } ?: loadFailure
        join.visibility = if (shown is GameUiState.NotJoined) View.VISIBLE else View.GONE
        val moving = shown is GameUiState.YourMove
        grid.enabledForInput = moving
        grid.visibility = if (moving || shown is GameUiState.WaitingForOthers || shown is GameUiState.Revealing) View.VISIBLE else View.GONE
        weaponName.visibility = grid.visibility
        commit.visibility = if (moving) View.VISIBLE else View.GONE
        commit.isEnabled = moving && grid.analysis?.matchedMove != null
        stateText.text = when (shown) {
            GameUiState.Connecting -> getString(R.string.state_connecting)
            is GameUiState.NotJoined -> getString(R.string.state_open)
            is GameUiState.WaitingForPlayers -> getString(R.string.state_waiting_players, shown.players, shown.limit)
            is GameUiState.YourMove -> getString(R.string.state_your_move, shown.round, shown.committed, shown.remaining)
            is GameUiState.WaitingForOthers ->
                getString(R.string.state_waiting_others, shown.round, name(shown.move), shown.committed, shown.remaining)
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
        // The pot of a game that is over has been paid out: no longer shown.
        pot.text = potOf(shown)?.let { getString(R.string.pot, it) } ?: ""
        pot.visibility = if (pot.text.isEmpty()) View.GONE else View.VISIBLE
        val outcome = when (shown) {
            is GameUiState.RoundResult -> shown.outcome
            is GameUiState.YourMove -> shown.lastRound
            is GameUiState.Lost -> shown.lastRound
            is GameUiState.Won -> shown.lastRound
            else -> null
        }
        if (outcome != null) result.text = describe(outcome)
        if (shown is GameUiState.YourMove && shown.round != drawingRound) {
            if (drawingRound != 0) grid.grid = 0
            drawingRound = shown.round
            showWeapon()
        }
        if (shown.isFinal || shown is GameUiState.RoundResult) refreshBalance()
        showCountdown(shown)
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
        val played = o.counts.mapIndexedNotNull { m, n ->
            if (n >
                0
            ) {
                getString(R.string.weapon_count, name(m), n)
            } else {
                null
            }
        }.joinToString(sep)
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

    private fun showCountdown(s: GameUiState) {
        countdown.text = s.deadline?.let { getString(R.string.countdown, (it.remainingMs(app.clock.nowMs()) + 999) / 1000) } ?: ""
        countdown.visibility = if (countdown.text.isEmpty()) View.GONE else View.VISIBLE
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

    companion object {
        const val EXTRA_LOBBY = "lobbyId"
        private const val STATE_GRID = "grid"
    }
}
