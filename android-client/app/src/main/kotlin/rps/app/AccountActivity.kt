package rps.app

import android.app.Activity
import android.app.AlertDialog
import android.content.ActivityNotFoundException
import android.content.Intent
import android.graphics.Bitmap
import android.graphics.BitmapFactory
import android.net.Uri
import android.os.Bundle
import android.provider.MediaStore
import android.text.InputType
import android.view.View
import android.widget.EditText
import android.widget.LinearLayout
import android.widget.ScrollView
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.MainScope
import kotlinx.coroutines.cancel
import kotlinx.coroutines.launch
import kotlinx.coroutines.withContext
import rps.client.ErrorCode
import rps.client.QrCodes
import rps.client.RpsException
import rps.client.SignInCode
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
            hint = RpsApp.EXAMPLE_SERVER
            setSingleLine()
        }
    }
    internal val name by lazy {
        EditText(this).apply {
            hint = "Your player name"
            inputType = InputType.TYPE_CLASS_TEXT or InputType.TYPE_TEXT_FLAG_CAP_WORDS
            setSingleLine()
        }
    }
    internal val token by lazy {
        EditText(this).apply {
            hint = "Paste your token or sign-in code"
            inputType = InputType.TYPE_CLASS_TEXT or InputType.TYPE_TEXT_VARIATION_VISIBLE_PASSWORD
            setSingleLine()
        }
    }
    internal val status by lazy { notice() }
    internal val serverState by lazy { text(14f) }
    internal val account by lazy { text(22f, bold = true) }
    internal val info by lazy { text() }

    internal val checkServer by lazy { button("Continue") { check(server.text.toString()) } }
    internal val changeServer by lazy { button("Change server") { showServerStep() } }
    internal val create by lazy { button("Create account") { createAccount() } }
    internal val signIn by lazy { button("Sign in") { signInWith(token.text.toString()) } }
    internal val scan by lazy { button("Scan a QR code") { pick(Intent(MediaStore.ACTION_IMAGE_CAPTURE), REQUEST_CAMERA) } }
    internal val choosePicture by lazy {
        button("Choose a picture of the code") { pick(Intent(Intent.ACTION_GET_CONTENT).setType("image/*"), REQUEST_PICTURE) }
    }
    internal val lobbies by lazy { button("Lobbies") { startActivity(Intent(this, LobbyListActivity::class.java)) } }
    internal val myGames by lazy { button("My games") { startActivity(Intent(this, MyGamesActivity::class.java)) } }
    internal val rotate by lazy { button("Get a new token") { rotateToken() } }
    internal val switch by lazy { button("Switch account") { chooseAccount() } }
    internal val signOut by lazy { button("Sign out") { confirmSignOut() } }

    private val serverStep by lazy { column().apply { setPadding(0, 0, 0, 0) } }
    private val accountStep by lazy { column().apply { setPadding(0, 0, 0, 0) } }
    private val signedIn by lazy { column().apply { setPadding(0, 0, 0, 0) } }

    /** The dialog on screen, for tests. */
    internal var dialog: AlertDialog? = null

    override fun onCreate(savedInstanceState: Bundle?) {
        super.onCreate(savedInstanceState)
        title = "Rock Paper Scissors Lizard Spock"
        serverStep.add(text(14f).apply { text = "Server address" }).add(server).add(checkServer)
        accountStep.add(serverState).add(changeServer)
            .add(text(18f, bold = true).apply { text = "New here?" }).add(name).add(create)
            .add(text(18f, bold = true).apply { text = "Have a token?" }).add(token).add(signIn).add(scan).add(choosePicture)
        signedIn.add(account).add(info).add(lobbies).add(myGames).add(rotate).add(switch).add(signOut)
        setContentView(ScrollView(this).apply { addView(column().add(status).add(signedIn).add(serverStep).add(accountStep)) })
        status.showStatus(null)
        server.setText(app.accounts.lastServer)
        if (app.account != null) showAccount() else showServerStep()
    }

    private fun showServerStep() {
        checkedServer = null
        signedIn.visibility = View.GONE
        accountStep.visibility = View.GONE
        serverStep.visibility = View.VISIBLE
    }

    private fun showAccountStep(url: String) {
        checkedServer = url
        serverState.text = "Server $url is ready."
        signedIn.visibility = View.GONE
        serverStep.visibility = View.GONE
        accountStep.visibility = View.VISIBLE
    }

    private fun showAccount() {
        val a = app.account ?: return showServerStep()
        adding = false
        serverStep.visibility = View.GONE
        accountStep.visibility = View.GONE
        signedIn.visibility = View.VISIBLE
        account.text = a.name.ifEmpty { "Your account" }
        info.text = "On ${a.server}"
        switch.text = if (app.accounts.all().size > 1) "Switch account" else "Add another account"
        scope.launch {
            try {
                val me = app.backendOf(a).player.me()
                if (me.name != a.name) app.accounts.rename(a.id, me.name)
                account.text = me.name
                info.text = "Balance: ${me.balance}\nOn ${a.server}"
                status.showStatus(null)
            } catch (e: RpsException) {
                status.showStatus(accountFailure(e), failure = true)
            }
        }
    }

    /** Checks [typed] with `GET /readyz` before offering to create an account or sign in there. */
    private fun check(typed: String) {
        val url = typed.trim().trimEnd('/')
        serverAddressProblem(url)?.let { return status.showStatus(it, failure = true) }
        status.showStatus("Checking $url...")
        checkServer.isEnabled = false
        scope.launch {
            try {
                if (app.connect(url, null).directory.isReady()) {
                    app.accounts.rememberServer(url)
                    status.showStatus(null)
                    showAccountStep(url)
                } else {
                    status.showStatus(
                        "$url answers but is not ready (its database is not reachable). Try again in a moment.",
                        failure = true,
                    )
                }
            } catch (e: RpsException.Network) {
                status.showStatus("Could not reach $url. Check the address and that the server is running.", failure = true)
            } catch (e: RpsException) {
                status.showStatus("$url does not look like a game server (${e.message}).", failure = true)
            } finally {
                checkServer.isEnabled = true
            }
        }
    }

    private fun createAccount() {
        val url = checkedServer ?: return showServerStep()
        val wanted = name.text.toString().trim()
        if (wanted.isEmpty()) return status.showStatus("Choose a player name first.", failure = true)
        create.isEnabled = false
        scope.launch {
            try {
                val created = app.connect(url, null).directory.createAccount(wanted)
                app.signIn(created.account.id, created.account.name, url, created.token)
                status.showStatus("Account created. Ask the operator to credit it before you join a game.")
                showAccount()
            } catch (e: RpsException.Problem) {
                status.showStatus(
                    if (e.field == "name") {
                        "That name cannot be used. Use letters, digits and spaces (no invisible characters)."
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
        val code = SignInCode.parse(text) ?: return status.showStatus("That is not a token or a sign-in code.", failure = true)
        val url = code.server?.trimEnd('/') ?: checkedServer ?: return showServerStep()
        signIn.isEnabled = false
        scope.launch {
            try {
                val me = app.connect(url, code.token).player.me()
                app.signIn(me.id, me.name, url, code.token)
                status.showStatus("Signed in as ${me.name}.")
                token.setText("")
                showAccount()
            } catch (e: RpsException.Problem) {
                status.showStatus(
                    if (e.code ==
                        ErrorCode.UNAUTHORIZED
                    ) {
                        "$url does not accept that token (it may have been replaced)."
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
        try {
            startActivityForResult(intent, request)
        } catch (e: ActivityNotFoundException) {
            status.showStatus("No app on this phone can take or choose a picture. Paste the token instead.", failure = true)
        }
    }

    override fun onActivityResult(requestCode: Int, resultCode: Int, data: Intent?) {
        super.onActivityResult(requestCode, resultCode, data)
        if (resultCode != RESULT_OK || data == null) return
        scope.launch {
            val text = withContext(Dispatchers.Default) {
                val picture = when (requestCode) {
                    REQUEST_CAMERA -> data.extras?.get("data") as? Bitmap
                    REQUEST_PICTURE -> data.data?.let(::readPicture)
                    else -> null
                }
                picture?.let { b -> IntArray(b.width * b.height).also { b.getPixels(it, 0, b.width, 0, 0, b.width, b.height) } }
                    ?.let { QrCodes.decode(it, picture.width, picture.height) }
            }
            if (text == null) {
                status.showStatus("No QR code found in that picture. Try again closer, or paste the token.", failure = true)
            } else {
                token.setText(text)
                signInWith(text)
            }
        }
    }

    /** The picture at [uri], scaled down to at most about [MAX_PICTURE_PX] a side (a QR code needs no more). */
    private fun readPicture(uri: Uri): Bitmap? {
        val bounds = BitmapFactory.Options().apply { inJustDecodeBounds = true }
        contentResolver.openInputStream(uri)?.use { BitmapFactory.decodeStream(it, null, bounds) } ?: return null
        var sample = 1
        while (maxOf(bounds.outWidth, bounds.outHeight) / sample > MAX_PICTURE_PX) sample *= 2
        val opts = BitmapFactory.Options().apply { inSampleSize = sample }
        return contentResolver.openInputStream(uri)?.use { BitmapFactory.decodeStream(it, null, opts) }
    }

    private fun rotateToken() {
        val a = app.account ?: return
        rotate.isEnabled = false
        scope.launch {
            try {
                val fresh = app.backendOf(a).directory.rotateToken(UUID.randomUUID().toString())
                app.replaceToken(a, fresh)
                status.showStatus("This phone now uses a new token; the old one stops working.")
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
        val labels = others.map { "${it.name} (${it.server})" } + "Add another account"
        dialog = AlertDialog.Builder(this)
            .setTitle("Switch account")
            .setItems(labels.toTypedArray()) { _, i -> if (i == others.size) startAdding() else confirmSwitch(others[i]) }
            .setNegativeButton("Cancel", null)
            .show()
    }

    private fun confirmSwitch(to: StoredAccount) {
        val from = app.account
        val pending = from?.let { app.pendingMoves(it).size } ?: 0
        val message = "Play as ${to.name} on ${to.server}?" +
            if (pending >
                0
            ) {
                " ${from!!.name}'s move waiting in $pending ${games(pending)} is still revealed, with ${from.name}'s token."
            } else {
                ""
            }
        dialog = AlertDialog.Builder(this)
            .setTitle("Switch to ${to.name}?")
            .setMessage(message)
            .setPositiveButton("Switch") { _, _ ->
                app.switchTo(to)
                status.showStatus(null)
                showAccount()
            }
            .setNegativeButton("Cancel", null)
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
        val message = "This phone forgets ${a.name}'s token. To play as ${a.name} again you need a token from the operator." +
            if (pending > 0) " Your move waiting in $pending ${games(pending)} will not be revealed: you will be out of it." else ""
        dialog = AlertDialog.Builder(this)
            .setTitle("Sign out of ${a.name}?")
            .setMessage(message)
            .setPositiveButton("Sign out") { _, _ ->
                app.signOut(a)
                app.accounts.all().firstOrNull()?.let(app::switchTo)
                status.showStatus("Signed out of ${a.name}.")
                if (app.account != null) showAccount() else showServerStep()
            }
            .setNegativeButton("Cancel", null)
            .show()
    }

    private fun games(n: Int) = if (n == 1) "game" else "games"

    private fun accountFailure(e: RpsException): String = if (e is RpsException.Problem && e.code == ErrorCode.UNAUTHORIZED) {
        "The server no longer accepts this phone's token. Sign out, then sign in with a new token from the operator."
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
        const val REQUEST_CAMERA = 1
        const val REQUEST_PICTURE = 2
        private const val MAX_PICTURE_PX = 1600
    }
}
