package rps.app

import android.Manifest
import android.app.Activity
import android.content.Context
import android.content.Intent
import android.content.SharedPreferences
import android.content.pm.PackageManager
import android.os.Build
import android.provider.Settings

/**
 * Android 13+'s permission to post notifications. It is asked for once, from the screen in front
 * when a game starts, and never again by itself: that it was asked is kept in the app's
 * preferences, so a refusal holds in every later process too. After a refusal the account screen
 * says notifications are off and offers them ([offer]).
 */
class NotifyPermission(private val prefs: SharedPreferences) {
    private val asked: Boolean get() = prefs.getBoolean(KEY_ASKED, false)

    fun granted(c: Context): Boolean = Build.VERSION.SDK_INT < Build.VERSION_CODES.TIRAMISU ||
        c.checkSelfPermission(Manifest.permission.POST_NOTIFICATIONS) == PackageManager.PERMISSION_GRANTED

    /** Whether the player was asked and said no (or revoked it since): the account screen offers it then. */
    fun refused(c: Context): Boolean = asked && !granted(c)

    /** Asks from [a] unless it is granted or was ever asked for. */
    fun askOnce(a: Activity) {
        if (granted(a) || asked) return
        prefs.edit().putBoolean(KEY_ASKED, true).apply()
        a.requestPermissions(arrayOf(Manifest.permission.POST_NOTIFICATIONS), REQUEST)
    }

    /**
     * The player asked for notifications: Android's dialog again while it still shows it after a
     * refusal, the app's notification settings once it no longer does.
     */
    fun offer(a: Activity) {
        if (granted(a)) return
        if (a.shouldShowRequestPermissionRationale(Manifest.permission.POST_NOTIFICATIONS)) {
            a.requestPermissions(arrayOf(Manifest.permission.POST_NOTIFICATIONS), REQUEST)
            return
        }
        a.startActivity(Intent(Settings.ACTION_APP_NOTIFICATION_SETTINGS).putExtra(Settings.EXTRA_APP_PACKAGE, a.packageName))
    }

    companion object {
        const val REQUEST = 7301
        private const val KEY_ASKED = "notify_permission_asked"
    }
}
