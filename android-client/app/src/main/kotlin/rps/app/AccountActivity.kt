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

/** Start screen: the server to use, account creation, and the balance of the current account. */
class AccountActivity : Activity() {
    private val scope = MainScope()
    private val app get() = application as RpsApp

    override fun onCreate(savedInstanceState: Bundle?) {
        super.onCreate(savedInstanceState)
        val server = EditText(this).apply {
            setText(app.serverUrl)
            inputType = InputType.TYPE_TEXT_VARIATION_URI
            hint = "Server URL"
        }
        val name = EditText(this).apply { hint = "Your name" }
        val status = text()
        val balance = text(20f, bold = true)
        val root = column()
            .add(text(24f, bold = true).apply { text = "Rock Paper Scissors Lizard Spock" })
            .add(server)
            .add(name)
            .add(button("Create account") {
                app.serverUrl = server.text.toString()
                scope.launch {
                    try {
                        val created = app.api().createAccount(name.text.toString().ifBlank { "player" })
                        app.token = created.token
                        status.text = "Account ${created.account.name} created. Ask the operator to credit it."
                        balance.text = "Balance: ${created.account.balance}"
                    } catch (e: RpsException) {
                        status.text = e.playerMessage
                    }
                }
            })
            .add(balance)
            .add(button("Lobbies") {
                app.serverUrl = server.text.toString()
                startActivity(Intent(this, LobbyListActivity::class.java))
            })
            .add(status)
        setContentView(root)
        if (app.token != null) {
            scope.launch {
                try {
                    val me = app.api().me()
                    balance.text = "${me.name}: balance ${me.balance}"
                } catch (e: RpsException) {
                    status.text = e.playerMessage
                }
            }
        }
    }

    override fun onDestroy() {
        scope.cancel()
        super.onDestroy()
    }
}
