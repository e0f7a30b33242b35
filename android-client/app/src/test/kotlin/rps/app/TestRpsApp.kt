package rps.app

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.int
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import rps.client.AccountInfo
import rps.client.ActionAuth
import rps.client.Clock
import rps.client.DirectoryApi
import rps.client.EventData
import rps.client.HistoryApi
import rps.client.LobbyFilter
import rps.client.LobbyList
import rps.client.LobbyView
import rps.client.MyGame
import rps.client.MyGamesPage
import rps.client.NewAccount
import rps.client.Placement
import rps.client.PlayerApi
import rps.client.RecordedHttp
import rps.client.RecordedServer
import rps.client.RoundMove
import rps.client.RoundStage
import rps.client.RoundTranscript
import rps.client.RulesetInfo
import rps.client.TestFiles
import rps.client.Weapon
import java.security.SecureRandom
import javax.crypto.spec.SecretKeySpec

/**
 * The app under Robolectric: addresses starting with [FAKE_URL] reach the [Fakes] of the running
 * test (core's RecordedServer, a real rpsd's recorded answers, for the lobby; [FakeDirectory] for
 * the rest); any other address is a real server over HTTP. The Keystore key is a fixed test key;
 * the password of a commitment is the recorded one; the clock stands still at [now], which starts
 * each test at [NOW] and moves only when a test moves it.
 */
class TestRpsApp : RpsApp() {
    override val clock: Clock get() = Clock { now }

    override fun connect(serverUrl: String, token: String?): Backend = if (serverUrl.startsWith(FAKE_URL)) {
        Backend(AsToken(token, Fakes.server), Fakes.directory, Fakes.server, Fakes.history, Fakes.keys)
    } else {
        super.connect(serverUrl, token)
    }

    override fun secretKey() = SecretKeySpec(ByteArray(32) { it.toByte() }, "AES")

    /** Robolectric has no Android Keystore: player keys are sealed software keys, as on a phone without Ed25519 in its Keystore. */
    override val keystorePlayerKeys get() = false

    /** The same key each time a test makes one, so the screens that show it keep their goldens. */
    override fun keyRandom(): SecureRandom = object : SecureRandom() {
        override fun nextBytes(bytes: ByteArray) {
            for (i in bytes.indices) bytes[i] = (31 * i + 7).toByte()
        }
    }

    /** The fake server's recordings without a transparency log sign for a log of this name; a real rpsd's origin is its own. */
    override suspend fun readOrigin(b: Backend) = if (b.player is AsToken) FakeKeys.ORIGIN else super.readOrigin(b)

    /** The recordings' signatures are dated by the test's clock; a real rpsd accepts only signatures made near its time. */
    override fun signingClock(b: Backend): Clock = if (b.player is AsToken) clock else Clock.SYSTEM

    /** The recording's passwords once a test has set the fakes up; a test of a real rpsd alone (before any) draws its own. */
    override val random get() = Fakes.recordedRandom ?: super.random

    companion object {
        const val FAKE_URL = "http://fake.test"

        /** 2026-01-01T00:00:00Z. */
        const val NOW = 1_767_225_600_000L

        @Volatile var now = NOW
    }
}

/** The fakes of the running test; [reset] before each, with the recording to replay. */
object Fakes {
    lateinit var server: RecordedServer

    /** The recorded server's randomness, or null before any test set the fakes up. */
    val recordedRandom get() = if (::server.isInitialized) server.random else null
    lateinit var directory: FakeDirectory

    /** A real rpsd's answers to the lobby list, matchmaking and history (core's RecordedHttp), as Ada. */
    lateinit var recorded: RecordedHttp

    /** History: the recorded game's transcript, from its recording; the rest as [recorded] (app-fixes). */
    lateinit var history: HistoryApi

    /** Every account's key log, and the keys added through the app. */
    lateinit var keys: FakeKeys

    /** The accounts other than the recording's player, by token. */
    val others = HashMap<String, AccountInfo>()

    /** The token of every commit and reveal sent, in order. */
    val movesSentWith = mutableListOf<String?>()

    fun reset(recording: String = "win") {
        TestRpsApp.now = TestRpsApp.NOW
        server = RecordedServer(recording)
        recorded = RecordedHttp("lobbies")
        directory = FakeDirectory(server, recorded.api("ada"))
        history = RecordedGameHistory(server, recorded.api("ada"))
        keys = FakeKeys(server.meId)
        others.clear()
        movesSentWith.clear()
    }
}

/** The recorded server as seen with [token]: another account's token is another player; moves note the token they carry. */
class AsToken(private val token: String?, private val server: RecordedServer) : PlayerApi by server {
    override suspend fun me() = Fakes.others[token] ?: server.me()

    override suspend fun commit(lobbyId: String, commitment: String, idempotencyKey: String, auth: ActionAuth?): LobbyView {
        Fakes.movesSentWith += token
        return server.commit(lobbyId, commitment, idempotencyKey, auth)
    }

    override suspend fun reveal(lobbyId: String, reveal: String, idempotencyKey: String, auth: ActionAuth?): LobbyView {
        Fakes.movesSentWith += token
        return server.reveal(lobbyId, reveal, idempotencyKey, auth)
    }
}

/**
 * Accounts and the real rulesets; the lobby list, matchmaking and my games as a real rpsd answered
 * them ([recorded]), unless a test pages through [lobbies] or [games] of its own (at most 100 a
 * page, like the server).
 */
class FakeDirectory(private val server: RecordedServer, private val recorded: DirectoryApi) : DirectoryApi {
    /** The lobbies listed (filters aside) instead of the recorded ones. */
    var lobbies: List<LobbyView>? = null

    /** My games, newest first, instead of the recorded ones. */
    var games: List<MyGame>? = null

    /** What `GET /readyz` says. */
    var ready = true

    /** Tokens handed out by [rotateToken]. */
    var rotations = 0

    override suspend fun isReady() = ready

    override suspend fun createAccount(name: String, publicKey: String?, auth: ActionAuth?) = also {
        if (publicKey != null && auth != null) Fakes.keys.signUp(name, publicKey, auth)
    }.let { NewAccount(AccountInfo(server.meId, name, "player", 0), "secret-token-of-$name") }

    override suspend fun rotateToken(idempotencyKey: String) = "rotated-token-${++rotations}"

    override suspend fun listLobbies(after: String?, filter: LobbyFilter): LobbyList {
        val own = lobbies ?: return recorded.listLobbies(after, filter)
        val (items, next) = page(own, after)
        return LobbyList(items, next)
    }

    override suspend fun listRulesets() = recorded.listRulesets()

    override suspend fun quickJoin(betSize: Long, ruleset: String?, idempotencyKey: String, auth: ActionAuth?) =
        recorded.quickJoin(betSize, ruleset, idempotencyKey, auth)

    override suspend fun myGames(after: String?): MyGamesPage {
        val own = games ?: return recorded.myGames(after)
        val (items, next) = page(own, after)
        return MyGamesPage(items, next)
    }

    /** The [PAGE] items after cursor [after] (an index), and the next cursor. */
    private fun <T> page(all: List<T>, after: String?): Pair<List<T>, String?> {
        val start = after?.toInt() ?: 0
        val end = minOf(all.size, start + PAGE)
        return all.subList(start, end) to (if (end < all.size) end.toString() else null)
    }

    override suspend fun getRuleset(id: String): RulesetInfo = Rulesets.byId.getValue(id)

    companion object {
        const val PAGE = 100
    }
}

/** The rulesets as the Go engine defines them, from its test vectors. */
object Rulesets {
    val byId: Map<String, RulesetInfo> by lazy {
        TestFiles.json(TestFiles.repoFile("engine/testdata/vectors.json")).jsonObject["rulesets"]!!.jsonArray.associate { r ->
            val o = r.jsonObject
            val canonical = Json.parseToJsonElement(o["canonical"]!!.jsonPrimitive.content).jsonObject
            val weapons = canonical["weapons"]!!.jsonArray.map { it.jsonObject }
            val moveOf = weapons.associate { it["name"]!!.jsonPrimitive.content to it["move"]!!.jsonPrimitive.content.toInt() }
            val id = o["id"]!!.jsonPrimitive.content
            id to RulesetInfo(
                id = id,
                name = canonical["name"]!!.jsonPrimitive.content,
                hash = o["hash"]!!.jsonPrimitive.content,
                weapons = weapons.map { w ->
                    Weapon(
                        move = w["move"]!!.jsonPrimitive.content.toInt(),
                        name = w["name"]!!.jsonPrimitive.content,
                        layout = w["layout"]!!.jsonArray.map { it.jsonPrimitive.content },
                        rotations = w["rotations"]!!.jsonPrimitive.content.toBoolean(),
                        beats = w["beats"]!!.jsonArray.map { moveOf.getValue(it.jsonPrimitive.content) },
                    )
                },
                placements = o["placements"]!!.jsonArray.map { p ->
                    val po = p.jsonObject
                    Placement(po["move"]!!.jsonPrimitive.int, po["rotation"]!!.jsonPrimitive.int, po["tiles"]!!.jsonPrimitive.int)
                },
            )
        }
    }
}

// app-fixes: the transcript of the recorded game, for a session resumed from a checkpoint.

/**
 * The recorded game's history as the server would answer it at the recording's current moment:
 * the game's summary, and each round the events served so far resolved, with its counts and the
 * player's own move (the others' are left out); any other game as [rest] answers.
 */
class RecordedGameHistory(private val server: RecordedServer, private val rest: HistoryApi) : HistoryApi by rest {
    override suspend fun game(gameId: String) = server.recording.games[gameId] ?: rest.game(gameId)

    override suspend fun round(gameId: String, round: Int, after: String?): RoundTranscript {
        if (gameId !in server.recording.games) return rest.round(gameId, round, after)
        val resolved = server.events.filter { it.gameId == gameId }.map { it.typed }
            .filterIsInstance<EventData.RoundResolved>().firstOrNull { it.round == round }
            ?: throw server.problem("not_found")
        val mine = server.recording.moments.firstNotNullOfOrNull { m ->
            m.lobby.game?.takeIf { it.id == gameId && it.round == round }?.you?.move
        }
        val moves = listOf(RoundMove(server.meId, committed = true, revealed = mine != null, move = mine))
        return RoundTranscript(round, RoundStage.CLOSED, resolved.remaining, resolved.counts.map { it.toInt() }, moves, null)
    }
}
