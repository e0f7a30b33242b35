package rps.app

import android.app.Activity
import android.content.Intent
import android.os.Bundle
import android.widget.LinearLayout
import android.widget.ScrollView
import kotlinx.coroutines.MainScope
import kotlinx.coroutines.cancel
import kotlinx.coroutines.launch
import rps.client.LobbyView
import rps.client.RpsException

/** Every lobby with its bet, players and stage; tap one to play in it. */
class LobbyListActivity : Activity() {
    private val scope = MainScope()
    private val app get() = application as RpsApp
    private lateinit var list: LinearLayout
    private val balance by lazy { text(18f, bold = true) }
    private val status by lazy { text() }

    override fun onCreate(savedInstanceState: Bundle?) {
        super.onCreate(savedInstanceState)
        list = column()
        val root = column()
            .add(balance)
            .add(button("Refresh") { load() })
            .add(status)
            .add(ScrollView(this).apply { addView(list) }, 1f)
        setContentView(root)
    }

    override fun onResume() {
        super.onResume()
        load()
    }

    private fun load() {
        scope.launch {
            try {
                val api = app.api()
                if (app.token != null) balance.text = "Balance: ${api.me().balance}"
                val lobbies = api.listLobbies().lobbies
                list.removeAllViews()
                for (l in lobbies) list.add(row(l))
                status.text = if (lobbies.isEmpty()) "No lobbies yet." else ""
            } catch (e: RpsException) {
                status.text = e.playerMessage
            }
        }
    }

    private fun row(l: LobbyView) = button(describe(l)) {
        startActivity(Intent(this, LobbyActivity::class.java).putExtra(LobbyActivity.EXTRA_LOBBY, l.id))
    }

    private fun describe(l: LobbyView): String {
        val g = l.game
        val players = g?.players ?: 0
        val stage = g?.stage?.wire ?: "no game"
        return "${l.name}\nbet ${l.config.betSize} - $players/${l.config.playersCountLimit} players - $stage - ${l.config.ruleset}"
    }

    override fun onDestroy() {
        scope.cancel()
        super.onDestroy()
    }
}
