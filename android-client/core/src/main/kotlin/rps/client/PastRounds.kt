package rps.client

/**
 * Where a session resumed from a kept checkpoint (after the process was killed) finds the rounds
 * resolved before it: their `round_resolved` events come before the checkpoint, so the session
 * does not read them again.
 */
fun interface PastRounds {
    /** The rounds of [gameId] among [rounds] that were resolved, as [accountId] played them, oldest first. */
    suspend fun of(gameId: String, rounds: IntRange, accountId: String): List<RoundOutcome>
}

/** [PastRounds] from the game's transcript (`GET /v1/games/{id}`, its rounds, and its ruleset). */
class TranscriptRounds(private val history: HistoryApi, private val directory: DirectoryApi) : PastRounds {
    override suspend fun of(gameId: String, rounds: IntRange, accountId: String): List<RoundOutcome> {
        if (rounds.isEmpty()) return emptyList()
        val config = history.game(gameId).config
        val ruleset = directory.getRuleset(config.ruleset)
        return rounds.mapNotNull { r ->
            val first = history.round(gameId, r)
            roundOutcomeOf(first, ruleset, config.resolution, moveOf(gameId, first, accountId))
        }
    }

    /** [accountId]'s move in round [t], on whichever page of its moves it is. */
    private suspend fun moveOf(gameId: String, t: RoundTranscript, accountId: String): Int? {
        var page = t
        while (true) {
            page.moves.firstOrNull { it.accountId == accountId }?.let { return it.move }
            val next = page.next ?: return null
            page = history.round(gameId, t.round, next)
        }
    }
}

/**
 * Round [t] as its `round_resolved` event told it, rebuilt from its transcript: the surviving
 * weapons by the engine's resolution ([Resolver]) of its counts under [ruleset] and [resolution];
 * [yourMove] is the player's. Null while the round is not resolved.
 */
fun roundOutcomeOf(t: RoundTranscript, ruleset: RulesetInfo, resolution: String, yourMove: Int?): RoundOutcome? {
    val remaining = t.remaining ?: return null
    if (t.stage != RoundStage.CLOSED) return null
    val beats = IntArray(ruleset.weapons.maxOf { it.move } + 1)
    for (w in ruleset.weapons) for (b in w.beats) beats[w.move] = beats[w.move] or (1 shl b)
    val counts = t.counts.map { it.toLong() }
    val out = Resolver.resolve(resolution, beats, counts.toLongArray())
    return RoundOutcome(t.round, out.present, out.survivors, counts, remaining, yourMove)
}
