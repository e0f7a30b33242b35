package rps.app

import android.app.Activity
import android.content.Intent
import android.graphics.Rect
import android.os.Bundle
import android.text.InputType
import android.view.View
import android.widget.EditText
import android.widget.ImageView
import android.widget.ScrollView
import kotlinx.coroutines.MainScope
import kotlinx.coroutines.cancel
import kotlinx.coroutines.launch
import rps.client.AccountKeys
import rps.client.KeyAlert
import rps.client.KeyEvent
import rps.client.KeyLine
import rps.client.KeyNotice
import rps.client.KeysOutcome
import rps.client.KeysUiState

/**
 * The account's keys: the key this phone signs with (and where it is kept), every key of the
 * account from its verified key log (retired ones and the operator's recoveries marked), a red
 * notice with the evidence for every key event this phone did not make (said plainly instead, the
 * evidence kept, once a key it did not add is retired), adding another phone (the new phone shows
 * its key as a QR code and as text, this one scans or types it and signs its addition) and
 * retiring a lost phone's key, after a confirmation, signed by this phone's. What to show is
 * [rps.client.keysUiStateOf] of [AccountKeys]' snapshot; this activity only draws it and passes
 * taps on (no IO here).
 */
class KeysActivity : Activity() {
    private val scope = MainScope()
    private val app get() = application as RpsApp
    private lateinit var keys: AccountKeys

    internal val deviceLine by lazy { text(Type.BODY) }
    internal val storage by lazy { text(Type.LABEL, muted = true) }

    /**
     * The open alarms: a card outlined in red, its title a heading and each alarm a paragraph under it,
     * both in the error colour, so the title reads as a title and not as the first line of one long
     * bold paragraph.
     */
    internal val alertTitle by lazy { alarmText(Type.HEADING).apply { setText(R.string.keys_alert_title) } }
    internal val alert by lazy { alarmText(Type.BODY) }
    private val alarm by lazy { alarmCard().add(alertTitle).add(alert) }

    /** Keys this phone did not add that are retired since: no longer a danger, so in the normal colour. */
    internal val settled by lazy { text(Type.BODY) }

    // Selectable (to copy the evidence or the key), so a touch target like any other.
    internal val evidence by lazy { text(Type.LABEL, muted = true).apply { selectable() } }
    internal val recovery by lazy { text(Type.BODY) }
    internal val outcome by lazy { notice() }
    internal val keyList by lazy { column().apply { setPadding(0, 0, 0, 0) } }
    internal val makeKey by lazy { button(R.string.keys_make_key) { scope.launch { keys.makeKey() } } }
    internal val qr by lazy { ImageView(this).apply { contentDescription = getString(R.string.keys_show_key) } }
    internal val showKey by lazy { text(Type.BODY) }
    internal val publicKey by lazy { text(Type.LABEL).apply { selectable() } }
    internal val newKey by lazy {
        EditText(this).apply {
            setHint(R.string.keys_new_phone_key_hint)
            inputType = InputType.TYPE_CLASS_TEXT or InputType.TYPE_TEXT_FLAG_NO_SUGGESTIONS
            setSingleLine()
            minHeight = px(R.dimen.touch_target)
        }
    }
    internal val addKey by lazy { button(R.string.keys_add_this_key) { scope.launch { keys.addPhone(newKey.text.toString()) } } }
    internal val scanKey by lazy {
        button(R.string.keys_scan_key, primary = false) {
            if (!QrPictures.pick(
                    this,
                    QrPictures.takePhoto(),
                    QrPictures.REQUEST_CAMERA,
                )
            ) {
                outcome.showStatus(getString(R.string.no_picture_app), true)
            }
        }
    }
    private val addPhone by lazy {
        column().apply { setPadding(0, 0, 0, 0) }
            .add(text(Type.HEADING).apply { setText(R.string.keys_add_phone) })
            .add(text(Type.BODY, muted = true).apply { setText(R.string.keys_add_phone_help) })
            .add(newKey).add(addKey).add(scanKey)
    }
    private val listHeading by lazy { text(Type.HEADING).apply { setText(R.string.keys_account_keys) } }

    /** The last state drawn (for tests). */
    internal var shown: KeysUiState? = null

    /** The page, scrolled back to its top once a retirement is done: the notices there just changed, the outcome says so. */
    internal lateinit var page: ScrollView

    /** The outcome last drawn, to scroll for a new one only. */
    private var drawnOutcome: KeysOutcome? = null

    /** The Retire button of each key offered, and the confirmation's button, as last drawn (for tests). */
    internal val retireButtons = LinkedHashMap<String, android.widget.Button>()
    internal var confirmRetire: android.widget.Button? = null
    internal var cancelRetire: android.widget.Button? = null

    override fun onCreate(savedInstanceState: Bundle?) {
        super.onCreate(savedInstanceState)
        title = getString(R.string.keys)
        val a = app.account ?: return finish()
        keys = app.accountKeysOf(a)
        page = ScrollView(this).apply {
            addView(
                column().add(text(Type.DISPLAY).apply { setText(R.string.keys) })
                    .apply { addCard(alarm) }.add(settled).add(evidence).add(recovery).add(outcome)
                    .add(deviceLine).add(storage).add(makeKey).add(showKey).addCentered(qr).add(publicKey)
                    .add(listHeading).add(keyList).add(addPhone),
            )
        }
        setContentView(page)
        scope.launch { keys.state.collect(::show) }
        scope.launch { keys.refresh() }
    }

    private fun show(s: KeysUiState) {
        shown = s
        val all =
            listOf<View>(
                alarm, settled, evidence, recovery, deviceLine, storage, makeKey, showKey, qr, publicKey, listHeading, keyList, addPhone,
            )
        for (v in all) v.visibility = View.GONE
        makeKey.isEnabled = !s.busy
        addKey.isEnabled = !s.busy
        showOutcome(s.outcome)
        // Retiring was confirmed far down the list: the notices and the outcome it changed are at the top.
        if (s.outcome is KeysOutcome.KeyRetired && s.outcome !== drawnOutcome) page.scrollTo(0, 0)
        drawnOutcome = s.outcome
        when (s) {
            is KeysUiState.Checking -> deviceLine.shown(getString(R.string.keys_checking))
            is KeysUiState.Unreachable -> outcome.showStatus(describeFailure(s.error), failure = true)
            is KeysUiState.Broken -> showNotices(listOf(KeyNotice.Alarm(s.alert)))
            is KeysUiState.NoKey -> {
                deviceLine.shown(getString(R.string.keys_no_key))
                makeKey.visibility = View.VISIBLE
            }
            is KeysUiState.AwaitingOtherPhone -> {
                showKey.shown(getString(R.string.keys_show_key))
                qr.setImageBitmap(QrPictures.draw(s.publicKey, dp(QR_DP)))
                qr.visibility = View.VISIBLE
                publicKey.shown(s.publicKey)
            }
            is KeysUiState.Keys -> {
                showNotices(s.notices)
                s.ownRecovery?.let { r ->
                    recovery.shown(getString(R.string.keys_own_recovery, r.at, r.str("reason") ?: ""))
                }
                deviceLine.shown(getString(R.string.keys_this_phone, s.deviceKeyId))
                storage.shown(getString(if (s.inKeystore) R.string.keys_this_phone_keystore else R.string.keys_this_phone_sealed))
                listHeading.visibility = View.VISIBLE
                drawKeys(s)
                keyList.visibility = View.VISIBLE
                addPhone.visibility = View.VISIBLE
            }
        }
    }

    /** Each key's line; under this phone's, why it is not offered; under another active one, Retire or its confirmation. */
    private fun drawKeys(s: KeysUiState.Keys) {
        keyList.removeAllViews()
        retireButtons.clear()
        confirmRetire = null
        cancelRetire = null
        for (line in s.lines) {
            keyList.add(text(Type.BODY, muted = line.kind == KeyLine.Kind.RETIRED).apply { text = lineText(line) })
            when {
                line.kind == KeyLine.Kind.THIS_PHONE ->
                    keyList.add(text(Type.LABEL, muted = true).apply { setText(R.string.keys_retire_not_this_phone) })
                line == s.confirmRetire -> keyList.add(confirmation(line, s.busy))
                // The first step of what cannot be undone: red like the confirmation's button, outlined as it asks first.
                line.retirable -> keyList.add(
                    button(R.string.keys_retire, primary = false, destructive = true) {
                        scope.launch { keys.askRetire(line.keyId) }
                    }.apply {
                        contentDescription = getString(R.string.keys_retire_key, line.keyId)
                        isEnabled = !s.busy && s.confirmRetire == null
                        retireButtons[line.keyId] = this
                    },
                )
            }
        }
    }

    /**
     * What retiring [line]'s key does, said before it is done: it cannot be undone. Below a long list or
     * at a large font the card would open past the bottom of the screen, Cancel out of sight: once
     * laid out, the page scrolls to show it whole (or its top, when taller than the screen).
     */
    private fun confirmation(line: KeyLine, busy: Boolean) = card().apply {
        addOnLayoutChangeListener { v, _, _, _, _, _, _, _, _ -> v.requestRectangleOnScreen(Rect(0, 0, v.width, v.height), true) }
        add(text(Type.HEADING).apply { text = getString(R.string.keys_retire_title, line.keyId) })
        add(text(Type.BODY).apply { text = getString(R.string.keys_retire_message, line.keyId, line.at) })
        add(
            button(R.string.keys_retire_confirm, destructive = true) { scope.launch { keys.retire() } }.apply {
                isEnabled = !busy
                confirmRetire = this
            },
        )
        add(
            button(R.string.cancel, primary = false) { scope.launch { keys.cancelRetire() } }.apply {
                isEnabled = !busy
                cancelRetire = this
            },
        )
    }

    /** The open alarms in red under their title, the settled ones plainly, and the evidence of all. */
    private fun showNotices(notices: List<KeyNotice>) {
        if (notices.isEmpty()) return
        val alarms = notices.filterIsInstance<KeyNotice.Alarm>()
        if (alarms.isNotEmpty()) {
            alert.text = alarms.joinToString("\n\n") { alertText(it.alert) }
            alarm.visibility = View.VISIBLE
        }
        val retired = notices.filterIsInstance<KeyNotice.RetiredUnknownKey>()
        if (retired.isNotEmpty()) settled.shown(retired.joinToString("\n") { retiredText(it) })
        evidence.shown(getString(R.string.keys_alert_evidence) + ":\n\n" + notices.joinToString("\n\n") { evidenceText(it.alert) })
    }

    /**
     * The key event of [a] a field a line ([rps.client.KeyEvent.dataToRead]): what happened and when, which keys, who
     * signed, the signature and the event's hash, each value exact (and selectable, to copy); a broken log's reason after it.
     */
    private fun evidenceText(a: KeyAlert): String {
        val lines = ArrayList<String>()
        a.event?.let { e ->
            lines += getString(R.string.keys_evidence_event, eventName(e.type), e.seq, e.at)
            for ((field, value) in e.dataToRead) lines += getString(R.string.keys_evidence_field, fieldName(field), value)
            lines += getString(R.string.keys_evidence_field, getString(R.string.keys_evidence_account), e.accountId)
            lines += getString(R.string.keys_evidence_field, getString(R.string.keys_evidence_hash), e.hash)
        }
        if (a is KeyAlert.Broken) a.broken.message?.let { lines += it }
        return lines.joinToString("\n")
    }

    private fun eventName(type: String): String = when (type) {
        KeyEvent.KEY_ADDED -> getString(R.string.keys_evidence_key_added)
        KeyEvent.KEY_RETIRED -> getString(R.string.keys_evidence_key_retired)
        KeyEvent.KEYS_RECOVERED -> getString(R.string.keys_evidence_keys_recovered)
        else -> type // a newer server's: named as logged
    }

    private fun fieldName(field: String): String = when (field) {
        "keyId" -> getString(R.string.keys_evidence_key)
        "signer" -> getString(R.string.keys_evidence_signer)
        "signedAt" -> getString(R.string.keys_evidence_signed_at)
        "via" -> getString(R.string.keys_evidence_via)
        "admin" -> getString(R.string.keys_evidence_admin)
        "reason" -> getString(R.string.keys_evidence_reason)
        "retired" -> getString(R.string.keys_evidence_retired)
        "name" -> getString(R.string.keys_evidence_name)
        "publicKey" -> getString(R.string.keys_evidence_public_key)
        "signature" -> getString(R.string.keys_evidence_signature)
        "idempotencyKey" -> getString(R.string.keys_evidence_request)
        else -> field // a field a newer server logs: named as logged
    }

    private fun retiredText(n: KeyNotice.RetiredUnknownKey): String {
        val key = n.alert.key
        val appeared = getString(R.string.keys_settled_appeared, key.keyId, n.alert.event.at, key.signer ?: "")
        val retired = when (val by = n.retiredBy) {
            KeyNotice.RetiredBy.ThisPhone -> getString(R.string.keys_settled_by_this_phone, n.retiredAt)
            is KeyNotice.RetiredBy.OtherKey -> getString(R.string.keys_settled_by_key, by.keyId, n.retiredAt)
            KeyNotice.RetiredBy.Operator -> getString(R.string.keys_settled_by_operator, n.retiredAt)
        }
        return "$appeared $retired"
    }

    private fun alertText(a: KeyAlert): String = when (a) {
        is KeyAlert.UnknownKey -> getString(R.string.keys_alert_unknown, a.key.keyId, a.event.at, a.key.signer ?: "")
        is KeyAlert.Recovered -> getString(
            R.string.keys_alert_recovered,
            a.event.at,
            a.reason ?: "",
            a.retired.joinToString(", "),
            a.key.keyId,
        )
        is KeyAlert.KeyRetired -> getString(R.string.keys_alert_retired, a.keyId, a.event.at, a.signer ?: "")
        is KeyAlert.Broken -> getString(R.string.keys_alert_broken)
    }

    private fun lineText(l: KeyLine): String = when (l.kind) {
        KeyLine.Kind.THIS_PHONE -> getString(R.string.keys_key_this_phone, l.keyId, l.at)
        KeyLine.Kind.ACTIVE -> getString(R.string.keys_key_line, l.keyId, l.at)
        KeyLine.Kind.RETIRED -> getString(R.string.keys_key_retired, l.keyId, l.at)
        KeyLine.Kind.RECOVERY -> getString(R.string.keys_key_recovery, l.keyId, l.at)
    }

    private fun showOutcome(o: KeysOutcome?) = when (o) {
        null -> outcome.showStatus(null)
        KeysOutcome.KeyBound -> outcome.showStatus(getString(R.string.keys_made))
        is KeysOutcome.PhoneAdded -> {
            newKey.setText("")
            outcome.showStatus(getString(R.string.keys_added))
        }
        is KeysOutcome.KeyRetired -> outcome.showStatus(getString(R.string.keys_retired, o.keyId))
        KeysOutcome.NotAKey -> outcome.showStatus(getString(R.string.keys_not_a_key), failure = true)
        is KeysOutcome.Failed -> outcome.showStatus(describeFailure(o.error), failure = true)
    }

    private fun android.widget.TextView.selectable() {
        setTextIsSelectable(true)
        minHeight = px(R.dimen.touch_target)
    }

    private fun alarmText(type: Type) = text(type).apply { setTextColor(color(R.color.error)) }

    private fun android.widget.TextView.shown(s: String) {
        text = s
        visibility = View.VISIBLE
    }

    override fun onActivityResult(requestCode: Int, resultCode: Int, data: Intent?) {
        super.onActivityResult(requestCode, resultCode, data)
        if (resultCode != RESULT_OK || data == null) return
        scope.launch {
            val text = QrPictures.textOf(this@KeysActivity, requestCode, data)
            if (text == null) {
                outcome.showStatus(getString(R.string.no_qr_found), failure = true)
            } else {
                newKey.setText(text)
                keys.addPhone(text)
            }
        }
    }

    override fun onDestroy() {
        scope.cancel()
        super.onDestroy()
    }

    private companion object {
        const val QR_DP = 220
    }
}
