package rps.client

import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test

/**
 * What every signed call of [HttpRpsApi] puts on the wire, against a [RefusingServer]: the
 * Idempotency-Key, and exactly the `Rps-*` headers of its [ActionAuth] (none without one).
 */
class SignedCallsTest {
    private val server = RefusingServer("player-token", 409, "Conflict", "wrong_stage")

    @AfterEach
    fun stop() = server.close()

    /** The request [call] sent: its method, path and signing headers, in the order of [HEADERS]. */
    private fun sent(call: suspend HttpRpsApi.() -> Unit): String {
        val r = server.sent(call)
        val signing = HEADERS.mapNotNull { name -> r.headers.getFirst(name)?.let { "$name=$it" } }
        return "${r.method} ${r.path} ${signing.joinToString(" ")}"
    }

    @Test
    fun `each signed call sends its idempotency key and its signature's headers`() {
        val signed = "Authorization=Bearer player-token Rps-Key-Id=$KEY_ID Rps-Signed-At=$AT Rps-Signature=$SIG"
        val inGame = "$signed Rps-Game-Id=$GAME"
        assertEquals("POST /v1/lobbies/$LOBBY/players Idempotency-Key=k1 $inGame", sent { register(LOBBY, "k1", auth(GAME)) })
        assertEquals("DELETE /v1/lobbies/$LOBBY/players/me Idempotency-Key=k2 $inGame", sent { leave(LOBBY, "k2", auth(GAME)) })
        assertEquals(
            "POST /v1/lobbies/$LOBBY/commitments Idempotency-Key=k3 $inGame Rps-Round=2",
            sent { commit(LOBBY, COMMITMENT, "k3", auth(GAME, 2)) },
        )
        assertEquals(
            "POST /v1/lobbies/$LOBBY/reveals Idempotency-Key=k4 $inGame Rps-Round=2",
            sent { reveal(LOBBY, "0secret", "k4", auth(GAME, 2)) },
        )
        assertEquals("POST /v1/matchmaking Idempotency-Key=k5 $signed", sent { quickJoin(100, "rpsls", "k5", auth()) })
        assertEquals("POST /v1/me/keys Idempotency-Key=k6 $signed", sent { addKey(PUBLIC_KEY, "k6", auth()) })
        assertEquals("DELETE /v1/me/keys/$KEY_ID Idempotency-Key=k7 $signed", sent { retireKey(KEY_ID, "k7", auth()) })
        assertEquals(
            "POST /v1/accounts Authorization=Bearer player-token Rps-Key-Id=$KEY_ID Rps-Signed-At=$AT Rps-Signature=$SIG",
            sent { createAccount("ada", PUBLIC_KEY, auth()) },
        )
    }

    @Test
    fun `without a signature the calls carry no signing headers`() {
        val token = "Authorization=Bearer player-token"
        assertEquals("POST /v1/lobbies/$LOBBY/players Idempotency-Key=k1 $token", sent { register(LOBBY, "k1") })
        assertEquals("DELETE /v1/lobbies/$LOBBY/players/me Idempotency-Key=k2 $token", sent { leave(LOBBY, "k2") })
        assertEquals("POST /v1/lobbies/$LOBBY/commitments Idempotency-Key=k3 $token", sent { commit(LOBBY, COMMITMENT, "k3") })
        assertEquals("POST /v1/lobbies/$LOBBY/reveals Idempotency-Key=k4 $token", sent { reveal(LOBBY, "0secret", "k4") })
        assertEquals("POST /v1/matchmaking Idempotency-Key=k5 $token", sent { quickJoin(100, null, "k5") })
        assertEquals("POST /v1/accounts $token", sent { createAccount("ada") })
    }

    private companion object {
        val HEADERS = listOf("Idempotency-Key", "Authorization", "Rps-Key-Id", "Rps-Signed-At", "Rps-Signature", "Rps-Game-Id", "Rps-Round")
        const val LOBBY = "0b8e7c6d-5a4f-4e3d-9c2b-1a0f9e8d7c6b"
        const val GAME = "7d6c5b4a-3f2e-4d1c-8b0a-9f8e7d6c5b4a"
        const val KEY_ID = "0123456789abcdef"
        const val AT = 1795000000123L
        val SIG = "ab".repeat(64)
        val PUBLIC_KEY = "cd".repeat(32)
        val COMMITMENT = "ef".repeat(32)

        fun auth(game: String? = null, round: Int? = null) = ActionAuth(KEY_ID, AT, SIG, game, round)
    }
}
