package rps.app

import android.app.Activity
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
    internal val more by lazy { button(R.string.more_games, primary = false) { load(next) } }
    private var next: String? = null
    private val dates = SimpleDateFormat("d MMM yyyy, HH:mm", Locale.US)

    override fun onCreate(savedInstanceState: Bundle?) {
        super.onCreate(savedInstanceState)
        title = getString(R.string.my_games)
        list = column().apply { setPadding(0, 0, 0, 0) }
        more.visibility = View.GONE
        status.visibility = View.GONE
        val content = column().apply { setPadding(0, 0, 0, 0) }.add(list).add(more)
        setContentView(
            column()
                .add(text(Type.TITLE).apply { setText(R.string.my_games) })
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
                status.showStatus(if (after == null && page.games.isEmpty()) getString(R.string.no_games) else null)
            } catch (e: RpsException) {
                status.showStatus(describeFailure(e), failure = true)
            }
        }
    }

    private fun row(g: MyGame): View {
        val title = text(Type.HEADING).apply { text = getString(R.string.game_title, g.lobbyName, g.gameNumber) }
        val facts = text(Type.LABEL, muted = true).apply {
            text =
                getString(R.string.game_facts, dates.format(Date(g.registeredAtMs)), g.stake)
        }
        val result = text(Type.BODY).apply {
            setTypeface(typeface, android.graphics.Typeface.BOLD)
            // While the game is open the stake is in the pot, not lost: say so, and do not paint it red.
            text = if (g.ending == GameEnding.PLAYING) {
                getString(R.string.game_playing, signed(g.net))
            } else {
                getString(R.string.game_result, ending(g), signed(g.net))
            }
            if (g.ending != GameEnding.PLAYING) {
                setTextColor(
                    when {
                        g.net > 0 -> color(R.color.success)
                        g.net < 0 -> color(R.color.error)
                        else -> color(R.color.text)
                    },
                )
            }
        }
        val row = column().apply { setPadding(0, dp(8), 0, dp(8)) }.add(title).add(facts).add(result)
        g.winnerName?.takeIf { g.ending != GameEnding.WON }?.let {
            row.add(
                text(Type.LABEL).apply {
                    text =
                        getString(R.string.game_winner, it)
                },
            )
        }
        return row
    }

    private fun ending(g: MyGame): String = when (g.ending) {
        GameEnding.PLAYING -> getString(R.string.ending_playing)
        GameEnding.WON -> getString(R.string.ending_won)
        GameEnding.ELIMINATED -> g.eliminatedRound?.let { getString(R.string.ending_eliminated_in, it) }
            ?: getString(R.string.ending_eliminated)
        GameEnding.REFUNDED -> getString(R.string.ending_refunded)
        GameEnding.SHARE -> getString(R.string.ending_share)
    }

    private fun signed(v: Long) = if (v > 0) "+$v" else "$v"

    override fun onDestroy() {
        scope.cancel()
        super.onDestroy()
    }
}
