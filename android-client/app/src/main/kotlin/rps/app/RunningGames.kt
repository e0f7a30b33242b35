package rps.app

import android.app.Activity
import android.app.Application
import android.content.Intent
import android.os.Build
import android.os.Bundle
import android.util.Log
import kotlinx.coroutines.Job
import kotlinx.coroutines.flow.MutableStateFlow
import kotlinx.coroutines.flow.StateFlow
import kotlinx.coroutines.flow.asStateFlow
import kotlinx.coroutines.launch
import rps.client.GameSession
import rps.client.GameUiState

/**
 * The games the player is in, whatever screen is open: [RpsApp] hands every session it creates to
 * [follow]. While at least one of them is in a running game ([StageAlerts.inRunningGame]),
 * [GameService] runs in the foreground and keeps the process, so the app-wide sessions go on
 * revealing by themselves with every activity gone; the service stops itself when [running] is
 * empty. The first time a game starts on Android 13+, the screen in front asks for the permission
 * to post notifications (once, ever: [NotifyPermission]).
 */
class RunningGames(private val app: RpsApp, private val notifyPermission: NotifyPermission = app.notifyPermission) :
    Application.ActivityLifecycleCallbacks {
    /** A followed session: [key] is RpsApp's (account and lobby); [accountId] the account it plays as. */
    class Game(val key: String, val accountId: String, val lobbyId: String, val session: GameSession)

    private val followed = HashMap<String, Pair<Game, Job>>()
    private val _running = MutableStateFlow<List<Game>>(emptyList())

    /** The followed sessions in a running game, in the order they were followed. */
    val running: StateFlow<List<Game>> = _running.asStateFlow()

    private val _connecting = MutableStateFlow(false)

    /**
     * Whether a followed session does not know yet whether the player is in its game: after the
     * system restarted the killed process, RpsApp resumes the moves waiting in the vaults, and the
     * service waits for those sessions before it decides to stop.
     */
    val connecting: StateFlow<Boolean> = _connecting.asStateFlow()

    /** The activity in front, if any. */
    private var resumed: Activity? = null

    /** Follows [session] (replacing the one [key] had); all on the main thread. */
    fun follow(key: String, accountId: String, lobbyId: String, session: GameSession) {
        followed.remove(key)?.second?.cancel()
        followed[key] = Game(key, accountId, lobbyId, session) to app.scope.launch { session.state.collect { update() } }
        update()
    }

    /** Stops following [key]'s session (it was stopped: a sign-out, a new token). */
    fun forget(key: String) {
        followed.remove(key)?.second?.cancel()
        update()
    }

    fun forgetAll() {
        followed.keys.toList().forEach(::forget)
    }

    /** Whether [g]'s screen (its lobby, as its account) is the one in front: then the player needs no notification. */
    fun onScreen(g: Game): Boolean = (resumed as? LobbyActivity)?.shows(g.session) == true

    private fun update() {
        val now = followed.values.map { it.first }.filter { StageAlerts.inRunningGame(it.session.state.value) }
        val was = _running.value
        if (now.map { it.key } != was.map { it.key } || now.zip(was).any { (a, b) -> a.session !== b.session }) _running.value = now
        _connecting.value = followed.values.any { it.first.session.state.value is GameUiState.Connecting }
        if (now.isNotEmpty() && was.isEmpty()) {
            startService()
            resumed?.let(::askToNotify)
        }
    }

    private fun startService() {
        val intent = Intent(app, GameService::class.java)
        try {
            if (Build.VERSION.SDK_INT >= Build.VERSION_CODES.O) app.startForegroundService(intent) else app.startService(intent)
        } catch (e: IllegalStateException) {
            // Android 12+ refuses a foreground service started from the background (a session
            // resumed while no screen is open): the sessions still run while the process lives.
            Log.w(TAG, "game service not started", e)
        }
    }

    /** Android 13+: notifications need the player's permission, asked once ever, from a screen ([NotifyPermission]). */
    private fun askToNotify(a: Activity) = notifyPermission.askOnce(a)

    override fun onActivityResumed(activity: Activity) {
        resumed = activity
        if (_running.value.isNotEmpty()) askToNotify(activity)
    }

    override fun onActivityPaused(activity: Activity) {
        if (resumed === activity) resumed = null
    }

    override fun onActivityCreated(activity: Activity, savedInstanceState: Bundle?) {}
    override fun onActivityStarted(activity: Activity) {}
    override fun onActivityStopped(activity: Activity) {}
    override fun onActivitySaveInstanceState(activity: Activity, outState: Bundle) {}
    override fun onActivityDestroyed(activity: Activity) {}

    companion object {
        private const val TAG = "RunningGames"
    }
}
