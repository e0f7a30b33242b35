package rps.app

import android.app.Activity
import android.content.Intent
import android.os.Bundle
import android.view.View
import android.widget.ScrollView
import kotlinx.coroutines.MainScope
import kotlinx.coroutines.cancel
import rps.client.GameEnding
import rps.client.MyGame
import java.text.DateFormat
import java.util.Date

/**
 * The player's games, newest first, a page at a time, each a card: lobby and game number, when
 * the player joined, the stake, how it ended for them, the net amount (green when they came out
 * ahead) and the winner. A card opens the game's transcript (or, while the game is on, the game).
 * "Standings" and "My ledger" lead on to the rest of the history.
 */
class MyGamesActivity : Activity() {
    private val scope = MainScope()
    private val app get() = application as RpsApp
    internal val games by lazy {
        PagedList<MyGame>(this, scope, R.string.more_games, R.string.no_games, { after ->
            app.backend().directory.myGames(after).let { it.games to it.next }
        }) { gameCard(it) }
    }
    internal val list get() = games.list
    internal val status get() = games.status
    internal val more get() = games.more
    internal val standings by lazy {
        button(R.string.standings, primary = false) { startActivity(Intent(this, StandingsActivity::class.java)) }
    }
    internal val ledger by lazy { button(R.string.my_ledger, primary = false) { startActivity(Intent(this, LedgerActivity::class.java)) } }

    override fun onCreate(savedInstanceState: Bundle?) {
        super.onCreate(savedInstanceState)
        title = getString(R.string.my_games)
        setContentView(
            ScrollView(this).apply {
                addView(
                    column()
                        .add(text(Type.TITLE).apply { setText(R.string.my_games) })
                        .add(pair(standings, ledger))
                        .add(games.status)
                        .add(games.list)
                        .add(games.more),
                )
            },
        )
        games.load()
    }

    override fun onDestroy() {
        scope.cancel()
        super.onDestroy()
    }
}

/** When, in the device's zone and locale. */
internal fun dateTime(ms: Long): String = DateFormat.getDateTimeInstance(DateFormat.MEDIUM, DateFormat.SHORT).format(Date(ms))

/** A game as one player lived it (theirs or another's, on a profile): a card opening its transcript, or the game while it is on. */
internal fun Activity.gameCard(g: MyGame): View {
    val title = getString(R.string.game_title, g.lobbyName, g.gameNumber)
    val card = card {
        startActivity(
            if (g.ending == GameEnding.PLAYING) {
                Intent(this, LobbyActivity::class.java).putExtra(LobbyActivity.EXTRA_LOBBY, g.lobbyId)
            } else {
                TranscriptActivity.intent(this, g.gameId, title)
            },
        )
    }
    card.add(text(Type.HEADING).apply { text = title })
    card.add(text(Type.LABEL, muted = true).apply { text = getString(R.string.game_facts, dateTime(g.registeredAtMs), g.stake) })
    card.add(
        text(Type.BODY).apply {
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
        },
    )
    g.winnerName?.takeIf {
        g.ending != GameEnding.WON
    }?.let { card.add(text(Type.LABEL).apply { text = getString(R.string.game_winner, it) }) }
    return card.spoken()
}

private fun Activity.ending(g: MyGame): String = when (g.ending) {
    GameEnding.PLAYING -> getString(R.string.ending_playing)
    GameEnding.WON -> getString(R.string.ending_won)
    GameEnding.ELIMINATED -> g.eliminatedRound?.let { getString(R.string.ending_eliminated_in, it) }
        ?: getString(R.string.ending_eliminated)
    GameEnding.REFUNDED -> getString(R.string.ending_refunded)
    GameEnding.SHARE -> getString(R.string.ending_share)
}

/** An amount with its sign (+200, -100, 0). */
internal fun signed(v: Long) = if (v > 0) "+$v" else "$v"
