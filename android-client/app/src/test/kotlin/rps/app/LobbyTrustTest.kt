package rps.app

import android.content.Intent
import android.os.Looper
import android.view.View
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
import rps.client.FileLogTrusts
import rps.client.GameUiState
import rps.client.RecordedServer
import rps.client.TrustCheck
import rps.client.TrustStatus
import java.io.File
import java.time.Duration

/**
 * The game screen's verification line and the log's tampering notice, on the transparency log's
 * answers recorded from a real rpsd (`logged`).
 */
@RunWith(RobolectricTestRunner::class)
@GraphicsMode(GraphicsMode.Mode.NATIVE)
class LobbyTrustTest {
    private val app get() = RuntimeEnvironment.getApplication() as RpsApp
    private val srv: RecordedServer get() = Fakes.server
    private val logKey get() = srv.recording.log!!.keys.single().keyId

    @Before
    fun signedIn() {
        Fakes.reset("logged")
        app.signIn(SignIn(Fakes.server.meId, "Ada", TestRpsApp.FAKE_URL, "t"))
    }

    private fun open(): LobbyActivity {
        val a = Robolectric.buildActivity(
            LobbyActivity::class.java,
            Intent(app, LobbyActivity::class.java).putExtra(LobbyActivity.EXTRA_LOBBY, srv.lobbyId),
        ).setup().get()
        Screens.settle("the lobby") { a.grid.weapons != null && a.session.state.value !is GameUiState.Connecting }
        return a
    }

    /**
     * Lets the session's clock run, a tenth of a second at a time, until [done]: the log is asked
     * about a head a moment after it came, and again while it does not hold it yet.
     */
    private fun LobbyActivity.runUntil(what: String, done: () -> Boolean) {
        val until = System.nanoTime() + 30_000_000_000
        while (true) {
            Screens.settle()
            if (done()) return
            if (System.nanoTime() >
                until
            ) {
                throw AssertionError("timed out waiting for $what; the line says '${verification.text}', the notice '${notice.text}'")
            }
            shadowOf(Looper.getMainLooper()).idleFor(Duration.ofMillis(100))
            Thread.sleep(5)
        }
    }

    @Test
    fun `the line says how far the history is verified, where the log stands and which key signed it`() {
        srv.to("open-logged")
        val a = open()
        a.runUntil("the proof in the log") { a.verification.text.contains("in the log at size") }
        assertEquals("Events 1–2 verified, in the log at size 75, signed by key $logKey", a.verification.text.toString())
        assertEquals(View.VISIBLE, a.verification.visibility)
        assertEquals("", a.notice.text.toString())
        Screens.shoot(a, "lobby_verified_in_log")

        // Bo and Cy join: the game starts, and its newest events are proven in a larger checkpoint.
        srv.to("started-logged")
        a.runUntil("the proof of event 6") { a.verification.text.contains("size 79") }
        assertEquals("Events 1–6 verified, in the log at size 79, signed by key $logKey", a.verification.text.toString())
        assertEquals("", a.notice.text.toString())

        // The pinned key and the kept checkpoint are the account's, in its own folder.
        val kept = FileLogTrusts(File(app.filesDir, app.account!!.folder + "/log")).load(TestRpsApp.FAKE_URL)!!
        assertEquals(srv.moment.inclusion!!.checkpoint, kept.checkpoint)
    }

    @Test
    fun `a log that went back to an older tree is the red tampering notice`() {
        srv.to("joined-logged")
        val a = open()
        a.runUntil("the proof in the log") { a.verification.text.contains("size 76") }
        val older = srv.recording.moments[srv.recording.moment("open-logged")].inclusion!!
        srv.tamperInclusion = { older.copy(seq = it.seq) }
        srv.to("started-logged")
        a.runUntil("the notice") { a.notice.text.isNotEmpty() }
        assertEquals(
            "The server's transparency log went back to an older state than it showed this device. Do not trust this server.",
            a.notice.text.toString(),
        )
        assertEquals("Stopped.", a.stateText.text.toString())
        Screens.shoot(a, "lobby_log_rolled_back")
    }

    @Test
    fun `the line for each state of the proof`() {
        val c = app
        val chain = TrustCheck.ChainVerified(9)
        val head = TrustCheck.HeadSigned("k1", 9)
        assertNull(c.trustLine(TrustStatus()))
        assertEquals("Events 1–9 verified", c.trustLine(TrustStatus(listOf(chain))))
        assertEquals("Events 1–9 verified, signed by key k1", c.trustLine(TrustStatus(listOf(chain, head))))
        assertEquals(
            "Events 1–9 verified, signed by key k1; not in the log yet",
            c.trustLine(TrustStatus(listOf(chain, head, TrustCheck.NotInLogYet(9)))),
        )
        assertEquals(
            "Events 1–9 verified, signed by key k1; waiting for the witnesses' cosignatures",
            c.trustLine(TrustStatus(listOf(chain, head, TrustCheck.NotCosigned(9, 40, emptyList(), 1)))),
        )
        assertEquals(
            "Events 1–9 verified; 1–7 in the log at size 40, signed by key L",
            c.trustLine(TrustStatus(listOf(chain, head, TrustCheck.InLog(7, 30, 40, "L", emptyList(), null)))),
        )
        assertEquals(
            "Events 1–9 verified, in the log at size 41, signed by key L, cosigned by w1, w2",
            c.trustLine(TrustStatus(listOf(chain, head, TrustCheck.InLog(9, 35, 41, "L", listOf("w1", "w2"), 40)))),
        )
        assertTrue(c.trustLine(TrustStatus(listOf(chain, head)))!!.isNotBlank())
    }
}
