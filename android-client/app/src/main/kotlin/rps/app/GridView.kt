package rps.app

import android.content.Context
import android.graphics.Canvas
import android.graphics.Color
import android.graphics.Paint
import android.view.MotionEvent
import android.view.View
import rps.client.Grid
import rps.client.GridAnalysis
import rps.client.WeaponGrid

/**
 * The 5x5 weapon grid: tap a tile to draw or erase it. Tiles that no weapon could use any more are
 * greyed out and refuse taps; [onChange] gets the analysis (the matched weapon, if any) after each tap.
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
    var onChange: ((GridAnalysis) -> Unit)? = null

    private val filled = Paint().apply { color = Color.rgb(33, 99, 200) }
    private val open = Paint().apply { color = Color.rgb(225, 235, 250) }
    private val grey = Paint().apply { color = Color.rgb(200, 200, 200) }
    private val line = Paint().apply {
        color = Color.WHITE
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
        val a = analysis ?: return true
        if (!Grid.has(grid, r, c) && !a.isValidTile(r, c)) return true // impossible tile
        grid = Grid.toggle(grid, r, c)
        analysis?.let { onChange?.invoke(it) }
        return true
    }

    companion object {
        const val MAX_DP = 280
    }
}
