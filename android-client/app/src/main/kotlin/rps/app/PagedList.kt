package rps.app

import android.app.Activity
import android.view.View
import android.widget.LinearLayout
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Job
import kotlinx.coroutines.launch
import rps.client.RpsException

/**
 * A list the server sends a page at a time (the history screens'): a card per item, "More" while
 * there is a next page, and a status line for the empty state ([empty], in the normal colour) or
 * a failure (in the error colour).
 */
internal class PagedList<T>(
    private val activity: Activity,
    private val scope: CoroutineScope,
    moreLabel: Int,
    private val empty: Int,
    private val read: suspend (after: String?) -> Pair<List<T>, String?>,
    private val card: (T) -> View,
) {
    val list: LinearLayout = activity.column().apply { setPadding(0, 0, 0, 0) }
    val status = activity.notice().apply { visibility = View.GONE }
    val more = activity.button(moreLabel, primary = false) { load(next) }.apply { visibility = View.GONE }
    private var next: String? = null
    private var job: Job? = null
    private var loads = 0

    /** A page arrived and none is being read (for tests: the screen shows what the server sent). */
    val loaded: Boolean get() = loads > 0 && job?.isActive != true

    /** Reads the first page ([after] null, replacing what is shown) or the page after [after], below the others. */
    fun load(after: String? = null) {
        if (after == null) {
            job?.cancel()
            list.removeAllViews()
        } else if (job?.isActive == true) {
            return
        }
        job = scope.launch {
            try {
                val (items, nextPage) = read(after)
                for (item in items) list.addCard(card(item))
                next = nextPage
                more.visibility = if (nextPage != null) View.VISIBLE else View.GONE
                status.showStatus(if (after == null && items.isEmpty()) activity.getString(empty) else null)
                loads++
            } catch (e: RpsException) {
                status.showStatus(activity.describeFailure(e), failure = true)
            }
        }
    }
}
