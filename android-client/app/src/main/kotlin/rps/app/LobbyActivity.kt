package rps.app

import android.app.Activity
import android.os.Bundle
import android.os.Handler
import android.os.Looper
import kotlinx.coroutines.Job
import kotlinx.coroutines.MainScope
import kotlinx.coroutines.cancel
import kotlinx.coroutines.launch
import rps.client.GameSession
import rps.client.GameUiState
import rps.client.RoundOutcome
import rps.client.RpsException
import rps.client.RulesetInfo

/**
 * One lobby: join, draw a weapon on the grid, commit it; the session reveals by itself. Shows the
 * countdown to the stage's deadline, the pot, the round results and the balance.
 */
class LobbyActivity : Activity() {
    private val scope = MainScope()
    private val app get() = application as RpsApp
    private lateinit var session: GameSession
    private var ruleset: RulesetInfo? = null
    private var watch: Job? = null

    private val title by lazy { text(20f, bold = true) }
    private val stateText by lazy { text(18f) }
    private val countdown by lazy { text(28f, bold = true) }
    private val pot by lazy { text() }
    private val result by lazy { text() }
    private val weaponName by lazy { text(18f, bold = true) }
    private val balance by lazy { text() }
    private val grid by lazy { GridView(this) }
    private val join by lazy { button("Join (pay the bet)") { scope.launch { session.join() } } }
    private val commit by lazy {
        button("Play this weapon") {
            val move = grid.analysis?.matchedMove ?: return@button
            scope.launch {
                try {
                    session.commit(move)
                } catch (e: IllegalStateException) {
                    stateText.text = e.message
                }
            }
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
        val api = app.api()
        session = GameSession(lobbyId, api, app.feed(api), app.vault, scope)
        grid.onChange = { a ->
            val m = a.matchedMove
            weaponName.text = when {
                m != null -> ruleset?.weaponName(m) ?: "move $m"
                a.candidates == 0 -> "No weapon looks like that"
                else -> "Could be: " + a.candidateMoves.joinToString { ruleset?.weaponName(it) ?: "$it" }
            }
            commit.isEnabled = m != null && session.state.value is GameUiState.YourMove
        }
        setContentView(
            column().add(title).add(balance).add(stateText).add(countdown).add(pot).add(join)
                .add(grid).add(weaponName).add(commit).add(result),
        )
        scope.launch {
            try {
                val lobby = api.getLobby(lobbyId)
                title.text = lobby.name
                ruleset = api.getRuleset(lobby.config.ruleset).also { grid.weapons = it.grid }
            } catch (e: RpsException) {
                stateText.text = e.playerMessage
            }
        }
        session.start()
        watch = scope.launch { session.state.collect(::render) }
    }

    override fun onResume() {
        super.onResume()
        ticker.post(tick)
    }

    override fun onPause() {
        ticker.removeCallbacks(tick)
        super.onPause()
    }

    private fun render(s: GameUiState) {
        join.visibility = if (s is GameUiState.NotJoined) android.view.View.VISIBLE else android.view.View.GONE
        grid.enabledForInput = s is GameUiState.YourMove
        commit.isEnabled = s is GameUiState.YourMove && grid.analysis?.matchedMove != null
        stateText.text = when (s) {
            GameUiState.Connecting -> "Connecting..."
            is GameUiState.NotJoined -> "Bet ${s.lobby.config.betSize}. Join the next game?"
            is GameUiState.WaitingForPlayers -> "Waiting for players: ${s.players}/${s.limit}"
            is GameUiState.YourMove -> "Round ${s.round}: draw your weapon (${s.committed}/${s.remaining} have chosen)"
            is GameUiState.WaitingForOthers -> "Round ${s.round}: you chose ${name(s.move)}. Waiting for others (${s.committed}/${s.remaining})"
            is GameUiState.Revealing -> "Round ${s.round}: revealing ${name(s.move)}" + if (s.sent) " - done, waiting for others" else "..."
            is GameUiState.RoundResult -> "Round ${s.outcome.round} is over"
            is GameUiState.Won -> "You won ${s.amount}!"
            is GameUiState.Lost -> "You are out (round ${s.round})."
            is GameUiState.Stopped -> "The game was stopped: ${s.reason}" + (s.share?.let { ". Your share: $it" } ?: "")
            is GameUiState.Error -> s.message
        }
        pot.text = when (s) {
            is GameUiState.WaitingForPlayers -> "Pot: ${s.pot}"
            is GameUiState.YourMove -> "Pot: ${s.pot}"
            is GameUiState.WaitingForOthers -> "Pot: ${s.pot}"
            is GameUiState.Revealing -> "Pot: ${s.pot}"
            else -> pot.text
        }
        val outcome = when (s) {
            is GameUiState.RoundResult -> s.outcome
            is GameUiState.YourMove -> s.lastRound
            is GameUiState.Lost -> s.lastRound
            else -> null
        }
        if (outcome != null) result.text = describe(outcome)
        if (s is GameUiState.YourMove && grid.analysis?.matchedMove == null) grid.grid = 0
        if (s.isFinal) refreshBalance()
        showCountdown(s)
    }

    private fun describe(o: RoundOutcome): String {
        val played = o.counts.mapIndexedNotNull { m, n -> if (n > 0) "${name(m)} x$n" else null }.joinToString()
        val survivors = (0..9).filter { o.survivors and (1 shl it) != 0 }.joinToString { name(it) }
        val you = when (o.youSurvived) { true -> "You go on."; false -> "You are out."; null -> "" }
        return "Round ${o.round}: $played. Survivors: $survivors. ${o.remaining} left. $you"
    }

    private fun name(m: Int?): String = m?.let { ruleset?.weaponName(it) ?: "move $it" } ?: "?"

    private fun showCountdown(s: GameUiState) {
        val d = when (s) {
            is GameUiState.WaitingForPlayers -> s.deadline
            is GameUiState.YourMove -> s.deadline
            is GameUiState.WaitingForOthers -> s.deadline
            is GameUiState.Revealing -> s.deadline
            else -> null
        }
        countdown.text = d?.let { "%.1f s".format(it.remainingMs(System.currentTimeMillis()) / 1000.0) } ?: ""
    }

    private fun refreshBalance() {
        scope.launch {
            try {
                balance.text = "Balance: ${app.api().me().balance}"
            } catch (e: RpsException) {
                balance.text = e.playerMessage
            }
        }
    }

    override fun onDestroy() {
        session.stop()
        scope.cancel()
        super.onDestroy()
    }

    companion object {
        const val EXTRA_LOBBY = "lobbyId"
    }
}
