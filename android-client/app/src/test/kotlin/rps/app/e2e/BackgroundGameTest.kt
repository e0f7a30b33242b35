package rps.app.e2e

import android.content.Intent
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.Assert.assertEquals
import org.junit.Assert.assertSame
import org.junit.Assert.assertTrue
import org.junit.Assume.assumeTrue
import org.junit.Test
import org.junit.runner.RunWith
import org.robolectric.Robolectric
import org.robolectric.RobolectricTestRunner
import org.robolectric.RuntimeEnvironment
import org.robolectric.Shadows.shadowOf
import org.robolectric.annotation.GraphicsMode
import rps.app.GameNotifications
import rps.app.GameNotifications.text
import rps.app.LobbyActivity
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
 * A game against a real rpsd (run with -Pe2e) that the player leaves: they commit Rock on the
 * game's screen and close it; the game service keeps the session, which reveals by itself; the
 * next round is announced by a notification that opens the game again, where the player wins.
 */
@RunWith(RobolectricTestRunner::class)
@GraphicsMode(GraphicsMode.Mode.NATIVE)
class BackgroundGameTest {
    private val app get() = RuntimeEnvironment.getApplication() as RpsApp

    @Test
    fun `the service reveals with the game's screen gone and its notification of the next round opens the game`() {
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
        val lobby = admin.adminCreateLobby("Played in the background", betSize = 100, players = 3, timeoutMs = 60_000)
        val weapons = admin.getRuleset(lobby.config.ruleset).weapons.associate { it.name to it.move }
        app.createAccount(server.baseUrl, "bg-player").also { admin.adminCredit(it.id, 1000) }
        val botPlayers = listOf("bot-1", "bot-2").map { name ->
            SignedPlayer.signUp(server.baseUrl, name).also { admin.adminCredit(it.created.account.id, 1000) }
        }

        // The player joins on the game's screen; the service starts with the game.
        val screen = Robolectric.buildActivity(
            LobbyActivity::class.java,
            Intent(app, LobbyActivity::class.java).putExtra(LobbyActivity.EXTRA_LOBBY, lobby.id),
        ).setup()
        val a = screen.get()
        val session = a.session
        Screens.settle("the lobby screen", 30_000) { a.grid.weapons != null && session.state.value is GameUiState.NotJoined }
        a.join.performClick()
        Screens.settle("registration", 30_000) { session.state.value is GameUiState.WaitingForPlayers }
        val service = GameNotifications.startedService(app)
        val running = shadowOf(service.get())

        val bots = botPlayers.map { it.session(lobby.id, opponents) }
        for (s in bots) {
            s.await { it is GameUiState.NotJoined }
            assertTrue(s.join())
        }

        // Rock, drawn tile by tile and committed; then every screen is gone.
        Screens.settle("the first round", 30_000) { session.state.value is GameUiState.YourMove }
        for ((r, c) in listOf(1 to 1, 1 to 2, 2 to 1, 2 to 2)) Screens.tap(a.grid, r, c)
        a.commit.performClick()
        Screens.settle("the commitment", 30_000) { session.state.value is GameUiState.WaitingForOthers }
        screen.pause().stop().destroy()

        // Rock and Scissors from the bots: the player and bot-1 go on. The round can only be
        // resolved with the player still in once the session the service keeps has revealed.
        for ((s, move) in bots.zip(listOf("Rock", "Scissors"))) {
            s.await { it is GameUiState.YourMove }
            assertTrue(s.commit(weapons.getValue(move)))
        }
        Screens.settle("the second round, the player's reveal taken", 30_000) {
            (session.state.value as? GameUiState.YourMove)?.round == 2
        }
        assertTrue("the service still runs", !running.isStoppedBySelf)

        // The notification of the new round opens the game.
        Screens.settle("the notification of round 2", 30_000) { GameNotifications.alert(app) != null }
        val alert = GameNotifications.alert(app)!!
        assertTrue(alert.text, alert.text.startsWith("Round 2 has started: draw your weapon"))
        val opened: Intent = shadowOf(alert.contentIntent).savedIntents.last()
        val again = Robolectric.buildActivity(LobbyActivity::class.java, opened).setup().get()
        assertSame("the game's screen shows the session the service kept", session, again.session)
        Screens.settle("round 2 on screen", 30_000) { again.stateText.text.startsWith("Round 2") && again.grid.weapons != null }

        // Rock beats bot-1's Scissors: the game is won and the service stops.
        for ((r, c) in listOf(1 to 1, 1 to 2, 2 to 1, 2 to 2)) Screens.tap(again.grid, r, c)
        again.commit.performClick()
        Screens.settle("the commitment of round 2", 30_000) { session.state.value is GameUiState.WaitingForOthers }
        bots[0].await { it is GameUiState.YourMove && it.round == 2 }
        assertTrue(bots[0].commit(weapons.getValue("Scissors")))
        Screens.settle("the win", 30_000) { session.state.value is GameUiState.Won }
        Screens.settle("the service stopped", 30_000) { running.isStoppedBySelf }
        assertEquals(null, GameNotifications.alert(app))
        bots.forEach { it.stop() }
    }

    private suspend fun GameSession.await(pred: (GameUiState) -> Boolean): GameUiState =
        withTimeout(30_000) { state.first { pred(it) || (it is GameUiState.Error && it.fatal) } }
            .also { check(!(it is GameUiState.Error && it.fatal)) { "fatal: $it" } }
}
