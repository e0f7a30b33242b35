package rps.app

import android.app.Activity
import android.graphics.Color
import android.view.View
import android.view.ViewGroup
import android.widget.Button
import android.widget.LinearLayout
import android.widget.TextView

/** Small helpers for views built in code (no XML layouts, no androidx). */
internal fun Activity.column(): LinearLayout = LinearLayout(this).apply {
    orientation = LinearLayout.VERTICAL
    val p = dp(16)
    setPadding(p, p, p, p)
}

internal fun Activity.dp(v: Int): Int = (v * resources.displayMetrics.density).toInt()

internal fun Activity.text(size: Float = 16f, bold: Boolean = false): TextView = TextView(this).apply {
    textSize = size
    setTextColor(Color.BLACK)
    if (bold) setTypeface(typeface, android.graphics.Typeface.BOLD)
}

internal fun Activity.button(label: String, onClick: () -> Unit): Button = Button(this).apply {
    text = label
    setOnClickListener { onClick() }
}

internal fun LinearLayout.add(v: View, weight: Float = 0f): LinearLayout {
    addView(v, LinearLayout.LayoutParams(ViewGroup.LayoutParams.MATCH_PARENT, ViewGroup.LayoutParams.WRAP_CONTENT, weight))
    return this
}
