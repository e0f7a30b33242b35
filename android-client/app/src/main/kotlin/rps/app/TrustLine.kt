package rps.app

import android.content.Context
import rps.client.TrustCheck
import rps.client.TrustStatus

/**
 * The game screen's quiet verification line for [s]: how far the lobby's history is verified, where
 * the server's transparency log stands on it, and the key that signed it ("Events 1-N verified, in
 * the log at size S, signed by key K"); null while nothing is verified yet. Failures are not here:
 * they stop the session and show as the red notice.
 */
internal fun Context.trustLine(s: TrustStatus): String? {
    val chain = s.checks.filterIsInstance<TrustCheck.ChainVerified>().firstOrNull() ?: return null
    val n = chain.upTo
    val signed = s.checks.filterIsInstance<TrustCheck.HeadSigned>().firstOrNull()
    val verified = signed?.let { getString(R.string.trust_signed, n, it.keyId) } ?: getString(R.string.trust_verified, n)
    return when (
        val log = s.checks.firstOrNull {
            it is TrustCheck.InLog || it is TrustCheck.NotInLogYet || it is TrustCheck.NotCosigned
        }
    ) {
        is TrustCheck.InLog -> {
            val line = if (log.seq >= n) {
                getString(R.string.trust_in_log, n, log.treeSize, log.keyId)
            } else {
                getString(R.string.trust_partly_in_log, n, log.seq, log.treeSize, log.keyId)
            }
            if (log.cosigners.isEmpty()) {
                line
            } else {
                getString(
                    R.string.trust_cosigned,
                    line,
                    log.cosigners.joinToString(getString(R.string.list_separator)),
                )
            }
        }
        is TrustCheck.NotInLogYet -> getString(R.string.trust_not_in_log_yet, verified)
        is TrustCheck.NotCosigned -> getString(R.string.trust_not_cosigned, verified)
        else -> verified
    }
}
