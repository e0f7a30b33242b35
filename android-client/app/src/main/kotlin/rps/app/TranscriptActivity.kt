package rps.app

import android.app.Activity
import android.content.Context
import android.content.Intent
import android.os.Bundle
import android.widget.LinearLayout
import android.widget.ScrollView
import kotlinx.coroutines.Job
import kotlinx.coroutines.MainScope
import kotlinx.coroutines.cancel
import kotlinx.coroutines.launch
import rps.client.GamePlayer
import rps.client.GameResult
import rps.client.HistoryApi
import rps.client.PlayerStatus
import rps.client.RoundStage
import rps.client.RoundTranscript
import rps.client.RpsException
import rps.client.RulesetInfo
import rps.client.Stage

/**
 * A game's transcript, as public as the server makes it: how it ended, its players (each opens
 * their profile) and every round: the moves per weapon, each player's move, how many went on and
 * who went out. Moves stay sealed until their round has closed.
 */
class TranscriptActivity : Activity() {
    private val scope = MainScope()
    private val app get() = application as RpsApp
    private val gameId by lazy { intent.getStringExtra(EXTRA_GAME) ?: error("no game") }
    internal val heading by lazy { text(Type.TITLE) }
    internal val status by lazy { notice().apply { visibility = android.view.View.GONE } }
    internal val content by lazy { column().apply { setPadding(0, 0, 0, 0) } }
    private var reading: Job? = null

    /** The whole transcript arrived (for tests). */
    internal val loaded: Boolean get() = reading?.isCompleted == true && content.childCount > 0

    override fun onCreate(savedInstanceState: Bundle?) {
        super.onCreate(savedInstanceState)
        title = getString(R.string.transcript)
        heading.text = intent.getStringExtra(EXTRA_TITLE) ?: getString(R.string.transcript)
        setContentView(ScrollView(this).apply { addView(column().add(heading).add(status).add(content)) })
        reading = scope.launch {
            try {
                val b = app.backend()
                val game = b.history.game(gameId)
                val players = allPlayers(b.history)
                val rounds = (1..game.round).map { allMoves(b.history, it) }
                // Weapon names are a nicety: without the ruleset, moves are shown by number.
                val ruleset = try {
                    b.directory.getRuleset(game.config.ruleset)
                } catch (_: RpsException) {
                    null
                }
                show(game, players, rounds, ruleset)
            } catch (e: RpsException) {
                status.showStatus(describeFailure(e), failure = true)
            }
        }
    }

    private suspend fun allPlayers(h: HistoryApi): List<GamePlayer> {
        val out = mutableListOf<GamePlayer>()
        var after: String? = null
        do {
            val page = h.gamePlayers(gameId, after)
            out += page.players
            after = page.next
        } while (after != null)
        return out
    }

    /** Round [round] with all its moves (the server pages them). */
    private suspend fun allMoves(h: HistoryApi, round: Int): RoundTranscript {
        val first = h.round(gameId, round)
        var r = first
        val moves = first.moves.toMutableList()
        while (r.next != null) {
            r = h.round(gameId, round, r.next)
            moves += r.moves
        }
        return first.copy(moves = moves, next = null)
    }

    private fun show(g: GameResult, players: List<GamePlayer>, rounds: List<RoundTranscript>, ruleset: RulesetInfo?) {
        if (intent.getStringExtra(EXTRA_TITLE) == null) heading.text = getString(R.string.game_number, g.number)
        val nameOf = players.associate { it.accountId to it.name }
        fun weapon(m: Int) = ruleset?.weaponName(m) ?: getString(R.string.unknown_move, m)
        val rulesetName = ruleset?.name ?: g.config.ruleset
        content.addCard(
            card()
                .add(text(Type.HEADING).apply { text = outcome(g, nameOf) })
                .add(text(Type.BODY).apply { text = getString(R.string.transcript_facts, rulesetName, g.config.betSize, g.players) })
                .add(text(Type.LABEL, muted = true).apply { text = getString(R.string.transcript_started, dateTime(g.startedAtMs)) }),
        )
        content.add(text(Type.HEADING).apply { setText(R.string.players_heading) })
        val list = column().apply { setPadding(0, 0, 0, 0) }
        for (p in players) {
            list.add(
                plainButton(primary = false) { startActivity(ProfileActivity.intent(this, p.accountId)) }.apply {
                    text = getString(R.string.player_line, p.name, playerStatus(p, g))
                    gravity = android.view.Gravity.START or android.view.Gravity.CENTER_VERTICAL
                },
            )
        }
        content.add(list)
        for (r in rounds) content.addCard(roundCard(r, players, nameOf, ::weapon))
    }

    private fun outcome(g: GameResult, nameOf: Map<String, String>): String = when (g.stage) {
        Stage.FINISHED -> getString(R.string.outcome_won, nameOf[g.winner] ?: getString(R.string.someone), g.round, g.payout)
        Stage.STOPPED -> if (g.round == 0) {
            getString(R.string.outcome_refunded, g.stopReason ?: "")
        } else {
            getString(R.string.outcome_stopped, g.round, g.stopReason ?: "")
        }
        else -> getString(R.string.outcome_playing)
    }

    private fun playerStatus(p: GamePlayer, g: GameResult): String = when (p.status) {
        PlayerStatus.WINNER -> getString(R.string.player_winner)
        PlayerStatus.ELIMINATED -> p.eliminatedInRound?.let { getString(R.string.player_out_in, it) } ?: getString(R.string.player_out)
        PlayerStatus.ACTIVE -> getString(if (g.stage == Stage.STOPPED) R.string.player_at_stop else R.string.player_active)
    }

    private fun roundCard(
        r: RoundTranscript,
        players: List<GamePlayer>,
        nameOf: Map<String, String>,
        weapon: (Int) -> String,
    ): LinearLayout {
        val card = card().add(text(Type.HEADING).apply { text = getString(R.string.round_title, r.round) })
        fun line(s: String) = card.add(text(Type.BODY).apply { text = s })
        if (r.stage != RoundStage.CLOSED) {
            val committed = r.moves.count { it.committed }
            line(getString(R.string.round_sealed, committed, r.moves.size))
            return card
        }
        val sep = getString(R.string.list_separator)
        if (r.counts.any { it > 0 }) {
            line(
                r.counts.withIndex().filter {
                    it.value > 0
                }.joinToString(sep) { getString(R.string.weapon_count, weapon(it.index), it.value) },
            )
        }
        line(
            r.moves.joinToString(sep) { m ->
                val who = nameOf[m.accountId] ?: getString(R.string.someone)
                getString(
                    R.string.move_of,
                    who,
                    m.move?.let(weapon) ?: getString(if (m.committed) R.string.not_revealed else R.string.no_move),
                )
            },
        )
        val out = players.filter { it.eliminatedInRound == r.round }.joinToString(sep) { it.name }
        r.remaining?.let { line(resources.getQuantityString(R.plurals.went_on, it, it)) } ?: line(getString(R.string.round_not_resolved))
        if (out.isNotEmpty()) line(getString(R.string.went_out, out))
        return card
    }

    override fun onDestroy() {
        scope.cancel()
        super.onDestroy()
    }

    companion object {
        const val EXTRA_GAME = "game"
        const val EXTRA_TITLE = "title"

        fun intent(c: Context, gameId: String, title: String?): Intent =
            Intent(c, TranscriptActivity::class.java).putExtra(EXTRA_GAME, gameId).apply { title?.let { putExtra(EXTRA_TITLE, it) } }
    }
}
