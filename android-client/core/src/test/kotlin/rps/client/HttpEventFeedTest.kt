package rps.client

import com.sun.net.httpserver.HttpServer
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.flow.take
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
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
                ex.sendResponseHeaders(404, -1); ex.close(); return@createContext
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
            ex.responseBody.write(body); ex.close()
        }
        server.start()
    }

    private val heads = Collections.synchronizedList(mutableListOf<SignedHead>())

    /** A head naming event [e] (its signature is not checked by the client). */
    private fun headOf(e: JsonObject) = JsonObject(
        mapOf(
            "lobbyId" to e["lobbyId"]!!, "seq" to e["seq"]!!, "hash" to e["hash"]!!, "at" to e["at"]!!,
            "keyId" to JsonPrimitive("0011223344556677"), "signature" to JsonPrimitive("ab".repeat(64)),
        ),
    )

    /** Completed by the head naming the log's last event. */
    private val lastHead = CompletableDeferred<Unit>()

    private fun feed() = HttpEventFeed(
        HttpRpsApi("http://127.0.0.1:${server.address.port}"),
        onHead = {
            heads += it
            if (it.seq == seqOf(events.last())) lastHead.complete(Unit)
        },
        pollWaitSeconds = 1, backoffMs = 10,
    )

    @Test
    fun `a dropped stream resumes with Last-Event-ID, without gaps or repeats`() = runBlocking {
        start(sse = true)
        // The server writes a batch's head after its last event, and the feed hands heads to onHead
        // as they are read: the stream must stay open until the last head is in, not stop at the
        // last event (stopping there loses the trailing head whenever its bytes arrive a little later).
        val got = withTimeout(10_000) {
            coroutineScope {
                val received = Channel<ChainEvent>(Channel.UNLIMITED)
                val following = launch { feed().follow(lobby, 0).collect(received::send) }
                val all = List(events.size) { received.receive() }
                lastHead.await()
                following.cancel()
                all
            }
        }
        assertEquals(events.map(::seqOf), got.map { it.seq })
        val v = ChainVerifier()
        got.forEach(v::accept)
        // The heads after each batch are kept with the checkpoint as receipts.
        heads.forEach(v::acceptHead)
        assertEquals(listOf(2L, events.size.toLong()), v.receipts.map { it.seq })
        assertEquals(v.lastHash, v.receipts.last().hash)
        assertEquals("stream after=after=0 last=null", seen[0])
        assertEquals("stream after=after=2 last=2", seen[1])
    }

    @Test
    fun `without SSE it long-polls from where it is`() = runBlocking {
        start(sse = false)
        val f = feed()
        val got = withTimeout(10_000) { f.follow(lobby, 1).take(events.size - 1).toList() }
        assertEquals(events.drop(1).map(::seqOf), got.map { it.seq })
        assertTrue(f.polls >= 2)
        assertTrue(heads.isNotEmpty(), "no head from the polls")
        assertTrue(seen.any { it.startsWith("poll ") && it.contains("after=1") && it.contains("wait=1") }, "$seen")
    }
}
