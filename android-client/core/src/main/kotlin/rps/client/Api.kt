package rps.client

import kotlinx.coroutines.flow.Flow

/** What a game session needs from the server. The HTTP implementation is [HttpRpsApi]; tests use fakes. */
interface PlayerApi {
    suspend fun me(): AccountInfo
    suspend fun getLobby(lobbyId: String): LobbyView

    // A player's actions carry its signature ([auth], the `Rps-*` headers) when the account has a key.
    suspend fun register(lobbyId: String, idempotencyKey: String, auth: ActionAuth? = null): LobbyView
    suspend fun commit(lobbyId: String, commitment: String, idempotencyKey: String, auth: ActionAuth? = null): LobbyView
    suspend fun reveal(lobbyId: String, reveal: String, idempotencyKey: String, auth: ActionAuth? = null): LobbyView

    /** Leaves the current game during registration; the bet is refunded. */
    suspend fun leave(lobbyId: String, idempotencyKey: String, auth: ActionAuth? = null): LobbyView
    suspend fun getGame(gameId: String): GameResult

    /** The public keys the server signs heads with, newest first. */
    suspend fun signingKeys(): List<SigningKeyInfo>

    /** The transparency log's origin, keys, witnesses and latest checkpoint (`GET /v1/log`). */
    suspend fun logInfo(): LogInfo

    /**
     * The inclusion proof of event [seq] of the lobby in the log's latest published checkpoint;
     * `409 not_logged` while no published checkpoint holds it yet.
     */
    suspend fun logInclusion(lobbyId: String, seq: Long): LogInclusion

    /** The consistency proof from the log's tree of [from] leaves to the one of [to] leaves. */
    suspend fun logConsistency(from: Long, to: Long): LogConsistency
}

/**
 * A lobby's events with `seq > after`, in order, forever, with the signed heads the server sends
 * between them (each after the events it names): implementations reconnect after drops and
 * resume where they stopped. They verify neither the chain nor the signatures; the session does.
 */
interface EventFeed {
    fun follow(lobbyId: String, after: Long): Flow<FeedItem>
}

/** Reading lobbies and rulesets and managing the account (for the app's screens). */
interface DirectoryApi {
    /** Whether the server answers `GET /readyz` with 200 (false for 503: up, but its database is not); network errors throw. */
    suspend fun isReady(): Boolean

    /** A new account; with [publicKey] (and [auth], its `sign_up` signature by that key) born with that key. */
    suspend fun createAccount(name: String, publicKey: String? = null, auth: ActionAuth? = null): NewAccount

    /** A new token for the caller (`POST /v1/me/token`); the old one stops working once the new one is used. */
    suspend fun rotateToken(idempotencyKey: String): String

    /** A page of lobbies matching [filter], joinable ones first ([after] is the previous page's `next`). */
    suspend fun listLobbies(after: String? = null, filter: LobbyFilter = LobbyFilter()): LobbyList

    suspend fun listRulesets(): List<RulesetSummary>

    /**
     * Registers the caller in the joinable game with bet [betSize] (and [ruleset], when given)
     * closest to starting (`POST /v1/matchmaking`); `no_match` when there is none.
     */
    suspend fun quickJoin(betSize: Long, ruleset: String?, idempotencyKey: String, auth: ActionAuth? = null): LobbyView
    suspend fun getRuleset(id: String): RulesetInfo

    /** The caller's games, newest first, a page at a time ([after] is the previous page's `next`). */
    suspend fun myGames(after: String? = null): MyGamesPage
}

/** Players' keys (issue 31): any account's key log, and the caller's own keys. */
interface KeysApi {
    /** The account's key log, every event from seq 1, each event's data as received (`GET /v1/accounts/{id}/keys`). */
    suspend fun keyLog(accountId: String): List<KeyEvent>

    /** Adds [publicKey] to the caller's account, signed (`add_key`) by an active key, or a first key by itself. */
    suspend fun addKey(publicKey: String, idempotencyKey: String, auth: ActionAuth)

    /** Retires the caller's key [keyId], signed (`retire_key`) by an active key of the account. */
    suspend fun retireKey(keyId: String, idempotencyKey: String, auth: ActionAuth)
}

/** What happened: standings, profiles, games' transcripts, the caller's ledger (public reads, but the ledger). */
interface HistoryApi {
    suspend fun standings(by: StandingsOrder, period: StandingsPeriod, after: String? = null): StandingsPage
    suspend fun profile(accountId: String): Profile

    /** An account's games, newest first, as `GET /v1/me/games` shows the caller's. */
    suspend fun accountGames(accountId: String, after: String? = null): MyGamesPage
    suspend fun game(gameId: String): GameResult
    suspend fun gamePlayers(gameId: String, after: String? = null): GamePlayersPage

    /** Round [round] of a game with a page of its moves ([after] the previous page's `next`). */
    suspend fun round(gameId: String, round: Int, after: String? = null): RoundTranscript

    /** The caller's ledger entries, oldest first. */
    suspend fun myLedger(after: String? = null): LedgerPage
}

/** Every move of round [round] of a game, page after page. */
suspend fun HistoryApi.roundMoves(gameId: String, round: Int): List<RoundMove> {
    val out = ArrayList<RoundMove>()
    var after: String? = null
    do {
        val page = round(gameId, round, after)
        out += page.moves
        after = page.next
    } while (after != null)
    return out
}

/** The local clock, injectable for tests. */
fun interface Clock {
    fun nowMs(): Long

    companion object {
        val SYSTEM = Clock { System.currentTimeMillis() }
    }
}
