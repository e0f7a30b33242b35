package rps.client

import kotlinx.coroutines.test.runTest
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows

/**
 * A player's actions in a lobby's log against the player's keys: what the session refuses to
 * believe (an action written in the player's name by whoever can write the server's database).
 */
class SignedActionsTest {
    private val key = KeyLogs.key(1)
    private val log = KeyLogs().signUp(key)
    private val player = log.accountId
    private val lobby = "0b8e7c6d-5a4f-4e3d-9c2b-1a0f9e8d7c6b"
    private val game = "7d6c5b4a-3f2e-4d1c-8b0a-9f8e7d6c5b4a"
    private val bet = 100L
    private val config = GameConfig(bet, 2, 60_000, 60_000, 60_000, "rpsls", "classic", true, 3, 100)
    private var seq = 0L

    private fun event(type: String, data: Map<String, Any?>, typed: EventData = EventData.Unknown(type, "test"), gameId: String? = game) =
        ChainEvent(
            ++seq, type, lobby, gameId,
            log.now(
                seq * 1000,
            ),
            KeyLogs.data(*data.toList().toTypedArray()), EventChain.ZERO_HASH, EventChain.ZERO_HASH, typed,
        )

    private fun message(
        action: SignedAction,
        payload: JsonObject,
        idem: String,
        round: Int? = null,
        lobbyId: String? = lobby,
        gameId: String? = game,
    ) = ActionMessage(log.origin, action, player, lobbyId, gameId, round, payload, idem, key.keyId, log.nowMs + 1)

    private fun auth(m: ActionMessage, sealed: Boolean = false, extra: Map<String, Any?> = emptyMap()): JsonObject {
        val sig = Crypto.hex(m.sign(key))
        return KeyLogs.data(
            "action" to m.action.wire,
            "idempotencyKey" to m.idempotencyKey,
            "keyId" to m.keyId,
            "signedAt" to m.signedAt,
            (if (sealed) "sealedSignature" to sealSignature(sig) else "signature" to sig),
            *extra.toList().toTypedArray(),
        )
    }

    private fun registered(a: JsonObject?) = event("player_registered", mapOf("player" to player, "order" to 1, "auth" to a))

    private fun problem(e: ChainEvent, value: String? = null, sig: String? = null) =
        SignedActions.problem(SignedActions.recorded(e)!!, log.history(), log.origin, bet, value, sig)

    @Test
    fun `a register signed by the player verifies`() {
        assertNull(problem(registered(auth(message(SignedAction.REGISTER, ActionPayloads.register(bet), "r-1")))))
    }

    @Test
    fun `a quick join signed by the player verifies, with its ruleset`() {
        val m = message(SignedAction.QUICK_JOIN, ActionPayloads.quickJoin(bet, "rpsls"), "q-1", lobbyId = null, gameId = null)
        assertNull(problem(registered(auth(m, extra = mapOf("ruleset" to "rpsls")))))
    }

    @Test
    fun `a quick join placed in a game of another ruleset than the one it signed is flagged`() {
        val m = message(SignedAction.QUICK_JOIN, ActionPayloads.quickJoin(bet, "rpsls"), "q-1", lobbyId = null, gameId = null)
        val e = registered(auth(m, extra = mapOf("ruleset" to "rpsls")))
        assertNull(SignedActions.problem(SignedActions.recorded(e)!!, log.history(), log.origin, bet, ruleset = "rpsls"))
        val p = SignedActions.problem(SignedActions.recorded(e)!!, log.history(), log.origin, bet, ruleset = "rps7")
        assertTrue(p?.contains("ruleset rpsls, in a game of ruleset rps7") == true, p)
    }

    @Test
    fun `a signature copied onto another lobby, game, bet or idempotency key is refused`() {
        val good = message(SignedAction.REGISTER, ActionPayloads.register(bet), "r-1")
        val sig = Crypto.hex(good.sign(key))
        for (copy in listOf(
            good.copy(lobbyId = "elsewhere"),
            good.copy(gameId = "another"),
            good.copy(payload = ActionPayloads.register(bet + 1)),
        )) {
            // The event is where the copy was put; its auth carries the original signature.
            val e = event(
                "player_registered",
                mapOf("player" to player, "auth" to JsonObject(auth(good) + ("signature" to JsonPrimitive(sig)))),
                gameId = copy.gameId,
            ).let { if (copy.lobbyId != lobby) it.copy(lobbyId = copy.lobbyId!!) else it }
            val p = if (copy.payload != good.payload) {
                SignedActions.problem(SignedActions.recorded(e)!!, log.history(), log.origin, bet + 1)
            } else {
                problem(e)
            }
            assertNotNull(p, "$copy")
        }
        val otherKey = JsonObject(auth(good) + ("idempotencyKey" to JsonPrimitive("r-2")))
        assertTrue(problem(registered(otherKey))!!.contains("does not verify"))
    }

    @Test
    fun `an unsigned action of a player with a key is flagged, one of a player without a key is not`() {
        assertTrue(problem(registered(null))!!.startsWith("unsigned"))
        val keyless = SignedActions.problem(
            SignedActions.recorded(registered(null))!!,
            KeyHistory(player, emptyList(), emptyList()),
            log.origin,
            bet,
        )
        assertNull(keyless)
    }

    @Test
    fun `an unsigned action dated before the player signed up with a key is flagged`() {
        // The sign-up is the key log's first event, at log.nowMs; an event before it is in a lobby
        // the operator dated back.
        val early = ChainEvent(
            1, "player_registered", lobby, game, log.now(-60_000),
            KeyLogs.data("player" to player, "order" to 1), EventChain.ZERO_HASH, EventChain.ZERO_HASH,
            EventData.Unknown("player_registered", "test"),
        )
        val p = SignedActions.problem(SignedActions.recorded(early)!!, log.history(), log.origin, bet)
        assertTrue(p?.startsWith("unsigned, dated before the player signed up") == true, p)
    }

    @Test
    fun `an action signed by a key that is not the player's is flagged`() {
        val other = KeyLogs.key(9)
        val m = message(SignedAction.REGISTER, ActionPayloads.register(bet), "r-1").copy(keyId = other.keyId)
        val a = KeyLogs.data(
            "action" to "register",
            "idempotencyKey" to "r-1",
            "keyId" to other.keyId,
            "signedAt" to m.signedAt,
            "signature" to Crypto.hex(m.sign(other)),
        )
        assertTrue(problem(registered(a))!!.contains("not one of the player's keys"))
    }

    @Test
    fun `a commit is checked through the transcript once the round is public`() = runTest {
        val commitment = Commitments.commit(0, "pass12")
        val m = message(SignedAction.COMMIT, ActionPayloads.commit(commitment), "c-1", round = 1)
        val sig = Crypto.hex(m.sign(key))
        val committed = event("move_committed", mapOf("player" to player, "round" to 1, "committed" to 1, "auth" to auth(m, sealed = true)))
        var transcripts = 0
        var shown = RoundMove(player, true, true, 0, commitment, "0pass12", commitSignature = sig)
        val s = PlayerSignatures(log.api(), { log.origin }, { config }) { _, _ ->
            transcripts++
            listOf(shown)
        }
        s.check(committed)
        assertEquals(0, s.verified) // sealed: only the seal's form so far
        val resolved = EventData.RoundResolved(1, "classic", 1, 1, listOf(1), null, 1, 1, "", null)
        s.check(event("round_resolved", mapOf("round" to 1), resolved))
        assertEquals(1, transcripts)
        assertEquals(1, s.verified)

        // The same event with another commitment in the transcript: the operator changed the move.
        val s2 = PlayerSignatures(log.api(), { log.origin }, { config }) { _, _ -> listOf(shown) }
        shown = shown.copy(commitment = Commitments.commit(1, "pass12"))
        s2.check(committed)
        val e = assertThrows<RpsException.UnsignedAction> { s2.check(event("round_resolved", mapOf("round" to 1), resolved)) }
        assertEquals(committed.seq, e.event.seq)
        assertTrue(e.evidence.contains("move_committed"), e.evidence)
    }

    @Test
    fun `the same signed action twice is a replay`() = runTest {
        val a = auth(message(SignedAction.REGISTER, ActionPayloads.register(bet), "r-1"))
        val s = PlayerSignatures(log.api(), { log.origin }, { config }) { _, _ -> emptyList() }
        s.check(registered(a))
        val e = assertThrows<RpsException.UnsignedAction> { s.check(registered(a)) }
        assertTrue(e.reason.contains("replays"), e.reason)
    }
}
