package rps.app

import android.content.Intent
import android.view.View
import org.junit.Assert.assertEquals
import org.junit.Assert.assertNotNull
import org.junit.Assert.assertNull
import org.junit.Assert.assertSame
import org.junit.Assert.assertTrue
import org.junit.Before
import org.junit.Test
import org.junit.runner.RunWith
import org.robolectric.Robolectric
import org.robolectric.RobolectricTestRunner
import org.robolectric.RuntimeEnvironment
import org.robolectric.android.controller.ActivityController
import org.robolectric.annotation.GraphicsMode
import rps.client.ChainCheckpoint
import rps.client.FileChainCheckpoints
import rps.client.GameUiState
import rps.client.RecordedServer

@RunWith(RobolectricTestRunner::class)
@GraphicsMode(GraphicsMode.Mode.NATIVE)
class LobbyScreenTest {
    private val app get() = RuntimeEnvironment.getApplication() as RpsApp
    private val srv: RecordedServer get() = Fakes.server

    @Before
    fun signedIn() {
        Fakes.reset()
        app.signIn(Fakes.server.meId, "Ada", TestRpsApp.FAKE_URL, "t")
    }

    private fun open(): ActivityController<LobbyActivity> {
        val c = Robolectric.buildActivity(
            LobbyActivity::class.java,
            Intent(app, LobbyActivity::class.java).putExtra(LobbyActivity.EXTRA_LOBBY, srv.lobbyId),
        ).setup()
        val a = c.get()
        Screens.settle("the lobby") { a.grid.weapons != null && a.session.state.value !is GameUiState.Connecting }
        return c
    }

    private fun LobbyActivity.shows(what: String, text: String) =
        Screens.settle("$what (showing '${stateText.text}')") { stateText.text.toString() == text }

    /** Rock is a 2x2 square: drawn in the top left corner. */
    private fun drawRock(a: LobbyActivity) {
        for ((r, c) in listOf(0 to 0, 0 to 1, 1 to 0, 1 to 1)) Screens.tap(a.grid, r, c)
    }

    private fun joinAndStart(a: LobbyActivity) {
        a.join.performClick()
        a.shows("registration", "Waiting for players: 1 of 3")
        srv.to("started")
        a.shows("the first round", "Round 1: draw your weapon (0 of 3 have chosen)")
    }

    private fun commitRock(a: LobbyActivity, round: Int) {
        drawRock(a)
        a.commit.performClick()
        a.shows("the commitment", "Round $round: you play Rock. Waiting for the others (1 of ${srv.lobby().game!!.remaining})")
    }

    @Test
    fun `join, then wait for players with the pot and the countdown`() {
        val a = open().get()
        a.shows("the open game", "A game is open. Join it?")
        assertEquals(View.VISIBLE, a.join.visibility)
        assertEquals(View.GONE, a.grid.visibility)
        Screens.shoot(a, "lobby_not_joined")

        a.join.performClick()
        a.shows("registration", "Waiting for players: 1 of 3")
        assertEquals("Pot: 100", a.pot.text.toString())
        assertEquals("30 s", a.countdown.text.toString())
        assertEquals(View.GONE, a.join.visibility)
        Screens.shoot(a, "lobby_waiting_for_players")
    }

    @Test
    fun `a whole game on the screen - draw, commit, automatic reveal, round result, next round, win`() {
        val c = open()
        var a = c.get()
        joinAndStart(a)
        assertEquals("Tap tiles to draw your weapon.", a.weaponName.text.toString())
        assertTrue("nothing to play yet", !a.commit.isEnabled)

        drawRock(a)
        assertEquals("Your weapon: Rock", a.weaponName.text.toString())
        assertTrue(a.commit.isEnabled)
        val analysis = a.grid.analysis!!
        val greyed = (0 until 5).sumOf { r -> (0 until 5).count { c -> !analysis.isValidTile(r, c) } }
        assertTrue("tiles no weapon can use are greyed out", greyed > 0)
        assertEquals("the grid is square", a.grid.width, a.grid.height)
        a = Screens.matchesGoldens(c, "lobby_your_move")
        assertEquals("the drawing survives the change of theme", "Your weapon: Rock", a.weaponName.text.toString())

        a.commit.performClick()
        a.shows("the commitment", "Round 1: you play Rock. Waiting for the others (1 of 3)")
        assertNotNull("the move is in the vault before the reveal", app.vault.load(srv.lobbyId))
        Screens.shoot(a, "lobby_committed")

        srv.to("reveal")
        a.shows("the automatic reveal", "Round 1: Rock revealed, waiting for the others")
        assertEquals("revealed", srv.moment.name)
        assertNull("the vault is cleared once the reveal is accepted", app.vault.load(srv.lobbyId))
        Screens.shoot(a, "lobby_revealed")

        srv.to("round2")
        a.shows("the second round", "Round 2: draw your weapon (0 of 2 have chosen)")
        // The round's summary comes with its event, which may arrive just after the read of round 2.
        val summary = "Round 1: Rock x2, Scissors x1. Surviving weapons: Rock. 2 players left. You go on."
        Screens.settle("the round's summary") { a.result.text.toString() == summary }
        Screens.shoot(a, "lobby_round_result")

        commitRock(a, 2)
        srv.to("reveal2")
        Screens.settle("the second reveal") { srv.moment.name == "revealed2" }
        srv.to("won")
        a.shows("the win", "You won! 300 is yours.")
        // 1000, less the bet of 100, plus the pot of 300: read again from the server once the game is over.
        Screens.settle("the balance after the win") { a.balance.text.toString() == "Balance: 1200" }
        assertEquals(
            "Round 2: Rock x1, Scissors x1. Surviving weapons: Rock. 1 player left. You are the last one standing.",
            a.result.text.toString(),
        )
        Screens.matchesGoldens(c, "lobby_won")
    }

    @Test
    fun `elimination`() {
        Fakes.reset("eliminated")
        val a = open().get()
        srv.to("bo-joined")
        a.join.performClick()
        a.shows("registration", "Waiting for players: 2 of 3")
        srv.to("started")
        a.shows("the first round", "Round 1: draw your weapon (0 of 3 have chosen)")
        commitRock(a, 1)
        srv.to("reveal")
        Screens.settle("the reveal") { srv.moment.name == "revealed" }
        srv.to("out")
        a.shows("the elimination", "You are out (round 1).")
        assertTrue(a.result.text.endsWith("You are out."))
        Screens.shoot(a, "lobby_eliminated")
    }

    @Test
    fun `refusals are messages above a screen that still works`() {
        val a = open().get()
        srv.problemFor["register"] = srv.problem("insufficient_funds")
        a.join.performClick()
        Screens.settle("the refusal") { a.notice.text.isNotEmpty() }
        assertEquals("Your balance is too low for this bet.", a.notice.text.toString())
        assertEquals("the join button stays", View.VISIBLE, a.join.visibility)
        Screens.shoot(a, "lobby_insufficient_funds")

        srv.problemFor["register"] = srv.problem("lobby_full")
        a.join.performClick()
        Screens.settle("the refusal") { a.notice.text.toString() == "This game is full. Wait for the next one." }
        Screens.shoot(a, "lobby_full")

        joinAndStart(a)
        assertEquals("a successful step clears the message", "", a.notice.text.toString())
    }

    @Test
    fun `a commitment too late is refused and the screen follows the server`() {
        Fakes.reset("late")
        val a = open().get()
        joinAndStart(a)
        for (r in 0..1) for (c in 0..2) Screens.tap(a.grid, r, c) // Paper: three tiles by two
        assertEquals("Your weapon: Paper", a.weaponName.text.toString())
        srv.feedPaused.value = true
        srv.to("moves-closed") // the moves closed before the commitment arrived
        a.commit.performClick()
        Screens.settle("the refusal") { a.notice.text.toString() == "Too late: the game has already moved on." }
        a.shows("the late player out", "You are out (round 1).")
        Screens.shoot(a, "lobby_wrong_stage")
    }

    @Test
    fun `an unreachable server is a message`() {
        app.signIn(Fakes.server.meId, "Ada", "http://127.0.0.1:1", "t")
        val c = Robolectric.buildActivity(
            LobbyActivity::class.java,
            Intent(app, LobbyActivity::class.java).putExtra(LobbyActivity.EXTRA_LOBBY, srv.lobbyId),
        ).setup()
        val a = c.get()
        Screens.settle("the failure") { a.notice.text.isNotEmpty() }
        assertEquals("Could not reach the server. Check its address and your connection.", a.notice.text.toString())
        Screens.shoot(a, "lobby_unreachable")
    }

    @Test
    fun `rotation after a commit keeps the running session`() {
        val c = open()
        val a = c.get()
        joinAndStart(a)
        commitRock(a, 1)
        val session = a.session
        c.recreate()
        val b = c.get()
        assertTrue(a !== b)
        assertSame("the session survives rotation without restarting", session, b.session)
        b.shows("the same state after rotation", "Round 1: you play Rock. Waiting for the others (1 of 3)")
        srv.to("reveal")
        Screens.settle("the reveal") { srv.moment.name == "revealed" }
    }

    @Test
    fun `a half-drawn weapon survives rotation`() {
        val c = open()
        val a = c.get()
        joinAndStart(a)
        drawRock(a)
        val drawn = a.grid.grid
        c.recreate()
        val b = c.get()
        Screens.settle("the ruleset") { b.grid.weapons != null }
        assertEquals(drawn, b.grid.grid)
        assertEquals("Your weapon: Rock", b.weaponName.text.toString())
    }

    @Test
    fun `the move is revealed with the screen closed`() {
        val c = open()
        joinAndStart(c.get())
        commitRock(c.get(), 1)
        c.pause().stop().destroy()
        srv.to("reveal")
        Screens.settle("the reveal with no screen") { srv.moment.name == "revealed" }
    }

    @Test
    fun `after process death the move is revealed from the vault`() {
        val c = open()
        joinAndStart(c.get())
        commitRock(c.get(), 1)
        c.pause().stop().destroy()
        app.forgetSessions() // all a killed process had in memory
        app.resumePendingMoves() // what the next process does at start
        srv.to("reveal")
        Screens.settle("the reveal from the vault") { srv.moment.name == "revealed" }
        Screens.settle("the vault to be cleared") { app.vault.load(srv.lobbyId) == null }
    }

    @Test
    fun `the newest signed head is kept with the checkpoint and survives process death`() {
        val c = open()
        joinAndStart(c.get())
        val last = srv.events.last()
        Screens.settle("the receipt") { app.checkpoints.load(srv.lobbyId)?.head?.seq == last.seq }
        assertEquals(srv.head(), app.checkpoints.load(srv.lobbyId)!!.head)
        c.pause().stop().destroy()
        app.forgetSessions() // all a killed process had in memory

        // What the next process reads from private storage, and the session it starts from it.
        val stored = FileChainCheckpoints(java.io.File(app.filesDir, app.account!!.folder + "/chain")).load(srv.lobbyId)!!
        assertEquals(ChainCheckpoint(last.seq, last.hash, srv.head()), stored)
        val a = open().get()
        assertEquals(srv.head(), a.session.receipt)
    }

    @Test
    fun `a head with a bad signature is a tampering warning`() {
        srv.tamperHead = { h -> h.copy(at = "2020-01-01T00:00:00.000Z") } // its signature no longer covers it
        val a = open().get()
        Screens.settle("the warning") { a.notice.text.isNotEmpty() }
        assertEquals("The server's signature on the lobby's history did not verify. Do not trust this server.", a.notice.text.toString())
        a.shows("the stopped session", "Stopped.")
        assertNull("the forged head is not stored", app.checkpoints.load(srv.lobbyId)?.head)
        Screens.shoot(a, "lobby_bad_signature")
    }
}
