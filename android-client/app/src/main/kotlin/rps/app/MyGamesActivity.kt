package rps.app

import android.app.Activity
import android.graphics.Color
import android.os.Bundle
import android.view.View
import android.widget.LinearLayout
import android.widget.ScrollView
import kotlinx.coroutines.MainScope
import kotlinx.coroutines.cancel
import kotlinx.coroutines.launch
import rps.client.GameEnding
import rps.client.MyGame
import rps.client.RpsException
import java.text.SimpleDateFormat
import java.util.Date
import java.util.Locale

/**
 * The player's games, newest first, a page at a time: lobby and game number, when the player
 * joined, the stake, how it ended for them, the net amount (green when they came out ahead) and
 * the winner.
 */
class MyGamesActivity : Activity() {
    private val scope = MainScope()
    private val app get() = application as RpsApp
    internal lateinit var list: LinearLayout

    /** The empty state (in the normal text colour) or a failure (in red). */
    internal val status by lazy { notice() }
    internal val more by lazy { button("More games") { load(next) } }
    private var next: String? = null
    private val dates = SimpleDateFormat("d MMM yyyy, HH:mm", Locale.US)

    override fun onCreate(savedInstanceState: Bundle?) {
        super.onCreate(savedInstanceState)
        title = "My games"
        list = column().apply { setPadding(0, 0, 0, 0) }
        more.visibility = View.GONE
        status.visibility = View.GONE
        val content = column().apply { setPadding(0, 0, 0, 0) }.add(list).add(more)
        setContentView(
            column()
                .add(status)
                .add(ScrollView(this).apply { addView(content) }, 1f),
        )
        load(null)
    }

    /** Loads the first page ([after] null) or the page after [after], below the ones shown. */
    private fun load(after: String?) {
        scope.launch {
            try {
                val page = app.backend().directory.myGames(after)
                for (g in page.games) list.add(row(g))
                next = page.next
                more.visibility = if (page.next != null) View.VISIBLE else View.GONE
                status.showStatus(if (after == null && page.games.isEmpty()) "No games yet. Join a lobby to play your first." else null)
            } catch (e: RpsException) {
                status.showStatus(describeFailure(e), failure = true)
            }
        }
    }

    private fun row(g: MyGame): View {
        val title = text(17f, bold = true).apply { text = "${g.lobbyName} - game ${g.gameNumber}" }
        val facts = text(15f).apply { text = "${dates.format(Date(g.registeredAtMs))} - stake ${g.stake}" }
        val result = text(16f, bold = true).apply {
            // While the game is open the stake is in the pot, not lost: say so, and do not paint it red.
            text = if (g.ending == GameEnding.PLAYING) "Playing - net ${signed(g.net)} so far" else "${ending(g)} - net ${signed(g.net)}"
            if (g.ending != GameEnding.PLAYING) {
                setTextColor(
                    when {
                        g.net > 0 -> GAIN_GREEN
                        g.net < 0 -> NOTICE_RED
                        else -> TEXT_DARK
                    },
                )
            }
        }
        val row = column().apply { setPadding(0, dp(8), 0, dp(8)) }.add(title).add(facts).add(result)
        g.winnerName?.takeIf { g.ending != GameEnding.WON }?.let { row.add(text(15f).apply { text = "Winner: $it" }) }
        return row
    }

    private fun ending(g: MyGame): String = when (g.ending) {
        GameEnding.PLAYING -> "Playing"
        GameEnding.WON -> "Won"
        GameEnding.ELIMINATED -> g.eliminatedRound?.let { "Eliminated in round $it" } ?: "Eliminated"
        GameEnding.REFUNDED -> "Refunded"
        GameEnding.SHARE -> "Share of a stopped game"
    }

    private fun signed(v: Long) = if (v > 0) "+$v" else "$v"

    private companion object {
        val GAIN_GREEN = Color.rgb(27, 94, 32)
    }

    override fun onDestroy() {
        scope.cancel()
        super.onDestroy()
    }
}
