package rps.app

import android.app.Activity
import android.content.Context
import android.content.Intent
import android.os.Bundle
import android.view.View
import android.widget.ScrollView
import kotlinx.coroutines.Job
import kotlinx.coroutines.MainScope
import kotlinx.coroutines.cancel
import kotlinx.coroutines.launch
import rps.client.MyGame
import rps.client.Profile
import rps.client.RpsException

/**
 * A player's profile (`GET /v1/accounts/{id}`): name, since when, settled games played and won,
 * the net amount, the balance when it is the player's own; then their games, as on "My games".
 */
class ProfileActivity : Activity() {
    private val scope = MainScope()
    private val app get() = application as RpsApp
    private val accountId by lazy { intent.getStringExtra(EXTRA_ACCOUNT) ?: error("no account") }
    internal val name by lazy { text(Type.TITLE) }
    internal val facts by lazy { text(Type.BODY) }
    internal val since by lazy { text(Type.LABEL, muted = true) }
    internal val status by lazy { notice().apply { visibility = View.GONE } }
    internal val games by lazy {
        PagedList<MyGame>(this, scope, R.string.more_games, R.string.no_games_of_player, { after ->
            app.backend().history.accountGames(accountId, after).let { it.games to it.next }
        }) { gameCard(it) }
    }
    private var reading: Job? = null

    /** The profile and the first page of games arrived (for tests). */
    internal val loaded: Boolean get() = reading?.isCompleted == true && name.text.isNotEmpty() && games.loaded

    override fun onCreate(savedInstanceState: Bundle?) {
        super.onCreate(savedInstanceState)
        title = getString(R.string.profile)
        setContentView(
            ScrollView(this).apply {
                addView(
                    column()
                        .add(card().add(name).add(since).add(facts))
                        .add(status)
                        .add(text(Type.HEADING).apply { setText(R.string.games_heading) })
                        .add(games.status)
                        .add(games.list)
                        .add(games.more),
                )
            },
        )
        reading = scope.launch {
            try {
                show(app.backend().history.profile(accountId))
            } catch (e: RpsException) {
                status.showStatus(describeFailure(e), failure = true)
            }
        }
        games.load()
    }

    private fun show(p: Profile) {
        name.text = p.name
        since.text = getString(R.string.member_since, dateTime(p.memberSinceMs))
        val results = getString(R.string.profile_facts, p.gamesPlayed, p.gamesWon, signed(p.net))
        facts.text = p.balance?.let { getString(R.string.profile_facts_own, results, it) } ?: results
    }

    override fun onDestroy() {
        scope.cancel()
        super.onDestroy()
    }

    companion object {
        const val EXTRA_ACCOUNT = "account"

        fun intent(c: Context, accountId: String): Intent = Intent(c, ProfileActivity::class.java).putExtra(EXTRA_ACCOUNT, accountId)
    }
}
