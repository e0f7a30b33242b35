package rps.app

import android.os.Looper
import android.view.View
import android.view.ViewGroup
import android.widget.Button
import android.widget.TextView
import kotlinx.coroutines.runBlocking
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
import java.time.Duration

/** The lobby list against a real rpsd's recorded answers (core's recordings/lobbies.json, see HttpRecorder). */
@RunWith(RobolectricTestRunner::class)
@GraphicsMode(GraphicsMode.Mode.NATIVE)
class LobbyListScreenTest {
    private val app get() = RuntimeEnvironment.getApplication() as RpsApp
    private val recorded get() = Fakes.recorded

    @Before
    fun signedIn() {
        Fakes.reset()
        app.signIn(SignIn(recorded.accounts.getValue("ada"), "Ada", TestRpsApp.FAKE_URL, "t"))
        Fakes.others["t"] = runBlocking { recorded.api("ada").me() }
    }

    /** What TalkBack says of each card, in order. */
    private fun cards(a: LobbyListActivity) = (0 until a.list.childCount).map { a.list.getChildAt(it).contentDescription.toString() }

    private fun shown(a: LobbyListActivity, what: String = "the lobbies", done: (List<String>) -> Boolean = { it.isNotEmpty() }) =
        Screens.settle(what) { done(cards(a)) }

    /** The button saying [label] anywhere on the screen. */
    private fun button(a: LobbyListActivity, label: String): Button {
        fun find(v: View): Button? = when {
            v is Button && v.text.toString() == label && v.isShown -> v
            v is ViewGroup -> (0 until v.childCount).firstNotNullOfOrNull { find(v.getChildAt(it)) }
            else -> null
        }
        return find(a.window.decorView) ?: throw AssertionError("no button '$label'")
    }

    private fun lobbyRequests() = recorded.requests.filter { it.startsWith("ada GET /v1/lobbies") }

    @Test
    fun `cards say stage, countdown, ruleset, bet, pot and players, those taking players first, closed ones hidden`() {
        val c = Robolectric.buildActivity(LobbyListActivity::class.java).setup()
        val a = c.get()
        shown(a)
        assertEquals(
            listOf(
                "Office league: Taking players. Rock Paper Scissors Lizard Spock · bet 100 · pot 0, 0/3 players.",
                "Lunch break: Taking players. Rock Paper Scissors · bet 50 · pot 0, 0/3 players.",
                "Friday night RPSLS: Taking players · 2:00. Rock Paper Scissors Lizard Spock · bet 100 · pot 100, 1/3 players.",
                "Pocket change: Taking players. Rock Paper Scissors · bet 10 · pot 0, 0/2 players.",
                "Seven ways: Taking players · 2:00. Rock Paper Scissors 7 · bet 50 · pot 50, 1/4 players.",
                "Big league: Taking players · 2:00. Rock Paper Scissors · bet 2000 · pot 2000, 1/2 players.",
                "High rollers: Round 2: moves · 2:00. Rock Paper Scissors Lizard Spock · bet 500 · pot 1500, 2 of 3 still in.",
            ),
            cards(a),
        )
        assertEquals("Balance: ${Fakes.others.getValue("t").balance}", a.balance.text.toString())
        assertEquals(View.GONE, a.more.visibility)
        assertEquals("Join a game with bet 10", a.joinButton.text.toString())
        Screens.matchesGoldens(c, "lobby_list") { it.loaded }
    }

    @Test
    fun `at font scale 1,3 the header is compact - the first lobby starts in the top third of the screen`() {
        RuntimeEnvironment.setFontScale(1.3f)
        try {
            val a = Robolectric.buildActivity(LobbyListActivity::class.java).setup().get()
            shown(a)
            Screens.settle("the list") { a.loaded }
            Screens.shoot(a, "lobby_list_header_large") // lays the window out as on a phone
            val top = IntArray(2).also { a.list.getChildAt(0).getLocationInWindow(it) }[1]
            val height = a.resources.displayMetrics.heightPixels
            assertTrue("the first card starts at $top px of $height", top <= height / 3)
            // Everything the header showed is still there, the filters folded (none chosen).
            for (v in listOf(a.balance, a.myGames, a.joinButton, a.filtersToggle)) assertTrue("${(v as TextView).text} shown", v.isShown)
            assertEquals("Filters", a.filtersToggle.text.toString())
        } finally {
            RuntimeEnvironment.setFontScale(1f)
        }
    }

    @Test
    fun `the countdown ticks in the server's clock`() {
        val a = Robolectric.buildActivity(LobbyListActivity::class.java).setup().get()
        shown(a)
        fun friday() = cards(a).single { it.startsWith("Friday night RPSLS") }.substringBefore(". ")
        assertEquals("Friday night RPSLS: Taking players · 2:00", friday())
        TestRpsApp.now += 61_000
        shadowOf(Looper.getMainLooper()).idleFor(Duration.ofSeconds(1))
        assertEquals("Friday night RPSLS: Taking players · 59 s", friday())
        TestRpsApp.now += 60_000
        shadowOf(Looper.getMainLooper()).idleFor(Duration.ofSeconds(1))
        assertEquals("Friday night RPSLS: Taking players", friday())
    }

    @Test
    fun `the filters are the server's`() {
        val c = Robolectric.buildActivity(LobbyListActivity::class.java).setup()
        val a = c.get()
        shown(a)
        fun names() = cards(a).map { it.substringBefore(':') }
        assertEquals("Filters", a.filtersToggle.text.toString())
        a.filtersToggle.performClick()
        assertEquals("Hide filters", a.filtersToggle.text.toString())
        button(a, "11 to 100").performClick()
        shown(a, "the bets from 11 to 100") { it.size == 4 }
        assertEquals("ada GET /v1/lobbies?minBet=11&maxBet=100&limit=100", lobbyRequests().last())
        assertEquals(listOf("Office league", "Lunch break", "Friday night RPSLS", "Seven ways"), names())
        button(a, "Rock Paper Scissors Lizard Spock").performClick()
        shown(a, "RPSLS from 11 to 100") { it.size == 2 }
        assertEquals("ada GET /v1/lobbies?minBet=11&maxBet=100&ruleset=rpsls&limit=100", lobbyRequests().last())
        assertEquals(listOf("Office league", "Friday night RPSLS"), names())
        assertTrue(button(a, "11 to 100").isSelected && button(a, "Rock Paper Scissors Lizard Spock").isSelected)
        assertEquals("only the bets of the games shown", "Join a game with bet 100", a.joinButton.text.toString())
        // The filters stay when the screen is recreated (a change of theme or font size).
        val again = Screens.matchesGoldens(c, "lobby_list_filtered") { it.loaded }
        Screens.settle("the recreated list") { again.loaded }
        assertEquals(2, again.list.childCount)

        button(again, "Up to 10").performClick()
        Screens.settle("nothing matches") { again.status.isShown }
        assertEquals("No lobby matches these filters.", again.status.text.toString())
        assertEquals("ada GET /v1/lobbies?maxBet=10&ruleset=rpsls&limit=100", lobbyRequests().last())
        assertEquals(0, again.list.childCount)
        assertEquals(View.GONE, again.joinButton.visibility)
        assertEquals("No game is taking players with these filters right now.", again.joinNothing.text.toString())
        // Folded, the filters say which are chosen.
        again.filtersToggle.performClick()
        assertEquals("Filters: Up to 10, Rock Paper Scissors Lizard Spock", again.filtersToggle.text.toString())
    }

    @Test
    fun `the list is read again while it is on screen, and not after`() {
        val c = Robolectric.buildActivity(LobbyListActivity::class.java).setup()
        val a = c.get()
        shown(a)
        assertTrue(cards(a).any { it.startsWith("Friday night RPSLS") && it.endsWith("1/3 players.") })
        recorded.to("joined")
        shadowOf(Looper.getMainLooper()).idleFor(Duration.ofMillis(LobbyListActivity.REFRESH_MS))
        shown(a, "Ada in Friday night") { l -> l.any { it.startsWith("Friday night RPSLS") && it.endsWith("2/3 players.") } }

        c.pause()
        val before = lobbyRequests().size
        recorded.to("taken")
        shadowOf(Looper.getMainLooper()).idleFor(Duration.ofMillis(3 * LobbyListActivity.REFRESH_MS))
        Screens.settle()
        assertEquals("no reads while the screen is not visible", before, lobbyRequests().size)
        c.resume()
        shown(a, "the game in Pocket change") { l -> l.any { it.startsWith("Pocket change: Round 1: moves") } }
    }

    @Test
    fun `quick join registers in the game with the chosen bet and opens it`() {
        val a = Robolectric.buildActivity(LobbyListActivity::class.java).setup().get()
        shown(a)
        assertEquals(
            listOf("Bet 10", "Bet 50", "Bet 100", "Bet 2000"),
            listOf(10, 50, 100, 2000).map {
                button(a, "Bet $it").text.toString()
            },
        )
        button(a, "Bet 100").performClick()
        assertEquals("Join a game with bet 100", a.joinButton.text.toString())
        recorded.to("joined")
        a.joinButton.performClick()
        Screens.settle("the lobby to open") { shadowOf(a).peekNextStartedActivity() != null }
        val started = shadowOf(a).nextStartedActivity
        assertEquals(LobbyActivity::class.java.name, started.component?.className)
        assertEquals(recorded.ids.getValue("Friday night RPSLS"), started.getStringExtra(LobbyActivity.EXTRA_LOBBY))
        assertEquals(View.GONE, a.joinStatus.visibility)
    }

    @Test
    fun `quick join says when the balance is too low`() {
        val c = Robolectric.buildActivity(LobbyListActivity::class.java).setup()
        val a = c.get()
        shown(a)
        button(a, "Bet 2000").performClick()
        a.joinButton.performClick()
        Screens.settle("the refusal") { a.joinStatus.isShown && !a.joinStatus.text.startsWith("Finding") }
        val balance = Fakes.others.getValue("t").balance
        assertEquals("Your balance ($balance) is too low for a bet of 2000.", a.joinStatus.text.toString())
        assertEquals(null, shadowOf(a).nextStartedActivity)
        Screens.shoot(a, "lobby_list_no_funds")
    }

    @Test
    fun `quick join says when the last game with that bet filled meanwhile, and shows the list as it is now`() {
        val a = Robolectric.buildActivity(LobbyListActivity::class.java).setup().get()
        shown(a)
        button(a, "Bet 10").performClick()
        recorded.to("taken")
        a.joinButton.performClick()
        Screens.settle("the refusal") { a.joinStatus.isShown && !a.joinStatus.text.startsWith("Finding") }
        assertEquals(
            "No game with bet 10 is taking players any more. Pick another bet, or wait for a game to open.",
            a.joinStatus.text.toString(),
        )
        shown(a, "the list read again") { l -> l.any { it.startsWith("Pocket change: Round 1: moves") } }
        assertEquals(null, shadowOf(a).nextStartedActivity)
        Screens.shoot(a, "lobby_list_no_match")
    }

    @Test
    fun `My games opens the player's games`() {
        val a = Robolectric.buildActivity(LobbyListActivity::class.java).setup().get()
        shown(a)
        a.myGames.performClick()
        assertEquals(MyGamesActivity::class.java.name, shadowOf(a).nextStartedActivity.component?.className)
    }

    @Test
    fun `a tap on a card opens its lobby`() {
        val a = Robolectric.buildActivity(LobbyListActivity::class.java).setup().get()
        shown(a)
        a.list.getChildAt(6).performClick()
        assertEquals(recorded.ids.getValue("High rollers"), shadowOf(a).nextStartedActivity.getStringExtra(LobbyActivity.EXTRA_LOBBY))
    }

    @Test
    fun `lobbies past the first 100 are reached with More lobbies`() {
        val base = runBlocking { recorded.api("ada").listLobbies() }.lobbies.first()
        Fakes.directory.lobbies = (1..130).map { base.copy(id = "l$it", name = "Lobby %03d".format(it)) }
        val a = Robolectric.buildActivity(LobbyListActivity::class.java).setup().get()
        shown(a, "the first page") { it.size == 100 }
        assertEquals(View.VISIBLE, a.more.visibility)
        a.more.performClick()
        shown(a, "the second page") { it.size == 130 }
        assertEquals("Lobby 130", cards(a).last().substringBefore(':'))
        assertEquals(View.GONE, a.more.visibility)
    }

    @Test
    fun `an unreachable server is a message`() {
        app.signIn(SignIn(recorded.accounts.getValue("ada"), "Ada", "http://127.0.0.1:1", "t"))
        val a = Robolectric.buildActivity(LobbyListActivity::class.java).setup().get()
        Screens.settle("the failure") { a.status.text.isNotEmpty() }
        assertEquals("Could not reach the server. Check its address and your connection.", a.status.text.toString())
        Screens.shoot(a, "lobby_list_unreachable")
    }
}
