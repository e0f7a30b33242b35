package rps.app

import android.app.Activity
import android.app.AlertDialog
import android.content.Intent
import android.os.Bundle
import android.text.InputType
import android.view.View
import android.widget.EditText
import android.widget.LinearLayout
import android.widget.ScrollView
import kotlinx.coroutines.MainScope
import kotlinx.coroutines.cancel
import kotlinx.coroutines.launch
import rps.client.ErrorCode
import rps.client.KeysAttention
import rps.client.RpsException
import rps.client.SignInCode
import rps.client.attention
import java.util.UUID

/**
 * The first screen. Signed in: the account in use with its balance, the way to the lobbies and
 * the player's games, a new token, switching account (after confirming) and signing out. Otherwise
 * (or to add an account): the server's address, checked with `GET /readyz` before anything else,
 * then "Create account" or "Sign in with a token" (pasted, or read from a picture of the QR code
 * the console shows beside a token it issues).
 */
class AccountActivity : Activity() {
    private val scope = MainScope()
    private val app get() = application as RpsApp

    /** The checked server address while signing in; null until it answered. */
    private var checkedServer: String? = null

    /** Adding an account while another is signed in. */
    private var adding = false

    internal val server by lazy {
        EditText(this).apply {
            inputType = InputType.TYPE_CLASS_TEXT or InputType.TYPE_TEXT_VARIATION_URI
            setHint(R.string.server_example)
            setSingleLine()
            minHeight = px(R.dimen.touch_target) // after setSingleLine, which sets a height in lines
        }
    }
    internal val name by lazy {
        EditText(this).apply {
            setHint(R.string.player_name_hint)
            inputType = InputType.TYPE_CLASS_TEXT or InputType.TYPE_TEXT_FLAG_CAP_WORDS
            setSingleLine()
            minHeight = px(R.dimen.touch_target) // after setSingleLine, which sets a height in lines
        }
    }
    internal val token by lazy {
        EditText(this).apply {
            setHint(R.string.token_hint)
            // Not VISIBLE_PASSWORD: that variation sets a monospace face, which cut the hint off.
            inputType = InputType.TYPE_CLASS_TEXT or InputType.TYPE_TEXT_FLAG_NO_SUGGESTIONS
            setSingleLine()
            minHeight = px(R.dimen.touch_target) // after setSingleLine, which sets a height in lines
        }
    }
    internal val status by lazy { notice() }
    internal val serverState by lazy { text(Type.LABEL, muted = true) }
    internal val account by lazy { text(Type.TITLE) }
    internal val info by lazy { text(Type.BODY, muted = true) }

    internal val checkServer by lazy { button(R.string.server_continue) { check(server.text.toString()) } }
    internal val changeServer by lazy { button(R.string.server_change, primary = false) { showServerStep() } }
    internal val create by lazy { button(R.string.create_account) { createAccount() } }
    internal val signIn by lazy { button(R.string.sign_in) { signInWith(token.text.toString()) } }
    internal val scan by lazy {
        button(R.string.scan_qr, primary = false) { pick(QrPictures.takePhoto(), QrPictures.REQUEST_CAMERA) }
    }
    internal val choosePicture by lazy {
        button(R.string.choose_picture, primary = false) { pick(QrPictures.choosePicture(), QrPictures.REQUEST_PICTURE) }
    }

    /** The account's keys on this device and its other phones. */
    internal val keys by lazy { button(R.string.keys, primary = false) { startActivity(Intent(this, KeysActivity::class.java)) } }

    /**
     * Red while the account's keys call for the player ([rps.client.attention], the keys screen's rule): a key this
     * phone did not add still active, or a key log that does not verify; a plain line once every such key is retired.
     */
    internal val keyNotice by lazy { notice().apply { visibility = View.GONE } }
    internal val lobbies by lazy { button(R.string.lobbies) { startActivity(Intent(this, LobbyListActivity::class.java)) } }
    internal val myGames by lazy { button(R.string.my_games, primary = false) { startActivity(Intent(this, MyGamesActivity::class.java)) } }

    /** After a refusal of the permission to notify: says what the player misses, and offers it. */
    internal val notifyOff by lazy { text(Type.BODY, muted = true).apply { setText(R.string.notify_off) } }
    internal val allowNotify by lazy { button(R.string.notify_turn_on, primary = false) { app.notifyPermission.offer(this) } }
    internal val rotate by lazy { button(R.string.new_token, primary = false) { rotateToken() } }
    internal val switch by lazy { button(R.string.switch_account, primary = false) { chooseAccount() } }
    internal val signOut by lazy { button(R.string.sign_out, primary = false) { confirmSignOut() } }

    private val serverStep by lazy { column().apply { setPadding(0, 0, 0, 0) } }
    private val accountStep by lazy { column().apply { setPadding(0, 0, 0, 0) } }
    private val signedIn by lazy { column().apply { setPadding(0, 0, 0, 0) } }

    /** The dialog on screen, for tests. */
    internal var dialog: AlertDialog? = null

    override fun onCreate(savedInstanceState: Bundle?) {
        super.onCreate(savedInstanceState)
        title = getString(R.string.app_title)
        serverStep.add(text(Type.LABEL, muted = true).apply { setText(R.string.server_address) }).add(server).add(checkServer)
        accountStep.add(serverState).add(changeServer)
            .add(text(Type.HEADING).apply { setText(R.string.new_here) }).add(name).add(create)
            .add(text(Type.HEADING).apply { setText(R.string.have_token) }).add(token).add(signIn).add(scan).add(choosePicture)
        signedIn.add(account).add(info).add(keyNotice).add(lobbies).add(myGames).add(keys).add(notifyOff).add(allowNotify).add(rotate)
            .add(switch).add(signOut)
        val heading = text(Type.DISPLAY).apply { setText(R.string.app_title) }
        setContentView(ScrollView(this).apply { addView(column().add(heading).add(status).add(signedIn).add(serverStep).add(accountStep)) })
        status.showStatus(null)
        server.setText(app.accounts.lastServer)
        adding = savedInstanceState?.getBoolean(STATE_ADDING) ?: false
        val checked = savedInstanceState?.getString(STATE_SERVER)
        when {
            checked != null -> showAccountStep(checked)
            app.account != null && !adding -> showAccount()
            else -> showServerStep()
        }
    }

    override fun onSaveInstanceState(outState: Bundle) {
        super.onSaveInstanceState(outState)
        checkedServer?.let { outState.putString(STATE_SERVER, it) }
        outState.putBoolean(STATE_ADDING, adding)
    }

    override fun onResume() {
        super.onResume()
        showNotifyOffer() // the player may have turned notifications on in the settings meanwhile
    }

    override fun onRequestPermissionsResult(requestCode: Int, permissions: Array<out String>, grantResults: IntArray) {
        if (requestCode == NotifyPermission.REQUEST) showNotifyOffer()
    }

    private fun showNotifyOffer() {
        val off = app.notifyPermission.refused(this)
        notifyOff.visibility = if (off) View.VISIBLE else View.GONE
        allowNotify.visibility = notifyOff.visibility
    }

    private fun showServerStep() {
        checkedServer = null
        signedIn.visibility = View.GONE
        accountStep.visibility = View.GONE
        serverStep.visibility = View.VISIBLE
    }

    private fun showAccountStep(url: String) {
        checkedServer = url
        serverState.text = getString(R.string.server_ready, url)
        signedIn.visibility = View.GONE
        serverStep.visibility = View.GONE
        accountStep.visibility = View.VISIBLE
    }

    private fun showAccount() {
        val a = app.account ?: return showServerStep()
        adding = false
        checkedServer = null
        serverStep.visibility = View.GONE
        accountStep.visibility = View.GONE
        signedIn.visibility = View.VISIBLE
        account.text = a.name.ifEmpty { getString(R.string.your_account) }
        info.text = getString(R.string.on_server, a.server)
        switch.setText(if (app.accounts.all().size > 1) R.string.switch_account else R.string.add_account)
        scope.launch {
            try {
                val me = app.backendOf(a).player.me()
                if (me.name != a.name) app.accounts.rename(a.id, me.name)
                account.text = me.name
                info.text = getString(R.string.balance_on_server, me.balance, a.server)
                status.showStatus(null)
            } catch (e: RpsException) {
                status.showStatus(accountFailure(e), failure = true)
            }
        }
        watchKeys(a)
    }

    /** The account's key log, watched for keys this phone did not add: the details are on the keys screen. */
    private fun watchKeys(a: StoredAccount) {
        keyNotice.visibility = View.GONE
        scope.launch {
            val keys = app.accountKeysOf(a)
            keys.refresh()
            when (keys.state.value.attention) {
                KeysAttention.ALARM -> keyNotice.showStatus(getString(R.string.keys_notice_account), failure = true)
                KeysAttention.SETTLED -> keyNotice.showStatus(getString(R.string.keys_notice_account_settled))
                KeysAttention.NONE -> keyNotice.showStatus(null)
            }
        }
    }

    /** Checks [typed] with `GET /readyz` before offering to create an account or sign in there. */
    private fun check(typed: String) {
        val url = typed.trim().trimEnd('/')
        if (!isServerAddress(url)) return status.showStatus(getString(R.string.server_bad_address), failure = true)
        status.showStatus(getString(R.string.server_checking, url))
        checkServer.isEnabled = false
        scope.launch {
            try {
                if (app.connect(url, null).directory.isReady()) {
                    app.accounts.rememberServer(url)
                    status.showStatus(null)
                    showAccountStep(url)
                } else {
                    status.showStatus(getString(R.string.server_not_ready, url), failure = true)
                }
            } catch (e: RpsException.Network) {
                status.showStatus(getString(R.string.server_unreachable, url), failure = true)
            } catch (e: RpsException) {
                status.showStatus(getString(R.string.server_not_rps, url), failure = true)
            } finally {
                checkServer.isEnabled = true
            }
        }
    }

    private fun createAccount() {
        val url = checkedServer ?: return showServerStep()
        val wanted = name.text.toString().trim()
        if (wanted.isEmpty()) return status.showStatus(getString(R.string.name_first), failure = true)
        create.isEnabled = false
        scope.launch {
            try {
                app.createAccount(url, wanted)
                status.showStatus(getString(R.string.account_created))
                showAccount()
            } catch (e: RpsException.Problem) {
                status.showStatus(
                    if (e.field == "name") {
                        getString(R.string.name_refused)
                    } else {
                        describeFailure(e)
                    },
                    failure = true,
                )
            } catch (e: RpsException) {
                status.showStatus(describeFailure(e), failure = true)
            } finally {
                create.isEnabled = true
            }
        }
    }

    /** Signs in with a pasted or scanned token or sign-in code (whose server, if it names one, is used). */
    private fun signInWith(text: String) {
        val code = SignInCode.parse(text) ?: return status.showStatus(getString(R.string.not_a_token), failure = true)
        val url = code.server?.trimEnd('/') ?: checkedServer ?: return showServerStep()
        signIn.isEnabled = false
        scope.launch {
            try {
                val me = app.connect(url, code.token).player.me()
                app.signIn(SignIn(me.id, me.name, url, code.token))
                status.showStatus(getString(R.string.signed_in_as, me.name))
                token.setText("")
                showAccount()
            } catch (e: RpsException.Problem) {
                status.showStatus(
                    if (e.code ==
                        ErrorCode.UNAUTHORIZED
                    ) {
                        getString(R.string.token_refused, url)
                    } else {
                        describeFailure(e)
                    },
                    failure = true,
                )
            } catch (e: RpsException) {
                status.showStatus(describeFailure(e), failure = true)
            } finally {
                signIn.isEnabled = true
            }
        }
    }

    private fun pick(intent: Intent, request: Int) {
        if (!QrPictures.pick(this, intent, request)) status.showStatus(getString(R.string.no_picture_app), failure = true)
    }

    override fun onActivityResult(requestCode: Int, resultCode: Int, data: Intent?) {
        super.onActivityResult(requestCode, resultCode, data)
        if (resultCode != RESULT_OK || data == null) return
        scope.launch {
            val text = QrPictures.textOf(this@AccountActivity, requestCode, data)
            if (text == null) {
                status.showStatus(getString(R.string.no_qr_found), failure = true)
            } else {
                token.setText(text)
                signInWith(text)
            }
        }
    }

    private fun rotateToken() {
        val a = app.account ?: return
        rotate.isEnabled = false
        scope.launch {
            try {
                val fresh = app.backendOf(a).directory.rotateToken(UUID.randomUUID().toString())
                app.replaceToken(a, fresh)
                status.showStatus(getString(R.string.new_token_done))
            } catch (e: RpsException) {
                status.showStatus(accountFailure(e), failure = true)
            } finally {
                rotate.isEnabled = true
            }
        }
    }

    /** The other accounts on this phone, and adding one; switching is confirmed first. */
    private fun chooseAccount() {
        val current = app.account
        val others = app.accounts.all().filter { it.id != current?.id }
        if (others.isEmpty()) return startAdding()
        val labels = others.map { getString(R.string.account_on_server, it.name, it.server) } + getString(R.string.add_account)
        dialog = AlertDialog.Builder(this)
            .setTitle(R.string.switch_account)
            .setItems(labels.toTypedArray()) { _, i -> if (i == others.size) startAdding() else confirmSwitch(others[i]) }
            .setNegativeButton(R.string.cancel, null)
            .show()
    }

    private fun confirmSwitch(to: StoredAccount) {
        val from = app.account
        val pending = from?.let { app.pendingMoves(it).size } ?: 0
        val message = getString(R.string.switch_to_message, to.name, to.server) +
            if (pending > 0) " " + resources.getQuantityString(R.plurals.switch_pending, pending, from!!.name, pending) else ""
        dialog = AlertDialog.Builder(this)
            .setTitle(getString(R.string.switch_to_title, to.name))
            .setMessage(message)
            .setPositiveButton(R.string.switch_confirm) { _, _ ->
                app.switchTo(to)
                status.showStatus(null)
                showAccount()
            }
            .setNegativeButton(R.string.cancel, null)
            .show()
    }

    private fun startAdding() {
        adding = true
        server.setText(app.accounts.lastServer)
        showServerStep()
    }

    private fun confirmSignOut() {
        val a = app.account ?: return
        val pending = app.pendingMoves(a).size
        val message = getString(R.string.sign_out_message, a.name) +
            if (pending > 0) " " + resources.getQuantityString(R.plurals.sign_out_pending, pending, pending) else ""
        dialog = AlertDialog.Builder(this)
            .setTitle(getString(R.string.sign_out_title, a.name))
            .setMessage(message)
            .setPositiveButton(R.string.sign_out) { _, _ ->
                app.signOut(a)
                app.accounts.all().firstOrNull()?.let(app::switchTo)
                status.showStatus(getString(R.string.signed_out, a.name))
                if (app.account != null) showAccount() else showServerStep()
            }
            .setNegativeButton(R.string.cancel, null)
            .show()
    }

    private fun accountFailure(e: RpsException): String = if (e is RpsException.Problem && e.code == ErrorCode.UNAUTHORIZED) {
        getString(R.string.token_no_longer_valid)
    } else {
        describeFailure(e)
    }

    override fun onBackPressed() {
        if (adding && app.account != null) {
            showAccount()
        } else {
            @Suppress("DEPRECATION")
            super.onBackPressed()
        }
    }

    override fun onDestroy() {
        scope.cancel()
        super.onDestroy()
    }

    companion object {
        private const val STATE_SERVER = "checkedServer"
        private const val STATE_ADDING = "adding"
    }
}
