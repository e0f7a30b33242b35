package rps.client

import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.MutableStateFlow
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.flow
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import org.bouncycastle.crypto.params.Ed25519PrivateKeyParameters
import org.bouncycastle.crypto.signers.Ed25519Signer
import java.io.IOException

/**
 * A hand-written fake of one lobby on the server, for one player ("me") and some others driven
 * by the test. It implements the session's two ports and writes a real hash chain.
 */
class FakeServer(private val now: () -> Long, val players: Int = 3, val bet: Long = 100, val timeoutMs: Long = 10_000) :
    PlayerApi,
    EventFeed {
    val lobbyId = "5a1f0c1e-8d4b-4c55-9a43-2f1d0e7b6c11"
    val meId = "2b9c7e4a-3f61-4d2a-9c0e-8a5b1d7f3e20"
    var gameId = "9e8d7c6b-5a4f-4e3d-8c2b-000000000001"

    /** Added to the test clock: the server's clock runs this far ahead of the device's. */
    var skewMs = 5_000L
    var lobbyName = "test"

    var stage = Stage.REGISTRATION
    var round = 0
    var registered = 0
    var remaining = 0
    var committed = 0
    var revealed = 0
    var pot = 0L
    var deadlineMs: Long? = null
    var closedGames = mutableMapOf<String, GameResult>()

    var you = YouStatus(false, false, false, false, null, null)

    /** My balance: the bet leaves it at registration, a win or a stop's share comes back to it. */
    var balance = 1000L
    var myCommitment: String? = null

    /** Every request, as "op key", in order. */
    val calls = mutableListOf<String>()
    private val replies = HashMap<String, LobbyView>()

    /** Makes the next N calls of an op fail; with [applyThenFail] the effect happens and the response is lost. */
    val failures = HashMap<String, Int>()
    var applyThenFail = false
    var problemFor = HashMap<String, RpsException.Problem>()

    /** Runs when a commitment arrives, before it is applied (to look at the vault then). */
    var onCommit: (() -> Unit)? = null

    val events = mutableListOf<ChainEvent>()
    private val count = MutableStateFlow(0)
    var tamperNext = false

    private fun serverNow() = now() + skewMs

    fun emit(type: String, game: String?, vararg data: Pair<String, Any?>) {
        val prev = events.lastOrNull()
        val obj = JsonObject(data.associate { (k, v) -> k to json(v) })
        val typed = Mappers.eventData(type, obj)
        check(typed !is EventData.Unknown) { "the fake server emitted $type data that does not fit its schema: $typed" }
        var e = ChainEvent(
            seq = (prev?.seq ?: 0) + 1, type = type, lobbyId = lobbyId, gameId = game,
            at = java.time.Instant.ofEpochMilli(serverNow()).toString().let { if (it.length == 20) it.replace("Z", ".000Z") else it },
            data = obj, prevHash = prev?.hash ?: EventChain.ZERO_HASH, hash = "", typed = typed,
        )
        e = e.copy(hash = EventChain.hash(e.prevHash, e))
        if (tamperNext) {
            e = e.copy(data = JsonObject(e.data + ("injected" to JsonPrimitive(true))))
            tamperNext = false
        }
        events += e
        count.value = events.size
    }

    private fun json(v: Any?): JsonElement = when (v) {
        null -> kotlinx.serialization.json.JsonNull
        is String -> JsonPrimitive(v)
        is Number -> JsonPrimitive(v)
        is Boolean -> JsonPrimitive(v)
        is List<*> -> JsonArray(v.map(::json))
        is Map<*, *> -> JsonObject(v.entries.associate { (k, x) -> k as String to json(x) })
        else -> error("no json for $v")
    }

    private fun config() = GameConfig(bet, players, timeoutMs, timeoutMs, timeoutMs, "rpsls", "classic", true, 0, 0)

    fun lobby(): LobbyView = LobbyView(
        id = lobbyId,
        name = lobbyName,
        closed = false,
        config = config(),
        nextConfig = null,
        game = GameView(gameId, 1, stage, round, deadlineMs, registered, remaining, committed, revealed, pot, "h", you),
        serverTime = serverNow(),
    )

    /** An admin sets the next game's config (the same as the current one). */
    fun changeNextConfig() = emit("next_config_changed", null, "config" to configJson())

    private fun configJson() = config().let {
        mapOf(
            "betSize" to it.betSize, "playersCountLimit" to it.playersCountLimit, "entryTimeoutMs" to it.entryTimeoutMs,
            "moveTimeoutMs" to it.moveTimeoutMs, "revealTimeoutMs" to it.revealTimeoutMs, "ruleset" to it.ruleset,
            "resolution" to it.resolution, "startWhenFull" to it.startWhenFull, "maxExtensions" to it.maxExtensions,
            "maxRounds" to it.maxRounds,
        )
    }

    private fun gate(op: String, key: String?, effect: () -> Unit): LobbyView {
        calls += "$op ${key ?: ""}".trim()
        problemFor.remove(op)?.let { throw it }
        val f = failures[op] ?: 0
        if (f > 0) {
            failures[op] = f - 1
            if (!applyThenFail) throw RpsException.Network(IOException("connection reset"))
        }
        val l = (if (key != null) replies["$op $key"] else null) ?: run {
            effect()
            lobby().also { if (key != null) replies["$op $key"] = it }
        }
        if (f > 0) throw RpsException.Network(IOException("response lost"))
        return l
    }

    override suspend fun me() = AccountInfo(meId, "me", "player", balance)
    override suspend fun getLobby(lobbyId: String) = gate("get", null) {}
    override suspend fun getGame(gameId: String) = closedGames[gameId] ?: throw RpsException.Problem(ErrorCode.NOT_FOUND, 404, null)

    override suspend fun register(lobbyId: String, idempotencyKey: String) = gate("register", idempotencyKey) {
        if (stage != Stage.REGISTRATION) throw RpsException.Problem(ErrorCode.WRONG_STAGE, 409, null)
        if (you.registered) throw RpsException.Problem(ErrorCode.ALREADY_REGISTERED, 409, null)
        you = you.copy(registered = true, inGame = true)
        balance -= bet
        join(meId)
    }

    fun join(player: String) {
        registered++
        remaining++
        pot += bet
        if (deadlineMs == null) deadlineMs = serverNow() + timeoutMs
        emit(
            "player_registered",
            gameId,
            "player" to player,
            "order" to registered,
            "players" to registered,
            "pot" to pot,
            "deadline" to deadlineMs,
        )
        if (registered == players) startRound()
    }

    fun othersJoin(n: Int) = repeat(n) { join(other(it)) }

    /** The id of the other player [i]. */
    fun other(i: Int) = "0000000$i-0000-4000-8000-000000000000"

    private fun startRound() {
        stage = Stage.MOVES
        round++
        committed = 0
        revealed = 0
        you = you.copy(committed = false, revealed = false, commitment = null, move = null)
        myCommitment = null
        deadlineMs = serverNow() + timeoutMs
        emit("round_started", gameId, "round" to round, "players" to remaining, "deadline" to deadlineMs)
    }

    override suspend fun commit(lobbyId: String, commitment: String, idempotencyKey: String) = gate("commit", idempotencyKey) {
        onCommit?.invoke()
        if (stage != Stage.MOVES) throw RpsException.Problem(ErrorCode.WRONG_STAGE, 409, null)
        if (!you.inGame) throw RpsException.Problem(ErrorCode.NOT_IN_GAME, 409, null)
        if (you.committed) throw RpsException.Problem(ErrorCode.ALREADY_COMMITTED, 409, null)
        you = you.copy(committed = true, commitment = commitment)
        myCommitment = commitment
        commitOne(meId)
    }

    private fun commitOne(who: String) {
        committed++
        emit("move_committed", gameId, "player" to who, "round" to round, "committed" to committed)
        if (committed == remaining) {
            stage = Stage.REVEAL
            deadlineMs = serverNow() + timeoutMs
            emit(
                "moves_closed",
                gameId,
                "round" to round,
                "committed" to committed,
                "eliminated" to 0,
                "digest" to "00",
                "deadline" to deadlineMs,
            )
        }
    }

    /** The other players still in commit. */
    fun othersCommit() {
        val others = remaining - (if (you.inGame) 1 else 0)
        repeat(others) { commitOne(other(it)) }
    }

    override suspend fun reveal(lobbyId: String, reveal: String, idempotencyKey: String) = gate("reveal", idempotencyKey) {
        if (stage != Stage.REVEAL) throw RpsException.Problem(ErrorCode.WRONG_STAGE, 409, null)
        if (!you.committed) throw RpsException.Problem(ErrorCode.NOT_IN_GAME, 409, null)
        if (you.revealed) throw RpsException.Problem(ErrorCode.ALREADY_REVEALED, 409, null)
        if (Commitments.commit(reveal) != myCommitment) throw RpsException.Problem(ErrorCode.COMMITMENT_MISMATCH, 422, null)
        you = you.copy(revealed = true, move = reveal[0] - '0')
        revealed++
        emit("move_revealed", gameId, "player" to meId, "round" to round, "revealed" to revealed)
    }

    fun othersReveal() {
        val others = committed - (if (you.committed) 1 else 0)
        repeat(others) {
            revealed++
            emit("move_revealed", gameId, "player" to other(it), "round" to round, "revealed" to revealed)
        }
    }

    /** Resolves the round: [survivors] players remain, with me among them or not. */
    fun resolve(survivors: Int, meSurvives: Boolean, present: Int, survivorsMask: Int) {
        remaining = survivors
        if (!meSurvives) you = you.copy(inGame = false)
        emit(
            "round_resolved", gameId, "round" to round, "resolution" to "classic", "revealed" to revealed, "present" to present,
            "counts" to listOf(1, 1, 1, 0, 0), "survivors" to survivorsMask, "remaining" to survivors, "digest" to "00",
        )
        if (survivors == 1) {
            val winner = if (meSurvives) meId else other(0)
            if (meSurvives) balance += pot
            emit("game_finished", gameId, "winner" to winner, "amount" to pot, "round" to round)
            closedGames[gameId] = GameResult(gameId, Stage.FINISHED, round, winner, pot, null)
            nextGame()
        } else {
            startRound()
        }
    }

    fun stop(reason: String) {
        val share = pot / remaining
        if (you.inGame) balance += share
        emit(
            "game_stopped", gameId, "reason" to reason, "stage" to stage.wire, "round" to round, "amount" to pot, "players" to remaining,
            "share" to share, "remainder" to 0,
        )
        closedGames[gameId] = GameResult(gameId, Stage.STOPPED, round, null, 0, reason)
        nextGame()
    }

    private fun nextGame() {
        gameId = gameId.dropLast(1) + ((gameId.last() - '0' + 1) % 10)
        stage = Stage.REGISTRATION
        round = 0
        registered = 0
        remaining = 0
        committed = 0
        revealed = 0
        pot = 0
        deadlineMs = null
        you = YouStatus(false, false, false, false, null, null)
        emit("game_opened", gameId, "number" to 2, "config" to configJson(), "rulesetHash" to "h")
    }

    /** The key heads are signed with; [signingKeys] publishes its public half. */
    private val signingKey = Ed25519PrivateKeyParameters(ByteArray(32) { 7 }, 0)
    val keyId: String = HeadSignatures.keyIdOf(signingKey.generatePublicKey().encoded)

    /** While true, the feed delivers nothing (events are late; responses are not). */
    val feedPaused = MutableStateFlow(false)

    /** Calls of [signingKeys]. */
    var keyFetches = 0

    /** When set, changes each head after it is signed (a forger's or a broken server's head). */
    var tamperHead: ((SignedHead) -> SignedHead)? = null

    override suspend fun signingKeys(): List<SigningKeyInfo> {
        keyFetches++
        return listOf(SigningKeyInfo(keyId, Crypto.hex(signingKey.generatePublicKey().encoded), "2025-01-01T00:00:00.000Z", null))
    }

    /** The head naming event [seq] of the log, signed (at the event's time). */
    fun head(seq: Long): SignedHead {
        val e = events[seq.toInt() - 1]
        val h = signed(SignedHead(lobbyId, e.seq, e.hash, e.at, keyId, ""))
        return tamperHead?.invoke(h) ?: h
    }

    /** [h] signed with this server's key. */
    fun signed(h: SignedHead): SignedHead {
        val msg = HeadSignatures.signedMessage(h)
        val sig = Ed25519Signer().run {
            init(true, signingKey)
            update(msg, 0, msg.size)
            generateSignature()
        }
        return h.copy(signature = Crypto.hex(sig))
    }

    /** The events with seq > after, then live ones, forever, each batch followed by its signed head (like SSE with resume). */
    override fun follow(lobbyId: String, after: Long): Flow<FeedItem> = flow {
        var last = after
        while (true) {
            count.first { it > last }
            feedPaused.first { !it }
            while (last < events.size) {
                val e = events[last.toInt()]
                emit(e)
                last = e.seq
            }
            emit(head(last))
        }
    }
}
