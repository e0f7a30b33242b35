package rps.app

import android.view.ViewGroup
import android.widget.TextView
import kotlinx.serialization.json.JsonObject
import org.junit.After
import org.junit.Assert.assertEquals
import org.junit.Before
import org.junit.Test
import org.junit.runner.RunWith
import org.robolectric.Robolectric
import org.robolectric.RobolectricTestRunner
import org.robolectric.RuntimeEnvironment
import org.robolectric.annotation.GraphicsMode
import rps.client.AdminAuth
import rps.client.AdminMessage
import rps.client.Crypto
import rps.client.HistoryApi
import rps.client.KeyLogs
import rps.client.LedgerEntry
import rps.client.LedgerKind
import rps.client.LedgerPage
import rps.client.SignedAction
import java.util.TimeZone

/**
 * The ledger's credits and debits with the admin's signature checked against the admin's key log
 * (a fake backend: the ledger and the key logs): signed, unsigned (the operator's word), and a
 * signature that does not check, in red, saying why.
 */
@RunWith(RobolectricTestRunner::class)
@GraphicsMode(GraphicsMode.Mode.NATIVE)
class LedgerSignaturesScreenTest {
    private val app get() = RuntimeEnvironment.getApplication() as RpsApp
    private val zone = TimeZone.getDefault()
    private val adminKey = KeyLogs.key(7)
    private lateinit var me: String

    @Before
    fun signedIn() {
        Fakes.reset()
        me = Fakes.server.meId
        app.signIn(SignIn(me, "Ada", TestRpsApp.FAKE_URL, "t"))
        TimeZone.setDefault(TimeZone.getTimeZone("UTC"))
    }

    @After
    fun restoreZone() = TimeZone.setDefault(zone)

    private fun auth(action: SignedAction, request: JsonObject, idem: String, signedAt: Long): AdminAuth {
        val m = AdminMessage.of(FakeKeys.ORIGIN, action, ADMIN, null, me, request, idem, adminKey.keyId, signedAt, null)
        return AdminAuth(action.wire, ADMIN, idem, adminKey.keyId, request, Crypto.hex(m.sign(adminKey)), signedAt, null)
    }

    /** Ada's ledger: an unsigned credit, a signed credit and debit, a credit shown for more than the admin signed for, a bet. */
    private fun ledger() {
        val admin = Fakes.keys.of(ADMIN).signUp(adminKey, name = "operator")
        val at = admin.nowMs + 60_000
        val prize = auth(SignedAction.CREDIT, KeyLogs.data("amount" to 500, "memo" to "prize, table 4"), "credit-1", at - 1000)
        val entries = listOf(
            LedgerEntry("1", at, 100, LedgerKind.CREDIT, null, "welcome bonus", null),
            LedgerEntry("2", at + 1000, 500, LedgerKind.CREDIT, null, "prize, table 4", prize),
            LedgerEntry(
                "3",
                at + 2000,
                -200,
                LedgerKind.DEBIT,
                null,
                null,
                auth(SignedAction.DEBIT, KeyLogs.data("amount" to 200), "debit-1", at),
            ),
            LedgerEntry("4", at + 3000, 5000, LedgerKind.CREDIT, null, "prize, table 4", prize),
            LedgerEntry("5", at + 4000, -10, LedgerKind.BET, "7d6c5b4a-3f2e-4d1c-8b0a-9f8e7d6c5b4a", null, null),
        )
        val history = Fakes.history
        Fakes.history = object : HistoryApi by history {
            override suspend fun myLedger(after: String?) = LedgerPage(entries, null)
        }
    }

    /** The last line of each card. */
    private fun lastLines(list: ViewGroup) = (0 until list.childCount).map { i ->
        textsOf(list.getChildAt(i)).last()
    }

    @Test
    fun `each credit and debit says whether the admin's signature checks against the admin's key log`() {
        ledger()
        val c = Robolectric.buildActivity(LedgerActivity::class.java).setup()
        val a = c.get()
        Screens.settle("the ledger") { a.entries.loaded }
        assertEquals(
            listOf(
                "No admin signature: the operator's word alone",
                "Signed by admin key ${adminKey.keyId}, checked against the admin's key log",
                "Signed by admin key ${adminKey.keyId}, checked against the admin's key log",
                "The admin's signature does not check: a request for amount 500, where the entry shows 5000",
                "balance 5390", // a bet: no admin's line, the card ends with its date and the balance
            ),
            lastLines(a.entries.list).map { it.substringAfter(" · ") },
        )
        val failed = findText(a.entries.list.getChildAt(3), "The admin's signature does not check")!!
        assertEquals(app.getColor(R.color.error), failed.currentTextColor)
        assertEquals("the admin's key log is read once for the page", 1, Fakes.keys.reads[ADMIN])
        Screens.matchesGoldens(c, "ledger_signatures") { it.entries.loaded }
    }

    private fun findText(v: android.view.View, prefix: String): TextView? = when {
        v is TextView && v.text.startsWith(prefix) -> v
        v is ViewGroup -> (0 until v.childCount).firstNotNullOfOrNull { findText(v.getChildAt(it), prefix) }
        else -> null
    }

    private companion object {
        const val ADMIN = "0b7e1c2a-9d3f-4e5a-8b6c-7d8e9f0a1b2c"
    }
}
