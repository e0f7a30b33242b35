package rps.app

import android.view.View
import kotlinx.coroutines.CompletableDeferred
import org.junit.Assert.assertEquals
import org.junit.Assert.assertTrue
import org.junit.Before
import org.junit.Test
import org.junit.runner.RunWith
import org.robolectric.Robolectric
import org.robolectric.RobolectricTestRunner
import org.robolectric.RuntimeEnvironment
import org.robolectric.annotation.GraphicsMode
import rps.client.ActionMessage
import rps.client.ActionPayloads
import rps.client.ErrorCode
import rps.client.KeyAlert
import rps.client.KeyLine
import rps.client.KeyLogs
import rps.client.KeyNotice
import rps.client.KeysUiState
import rps.client.PlayerKey
import rps.client.RpsException
import rps.client.SignedAction

/**
 * The keys screen: this phone's key, the account's keys, other phones added by their code, a lost
 * phone's key retired, and the red notice of a key this phone did not add.
 */
@RunWith(RobolectricTestRunner::class)
@GraphicsMode(GraphicsMode.Mode.NATIVE)
class KeysScreenTest {
    private val app get() = RuntimeEnvironment.getApplication() as RpsApp

    @Before
    fun reset() = Fakes.reset()

    /** Signed in as the recording's player, with a key made on this phone at sign-up. */
    private fun signedUpWithKey(): PlayerKey {
        val (ref, key) = app.deviceKeys.create()
        app.signIn(SignIn(Fakes.server.meId, "Ada", TestRpsApp.FAKE_URL, "secret-token", ref, key.keyId))
        Fakes.keys.of(Fakes.server.meId).signUp(key, "Ada")
        return key
    }

    private fun controller() = Robolectric.buildActivity(KeysActivity::class.java).setup()

    private inline fun <reified T : KeysUiState> KeysActivity.showing(): T {
        Screens.settle("the keys screen to show ${T::class.simpleName} (showing $shown)") { shown is T && !shown!!.busy }
        return shown as T
    }

    @Test
    fun `a key the operator put on the account is a red notice with the evidence, on the keys and the account screens`() {
        val key = signedUpWithKey()
        val operators = KeyLogs.key(3)
        // The operator's recovery, which no key of the player signed.
        Fakes.keys.of(Fakes.server.meId).recover(operators, listOf(key.keyId), reason = "support ticket 42")
        val c = controller()
        val s = c.get().showing<KeysUiState.Keys>()
        val alert = s.alerts.single() as KeyAlert.Recovered
        assertEquals(operators.keyId, alert.key.keyId)
        val a = c.get()
        assertTrue(a.alert.isShown)
        assertTrue(a.alert.text.toString(), a.alert.text.contains("the operator replaced this account's keys"))
        assertTrue(a.alert.text.toString(), a.alert.text.contains(operators.keyId))
        val evidence = a.evidence.text.lines()
        assertTrue(
            a.evidence.text.toString(),
            evidence.any { it.startsWith("Keys replaced by the operator (recovery), event ") } &&
                "Reason: support ticket 42" in evidence && "Key: ${operators.keyId}" in evidence,
        )
        Screens.matchesGoldens(c, "keys_operator_key") { it.shown is KeysUiState.Keys }

        val account = Robolectric.buildActivity(AccountActivity::class.java).setup().get()
        Screens.settle("the account screen's key notice") { account.keyNotice.isShown }
        assertEquals("A key this phone did not add appeared on your account. Open Keys and phones.", account.keyNotice.text.toString())
        Screens.shoot(account, "account_key_notice")
    }

    @Test
    fun `a key written in the player's name without the player's signature is flagged as a broken key log`() {
        signedUpWithKey()
        val forged = KeyLogs.key(4)
        // What an operator with the database can write: a key "added" and signed by itself.
        Fakes.keys.of(Fakes.server.meId).addKey(forged, forged)
        val a = controller().get()
        a.showing<KeysUiState.Broken>()
        assertTrue(a.alert.text.toString(), a.alert.text.contains("does not verify"))
        assertTrue(a.evidence.text.toString(), a.evidence.text.contains(forged.keyId))
        Screens.shoot(a, "keys_broken")
    }

    @Test
    fun `another phone is added by its key, signed by this phone's, and is no news to the watch`() {
        signedUpWithKey()
        val c = controller()
        val a = c.get()
        a.showing<KeysUiState.Keys>()
        assertTrue(a.addKey.isShown && !a.alert.isShown)
        a.newKey.setText("not a key")
        a.addKey.performClick()
        Screens.settle("the refusal") { a.outcome.isShown }
        assertEquals("That is not a phone's key: it is 64 characters 0-9 and a-f.", a.outcome.text.toString())

        val second = KeyLogs.key(2)
        a.newKey.setText(second.publicKeyHex.uppercase())
        a.addKey.performClick()
        Screens.settle("the second phone added") { (a.shown as? KeysUiState.Keys)?.lines?.size == 2 }
        assertEquals(listOf(second.publicKeyHex), Fakes.keys.added)
        // Read back and verified: the addition's signature is this phone's key's over the add_key message.
        val s = a.showing<KeysUiState.Keys>()
        assertTrue("${s.alerts}", s.alerts.isEmpty())
        assertEquals("The key of your other phone was added. It can play for this account now.", a.outcome.text.toString())
        Screens.matchesGoldens(c, "keys_two_phones") { (it.shown as? KeysUiState.Keys)?.lines?.size == 2 }
    }

    @Test
    fun `a new phone signed in with a token makes its key and shows it as a QR code for the old one`() {
        val old = KeyLogs.key(1)
        Fakes.keys.of(Fakes.server.meId).signUp(old, "Ada")
        app.signIn(SignIn(Fakes.server.meId, "Ada", TestRpsApp.FAKE_URL, "secret-token"))
        val c = controller()
        val a = c.get()
        a.showing<KeysUiState.NoKey>()
        a.makeKey.performClick()
        val s = a.showing<KeysUiState.AwaitingOtherPhone>()
        assertEquals(app.keyOf(app.account!!)!!.publicKeyHex, s.publicKey)
        assertEquals(View.VISIBLE, a.qr.visibility)
        assertEquals(s.publicKey, a.publicKey.text.toString())
        Screens.matchesGoldens(c, "keys_new_phone") { it.shown is KeysUiState.AwaitingOtherPhone }
    }

    @Test
    fun `an account without any key binds this phone's key itself`() {
        app.signIn(SignIn(Fakes.server.meId, "Ada", TestRpsApp.FAKE_URL, "secret-token"))
        val a = controller().get()
        assertTrue(a.showing<KeysUiState.NoKey>().firstKey)
        a.makeKey.performClick()
        val s = a.showing<KeysUiState.Keys>()
        assertEquals(app.keyOf(app.account!!)!!.keyId, s.deviceKeyId)
        assertEquals("This phone's key is bound to the account.", a.outcome.text.toString())
    }

    /**
     * Signed up on this phone, with a second phone this one added (the one to be lost) and a third
     * it added and retired: the account's keys are this phone's, an active one and a retired one.
     */
    private fun withLostPhone(): Triple<PlayerKey, PlayerKey, PlayerKey> {
        val phone = signedUpWithKey()
        val lost = KeyLogs.key(2)
        val old = KeyLogs.key(5)
        Fakes.keys.of(Fakes.server.meId).addKey(lost, phone).addKey(old, phone).retire(old.keyId, phone)
        for (k in listOf(lost, old)) app.accounts.addKnownKey(Fakes.server.meId, k.keyId)
        return Triple(phone, lost, old)
    }

    private fun KeysActivity.lineOf(keyId: String): KeyLine? = (shown as? KeysUiState.Keys)?.lines?.firstOrNull { it.keyId == keyId }

    @Test
    fun `a lost phone's key is retired after a confirmation, signed by this phone's key, and shows as retired`() {
        val (phone, lost, old) = withLostPhone()
        val c = controller()
        c.get().showing<KeysUiState.Keys>()
        // Only the other active key is offered: not this phone's (it signs with it), not the one already retired.
        assertEquals(setOf(lost.keyId), c.get().retireButtons.keys)
        assertEquals(KeyLine.Kind.RETIRED, c.get().lineOf(old.keyId)?.kind)
        Screens.matchesGoldens(c, "keys_retire_offered") { (it.shown as? KeysUiState.Keys)?.busy == false }

        val a = Screens.matchesGoldens(
            c,
            "keys_retire_confirm",
            prepare = { it.retireButtons.getValue(lost.keyId).performClick() },
        ) { (it.shown as? KeysUiState.Keys)?.busy == false }
        a.showing<KeysUiState.Keys>()
        a.retireButtons.getValue(lost.keyId).performClick()
        Screens.settle("the confirmation") { a.confirmRetire != null }
        val asked = (a.shown as KeysUiState.Keys).confirmRetire!!
        assertEquals(lost.keyId, asked.keyId)
        // Cancelled, nothing is sent; asked again and confirmed, the button waits while the request runs.
        a.cancelRetire!!.performClick()
        Screens.settle("the confirmation closed") { a.confirmRetire == null && a.retireButtons.isNotEmpty() }
        a.retireButtons.getValue(lost.keyId).performClick()
        Screens.settle("the confirmation") { a.confirmRetire != null }
        val answer = CompletableDeferred<Unit>()
        Fakes.keys.holdRetire = answer
        a.confirmRetire!!.performClick()
        Screens.settle("the request on its way") { a.shown?.busy == true }
        assertTrue(!a.confirmRetire!!.isEnabled && !a.cancelRetire!!.isEnabled)
        // A second tap while it runs sends nothing more.
        a.confirmRetire!!.performClick()
        answer.complete(Unit)
        Screens.settle("the key retired") { a.lineOf(lost.keyId)?.kind == KeyLine.Kind.RETIRED && a.shown?.busy == false }

        val sent = Fakes.keys.retireRequests.single()
        assertEquals(lost.keyId, sent.keyId)
        assertEquals(phone.keyId, sent.auth.keyId)
        val signed = ActionMessage(
            FakeKeys.ORIGIN, SignedAction.RETIRE_KEY, Fakes.server.meId, null, null, null,
            ActionPayloads.retireKey(lost.keyId), sent.idempotencyKey, sent.auth.keyId, sent.auth.signedAt,
        )
        assertTrue("the retire_key signature verifies with this phone's key", signed.verify(phone.publicKeyHex, sent.auth.signature))
        // Read back, the key log verifies and this phone's own retirement is no news to the watch.
        val s = a.showing<KeysUiState.Keys>()
        assertTrue("${s.alerts}", s.alerts.isEmpty() && !a.alert.isShown)
        assertTrue(a.retireButtons.isEmpty() && a.confirmRetire == null)
        assertEquals("Key ${lost.keyId} is retired: the phone that held it can no longer act for this account.", a.outcome.text.toString())
    }

    @Test
    fun `a refused retirement says why and leaves the key as it was`() {
        val (_, lost, _) = withLostPhone()
        val a = controller().get()
        for ((refusal, says) in listOf(
            RpsException.Problem(ErrorCode.LAST_KEY, 409, "last active key") to
                "The account's last key cannot be retired. Add another phone's key first.",
            RpsException.Problem(ErrorCode.BAD_SIGNATURE, 401, "no such key") to
                "The server did not accept this phone's signature. Its key may have been retired: open Keys and phones.",
        )) {
            a.showing<KeysUiState.Keys>()
            a.retireButtons.getValue(lost.keyId).performClick()
            Screens.settle("the confirmation") { a.confirmRetire != null }
            Fakes.keys.refuseRetire = refusal
            a.confirmRetire!!.performClick()
            Screens.settle("the refusal") { a.outcome.isShown && a.shown?.busy == false }
            assertEquals(says, a.outcome.text.toString())
            assertEquals(KeyLine.Kind.ACTIVE, a.lineOf(lost.keyId)?.kind)
            assertTrue("a refusal closes the confirmation", a.confirmRetire == null && lost.keyId in a.retireButtons)
        }
        assertEquals(2, Fakes.keys.retireRequests.map { it.idempotencyKey }.distinct().size)
    }

    @Test
    fun `a key this phone did not add is a red alarm until this phone retires it, then said plainly with its evidence`() {
        val (_, lost, _) = withLostPhone()
        val stranger = KeyLogs.key(6)
        // Added from the lost phone: signed by a key of the account, but never seen by this phone.
        Fakes.keys.of(Fakes.server.meId).addKey(stranger, lost)
        val c = controller()
        val a = Screens.matchesGoldens(c, "keys_unknown_key") { (it.shown as? KeysUiState.Keys)?.busy == false }
        a.showing<KeysUiState.Keys>()
        assertTrue(a.alert.text.toString(), a.alert.isShown && a.alert.text.contains(stranger.keyId))
        assertTrue(!a.settled.isShown)
        readsAsTitleAndBody(a)

        a.retireButtons.getValue(stranger.keyId).performClick()
        Screens.settle("the confirmation") { a.confirmRetire != null }
        a.confirmRetire!!.performClick()
        Screens.settle("the key retired") { a.lineOf(stranger.keyId)?.kind == KeyLine.Kind.RETIRED && a.shown?.busy == false }
        val n = a.showing<KeysUiState.Keys>().notices.single() as KeyNotice.RetiredUnknownKey
        assertEquals(KeyNotice.RetiredBy.ThisPhone, n.retiredBy)
        assertTrue("no open alarm once the key is retired: ${a.alert.text}", !a.alert.isShown)
        // Retired from far down the list, the page is back at its top: the plain notice shows from its start.
        Screens.shoot(a, "keys_unknown_retired_at_once")
        val top = IntArray(2).also { a.settled.getLocationInWindow(it) }[1]
        assertTrue("the settled notice starts at y $top, off the top of the window", a.settled.isShown && top >= 0)
        assertEquals(
            "Key ${stranger.keyId}, which this phone did not add, appeared on your account at ${n.alert.event.at}, signed by key " +
                "${lost.keyId}. This phone retired it at ${n.retiredAt}: it can no longer play or act for this account.",
            a.settled.text.toString(),
        )
        assertEquals("said plainly, not in the error colour", a.color(R.color.text), a.settled.currentTextColor)
        // The evidence that it appeared stays, a field a line, each value exact: no JSON to decipher.
        val evidence = a.evidence.text.toString()
        val added = Fakes.keys.of(Fakes.server.meId).events.single { it.type == "key_added" && it.str("keyId") == stranger.keyId }
        for (line in listOf(
            "Key added, event ${added.seq} of the account's key log, at ${added.at}",
            "Key: ${stranger.keyId}",
            "Signed by key: ${lost.keyId}",
            "Public key: ${stranger.publicKeyHex}",
            "Signature: ${added.str("signature")}",
            "Event hash: ${added.hash}",
        )) {
            assertTrue("'$line' in $evidence", a.evidence.isShown && evidence.lines().contains(line))
        }
        assertTrue(evidence, !evidence.contains("{\""))
        Screens.matchesGoldens(c, "keys_unknown_retired") { (it.shown as? KeysUiState.Keys)?.busy == false }
    }

    @Test
    fun `the retire confirmation opens with both its buttons on the screen, at font scale 1 and 1_3`() {
        val (_, lost, _) = withLostPhone()
        try {
            for (scale in listOf(1f, 1.3f)) {
                RuntimeEnvironment.setFontScale(scale)
                val a = controller().get()
                a.showing<KeysUiState.Keys>()
                a.retireButtons.getValue(lost.keyId).performClick()
                Screens.settle("the confirmation") { a.confirmRetire != null }
                // Laid out at the test device's size (360 x 760 dp), as the screenshot draws it.
                Screens.shoot(a, "keys_retire_confirm_at_$scale")
                val window = a.window.decorView
                for (b in listOf(a.confirmRetire!!, a.cancelRetire!!)) {
                    val at = IntArray(2).also { b.getLocationInWindow(it) }
                    assertTrue(
                        "'${b.text}' at font scale $scale is at y ${at[1]}..${at[1] + b.height}, the window 0..${window.height}",
                        b.isShown && at[1] >= 0 && at[1] + b.height <= window.height,
                    )
                }
            }
        } finally {
            RuntimeEnvironment.setFontScale(1f)
        }
    }

    /** Whether colours [a] and [b] differ by at most 40 in each channel (the goldens' tolerance). */
    private fun close(a: Int, b: Int) = listOf(16, 8, 0).all { shift ->
        kotlin.math.abs((a shr shift and 0xff) - (b shr shift and 0xff)) <= 40
    }

    @Test
    fun `the account screen alarms while a key this phone did not add is active, and says it plainly once it is retired`() {
        val (phone, lost, _) = withLostPhone()
        val stranger = KeyLogs.key(6)
        Fakes.keys.of(Fakes.server.meId).addKey(stranger, lost)
        val alarmed = Robolectric.buildActivity(AccountActivity::class.java).setup().get()
        Screens.settle("the account screen's key notice") { alarmed.keyNotice.isShown }
        assertEquals("A key this phone did not add appeared on your account. Open Keys and phones.", alarmed.keyNotice.text.toString())
        assertEquals(alarmed.color(R.color.error), alarmed.keyNotice.currentTextColor)

        // Retired (by this phone, here written to the log directly): nothing alarming is left, a plain line says where the record is.
        Fakes.keys.of(Fakes.server.meId).retire(stranger.keyId, phone)
        val c = Robolectric.buildActivity(AccountActivity::class.java).setup()
        val settled = c.get()
        Screens.settle("the account screen's key notice") { settled.keyNotice.isShown }
        assertEquals(
            "A key this phone did not add was on your account and is retired now. Its record is in Keys and phones.",
            settled.keyNotice.text.toString(),
        )
        assertEquals("said plainly, not in the error colour", settled.color(R.color.text), settled.keyNotice.currentTextColor)
        Screens.matchesGoldens(c, "account_key_retired") { it.keyNotice.isShown }
    }

    @Test
    fun `retiring a key is shown as destructive, in the error colour, in both themes`() {
        val (_, lost, _) = withLostPhone()
        try {
            for (theme in listOf("notnight", "night")) {
                RuntimeEnvironment.setQualifiers("+$theme")
                val a = controller().get()
                a.showing<KeysUiState.Keys>()
                a.retireButtons.getValue(lost.keyId).performClick()
                Screens.settle("the confirmation") { a.confirmRetire != null }
                val shot = Screens.shoot(a, "keys_retire_destructive_$theme")
                val b = a.confirmRetire!!
                val at = IntArray(2).also { b.getLocationInWindow(it) }
                // Inside the button, clear of its rounded corners and of its label.
                val fill = shot.getPixel(at[0] + a.dp(14), at[1] + b.height / 2)
                assertEquals("the fill of '${b.text}' ($theme)", Integer.toHexString(a.color(R.color.error)), Integer.toHexString(fill))
                assertEquals(a.color(R.color.on_error), b.currentTextColor)
                assertTrue(Accessibility.contrast(b.currentTextColor, fill) >= 4.5)
                // The first step, Retire, is outlined and labelled in the error colour too, readable on its fill.
                val cancelled = controller().get()
                cancelled.showing<KeysUiState.Keys>()
                val retireShot = Screens.shoot(cancelled, "keys_retire_first_step_$theme")
                val r = cancelled.retireButtons.getValue(lost.keyId)
                val rAt = IntArray(2).also { r.getLocationInWindow(it) }
                val rFill = retireShot.getPixel(rAt[0] + a.dp(14), rAt[1] + r.height / 2)
                assertEquals("the label of '${r.text}' ($theme)", a.color(R.color.error), r.currentTextColor)
                assertTrue(Accessibility.contrast(r.currentTextColor, rFill) >= 4.5)
                val outline = (0 until a.dp(2)).map { dy -> retireShot.getPixel(rAt[0] + r.width / 2, rAt[1] + dy) }
                assertTrue(
                    "the outline of '${r.text}' ($theme) is ${outline.map(Integer::toHexString)}, not the error colour",
                    outline.any { close(it, a.color(R.color.error)) },
                )
            }
        } finally {
            RuntimeEnvironment.setQualifiers("+notnight")
        }
    }

    /** The alarm's title is a heading of its own and the alarms a red body under it, not one bold paragraph. */
    private fun readsAsTitleAndBody(a: KeysActivity) {
        val title = a.getString(R.string.keys_alert_title)
        assertEquals(title, a.alertTitle.text.toString())
        assertTrue(a.alertTitle.isShown && a.alertTitle.typeface.isBold)
        assertEquals(a.resources.getDimension(R.dimen.text_heading), a.alertTitle.textSize)
        assertTrue("the body does not repeat the title: ${a.alert.text}", !a.alert.text.contains(title))
        assertTrue("the body is not bold", a.alert.typeface?.isBold != true)
        assertEquals(a.resources.getDimension(R.dimen.text_body), a.alert.textSize)
        assertEquals("still red: it is the alarm", a.color(R.color.error), a.alert.currentTextColor)
        assertTrue("the body starts under the title", a.alert.top >= a.alertTitle.bottom)
    }
}
