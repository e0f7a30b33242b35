package rps.app

import android.app.Activity
import android.content.Intent
import android.os.Bundle
import android.os.Handler
import android.os.Looper
import android.view.Gravity
import android.view.View
import android.view.ViewGroup
import android.widget.LinearLayout
import android.widget.ScrollView
import android.widget.TextView
import kotlinx.coroutines.Job
import kotlinx.coroutines.MainScope
import kotlinx.coroutines.cancel
import kotlinx.coroutines.launch
import rps.client.ActionPayloads
import rps.client.BetBand
import rps.client.ErrorCode
import rps.client.LobbyFilter
import rps.client.LobbyView
import rps.client.RpsException
import rps.client.RulesetSummary
import rps.client.SignedAction
import rps.client.Stage
import java.util.UUID

/**
 * The lobbies as cards (name, stage and countdown, ruleset, bet, pot, players as a bar), those
 * taking players first, closed ones left out; filtered by bet and ruleset with the server's own
 * filters; read again every [REFRESH_MS] while the screen is visible. "Quick join" registers the
 * player in the game with the chosen bet closest to starting (`POST /v1/matchmaking`) and opens
 * it. Tap a card to open its lobby; "My games" opens the player's history.
 */
class LobbyListActivity : Activity() {
    private val scope = MainScope()
    private val app get() = application as RpsApp
    internal lateinit var list: LinearLayout
    internal val balance by lazy { text(Type.HEADING) }
    internal val status by lazy { notice() }
    internal val more by lazy { button(R.string.more_lobbies, primary = false) { loadMore() } }
    internal val myGames by lazy { button(R.string.my_games, primary = false) { startActivity(Intent(this, MyGamesActivity::class.java)) } }

    /**
     * Shows or hides the filters' options, which take two rows: hidden, it says which filters are
     * chosen (if any), so the first lobby stays near the top of the screen, even with large text.
     */
    internal val filtersToggle by lazy {
        plainButton(primary = false) {
            filtersShown = !filtersShown
            showFilters()
        }
    }
    private var filtersShown = false

    /** The filters' options, rebuilt when one is chosen (and when the rulesets arrive). */
    internal val betFilters by lazy { LinearLayout(this).apply { orientation = LinearLayout.VERTICAL } }
    internal val rulesetFilters by lazy { LinearLayout(this).apply { orientation = LinearLayout.VERTICAL } }

    /** Quick join: the bets of the games taking players, the button, and what became of the last try. */
    internal val joinBets by lazy { LinearLayout(this).apply { orientation = LinearLayout.VERTICAL } }
    internal val joinButton by lazy { plainButton { joinBet?.let(::quickJoin) } }
    internal val joinStatus by lazy { notice() }
    internal val joinNothing by lazy { text(Type.BODY, muted = true).apply { setText(R.string.quick_join_nothing) } }

    private var bets = BetBand.ANY
    private var ruleset: String? = null
    private var rulesets: List<RulesetSummary> = emptyList()
    private var joinBet: Long? = null

    /** The Idempotency-Key of a quick join whose answer did not arrive, kept for its retry (same bet and ruleset). */
    private var pendingJoin: Pair<Pair<Long, String?>, String>? = null
    private var balanceNow: Long? = null

    /** Pages shown (a refresh reads as many again), and the cursor of the next one. */
    private var pages = 1
    private var next: String? = null
    private var loading: Job? = null

    /** Reads of the list that arrived (for tests: the screen is complete once one has and none is under way). */
    internal var loads = 0
    internal val loaded: Boolean get() = loads > 0 && loading?.isActive != true

    /** The cards shown, with what their countdown is computed from. */
    private val rows = mutableListOf<Row>()
    private val ticker = Handler(Looper.getMainLooper())
    private val tick = object : Runnable {
        override fun run() {
            for (r in rows) showStage(r)
            ticker.postDelayed(this, 1000)
        }
    }
    private val refresh = object : Runnable {
        override fun run() {
            if (loading?.isActive != true) reload()
            ticker.postDelayed(this, REFRESH_MS)
        }
    }

    /** A lobby as loaded, the server's clock minus this device's when it was, and its card's stage chip. */
    private class Row(
        val lobby: LobbyView,
        val serverAheadMs: Long,
        val card: View,
        val chip: TextView,
        val details: String,
    )

    override fun onCreate(savedInstanceState: Bundle?) {
        super.onCreate(savedInstanceState)
        savedInstanceState?.let { s ->
            bets = BetBand.valueOf(s.getString(STATE_BETS, BetBand.ANY.name))
            ruleset = s.getString(STATE_RULESET)
            joinBet = s.getLong(STATE_JOIN_BET, -1).takeIf { it >= 0 }
            filtersShown = s.getBoolean(STATE_FILTERS_SHOWN)
        }
        title = getString(R.string.lobbies)
        list = column().apply { setPadding(0, 0, 0, 0) }
        more.visibility = View.GONE
        status.visibility = View.GONE
        joinStatus.visibility = View.GONE
        // A compact header (the title beside the balance, quick join's bets beside its name, the
        // filters folded beside My games): the first lobby is in the top third even at font scale 1.3.
        val quickJoin = card()
            .add(
                LinearLayout(this).apply {
                    orientation = LinearLayout.HORIZONTAL
                    setGravity(Gravity.CENTER_VERTICAL)
                    addView(text(Type.HEADING).apply { setText(R.string.quick_join) })
                    addView(joinBets, LinearLayout.LayoutParams(0, ViewGroup.LayoutParams.WRAP_CONTENT, 1f).apply { marginStart = dp(12) })
                },
            )
            .add(joinNothing)
            .add(joinButton)
            .add(joinStatus)
        val content = column()
            .add(spread(text(Type.TITLE).apply { setText(R.string.lobbies) }, balance))
            .add(quickJoin)
            .add(spread(filtersToggle, myGames).apply { setPadding(0, dp(8), 0, 0) })
            .add(betFilters.apply { setPadding(0, dp(8), 0, 0) })
            .add(rulesetFilters.apply { setPadding(0, dp(8), 0, 0) })
            .add(status)
            .add(list)
            .add(more)
        setContentView(ScrollView(this).apply { addView(content) })
        showFilters()
        showJoinBets(emptyList())
    }

    override fun onSaveInstanceState(outState: Bundle) {
        super.onSaveInstanceState(outState)
        outState.putString(STATE_BETS, bets.name)
        outState.putString(STATE_RULESET, ruleset)
        joinBet?.let { outState.putLong(STATE_JOIN_BET, it) }
        outState.putBoolean(STATE_FILTERS_SHOWN, filtersShown)
    }

    override fun onResume() {
        super.onResume()
        reload()
        ticker.post(tick)
        ticker.postDelayed(refresh, REFRESH_MS)
    }

    override fun onPause() {
        ticker.removeCallbacks(tick)
        ticker.removeCallbacks(refresh)
        super.onPause()
    }

    private val filter get() = LobbyFilter(bets, ruleset)

    /** Reads the balance and the lobbies again (as many pages as are shown), replacing what is shown. */
    private fun reload() {
        loading?.cancel()
        loading = scope.launch {
            try {
                val b = app.backend()
                val me = b.player.me()
                balanceNow = me.balance
                balance.text = getString(R.string.balance, me.balance)
                if (rulesets.isEmpty()) {
                    rulesets = b.directory.listRulesets()
                    showFilters()
                }
                val shown = mutableListOf<Pair<LobbyView, Long>>()
                var after: String? = null
                var read = 0
                do {
                    val page = b.directory.listLobbies(after, filter)
                    val now = app.clock.nowMs()
                    page.lobbies.forEach { shown += it to it.serverTime - now }
                    after = page.next
                    read++
                } while (after != null && read < pages)
                list.removeAllViews()
                rows.clear()
                show(shown, after)
                loads++
            } catch (e: RpsException) {
                status.showStatus(describeFailure(e), failure = true)
            }
        }
    }

    /** Adds the page after the last one shown. */
    private fun loadMore() {
        val after = next ?: return
        if (loading?.isActive == true) return
        loading = scope.launch {
            try {
                val page = app.backend().directory.listLobbies(after, filter)
                val now = app.clock.nowMs()
                pages++
                show(page.lobbies.map { it to it.serverTime - now }, page.next)
            } catch (e: RpsException) {
                status.showStatus(describeFailure(e), failure = true)
            }
        }
    }

    /** Adds [lobbies] (with how far the server's clock was ahead) below the cards shown. */
    private fun show(lobbies: List<Pair<LobbyView, Long>>, nextPage: String?) {
        // The server sends those taking players first; a stable sort keeps that within what was read.
        for ((l, ahead) in lobbies.filter { !it.first.closed }.sortedBy { !isJoinable(it.first) }) list.addCard(lobbyCard(l, ahead))
        next = nextPage
        more.visibility = if (nextPage != null) View.VISIBLE else View.GONE
        val empty = if (filter == LobbyFilter()) R.string.no_lobbies else R.string.no_lobbies_filtered
        status.showStatus(if (rows.isEmpty()) getString(empty) else null)
        showJoinBets(rows.map { it.lobby }.filter { isJoinable(it) }.map { it.config.betSize }.distinct().sorted())
    }

    private fun lobbyCard(l: LobbyView, serverAheadMs: Long): View {
        val g = l.game
        val rulesetName = rulesets.firstOrNull { it.id == l.config.ruleset }?.name ?: l.config.ruleset
        val facts = getString(R.string.lobby_facts, rulesetName, l.config.betSize, g?.pot ?: 0)
        val playing = g != null && (g.stage == Stage.MOVES || g.stage == Stage.REVEAL)
        val players = when {
            g == null -> getString(R.string.lobby_players, 0, l.config.playersCountLimit)
            playing -> getString(R.string.lobby_still_in, g.remaining, g.players)
            else -> getString(R.string.lobby_players, g.players, l.config.playersCountLimit)
        }
        val bar = FillBar(this).apply {
            filled = if (playing) g!!.remaining else g?.players ?: 0
            total = if (playing) g!!.players else l.config.playersCountLimit
        }
        val chip = chip(tone(l))
        val card = card {
            startActivity(Intent(this, LobbyActivity::class.java).putExtra(LobbyActivity.EXTRA_LOBBY, l.id))
        }
            .add(spread(text(Type.HEADING).apply { text = l.name }, chip))
            .add(text(Type.BODY).apply { text = facts })
            .add(spread(bar, text(Type.LABEL, muted = true).apply { text = players }))
        rows += Row(l, serverAheadMs, card, chip, getString(R.string.lobby_details, facts, players)).also(::showStage)
        return card
    }

    private fun tone(l: LobbyView): ChipTone = when {
        isJoinable(l) -> ChipTone.INVITING
        l.game?.stage?.isOpen == true -> ChipTone.ACTIVE
        else -> ChipTone.QUIET
    }

    /** The stage and its countdown, on the chip and in what TalkBack says of the card. */
    private fun showStage(r: Row) {
        val l = r.lobby
        val g = l.game
        val stage = when {
            g == null -> getString(R.string.stage_waiting)
            isJoinable(l) -> getString(R.string.stage_taking_players)
            g.stage == Stage.REGISTRATION -> getString(R.string.stage_full)
            g.stage == Stage.MOVES -> getString(R.string.stage_moves, g.round)
            g.stage == Stage.REVEAL -> getString(R.string.stage_reveals, g.round)
            else -> getString(R.string.stage_over)
        }
        // The deadline is in the server's clock: now on the server is this device's now plus the
        // difference seen when the page was loaded. Rounded up, as on the lobby screen.
        val leftMs = g?.takeIf { it.stage.isOpen }?.deadlineMs?.let { it - (app.clock.nowMs() + r.serverAheadMs) }
        r.chip.text = leftMs?.takeIf { it > 0 }?.let { getString(R.string.stage_time_left, stage, timeLeft((it + 999) / 1000)) } ?: stage
        r.card.contentDescription = getString(R.string.lobby_description, l.name, r.chip.text, r.details)
    }

    private fun timeLeft(seconds: Long): String =
        if (seconds >= 60) getString(R.string.time_min_sec, seconds / 60, seconds % 60) else getString(R.string.time_sec, seconds)

    private fun showFilters() {
        val chosen = listOfNotNull(
            betLabel(bets).takeIf { bets != BetBand.ANY },
            ruleset?.let { id -> rulesets.firstOrNull { it.id == id }?.name ?: id },
        )
        filtersToggle.text = when {
            filtersShown -> getString(R.string.filters_hide)
            chosen.isEmpty() -> getString(R.string.filters)
            else -> getString(R.string.filters_chosen, chosen.joinToString(getString(R.string.list_separator)))
        }
        betFilters.visibility = if (filtersShown) View.VISIBLE else View.GONE
        rulesetFilters.visibility = betFilters.visibility
        betFilters.removeAllViews()
        betFilters.addView(
            choiceRow(
                BetBand.entries.map { band ->
                    choice(betLabel(band), band == bets) {
                        bets = band
                        filtersChanged()
                    }
                },
            ),
        )
        rulesetFilters.removeAllViews()
        val options = listOf<RulesetSummary?>(null) + rulesets
        rulesetFilters.addView(
            choiceRow(
                options.map { r ->
                    choice(r?.name ?: getString(R.string.ruleset_any), r?.id == ruleset) {
                        ruleset = r?.id
                        filtersChanged()
                    }
                },
            ),
        )
    }

    private fun betLabel(band: BetBand): String = when {
        band.min == null && band.max == null -> getString(R.string.bet_any)
        band.min == null -> getString(R.string.bet_up_to, band.max)
        band.max == null -> getString(R.string.bet_over, band.min!! - 1)
        else -> getString(R.string.bet_between, band.min, band.max)
    }

    private fun filtersChanged() {
        showFilters()
        pages = 1
        list.removeAllViews()
        rows.clear()
        reload()
    }

    /** The bets a quick join offers: those of the games taking players among the lobbies shown. */
    private fun showJoinBets(offered: List<Long>) {
        if (joinBet !in offered) joinBet = offered.firstOrNull()
        joinBets.removeAllViews()
        joinBets.addView(
            choiceRow(
                offered.map { bet ->
                    choice(getString(R.string.quick_join_bet_choice, bet), bet == joinBet) {
                        joinBet = bet
                        showJoinBets(offered)
                    }
                },
            ),
        )
        val any = offered.isNotEmpty()
        joinBets.visibility = if (any) View.VISIBLE else View.GONE
        joinButton.visibility = if (any) View.VISIBLE else View.GONE
        joinNothing.visibility = if (any) View.GONE else View.VISIBLE
        joinBet?.let { joinButton.text = getString(R.string.quick_join_bet, it) }
    }

    /** Joins the game with [bet] (and the ruleset filtered on) closest to starting, and opens it. */
    private fun quickJoin(bet: Long) {
        val choice = bet to ruleset
        val key = pendingJoin?.takeIf { it.first == choice }?.second ?: UUID.randomUUID().toString()
        pendingJoin = choice to key
        joinButton.isEnabled = false
        joinStatus.showStatus(getString(R.string.quick_join_joining, bet))
        scope.launch {
            try {
                val auth = app.account?.let { app.signerOf(it) }
                    ?.sign(SignedAction.QUICK_JOIN, ActionPayloads.quickJoin(bet, choice.second), key)
                val lobby = app.backend().directory.quickJoin(bet, choice.second, key, auth)
                pendingJoin = null
                joinStatus.showStatus(null)
                startActivity(Intent(this@LobbyListActivity, LobbyActivity::class.java).putExtra(LobbyActivity.EXTRA_LOBBY, lobby.id))
            } catch (e: RpsException) {
                // Whether a lost answer registered the player is known only to the server: the
                // retry carries the same key, so it cannot register them in a second game.
                if (!e.retryable) pendingJoin = null
                val code = (e as? RpsException.Problem)?.code
                val message = when {
                    code == ErrorCode.INSUFFICIENT_FUNDS && balanceNow != null -> getString(R.string.quick_join_no_funds, balanceNow, bet)
                    code == ErrorCode.NO_MATCH -> getString(R.string.quick_join_no_match, bet)
                    else -> describeFailure(e)
                }
                joinStatus.showStatus(message, failure = true)
                if (code == ErrorCode.NO_MATCH) reload()
            } finally {
                joinButton.isEnabled = true
            }
        }
    }

    override fun onDestroy() {
        ticker.removeCallbacksAndMessages(null)
        scope.cancel()
        super.onDestroy()
    }

    companion object {
        /** How often the list is read again while it is on screen. */
        const val REFRESH_MS = 5_000L

        private const val STATE_BETS = "bets"
        private const val STATE_RULESET = "ruleset"
        private const val STATE_JOIN_BET = "joinBet"
        private const val STATE_FILTERS_SHOWN = "filtersShown"

        /** Whether a player could join [l]'s game now (as the server's `open` filter says). */
        fun isJoinable(l: LobbyView): Boolean =
            l.game?.let { it.stage == Stage.REGISTRATION && it.players < l.config.playersCountLimit } ?: false
    }
}
