package rps.app

import android.view.View
import android.view.ViewGroup
import android.widget.Button
import kotlinx.coroutines.runBlocking
import org.junit.After
import org.junit.Assert.assertEquals
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

/** Standings, profiles, transcripts and the ledger against a real rpsd's recorded answers (core's recordings/lobbies.json). */
@RunWith(RobolectricTestRunner::class)
@GraphicsMode(GraphicsMode.Mode.NATIVE)
class HistoryScreensTest {
    private val app get() = RuntimeEnvironment.getApplication() as RpsApp
    private val zone = TimeZone.getDefault()
    private val recorded get() = Fakes.recorded
    private val ada get() = recorded.accounts.getValue("ada")
    private val bo get() = recorded.accounts.getValue("bo")

    @Before
    fun signedIn() {
        Fakes.reset()
        app.signIn(SignIn(ada, "Ada", TestRpsApp.FAKE_URL, "t"))
        TimeZone.setDefault(TimeZone.getTimeZone("UTC"))
    }

    @After
    fun restoreZone() = TimeZone.setDefault(zone)

    private fun game(ending: GameEnding) = runBlocking { recorded.api("ada").myGames() }.games.first { it.ending == ending }

    /** The texts of each child of [list], joined by " | ". */
    private fun cards(list: ViewGroup) = (0 until list.childCount).map { textsOf(list.getChildAt(it)).joinToString(" | ") }

    private fun button(root: View, label: String): Button {
        fun find(v: View): Button? = when {
            v is Button && v.text.toString() == label && v.isShown -> v
            v is ViewGroup -> (0 until v.childCount).firstNotNullOfOrNull { find(v.getChildAt(it)) }
            else -> null
        }
        return find(root) ?: throw AssertionError("no button '$label'")
    }

    private fun transcript(gameId: String, title: String?) =
        Robolectric.buildActivity(TranscriptActivity::class.java, TranscriptActivity.intent(app, gameId, title)).setup()

    private fun lastRequest(prefix: String) = recorded.requests.last { it.startsWith("ada GET $prefix") }

    @Test
    fun `the standings rank by wins or by the net amount, over a period, and open a profile`() {
        val c = Robolectric.buildActivity(StandingsActivity::class.java).setup()
        Screens.settle("the standings") { c.get().standings.loaded }
        assertEquals(
            listOf("1. Ada | You | 3 games · 1 won · net +150", "2. Cy | 3 games · 1 won · net 0", "3. Bo | 3 games · 0 won · net -150"),
            cards(c.get().standings.list),
        )
        assertEquals("ada GET /v1/leaderboard?by=wins&period=all&limit=100", lastRequest("/v1/leaderboard"))
        val a = Screens.matchesGoldens(c, "standings") { it.standings.loaded }
        button(a.window.decorView, "Most won").performClick()
        Screens.settle("by net") { a.standings.loaded && lastRequest("/v1/leaderboard").contains("by=net") }
        assertEquals("ada GET /v1/leaderboard?by=net&period=all&limit=100", lastRequest("/v1/leaderboard"))
        button(a.window.decorView, "Last 7 days").performClick()
        Screens.settle("the last 7 days") { a.standings.loaded && lastRequest("/v1/leaderboard").contains("7d") }
        assertEquals("ada GET /v1/leaderboard?by=net&period=7d&limit=100", lastRequest("/v1/leaderboard"))
        a.standings.list.getChildAt(2).performClick()
        val profile = shadowOf(a).nextStartedActivity
        assertEquals(ProfileActivity::class.java.name, profile.component?.className)
        assertEquals(bo, profile.getStringExtra(ProfileActivity.EXTRA_ACCOUNT))
    }

    @Test
    fun `a player's profile shows their results and their games`() {
        val c = Robolectric.buildActivity(ProfileActivity::class.java, ProfileActivity.intent(app, bo)).setup()
        val a = c.get()
        Screens.settle("Bo's profile") { a.loaded }
        assertEquals("Bo", a.name.text.toString())
        assertEquals("3 games · 0 won · net -150", a.facts.text.toString())
        assertEquals(
            listOf(
                "High rollers - game 1",
                "Friday night RPSLS - game 1",
                "Lunch break - game 1",
                "Office league - game 2",
                "Office league - game 1",
            ),
            cards(a.games.list).map { it.substringBefore(" | ") },
        )
        Screens.matchesGoldens(c, "profile") { it.loaded }
    }

    @Test
    fun `the player's own profile shows the balance`() {
        val a = Robolectric.buildActivity(ProfileActivity::class.java, ProfileActivity.intent(app, ada)).setup().get()
        Screens.settle("Ada's profile") { a.loaded }
        assertEquals("3 games · 1 won · net +150\nBalance: 1150", a.facts.text.toString())
    }

    @Test
    fun `a game's transcript says how it ended, its players and each round's moves, survivors and who went out`() {
        val won = game(GameEnding.WON)
        val c = transcript(won.gameId, "Office league - game 1")
        val a = c.get()
        Screens.settle("the transcript") { a.loaded }
        assertEquals("Office league - game 1", a.heading.text.toString())
        assertEquals(
            listOf(
                "Ada won in round 2: 300 | Rock Paper Scissors Lizard Spock · bet 100 · players: 3",
                "Players",
                "Ada · winner | Bo · out in round 2 | Cy · out in round 1",
                "Round 1 | Rock x2, Scissors x1 | Ada: Rock, Bo: Rock, Cy: Scissors | 2 players went on. | Out: Cy",
                "Round 2 | Rock x1, Scissors x1 | Ada: Rock, Bo: Scissors | 1 player went on. | Out: Bo",
            ),
            cards(a.content).map { it.substringBefore(" | Opened") },
        )
        Screens.matchesGoldens(c, "transcript") { it.loaded }
    }

    @Test
    fun `a player in a transcript opens their profile`() {
        val won = game(GameEnding.WON)
        val a = transcript(won.gameId, null).get()
        Screens.settle("the transcript") { a.loaded }
        assertEquals("Game 1", a.heading.text.toString())
        button(a.window.decorView, "Bo · out in round 2").performClick()
        assertEquals(bo, shadowOf(a).nextStartedActivity.getStringExtra(ProfileActivity.EXTRA_ACCOUNT))
    }

    @Test
    fun `the transcripts of a stopped game and of a refunded registration`() {
        val share = game(GameEnding.SHARE)
        val stopped = transcript(share.gameId, "Office league - game 2").get()
        Screens.settle("the stopped game") { stopped.loaded }
        val texts = cards(stopped.content)
        assertEquals("Stopped in round 1 (maintenance): the pot was shared.", texts.first().substringBefore(" | "))
        assertEquals("Ada · in when it stopped | Bo · in when it stopped | Cy · in when it stopped", texts[2])
        assertEquals(
            "Round 1 | Ada: no move, Bo: no move, Cy: no move | The game was stopped before this round was resolved.",
            texts[3],
        )
        Screens.shoot(stopped, "transcript_stopped")

        val refunded = game(GameEnding.REFUNDED)
        val r = transcript(refunded.gameId, "Lunch break - game 2").get()
        Screens.settle("the refunded game") { r.loaded }
        assertEquals(
            "Stopped during registration (closing time): every bet was refunded. | Rock Paper Scissors · bet 50 · players: 1",
            cards(r.content).first().substringBefore(" | Opened"),
        )
        assertEquals(3, r.content.childCount)
    }

    @Test
    fun `the ledger says why money moved, how much, and the balance after each entry`() {
        val c = Robolectric.buildActivity(LedgerActivity::class.java).setup()
        val a = c.get()
        Screens.settle("the ledger") { a.entries.loaded }
        // Each card: kind, amount, then the date and the balance after it; a credit or debit, whether an admin signed it.
        assertEquals(
            listOf(
                "Credit | +1000 | 1000 | No admin signature: the operator's word alone",
                "Bet | -100 | 900",
                "Winnings | +300 | 1200",
                "Bet | -100 | 1100",
                "Share of a stopped game | +100 | 1200",
                "Bet | -50 | 1150",
                "Bet | -50 | 1100",
                "Refund | +50 | 1150",
            ),
            cards(a.entries.list).map { it.replace(Regex(""" \| [^|]* · balance """), " | ") },
        )
        Screens.matchesGoldens(c, "ledger") { it.entries.loaded }
    }

    @Test
    fun `a ledger entry of a game opens its transcript`() {
        val a = Robolectric.buildActivity(LedgerActivity::class.java).setup().get()
        Screens.settle("the ledger") { a.entries.loaded }
        a.entries.list.getChildAt(2).performClick()
        assertEquals(game(GameEnding.WON).gameId, shadowOf(a).nextStartedActivity.getStringExtra(TranscriptActivity.EXTRA_GAME))
        a.entries.list.getChildAt(0).performClick()
        assertEquals("a credit has no game", null, shadowOf(a).nextStartedActivity)
    }
}
