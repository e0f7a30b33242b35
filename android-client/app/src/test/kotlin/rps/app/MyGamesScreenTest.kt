package rps.app

import android.view.View
import kotlinx.coroutines.runBlocking
import org.junit.After
import org.junit.Assert.assertEquals
import org.junit.Assert.assertTrue
import org.junit.Before
import org.junit.Test
import org.junit.runner.RunWith
import org.robolectric.Robolectric
import org.robolectric.RobolectricTestRunner
import org.robolectric.RuntimeEnvironment
import org.robolectric.Shadows.shadowOf
import org.robolectric.annotation.GraphicsMode
import rps.client.GameEnding
import java.util.TimeZone

/** My games against a real rpsd's recorded answers (core's recordings/lobbies.json, see HttpRecorder). */
@RunWith(RobolectricTestRunner::class)
@GraphicsMode(GraphicsMode.Mode.NATIVE)
class MyGamesScreenTest {
    private val app get() = RuntimeEnvironment.getApplication() as RpsApp
    private val zone = TimeZone.getDefault()
    private val recorded get() = Fakes.recorded

    @Before
    fun signedIn() {
        Fakes.reset()
        app.signIn(SignIn(recorded.accounts.getValue("ada"), "Ada", TestRpsApp.FAKE_URL, "t"))
        // Times are shown in the device's zone: fix it, so the texts and the golden do not depend on the machine.
        TimeZone.setDefault(TimeZone.getTimeZone("UTC"))
    }

    @After
    fun restoreZone() = TimeZone.setDefault(zone)

    /** Each card's lines but the date's. */
    private fun rows(a: MyGamesActivity) = (0 until a.list.childCount).map { i ->
        textsOf(a.list.getChildAt(i)).filterIndexed { n, _ -> n != 1 }.joinToString("\n")
    }

    @Test
    fun `every way a game can end, newest first, with stake, net and winner`() {
        recorded.to("joined")
        val c = Robolectric.buildActivity(MyGamesActivity::class.java).setup()
        val a = c.get()
        Screens.settle("my games") { a.games.loaded }
        assertEquals(
            listOf(
                "Friday night RPSLS - game 1\nPlaying - net -100 so far",
                "Lunch break - game 2\nRefunded - net 0",
                "Lunch break - game 1\nEliminated in round 1 - net -50\nWinner: Cy",
                "Office league - game 2\nShare of a stopped game - net 0",
                "Office league - game 1\nWon - net +200",
            ),
            rows(a),
        )
        val first = runBlocking { recorded.api("ada").myGames() }.games.first()
        assertEquals("${dateTime(first.registeredAtMs)} - stake 100", textsOf(a.list.getChildAt(0))[1])
        assertEquals(View.GONE, a.more.visibility)
        assertEquals(View.GONE, a.status.visibility)
        Screens.matchesGoldens(c, "my_games") { it.games.loaded }
    }

    @Test
    fun `a finished game opens its transcript, a game being played opens the game`() {
        recorded.to("joined")
        val a = Robolectric.buildActivity(MyGamesActivity::class.java).setup().get()
        Screens.settle("my games") { a.games.loaded }
        val won = runBlocking { recorded.api("ada").myGames() }.games.single { it.ending == GameEnding.WON }
        a.list.getChildAt(4).performClick()
        val transcript = shadowOf(a).nextStartedActivity
        assertEquals(TranscriptActivity::class.java.name, transcript.component?.className)
        assertEquals(won.gameId, transcript.getStringExtra(TranscriptActivity.EXTRA_GAME))
        assertEquals("Office league - game 1", transcript.getStringExtra(TranscriptActivity.EXTRA_TITLE))
        a.list.getChildAt(0).performClick()
        val game = shadowOf(a).nextStartedActivity
        assertEquals(LobbyActivity::class.java.name, game.component?.className)
        assertEquals(recorded.ids.getValue("Friday night RPSLS"), game.getStringExtra(LobbyActivity.EXTRA_LOBBY))
    }

    @Test
    fun `the standings and the ledger are a tap away`() {
        val a = Robolectric.buildActivity(MyGamesActivity::class.java).setup().get()
        Screens.settle("my games") { a.games.loaded }
        a.standings.performClick()
        assertEquals(StandingsActivity::class.java.name, shadowOf(a).nextStartedActivity.component?.className)
        a.ledger.performClick()
        assertEquals(LedgerActivity::class.java.name, shadowOf(a).nextStartedActivity.component?.className)
    }

    @Test
    fun `games past the first 100 are reached with More games`() {
        val base = runBlocking { recorded.api("ada").myGames() }.games.first()
        Fakes.directory.games = (1..130).map { base.copy(gameId = "g$it", gameNumber = it) }
        val a = Robolectric.buildActivity(MyGamesActivity::class.java).setup().get()
        Screens.settle("the first page") { a.list.childCount == 100 }
        assertEquals(View.VISIBLE, a.more.visibility)
        a.more.performClick()
        Screens.settle("the second page") { a.list.childCount == 130 }
        assertEquals("Lunch break - game 130", textsOf(a.list.getChildAt(129)).first())
        assertEquals(View.GONE, a.more.visibility)
    }

    @Test
    fun `no games yet`() {
        Fakes.directory.games = emptyList()
        val a = Robolectric.buildActivity(MyGamesActivity::class.java).setup().get()
        Screens.settle("the empty state") { a.status.text.isNotEmpty() }
        assertEquals("No games yet. Join a lobby to play your first.", a.status.text.toString())
        assertEquals(0, a.list.childCount)
        assertEquals("the empty state is not painted as an error", a.getColor(R.color.text), a.status.currentTextColor)
        assertTrue(a.standings.isShown)
        Screens.shoot(a, "my_games_empty")
    }

    @Test
    fun `an unreachable server is a message`() {
        app.signIn(SignIn(recorded.accounts.getValue("ada"), "Ada", "http://127.0.0.1:1", "t"))
        val a = Robolectric.buildActivity(MyGamesActivity::class.java).setup().get()
        Screens.settle("the failure") { a.status.text.isNotEmpty() }
        assertEquals("Could not reach the server. Check its address and your connection.", a.status.text.toString())
        assertEquals(a.getColor(R.color.error), a.status.currentTextColor)
        Screens.shoot(a, "my_games_unreachable")
    }
}
