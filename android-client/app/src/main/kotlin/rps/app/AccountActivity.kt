package rps.app

import android.app.Activity
import android.content.Intent
import android.os.Bundle
import android.text.InputType
import android.widget.EditText
import kotlinx.coroutines.MainScope
import kotlinx.coroutines.cancel
import kotlinx.coroutines.launch
import rps.client.RpsException

/** Start screen: the server to use, account creation, and the current account with its balance. */
class AccountActivity : Activity() {
    private val scope = MainScope()
    private val app get() = application as RpsApp
    internal lateinit var server: EditText
    internal lateinit var name: EditText
    internal val account by lazy { text(20f, bold = true) }
    internal val status by lazy { notice() }
    internal val info by lazy { text() }
    internal val create by lazy { button("Create account") { createAccount() } }
    internal val lobbies by lazy { button("Lobbies") { openLobbies() } }

    override fun onCreate(savedInstanceState: Bundle?) {
        super.onCreate(savedInstanceState)
        title = "Rock Paper Scissors Lizard Spock"
        server = EditText(this).apply {
            setText(app.serverUrl)
            inputType = InputType.TYPE_CLASS_TEXT or InputType.TYPE_TEXT_VARIATION_URI
            hint = "Server address"
        }
        name = EditText(this).apply {
            hint = "Your player name"
            inputType = InputType.TYPE_CLASS_TEXT
        }
        setContentView(
            column()
                .add(text(14f).apply { text = "Server address" }).add(server)
                .add(text(14f).apply { text = "New account" }).add(name).add(create)
                .add(account).add(info).add(lobbies).add(status),
        )
        lobbies.isEnabled = app.token != null
        if (app.token != null) showAccount()
    }

    private fun createAccount() {
        if (!useServer()) return
        scope.launch {
            try {
                val created = app.backend().directory.createAccount(name.text.toString().trim().ifBlank { "player" })
                app.token = created.token
                account.text = "${created.account.name} - balance ${created.account.balance}"
                info.text = "Account created. Ask the operator to credit it before you join a game."
                lobbies.isEnabled = true
            } catch (e: RpsException) {
                status.text = describeFailure(e)
            }
        }
    }

    private fun showAccount() {
        scope.launch {
            try {
                val me = app.backend().player.me()
                account.text = "${me.name} - balance ${me.balance}"
            } catch (e: RpsException) {
                status.text = describeFailure(e)
            }
        }
    }

    /** Takes the address typed in, or says why it cannot be used. */
    private fun useServer(): Boolean {
        status.text = serverAddressProblem(server.text.toString()) ?: ""
        if (status.text.isNotEmpty()) return false
        app.serverUrl = server.text.toString()
        return true
    }

    private fun openLobbies() {
        if (!useServer()) return
        startActivity(Intent(this, LobbyListActivity::class.java))
    }

    override fun onDestroy() {
        scope.cancel()
        super.onDestroy()
    }
}
