package rps.app

import android.Manifest
import android.app.Notification
import android.content.Context
import android.content.Intent
import android.os.Looper
import android.provider.Settings
import kotlinx.coroutines.launch
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
import org.robolectric.annotation.GraphicsMode
import rps.client.AccountInfo
import rps.client.GameSession
import rps.client.GameUiState
import rps.client.RecordedServer
import java.time.Duration

/**
 * The game service against the recorded rpsd answers, with no screen open unless a test opens
 * one: it runs in the foreground while the player is in a game, the session it keeps reveals by
 * itself, the player is told when a round needs their weapon and 10 s before its deadline, the
 * notification opens the game, and the service stops once the player is out.
 */
@RunWith(RobolectricTestRunner::class)
@GraphicsMode(GraphicsMode.Mode.NATIVE)
class GameServiceTest {
    private val app get() = RuntimeEnvironment.getApplication() as RpsApp
    private val srv: RecordedServer get() = Fakes.server

    @Before
    fun signedIn() {
        Fakes.reset()
        app.signIn(SignIn(Fakes.server.meId, "Ada", TestRpsApp.FAKE_URL, "t"))
    }

    private fun GameSession.shows(what: String, pred: (GameUiState) -> Boolean) =
        Screens.settle("$what (the session shows ${state.value})") { pred(state.value) }

    /** Joins the recorded lobby with no screen open, as a session resumed in the background would play. */
    private fun joined(): GameSession {
        val s = app.session(srv.lobbyId)
        s.shows("the open game") { it is GameUiState.NotJoined }
        assertNull("no service before the player is in a game", shadowOf(app).peekNextStartedService())
        app.scope.launch { s.join() }
        s.shows("registration") { it is GameUiState.WaitingForPlayers }
        return s
    }

    private fun startedService() = GameNotifications.startedService(app)
    private fun ongoingText() = GameNotifications.ongoingText(app)
    private fun alertText(): String? = GameNotifications.alert(app)?.let { with(GameNotifications) { it.text } }

    private fun commitRock(s: GameSession) {
        val rock = Rulesets.byId.getValue(srv.lobby().config.ruleset).weapons.single { it.name == "Rock" }.move
        app.scope.launch { s.commit(rock) }
        s.shows("the commitment") { it is GameUiState.WaitingForOthers }
    }

    @Test
    fun `runs while the player is in the game, tells them of each round and its deadline, reveals alone, stops when the game is over`() {
        val s = joined()
        val service = startedService()
        val shadow = shadowOf(service.get())
        assertEquals(GameService.ONGOING_ID, shadow.lastForegroundNotificationId)
        assertTrue("the notification is ongoing", shadow.lastForegroundNotification.flags and Notification.FLAG_ONGOING_EVENT != 0)
        Screens.settle("the ongoing notification") { ongoingText() == "Waiting for players: 1 of 3" }
        assertNull("nothing to do yet", alertText())

        srv.to("started")
        Screens.settle("the alert of round 1") { alertText() != null }
        assertEquals("Round 1 has started: draw your weapon within 30 s.", alertText())
        Screens.settle("the ongoing notification of round 1") { ongoingText() == "Round 1: your move" }
        // Tapping it opens the game's screen (above the lobby list).
        val tap = shadowOf(GameNotifications.alert(app)!!.contentIntent)
        assertTrue(tap.isActivityIntent)
        val opened = tap.savedIntents.last()
        assertEquals(LobbyActivity::class.java.name, opened.component?.className)
        assertEquals(srv.lobbyId, opened.getStringExtra(LobbyActivity.EXTRA_LOBBY))

        // 10 s before the deadline, on the app's clock.
        val deadline = (s.state.value as GameUiState.YourMove).deadline!!
        val warnAt = deadline.localMs - 10_000
        TestRpsApp.now = warnAt - 1
        shadowOf(Looper.getMainLooper()).idleFor(Duration.ofMillis(warnAt - 1 - TestRpsApp.NOW))
        assertEquals("not before", "Round 1 has started: draw your weapon within 30 s.", alertText())
        TestRpsApp.now = warnAt
        shadowOf(Looper.getMainLooper()).idleFor(Duration.ofMillis(1))
        Screens.settle("the deadline's alert") { alertText() == "Round 1: 10 s left to draw your weapon!" }

        commitRock(s)
        Screens.settle("the alert gone once the weapon is chosen") { alertText() == null }

        // The reveal is sent by the session the service keeps, with no screen open.
        srv.to("reveal")
        Screens.settle("the reveal") { srv.moment.name == "revealed" }
        srv.to("round2")
        Screens.settle("the alert of round 2") { alertText() == "Round 2 has started: draw your weapon within 30 s." }
        commitRock(s)
        srv.to("reveal2")
        Screens.settle("the second reveal") { srv.moment.name == "revealed2" }
        assertTrue("still running", !shadow.isStoppedBySelf)

        srv.to("won")
        s.shows("the win") { it is GameUiState.Won }
        Screens.settle("the service stopped") { shadow.isStoppedBySelf }
        assertNull(alertText())
        service.destroy()
    }

    @Test
    fun `restarted by the system after the process was killed, waits for the resumed sessions and reveals`() {
        val s = joined()
        startedService().destroy()
        srv.to("started")
        s.shows("the first round") { it is GameUiState.YourMove }
        commitRock(s)

        // The process is killed; the system restarts it for the sticky service: the application
        // resumes the move waiting in the vault before the service is created.
        app.forgetSessions()
        shadowOf(app).clearStartedServices()
        app.resumePendingMoves()
        val resumed = app.session(srv.lobbyId)
        assertTrue("still connecting", resumed.state.value is GameUiState.Connecting)
        val shadow = shadowOf(Robolectric.buildService(GameService::class.java).create().get())
        resumed.shows("the resumed game") { it is GameUiState.WaitingForOthers }
        Screens.settle("the ongoing notification") { ongoingText() == "Round 1: waiting for the others" }
        assertTrue("the service did not stop while the session connected", !shadow.isStoppedBySelf)

        srv.to("reveal")
        Screens.settle("the reveal") { srv.moment.name == "revealed" }
        assertTrue(!shadow.isStoppedBySelf)
    }

    @Test
    fun `stops when the player is out`() {
        Fakes.reset("eliminated")
        srv.to("bo-joined")
        val s = joined()
        val shadow = shadowOf(startedService().get())
        srv.to("started")
        s.shows("the first round") { it is GameUiState.YourMove }
        commitRock(s)
        srv.to("reveal")
        Screens.settle("the reveal") { srv.moment.name == "revealed" }
        assertTrue(!shadow.isStoppedBySelf)
        srv.to("out")
        s.shows("the elimination") { it is GameUiState.Lost }
        Screens.settle("the service stopped") { shadow.isStoppedBySelf }
    }

    @Test
    fun `no alert while the game is on screen, which asks for the permission to notify`() {
        val c = Robolectric.buildActivity(
            LobbyActivity::class.java,
            Intent(app, LobbyActivity::class.java).putExtra(LobbyActivity.EXTRA_LOBBY, srv.lobbyId),
        ).setup()
        val a = c.get()
        Screens.settle("the lobby") { a.session.state.value is GameUiState.NotJoined }
        a.join.performClick()
        Screens.settle("registration") { a.session.state.value is GameUiState.WaitingForPlayers }
        val asked = shadowOf(a).lastRequestedPermission
        assertNotNull("Android 13+: the permission to notify is asked when the game starts", asked)
        assertEquals(listOf(Manifest.permission.POST_NOTIFICATIONS), asked.requestedPermissions.toList())
        startedService()

        srv.to("started")
        Screens.settle("the first round") { a.session.state.value is GameUiState.YourMove }
        Screens.settle("the ongoing notification") { ongoingText() == "Round 1: your move" }
        assertNull("the player is looking at the game", alertText())

        // Once the screen is gone, the deadline's alert comes.
        c.pause().stop().destroy()
        val deadline = (a.session.state.value as GameUiState.YourMove).deadline!!
        TestRpsApp.now = deadline.localMs - 10_000
        shadowOf(Looper.getMainLooper()).idleFor(Duration.ofMillis(TestRpsApp.now - TestRpsApp.NOW))
        Screens.settle("the deadline's alert") { alertText() == "Round 1: 10 s left to draw your weapon!" }
    }

    @Test
    fun `the ongoing notification names the lobby over the stage`() {
        joined()
        startedService()
        val lobby = srv.lobby().name
        Screens.settle("the lobby named (showing '${GameNotifications.ongoingTitle(app)}')") {
            GameNotifications.ongoingTitle(app) == lobby && ongoingText() == "Waiting for players: 1 of 3"
        }
        srv.to("started")
        Screens.settle("round 1 in the lobby") { GameNotifications.ongoingTitle(app) == lobby && ongoingText() == "Round 1: your move" }
        assertEquals("Your move in $lobby", GameNotifications.alert(app)!!.extras.getCharSequence(Notification.EXTRA_TITLE).toString())
    }

    @Test
    fun `an alert for another signed-in account's game opens that game as that account`() {
        val adas = joined()
        startedService()
        // Bo signs in on the same phone and is the account in use when Ada's round starts.
        Fakes.others["bo-token"] = AccountInfo("0b0b0b0b-0000-4000-8000-000000000b0b", "Bo", "player", 1000)
        app.signIn(SignIn("0b0b0b0b-0000-4000-8000-000000000b0b", "Bo", TestRpsApp.FAKE_URL, "bo-token"))
        assertEquals("Bo", app.account!!.name)
        srv.to("started")
        Screens.settle("Ada's alert") { alertText() != null }
        val alert = GameNotifications.alert(app)!!
        assertEquals("the alert says whose game it is", "Ada", alert.extras.getCharSequence(Notification.EXTRA_SUB_TEXT).toString())

        val opened = shadowOf(alert.contentIntent).savedIntents.last()
        val c = Robolectric.buildActivity(LobbyActivity::class.java, opened).setup()
        val a = c.get()
        assertEquals("the game is opened as Ada", srv.meId, app.account!!.id)
        assertSame("Ada's own session, which the service kept", adas, a.session)
        Screens.settle("Ada's round on screen") { a.stateText.text.toString() == "Round 1: draw your weapon" && a.grid.weapons != null }
        assertEquals("Now playing as Ada, whose game this is.", a.accountNote.text.toString())
        assertTrue(a.accountNote.isShown)
        Screens.shoot(a, "lobby_switched_account")
    }

    @Test
    fun `the permission to notify is asked once, not again after a refusal when the app starts again, and offered on the account screen`() {
        val c = Robolectric.buildActivity(
            LobbyActivity::class.java,
            Intent(app, LobbyActivity::class.java).putExtra(LobbyActivity.EXTRA_LOBBY, srv.lobbyId),
        ).setup()
        val a = c.get()
        Screens.settle("the lobby") { a.session.state.value is GameUiState.NotJoined }
        a.join.performClick()
        Screens.settle("registration") { a.session.state.value is GameUiState.WaitingForPlayers }
        assertNotNull("asked when the game starts", shadowOf(a).lastRequestedPermission)
        // The player refuses (Robolectric grants nothing unless told) and the process is killed.
        c.pause().stop().destroy()
        app.forgetSessions()

        // The next process: what it has is the app's preferences; a new RunningGames (with its own
        // NotifyPermission) follows the resumed game, and the game's screen is opened again.
        val prefs = app.getSharedPreferences("rps", Context.MODE_PRIVATE)
        val restarted = RunningGames(app, NotifyPermission(prefs)).also(app::registerActivityLifecycleCallbacks)
        val s = app.session(srv.lobbyId)
        restarted.follow("${srv.meId}/${srv.lobbyId}", srv.meId, srv.lobbyId, s)
        Screens.settle("the resumed game") { s.state.value is GameUiState.WaitingForPlayers }
        val again = Robolectric.buildActivity(
            LobbyActivity::class.java,
            Intent(app, LobbyActivity::class.java).putExtra(LobbyActivity.EXTRA_LOBBY, srv.lobbyId),
        ).setup().get()
        Screens.settle("the game on screen") { again.stateText.text.startsWith("Waiting for players") }
        assertNull("not asked again after the refusal", shadowOf(again).lastRequestedPermission)
        app.unregisterActivityLifecycleCallbacks(restarted)

        // The account screen says notifications are off and leads to the app's notification settings.
        val account = Robolectric.buildActivity(AccountActivity::class.java).setup().get()
        assertTrue(account.notifyOff.isShown && account.allowNotify.isShown)
        Screens.shoot(account, "account_notifications_off")
        account.allowNotify.performClick()
        val settings = shadowOf(account).nextStartedActivity
        assertEquals(Settings.ACTION_APP_NOTIFICATION_SETTINGS, settings.action)
        assertEquals(app.packageName, settings.getStringExtra(Settings.EXTRA_APP_PACKAGE))

        // Once granted, the offer is gone.
        shadowOf(app).grantPermissions(Manifest.permission.POST_NOTIFICATIONS)
        val later = Robolectric.buildActivity(AccountActivity::class.java).setup().get()
        assertTrue(!later.notifyOff.isShown && !later.allowNotify.isShown)
    }
}
