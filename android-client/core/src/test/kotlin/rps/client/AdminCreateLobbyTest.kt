package rps.client

import com.sun.net.httpserver.HttpServer
import kotlinx.coroutines.runBlocking
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.jsonObject
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.net.InetSocketAddress
import java.util.Collections

/** What `adminCreateLobby` sends, against a tiny local HTTP server that keeps the bodies and refuses them. */
class AdminCreateLobbyTest {
    private val bodies = Collections.synchronizedList(mutableListOf<String>())
    private val server = HttpServer.create(InetSocketAddress("127.0.0.1", 0), 0).apply {
        createContext("/v1/lobbies") { ex ->
            bodies += ex.requestBody.readBytes().decodeToString()
            val problem = """{"type":"about:blank","title":"Forbidden","status":403,"code":"forbidden","detail":"test"}"""
            ex.responseHeaders.add("Content-Type", "application/problem+json")
            ex.sendResponseHeaders(403, problem.length.toLong())
            ex.responseBody.use { it.write(problem.toByteArray()) }
        }
        start()
    }
    private val api = HttpRpsApi("http://127.0.0.1:${server.address.port}", "admin-token")

    @AfterEach
    fun stop() = server.stop(0)

    private fun configSent(create: suspend HttpRpsApi.() -> Unit): JsonObject {
        assertThrows<RpsException.Problem> { runBlocking { api.create() } }
        return Json.parseToJsonElement(bodies.last()).jsonObject["config"]!!.jsonObject
    }

    @Test
    fun `the round limit is left to the server unless the caller sets one`() {
        val config = configSent { adminCreateLobby("defaults", betSize = 100, players = 3, timeoutMs = 5000) }
        assertFalse("maxRounds" in config, "maxRounds sent though not asked for: $config")
        assertEquals(JsonPrimitive(100), config["betSize"])

        val limited = configSent { adminCreateLobby("limited", betSize = 100, players = 3, timeoutMs = 5000, maxRounds = 7) }
        assertEquals(JsonPrimitive(7), limited["maxRounds"])
    }
}
