package rps.client

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.long
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

class EventChainTest {
    private fun event(o: JsonObject) = ChainEvent(
        seq = o["seq"]!!.jsonPrimitive.long,
        type = o["type"]!!.jsonPrimitive.content,
        lobbyId = o["lobbyId"]!!.jsonPrimitive.content,
        gameId = (o["gameId"] as? JsonPrimitive)?.takeIf { it !is JsonNull }?.content,
        at = o["at"]!!.jsonPrimitive.content,
        data = o["data"]!!.jsonObject,
        prevHash = o["prevHash"]!!.jsonPrimitive.content,
        hash = o["hash"]!!.jsonPrimitive.content,
    )

    private fun events(root: JsonElement): List<ChainEvent> {
        val arr = if (root is JsonArray) root else root.jsonObject["events"]!!.jsonArray
        return arr.map { event(it.jsonObject) }
    }

    /** A chain sealed by the Go code (tournament.Seal), generated once into a test resource. */
    private val goChain = events(Json.parseToJsonElement(TestFiles.resource("go-chain-vectors.json")))

    @Test
    fun `a chain sealed by the Go server verifies`() {
        val v = ChainVerifier()
        goChain.forEach(v::accept)
        assertEquals(goChain.size.toLong(), v.lastSeq)
        assertEquals(goChain.last().hash, v.lastHash)
    }

    @Test
    fun `the store's vector file verifies`() {
        val f = TestFiles.repoFile("store/testdata/events.json")
        assertTrue(f.exists(), "store/testdata/events.json is missing: the Go store tests check it in")
        val root = TestFiles.json(f)
        val evs = events(root)
        // The file may hold several lobbies' logs; verify each lobby's chain on its own.
        for ((_, log) in evs.groupBy { it.lobbyId }) {
            val v = ChainVerifier()
            log.sortedBy { it.seq }.forEach(v::accept)
        }
        // Each event may carry the canonical form the server hashed: ours must be byte-identical.
        val arr = if (root is JsonArray) root else root.jsonObject["events"]!!.jsonArray
        for ((i, o) in arr.withIndex()) {
            val c = (o.jsonObject["canonical"] as? JsonPrimitive)?.content ?: continue
            assertEquals(c, EventChain.canonical(evs[i]), "canonical form of event ${evs[i].seq}")
        }
        // Stage digests: {"values": [{"player", "value"}] or null, "digest"}, sorted bytewise by player here.
        val digests = (root as? JsonObject)?.get("digests")?.jsonArray ?: JsonArray(emptyList())
        for (d in digests) {
            val o = d.jsonObject
            val values = ((o["values"] ?: o["items"]) as? JsonArray ?: JsonArray(emptyList()))
                .sortedBy { it.jsonObject["player"]!!.jsonPrimitive.content.toByteArray().joinToString(",") { b -> "%03d".format(b.toInt() and 0xff) } }
            assertEquals(o["digest"]!!.jsonPrimitive.content, Crypto.hex(Crypto.blake2b256(CanonicalJson.encodeToBytes(JsonArray(values)))))
        }
        assertTrue(evs.isNotEmpty())
    }

    @Test
    fun `a changed data field breaks the chain`() {
        val tampered = goChain.toMutableList()
        val e = tampered[2]
        tampered[2] = e.copy(data = JsonObject(e.data + ("pot" to JsonPrimitive(1000))))
        val v = ChainVerifier()
        v.accept(tampered[0]); v.accept(tampered[1])
        val ex = assertThrows(ChainBrokenException::class.java) { v.accept(tampered[2]) }
        assertEquals(3, ex.seq)
        assertEquals(2, v.lastSeq)
    }

    @Test
    fun `a gap, a repeat or a bad link breaks the chain`() {
        val v = ChainVerifier()
        v.accept(goChain[0])
        assertThrows(ChainBrokenException::class.java) { v.accept(goChain[2]) }
        assertThrows(ChainBrokenException::class.java) { v.accept(goChain[0]) }
        assertThrows(ChainBrokenException::class.java) { v.accept(goChain[1].copy(prevHash = EventChain.ZERO_HASH)) }
        assertThrows(ChainBrokenException::class.java) { v.accept(goChain[1].copy(at = "2025-01-01T12:00:00.002Z")) }
        v.accept(goChain[1])
    }

    @Test
    fun `signed heads are kept as receipts and one that contradicts the checkpoint breaks the chain`() {
        val v = ChainVerifier()
        v.accept(goChain[0]); v.accept(goChain[1])
        val head = SignedHead(goChain[1].lobbyId, 2, goChain[1].hash, goChain[1].at, "0011223344556677", "ab".repeat(64))
        v.acceptHead(head)
        v.acceptHead(head)
        assertEquals(listOf(head), v.receipts)
        val resumed = ChainVerifier(v.lastSeq, v.lastHash, v.receipts)
        assertEquals(listOf(head), resumed.receipts)
        val ex = assertThrows(ChainBrokenException::class.java) { v.acceptHead(head.copy(hash = goChain[0].hash)) }
        assertEquals(2, ex.seq)
    }

    @Test
    fun `the empty digest is blake2b of brackets`() {
        assertEquals(Crypto.hex(Crypto.blake2b256("[]".toByteArray())), Crypto.hex(Crypto.blake2b256(CanonicalJson.encodeToBytes(JsonArray(emptyList())))))
    }
}
