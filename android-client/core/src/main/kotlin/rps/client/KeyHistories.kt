package rps.client

/**
 * The verified key histories of the accounts whose signatures a session checks (players and
 * admins alike): each account's key log read and verified when first needed, and read again when
 * a signature names a key the kept history does not show yet (added since it was read). Not
 * thread-safe: one caller at a time (the session's checking coroutine).
 */
class KeyHistories(
    private val keys: KeysApi,
    /** The transparency log's origin, which every signature binds. */
    val origin: suspend () -> String,
) {
    private val kept = HashMap<String, KeyHistory>()

    /**
     * What [problem] finds wrong under [account]'s history (null: nothing): under the kept one
     * first, and, when that finds a problem or none is kept, under the key log read again.
     */
    suspend fun problem(account: String, problem: (KeyHistory) -> String?): String? {
        val cached = kept[account]
        if (cached != null && problem(cached) == null) return null
        return problem(read(account))
    }

    private suspend fun read(account: String): KeyHistory {
        val h = try {
            KeyHistory.verify(account, origin(), keys.keyLog(account))
        } catch (e: KeyLogBrokenException) {
            throw RpsException.KeyLogBroken(e)
        }
        kept[account] = h
        return h
    }
}
