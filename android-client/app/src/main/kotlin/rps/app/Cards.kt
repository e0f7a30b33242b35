package rps.app

import android.app.Activity
import android.content.Context
import android.graphics.Canvas
import android.graphics.Paint
import android.graphics.RectF
import android.graphics.drawable.GradientDrawable
import android.util.TypedValue
import android.view.View
import android.view.ViewGroup
import android.widget.Button
import android.widget.HorizontalScrollView
import android.widget.LinearLayout
import android.widget.TextView

// The pieces of the list screens (lobbies, history): cards, chips, choices and a bar, in the app's palette.

/** A card: a rounded surface with an outline; with [onClick], the whole card is one touch target. */
internal fun Activity.card(onClick: (() -> Unit)? = null): LinearLayout = column().apply {
    val p = px(R.dimen.space)
    setPadding(p, dp(12), p, dp(12))
    val shape = GradientDrawable().apply {
        setCornerRadius(resources.getDimension(R.dimen.corner))
        setColor(color(R.color.surface))
        setStroke(dp(1), color(R.color.outline))
    }
    if (onClick != null) {
        background = android.graphics.drawable.RippleDrawable(
            android.content.res.ColorStateList.valueOf(color(R.color.primary_pressed)),
            shape,
            null,
        )
        minimumHeight = px(R.dimen.touch_target)
        isClickable = true
        isFocusable = true
        setOnClickListener { onClick() }
    } else {
        background = shape
    }
}

/** A card for an alarm: outlined in the error colour, so it stands apart from the plain text around it. */
internal fun Activity.alarmCard(): LinearLayout = card().apply { (background as GradientDrawable).setStroke(dp(1), color(R.color.error)) }

/** How a chip reads: an invitation (a game taking players), a state (a game being played), or a quiet one. */
internal enum class ChipTone(val background: Int, val text: Int) {
    INVITING(R.color.secondary, R.color.on_primary),
    ACTIVE(R.color.surface_variant, R.color.primary),
    QUIET(R.color.surface_variant, R.color.text_muted),
}

/** A label in a pill (not clickable: the card it is on is). */
internal fun Activity.chip(tone: ChipTone): TextView = TextView(this).apply {
    setTextSize(TypedValue.COMPLEX_UNIT_PX, resources.getDimension(R.dimen.text_label))
    setTypeface(typeface, android.graphics.Typeface.BOLD)
    setTextColor(color(tone.text))
    setPadding(dp(10), dp(4), dp(10), dp(4))
    background = GradientDrawable().apply {
        setCornerRadius(dp(14).toFloat())
        setColor(color(tone.background))
    }
}

/** One option of a single choice (a filter, a bet): filled when [selected], outlined otherwise; TalkBack says which. */
internal fun Activity.choice(label: String, selected: Boolean, onClick: () -> Unit): Button =
    plainButton(primary = selected, onClick).apply {
        text = label
        isSelected = selected
        minWidth = px(R.dimen.touch_target)
        minimumWidth = px(R.dimen.touch_target)
        setPadding(dp(14), dp(8), dp(14), dp(8))
    }

/** Options side by side, scrolled sideways when they do not fit. */
internal fun Activity.choiceRow(options: List<Button>): HorizontalScrollView = HorizontalScrollView(this).apply {
    isHorizontalScrollBarEnabled = false
    addView(
        LinearLayout(this@choiceRow).apply {
            orientation = LinearLayout.HORIZONTAL
            for ((i, b) in options.withIndex()) {
                addView(
                    b,
                    LinearLayout.LayoutParams(ViewGroup.LayoutParams.WRAP_CONTENT, ViewGroup.LayoutParams.WRAP_CONTENT).apply {
                        if (i > 0) marginStart = dp(8)
                    },
                )
            }
        },
    )
}

/** A row: [start] takes the room left, [end] keeps its size, both centred vertically. */
internal fun Activity.spread(start: View, end: View): LinearLayout = LinearLayout(this).apply {
    orientation = LinearLayout.HORIZONTAL
    setGravity(android.view.Gravity.CENTER_VERTICAL)
    addView(start, LinearLayout.LayoutParams(0, ViewGroup.LayoutParams.WRAP_CONTENT, 1f).apply { marginEnd = dp(8) })
    addView(end, LinearLayout.LayoutParams(ViewGroup.LayoutParams.WRAP_CONTENT, ViewGroup.LayoutParams.WRAP_CONTENT))
}

/** How full something is (players of a game): a track with its filled part; the numbers are said by the text beside it. */
internal class FillBar(context: Context) : View(context) {
    var filled = 0
        set(v) {
            field = v
            invalidate()
        }
    var total = 1
        set(v) {
            field = maxOf(1, v)
            invalidate()
        }
    private val track = Paint(Paint.ANTI_ALIAS_FLAG).apply { color = context.color(R.color.tile_open) }
    private val fill = Paint(Paint.ANTI_ALIAS_FLAG).apply { color = context.color(R.color.primary) }
    private val box = RectF()

    init {
        importantForAccessibility = IMPORTANT_FOR_ACCESSIBILITY_NO
    }

    override fun onMeasure(widthMeasureSpec: Int, heightMeasureSpec: Int) {
        setMeasuredDimension(MeasureSpec.getSize(widthMeasureSpec), context.dp(8))
    }

    override fun onDraw(canvas: Canvas) {
        val r = height / 2f
        box.set(0f, 0f, width.toFloat(), height.toFloat())
        canvas.drawRoundRect(box, r, r, track)
        if (filled > 0) {
            box.right = width * minOf(filled, total).toFloat() / total
            canvas.drawRoundRect(box, r, r, fill)
        }
    }
}

/** Two views side by side, sharing the width. */
internal fun Activity.pair(start: View, end: View): LinearLayout = LinearLayout(this).apply {
    orientation = LinearLayout.HORIZONTAL
    addView(start, LinearLayout.LayoutParams(0, ViewGroup.LayoutParams.WRAP_CONTENT, 1f).apply { marginEnd = dp(8) })
    addView(end, LinearLayout.LayoutParams(0, ViewGroup.LayoutParams.WRAP_CONTENT, 1f))
}

/** Adds [card] to a list of cards, a little apart from the others. */
internal fun LinearLayout.addCard(card: View) {
    add(card)
    (card.layoutParams as LinearLayout.LayoutParams).setMargins(0, context.dp(4), 0, context.dp(4))
}

/** Every text shown inside [v], in order. */
internal fun textsOf(v: View): List<String> = when (v) {
    is TextView -> listOfNotNull(v.text?.toString()?.takeIf { it.isNotEmpty() && v.visibility == View.VISIBLE })
    is ViewGroup -> (0 until v.childCount).flatMap { textsOf(v.getChildAt(it)) }
    else -> emptyList()
}

/** A clickable card says what it shows, as one: TalkBack reads it in one go, as it is one touch target. */
internal fun <V : ViewGroup> V.spoken(): V {
    contentDescription = textsOf(this).joinToString(". ")
    return this
}
