package rps.app

import android.content.Context
import org.junit.Assert.assertEquals
import org.junit.Assert.assertFalse
import org.junit.Assert.assertNull
import org.junit.Before
import org.junit.Test
import org.junit.runner.RunWith
import org.robolectric.Robolectric
import org.robolectric.RobolectricTestRunner
import org.robolectric.RuntimeEnvironment
import org.robolectric.annotation.GraphicsMode

@RunWith(RobolectricTestRunner::class)
@GraphicsMode(GraphicsMode.Mode.NATIVE)
class AccountScreenTest {
    private val app get() = RuntimeEnvironment.getApplication() as RpsApp

    @Before
    fun fakes() = Fakes.reset()

    @Test
    fun `first start offers the server address and sign-up, and no lobbies yet`() {
        val a = Robolectric.buildActivity(AccountActivity::class.java).setup().get()
        Screens.settle()
        assertEquals(RpsApp.DEFAULT_SERVER, a.server.text.toString())
        assertFalse("no account, no lobbies", a.lobbies.isEnabled)
        Screens.matchesGolden(a, "account_first_start")
    }

    @Test
    fun `signing up shows the account and keeps the token sealed`() {
        val a = Robolectric.buildActivity(AccountActivity::class.java).setup().get()
        a.server.setText(TestRpsApp.FAKE_URL)
        a.name.setText("Ada")
        a.create.performClick()
        Screens.settle("the account") { a.lobbies.isEnabled }
        assertEquals("Ada - balance 0", a.account.text.toString())
        assertEquals("secret-token-of-Ada", app.token)
        val stored = app.getSharedPreferences("rps", Context.MODE_PRIVATE).all.values.joinToString()
        assertFalse("the token is not stored in clear: $stored", stored.contains("secret-token"))
        assertEquals(TestRpsApp.FAKE_URL, app.serverUrl)
        Screens.shoot(a, "account_created")
    }

    @Test
    fun `an unreachable server or a malformed address is a message, not a crash`() {
        val a = Robolectric.buildActivity(AccountActivity::class.java).setup().get()
        a.server.setText("http://127.0.0.1:1")
        a.create.performClick()
        Screens.settle("the network failure") { a.status.text.isNotEmpty() }
        assertEquals("Could not reach the server. Check its address and your connection.", a.status.text.toString())
        Screens.shoot(a, "account_unreachable")

        a.server.setText("not a server")
        a.create.performClick()
        Screens.settle("the address check") { a.status.text.startsWith("That is not a server address") }
        assertEquals("http://127.0.0.1:1", app.serverUrl)
        assertNull(app.token)
    }
}
