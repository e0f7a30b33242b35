package rps.app

import android.app.Notification
import android.app.NotificationChannel
import android.app.NotificationManager
import android.app.PendingIntent
import android.app.Service
import android.app.TaskStackBuilder
import android.content.Context
import android.content.Intent
import android.os.Build
import android.os.Handler
import android.os.IBinder
import android.os.Looper
import kotlinx.coroutines.MainScope
import kotlinx.coroutines.cancel
import kotlinx.coroutines.flow.collectLatest
import kotlinx.coroutines.flow.combine
import kotlinx.coroutines.launch
import rps.client.GameSession
import rps.client.GameUiState

/**
 * Runs in the foreground, with an ongoing notification, while the player is in a running game
 * ([RunningGames.running]): the process, and so the app-wide sessions that reveal from the vault by
 * themselves, lives on with every activity gone. It tells the player, with a notification that
 * opens the game, when a stage that needs them opens and [StageAlerts.WARN_BEFORE_MS] before its
 * deadline (not while that game's screen is in front), and stops itself once the player is out of
 * every game.
 */
class GameService : Service() {
    private val app get() = application as RpsApp
    private val scope = MainScope()
    private val alerts = HashMap<GameSession, StageAlerts>()

    /** The alerts on show, by notification id. */
    private val posted = HashSet<Int>()
    private val handler = Handler(Looper.getMainLooper())
    private val recheck = Runnable { show(app.runningGames.running.value) }
    private val notifications get() = getSystemService(Context.NOTIFICATION_SERVICE) as NotificationManager

    override fun onCreate() {
        super.onCreate()
        createChannels()
        startForeground(ONGOING_ID, ongoing(app.runningGames.running.value))
        scope.launch {
            app.runningGames.running.collectLatest { games ->
                // Every change of a running game's state, until the set of games changes; with
                // none, whether a resumed session may still turn out to be in one.
                if (games.isEmpty()) {
                    app.runningGames.connecting.collect { show(games) }
                } else {
                    combine(games.map { it.session.state }) { it }.collect { show(games) }
                }
            }
        }
    }

    /**
     * Restarted by the system after it killed the process: RpsApp resumed the moves waiting in the
     * vaults, and the service stays while those sessions connect ([RunningGames.connecting]).
     */
    override fun onStartCommand(intent: Intent?, flags: Int, startId: Int): Int = START_STICKY

    override fun onBind(intent: Intent?): IBinder? = null

    private fun show(games: List<RunningGames.Game>) {
        handler.removeCallbacks(recheck)
        if (games.isEmpty()) {
            if (app.runningGames.connecting.value) return
            posted.forEach(notifications::cancel)
            stopForegroundRemovingNotification()
            stopSelf()
            return
        }
        notifications.notify(ONGOING_ID, ongoing(games))
        val now = app.clock.nowMs()
        alerts.keys.retainAll(games.map { it.session }.toSet())
        var next: Long? = null
        for (g in games) {
            val state = g.session.state.value
            val id = ALERT_ID_BASE + (g.key.hashCode() and 0xffff)
            // Once the player moved, or the stage is over, its alert is stale.
            if (StageAlerts.movePending(state) == null && posted.remove(id)) notifications.cancel(id)
            val alert = alerts.getOrPut(g.session) { StageAlerts() }.due(state, now)
            if (alert != null && !app.runningGames.onScreen(g)) {
                notifications.notify(id, alertOf(g, alert))
                posted += id
            }
            alerts.getValue(g.session).nextCheckAt(state)?.let { at -> next = minOf(next ?: at, at) }
        }
        next?.let { handler.postDelayed(recheck, maxOf(0L, it - now)) }
    }

    override fun onDestroy() {
        handler.removeCallbacks(recheck)
        scope.cancel()
        super.onDestroy()
    }

    /**
     * One game: its lobby's name over its stage. Several: how many over each one's lobby and stage,
     * one a line when the notification is expanded.
     */
    private fun ongoing(games: List<RunningGames.Game>): Notification {
        val single = games.singleOrNull()
        val b = builder(CHANNEL_ONGOING)
        if (single != null) {
            b.setContentTitle(lobbyOf(single)).setContentText(describe(single.session.state.value))
        } else {
            val lines = games.map { getString(R.string.game_service_game_line, lobbyOf(it), describe(it.session.state.value)) }
            val title = if (games.isEmpty()) {
                getString(R.string.game_service_title) // (until the service stops)
            } else {
                resources.getQuantityString(R.plurals.game_service_games, games.size, games.size)
            }
            b.setContentTitle(title).setContentText(lines.joinToString(getString(R.string.list_separator)))
            if (lines.isNotEmpty()) b.setStyle(Notification.InboxStyle().also { s -> lines.forEach(s::addLine) })
        }
        return b.setOngoing(true)
            .setOnlyAlertOnce(true)
            .setContentIntent(single?.let(::openGame) ?: openLobbies())
            .build()
    }

    private fun lobbyOf(g: RunningGames.Game): String = g.session.lobbyName ?: getString(R.string.game_service_title)

    private fun alertOf(g: RunningGames.Game, a: StageAlert): Notification {
        val text = when (a) {
            is StageAlert.MoveOpened -> a.secondsLeft?.let { getString(R.string.game_alert_move_opened_time, a.round, it) }
                ?: getString(R.string.game_alert_move_opened, a.round)
            is StageAlert.DeadlineNear -> getString(R.string.game_alert_deadline_near, a.round, a.secondsLeft)
        }
        val b = builder(CHANNEL_ALERTS, urgent = true)
            .setContentTitle(getString(R.string.game_alert_title_lobby, lobbyOf(g)))
            .setContentText(text)
            .setAutoCancel(true)
            .setCategory(Notification.CATEGORY_REMINDER)
            .setContentIntent(openGame(g))
        // With several accounts on the phone, the alert says whose game it is (the tap opens it as that account).
        val accounts = app.accounts.all()
        if (accounts.size > 1) accounts.firstOrNull { it.id == g.accountId }?.name?.takeIf { it.isNotEmpty() }?.let(b::setSubText)
        return b.build()
    }

    private fun describe(s: GameUiState): String {
        val shown = if (s is GameUiState.Error && !s.fatal) s.previous ?: s else s
        return when (shown) {
            is GameUiState.WaitingForPlayers -> getString(R.string.game_service_registration, shown.players, shown.limit)
            is GameUiState.YourMove -> getString(R.string.game_service_your_move, shown.round)
            is GameUiState.WaitingForOthers -> getString(R.string.game_service_waiting, shown.round)
            is GameUiState.Revealing -> getString(R.string.game_service_revealing, shown.round)
            is GameUiState.RoundResult -> getString(R.string.game_service_round_over, shown.outcome.round)
            else -> getString(R.string.game_service_title)
        }
    }

    @Suppress("DEPRECATION")
    private fun stopForegroundRemovingNotification() {
        if (Build.VERSION.SDK_INT >= Build.VERSION_CODES.N) stopForeground(STOP_FOREGROUND_REMOVE) else stopForeground(true)
    }

    /** Before Android 8 (no channels) the importance is the notification's priority. */
    @Suppress("DEPRECATION")
    private fun builder(channel: String, urgent: Boolean = false): Notification.Builder {
        val b = if (Build.VERSION.SDK_INT >= Build.VERSION_CODES.O) {
            Notification.Builder(this, channel)
        } else {
            Notification.Builder(this).setPriority(if (urgent) Notification.PRIORITY_HIGH else Notification.PRIORITY_LOW)
        }
        return b.setSmallIcon(R.drawable.ic_notification)
    }

    /**
     * The game's screen as the account that plays it, above the lobby list (so Back goes there); one
     * pending intent per account and lobby, so two accounts' games never share one.
     */
    private fun openGame(g: RunningGames.Game): PendingIntent = TaskStackBuilder.create(this)
        .addNextIntent(Intent(this, LobbyListActivity::class.java))
        .addNextIntent(LobbyActivity.intent(this, g.lobbyId, g.accountId))
        .getPendingIntent(g.key.hashCode(), PendingIntent.FLAG_UPDATE_CURRENT or PendingIntent.FLAG_IMMUTABLE)!!

    private fun openLobbies(): PendingIntent =
        PendingIntent.getActivity(this, 0, Intent(this, LobbyListActivity::class.java), PendingIntent.FLAG_IMMUTABLE)

    private fun createChannels() {
        if (Build.VERSION.SDK_INT < Build.VERSION_CODES.O) return
        notifications.createNotificationChannel(
            NotificationChannel(CHANNEL_ONGOING, getString(R.string.game_channel_ongoing), NotificationManager.IMPORTANCE_LOW),
        )
        notifications.createNotificationChannel(
            NotificationChannel(CHANNEL_ALERTS, getString(R.string.game_channel_alerts), NotificationManager.IMPORTANCE_HIGH),
        )
    }

    companion object {
        const val CHANNEL_ONGOING = "game"
        const val CHANNEL_ALERTS = "your_move"
        const val ONGOING_ID = 1
        private const val ALERT_ID_BASE = 0x10000
    }
}
