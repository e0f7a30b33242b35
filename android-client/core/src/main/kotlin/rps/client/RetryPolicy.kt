package rps.client

import kotlinx.coroutines.delay

data class RetryPolicy(val maxAttempts: Int = 8, val initialDelayMs: Long = 100, val maxDelayMs: Long = 2_000) {
    /**
     * Runs [block], again after network errors, 5xx and 429 (after the server's Retry-After when
     * it gives one), with exponential backoff; the caller reuses its Idempotency-Key.
     */
    suspend fun <T> run(block: suspend () -> T): T {
        var wait = initialDelayMs
        var attempt = 1
        while (true) {
            try {
                return block()
            } catch (e: RpsException) {
                if (!e.retryable || attempt >= maxAttempts) throw e
                val ra = (e as? RpsException.Problem)?.retryAfterSeconds
                delay(if (ra != null) ra * 1000L else wait)
                wait = minOf(wait * 2, maxDelayMs)
                attempt++
            }
        }
    }
}
