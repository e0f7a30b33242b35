package rps.app

import android.view.View
import android.widget.LinearLayout
import android.widget.TextView
import org.junit.After
import org.junit.Assert.assertEquals
import org.junit.Before
import org.junit.Test
import org.junit.runner.RunWith
import org.robolectric.Robolectric
import org.robolectric.RobolectricTestRunner
import org.robolectric.RuntimeEnvironment
import org.robolectric.annotation.GraphicsMode
import rps.client.GameEnding
import rps.client.MyGame
import rps.client.Stage
import java.util.TimeZone

@RunWith(RobolectricTestRunner::class)
@GraphicsMode(GraphicsMode.Mode.NATIVE)
class MyGamesScreenTest {
    private val app get() = RuntimeEnvironment.getApplication() as RpsApp
    private val zone = TimeZone.getDefault()

    @Before
    fun signedIn() {
        Fakes.reset()
        app.signIn(Fakes.server.meId, "Ada", TestRpsApp.FAKE_URL, "t")
        // Times are shown in the device's zone: fix it, so the texts and the golden do not depend on the machine.
        TimeZone.setDefault(TimeZone.getTimeZone("UTC"))
    }

    @After
    fun restoreZone() = TimeZone.setDefault(zone)

    private fun game(
        n: Int,
        ending: GameEnding,
        net: Long,
        round: Int? = null,
        winner: String? = null,
    ) = MyGame(
        lobbyId = "l$n", lobbyName = "Friday night RPSLS", gameId = "g$n", gameNumber = n,
        stage = if (ending ==
            GameEnding.PLAYING
        ) {
            Stage.MOVES
        } else if (ending == GameEnding.WON ||
            ending == GameEnding.ELIMINATED
        ) {
            Stage.FINISHED
        } else {
            Stage.STOPPED
        },
        registeredAtMs = TestRpsApp.NOW - n * 3_600_000L, endedAtMs = null, stake = 100, ending = ending,
        eliminatedRound = round, net = net, winnerName = winner,
    )

    /** Each row's lines, joined by newlines. */
    private fun rows(a: MyGamesActivity) = (0 until a.list.childCount).map { i ->
        val row = a.list.getChildAt(i) as LinearLayout
        (0 until row.childCount).joinToString("\n") { (row.getChildAt(it) as TextView).text }
    }

    @Test
    fun `every way a game can end, newest first, with stake, net and winner`() {
        Fakes.directory.games = listOf(
            game(1, GameEnding.PLAYING, -100),
            game(2, GameEnding.WON, 200, winner = "me"),
            game(3, GameEnding.ELIMINATED, -100, round = 2, winner = "ada"),
            game(4, GameEnding.REFUNDED, 0),
            game(5, GameEnding.SHARE, -34),
        )
        val c = Robolectric.buildActivity(MyGamesActivity::class.java).setup()
        val a = c.get()
        Screens.settle("my games") { a.list.childCount == 5 }
        assertEquals(
            listOf(
                "Friday night RPSLS - game 1\n31 Dec 2025, 23:00 - stake 100\nPlaying - net -100 so far",
                "Friday night RPSLS - game 2\n31 Dec 2025, 22:00 - stake 100\nWon - net +200",
                "Friday night RPSLS - game 3\n31 Dec 2025, 21:00 - stake 100\nEliminated in round 2 - net -100\nWinner: ada",
                "Friday night RPSLS - game 4\n31 Dec 2025, 20:00 - stake 100\nRefunded - net 0",
                "Friday night RPSLS - game 5\n31 Dec 2025, 19:00 - stake 100\nShare of a stopped game - net -34",
            ),
            rows(a),
        )
        assertEquals(View.GONE, a.more.visibility)
        assertEquals(View.GONE, a.status.visibility)
        Screens.matchesGoldens(c, "my_games")
    }

    @Test
    fun `games past the first 100 are reached with More games`() {
        Fakes.directory.games = (1..130).map { game(it, GameEnding.WON, 200) }
        val a = Robolectric.buildActivity(MyGamesActivity::class.java).setup().get()
        Screens.settle("the first page") { a.list.childCount == 100 }
        assertEquals(View.VISIBLE, a.more.visibility)
        a.more.performClick()
        Screens.settle("the second page") { a.list.childCount == 130 }
        assertEquals("Friday night RPSLS - game 130", rows(a).last().lineSequence().first())
        assertEquals(View.GONE, a.more.visibility)
    }

    @Test
    fun `no games yet`() {
        val a = Robolectric.buildActivity(MyGamesActivity::class.java).setup().get()
        Screens.settle("the empty state") { a.status.text.isNotEmpty() }
        assertEquals("No games yet. Join a lobby to play your first.", a.status.text.toString())
        assertEquals(0, a.list.childCount)
        assertEquals("the empty state is not painted as an error", a.getColor(R.color.text), a.status.currentTextColor)
        Screens.shoot(a, "my_games_empty")
    }

    @Test
    fun `an unreachable server is a message`() {
        app.signIn(Fakes.server.meId, "Ada", "http://127.0.0.1:1", "t")
        val a = Robolectric.buildActivity(MyGamesActivity::class.java).setup().get()
        Screens.settle("the failure") { a.status.text.isNotEmpty() }
        assertEquals("Could not reach the server. Check its address and your connection.", a.status.text.toString())
        assertEquals(a.getColor(R.color.error), a.status.currentTextColor)
        Screens.shoot(a, "my_games_unreachable")
    }
}
