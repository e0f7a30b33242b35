package rps.app

import android.app.Activity
import android.graphics.Color
import android.graphics.drawable.ColorDrawable
import android.graphics.drawable.GradientDrawable
import android.graphics.drawable.RippleDrawable
import android.view.View
import android.view.ViewGroup
import android.view.accessibility.AccessibilityNodeInfo
import android.widget.TextView
import org.junit.Assert.fail
import kotlin.math.pow

/**
 * The rules of Google's Accessibility Test Framework that matter for these screens, checked over the
 * view tree (ATF 3.1 is published as an .aar whose dependencies are on Google's Maven, which the
 * build cannot reach): touch targets of at least 48dp, text contrast of at least 4.5:1 against
 * what is behind it, something to speak for everything clickable (and for the grid's tiles), and no
 * two clickable things described alike.
 */
object Accessibility {
    fun check(activity: Activity, screen: String) {
        val problems = mutableListOf<String>()
        val density = activity.resources.displayMetrics.density
        val window = windowBackground(activity)
        val spoken = HashMap<String, Int>()
        walk(activity.window.decorView) { v ->
            if (!v.isShown || v.width == 0 || v.height == 0) return@walk
            val text = (v as? TextView)?.let { t -> t.text?.takeIf { it.isNotEmpty() } ?: t.hint }
            val speech = (v.contentDescription ?: text)?.toString()?.trim().orEmpty()
            if (v.isClickable && v.isEnabled) {
                val w = v.width / density
                val h = v.height / density
                if (w < 47.5f || h < 47.5f) problems += "${name(v)} '$speech' is ${w.toInt()}x${h.toInt()}dp, under 48x48dp"
                if (speech.isEmpty()) {
                    problems += "${name(v)} is clickable but says nothing"
                } else {
                    spoken[speech] = (spoken[speech] ?: 0) + 1
                }
            }
            if (v is TextView && v.text.isNotEmpty()) {
                val ratio = contrast(v.currentTextColor, backgroundOf(v, window))
                if (ratio < 4.5) problems += "${name(v)} '${v.text.take(40)}' has contrast %.2f:1, under 4.5:1".format(ratio)
            }
            if (v is GridView) {
                val provider = v.accessibilityNodeProvider
                for (i in 0 until 25) {
                    val node = provider.createAccessibilityNodeInfo(i)
                    if (node?.contentDescription.isNullOrBlank()) problems += "grid tile $i says nothing"
                    if (v.enabledForInput && node?.actionList?.none { it.id == AccessibilityNodeInfo.ACTION_CLICK } != false) {
                        problems += "grid tile $i cannot be clicked by TalkBack"
                    }
                }
            }
        }
        for ((s, n) in spoken) if (n > 1) problems += "$n clickable views say '$s'"
        if (problems.isNotEmpty()) fail("accessibility of $screen:\n  " + problems.joinToString("\n  "))
    }

    private fun name(v: View) = v.javaClass.simpleName

    private fun walk(v: View, visit: (View) -> Unit) {
        visit(v)
        if (v is ViewGroup) for (i in 0 until v.childCount) walk(v.getChildAt(i), visit)
    }

    private fun windowBackground(a: Activity): Int =
        (a.window.decorView.background as? ColorDrawable)?.color ?: a.resources.getColor(R.color.background, a.theme)

    /** The colour behind [v]: its own background or the nearest ancestor's, else the window's. */
    private fun backgroundOf(v: View, window: Int): Int {
        var cur: View? = v
        while (cur != null) {
            colorOf(cur)?.let { return it }
            cur = cur.parent as? View
        }
        return window
    }

    private fun colorOf(v: View): Int? = when (val d = v.background) {
        is ColorDrawable -> d.color.takeIf { Color.alpha(it) == 255 }
        is RippleDrawable -> fill(d.getDrawable(0), v)
        is GradientDrawable -> fill(d, v)
        else -> null
    }

    /** A shape's fill for the view's state (GradientDrawable.getColor is API 24: the app compiles against 23, the tests run on 34). */
    private fun fill(d: android.graphics.drawable.Drawable?, v: View): Int? {
        val list = d?.javaClass?.getMethod("getColor")?.invoke(d) as? android.content.res.ColorStateList ?: return null
        return list.getColorForState(v.drawableState, list.defaultColor).takeIf { Color.alpha(it) == 255 }
    }

    fun contrast(a: Int, b: Int): Double {
        val la = luminance(a)
        val lb = luminance(b)
        return (maxOf(la, lb) + 0.05) / (minOf(la, lb) + 0.05)
    }

    private fun luminance(c: Int): Double {
        fun ch(v: Int) = (v / 255.0).let { if (it <= 0.03928) it / 12.92 else ((it + 0.055) / 1.055).pow(2.4) }
        return 0.2126 * ch(Color.red(c)) + 0.7152 * ch(Color.green(c)) + 0.0722 * ch(Color.blue(c))
    }
}
