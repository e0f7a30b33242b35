package rps.app

import android.content.Intent
import android.graphics.Bitmap
import android.graphics.Canvas
import android.os.Looper
import android.view.View
import android.view.ViewGroup
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
import org.robolectric.Shadows.shadowOf
import org.robolectric.android.controller.ActivityController
import org.robolectric.annotation.GraphicsMode
import rps.client.ChainCheckpoint
import rps.client.FileChainCheckpoints
import rps.client.GameUiState
import rps.client.RecordedServer
import java.time.Duration

@RunWith(RobolectricTestRunner::class)
@GraphicsMode(GraphicsMode.Mode.NATIVE)
class LobbyScreenTest {
    private val app get() = RuntimeEnvironment.getApplication() as RpsApp
    private val srv: RecordedServer get() = Fakes.server

    @Before
    fun signedIn() {
        Fakes.reset()
        app.signIn(SignIn(Fakes.server.meId, "Ada", TestRpsApp.FAKE_URL, "t"))
    }

    private fun open(
        intent: Intent = Intent(app, LobbyActivity::class.java).putExtra(LobbyActivity.EXTRA_LOBBY, srv.lobbyId),
    ): ActivityController<LobbyActivity> {
        val c = Robolectric.buildActivity(LobbyActivity::class.java, intent).setup()
        val a = c.get()
        Screens.settle("the lobby") { a.grid.weapons != null && a.session.state.value !is GameUiState.Connecting }
        return c
    }

    private fun LobbyActivity.shows(what: String, text: String) =
        Screens.settle("$what (showing '${stateText.text}')") { stateText.text.toString() == text }

    private fun LobbyActivity.progressShows(text: String) =
        Screens.settle("'$text' (showing '${progress.text}')") { progress.isShown && progress.text.toString() == text }

    private fun LobbyActivity.roundsShow(text: String) =
        Screens.settle("the rounds '$text' (showing '${roundList.text}')") { roundList.isShown && roundList.text.toString() == text }

    /** The verification line has caught up with the events served: it comes a moment after the state (files written off the main thread). */
    private fun LobbyActivity.verified() = Screens.settle("the verification line of event ${srv.events.last().seq}") {
        verification.text.startsWith("Events 1–${srv.events.last().seq} verified, signed by key ")
    }

    /** Rock is a 2x2 square: drawn in the top left corner. */
    private fun drawRock(a: LobbyActivity) {
        for ((r, c) in listOf(0 to 0, 0 to 1, 1 to 0, 1 to 1)) Screens.tap(a.grid, r, c)
    }

    private fun joinAndStart(a: LobbyActivity) {
        a.join.performClick()
        a.shows("registration", "Waiting for players: 1 of 3")
        srv.to("started")
        a.shows("the first round", "Round 1: draw your weapon")
    }

    private fun commitRock(a: LobbyActivity, round: Int) {
        drawRock(a)
        a.commit.performClick()
        a.shows("the commitment", "Round $round: you play Rock. Waiting for the others")
        val remaining = srv.lobby().game!!.remaining
        a.progressShows("Still in: $remaining · Chosen: 1 of $remaining")
    }

    /** The next screen [a] opened, as an intent, and whether [a] closed itself. */
    private fun opened(a: LobbyActivity): Intent {
        val next = shadowOf(a).nextStartedActivity
        assertNotNull("a screen was opened", next)
        assertTrue("the ended game's screen closes", a.isFinishing)
        return next
    }

    @Test
    fun `join, wait for players with the pot, a labelled countdown and a way out`() {
        val c = open()
        var a = c.get()
        a.shows("the open game", "A game is open. Join it?")
        assertEquals(View.VISIBLE, a.join.visibility)
        assertEquals(View.GONE, a.grid.visibility)
        assertEquals(View.GONE, a.leave.visibility)
        assertTrue("the weapons are shown before joining", a.legend.isShown)
        Screens.shoot(a, "lobby_not_joined")

        a.join.performClick()
        a.shows("registration", "Waiting for players: 1 of 3")
        Screens.settle("the pot") { a.pot.text.toString() == "Pot: 100" }
        assertEquals("Registration closes in 30 s", a.countdown.text.toString())
        assertEquals(View.GONE, a.join.visibility)
        assertTrue("Leave is offered during registration", a.leave.isShown)
        c.get().verified()
        a = Screens.matchesGoldens(c, "lobby_waiting_for_players")

        TestRpsApp.now += 12_400
        shadowOf(Looper.getMainLooper()).idleFor(Duration.ofMillis(300)) // the countdown ticks every 250 ms
        Screens.settle("the countdown to move on") { a.countdown.text.toString() == "Registration closes in 18 s" }
    }

    @Test
    fun `a whole game on the screen - draw, commit, automatic reveal, rounds, win, next game`() {
        val c = open()
        var a = c.get()
        joinAndStart(a)
        a.progressShows("Still in: 3 · Chosen: 0 of 3")
        assertTrue(a.countdown.text.toString(), a.countdown.text.matches(Regex("Time to choose: \\d+ s")))
        assertEquals("Tap tiles to draw your weapon.", a.weaponName.text.toString())
        assertTrue("nothing to play yet", !a.commit.isEnabled)
        assertEquals(View.GONE, a.leave.visibility)

        drawRock(a)
        assertEquals("Your weapon: Rock", a.weaponName.text.toString())
        assertTrue(a.commit.isEnabled)
        val analysis = a.grid.analysis!!
        val greyed = (0 until 5).sumOf { r -> (0 until 5).count { c -> !analysis.isValidTile(r, c) } }
        assertTrue("tiles no weapon can use are greyed out", greyed > 0)
        assertEquals("the grid is square", a.grid.width, a.grid.height)
        a.verified()
        a = Screens.matchesGoldens(c, "lobby_your_move")
        assertEquals("the drawing survives the change of theme", "Your weapon: Rock", a.weaponName.text.toString())

        a.commit.performClick()
        a.shows("the commitment", "Round 1: you play Rock. Waiting for the others")
        a.progressShows("Still in: 3 · Chosen: 1 of 3")
        assertTrue(a.countdown.text.toString(), a.countdown.text.matches(Regex("Moves close in \\d+ s")))
        assertNotNull("the move is in the vault before the reveal", app.vault.load(srv.lobbyId))
        assertTrue("the legend no longer picks", !a.legend.entries.getValue(1).isClickable)
        Screens.shoot(a, "lobby_committed")

        srv.to("reveal")
        a.shows("the automatic reveal", "Round 1: Rock revealed, waiting for the others")
        a.progressShows("Still in: 3 · Revealed: 1 of 3")
        assertEquals("revealed", srv.moment.name)
        assertNull("the vault is cleared once the reveal is accepted", app.vault.load(srv.lobbyId))
        Screens.shoot(a, "lobby_revealed")

        srv.to("round2")
        a.shows("the second round", "Round 2: draw your weapon")
        a.progressShows("Still in: 2 · Chosen: 0 of 2")
        // The round's summary comes with its event, which may arrive just after the read of round 2.
        val round1 = "Round 1: Rock x2, Scissors x1. Surviving weapons: Rock. 2 players left. You go on."
        a.roundsShow(round1)
        assertTrue(a.roundsTitle.isShown)
        assertEquals("a new round starts from an empty grid", 0, a.grid.grid)
        Screens.shoot(a, "lobby_round_result")

        commitRock(a, 2)
        srv.to("reveal2")
        Screens.settle("the second reveal") { srv.moment.name == "revealed2" }
        srv.to("won")
        a.shows("the win", "You won! 300 is yours.")
        // 1000, less the bet of 100, plus the pot of 300: read again from the server once the game is over.
        Screens.settle("the balance after the win") { a.balance.text.toString() == "Balance: 1200" }
        a.roundsShow(
            "$round1\n\nRound 2: Rock x1, Scissors x1. Surviving weapons: Rock. 1 player left. You are the last one standing.",
        )
        for (gone in listOf(a.pot, a.countdown, a.progress, a.grid, a.legend, a.commit, a.join, a.leave)) {
            assertEquals("nothing of the game in play is left on the result screen", View.GONE, gone.visibility)
        }
        a.verified()
        a = Screens.matchesGoldens(c, "lobby_won")

        a.nextGame.performClick()
        val next = open(opened(a)).get()
        next.shows("the lobby's next game", "A game is open. Join it?")
        assertTrue("a new session for the next game", next.session !== a.session)
        assertEquals(View.GONE, next.roundList.visibility)
    }

    @Test
    fun `the legend shows every weapon of the ruleset and picks one for the grid`() {
        val c = open()
        var a = c.get()
        joinAndStart(a)
        assertEquals("Weapons of Rock Paper Scissors Lizard Spock", a.legend.title.text.toString())
        assertTrue("the legend says it can be tapped", a.legend.hint.isShown)
        assertEquals(listOf(0, 1, 2, 3, 4), a.legend.entries.keys.toList())
        assertEquals(
            "Lizard. Beats Paper, Spock. Any way round: as shown or turned.",
            a.legend.entries.getValue(3).contentDescription.toString(),
        )
        assertEquals(
            "Rock. Beats Scissors, Lizard. Only as shown, never turned.",
            a.legend.entries.getValue(0).contentDescription.toString(),
        )

        a.legend.entries.getValue(4).performClick() // Spock
        assertEquals("Your weapon: Spock", a.weaponName.text.toString())
        assertTrue(a.commit.isEnabled)
        // Erasing a tile of the picked weapon leaves a drawing that is no weapon yet.
        Screens.tap(a.grid, 3, 1)
        assertTrue(a.weaponName.text.startsWith("Could become") || a.weaponName.text.toString() == "No weapon looks like that.")
        a.legend.entries.getValue(1).performClick() // Paper
        assertEquals("Your weapon: Paper", a.weaponName.text.toString())
        c.get().verified()
        a = Screens.matchesGoldens(c, "lobby_legend", prepare = { it.scroll.scrollTo(0, it.legend.top) })
        assertEquals("the pick survives the change of theme", "Your weapon: Paper", a.weaponName.text.toString())
    }

    @Test
    fun `the legend's empty cells stand out from the card, and its drawn cells from them, in both themes`() {
        val c = open()
        try {
            for (night in listOf(false, true)) {
                RuntimeEnvironment.setQualifiers(if (night) "+night" else "+notnight")
                c.recreate()
                val a = c.get()
                Screens.settle("the legend") { a.legend.entries.size == 5 }
                Screens.shoot(a, "lobby_legend_cells" + if (night) "_dark" else "")
                // Scissors: an X in a 3x3 box, so both drawn and empty cells.
                val shapes = (a.legend.entries.getValue(2) as ViewGroup).getChildAt(0)
                val surface = a.resources.getColor(R.color.surface, a.theme)
                val bmp = Bitmap.createBitmap(shapes.width, shapes.height, Bitmap.Config.ARGB_8888)
                Canvas(bmp).apply { drawColor(surface) }.also(shapes::draw)
                val colors = (0 until bmp.height).flatMap { y -> (0 until bmp.width).map { x -> bmp.getPixel(x, y) } }.toSet() - surface
                val drawn = a.resources.getColor(R.color.tile_drawn, a.theme)
                assertTrue("drawn cells are drawn", drawn in colors)
                val empty = colors - drawn
                assertEquals("one colour for the empty cells: $empty", 1, empty.size)
                val theme = if (night) "dark" else "light"
                val cellOnCard = Accessibility.contrast(empty.single(), surface)
                assertTrue("$theme: empty cells %.2f:1 against the card".format(cellOnCard), cellOnCard >= 1.5)
                val drawnOnEmpty = Accessibility.contrast(drawn, empty.single())
                assertTrue("$theme: drawn cells %.2f:1 against the empty ones".format(drawnOnEmpty), drawnOnEmpty >= 3)
            }
        } finally {
            RuntimeEnvironment.setQualifiers("+notnight")
        }
    }

    @Test
    fun `elimination is a result screen with the round the player went out in`() {
        Fakes.reset("eliminated")
        val c = open()
        var a = c.get()
        srv.to("bo-joined")
        a.join.performClick()
        a.shows("registration", "Waiting for players: 2 of 3")
        srv.to("started")
        a.shows("the first round", "Round 1: draw your weapon")
        commitRock(a, 1)
        srv.to("reveal")
        Screens.settle("the reveal") { srv.moment.name == "revealed" }
        srv.to("out")
        a.shows("the elimination", "You were eliminated in round 1.")
        Screens.settle("the round that put the player out") { a.roundList.text.endsWith("You are out.") }
        assertTrue(a.nextGame.isShown && a.back.isShown)
        c.get().verified()
        a = Screens.matchesGoldens(c, "lobby_eliminated")

        a.back.performClick()
        val back = opened(a)
        assertEquals(LobbyListActivity::class.java.name, back.component?.className)
        assertTrue("back to the lobby list already open", back.flags and Intent.FLAG_ACTIVITY_CLEAR_TOP != 0)
    }

    @Test
    fun `a stopped game shows the share, then the next game can be joined and left`() {
        Fakes.reset("stopped")
        val c = open()
        var a = c.get()
        joinAndStart(a)
        srv.to("stopped")
        a.shows("the stop", "The game was stopped: maintenance. Your share: 100")
        assertEquals(View.GONE, a.pot.visibility)
        c.get().verified()
        a = Screens.matchesGoldens(c, "lobby_stopped")

        a.nextGame.performClick()
        val nc = open(opened(a))
        val next = nc.get()
        next.shows("the next game", "A game is open. Join it?")
        next.join.performClick()
        next.shows("registration", "Waiting for players: 1 of 3")
        next.leave.performClick()
        next.shows("the refund", "You left the game; your bet of 100 is back.")
        assertEquals("left", srv.moment.name)
        assertTrue(next.nextGame.isShown && next.back.isShown)
        assertEquals(View.GONE, next.roundList.visibility)
        nc.get().verified()
        Screens.matchesGoldens(nc, "lobby_left")
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
        a.shows("the late player out", "You were eliminated in round 1.")
        Screens.shoot(a, "lobby_wrong_stage")
    }

    @Test
    fun `an unreachable server is a message`() {
        app.signIn(SignIn(Fakes.server.meId, "Ada", "http://127.0.0.1:1", "t"))
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
        b.shows("the same state after rotation", "Round 1: you play Rock. Waiting for the others")
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
    fun `after process death the rounds before the kept checkpoint are listed again, from the game's transcript`() {
        val c = open()
        joinAndStart(c.get())
        commitRock(c.get(), 1)
        srv.to("reveal")
        Screens.settle("the reveal") { srv.moment.name == "revealed" }
        srv.to("round2")
        val round1 = "Round 1: Rock x2, Scissors x1. Surviving weapons: Rock. 2 players left. You go on."
        c.get().roundsShow(round1)
        val last = srv.events.last().seq
        Screens.settle("the checkpoint past round 1") { app.checkpoints.load(srv.lobbyId)?.seq == last }
        c.pause().stop().destroy()
        app.forgetSessions() // all a killed process had in memory: the next session verifies from the checkpoint

        val a = open().get()
        a.shows("the second round", "Round 2: draw your weapon")
        a.roundsShow(round1)
        a.scroll.scrollTo(0, a.roundsTitle.top)
        Screens.shoot(a, "lobby_rounds_restored")
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
        assertTrue("a session stopped for good can only be left", a.back.isShown && !a.nextGame.isShown)
        assertNull("the forged head is not stored", app.checkpoints.load(srv.lobbyId)?.head)
        Screens.shoot(a, "lobby_bad_signature")
    }
}
