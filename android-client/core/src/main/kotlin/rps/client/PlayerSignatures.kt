package rps.client

/**
 * Checks, as a session reads them, that the players' actions in a lobby's log were signed by
 * those players ([SignedActions]): register and leave at once; commit and reveal, whose
 * signatures the events only seal, once their round is public and its transcript shows them.
 * Each player's key history comes from [histories]. Not thread-safe: one caller at a time (the
 * session's checking coroutine).
 */
class PlayerSignatures(
    private val histories: KeyHistories,
    /** The config of game [gameId]: its bet (register and quick_join sign it) and ruleset (quick_join signs it). */
    private val gameConfig: suspend (gameId: String) -> GameConfig,
    /** Every move of a game's round, from its transcript. */
    private val transcript: suspend (gameId: String, round: Int) -> List<RoundMove>,
) {
    constructor(
        keys: KeysApi,
        origin: suspend () -> String,
        gameConfig: suspend (gameId: String) -> GameConfig,
        transcript: suspend (gameId: String, round: Int) -> List<RoundMove>,
    ) : this(KeyHistories(keys, origin), gameConfig, transcript)

    private val configs = HashMap<String, GameConfig>()
    private val sealed = ArrayList<SignedActions.Recorded>()
    private val actions = HashMap<Triple<String, String, SignedAction>, Long>()

    /** How many actions have been checked in full (for the status line and the tests). */
    var verified: Int = 0
        private set

    /** Checks [e]; throws [RpsException.UnsignedAction] or [RpsException.KeyLogBroken] when it is not its player's. */
    suspend fun check(e: ChainEvent) {
        when (val d = e.typed) {
            is EventData.RoundResolved -> e.gameId?.let { roundPublic(it) { r -> r == d.round } }
            // A game that ends before its round resolves publishes that round's values too.
            is EventData.GameFinished, is EventData.GameStopped -> e.gameId?.let { roundPublic(it) { true } }
            else -> {}
        }
        val r = SignedActions.recorded(e) ?: return
        replay(r)
        fail(r, problem(r, null, null))
        if (r.sealed && r.auth != null) sealed += r else verified++
    }

    /** Two events of one player's action under one idempotency key: a signature used twice. */
    private fun replay(r: SignedActions.Recorded) {
        val action = r.action ?: return
        val key = r.idempotencyKey ?: return
        val first = actions.putIfAbsent(Triple(r.player, key, action), r.event.seq)
        if (first !=
            null
        ) {
            throw RpsException.UnsignedAction(r.event, r.player, "replays the signature of event $first (idempotency key $key)")
        }
    }

    /** Checks the sealed actions of game [gameId] whose rounds [public] says are public now. */
    private suspend fun roundPublic(gameId: String, public: (Int) -> Boolean) {
        val due = sealed.filter { it.event.gameId == gameId && it.round?.let(public) == true }
        if (due.isEmpty()) return
        for ((round, rs) in due.groupBy { it.round!! }) {
            val moves = transcript(gameId, round).associateBy { it.accountId }
            for (r in rs) {
                val m = moves[r.player]
                val (value, sig) = if (r.kind ==
                    SignedAction.COMMIT
                ) {
                    m?.commitment to m?.commitSignature
                } else {
                    m?.reveal to m?.revealSignature
                }
                if (value ==
                    null
                ) {
                    throw RpsException.UnsignedAction(r.event, r.player, "the round's transcript shows no ${r.kind.wire} of the player")
                }
                fail(r, problem(r, value, sig))
                sealed -= r
                verified++
            }
        }
    }

    private suspend fun problem(r: SignedActions.Recorded, value: String?, signature: String?): String? {
        val config = if (r.kind == SignedAction.REGISTER && r.auth != null) configOf(r.event.gameId) else null
        val bet = config?.betSize ?: 0L
        val o = histories.origin()
        return histories.problem(r.player) { SignedActions.problem(r, it, o, bet, value, signature, config?.ruleset) }
    }

    private suspend fun configOf(gameId: String?): GameConfig? {
        val g = gameId ?: return null
        return configs[g] ?: gameConfig(g).also { configs[g] = it }
    }

    private fun fail(r: SignedActions.Recorded, problem: String?) {
        if (problem != null) throw RpsException.UnsignedAction(r.event, r.player, problem)
    }
}
