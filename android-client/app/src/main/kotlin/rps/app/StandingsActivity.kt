package rps.app

import android.app.Activity
import android.os.Bundle
import android.view.View
import android.widget.LinearLayout
import android.widget.ScrollView
import kotlinx.coroutines.MainScope
import kotlinx.coroutines.cancel
import rps.client.Standing
import rps.client.StandingsOrder
import rps.client.StandingsPeriod

/**
 * The standings (`GET /v1/leaderboard`), best first, a page at a time: ranked by games won or by
 * the net amount, over every game or the last 30 or 7 days. The player's own place is marked; a
 * card opens that player's profile.
 */
class StandingsActivity : Activity() {
    private val scope = MainScope()
    private val app get() = application as RpsApp
    private var by = StandingsOrder.WINS
    private var period = StandingsPeriod.ALL
    internal val choices by lazy { LinearLayout(this).apply { orientation = LinearLayout.VERTICAL } }
    internal val standings by lazy {
        PagedList<Standing>(this, scope, R.string.more_standings, R.string.no_standings, { after ->
            app.backend().history.standings(by, period, after).let { it.standings to it.next }
        }) { card(it) }
    }

    override fun onCreate(savedInstanceState: Bundle?) {
        super.onCreate(savedInstanceState)
        savedInstanceState?.let { s ->
            by = StandingsOrder.valueOf(s.getString(STATE_BY, by.name))
            period = StandingsPeriod.valueOf(s.getString(STATE_PERIOD, period.name))
        }
        title = getString(R.string.standings)
        setContentView(
            ScrollView(this).apply {
                addView(
                    column()
                        .add(text(Type.TITLE).apply { setText(R.string.standings) })
                        .add(choices)
                        .add(standings.status)
                        .add(standings.list)
                        .add(standings.more),
                )
            },
        )
        showChoices()
        standings.load()
    }

    override fun onSaveInstanceState(outState: Bundle) {
        super.onSaveInstanceState(outState)
        outState.putString(STATE_BY, by.name)
        outState.putString(STATE_PERIOD, period.name)
    }

    private fun showChoices() {
        choices.removeAllViews()
        choices.addView(
            choiceRow(
                StandingsOrder.entries.map { o ->
                    choice(getString(if (o == StandingsOrder.WINS) R.string.by_wins else R.string.by_net), o == by) {
                        by = o
                        changed()
                    }
                },
            ),
        )
        choices.addView(
            choiceRow(
                StandingsPeriod.entries.map { p ->
                    choice(getString(periodLabel(p)), p == period) {
                        period = p
                        changed()
                    }
                },
            ).apply { setPadding(0, dp(8), 0, 0) },
        )
    }

    private fun periodLabel(p: StandingsPeriod) = when (p) {
        StandingsPeriod.ALL -> R.string.period_all
        StandingsPeriod.DAYS_30 -> R.string.period_30d
        StandingsPeriod.DAYS_7 -> R.string.period_7d
    }

    private fun changed() {
        showChoices()
        standings.load()
    }

    private fun card(s: Standing): View {
        val title = text(Type.HEADING).apply { text = getString(R.string.standing_title, s.position, s.name) }
        val you = chip(ChipTone.ACTIVE).apply { setText(R.string.standing_you) }
        return card { startActivity(ProfileActivity.intent(this, s.accountId)) }
            .add(if (s.accountId == app.account?.id) spread(title, you) else title)
            .add(text(Type.BODY).apply { text = getString(R.string.standing_facts, s.games, s.wins, signed(s.net)) })
            .spoken()
    }

    override fun onDestroy() {
        scope.cancel()
        super.onDestroy()
    }

    companion object {
        private const val STATE_BY = "by"
        private const val STATE_PERIOD = "period"
    }
}
