package rps.client

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.jsonObject
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Test

/** What `adminCreateLobby` sends, against a tiny local HTTP server that keeps the bodies and refuses them. */
class AdminCreateLobbyTest {
    private val server = RefusingServer("admin-token", 403, "Forbidden", "forbidden")

    @AfterEach
    fun stop() = server.close()

    private fun configSent(create: suspend HttpRpsApi.() -> Unit): JsonObject =
        Json.parseToJsonElement(server.sent(create).body).jsonObject["config"]!!.jsonObject

    @Test
    fun `the round limit is left to the server unless the caller sets one`() {
        val config = configSent { adminCreateLobby("defaults", betSize = 100, players = 3, timeoutMs = 5000) }
        assertFalse("maxRounds" in config, "maxRounds sent though not asked for: $config")
        assertEquals(JsonPrimitive(100), config["betSize"])

        val limited = configSent { adminCreateLobby("limited", betSize = 100, players = 3, timeoutMs = 5000, maxRounds = 7) }
        assertEquals(JsonPrimitive(7), limited["maxRounds"])
    }
}
