package rps.app

import android.app.Activity
import android.view.View
import android.view.ViewGroup
import android.widget.TextView
import org.junit.Assert.assertEquals
import org.junit.Assert.fail
import org.junit.Before
import org.junit.Test
import org.junit.runner.RunWith
import org.robolectric.Robolectric
import org.robolectric.RobolectricTestRunner
import org.robolectric.RuntimeEnvironment
import org.robolectric.annotation.Config
import org.robolectric.annotation.GraphicsMode

/**
 * Every screen under the pseudo-locale en-XA (each string of strings.xml accented and in brackets,
 * written by app/pseudo-locale.py): a text without brackets that is not data from the server (a
 * name, an address, a number) was written in the code instead of strings.xml.
 */
@RunWith(RobolectricTestRunner::class)
@GraphicsMode(GraphicsMode.Mode.NATIVE)
@Config(qualifiers = "en-rXA")
class PseudoLocaleTest {
    private val app get() = RuntimeEnvironment.getApplication() as RpsApp

    /** What the server or the player wrote, shown as it is. */
    private val data = listOf("Friday night RPSLS", "Ada", "http://fake.test", "Rock", "Paper", "Scissors", "Lizard", "Spock") +
        rps.client.RecordedHttp("lobbies").names.sortedByDescending { it.length }

    @Before
    fun reset() = Fakes.reset()

    private fun hardCoded(a: Activity): List<String> {
        val found = mutableListOf<String>()
        fun walk(v: View) {
            if (v is TextView && v.isShown) {
                for (t in listOf(v.text?.toString().orEmpty(), if (v.text.isNullOrEmpty()) v.hint?.toString().orEmpty() else "")) {
                    if (t.isEmpty() || t.contains('[')) continue
                    val rest = data.fold(t) { acc, d -> acc.replace(d, "") }
                    if (rest.any { it.isLetter() }) found += t
                }
            }
            if (v is ViewGroup) for (i in 0 until v.childCount) walk(v.getChildAt(i))
        }
        walk(a.window.decorView)
        return found
    }

    private fun assertNoHardCodedText(a: Activity, screen: String) {
        Screens.settle()
        val found = hardCoded(a)
        if (found.isNotEmpty()) fail("$screen shows text that is not in strings.xml: $found")
    }

    @Test
    fun `the pseudo-locale is in force`() {
        assertEquals("[Çöñtîñüé]", app.getString(R.string.server_continue))
    }

    @Test
    fun `no screen shows hard-coded text`() {
        val first = Robolectric.buildActivity(AccountActivity::class.java).setup().get()
        assertNoHardCodedText(first, "the first screen")
        first.server.setText(TestRpsApp.FAKE_URL)
        first.checkServer.performClick()
        Screens.settle("the account step") { first.create.isShown }
        assertNoHardCodedText(first, "the account step")

        app.signIn(SignIn(Fakes.server.meId, "Ada", TestRpsApp.FAKE_URL, "t"))
        val account = Robolectric.buildActivity(AccountActivity::class.java).setup().get()
        Screens.settle("the account") { account.info.text.contains("1000") }
        assertNoHardCodedText(account, "the account")

        val list = Robolectric.buildActivity(LobbyListActivity::class.java).setup().get()
        Screens.settle("the lobbies") { list.list.childCount > 0 }
        assertNoHardCodedText(list, "the lobbies")

        val games = Robolectric.buildActivity(MyGamesActivity::class.java).setup().get()
        Screens.settle("my games") { games.list.childCount > 0 }
        assertNoHardCodedText(games, "my games")

        val lobby = Robolectric.buildActivity(
            LobbyActivity::class.java,
            android.content.Intent(app, LobbyActivity::class.java).putExtra(LobbyActivity.EXTRA_LOBBY, Fakes.server.lobbyId),
        ).setup().get()
        Screens.settle("the lobby") { lobby.grid.weapons != null && lobby.join.isShown }
        assertNoHardCodedText(lobby, "the lobby")
        lobby.join.performClick()
        Screens.settle("registration") { lobby.leave.isShown }
        assertNoHardCodedText(lobby, "registration")
        Fakes.server.to("started")
        Screens.settle("the round") { lobby.grid.isShown }
        for ((r, c) in listOf(0 to 0, 0 to 1)) Screens.tap(lobby.grid, r, c)
        assertNoHardCodedText(lobby, "the round")
    }

    // The history screens (lobbies engineer's block).
    @Test
    fun `no history screen shows hard-coded text`() {
        app.signIn(SignIn(Fakes.recorded.accounts.getValue("ada"), "Ada", TestRpsApp.FAKE_URL, "t"))
        val standings = Robolectric.buildActivity(StandingsActivity::class.java).setup().get()
        Screens.settle("the standings") { standings.standings.loaded }
        assertNoHardCodedText(standings, "the standings")

        val profile = Robolectric.buildActivity(
            ProfileActivity::class.java,
            ProfileActivity.intent(app, Fakes.recorded.accounts.getValue("ada")),
        )
            .setup().get()
        Screens.settle("the profile") { profile.loaded }
        assertNoHardCodedText(profile, "the profile")

        val ledger = Robolectric.buildActivity(LedgerActivity::class.java).setup().get()
        Screens.settle("the ledger") { ledger.entries.loaded }
        assertNoHardCodedText(ledger, "the ledger")

        val won = kotlinx.coroutines.runBlocking { Fakes.recorded.api("ada").myGames() }.games.first {
            it.ending ==
                rps.client.GameEnding.WON
        }
        val transcript = Robolectric.buildActivity(
            TranscriptActivity::class.java,
            TranscriptActivity.intent(app, won.gameId, null),
        ).setup().get()
        Screens.settle("the transcript") { transcript.loaded }
        assertNoHardCodedText(transcript, "the transcript")
    }
}
