package rps.app

import android.app.AlertDialog
import android.content.Intent
import android.graphics.Bitmap
import android.graphics.Color
import android.provider.MediaStore
import android.view.View
import com.google.zxing.BarcodeFormat
import com.google.zxing.qrcode.QRCodeWriter
import org.junit.Assert.assertEquals
import org.junit.Assert.assertNull
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
import rps.client.SignInCode

@RunWith(RobolectricTestRunner::class)
@GraphicsMode(GraphicsMode.Mode.NATIVE)
class AccountScreenTest {
    private val app get() = RuntimeEnvironment.getApplication() as RpsApp

    @Before
    fun reset() = Fakes.reset()

    private fun controller() = Robolectric.buildActivity(AccountActivity::class.java).setup()

    private fun open(): AccountActivity = controller().get()

    /** Types the fake server's address and continues: the server is checked, then the account choices show. */
    private fun toAccountStep(a: AccountActivity) {
        a.server.setText(TestRpsApp.FAKE_URL)
        a.checkServer.performClick()
        Screens.settle("the server check") { a.create.isShown }
    }

    private fun AccountActivity.signedInAs(name: String) = Screens.settle("signed in as $name (showing '${account.text}')") {
        account.isShown && account.text.toString() == name && info.text.startsWith("Balance")
    }

    @Test
    fun `first start asks for the server, with no address proposed`() {
        val c = controller()
        val a = c.get()
        assertEquals("", a.server.text.toString())
        assertEquals("http://192.168.1.20:8080", a.server.hint.toString())
        assertTrue(a.checkServer.isShown)
        assertTrue(!a.create.isShown && !a.lobbies.isShown)
        Screens.matchesGoldens(c, "account_first_start")
    }

    @Test
    fun `an unreachable server or a bad address is a clear message, and nothing is signed in`() {
        val a = open()
        a.server.setText("not a server")
        a.checkServer.performClick()
        assertEquals("That is not a server address (example: http://192.168.1.20:8080).", a.status.text.toString())
        a.server.setText("http://127.0.0.1:1")
        a.checkServer.performClick()
        Screens.settle("the failure") { a.status.text.startsWith("Could not reach") }
        Accessibility.check(a, "account_unreachable")
        assertEquals("Could not reach http://127.0.0.1:1. Check the address and that the server is running.", a.status.text.toString())
        assertTrue(!a.create.isShown)
        assertNull(app.account)
        Screens.shoot(a, "account_unreachable")

        Fakes.directory.ready = false
        toAccountStepFails(a)
    }

    private fun toAccountStepFails(a: AccountActivity) {
        a.server.setText(TestRpsApp.FAKE_URL)
        a.checkServer.performClick()
        Screens.settle("the not-ready message") { a.status.text.contains("not ready") }
        assertTrue(!a.create.isShown)
    }

    @Test
    fun `create an account on a checked server, and the address is proposed next time`() {
        val c = controller()
        var a = c.get()
        toAccountStep(a)
        assertEquals("Server http://fake.test is ready.", a.serverState.text.toString())
        a = Screens.matchesGoldens(c, "account_server_ready")
        assertTrue("the checked server survives a change of theme", a.create.isShown)
        a.name.setText("Ada")
        a.create.performClick()
        a.signedInAs("Ada")
        assertEquals("secret-token-of-Ada", app.accounts.token(app.account!!))
        assertEquals(TestRpsApp.FAKE_URL, app.account!!.server)
        // Born with this phone's key: the sign-up's signature verifies in the account's key log.
        val key = app.keyOf(app.account!!)!!
        assertEquals(listOf(key.keyId), Fakes.keys.of(app.account!!.id).history().active.map { it.keyId })
        assertEquals("Balance: 1000\nOn http://fake.test", a.info.text.toString())
        assertTrue(a.lobbies.isShown && a.myGames.isShown && a.signOut.isShown)
        a = Screens.matchesGoldens(c, "account_signed_in")
        assertEquals(TestRpsApp.FAKE_URL, app.accounts.lastServer)
    }

    @Test
    fun `sign in with a pasted sign-in code, which names its server`() {
        val a = open()
        toAccountStep(a)
        a.token.setText(SignInCode("http://fake.test/other", "issued-by-the-admin-0123456789").encode())
        a.signIn.performClick()
        a.signedInAs("Ada")
        assertEquals("issued-by-the-admin-0123456789", app.accounts.token(app.account!!))
        assertEquals("http://fake.test/other", app.account!!.server)
    }

    @Test
    fun `sign in by taking a picture of the console's QR code`() {
        val a = open()
        toAccountStep(a)
        a.scan.performClick()
        val asked = shadowOf(a).nextStartedActivityForResult
        assertEquals(MediaStore.ACTION_IMAGE_CAPTURE, asked.intent.action)
        val picture = qr(SignInCode(TestRpsApp.FAKE_URL, "scanned-token-0123456789abcdef").encode())
        shadowOf(a).receiveResult(asked.intent, android.app.Activity.RESULT_OK, Intent().putExtra("data", picture))
        a.signedInAs("Ada")
        assertEquals("scanned-token-0123456789abcdef", app.accounts.token(app.account!!))
    }

    @Test
    fun `a picture without a code and a wrong token are messages`() {
        val a = open()
        toAccountStep(a)
        a.scan.performClick()
        val asked = shadowOf(a).nextStartedActivityForResult
        val blank = Bitmap.createBitmap(200, 200, Bitmap.Config.ARGB_8888).apply { eraseColor(Color.WHITE) }
        shadowOf(a).receiveResult(asked.intent, android.app.Activity.RESULT_OK, Intent().putExtra("data", blank))
        Screens.settle("the message") { a.status.text.startsWith("No QR code") }
        a.token.setText("no")
        a.signIn.performClick()
        assertEquals("That is not a token or a sign-in code.", a.status.text.toString())
        assertNull(app.account)
    }

    /** A QR code of [text], as a camera would hand it over (black on white, with a margin). */
    private fun qr(text: String): Bitmap {
        val m = QRCodeWriter().encode(text, BarcodeFormat.QR_CODE, 240, 240)
        return Bitmap.createBitmap(m.width, m.height, Bitmap.Config.ARGB_8888).apply {
            for (y in 0 until m.height) for (x in 0 until m.width) setPixel(x, y, if (m.get(x, y)) Color.BLACK else Color.WHITE)
        }
    }

    @Test
    fun `a new token replaces the old one on this phone`() {
        app.signIn(SignIn(Fakes.server.meId, "Ada", TestRpsApp.FAKE_URL, "t"))
        val a = open()
        a.signedInAs("Ada")
        a.rotate.performClick()
        Screens.settle("the new token") { a.status.text.startsWith("This phone now uses a new token") }
        assertEquals("rotated-token-1", app.accounts.token(app.account!!))
    }

    @Test
    fun `switching account needs a confirmation, and each account's moves go with its own token`() {
        app.signIn(SignIn("b0b0b0b0-0000-4000-8000-000000000000", "Bo", TestRpsApp.FAKE_URL, "bo-token"))
        Fakes.others["bo-token"] = AccountInfo("b0b0b0b0-0000-4000-8000-000000000000", "Bo", "player", 500)
        val ada = app.signIn(SignIn(Fakes.server.meId, "Ada", TestRpsApp.FAKE_URL, "t"))

        // Ada commits in a lobby.
        val session = app.session(Fakes.server.lobbyId)
        Screens.settle("the lobby") { session.state.value is rps.client.GameUiState.NotJoined }
        kotlinx.coroutines.runBlocking { session.join() }
        Fakes.server.to("started")
        Screens.settle("the round") { session.state.value is rps.client.GameUiState.YourMove }
        kotlinx.coroutines.runBlocking { session.commit(0) }
        assertEquals(listOf(Fakes.server.lobbyId), app.pendingMoves(ada))

        val a = open()
        a.signedInAs("Ada")
        a.switch.performClick()
        shadowOf(a.dialog).clickOnItem(0) // Bo
        Screens.settle()
        val confirm = a.dialog!!
        assertEquals(
            "Play as Bo on http://fake.test? Ada's move waiting in 1 game is still revealed, with Ada's token.",
            shadowOf(confirm).message.toString(),
        )
        Screens.shoot(a, "account_switch_confirm")
        confirm.getButton(AlertDialog.BUTTON_NEGATIVE).performClick()
        Screens.settle()
        assertEquals("Ada", app.account!!.name)

        a.switch.performClick()
        shadowOf(a.dialog).clickOnItem(0)
        Screens.settle()
        a.dialog!!.getButton(AlertDialog.BUTTON_POSITIVE).performClick()
        Screens.settle()
        a.signedInAs("Bo")
        assertEquals("Bo's vault is his own", emptyList<String>(), app.pendingMoves(app.account!!))

        // The process dies; at the next start Ada's move is revealed with Ada's token, though Bo is in use.
        app.forgetSessions()
        app.resumePendingMoves()
        Fakes.server.to("reveal")
        Screens.settle("the reveal") { Fakes.server.moment.name == "revealed" }
        assertEquals(listOf<String?>("t", "t"), Fakes.movesSentWith)
    }

    @Test
    fun `signing out is confirmed, warns of a waiting move, and forgets the token and its files`() {
        val ada = app.signIn(SignIn(Fakes.server.meId, "Ada", TestRpsApp.FAKE_URL, "t"))
        val a = open()
        a.signedInAs("Ada")
        a.signOut.performClick()
        val confirm = a.dialog!!
        assertEquals(
            "This phone forgets Ada's token. To play as Ada again you need a token from the operator.",
            shadowOf(confirm).message.toString(),
        )
        confirm.getButton(AlertDialog.BUTTON_POSITIVE).performClick()
        Screens.settle()
        assertNull(app.account)
        assertTrue(app.accounts.all().isEmpty())
        assertTrue(!java.io.File(app.filesDir, ada.folder).exists())
        assertEquals(View.VISIBLE, a.checkServer.visibility)
        assertEquals("Signed out of Ada.", a.status.text.toString())
    }
}
