package rps.app

import android.app.Activity
import android.graphics.Bitmap
import android.graphics.BitmapFactory
import android.graphics.Canvas
import android.graphics.Color
import android.os.Looper
import android.view.MotionEvent
import android.view.View
import org.junit.Assert.fail
import org.robolectric.RuntimeEnvironment
import org.robolectric.Shadows.shadowOf
import org.robolectric.android.controller.ActivityController
import java.io.File
import kotlin.math.abs

/** Running the main looper until the app has caught up, photographing screens, comparing goldens. */
object Screens {
    private val shots = File(System.getProperty("rps.screenshots") ?: "target/screenshots").apply { mkdirs() }
    private val goldens = File(System.getProperty("rps.goldens") ?: "src/test/goldens")

    /**
     * Runs the main looper until [done] holds; work on other threads (the vault, HTTP) gets up to
     * [timeoutMs] to finish. Fails with [what] when it does not.
     */
    fun settle(what: String = "the screen to settle", timeoutMs: Long = 10_000, done: () -> Boolean = { true }) {
        val until = System.nanoTime() + timeoutMs * 1_000_000
        while (true) {
            shadowOf(Looper.getMainLooper()).idle()
            if (done()) break
            if (System.nanoTime() > until) fail("timed out waiting for $what")
            Thread.sleep(5)
        }
        shadowOf(Looper.getMainLooper()).idle()
    }

    /** Draws the activity's whole window (native graphics) into target/screenshots/[name].png. */
    fun shoot(activity: Activity, name: String): Bitmap {
        settle()
        val root = activity.window.decorView
        val dm = activity.resources.displayMetrics
        root.measure(
            View.MeasureSpec.makeMeasureSpec(dm.widthPixels, View.MeasureSpec.EXACTLY),
            View.MeasureSpec.makeMeasureSpec(dm.heightPixels, View.MeasureSpec.EXACTLY),
        )
        root.layout(0, 0, dm.widthPixels, dm.heightPixels)
        val bmp = Bitmap.createBitmap(dm.widthPixels, dm.heightPixels, Bitmap.Config.ARGB_8888)
        root.draw(Canvas(bmp))
        File(shots, "$name.png").outputStream().use { bmp.compress(Bitmap.CompressFormat.PNG, 100, it) }
        return bmp
    }

    /**
     * Photographs the screen and compares it with src/test/goldens/[name].png: at most
     * [MAX_DIFFERENT] of the pixels may differ by more than [CHANNEL_TOLERANCE] in a channel (font
     * rasterising may move a few). `-Drps.updateGoldens=true` rewrites the golden instead, for an
     * intended change to be reviewed as an image diff.
     */
    fun matchesGolden(activity: Activity, name: String) {
        val shot = shoot(activity, name)
        val golden = File(goldens, "$name.png")
        if (System.getProperty("rps.updateGoldens") == "true") {
            File(shots, "$name.png").copyTo(golden, overwrite = true)
            return
        }
        if (!golden.exists()) fail("no golden $golden: run with -Drps.updateGoldens=true and review the image")
        val expected = BitmapFactory.decodeFile(golden.path)
        if (expected.width != shot.width || expected.height != shot.height) {
            fail("$name is ${shot.width}x${shot.height}, the golden ${expected.width}x${expected.height}")
        }
        var different = 0
        for (y in 0 until shot.height) {
            for (x in 0 until shot.width) {
                val a = shot.getPixel(x, y)
                val b = expected.getPixel(x, y)
                val d = maxOf(abs(Color.red(a) - Color.red(b)), abs(Color.green(a) - Color.green(b)), abs(Color.blue(a) - Color.blue(b)))
                if (d > CHANNEL_TOLERANCE) different++
            }
        }
        val share = different.toDouble() / (shot.width * shot.height)
        if (share > MAX_DIFFERENT) {
            fail("$name differs from its golden in %.2f%% of the pixels (see target/screenshots/$name.png)".format(share * 100))
        }
    }

    /**
     * The screen of [c] against its goldens in the light theme, the dark theme and at font scale
     * 1.3 ([name], [name]_dark, [name]_large), each checked for accessibility too. The activity is
     * recreated for each (as for a change of the phone's settings) and left in the light theme at
     * font scale 1; returns the activity shown then. Each recreated screen is photographed once
     * [ready] (the trailing lambda) says it shows what it reads from the server, after [prepare]
     * (to scroll to the part the golden shows).
     */
    fun <A : Activity> matchesGoldens(
        c: ActivityController<A>,
        name: String,
        prepare: (A) -> Unit = {},
        ready: (A) -> Boolean = { true },
    ): A {
        try {
            for ((variant, qualifiers, scale) in listOf(
                Triple("", "+notnight", 1f),
                Triple("_dark", "+night", 1f),
                Triple("_large", "+notnight", 1.3f),
            )) {
                RuntimeEnvironment.setQualifiers(qualifiers)
                RuntimeEnvironment.setFontScale(scale)
                if (variant != "") c.recreate()
                settle("$name$variant to be ready") { ready(c.get()) }
                prepare(c.get())
                matchesGolden(c.get(), name + variant)
                Accessibility.check(c.get(), name + variant)
            }
        } finally {
            RuntimeEnvironment.setQualifiers("+notnight")
            RuntimeEnvironment.setFontScale(1f)
            c.recreate()
            settle()
        }
        return c.get()
    }

    /** A finger lifted on tile ([row], [col]) of the grid (0,0 = top left). */
    fun tap(grid: GridView, row: Int, col: Int) {
        val cell = grid.width / 5f
        val x = (col + 0.5f) * cell
        val y = (row + 0.5f) * cell
        for (action in listOf(MotionEvent.ACTION_DOWN, MotionEvent.ACTION_UP)) {
            val e = MotionEvent.obtain(0, 0, action, x, y, 0)
            grid.dispatchTouchEvent(e)
            e.recycle()
        }
    }

    private const val CHANNEL_TOLERANCE = 40
    private const val MAX_DIFFERENT = 0.005
}
