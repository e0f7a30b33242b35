package rps.app

import android.app.Notification
import android.app.NotificationManager
import android.content.Intent
import org.robolectric.Robolectric
import org.robolectric.Shadows.shadowOf
import org.robolectric.android.controller.ServiceController

/** The game service as Android would run it under Robolectric, and the notifications it shows. */
object GameNotifications {
    /** Creates and starts the service the app asked Android to start (fails when it asked for none). */
    fun startedService(app: RpsApp): ServiceController<GameService> {
        val intent: Intent = shadowOf(app).nextStartedService ?: throw AssertionError("the game service was not started")
        check(intent.component?.className == GameService::class.java.name) { "started $intent, not the game service" }
        return Robolectric.buildService(GameService::class.java, intent).create().startCommand(0, 1)
    }

    fun shown(app: RpsApp, channel: String): List<Notification> =
        shadowOf(app.getSystemService(NotificationManager::class.java)).allNotifications.filter { it.channelId == channel }

    val Notification.text: String get() = extras.getCharSequence(Notification.EXTRA_TEXT).toString()

    /** The text of the ongoing notification (one while the service runs). */
    fun ongoingText(app: RpsApp): String? = shown(app, GameService.CHANNEL_ONGOING).singleOrNull()?.text

    /** The title of the ongoing notification (app-fixes). */
    fun ongoingTitle(app: RpsApp): String? =
        shown(app, GameService.CHANNEL_ONGOING).singleOrNull()?.extras?.getCharSequence(Notification.EXTRA_TITLE)?.toString()

    /** The alert on show, if any (one a game). */
    fun alert(app: RpsApp): Notification? = shown(app, GameService.CHANNEL_ALERTS).singleOrNull()
}
