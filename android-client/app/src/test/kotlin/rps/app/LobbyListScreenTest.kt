package rps.app

import android.os.Looper
import android.view.View
import android.widget.Button
import org.junit.Assert.assertEquals
import org.junit.Before
import org.junit.Test
import org.junit.runner.RunWith
import org.robolectric.Robolectric
import org.robolectric.RobolectricTestRunner
import org.robolectric.RuntimeEnvironment
import org.robolectric.Shadows.shadowOf
import org.robolectric.annotation.GraphicsMode
import rps.client.Stage
import java.time.Duration

@RunWith(RobolectricTestRunner::class)
@GraphicsMode(GraphicsMode.Mode.NATIVE)
class LobbyListScreenTest {
    private val app get() = RuntimeEnvironment.getApplication() as RpsApp

    @Before
    fun signedIn() {
        Fakes.reset()
        app.signIn(Fakes.server.meId, "Ada", TestRpsApp.FAKE_URL, "t")
    }

    private fun rows(a: LobbyListActivity) = (0 until a.list.childCount).map { (a.list.getChildAt(it) as Button).text.toString() }

    @Test
    fun `open lobbies come first with bet, players, stage and countdown, closed ones are hidden`() {
        val base = Fakes.server.lobby().copy(serverTime = TestRpsApp.NOW)
        val game = base.game!!
        Fakes.directory.lobbies = listOf(
            base.copy(
                id = "l1",
                name = "High rollers",
                config = base.config.copy(betSize = 500, playersCountLimit = 6),
                game = game.copy(stage = Stage.MOVES, round = 2, players = 6, deadlineMs = TestRpsApp.NOW + 8_000),
            ),
            base.copy(id = "l2", name = "Closed for good", closed = true),
            base.copy(id = "l3", game = game.copy(players = 1, deadlineMs = TestRpsApp.NOW + 30_000)),
            base.copy(id = "l4", name = "Quiet corner", game = null),
        )
        val c = Robolectric.buildActivity(LobbyListActivity::class.java).setup()
        val a = c.get()
        Screens.settle("the lobbies") { a.list.childCount > 0 }
        assertEquals(
            listOf(
                "Friday night RPSLS\nBet 100 - 1/3 players\ntaking players - 30 s left",
                "Quiet corner\nBet 100 - 0/3 players\nwaiting for a game",
                "High rollers\nBet 500 - 6/6 players\nround 2: moves - 8 s left",
            ),
            rows(a),
        )
        assertEquals("Balance: 1000", a.balance.text.toString())
        assertEquals("My games", a.myGames.text.toString())
        assertEquals(View.GONE, a.more.visibility)
        Screens.matchesGoldens(c, "lobby_list")
    }

    @Test
    fun `the countdown ticks in the server's clock`() {
        val base = Fakes.server.lobby().copy(serverTime = TestRpsApp.NOW)
        // The server's clock runs 5 s ahead of the device's.
        Fakes.directory.lobbies =
            listOf(base.copy(serverTime = TestRpsApp.NOW + 5_000, game = base.game!!.copy(deadlineMs = TestRpsApp.NOW + 35_000)))
        val a = Robolectric.buildActivity(LobbyListActivity::class.java).setup().get()
        Screens.settle("the lobbies") { a.list.childCount > 0 }
        assertEquals("taking players - 30 s left", rows(a).single().lines().last())
        TestRpsApp.now += 3_000
        shadowOf(Looper.getMainLooper()).idleFor(Duration.ofSeconds(1))
        assertEquals("taking players - 27 s left", rows(a).single().lines().last())
        TestRpsApp.now += 27_000
        shadowOf(Looper.getMainLooper()).idleFor(Duration.ofSeconds(1))
        assertEquals("taking players", rows(a).single().lines().last())
    }

    @Test
    fun `My games opens the player's games`() {
        val a = Robolectric.buildActivity(LobbyListActivity::class.java).setup().get()
        Screens.settle("the lobbies") { a.list.childCount > 0 }
        a.myGames.performClick()
        assertEquals(MyGamesActivity::class.java.name, shadowOf(a).nextStartedActivity.component?.className)
    }

    @Test
    fun `lobbies past the first 100 are reached with More lobbies`() {
        val base = Fakes.server.lobby().copy(serverTime = TestRpsApp.NOW)
        Fakes.directory.lobbies = (1..130).map { base.copy(id = "l$it", name = "Lobby %03d".format(it)) }
        val a = Robolectric.buildActivity(LobbyListActivity::class.java).setup().get()
        Screens.settle("the first page") { a.list.childCount == 100 }
        assertEquals(View.VISIBLE, a.more.visibility)
        a.more.performClick()
        Screens.settle("the second page") { a.list.childCount == 130 }
        assertEquals("Lobby 130", rows(a).last().lineSequence().first())
        assertEquals(View.GONE, a.more.visibility)
    }

    @Test
    fun `an unreachable server is a message`() {
        app.signIn(Fakes.server.meId, "Ada", "http://127.0.0.1:1", "t")
        val a = Robolectric.buildActivity(LobbyListActivity::class.java).setup().get()
        Screens.settle("the failure") { a.status.text.isNotEmpty() }
        assertEquals("Could not reach the server. Check its address and your connection.", a.status.text.toString())
        Screens.shoot(a, "lobby_list_unreachable")
    }
}
