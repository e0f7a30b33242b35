package rps.app

import android.app.Activity
import android.graphics.Color
import android.graphics.Typeface
import android.view.View
import android.view.ViewGroup
import android.widget.Button
import android.widget.LinearLayout
import android.widget.TextView
import okhttp3.HttpUrl.Companion.toHttpUrlOrNull
import rps.client.RpsException

/** Small helpers for views built in code (no XML layouts, no androidx). */
internal fun Activity.column(): LinearLayout = LinearLayout(this).apply {
    orientation = LinearLayout.VERTICAL
    val p = dp(16)
    setPadding(p, p, p, p)
}

internal fun Activity.dp(v: Int): Int = (v * resources.displayMetrics.density).toInt()

internal val TEXT_DARK = Color.rgb(33, 33, 33)
internal val NOTICE_RED = Color.rgb(176, 0, 32)

internal fun Activity.text(size: Float = 16f, bold: Boolean = false): TextView = TextView(this).apply {
    textSize = size
    setTextColor(TEXT_DARK)
    if (bold) setTypeface(typeface, Typeface.BOLD)
    setPadding(0, dp(4), 0, dp(4))
}

/** A line for refusals and failures: dark red, so it reads as a problem without hiding the rest. */
internal fun Activity.notice(): TextView = text(16f, bold = true).apply { setTextColor(NOTICE_RED) }

/**
 * Shows a screen's status line: a failure in red, anything else (an empty list) in the normal
 * colour; with no [message] the line takes no room.
 */
internal fun TextView.showStatus(message: String?, failure: Boolean = false) {
    text = message ?: ""
    setTextColor(if (failure) NOTICE_RED else TEXT_DARK)
    visibility = if (message == null) View.GONE else View.VISIBLE
}

internal fun Activity.button(label: String, onClick: () -> Unit): Button = Button(this).apply {
    text = label
    setAllCaps(false)
    textSize = 16f
    setOnClickListener { onClick() }
}

internal fun LinearLayout.add(v: View, weight: Float = 0f): LinearLayout {
    addView(v, LinearLayout.LayoutParams(ViewGroup.LayoutParams.MATCH_PARENT, ViewGroup.LayoutParams.WRAP_CONTENT, weight))
    return this
}

internal fun LinearLayout.addCentered(v: View): LinearLayout {
    addView(
        v,
        LinearLayout.LayoutParams(ViewGroup.LayoutParams.WRAP_CONTENT, ViewGroup.LayoutParams.WRAP_CONTENT).apply {
            gravity = android.view.Gravity.CENTER_HORIZONTAL
        },
    )
    return this
}

/** A one-off call from a screen failed (nothing retries it, unlike the game session's calls). */
internal fun describeFailure(e: RpsException): String = when (e) {
    is RpsException.Network -> "Could not reach the server. Check its address and your connection."
    else -> e.playerMessage
}

/** Why [url] cannot be a server address, or null when it can. */
internal fun serverAddressProblem(url: String): String? {
    val u = url.trim().toHttpUrlOrNull()
    return if (u == null ||
        u.pathSegments.any { it.isNotEmpty() }
    ) {
        "That is not a server address (example: http://192.168.1.20:8080)."
    } else {
        null
    }
}
