package rps.client

import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.runInterruptible
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.longOrNull
import okhttp3.Interceptor
import okhttp3.MediaType.Companion.toMediaType
import okhttp3.OkHttpClient
import okhttp3.Request
import okhttp3.RequestBody.Companion.toRequestBody
import rps.client.generated.apis.AccountsApi
import rps.client.generated.apis.AdminApi
import rps.client.generated.apis.EventsApi
import rps.client.generated.apis.GamesApi
import rps.client.generated.apis.LobbiesApi
import rps.client.generated.apis.LogApi
import rps.client.generated.apis.OperationsApi
import rps.client.generated.apis.PlayApi
import rps.client.generated.apis.RulesetsApi
import rps.client.generated.infrastructure.ClientException
import rps.client.generated.infrastructure.ServerException
import rps.client.generated.models.CommitRequest
import rps.client.generated.models.CreateAccountRequest
import rps.client.generated.models.CreateLobbyRequest
import rps.client.generated.models.GameConfigInput
import rps.client.generated.models.MatchmakingRequest
import rps.client.generated.models.MoneyTransferRequest
import rps.client.generated.models.Resolution
import rps.client.generated.models.RevealRequest
import rps.client.generated.models.StopGameRequest
import java.io.IOException
import java.util.UUID
import java.util.concurrent.TimeUnit

/**
 * The server over HTTP, through the client generated from openapi.yaml. The bearer token is added
 * by an interceptor of this instance's OkHttp client (the generated client's token is global, so
 * several players in one process would share it).
 */
class HttpRpsApi(val baseUrl: String, token: String? = null, baseClient: OkHttpClient = defaultHttpClient()) :
    PlayerApi,
    DirectoryApi,
    HistoryApi,
    KeysApi {
    val http: OkHttpClient = baseClient.newBuilder().apply {
        if (token != null) {
            addInterceptor(
                Interceptor { chain ->
                    chain.proceed(chain.request().newBuilder().header("Authorization", "Bearer $token").build())
                },
            )
        }
    }.build()

    private val base = baseUrl.trimEnd('/')
    private val accounts = AccountsApi(base, http)
    private val lobbies = LobbiesApi(base, http)
    private val games = GamesApi(base, http)
    private val rulesets = RulesetsApi(base, http)
    private val admin = AdminApi(base, http)
    private val operations = OperationsApi(base, http)
    private val log = LogApi(base, http)
    internal val events = EventsApi(base, http)

    override suspend fun me() = call { Mappers.account(accounts.getMe()) }
    override suspend fun getLobby(lobbyId: String) = call { Mappers.lobby(lobbies.getLobby(UUID.fromString(lobbyId))) }
    override suspend fun register(lobbyId: String, idempotencyKey: String, auth: ActionAuth?) = signed(auth) { http ->
        Mappers.lobby(PlayApi(base, http).registerPlayer(UUID.fromString(lobbyId), idempotencyKey))
    }
    override suspend fun commit(lobbyId: String, commitment: String, idempotencyKey: String, auth: ActionAuth?) = signed(auth) { http ->
        Mappers.lobby(PlayApi(base, http).commitMove(UUID.fromString(lobbyId), CommitRequest(commitment), idempotencyKey))
    }
    override suspend fun reveal(lobbyId: String, reveal: String, idempotencyKey: String, auth: ActionAuth?) = signed(auth) { http ->
        Mappers.lobby(PlayApi(base, http).revealMove(UUID.fromString(lobbyId), RevealRequest(reveal), idempotencyKey))
    }
    override suspend fun getGame(gameId: String) = call { Mappers.gameResult(games.getGame(UUID.fromString(gameId))) }
    override suspend fun signingKeys() = call { Mappers.signingKeys(operations.listSigningKeys()) }
    override suspend fun logInfo() = call { Mappers.logInfo(log.getLog()) }
    override suspend fun logInclusion(lobbyId: String, seq: Long) =
        call { Mappers.logInclusion(log.getInclusionProof(seq, lobbyId = UUID.fromString(lobbyId))) }
    override suspend fun logConsistency(from: Long, to: Long) = call { Mappers.logConsistency(log.getConsistencyProof(from, to)) }

    override suspend fun isReady(): Boolean = try {
        call { operations.getReadiness() }
        true
    } catch (e: RpsException.Problem) {
        if (e.status == 503) false else throw e
    }

    override suspend fun rotateToken(idempotencyKey: String) = call { accounts.rotateToken(idempotencyKey).token }

    override suspend fun createAccount(name: String, publicKey: String?, auth: ActionAuth?) = signed(auth) { http ->
        Mappers.newAccount(AccountsApi(base, http).createAccount(CreateAccountRequest(name, publicKey)))
    }
    override suspend fun listLobbies(after: String?, filter: LobbyFilter) = call {
        Mappers.lobbies(
            lobbies.listLobbies(minBet = filter.minBet, maxBet = filter.maxBet, ruleset = filter.ruleset, after = after, limit = PAGE),
        )
    }
    override suspend fun listRulesets() = call { Mappers.rulesets(rulesets.listRulesets()) }
    override suspend fun quickJoin(betSize: Long, ruleset: String?, idempotencyKey: String, auth: ActionAuth?) = signed(auth) { http ->
        Mappers.lobby(PlayApi(base, http).quickJoin(MatchmakingRequest(betSize, ruleset), idempotencyKey))
    }
    override suspend fun getRuleset(id: String) = call { Mappers.ruleset(rulesets.getRuleset(id)) }
    override suspend fun myGames(after: String?) = call { Mappers.myGames(accounts.listMyGames(after = after, limit = PAGE)) }

    override suspend fun leave(lobbyId: String, idempotencyKey: String, auth: ActionAuth?) = signed(auth) { http ->
        Mappers.lobby(PlayApi(base, http).leaveLobby(UUID.fromString(lobbyId), idempotencyKey))
    }

    /** Every page of the key log (up to 100 events each) until the page's `head`. */
    override suspend fun keyLog(accountId: String): List<KeyEvent> {
        val out = ArrayList<KeyEvent>()
        while (true) {
            val url = "$base/v1/accounts/${UUID.fromString(accountId)}/keys?after=${out.lastOrNull()?.seq ?: 0}"
            val page = call { http.json(Request.Builder().url(url).get().build()) }
            val events = KeyEvent.listOf(page)
            out += events
            val head = (page["head"] as? JsonObject)?.get("seq")?.jsonPrimitive?.longOrNull ?: return out
            if (events.isEmpty() || out.last().seq >= head) return out
        }
    }

    override suspend fun addKey(publicKey: String, idempotencyKey: String, auth: ActionAuth) {
        val body = JsonObject(mapOf("publicKey" to JsonPrimitive(publicKey))).toString().toRequestBody(JSON)
        val req = Request.Builder().url("$base/v1/me/keys").post(body).header("Idempotency-Key", idempotencyKey).build()
        signed(auth) { http -> http.json(req) }
    }

    override suspend fun retireKey(keyId: String, idempotencyKey: String, auth: ActionAuth) {
        val url = "$base/v1/me/keys/" + keyId.filter { it.isLetterOrDigit() }
        val req = Request.Builder().url(url).delete().header("Idempotency-Key", idempotencyKey).build()
        signed(auth) { http -> http.json(req) }
    }

    /**
     * Sends a player's action (see [call]) signed by [auth]: [send] makes its request with the
     * client it is given, which puts [auth]'s headers on every request before anything else sees
     * it (the signature, and the game and round the server rebuilds the signed message from).
     * Unsigned (an account without a key, where the server allows it) without [auth]. Every signed
     * call goes through here, generated or raw, so the headers go on one way.
     */
    private suspend fun <T> signed(auth: ActionAuth?, send: (OkHttpClient) -> T): T = call {
        if (auth == null) {
            send(http)
        } else {
            val headers = auth.headers()
            send(
                http.newBuilder().apply {
                    interceptors().add(
                        0,
                        Interceptor { chain ->
                            chain.proceed(chain.request().newBuilder().apply { for ((k, v) in headers) header(k, v) }.build())
                        },
                    )
                }.build(),
            )
        }
    }

    /**
     * Sends a request the generated client does not cover as this client needs and reads its JSON
     * answer: the key log is read as raw JSON, since its hashes cover each event's data exactly as
     * served. Blocking: run it in [call].
     */
    private fun OkHttpClient.json(req: Request): JsonObject = newCall(req).execute().use { r ->
        val text = r.body?.string() ?: ""
        if (!r.isSuccessful) throw RawProblem(Mappers.problem(r.code, text, r.header("Retry-After")?.toIntOrNull()))
        if (text.isBlank()) JsonObject(emptyMap()) else Json.parseToJsonElement(text).jsonObject
    }

    /** Carries a problem out of [call], which would otherwise type it as unexpected. */
    private class RawProblem(val problem: RpsException) : RuntimeException(problem)

    override suspend fun standings(by: StandingsOrder, period: StandingsPeriod, after: String?) = call {
        Mappers.standings(
            accounts.getLeaderboard(
                AccountsApi.ByGetLeaderboard.entries.first { it.value == by.wire },
                AccountsApi.PeriodGetLeaderboard.entries.first { it.value == period.wire },
                after,
                PAGE,
            ),
        )
    }
    override suspend fun profile(accountId: String) = call { Mappers.profile(accounts.getAccountProfile(UUID.fromString(accountId))) }
    override suspend fun accountGames(accountId: String, after: String?) =
        call { Mappers.myGames(accounts.listAccountGames(UUID.fromString(accountId), after, PAGE)) }
    override suspend fun game(gameId: String) = getGame(gameId)
    override suspend fun gamePlayers(gameId: String, after: String?) =
        call { Mappers.gamePlayers(games.listGamePlayers(UUID.fromString(gameId), after, PAGE)) }
    override suspend fun round(gameId: String, round: Int, after: String?) =
        call { Mappers.round(games.getRound(UUID.fromString(gameId), round, after, PAGE)) }
    override suspend fun myLedger(after: String?) = call { Mappers.ledgerPage(accounts.listMyLedger(after, PAGE)) }

    // Admin operations (used by tests and operator tools; the app never calls them).
    suspend fun adminLedger() = call { Mappers.ledger(admin.getAdminLedger()) }
    suspend fun adminCredit(accountId: String, amount: Long) = call {
        Mappers.account(admin.creditAccount(UUID.fromString(accountId), MoneyTransferRequest(amount), UUID.randomUUID().toString()))
    }
    suspend fun adminCreateLobby(
        name: String,
        betSize: Long,
        players: Int,
        timeoutMs: Long,
        resolution: String = "classic",
        /** Null leaves it out: the server's default applies (0 would mean unlimited). */
        maxRounds: Int? = null,
        moveTimeoutMs: Long = timeoutMs,
        startWhenFull: Boolean = true,
        ruleset: String = "rpsls",
    ) = call {
        val cfg = GameConfigInput(
            betSize = betSize,
            playersCountLimit = players,
            entryTimeoutMs = timeoutMs,
            moveTimeoutMs = moveTimeoutMs,
            revealTimeoutMs = timeoutMs,
            resolution = Resolution.decode(resolution),
            maxRounds = maxRounds,
            startWhenFull = startWhenFull,
            ruleset = ruleset,
        )
        Mappers.lobby(lobbies.createLobby(CreateLobbyRequest(name, cfg), UUID.randomUUID().toString()))
    }
    suspend fun adminClose(lobbyId: String) =
        call { Mappers.lobby(lobbies.closeLobby(UUID.fromString(lobbyId), UUID.randomUUID().toString())) }
    suspend fun adminStop(lobbyId: String, reason: String) =
        call { Mappers.lobby(lobbies.stopGame(UUID.fromString(lobbyId), StopGameRequest(reason), UUID.randomUUID().toString())) }

    /** Runs a blocking generated call off the caller's thread and types its failures. */
    suspend fun <T> call(block: () -> T): T = runInterruptible(Dispatchers.IO) {
        try {
            block()
        } catch (e: RawProblem) {
            throw e.problem
        } catch (e: ClientException) {
            throw Mappers.problem(e)
        } catch (e: ServerException) {
            throw Mappers.problem(e)
        } catch (e: IOException) {
            throw RpsException.Network(e)
        } catch (e: IllegalStateException) {
            throw RpsException.Unexpected(e.message ?: "bad response", e)
        } catch (e: kotlinx.serialization.SerializationException) {
            throw RpsException.Unexpected(e.message ?: "bad response", e)
        }
    }

    companion object {
        /** Items per page of the lists the app shows (the server's maximum). */
        const val PAGE = 100

        private val JSON = "application/json".toMediaType()

        init {
            configureSerializer()
        }

        /**
         * Optional fields left unset must be omitted, not sent as `null`: the server validates every
         * body against the contract, where an optional string (such as `memo`) is not nullable.
         * Must run before the generated serializer is first used.
         */
        private fun configureSerializer() {
            try {
                rps.client.generated.infrastructure.Serializer.kotlinxSerializationJsonConfiguration = { explicitNulls = false }
            } catch (_: IllegalStateException) {
                // Already initialised (by another entry point): nothing to do.
            }
        }

        fun defaultHttpClient(): OkHttpClient = OkHttpClient.Builder()
            .connectTimeout(10, TimeUnit.SECONDS)
            .readTimeout(60, TimeUnit.SECONDS)
            .writeTimeout(20, TimeUnit.SECONDS)
            .build()
    }
}
