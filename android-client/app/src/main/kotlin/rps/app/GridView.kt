package rps.app

import android.content.Context
import android.graphics.Canvas
import android.graphics.Paint
import android.graphics.Rect
import android.os.Bundle
import android.view.MotionEvent
import android.view.View
import android.view.accessibility.AccessibilityEvent
import android.view.accessibility.AccessibilityNodeInfo
import android.view.accessibility.AccessibilityNodeProvider
import android.widget.Button
import rps.client.Grid
import rps.client.GridAnalysis
import rps.client.WeaponGrid

/**
 * The 5x5 weapon grid: tap a tile to draw or erase it. While the player may draw, the tiles a
 * weapon could still use are lit (outlined in the primary colour); those no weapon could use any
 * more are greyed out and refuse taps. [onChange] gets the analysis (the matched weapon, if any)
 * after each tap.
 */
class GridView(context: Context) : View(context) {
    var weapons: WeaponGrid? = null
        set(v) {
            field = v
            grid = pendingGrid ?: 0
            pendingGrid = null
        }

    /** A drawing to restore once [weapons] arrive (after a rotation). */
    var pendingGrid: Int? = null
    var grid: Int = 0
        set(v) {
            field = v
            analysis = weapons?.analyze(v)
            invalidate()
        }
    var analysis: GridAnalysis? = null
        private set
    var enabledForInput = true
        set(v) {
            if (field != v) invalidate()
            field = v
        }
    var onChange: ((GridAnalysis) -> Unit)? = null

    private val filled = Paint().apply { color = context.resources.getColor(R.color.tile_drawn, context.theme) }
    private val open = Paint().apply { color = context.resources.getColor(R.color.tile_open, context.theme) }
    private val grey = Paint().apply { color = context.resources.getColor(R.color.tile_closed, context.theme) }
    private val lit = Paint().apply {
        color = context.resources.getColor(R.color.primary, context.theme)
        style = Paint.Style.STROKE
        strokeWidth = 2 * context.resources.displayMetrics.density
    }
    private val line = Paint().apply {
        color = context.resources.getColor(R.color.background, context.theme)
        strokeWidth = 4f
    }

    /** Square, as wide as allowed but at most [MAX_DP] so the buttons below stay on screen. */
    override fun onMeasure(widthMeasureSpec: Int, heightMeasureSpec: Int) {
        val side = minOf(MeasureSpec.getSize(widthMeasureSpec), (MAX_DP * resources.displayMetrics.density).toInt())
        setMeasuredDimension(side, side)
    }

    override fun onDraw(canvas: Canvas) {
        val cell = width / Grid.SIZE.toFloat()
        val a = analysis
        for (r in 0 until Grid.SIZE) {
            for (c in 0 until Grid.SIZE) {
                val paint = when {
                    Grid.has(grid, r, c) -> filled
                    a != null && !a.isValidTile(r, c) -> grey
                    else -> open
                }
                canvas.drawRect(c * cell, r * cell, (c + 1) * cell, (r + 1) * cell, paint)
                if (paint === open && enabledForInput) {
                    val inset = line.strokeWidth / 2 + lit.strokeWidth / 2
                    canvas.drawRect(c * cell + inset, r * cell + inset, (c + 1) * cell - inset, (r + 1) * cell - inset, lit)
                }
            }
        }
        for (i in 0..Grid.SIZE) {
            canvas.drawLine(i * cell, 0f, i * cell, height.toFloat(), line)
            canvas.drawLine(0f, i * cell, width.toFloat(), i * cell, line)
        }
    }

    override fun onTouchEvent(event: MotionEvent): Boolean {
        if (event.action != MotionEvent.ACTION_UP || !enabledForInput) return true
        val cell = width / Grid.SIZE.toFloat()
        val r = (event.y / cell).toInt().coerceIn(0, Grid.SIZE - 1)
        val c = (event.x / cell).toInt().coerceIn(0, Grid.SIZE - 1)
        toggle(r, c)
        return true
    }

    /** Draws or erases tile ([r], [c]); false for a tile no weapon can use. */
    private fun toggle(r: Int, c: Int): Boolean {
        val a = analysis ?: return false
        if (!Grid.has(grid, r, c) && !a.isValidTile(r, c)) return false
        grid = Grid.toggle(grid, r, c)
        analysis?.let { onChange?.invoke(it) }
        sendAccessibilityEvent(AccessibilityEvent.TYPE_VIEW_CLICKED)
        return true
    }

    /** What TalkBack says of tile ([r], [c]): where it is, and whether it is drawn or still possible. */
    fun describeTile(r: Int, c: Int): String {
        val res = when {
            Grid.has(grid, r, c) -> R.string.tile_drawn
            analysis?.isValidTile(r, c) == false -> R.string.tile_closed
            else -> R.string.tile_open
        }
        return context.getString(res, r + 1, c + 1)
    }

    /** Each tile is a virtual view of its own for TalkBack: it says what it is and can be clicked. */
    override fun getAccessibilityNodeProvider(): AccessibilityNodeProvider = tiles

    private val tiles = object : AccessibilityNodeProvider() {
        override fun createAccessibilityNodeInfo(virtualViewId: Int): AccessibilityNodeInfo? {
            if (virtualViewId == View.NO_ID) {
                return AccessibilityNodeInfo.obtain(this@GridView).apply {
                    onInitializeAccessibilityNodeInfo(this)
                    for (i in 0 until Grid.SIZE * Grid.SIZE) addChild(this@GridView, i)
                }
            }
            if (virtualViewId !in 0 until Grid.SIZE * Grid.SIZE) return null
            val r = virtualViewId / Grid.SIZE
            val c = virtualViewId % Grid.SIZE
            val cell = width / Grid.SIZE
            val local = Rect(c * cell, r * cell, (c + 1) * cell, (r + 1) * cell)
            val loc = IntArray(2).also(::getLocationOnScreen)
            return AccessibilityNodeInfo.obtain(this@GridView, virtualViewId).apply {
                setParent(this@GridView)
                packageName = context.packageName
                className = Button::class.java.name
                contentDescription = describeTile(r, c)
                setBoundsInParent(local)
                setBoundsInScreen(Rect(local).apply { offset(loc[0], loc[1]) })
                isVisibleToUser = isShown
                isEnabled = enabledForInput
                isCheckable = true
                isChecked = Grid.has(grid, r, c)
                isClickable = enabledForInput
                if (enabledForInput) addAction(AccessibilityNodeInfo.AccessibilityAction.ACTION_CLICK)
            }
        }

        override fun performAction(virtualViewId: Int, action: Int, arguments: Bundle?): Boolean {
            if (virtualViewId == View.NO_ID) return performAccessibilityAction(action, arguments)
            if (action != AccessibilityNodeInfo.ACTION_CLICK || !enabledForInput) return false
            return toggle(virtualViewId / Grid.SIZE, virtualViewId % Grid.SIZE)
        }
    }

    companion object {
        const val MAX_DP = 280
    }
}
