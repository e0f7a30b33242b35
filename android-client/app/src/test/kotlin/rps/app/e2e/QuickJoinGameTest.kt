package rps.app.e2e

import android.view.View
import android.view.ViewGroup
import android.widget.Button
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.Assert.assertEquals
import org.junit.Assert.assertTrue
import org.junit.Assume.assumeTrue
import org.junit.Test
import org.junit.runner.RunWith
import org.robolectric.Robolectric
import org.robolectric.RobolectricTestRunner
import org.robolectric.RuntimeEnvironment
import org.robolectric.Shadows.shadowOf
import org.robolectric.annotation.GraphicsMode
import rps.app.LobbyActivity
import rps.app.LobbyListActivity
import rps.app.RpsApp
import rps.app.Screens
import rps.client.GameSession
import rps.client.GameUiState
import rps.client.HttpEventFeed
import rps.client.HttpRpsApi
import rps.client.MemoryVault
import rps.client.e2e.RpsdServer
import rps.client.e2e.SignedPlayer

/**
 * Quick join against a real rpsd (run with -Pe2e): of two lobbies taking players, the player picks
 * the bet of one on the lobby list and taps "Join a game"; `POST /v1/matchmaking` registers them
 * in that lobby's game, which the app opens; two opponents join through the Kotlin client's own
 * sessions, the player picks Rock in the legend and wins, and the balances match the ledger.
 */
@RunWith(RobolectricTestRunner::class)
@GraphicsMode(GraphicsMode.Mode.NATIVE)
class QuickJoinGameTest {
    private val app get() = RuntimeEnvironment.getApplication() as RpsApp

    @Test
    fun `quick join finds the game with the chosen bet, opens it, and the player plays it to a win`() {
        val why = RpsdServer.unavailableReason()
        assumeTrue("no rpsd: $why", why == null)
        val opponents = CoroutineScope(SupervisorJob() + Dispatchers.Default)
        RpsdServer.start().use { server ->
            try {
                play(server, opponents)
            } catch (e: Throwable) {
                throw AssertionError("${e.message}\nrpsd log:\n${server.log.readText().takeLast(3000)}", e)
            } finally {
                opponents.cancel()
            }
        }
    }

    private fun play(server: RpsdServer, opponents: CoroutineScope) = runBlocking {
        val admin = HttpRpsApi(server.baseUrl, RpsdServer.ADMIN_TOKEN)
        // Stages of a minute: every step here is taken well before a deadline.
        admin.adminCreateLobby("Small change", betSize = 10, players = 3, timeoutMs = 60_000)
        val lobby = admin.adminCreateLobby("Quick joined", betSize = 100, players = 3, timeoutMs = 60_000)
        val weapons = admin.getRuleset(lobby.config.ruleset).weapons.associate { it.name to it.move }
        app.createAccount(server.baseUrl, "qj-player").also { admin.adminCredit(it.id, 1000) }
        val botPlayers = listOf("bot-1", "bot-2").map { name ->
            SignedPlayer.signUp(server.baseUrl, name).also { admin.adminCredit(it.created.account.id, 1000) }
        }

        // The lobby list offers the bets of the games taking players; the player picks 100 and joins.
        val list = Robolectric.buildActivity(LobbyListActivity::class.java).setup().get()
        Screens.settle("the lobby list with its bets", 30_000) { list.loaded && list.joinButton.isShown }
        button(list.window.decorView, "Bet 100").performClick()
        assertEquals("Join a game with bet 100", list.joinButton.text.toString())
        list.joinButton.performClick()
        Screens.settle("the joined game to open", 30_000) { shadowOf(list).peekNextStartedActivity() != null }
        val opened = shadowOf(list).nextStartedActivity
        assertEquals("the lobby with the chosen bet", lobby.id, opened.getStringExtra(LobbyActivity.EXTRA_LOBBY))
        val a = Robolectric.buildActivity(LobbyActivity::class.java, opened).setup().get()
        Screens.settle("registered by quick join", 30_000) { a.stateText.text.startsWith("Waiting for players: 1 of 3") }
        Screens.settle("the balance less the bet", 30_000) { a.balance.text.toString() == "Balance: 900" }

        // Two opponents join; the round starts.
        val bots = botPlayers.map { it.session(lobby.id, opponents) }
        for (s in bots) {
            s.await { it is GameUiState.NotJoined }
            assertTrue(s.join())
        }
        Screens.settle("the first round", 30_000) { a.stateText.text.startsWith("Round 1: draw your weapon") && a.legend.isShown }

        // Rock, picked in the legend, beats Scissors and Lizard.
        a.legend.entries.getValue(weapons.getValue("Rock")).performClick()
        assertEquals("Your weapon: Rock", a.weaponName.text.toString())
        a.commit.performClick()
        Screens.settle("the commitment", 30_000) { a.stateText.text.startsWith("Round 1: you play Rock") }
        for ((s, move) in bots.zip(listOf("Scissors", "Lizard"))) {
            s.await { it is GameUiState.YourMove }
            assertTrue(s.commit(weapons.getValue(move)))
        }

        Screens.settle("the win", 30_000) { a.stateText.text.toString() == "You won! 300 is yours." }
        Screens.settle("the balance", 30_000) { a.balance.text.toString() == "Balance: 1200" }
        Screens.shoot(a, "e2e_quick_join_won")
        for (s in bots) s.await { it is GameUiState.Lost }
        val ledger = admin.adminLedger()
        assertTrue("ledger invariants: $ledger", ledger.ok)
        assertEquals(0, ledger.entriesSum)
        bots.forEach { it.stop() }
    }

    /** The button saying [label] on screen. */
    private fun button(v: View, label: String): Button = find(v, label) ?: throw AssertionError("no button '$label'")

    private fun find(v: View, label: String): Button? = when {
        v is Button && v.text.toString() == label && v.isShown -> v
        v is ViewGroup -> (0 until v.childCount).firstNotNullOfOrNull { find(v.getChildAt(it), label) }
        else -> null
    }

    private suspend fun GameSession.await(pred: (GameUiState) -> Boolean): GameUiState =
        withTimeout(30_000) { state.first { pred(it) || (it is GameUiState.Error && it.fatal) } }
            .also { check(!(it is GameUiState.Error && it.fatal)) { "fatal: $it" } }
}
