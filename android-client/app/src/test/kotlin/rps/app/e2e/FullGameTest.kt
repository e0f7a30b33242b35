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
import org.junit.Assert.assertTrue
import org.junit.Assume.assumeTrue
import org.junit.Test
import org.junit.runner.RunWith
import org.robolectric.Robolectric
import org.robolectric.RobolectricTestRunner
import org.robolectric.RuntimeEnvironment
import org.robolectric.Shadows.shadowOf
import org.robolectric.annotation.GraphicsMode
import rps.app.AccountActivity
import rps.app.LobbyActivity
import rps.app.LobbyListActivity
import rps.app.RpsApp
import rps.app.Screens
import rps.client.Crypto
import rps.client.GameSession
import rps.client.GameUiState
import rps.client.HeadSignatures
import rps.client.HttpEventFeed
import rps.client.HttpRpsApi
import rps.client.KeyHistory
import rps.client.MemoryVault
import rps.client.e2e.RpsdServer
import rps.client.e2e.SignedPlayer

/**
 * A whole game played through the screens against a real rpsd (run with -Pe2e): sign-up on the
 * first screen, the lobby list, join, a weapon drawn by tapping tiles, commit; two opponents play
 * through the Kotlin client's own sessions. The player wins and the balances shown match the ledger.
 */
@RunWith(RobolectricTestRunner::class)
@GraphicsMode(GraphicsMode.Mode.NATIVE)
class FullGameTest {
    private val app get() = RuntimeEnvironment.getApplication() as RpsApp

    @Test
    fun `a player signs up, joins, draws Rock and wins against two opponents`() {
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
        val lobby = admin.adminCreateLobby("Played through the UI", betSize = 100, players = 3, timeoutMs = 10_000)

        // Sign up on the first screen.
        val account = Robolectric.buildActivity(AccountActivity::class.java).setup().get()
        account.server.setText(server.baseUrl)
        account.checkServer.performClick()
        Screens.settle("the server check", 30_000) { account.create.isShown }
        account.name.setText("ui-player")
        account.create.performClick()
        Screens.settle("the account", 30_000) { account.lobbies.isShown }
        val me = app.backend().player.me()
        admin.adminCredit(me.id, 1000)
        // The account was born with the app's key: the server's key log shows it, signed at sign-up.
        val keyLog = KeyHistory.verify(me.id, app.backend().player.logInfo().origin, app.backend().keys.keyLog(me.id))
        assertEquals(listOf(app.keyOf(app.account!!)!!.keyId), keyLog.active.map { it.keyId })

        // The lobby list, then the lobby.
        account.lobbies.performClick()
        val list = Robolectric.buildActivity(LobbyListActivity::class.java, shadowOf(account).nextStartedActivity).setup().get()
        Screens.settle("the lobby list", 30_000) { list.list.childCount > 0 }
        assertEquals("Balance: 1000", list.balance.text.toString())
        val row = (0 until list.list.childCount).map { list.list.getChildAt(it) }
            .single { it.contentDescription.startsWith("Played through the UI") }
        row.performClick()
        val started: Intent = shadowOf(list).nextStartedActivity
        val a = Robolectric.buildActivity(LobbyActivity::class.java, started).setup().get()
        Screens.settle("the lobby screen", 30_000) { a.grid.weapons != null && a.session.state.value is GameUiState.NotJoined }
        a.join.performClick()
        Screens.settle("registration", 30_000) { a.stateText.text.startsWith("Waiting for players: 1 of 3") }

        // Two opponents join; the round starts.
        val others = listOf("bot-1", "bot-2").map { name ->
            val bot = SignedPlayer.signUp(server.baseUrl, name)
            admin.adminCredit(bot.created.account.id, 1000)
            bot.api to bot.session(lobby.id, opponents)
        }
        val sessions = others.map { it.second }
        for (s in sessions) {
            s.await { it is GameUiState.NotJoined }
            assertTrue(s.join())
        }
        Screens.settle("the first round", 30_000) { a.stateText.text.startsWith("Round 1: draw your weapon") }

        // Rock, drawn tile by tile; Rock beats Scissors and Lizard.
        for ((r, c) in listOf(1 to 1, 1 to 2, 2 to 1, 2 to 2)) Screens.tap(a.grid, r, c)
        assertEquals("Your weapon: Rock", a.weaponName.text.toString())
        a.commit.performClick()
        Screens.settle("the commitment", 30_000) { a.stateText.text.startsWith("Round 1: you play Rock") }
        for ((s, move) in sessions.zip(listOf(2, 3))) {
            s.await { it is GameUiState.YourMove }
            assertTrue(s.commit(move))
        }

        Screens.settle("the win", 30_000) { a.stateText.text.toString() == "You won! 300 is yours." }
        Screens.settle("the balance", 30_000) { a.balance.text.toString() == "Balance: 1200" }
        Screens.shoot(a, "e2e_won")
        for (s in sessions) s.await { it is GameUiState.Lost }

        // What the screen shows is what the ledger holds.
        assertEquals(listOf(1200L, 900L, 900L), listOf(app.backend().player.me().balance) + others.map { it.first.me().balance })
        val ledger = admin.adminLedger()
        assertTrue("ledger invariants: $ledger", ledger.ok)
        assertEquals(0, ledger.entriesSum)

        // The app kept the real server's newest signed head with its checkpoint, signature checked.
        val receipt = app.checkpoints.load(lobby.id)?.head ?: throw AssertionError("the app kept no signed head")
        assertEquals(a.session.receipt, receipt)
        val key = app.backend().player.signingKeys().single { it.keyId == receipt.keyId }
        assertTrue(HeadSignatures.verify(Crypto.unhex(key.publicKey), receipt))
        sessions.forEach { it.stop() }
    }

    private suspend fun GameSession.await(pred: (GameUiState) -> Boolean): GameUiState =
        withTimeout(30_000) { state.first { pred(it) || (it is GameUiState.Error && it.fatal) } }
            .also { check(!(it is GameUiState.Error && it.fatal)) { "fatal: $it" } }
}
