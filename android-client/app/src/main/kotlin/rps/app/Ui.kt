package rps.app

import android.app.Activity
import android.content.Context
import android.content.res.ColorStateList
import android.graphics.Typeface
import android.graphics.drawable.GradientDrawable
import android.graphics.drawable.RippleDrawable
import android.util.TypedValue
import android.view.Gravity
import android.view.View
import android.view.ViewGroup
import android.widget.Button
import android.widget.LinearLayout
import android.widget.TextView
import okhttp3.HttpUrl.Companion.toHttpUrlOrNull
import rps.client.ErrorCode
import rps.client.RpsException

/** Small helpers for views built in code (no XML layouts, no androidx), in the app's palette and type scale. */
internal fun Activity.column(): LinearLayout = LinearLayout(this).apply {
    orientation = LinearLayout.VERTICAL
    val p = px(R.dimen.space)
    setPadding(p, p, p, p)
}

internal fun Context.dp(v: Int): Int = (v * resources.displayMetrics.density).toInt()

internal fun Context.px(dimen: Int): Int = resources.getDimensionPixelSize(dimen)

internal fun Context.color(id: Int): Int = resources.getColor(id, theme)

/** The type scale (res/values/dimens.xml). */
internal enum class Type(val size: Int, val bold: Boolean) {
    DISPLAY(R.dimen.text_display, true),
    TITLE(R.dimen.text_title, true),
    HEADING(R.dimen.text_heading, true),
    BODY(R.dimen.text_body, false),
    LABEL(R.dimen.text_label, false),
}

internal fun Activity.text(type: Type = Type.BODY, muted: Boolean = false): TextView = TextView(this).apply {
    setTextSize(TypedValue.COMPLEX_UNIT_PX, resources.getDimension(type.size))
    setTextColor(color(if (muted) R.color.text_muted else R.color.text))
    if (type.bold) setTypeface(typeface, Typeface.BOLD)
    setPadding(0, dp(4), 0, dp(4))
}

/** A line for refusals and failures: in the error colour, so it reads as a problem without hiding the rest. */
internal fun Activity.notice(): TextView = text(Type.BODY).apply {
    setTypeface(typeface, Typeface.BOLD)
    setTextColor(color(R.color.error))
}

/**
 * Shows a screen's status line: a failure in the error colour, anything else (an empty list) in the
 * normal colour; with no [message] the line takes no room.
 */
internal fun TextView.showStatus(message: String?, failure: Boolean = false) {
    text = message ?: ""
    setTextColor(context.color(if (failure) R.color.error else R.color.text))
    visibility = if (message == null) View.GONE else View.VISIBLE
}

/**
 * A button at least 48dp high labelled [label]: filled in the primary colour, or outlined ([primary]
 * false); an action that cannot be undone ([destructive]) is filled in the error colour, and the
 * first step towards one (outlined, asking a confirmation next) is outlined and labelled in it.
 */
internal fun Activity.button(label: Int, primary: Boolean = true, destructive: Boolean = false, onClick: () -> Unit): Button =
    styledButton(primary, destructive, onClick).apply { setText(label) }

/** A button at least 48dp high whose text the caller sets. */
internal fun Activity.plainButton(primary: Boolean = true, onClick: () -> Unit): Button = styledButton(primary, false, onClick)

private fun Activity.styledButton(primary: Boolean, destructive: Boolean, onClick: () -> Unit): Button = Button(this, null, 0, 0).apply {
    setAllCaps(false)
    setTextSize(TypedValue.COMPLEX_UNIT_PX, resources.getDimension(R.dimen.text_body))
    setTypeface(typeface, Typeface.BOLD)
    minHeight = px(R.dimen.touch_target)
    minimumHeight = px(R.dimen.touch_target)
    gravity = Gravity.CENTER
    val h = dp(16)
    setPadding(h, dp(10), h, dp(10))
    val enabled = intArrayOf(android.R.attr.state_enabled)
    val disabled = intArrayOf(-android.R.attr.state_enabled)
    val shape = GradientDrawable()
    shape.setCornerRadius(resources.getDimension(R.dimen.corner))
    val fill = if (destructive) R.color.error else R.color.primary
    if (primary) {
        shape.setColor(ColorStateList(arrayOf(disabled, enabled), intArrayOf(color(R.color.disabled), color(fill))))
    } else {
        shape.setColor(color(R.color.surface))
        val stroke = if (destructive) R.color.error else R.color.outline
        shape.setStroke(dp(1), ColorStateList(arrayOf(disabled, enabled), intArrayOf(color(R.color.outline), color(stroke))))
    }
    val pressed = if (destructive) R.color.error_pressed else R.color.primary_pressed
    background = RippleDrawable(ColorStateList.valueOf(color(pressed)), shape, null)
    val textColor = color(
        when {
            primary && destructive -> R.color.on_error
            primary -> R.color.on_primary
            destructive -> R.color.error
            else -> R.color.primary
        },
    )
    setTextColor(ColorStateList(arrayOf(disabled, enabled), intArrayOf(color(R.color.on_disabled), textColor)))
    stateListAnimator = null
    setOnClickListener { onClick() }
}

internal fun LinearLayout.add(v: View, weight: Float = 0f): LinearLayout {
    val lp = LinearLayout.LayoutParams(ViewGroup.LayoutParams.MATCH_PARENT, ViewGroup.LayoutParams.WRAP_CONTENT, weight)
    if (v is Button) lp.setMargins(0, context.dp(4), 0, context.dp(4))
    addView(v, lp)
    return this
}

internal fun LinearLayout.addCentered(v: View): LinearLayout {
    addView(
        v,
        LinearLayout.LayoutParams(ViewGroup.LayoutParams.WRAP_CONTENT, ViewGroup.LayoutParams.WRAP_CONTENT).apply {
            gravity = Gravity.CENTER_HORIZONTAL
        },
    )
    return this
}

/** What the player reads for [e], from strings.xml. */
internal fun Context.message(e: RpsException): String = when (e) {
    is RpsException.Problem -> getString(errorText(e.code))
    is RpsException.Network -> getString(R.string.error_network_retrying)
    is RpsException.ChainBroken -> getString(R.string.error_chain_broken, e.broken.seq)
    is RpsException.BadHead -> getString(R.string.error_bad_head)
    is RpsException.VaultMissing -> getString(R.string.error_vault_missing, e.round)
    is RpsException.Unexpected -> getString(R.string.error_unexpected)
    is RpsException.UnsignedAction ->
        getString(if (e.admin) R.string.error_unsigned_admin_act else R.string.error_unsigned_action, e.event.seq)
    is RpsException.KeyLogBroken -> getString(R.string.error_key_log_broken)
    is RpsException.LogMisbehavior -> getString(
        when (e.kind) {
            RpsException.LogMisbehavior.Kind.UNTRUSTED_KEY -> R.string.error_log_untrusted_key
            RpsException.LogMisbehavior.Kind.ROLLED_BACK -> R.string.error_log_rolled_back
            RpsException.LogMisbehavior.Kind.FORKED -> R.string.error_log_forked
            RpsException.LogMisbehavior.Kind.BAD_PROOF -> R.string.error_log_bad_proof
        },
    )
}

/** A one-off call from a screen failed (nothing retries it, unlike the game session's calls). */
internal fun Context.describeFailure(e: RpsException): String =
    if (e is RpsException.Network) getString(R.string.error_network) else message(e)

private fun errorText(code: ErrorCode): Int = when (code) {
    ErrorCode.VALIDATION_FAILED -> R.string.error_validation_failed
    ErrorCode.UNAUTHORIZED -> R.string.error_unauthorized
    ErrorCode.FORBIDDEN -> R.string.error_forbidden
    ErrorCode.NOT_FOUND -> R.string.error_not_found
    ErrorCode.WRONG_STAGE -> R.string.error_wrong_stage
    ErrorCode.NOT_IN_GAME -> R.string.error_not_in_game
    ErrorCode.ALREADY_REGISTERED -> R.string.error_already_registered
    ErrorCode.REJOIN_LIMIT -> R.string.error_rejoin_limit
    ErrorCode.NAME_TAKEN -> R.string.error_name_taken
    ErrorCode.LOBBY_FULL -> R.string.error_lobby_full
    ErrorCode.INSUFFICIENT_FUNDS -> R.string.error_insufficient_funds
    ErrorCode.MONEY_LIMIT -> R.string.error_money_limit
    ErrorCode.ALREADY_COMMITTED -> R.string.error_already_committed
    ErrorCode.ALREADY_REVEALED -> R.string.error_already_revealed
    ErrorCode.COMMITMENT_MISMATCH -> R.string.error_commitment_mismatch
    ErrorCode.INVALID_MOVE -> R.string.error_invalid_move
    ErrorCode.IDEMPOTENCY_CONFLICT -> R.string.error_idempotency_conflict
    ErrorCode.PAYLOAD_TOO_LARGE -> R.string.error_payload_too_large
    ErrorCode.METHOD_NOT_ALLOWED -> R.string.error_method_not_allowed
    ErrorCode.RATE_LIMITED -> R.string.error_rate_limited
    ErrorCode.INTERNAL -> R.string.error_internal
    ErrorCode.ACCOUNT_DISABLED -> R.string.error_account_disabled
    ErrorCode.NO_MATCH -> R.string.error_no_match
    ErrorCode.UNAVAILABLE -> R.string.error_unavailable
    ErrorCode.NOT_LOGGED -> R.string.error_not_logged
    ErrorCode.SIGNATURE_REQUIRED -> R.string.error_signature_required
    ErrorCode.KEY_REQUIRED -> R.string.error_key_required
    ErrorCode.BAD_SIGNATURE -> R.string.error_bad_signature
    ErrorCode.SIGNATURE_EXPIRED -> R.string.error_signature_expired
    ErrorCode.STALE_SIGNATURE -> R.string.error_stale_signature
    ErrorCode.LAST_KEY -> R.string.error_last_key
    ErrorCode.KEY_TAKEN -> R.string.error_key_taken
    ErrorCode.KEY_LIMIT -> R.string.error_key_limit
    ErrorCode.UNKNOWN -> R.string.error_unknown
}

/** Whether [url] can be a server address. */
internal fun isServerAddress(url: String): Boolean {
    val u = url.trim().toHttpUrlOrNull()
    return u != null && u.pathSegments.none { it.isNotEmpty() }
}
