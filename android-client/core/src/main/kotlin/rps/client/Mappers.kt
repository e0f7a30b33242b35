package rps.client

import kotlinx.serialization.KSerializer
import kotlinx.serialization.SerializationException
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.intOrNull
import kotlinx.serialization.json.jsonObject
import rps.client.generated.infrastructure.ClientError
import rps.client.generated.infrastructure.ClientException
import rps.client.generated.infrastructure.Serializer
import rps.client.generated.infrastructure.ServerError
import rps.client.generated.infrastructure.ServerException
import rps.client.generated.models.ClockShiftedData
import rps.client.generated.models.GameConfigInput
import rps.client.generated.models.GameFinishedData
import rps.client.generated.models.GameOpenedData
import rps.client.generated.models.GameStoppedData
import rps.client.generated.models.LobbyCreatedData
import rps.client.generated.models.MoveCommittedData
import rps.client.generated.models.MoveRevealedData
import rps.client.generated.models.MovesClosedData
import rps.client.generated.models.NextConfigChangedData
import rps.client.generated.models.PlayerLeftData
import rps.client.generated.models.PlayerRegisteredData
import rps.client.generated.models.Problem
import rps.client.generated.models.RoundResolvedData
import rps.client.generated.models.RoundStartedData
import rps.client.generated.models.StageExtendedData
import rps.client.generated.models.Account as AccountDto
import rps.client.generated.models.AccountCreated as AccountCreatedDto
import rps.client.generated.models.AccountProfile as AccountProfileDto
import rps.client.generated.models.AdminAuth as AdminAuthDto
import rps.client.generated.models.CallerStatus as CallerStatusDto
import rps.client.generated.models.ConsistencyProof as ConsistencyProofDto
import rps.client.generated.models.Event as EventDto
import rps.client.generated.models.GameConfig as GameConfigDto
import rps.client.generated.models.GamePlayerPage as GamePlayerPageDto
import rps.client.generated.models.GameRecord as GameRecordDto
import rps.client.generated.models.GameRecordPage as GameRecordPageDto
import rps.client.generated.models.GameState as GameStateDto
import rps.client.generated.models.GameSummary as GameSummaryDto
import rps.client.generated.models.Leaderboard as LeaderboardDto
import rps.client.generated.models.LedgerPage as LedgerPageDto
import rps.client.generated.models.LedgerReport as LedgerReportDto
import rps.client.generated.models.Lobby as LobbyDto
import rps.client.generated.models.LobbyPage as LobbyPageDto
import rps.client.generated.models.LogInfo as LogInfoDto
import rps.client.generated.models.LogProof as LogProofDto
import rps.client.generated.models.RoundTranscript as RoundTranscriptDto
import rps.client.generated.models.Ruleset as RulesetDto
import rps.client.generated.models.RulesetList as RulesetListDto
import rps.client.generated.models.SignedHead as SignedHeadDto
import rps.client.generated.models.SigningKeyList as SigningKeyListDto

/** The one place where generated wire types become the client's domain types. */
object Mappers {
    private val lenient = Json { ignoreUnknownKeys = true }

    fun config(c: GameConfigDto) = GameConfig(
        betSize = c.betSize,
        playersCountLimit = c.playersCountLimit,
        entryTimeoutMs = c.entryTimeoutMs,
        moveTimeoutMs = c.moveTimeoutMs,
        revealTimeoutMs = c.revealTimeoutMs,
        ruleset = c.ruleset,
        resolution = c.resolution.value,
        startWhenFull = c.startWhenFull,
        maxExtensions = c.maxExtensions,
        maxRounds = c.maxRounds,
    )

    /**
     * The config a request's config object asks for (`tournament.ConfigOfRequest`): the contract's
     * `GameConfigInput`, each member the request omits or sets to null taking its default there;
     * null when it is not such an object.
     */
    fun configOfRequest(request: JsonElement?): GameConfig? {
        val members = (request as? JsonObject)?.filterValues { it !is JsonNull } ?: return null
        val c = try {
            eventDataJson.decodeFromJsonElement(GameConfigInput.serializer(), JsonObject(members))
        } catch (_: SerializationException) {
            return null
        } catch (_: IllegalArgumentException) {
            return null
        }
        return GameConfig(
            betSize = c.betSize,
            playersCountLimit = c.playersCountLimit,
            entryTimeoutMs = c.entryTimeoutMs ?: return null,
            moveTimeoutMs = c.moveTimeoutMs ?: return null,
            revealTimeoutMs = c.revealTimeoutMs ?: return null,
            ruleset = c.ruleset ?: return null,
            resolution = c.resolution?.value ?: return null,
            startWhenFull = c.startWhenFull ?: return null,
            maxExtensions = c.maxExtensions ?: return null,
            maxRounds = c.maxRounds ?: return null,
        )
    }

    fun you(y: CallerStatusDto) = YouStatus(y.registered, y.inGame, y.committed, y.revealed, y.commitment, y.move)

    fun game(g: GameStateDto) = GameView(
        id = g.id.toString(),
        number = g.number,
        stage = Stage.fromWire(g.stage.value),
        round = g.round,
        deadlineMs = g.deadlineMs,
        players = g.players,
        remaining = g.remaining,
        committed = g.committed,
        revealed = g.revealed,
        pot = g.pot,
        rulesetHash = g.rulesetHash,
        you = g.you?.let(::you),
    )

    fun lobby(l: LobbyDto) = LobbyView(
        id = l.id.toString(),
        name = l.name,
        closed = l.closed,
        config = config(l.config),
        nextConfig = l.nextConfig?.let(::config),
        game = l.game?.let(::game),
        serverTime = l.serverTime,
    )

    fun lobbies(p: LobbyPageDto) = LobbyList(p.lobbies.map(::lobby), p.next)

    fun account(a: AccountDto) = AccountInfo(a.id.toString(), a.name, a.role.value, a.balance)

    fun newAccount(a: AccountCreatedDto) = NewAccount(account(a.account), a.token)

    fun ruleset(r: RulesetDto) = RulesetInfo(
        id = r.id,
        name = r.name,
        hash = r.hash,
        weapons = r.weapons.map { Weapon(it.move, it.name, it.layout, it.rotations, it.beats) },
        placements = r.placements.map { Placement(it.move, it.rotation, it.tiles) },
    )

    fun gameResult(g: GameSummaryDto) = GameResult(
        id = g.id.toString(),
        stage = Stage.fromWire(g.stage.value),
        round = g.round,
        winner = g.winner?.toString(),
        payout = g.payout,
        stopReason = g.stopReason,
        lobbyId = g.lobbyId.toString(),
        number = g.number,
        config = config(g.config),
        players = g.players,
        startedAtMs = epochMs(g.startedAt),
        endedAtMs = g.endedAt?.let(::epochMs),
    )

    fun myGame(g: GameRecordDto) = MyGame(
        lobbyId = g.lobbyId.toString(),
        lobbyName = g.lobbyName,
        gameId = g.gameId.toString(),
        gameNumber = g.gameNumber,
        stage = Stage.fromWire(g.stage.value),
        registeredAtMs = epochMs(g.registeredAt),
        endedAtMs = g.endedAt?.let(::epochMs),
        stake = g.stake,
        ending = GameEnding.fromWire(g.ending.value),
        eliminatedRound = g.eliminatedRound,
        net = g.net,
        winnerName = g.winnerName,
    )

    private val rfc3339 = Regex("""(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(\.\d+)?([Zz]|([+-])(\d\d):(\d\d))""")

    /**
     * An RFC 3339 timestamp (as Go writes it: the fraction optional, any length) in Unix
     * milliseconds. By hand because java.time needs API 26 and the app runs from API 23.
     */
    internal fun epochMs(s: String): Long {
        val m = rfc3339.matchEntire(s) ?: throw IllegalStateException("not an RFC 3339 time: $s")
        val g = m.groupValues
        val utc = java.util.Calendar.getInstance(java.util.TimeZone.getTimeZone("UTC")).apply {
            clear()
            set(g[1].toInt(), g[2].toInt() - 1, g[3].toInt(), g[4].toInt(), g[5].toInt(), g[6].toInt())
        }.timeInMillis
        val millis = g[7].drop(1).padEnd(3, '0').take(3).ifEmpty { "0" }.toLong()
        val offsetMs = if (g[9].isEmpty()) 0L else (if (g[9] == "-") -1 else 1) * (g[10].toLong() * 60 + g[11].toLong()) * 60_000
        return utc + millis - offsetMs
    }

    /**
     * Unix milliseconds in the log's time format (`2026-11-18T11:11:40.000Z`), the inverse of
     * [epochMs]; by hand, as java.time needs API 26.
     */
    internal fun iso(ms: Long): String = java.text.SimpleDateFormat("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'", java.util.Locale.ROOT)
        .apply { timeZone = java.util.TimeZone.getTimeZone("UTC") }
        .format(java.util.Date(ms))

    fun myGames(p: GameRecordPageDto) = MyGamesPage(p.games.map(::myGame), p.next)

    fun rulesets(l: RulesetListDto) = l.rulesets.map { RulesetSummary(it.id, it.name, it.weapons) }

    fun standings(l: LeaderboardDto) = StandingsPage(
        l.standings.map { Standing(it.position, it.accountId.toString(), it.name, it.games, it.wins, it.net) },
        l.next,
    )

    fun profile(p: AccountProfileDto) = Profile(
        id = p.id.toString(),
        name = p.name,
        gamesPlayed = p.gamesPlayed,
        gamesWon = p.gamesWon,
        net = p.net,
        memberSinceMs = epochMs(p.memberSince),
        balance = p.balance,
    )

    fun gamePlayers(p: GamePlayerPageDto) = GamePlayersPage(
        p.players.map {
            GamePlayer(it.accountId.toString(), it.name, it.order, PlayerStatus.fromWire(it.status.value), it.eliminatedInRound)
        },
        p.next,
    )

    fun round(r: RoundTranscriptDto) = RoundTranscript(
        round = r.round,
        stage = RoundStage.fromWire(r.stage.value),
        remaining = r.remaining,
        counts = r.counts,
        moves = r.moves.map {
            RoundMove(
                it.accountId.toString(),
                it.committed,
                it.revealed,
                it.move,
                it.commitment,
                it.reveal,
                it.commitSignature,
                it.revealSignature,
            )
        },
        next = r.next,
    )

    fun ledgerPage(p: LedgerPageDto) = LedgerPage(
        p.propertyEntries.map {
            LedgerEntry(
                it.id,
                epochMs(it.at),
                it.amount,
                LedgerKind.fromWire(it.kind.value),
                it.gameId?.toString(),
                it.memo,
                it.auth?.let(::adminAuth),
            )
        },
        p.next,
    )

    fun adminAuth(a: AdminAuthDto) = AdminAuth(
        a.action.value,
        a.admin.toString(),
        a.idempotencyKey,
        a.keyId,
        a.request?.let(::JsonObject),
        a.signature,
        a.signedAt,
        a.gameId?.toString(),
    )

    fun ledger(r: LedgerReportDto) = LedgerTotals(r.treasury, r.playerBalances, r.escrows, r.entriesSum, r.ok)

    fun event(e: EventDto): ChainEvent {
        val data = JsonObject(e.`data`)
        return ChainEvent(
            seq = e.seq,
            type = e.type,
            lobbyId = e.lobbyId.toString(),
            gameId = e.gameId?.toString(),
            at = e.at,
            data = data,
            prevHash = e.prevHash,
            hash = e.hash,
            typed = eventData(e.type, data),
        )
    }

    /**
     * Reads an event's [data] with the generated schema of its [type] (`TypedEvent` in
     * openapi.yaml). Never throws: an unknown type, or data that does not fit its schema, becomes
     * [EventData.Unknown] (the event is still hashed from [data] as received).
     */
    fun eventData(type: String, data: JsonObject): EventData {
        fun <T> read(s: KSerializer<T>): T = eventDataJson.decodeFromJsonElement(s, data)
        return try {
            when (type) {
                "lobby_created" -> read(LobbyCreatedData.serializer()).let { EventData.LobbyCreated(it.name, config(it.config)) }
                "game_opened" -> read(GameOpenedData.serializer()).let {
                    EventData.GameOpened(it.number, config(it.config), it.rulesetHash)
                }
                "player_registered" -> read(PlayerRegisteredData.serializer()).let {
                    EventData.PlayerRegistered(it.player.toString(), it.order, it.players, it.pot, it.deadline)
                }
                "player_left" -> read(PlayerLeftData.serializer()).let { EventData.PlayerLeft(it.player.toString(), it.players, it.pot) }
                "round_started" -> read(RoundStartedData.serializer()).let { EventData.RoundStarted(it.round, it.players, it.deadline) }
                "move_committed" -> read(MoveCommittedData.serializer()).let {
                    EventData.MoveCommitted(it.player.toString(), it.round, it.committed)
                }
                "moves_closed" -> read(MovesClosedData.serializer()).let {
                    EventData.MovesClosed(it.round, it.committed, it.eliminated, it.digest, it.deadline)
                }
                "move_revealed" -> read(MoveRevealedData.serializer()).let {
                    EventData.MoveRevealed(it.player.toString(), it.round, it.revealed)
                }
                "round_resolved" -> read(RoundResolvedData.serializer()).let {
                    EventData.RoundResolved(
                        it.round, it.resolution.value, it.revealed, it.present, it.counts, it.scores, it.survivors, it.remaining, it.digest,
                        it.salt,
                    )
                }
                "stage_extended" -> read(StageExtendedData.serializer()).let {
                    EventData.StageExtended(Stage.fromWire(it.stage.value), it.round, it.deadline)
                }
                "game_finished" -> read(GameFinishedData.serializer()).let {
                    EventData.GameFinished(it.winner.toString(), it.amount, it.round, it.salt)
                }
                "game_stopped" -> read(GameStoppedData.serializer()).let {
                    EventData.GameStopped(
                        it.reason,
                        Stage.fromWire(it.stage.value),
                        it.round,
                        it.amount,
                        it.players,
                        it.share,
                        it.remainder,
                        it.salt,
                    )
                }
                "next_config_changed" -> read(NextConfigChangedData.serializer()).let { EventData.NextConfigChanged(config(it.config)) }
                // Its schema has no properties, so there is no generated class to read.
                "lobby_closed" -> EventData.LobbyClosed
                "clock_shifted" -> read(ClockShiftedData.serializer()).let { EventData.ClockShifted(it.gapMs) }
                else -> EventData.Unknown(type, "type not known to this client")
            }
        } catch (e: SerializationException) {
            EventData.Unknown(type, "data does not fit its schema: ${e.message}")
        } catch (e: IllegalArgumentException) {
            EventData.Unknown(type, "data does not fit its schema: ${e.message}") // a malformed UUID
        }
    }

    /**
     * The generated models' contextual serializers (UUIDs; enums fall back to their own), and
     * unknown keys ignored: a newer server may add fields. Not the generated client's shared Json,
     * whose configuration HttpRpsApi sets before its first use.
     */
    private val eventDataJson = Json {
        serializersModule = Serializer.kotlinxSerializationAdapters
        ignoreUnknownKeys = true
    }

    fun signingKeys(l: SigningKeyListDto) = l.propertyKeys.map { SigningKeyInfo(it.keyId, it.publicKey, it.validFrom, it.validUntil) }

    fun logInfo(l: LogInfoDto) = LogInfo(
        origin = l.origin,
        keys = l.verifierKeys.map {
            LogKeyInfo(it.keyId, it.verifierKey, epochMs(it.validFrom), it.validUntil?.let(::epochMs), it.rotation)
        },
        witnesses = l.witnesses.map { LogWitnessInfo(it.name, it.verifierKey) },
        checkpoint = l.checkpoint,
    )

    fun logInclusion(p: LogProofDto) =
        LogInclusion(p.lobbyId.toString(), p.seq, p.hash, p.leafIndex, p.treeSize, p.proof, p.checkpoint, p.receipt)

    fun logConsistency(p: ConsistencyProofDto) = LogConsistency(p.from, p.to, p.fromRoot, p.toRoot, p.proof)

    fun head(h: SignedHeadDto) = SignedHead(h.lobbyId.toString(), h.seq, h.hash, h.at, h.keyId, h.signature)

    /** Decodes the signed head of an SSE `event: head` message. */
    fun headJson(json: String): SignedHead = head(Serializer.kotlinxSerializationJson.decodeFromString(SignedHeadDto.serializer(), json))

    /** Decodes one event as served in an SSE `data:` line. */
    fun eventJson(json: String): ChainEvent = event(Serializer.kotlinxSerializationJson.decodeFromString(EventDto.serializer(), json))

    /** A generated client's error to a typed problem, reading the RFC 9457 body when there is one. */
    fun problem(e: Exception): RpsException {
        val (status, response) = when (e) {
            is ClientException -> e.statusCode to e.response
            is ServerException -> e.statusCode to e.response
            else -> return RpsException.Unexpected(e.message ?: e.toString(), e)
        }
        val (body, headers) = when (response) {
            is ClientError<*> -> response.body as? String to response.headers
            is ServerError<*> -> response.body as? String to response.headers
            else -> null to emptyMap()
        }
        val retryAfter = headers.entries.firstOrNull { it.key.equals("Retry-After", true) }?.value?.firstOrNull()?.toIntOrNull()
        return problem(status, body, retryAfter)
    }

    fun problem(status: Int, body: String?, retryAfter: Int? = null): RpsException.Problem {
        if (body != null) {
            try {
                val p = lenient.decodeFromString(Problem.serializer(), body)
                return RpsException.Problem(ErrorCode.fromWire(p.code), p.status, p.detail, p.field, retryAfter)
            } catch (_: Exception) {
                // An unknown code (or a body that is not a problem) is still an error with a status.
            }
            try {
                val o = lenient.parseToJsonElement(body).jsonObject
                val code = (o["code"] as? JsonPrimitive)?.content
                val detail = (o["detail"] as? JsonPrimitive)?.content
                return RpsException.Problem(
                    ErrorCode.fromWire(code),
                    (o["status"] as? JsonPrimitive)?.intOrNull ?: status,
                    detail,
                    null,
                    retryAfter,
                )
            } catch (_: Exception) {
            }
        }
        val code = when (status) {
            401 -> ErrorCode.UNAUTHORIZED
            403 -> ErrorCode.FORBIDDEN
            404 -> ErrorCode.NOT_FOUND
            429 -> ErrorCode.RATE_LIMITED
            in 500..599 -> ErrorCode.INTERNAL
            else -> ErrorCode.UNKNOWN
        }
        return RpsException.Problem(code, status, body?.take(200), null, retryAfter)
    }
}
