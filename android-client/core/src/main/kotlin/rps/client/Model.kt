package rps.client

import kotlinx.serialization.json.JsonObject

/**
 * The client's own domain types. Generated DTOs (package rps.client.generated.models) are mapped
 * to these in Mappers.kt and nowhere else, so the UI and the session never see wire types.
 */
enum class Stage(val wire: String) {
    REGISTRATION("registration"),
    MOVES("moves"),
    REVEAL("reveal"),
    FINISHED("finished"),
    STOPPED("stopped"),
    ;

    val isOpen: Boolean get() = this == REGISTRATION || this == MOVES || this == REVEAL

    companion object {
        fun fromWire(s: String): Stage = entries.firstOrNull { it.wire == s } ?: error("unknown stage $s")
    }
}

data class GameConfig(
    val betSize: Long,
    val playersCountLimit: Int,
    val entryTimeoutMs: Long,
    val moveTimeoutMs: Long,
    val revealTimeoutMs: Long,
    val ruleset: String,
    val resolution: String,
    val startWhenFull: Boolean,
    val maxExtensions: Int,
    val maxRounds: Int,
)

/** The caller's own place in a game; sealed values are visible only to their owner. */
data class YouStatus(
    val registered: Boolean,
    val inGame: Boolean,
    val committed: Boolean,
    val revealed: Boolean,
    val commitment: String?,
    val move: Int?,
)

data class GameView(
    val id: String,
    val number: Int,
    val stage: Stage,
    val round: Int,
    /** The stage's deadline in the server's Unix milliseconds, or null when there is none. */
    val deadlineMs: Long?,
    val players: Int,
    val remaining: Int,
    val committed: Int,
    val revealed: Int,
    val pot: Long,
    val rulesetHash: String,
    val you: YouStatus?,
)

data class LobbyView(
    val id: String,
    val name: String,
    val closed: Boolean,
    val config: GameConfig,
    val nextConfig: GameConfig?,
    val game: GameView?,
    /** The server's clock when the state was read, Unix milliseconds. */
    val serverTime: Long,
)

data class LobbyList(val lobbies: List<LobbyView>, val next: String?)

data class AccountInfo(val id: String, val name: String, val role: String, val balance: Long)

data class NewAccount(val account: AccountInfo, val token: String)

data class Weapon(
    val move: Int,
    val name: String,
    val layout: List<String>,
    val rotations: Boolean,
    val beats: List<Int>,
)

data class RulesetInfo(
    val id: String,
    val name: String,
    val hash: String,
    val weapons: List<Weapon>,
    val placements: List<Placement>,
) {
    val grid: WeaponGrid by lazy { WeaponGrid(placements) }
    fun weaponName(move: Int): String = weapons.firstOrNull { it.move == move }?.name ?: "move $move"

    /** beats[m] is the mask of moves that move m beats. */
    fun beatsMasks(): IntArray {
        val out = IntArray(weapons.maxOf { it.move } + 1)
        for (w in weapons) for (b in w.beats) out[w.move] = out[w.move] or (1 shl b)
        return out
    }
}

data class GameResult(
    val id: String,
    val stage: Stage,
    val round: Int,
    val winner: String?,
    val payout: Long,
    val stopReason: String?,
    val lobbyId: String,
    /** The game's position in its lobby (1, 2, ...). */
    val number: Int,
    val config: GameConfig,
    /** Players registered (eliminated ones included, those who left not). */
    val players: Int,
    /** When the game opened and ended, Unix milliseconds ([endedAtMs] null while it is open). */
    val startedAtMs: Long,
    val endedAtMs: Long?,
)

/** How a game ended for the player (`playing` while it is open). */
enum class GameEnding(val wire: String) {
    PLAYING("playing"),
    WON("won"),
    ELIMINATED("eliminated"),
    REFUNDED("refunded"),
    SHARE("share"),
    ;

    companion object {
        fun fromWire(s: String): GameEnding = entries.firstOrNull { it.wire == s } ?: error("unknown game ending $s")
    }
}

/** One of the player's games, as `GET /v1/me/games` tells it. */
data class MyGame(
    val lobbyId: String,
    val lobbyName: String,
    val gameId: String,
    val gameNumber: Int,
    val stage: Stage,
    /** When the player registered, Unix milliseconds. */
    val registeredAtMs: Long,
    /** When the game ended, Unix milliseconds, or null while it is open. */
    val endedAtMs: Long?,
    val stake: Long,
    val ending: GameEnding,
    /** The round the player went out in, for [GameEnding.ELIMINATED]. */
    val eliminatedRound: Int?,
    /** What the player got back minus the stake. */
    val net: Long,
    val winnerName: String?,
)

data class MyGamesPage(val games: List<MyGame>, val next: String?)

/** One of the server's Ed25519 public keys (`GET /v1/keys`); [validUntil] is null for the current one. */
data class SigningKeyInfo(val keyId: String, val publicKey: String, val validFrom: String, val validUntil: String?)

data class LedgerTotals(
    val treasury: Long,
    val playerBalances: Long,
    val escrows: Long,
    val entriesSum: Long,
    val ok: Boolean,
)

/**
 * An event's data, typed by the event's `type` (one variant per `*Data` schema of `TypedEvent` in
 * openapi.yaml). Decoded from the JSON as served in Mappers.kt; the chain is hashed over that JSON
 * ([ChainEvent.data]), never over these. Player ids are UUID strings; masks have bit m for move m.
 */
sealed interface EventData {
    data class LobbyCreated(val name: String, val config: GameConfig) : EventData
    data class GameOpened(val number: Int, val config: GameConfig, val rulesetHash: String) : EventData
    data class PlayerRegistered(
        val player: String,
        val order: Int,
        val players: Int,
        val pot: Long,
        val deadline: Long,
    ) : EventData
    data class PlayerLeft(val player: String, val players: Int, val pot: Long) : EventData
    data class RoundStarted(val round: Int, val players: Int, val deadline: Long) : EventData
    data class MoveCommitted(val player: String, val round: Int, val committed: Int) : EventData
    data class MovesClosed(
        val round: Int,
        val committed: Int,
        val eliminated: Int,
        val digest: String,
        val deadline: Long,
    ) : EventData
    data class MoveRevealed(val player: String, val round: Int, val revealed: Int) : EventData
    data class RoundResolved(
        val round: Int,
        val resolution: String,
        val revealed: Int,
        val present: Int,
        val counts: List<Long>,
        /** Only for `weighted`. */
        val scores: List<Long>?,
        val survivors: Int,
        val remaining: Int,
        val digest: String,
        /** The salt of the round's `moves_closed` digest (see [SealedDigests]); null only in logs older than salts. */
        val salt: String? = null,
    ) : EventData
    data class StageExtended(val stage: Stage, val round: Int, val deadline: Long) : EventData

    /** [salt]: set when the last committer won as moves closed, the salt of that round's `moves_closed` digest. */
    data class GameFinished(val winner: String, val amount: Long, val round: Int, val salt: String? = null) : EventData

    /** [salt]: set when the game stopped in a reveal stage, the salt of that round's `moves_closed` digest. */
    data class GameStopped(
        val reason: String,
        val stage: Stage,
        val round: Int,
        val amount: Long,
        val players: Int,
        val share: Long,
        val remainder: Int,
        val salt: String? = null,
    ) : EventData
    data class NextConfigChanged(val config: GameConfig) : EventData
    data object LobbyClosed : EventData
    data class ClockShifted(val gapMs: Long) : EventData

    /**
     * A type this client does not know (a newer server may add some), or a known type whose data
     * it cannot read. Its event is verified in the chain like any other; the session reads the
     * lobby again instead of interpreting it.
     */
    data class Unknown(val type: String, val reason: String) : EventData
}

/**
 * One of the log's note verifier keys (`GET /v1/log`); [validUntilMs] is null for the current one;
 * [rotation] is the hand-over to it signed by the key it replaced (null for the first key).
 */
data class LogKeyInfo(
    val keyId: String,
    val verifierKey: String,
    val validFromMs: Long,
    val validUntilMs: Long?,
    val rotation: String? = null,
)

/** A witness the log asks to cosign its checkpoints, by its cosignature verifier key. */
data class LogWitnessInfo(val name: String, val verifierKey: String)

/** The server's transparency log (`GET /v1/log`): its origin, keys, witnesses and latest checkpoint. */
data class LogInfo(val origin: String, val keys: List<LogKeyInfo>, val witnesses: List<LogWitnessInfo>, val checkpoint: String)

/**
 * The proof that event [seq] of a lobby, with chain hash [hash], is leaf [leafIndex] of the log's
 * tree of [treeSize] leaves, whose signed checkpoint is [checkpoint]; [receipt] is the same as a
 * C2SP `tlog-proof`. Hashes in standard base64, as served.
 */
data class LogInclusion(
    val lobbyId: String,
    val seq: Long,
    val hash: String,
    val leafIndex: Long,
    val treeSize: Long,
    val proof: List<String>,
    val checkpoint: String,
    val receipt: String,
)

/** The consistency proof from the log's tree of [from] leaves to the one of [to] leaves. */
data class LogConsistency(
    val from: Long,
    val to: Long,
    val fromRoot: String,
    val toRoot: String,
    val proof: List<String>,
)

// ---------------------------------------------------------------- finding a game, and history

/** The lobby list's filters (the query of `GET /v1/lobbies`); null is "any". */
data class LobbyFilter(val minBet: Long? = null, val maxBet: Long? = null, val ruleset: String? = null) {
    constructor(bets: BetBand, ruleset: String?) : this(bets.min, bets.max, ruleset)
}

/** The ranges of bets a player filters the lobbies by, [min] to [max] included (null: no bound). */
enum class BetBand(val min: Long?, val max: Long?) {
    ANY(null, null),
    UP_TO_10(null, 10),
    UP_TO_100(11, 100),
    UP_TO_1000(101, 1000),
    OVER_1000(1001, null),
}

/** A ruleset in `GET /v1/rulesets`. */
data class RulesetSummary(val id: String, val name: String, val weapons: Int)

/** What ranks the standings (`by`). */
enum class StandingsOrder(val wire: String) {
    WINS("wins"),
    NET("net"),
}

/** The span of games the standings count (`period`). */
enum class StandingsPeriod(val wire: String) {
    ALL("all"),
    DAYS_30("30d"),
    DAYS_7("7d"),
}

/** An account's place in the standings. */
data class Standing(
    val position: Int,
    val accountId: String,
    val name: String,
    val games: Int,
    val wins: Int,
    val net: Long,
)

data class StandingsPage(val standings: List<Standing>, val next: String?)

/** An account as anyone sees it; [balance] only for the account itself. */
data class Profile(
    val id: String,
    val name: String,
    val gamesPlayed: Int,
    val gamesWon: Int,
    val net: Long,
    val memberSinceMs: Long,
    val balance: Long?,
)

enum class PlayerStatus(val wire: String) {
    ACTIVE("active"),
    ELIMINATED("eliminated"),
    WINNER("winner"),
    ;

    companion object {
        fun fromWire(s: String): PlayerStatus = entries.firstOrNull { it.wire == s } ?: error("unknown player status $s")
    }
}

/** A player's registration in a game. */
data class GamePlayer(
    val accountId: String,
    val name: String,
    val order: Int,
    val status: PlayerStatus,
    val eliminatedInRound: Int?,
)

data class GamePlayersPage(val players: List<GamePlayer>, val next: String?)

/** Where a round is: its moves sealed, its reveals sealed, or over with everything public. */
enum class RoundStage(val wire: String) {
    MOVES("moves"),
    REVEAL("reveal"),
    CLOSED("closed"),
    ;

    companion object {
        fun fromWire(s: String): RoundStage = entries.firstOrNull { it.wire == s } ?: error("unknown round stage $s")
    }
}

/** One player's part in a round; [move] is null until the round has closed (or when they did not reveal). */
data class RoundMove(
    val accountId: String,
    val committed: Boolean,
    val revealed: Boolean,
    val move: Int?,
    /** The commitment and the reveal, null until the round has closed. */
    val commitment: String? = null,
    val reveal: String? = null,
    /** The player's signatures of the commit and the reveal (128 hex), null until the round is public or when unsigned. */
    val commitSignature: String? = null,
    val revealSignature: String? = null,
)

/** A round's result and a page of its moves. */
data class RoundTranscript(
    val round: Int,
    val stage: RoundStage,
    /** How many players survived the round; null until it was resolved. */
    val remaining: Int?,
    /** Revealed players per move, indexed by move; empty until the round was resolved. */
    val counts: List<Int>,
    val moves: List<RoundMove>,
    val next: String?,
)

/** Why money moved. */
enum class LedgerKind(val wire: String) {
    CREDIT("credit"),
    DEBIT("debit"),
    BET("bet"),
    REFUND("refund"),
    PAYOUT("payout"),
    SPLIT("split"),
    ;

    companion object {
        fun fromWire(s: String): LedgerKind = entries.firstOrNull { it.wire == s } ?: error("unknown ledger entry kind $s")
    }
}

/** One entry of the caller's ledger; [amount] is positive when the balance grew. */
data class LedgerEntry(
    val id: String,
    val atMs: Long,
    val amount: Long,
    val kind: LedgerKind,
    val gameId: String?,
    val memo: String?,
    /** The admin's signature of a credit's or debit's request (null: unsigned, or a game's entry); [LedgerSignatures] checks it. */
    val auth: AdminAuth? = null,
)

/**
 * An admin's signature of the request an entry records (`AdminAuth`): what the admin's key
 * signed, less what the reader rebuilds itself (the origin, the account acted on).
 */
data class AdminAuth(
    val action: String,
    val admin: String,
    val idempotencyKey: String,
    val keyId: String,
    /** The request's body as sent (null: none). */
    val request: JsonObject?,
    val signature: String,
    val signedAt: Long,
    val gameId: String?,
)

data class LedgerPage(val entries: List<LedgerEntry>, val next: String?)
