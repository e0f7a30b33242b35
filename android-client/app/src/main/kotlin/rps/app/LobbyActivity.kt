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

    internal val heading by lazy { text(20f, bold = true) }
    internal val balance by lazy { text() }
    internal val stateText by lazy { text(18f) }
    internal val countdown by lazy { text(28f, bold = true) }
    internal val pot by lazy { text(18f) }
    internal val notice by lazy { notice() }
    internal val result by lazy { text() }
    internal val weaponName by lazy { text(18f, bold = true) }
    internal val grid by lazy { GridView(this) }
    internal val join by lazy { button("Join (pay the bet)") { scope.launch { session.join() } } }
    internal val commit by lazy {
        button("Play this weapon") {
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
        session = app.session(lobbyId)
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
                heading.text = "${lobby.name} - bet ${lobby.config.betSize}"
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
            grid.grid == 0 -> "Tap tiles to draw your weapon."
            m != null -> "Your weapon: ${name(m)}"
            a.candidates == 0 -> "No weapon looks like that."
            else -> "Could become: " + a.candidateMoves.joinToString { name(it) }
        }
        commit.isEnabled = m != null && session.state.value is GameUiState.YourMove
    }

    internal fun render(s: GameUiState) {
        // A refusal keeps the screen of the state it happened in, with the message above it.
        val shown = if (s is GameUiState.Error && !s.fatal) s.previous ?: s else s
        notice.text = (s as? GameUiState.Error)?.message ?: loadFailure
        join.visibility = if (shown is GameUiState.NotJoined) View.VISIBLE else View.GONE
        val moving = shown is GameUiState.YourMove
        grid.enabledForInput = moving
        grid.visibility = if (moving || shown is GameUiState.WaitingForOthers || shown is GameUiState.Revealing) View.VISIBLE else View.GONE
        weaponName.visibility = grid.visibility
        commit.visibility = if (moving) View.VISIBLE else View.GONE
        commit.isEnabled = moving && grid.analysis?.matchedMove != null
        stateText.text = when (shown) {
            GameUiState.Connecting -> "Connecting..."
            is GameUiState.NotJoined -> "A game is open. Join it?"
            is GameUiState.WaitingForPlayers -> "Waiting for players: ${shown.players} of ${shown.limit}"
            is GameUiState.YourMove -> "Round ${shown.round}: draw your weapon (${shown.committed} of ${shown.remaining} have chosen)"
            is GameUiState.WaitingForOthers ->
                "Round ${shown.round}: you play ${name(shown.move)}. Waiting for the others (${shown.committed} of ${shown.remaining})"
            is GameUiState.Revealing ->
                "Round ${shown.round}: " +
                    if (shown.sent) "${name(shown.move)} revealed, waiting for the others" else "revealing ${name(shown.move)}..."
            is GameUiState.RoundResult -> "Round ${shown.outcome.round} is over."
            is GameUiState.Won -> "You won! ${shown.amount} is yours."
            is GameUiState.Lost -> "You are out (round ${shown.round})."
            is GameUiState.Stopped -> "The game was stopped: ${shown.reason}" + (shown.share?.let { ". Your share: $it" } ?: ".")
            is GameUiState.Left -> "You left the game; your bet of ${shown.refund} is back."
            is GameUiState.Error -> "Stopped."
        }
        pot.text = potOf(shown)?.let { "Pot: $it" } ?: pot.text
        val outcome = when (shown) {
            is GameUiState.RoundResult -> shown.outcome
            is GameUiState.YourMove -> shown.lastRound
            is GameUiState.Lost -> shown.lastRound
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
        val played = o.counts.mapIndexedNotNull { m, n -> if (n > 0) "${name(m)} x$n" else null }.joinToString()
        val survivors = (0..9).filter { o.survivors and (1 shl it) != 0 }.joinToString { name(it) }
        val you = when (o.youSurvived) {
            true -> if (o.remaining == 1) "You are the last one standing." else "You go on."
            false -> "You are out."
            null -> ""
        }
        val left = "${o.remaining} ${if (o.remaining == 1) "player" else "players"} left"
        return "Round ${o.round}: $played. Surviving weapons: ${survivors.ifEmpty { "none" }}. $left. $you".trim()
    }

    private fun name(m: Int?): String = m?.let { ruleset?.weaponName(it) ?: "move $it" } ?: "?"

    private fun showCountdown(s: GameUiState) {
        countdown.text = s.deadline?.let { "%d s".format((it.remainingMs(app.clock.nowMs()) + 999) / 1000) } ?: ""
        countdown.visibility = if (countdown.text.isEmpty()) View.GONE else View.VISIBLE
    }

    private fun refreshBalance() {
        scope.launch {
            try {
                balance.text = "Balance: ${app.backend().player.me().balance}"
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
