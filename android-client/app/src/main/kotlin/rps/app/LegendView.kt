package rps.app

import android.app.Activity
import android.content.res.ColorStateList
import android.graphics.Canvas
import android.graphics.Paint
import android.graphics.drawable.GradientDrawable
import android.graphics.drawable.RippleDrawable
import android.view.Gravity
import android.view.View
import android.view.ViewGroup
import android.widget.LinearLayout
import rps.client.Layouts
import rps.client.RulesetInfo
import rps.client.Weapon

/**
 * The ruleset's weapons, each drawn from its layout (every distinct way it may be turned, or the
 * one way it must be drawn), with its name and what it beats. While [picking], tapping a weapon
 * calls [onPick] with it, for the grid to be filled with that weapon.
 */
class LegendView(private val activity: Activity) : LinearLayout(activity) {
    var onPick: ((Weapon) -> Unit)? = null

    /** The entries by move. */
    internal val entries = LinkedHashMap<Int, View>()
    internal val title = activity.text(Type.HEADING)

    /** Says the weapons can be tapped, while they can. */
    internal val hint = activity.text(Type.BODY, muted = true).apply { setText(R.string.legend_pick_hint) }

    var picking = false
        set(v) {
            field = v
            hint.visibility = if (v) View.VISIBLE else View.GONE
            for (e in entries.values) {
                e.isClickable = v
                e.isFocusable = v
            }
        }

    init {
        orientation = VERTICAL
    }

    fun show(ruleset: RulesetInfo) {
        removeAllViews()
        entries.clear()
        title.text = activity.getString(R.string.legend_title, ruleset.name)
        addView(title)
        addView(hint)
        // The shapes take the room of the widest, so the names line up.
        val shapesWidth = ruleset.weapons.maxOf { ShapesView.widthOf(activity, Layouts.shapes(it.layout, it.rotations)) }
        for (w in ruleset.weapons.sortedBy { it.move }) {
            val entry = entry(w, ruleset, shapesWidth)
            entries[w.move] = entry
            addView(
                entry,
                LayoutParams(ViewGroup.LayoutParams.MATCH_PARENT, ViewGroup.LayoutParams.WRAP_CONTENT).apply {
                    setMargins(0, context.dp(4), 0, context.dp(4))
                },
            )
        }
        picking = picking
    }

    private fun entry(w: Weapon, ruleset: RulesetInfo, shapesWidth: Int): View {
        val shapes = Layouts.shapes(w.layout, w.rotations)
        val beats = w.beats.joinToString(activity.getString(R.string.list_separator)) { ruleset.weaponName(it) }
        val turns = activity.getString(
            when {
                !w.rotations -> R.string.legend_as_shown
                shapes.size == 1 -> R.string.legend_any_way_same
                else -> R.string.legend_any_way
            },
        )
        val name = activity.text(Type.HEADING).apply { text = w.name }
        val beatsText = if (beats.isEmpty()) {
            activity.getString(R.string.legend_beats_nothing)
        } else {
            activity.getString(R.string.legend_beats, beats)
        }
        val beatsLine = activity.text(Type.LABEL, muted = true).apply { text = beatsText }
        val turnsLine = activity.text(Type.LABEL, muted = true).apply { text = turns }
        val words = LinearLayout(activity).apply {
            orientation = VERTICAL
            addView(name)
            addView(beatsLine)
            addView(turnsLine)
        }
        return LinearLayout(activity).apply {
            orientation = HORIZONTAL
            setGravity(Gravity.CENTER_VERTICAL)
            minimumHeight = context.px(R.dimen.touch_target)
            val pad = context.dp(8)
            setPadding(pad, pad, pad, pad)
            val shape = GradientDrawable().apply {
                setCornerRadius(resources.getDimension(R.dimen.corner))
                setColor(context.color(R.color.surface))
                setStroke(context.dp(1), context.color(R.color.outline))
            }
            background = RippleDrawable(ColorStateList.valueOf(context.color(R.color.primary_pressed)), shape, null)
            addView(ShapesView(activity, shapes), LayoutParams(shapesWidth, ViewGroup.LayoutParams.WRAP_CONTENT))
            addView(
                words,
                LayoutParams(0, ViewGroup.LayoutParams.WRAP_CONTENT, 1f).apply { marginStart = context.dp(12) },
            )
            // TalkBack reads the entry as one: its name, what it beats, how it may be turned.
            contentDescription = activity.getString(R.string.legend_entry_description, w.name, beatsText, turns)
            setOnClickListener { if (picking) onPick?.invoke(w) }
        }
    }

    /** The weapon's shapes side by side, each on a small grid of its own size. */
    private class ShapesView(activity: Activity, private val shapes: List<List<String>>) : View(activity) {
        private val cell = activity.dp(CELL_DP).toFloat()
        private val gap = activity.dp(1).toFloat()
        private val apart = activity.dp(APART_DP).toFloat()
        private val drawn = Paint().apply { color = activity.color(R.color.tile_drawn) }

        // The cards' outline colour: the empty cells stand out from the card in both themes (at
        // least 1.5:1; the grid's tile_closed is meant to fade, and in the dark theme it vanished).
        private val empty = Paint().apply { color = activity.color(R.color.outline) }

        init {
            importantForAccessibility = IMPORTANT_FOR_ACCESSIBILITY_NO
        }

        override fun onMeasure(widthMeasureSpec: Int, heightMeasureSpec: Int) {
            val h = shapes.maxOf { it.size } * cell
            setMeasuredDimension(
                resolveSize(widthOf(context, shapes), widthMeasureSpec),
                maxOf(h.toInt() + 1, context.dp(MIN_HEIGHT_DP)),
            )
        }

        override fun onDraw(canvas: Canvas) {
            var x0 = 0f
            val top = (height - shapes.maxOf { it.size } * cell) / 2
            for (s in shapes) {
                val cols = s.maxOf { it.length }
                for ((r, row) in s.withIndex()) {
                    for (c in 0 until cols) {
                        val paint = if (c < row.length && row[c] == 'X') drawn else empty
                        canvas.drawRect(x0 + c * cell, top + r * cell, x0 + (c + 1) * cell - gap, top + (r + 1) * cell - gap, paint)
                    }
                }
                x0 += cols * cell + apart
            }
        }

        companion object {
            const val CELL_DP = 11
            const val APART_DP = 10
            const val MIN_HEIGHT_DP = 40

            /** The width [shapes] take side by side. */
            fun widthOf(context: android.content.Context, shapes: List<List<String>>): Int =
                context.dp(CELL_DP) * shapes.sumOf { s -> s.maxOf { it.length } } + context.dp(APART_DP) * (shapes.size - 1) + 1
        }
    }
}
