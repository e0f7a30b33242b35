package rps.client

import kotlinx.coroutines.test.runTest
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.long
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestFactory
import org.junit.jupiter.api.assertThrows

/**
 * The admins' acts in a lobby's log against the admins' own key logs: what the phone refuses to
 * believe (an act written in an admin's name, or an admin's signature put on another act), and
 * what it counts as the operator's word (an act without a signature).
 */
class AdminSignaturesTest {
    private val adminKey = KeyLogs.key(7)
    private val admins = KeyLogs(accountId = ADMIN).signUp(adminKey, name = "operator")
    private val game = "7d6c5b4a-3f2e-4d1c-8b0a-9f8e7d6c5b4a"
    private val config = GameConfig(100, 2, 60_000, 60_000, 60_000, "rpsls", "classic", true, 3, 100)
    private val asked: JsonObject = KeyLogs.data("betSize" to 100, "playersCountLimit" to 2) // the rest: the defaults
    private var seq = 0L
    private var lobby = "0b8e7c6d-5a4f-4e3d-9c2b-1a0f9e8d7c6b"
    private val checker = AdminSignatures(KeyHistories(admins.api()) { admins.origin })

    private fun event(type: String, data: JsonObject, gameId: String? = null, at: String = admins.now(seq * 1000 + 1000)) =
        ChainEvent(++seq, type, lobby, gameId, at, data, EventChain.ZERO_HASH, EventChain.ZERO_HASH, Mappers.eventData(type, data))

    private fun auth(
        action: SignedAction,
        request: JsonElement?,
        idem: String,
        gameId: String? = null,
        key: PlayerKey = adminKey,
        signedAt: Long = admins.nowMs + 500,
        lobbyId: String? = lobby,
    ): JsonObject {
        val m = AdminMessage.of(admins.origin, action, ADMIN, lobbyId, null, request, idem, key.keyId, signedAt, gameId)
        return KeyLogs.data(
            "action" to action.wire,
            "admin" to ADMIN,
            "idempotencyKey" to idem,
            "keyId" to key.keyId,
            "request" to (request ?: JsonNull),
            "signature" to Crypto.hex(m.sign(key)),
            "signedAt" to signedAt,
            *(if (gameId != null) arrayOf("gameId" to gameId) else emptyArray()),
        )
    }

    private fun configJson(c: GameConfig) = KeyLogs.data(
        "betSize" to c.betSize, "playersCountLimit" to c.playersCountLimit, "entryTimeoutMs" to c.entryTimeoutMs,
        "moveTimeoutMs" to c.moveTimeoutMs, "revealTimeoutMs" to c.revealTimeoutMs, "ruleset" to c.ruleset,
        "resolution" to c.resolution, "startWhenFull" to JsonPrimitive(c.startWhenFull), "maxExtensions" to c.maxExtensions,
        "maxRounds" to c.maxRounds,
    )

    /** A lobby created by a signed request, in the lobby the signature makes; the game opened after it. */
    private suspend fun created(shown: GameConfig = config, name: String = "Friday"): ChainEvent {
        val a = auth(SignedAction.CREATE_LOBBY, KeyLogs.data("config" to asked, "name" to " Friday "), "create-1", lobbyId = null)
        lobby = AdminSignatures.createdLobby(a["signature"]!!.jsonPrimitive.content)!!
        val e = event("lobby_created", KeyLogs.data("name" to name, "config" to configJson(shown), "auth" to a))
        checker.check(e)
        checker.check(event("game_opened", KeyLogs.data("number" to 1, "config" to configJson(config), "rulesetHash" to "ab"), game))
        return e
    }

    private fun stopped(reason: String, a: JsonObject?, gameId: String = game) = event(
        "game_stopped",
        KeyLogs.data(
            "reason" to reason,
            "stage" to "registration",
            "round" to 0,
            "amount" to 0,
            "players" to 0,
            "share" to 0,
            "remainder" to 0,
            "auth" to a,
        ),
        gameId,
    )

    private fun nextConfig(a: JsonObject?, shown: GameConfig = config) =
        event("next_config_changed", KeyLogs.data("config" to configJson(shown), "auth" to a))

    private fun closed(a: JsonObject?) = event("lobby_closed", KeyLogs.data("auth" to a))

    private suspend fun refused(e: ChainEvent, says: String) {
        val x = assertThrows<RpsException.UnsignedAction> { checker.check(e) }
        assertTrue(x.reason.contains(says), x.reason)
        assertEquals(e.seq, x.event.seq)
        assertTrue(x.admin && x.player == ADMIN, x.message)
    }

    @Test
    fun `the admins' signed acts verify, the config asked for read with the server's defaults`() = runTest {
        created()
        checker.check(nextConfig(auth(SignedAction.SET_NEXT_CONFIG, asked, "next-1", game)))
        checker.check(stopped("maintenance", auth(SignedAction.STOP, KeyLogs.data("reason" to "maintenance "), "stop-1", game)))
        checker.check(closed(auth(SignedAction.CLOSE_LOBBY, null, "close-1")))
        assertEquals(4, checker.verified)
        assertEquals(0, checker.unsigned)
    }

    @Test
    fun `unsigned acts are counted as the operator's word, the rules' own stops are not acts`() = runTest {
        checker.check(closed(null))
        checker.check(nextConfig(null))
        checker.check(stopped("max_rounds", null))
        assertEquals(2, checker.unsigned)
        assertEquals(0, checker.verified)
    }

    @Test
    fun `a signature that does not verify is refused`() = runTest {
        created()
        val a = auth(SignedAction.CLOSE_LOBBY, null, "close-1")
        val sig = a["signature"]!!.jsonPrimitive.content
        val forged = JsonObject(a + ("signature" to JsonPrimitive((if (sig[0] == '0') "1" else "0") + sig.drop(1))))
        refused(closed(forged), "does not verify")
    }

    @Test
    fun `a signature by a key that is not in the admin's key log is refused`() = runTest {
        created()
        refused(closed(auth(SignedAction.CLOSE_LOBBY, null, "close-1", key = KeyLogs.key(9))), "not one of admin $ADMIN's keys")
    }

    @Test
    fun `a signature by the admin's key before that key was added is refused`() = runTest {
        created()
        // The act is dated a minute before the admin's sign-up with the key: the key was not active then.
        val early = KeyLogs.at(admins.nowMs - 60_000)
        val a = auth(SignedAction.CLOSE_LOBBY, null, "close-1", signedAt = admins.nowMs - 60_000)
        val e = event("lobby_closed", KeyLogs.data("auth" to a), at = early)
        refused(e, "was not active at $early")
    }

    @Test
    fun `a signature made outside its window around the event is refused`() = runTest {
        created()
        val dayBefore = admins.nowMs - 24L * 60 * 60 * 1000
        refused(closed(auth(SignedAction.CLOSE_LOBBY, null, "close-1", signedAt = dayBefore)), "outside the window")
    }

    @Test
    fun `a signature of another action is refused`() = runTest {
        created()
        refused(stopped("maintenance", auth(SignedAction.CLOSE_LOBBY, null, "close-1")), "signed as \"close_lobby\"")
    }

    @Test
    fun `a signature of another lobby is refused, a creation's in a lobby it did not make too`() = runTest {
        created()
        refused(
            closed(auth(SignedAction.CLOSE_LOBBY, null, "close-1", lobbyId = "1b8e7c6d-5a4f-4e3d-9c2b-1a0f9e8d7c6b")),
            "does not verify",
        )
        val creation = auth(SignedAction.CREATE_LOBBY, KeyLogs.data("config" to asked, "name" to "Friday"), "create-2", lobbyId = null)
        refused(event("lobby_created", KeyLogs.data("name" to "Friday", "config" to configJson(config), "auth" to creation)), "makes lobby")
    }

    @Test
    fun `a stop or next config signed for another game is refused`() = runTest {
        created()
        val other = "8d6c5b4a-3f2e-4d1c-8b0a-9f8e7d6c5b4a"
        refused(stopped("maintenance", auth(SignedAction.STOP, KeyLogs.data("reason" to "maintenance"), "stop-1", other)), "not game $game")
        refused(nextConfig(auth(SignedAction.SET_NEXT_CONFIG, asked, "next-1", other)), "not game $game")
    }

    @Test
    fun `a request for another config, next config or reason than the event shows is refused`() = runTest {
        assertThrows<RpsException.UnsignedAction> { created(shown = config.copy(betSize = 200)) }.let {
            assertTrue(it.reason.contains("a request for config"), it.reason)
        }
        seq = 0
        created()
        refused(nextConfig(auth(SignedAction.SET_NEXT_CONFIG, asked, "next-1", game), config.copy(maxRounds = 0)), "a request for config")
        refused(
            stopped("maintenance", auth(SignedAction.STOP, KeyLogs.data("reason" to "cheating"), "stop-1", game)),
            "a request for reason \"cheating\"",
        )
        val renamed = AdminSignaturesTest()
        assertThrows<RpsException.UnsignedAction> { renamed.created(name = "Saturday") }.let {
            assertTrue(it.reason.contains("a request for name"), it.reason)
        }
    }

    @Test
    fun `the same signed request twice is a replay`() = runTest {
        created()
        val a = auth(SignedAction.CLOSE_LOBBY, null, "close-1")
        checker.check(closed(a))
        refused(closed(a), "replays the signed request of event")
    }

    @Test
    fun `a lobby name is read in the form the server keeps it`() {
        assertEquals("Friday night", AdminSignatures.nickname("  Friday\u00a0 night "))
        assertEquals("Friday", AdminSignatures.nickname("\uff26riday")) // a full-width F, NFKC
    }

    private val vectors = TestFiles.json(TestFiles.repoFile("tournament/testdata/signed_admin_actions.json")).jsonObject

    @TestFactory
    fun `the admins' messages are rebuilt byte for byte from the server's vectors`(): List<DynamicTest> =
        vectors["vectors"]!!.jsonArray.map { it.jsonObject }.filter { SignedAction.fromWire(it["action"]!!.jsonPrimitive.content) != null }
            .map { v ->
                DynamicTest.dynamicTest(v["action"]!!.jsonPrimitive.content) {
                    val f = v["fields"]!!.jsonObject
                    fun str(k: String) = f[k]?.takeIf { it != JsonNull }?.jsonPrimitive?.content
                    val payload = f["payload"]!!.jsonObject
                    val m = AdminMessage.of(
                        str("origin")!!, SignedAction.fromWire(str("action"))!!, str("player")!!, str("lobbyId"),
                        payload["account"]?.takeIf { it != JsonNull }?.jsonPrimitive?.content, payload["request"], str("idempotencyKey"),
                        str("keyId")!!, f["signedAt"]!!.jsonPrimitive.long, str("gameId"),
                    )
                    assertEquals(v["message"]!!.jsonPrimitive.content, String(m.bytes(), Charsets.UTF_8))
                    assertTrue(m.verify(vectors["publicKey"]!!.jsonPrimitive.content, v["signature"]!!.jsonPrimitive.content))
                }
            }

    @Test
    fun `the lobby a signed creation makes is derived from its signature as the server derives it`() {
        val create = vectors["vectors"]!!.jsonArray.map { it.jsonObject }.first { it["action"]!!.jsonPrimitive.content == "create_lobby" }
        // tournament.AdminAuth.CreatedLobby of the vector's signature, as the server derives it.
        val made = AdminSignatures.createdLobby(create["signature"]!!.jsonPrimitive.content)
        assertEquals(create["createdLobby"]!!.jsonPrimitive.content, made)
    }

    companion object {
        const val ADMIN = "1a2b3c4d-5e6f-4a0b-8c1d-2e3f4a5b6c7d"
    }
}
