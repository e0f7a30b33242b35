package rps.app

import android.app.Activity
import android.content.Intent
import android.os.Bundle
import android.view.View
import android.widget.LinearLayout
import android.widget.ScrollView
import kotlinx.coroutines.MainScope
import kotlinx.coroutines.cancel
import kotlinx.coroutines.launch
import rps.client.RpsException
import rps.client.LobbyView
import rps.client.Stage

/**
 * The lobbies, a page at a time (the server sends at most 100): those taking players first, then
 * those playing; closed lobbies are left out. Each shows its bet, players, stage and countdown;
 * tap one to play in it.
 */
class LobbyListActivity : Activity() {
    private val scope = MainScope()
    private val app get() = application as RpsApp
    internal lateinit var list: LinearLayout
    internal val balance by lazy { text(18f, bold = true) }
    internal val status by lazy { notice() }
    internal val more by lazy { button("More lobbies") { load(next) } }
    private var next: String? = null

    override fun onCreate(savedInstanceState: Bundle?) {
        super.onCreate(savedInstanceState)
        title = "Lobbies"
        list = column().apply { setPadding(0, 0, 0, 0) }
        more.visibility = View.GONE
        val content = column().apply { setPadding(0, 0, 0, 0) }.add(list).add(more)
        setContentView(
            column()
                .add(balance)
                .add(button("Refresh") { load(null) })
                .add(status)
                .add(ScrollView(this).apply { addView(content) }, 1f),
        )
    }

    override fun onResume() {
        super.onResume()
        load(null)
    }

    /** Loads the first page ([after] null, replacing the list) or the page after [after]. */
    private fun load(after: String?) {
        scope.launch {
            try {
                val b = app.backend()
                if (after == null) balance.text = "Balance: ${b.player.me().balance}"
                val page = b.directory.listLobbies(after)
                if (after == null) list.removeAllViews()
                val shown = page.lobbies.filter { !it.closed }.sortedBy { order(it) }
                for (l in shown) list.add(row(l))
                next = page.next
                more.visibility = if (page.next != null) View.VISIBLE else View.GONE
                status.text = if (after == null && shown.isEmpty()) "No open lobbies yet." else ""
            } catch (e: RpsException) {
                status.text = describeFailure(e)
            }
        }
    }

    private fun order(l: LobbyView): Int = when (l.game?.stage) {
        Stage.REGISTRATION -> 0
        null -> 1
        else -> 2
    }

    private fun row(l: LobbyView) = button(describe(l)) {
        startActivity(Intent(this, LobbyActivity::class.java).putExtra(LobbyActivity.EXTRA_LOBBY, l.id))
    }.apply { gravity = android.view.Gravity.START or android.view.Gravity.CENTER_VERTICAL }

    private fun describe(l: LobbyView): String {
        val g = l.game
        val stage = when (g?.stage) {
            Stage.REGISTRATION -> "taking players"
            Stage.MOVES -> "round ${g.round}: moves"
            Stage.REVEAL -> "round ${g.round}: reveals"
            else -> "waiting for a game"
        }
        // Counted in the server's clock, from the moment it answered.
        val left = g?.deadlineMs?.let { (it - l.serverTime) / 1000 }?.takeIf { it >= 0 }?.let { " - ${it} s left" } ?: ""
        return "${l.name}\nBet ${l.config.betSize} - ${g?.players ?: 0}/${l.config.playersCountLimit} players\n$stage$left"
    }

    override fun onDestroy() {
        scope.cancel()
        super.onDestroy()
    }
}
