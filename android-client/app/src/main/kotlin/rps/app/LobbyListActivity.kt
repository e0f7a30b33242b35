package rps.app

import android.app.Activity
import android.content.Intent
import android.os.Bundle
import android.os.Handler
import android.os.Looper
import android.view.View
import android.view.ViewGroup
import android.widget.Button
import android.widget.LinearLayout
import android.widget.ScrollView
import kotlinx.coroutines.MainScope
import kotlinx.coroutines.cancel
import kotlinx.coroutines.launch
import rps.client.LobbyView
import rps.client.RpsException
import rps.client.Stage

/**
 * The lobbies, a page at a time (the server sends at most 100): those taking players first, then
 * those playing; closed lobbies are left out. Each shows its bet, players, stage and a countdown
 * that ticks every second; tap one to play in it. "My games" opens the player's history.
 */
class LobbyListActivity : Activity() {
    private val scope = MainScope()
    private val app get() = application as RpsApp
    internal lateinit var list: LinearLayout
    internal val balance by lazy { text(Type.HEADING) }
    internal val status by lazy { notice() }
    internal val more by lazy { button(R.string.more_lobbies, primary = false) { load(next) } }
    internal val myGames by lazy { button(R.string.my_games, primary = false) { startActivity(Intent(this, MyGamesActivity::class.java)) } }
    private var next: String? = null

    /** The rows shown, with what their countdown is computed from. */
    private val rows = mutableListOf<Row>()
    private val ticker = Handler(Looper.getMainLooper())
    private val tick = object : Runnable {
        override fun run() {
            for (r in rows) r.button.text = describe(r)
            ticker.postDelayed(this, 1000)
        }
    }

    /** A lobby as loaded, and the server's clock minus this device's when it was. */
    private class Row(val lobby: LobbyView, val serverAheadMs: Long, val button: Button)

    override fun onCreate(savedInstanceState: Bundle?) {
        super.onCreate(savedInstanceState)
        title = getString(R.string.lobbies)
        list = column().apply { setPadding(0, 0, 0, 0) }
        more.visibility = View.GONE
        status.visibility = View.GONE
        val content = column().apply { setPadding(0, 0, 0, 0) }.add(list).add(more)
        setContentView(
            column()
                .add(text(Type.TITLE).apply { setText(R.string.lobbies) })
                .add(balance)
                .add(
                    LinearLayout(this).apply {
                        orientation = LinearLayout.HORIZONTAL
                        addView(
                            button(R.string.refresh, primary = false) {
                                load(null)
                            },
                            LinearLayout.LayoutParams(0, ViewGroup.LayoutParams.WRAP_CONTENT, 1f).apply { marginEnd = dp(8) },
                        )
                        addView(myGames, LinearLayout.LayoutParams(0, ViewGroup.LayoutParams.WRAP_CONTENT, 1f))
                    },
                )
                .add(status)
                .add(ScrollView(this).apply { addView(content) }, 1f),
        )
    }

    override fun onResume() {
        super.onResume()
        load(null)
        ticker.post(tick)
    }

    override fun onPause() {
        ticker.removeCallbacks(tick)
        super.onPause()
    }

    /** Loads the first page ([after] null, replacing the list) or the page after [after]. */
    private fun load(after: String?) {
        scope.launch {
            try {
                val b = app.backend()
                if (after == null) balance.text = getString(R.string.balance, b.player.me().balance)
                val page = b.directory.listLobbies(after)
                val loadedAt = app.clock.nowMs()
                if (after == null) {
                    list.removeAllViews()
                    rows.clear()
                }
                val shown = page.lobbies.filter { !it.closed }.sortedBy { order(it) }
                for (l in shown) list.add(row(l, l.serverTime - loadedAt))
                next = page.next
                more.visibility = if (page.next != null) View.VISIBLE else View.GONE
                status.showStatus(if (after == null && shown.isEmpty()) getString(R.string.no_lobbies) else null)
            } catch (e: RpsException) {
                status.showStatus(describeFailure(e), failure = true)
            }
        }
    }

    private fun order(l: LobbyView): Int = when (l.game?.stage) {
        Stage.REGISTRATION -> 0
        null -> 1
        else -> 2
    }

    private fun row(l: LobbyView, serverAheadMs: Long): Button {
        val b = plainButton(primary = false) {
            startActivity(Intent(this, LobbyActivity::class.java).putExtra(LobbyActivity.EXTRA_LOBBY, l.id))
        }.apply { gravity = android.view.Gravity.START or android.view.Gravity.CENTER_VERTICAL }
        rows += Row(l, serverAheadMs, b).also { b.text = describe(it) }
        return b
    }

    private fun describe(r: Row): String {
        val l = r.lobby
        val g = l.game
        val stage = when (g?.stage) {
            Stage.REGISTRATION -> getString(R.string.stage_taking_players)
            Stage.MOVES -> getString(R.string.stage_moves, g.round)
            Stage.REVEAL -> getString(R.string.stage_reveals, g.round)
            else -> getString(R.string.stage_waiting)
        }
        // The deadline is in the server's clock: now on the server is this device's now plus the
        // difference seen when the page was loaded. Rounded up, as on the lobby screen.
        val leftMs = g?.deadlineMs?.let { it - (app.clock.nowMs() + r.serverAheadMs) }
        val line = leftMs?.takeIf { it > 0 }?.let { getString(R.string.seconds_left, stage, (it + 999) / 1000) } ?: stage
        return getString(R.string.lobby_row, l.name, l.config.betSize, g?.players ?: 0, l.config.playersCountLimit, line)
    }

    override fun onDestroy() {
        scope.cancel()
        super.onDestroy()
    }
}
