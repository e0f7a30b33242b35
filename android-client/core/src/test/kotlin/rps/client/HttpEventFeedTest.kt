package rps.client

import com.sun.net.httpserver.HttpServer
import kotlinx.coroutines.flow.take
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import java.net.InetSocketAddress
import java.util.Collections

/** The SSE feed against a tiny local HTTP server: resume after a drop, and the long-poll fallback. */
class HttpEventFeedTest {
    private val events: List<JsonObject> =
        Json.parseToJsonElement(TestFiles.resource("go-chain-vectors.json")).jsonObject["events"]!!.jsonArray.map { it.jsonObject }
    private val lobby = "5a1f0c1e-8d4b-4c55-9a43-2f1d0e7b6c11"
    private val server = HttpServer.create(InetSocketAddress("127.0.0.1", 0), 0)
    private val seen = Collections.synchronizedList(mutableListOf<String>())

    @AfterEach
    fun stop() = server.stop(0)

    private fun seqOf(o: JsonObject) = o["seq"].toString().toLong()

    private fun start(sse: Boolean) {
        var connections = 0
        server.createContext("/v1/lobbies/$lobby/events/stream") { ex ->
            connections++
            val lastId = ex.requestHeaders.getFirst("Last-Event-ID")
            seen += "stream after=${ex.requestURI.query} last=$lastId"
            if (!sse) {
                ex.sendResponseHeaders(404, -1)
                ex.close()
                return@createContext
            }
            val from = lastId?.toLong() ?: 0
            ex.responseHeaders.add("Content-Type", "text/event-stream")
            ex.sendResponseHeaders(200, 0)
            val out = ex.responseBody.bufferedWriter()
            out.write(": hello\n\n")
            // The first connection drops after two events; later ones send the rest and stay open briefly.
            val batch = events.filter { seqOf(it) > from }.let { if (connections == 1) it.take(2) else it }
            for (e in batch) out.write("id: ${seqOf(e)}\nevent: ${e["type"]}\ndata: $e\n\n")
            batch.lastOrNull()?.let { out.write("event: head\ndata: ${headOf(it)}\n\n") }
            out.flush()
            if (connections > 1) Thread.sleep(300)
            ex.close()
        }
        server.createContext("/v1/lobbies/$lobby/events") { ex ->
            seen += "poll ${ex.requestURI.query}"
            val after = Regex("after=(\\d+)").find(ex.requestURI.query)!!.groupValues[1].toLong()
            val page = events.filter { seqOf(it) > after }.take(2)
            val next = page.lastOrNull()?.let(::seqOf) ?: after
            val last = page.lastOrNull() ?: events.first { seqOf(it) == after }
            val body = JsonObject(mapOf("events" to JsonArray(page), "next" to Json.parseToJsonElement("$next"), "head" to headOf(last)))
                .toString().toByteArray()
            ex.responseHeaders.add("Content-Type", "application/json")
            ex.sendResponseHeaders(200, body.size.toLong())
            ex.responseBody.write(body)
            ex.close()
        }
        server.start()
    }

    /** A head naming event [e] (the feed does not check signatures; the session does). */
    private fun headOf(e: JsonObject) = JsonObject(
        mapOf(
            "lobbyId" to e["lobbyId"]!!,
            "seq" to e["seq"]!!,
            "hash" to e["hash"]!!,
            "at" to e["at"]!!,
            "keyId" to JsonPrimitive("0011223344556677"),
            "signature" to JsonPrimitive("ab".repeat(64)),
        ),
    )

    private fun feed() = HttpEventFeed(HttpRpsApi("http://127.0.0.1:${server.address.port}"), pollWaitSeconds = 1, backoffMs = 10)

    @Test
    fun `a dropped stream resumes with Last-Event-ID, without gaps or repeats`() = runBlocking {
        start(sse = true)
        // The server writes a batch's head after its last event; the feed delivers it in that order.
        val n = events.size
        val got = withTimeout(10_000) { feed().follow(lobby, 0).take(n + 2).toList() }
        val seqs = got.map { if (it is ChainEvent) "event ${it.seq}" else "head ${(it as SignedHead).seq}" }
        assertEquals(listOf("event 1", "event 2", "head 2") + (3..n).map { "event $it" } + "head $n", seqs)
        val v = ChainVerifier()
        for (item in got) if (item is ChainEvent) v.accept(item) else v.acceptHead(item as SignedHead)
        assertEquals(v.lastHash, v.head!!.hash)
        assertEquals("stream after=after=0 last=null", seen[0])
        assertEquals("stream after=after=2 last=2", seen[1])
    }

    @Test
    fun `without SSE it long-polls from where it is`() = runBlocking {
        start(sse = false)
        val f = feed()
        val got = withTimeout(10_000) { f.follow(lobby, 1).take(events.size - 1 + 2).toList() }
        // Pages of two events, each followed by its head.
        assertEquals(events.drop(1).map(::seqOf), got.filterIsInstance<ChainEvent>().map { it.seq })
        assertEquals(listOf(3L, 5L), got.filterIsInstance<SignedHead>().map { it.seq })
        assertTrue(got[2] is SignedHead && got[5] is SignedHead, "$got")
        assertTrue(f.polls >= 2)
        assertTrue(seen.any { it.startsWith("poll ") && it.contains("after=1") && it.contains("wait=1") }, "$seen")
    }
}
