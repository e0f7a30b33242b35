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
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir
import java.io.File

class EventChainTest {
    private fun event(o: JsonObject): ChainEvent {
        val type = o["type"]!!.jsonPrimitive.content
        val data = o["data"]!!.jsonObject
        return ChainEvent(
            seq = o["seq"]!!.jsonPrimitive.long,
            type = type,
            lobbyId = o["lobbyId"]!!.jsonPrimitive.content,
            gameId = (o["gameId"] as? JsonPrimitive)?.takeIf { it !is JsonNull }?.content,
            at = o["at"]!!.jsonPrimitive.content,
            data = data,
            prevHash = o["prevHash"]!!.jsonPrimitive.content,
            hash = o["hash"]!!.jsonPrimitive.content,
            typed = Mappers.eventData(type, data),
        )
    }

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
        // Stage digests: {"values": [{"player", "value"}] or null, "salt" (moves_closed's) or absent, "digest"}.
        val digests = storeDigests(root)
        assertTrue(digests.any { it.salt != null }, "the vectors have a salted digest")
        for (d in digests) {
            assertEquals(d.digest, SealedDigests.digest(d.values, d.salt))
            assertTrue(SealedDigests.matches(d.digest, d.values, d.salt))
        }
        assertTrue(evs.isNotEmpty())
    }

    private data class DigestVector(val values: Map<String, String>, val salt: String?, val digest: String)

    private fun storeDigests(root: JsonElement): List<DigestVector> =
        ((root as? JsonObject)?.get("digests")?.jsonArray ?: JsonArray(emptyList())).map { d ->
            val o = d.jsonObject
            val values = (o["values"] as? JsonArray ?: JsonArray(emptyList())).associate {
                it.jsonObject["player"]!!.jsonPrimitive.content to it.jsonObject["value"]!!.jsonPrimitive.content
            }
            DigestVector(values, (o["salt"] as? JsonPrimitive)?.content, o["digest"]!!.jsonPrimitive.content)
        }

    @Test
    fun `a salted digest checks only with its salt and its values`() {
        val d = storeDigests(TestFiles.json(TestFiles.repoFile("store/testdata/events.json"))).first { it.salt != null }
        val salt = d.salt!!
        assertFalse(SealedDigests.matches(d.digest, d.values, null), "without the salt")
        assertFalse(SealedDigests.matches(d.digest, d.values, "5a".repeat(32)), "with another salt")
        assertFalse(SealedDigests.matches(d.digest, d.values, salt.uppercase()), "with a malformed salt")
        val other = d.values.mapValues { (_, v) -> v.replaceRange(0, 2, "00") }
        assertFalse(SealedDigests.matches(d.digest, other, salt), "with other commitments")
        assertFalse(SealedDigests.matches("00" + d.digest.drop(2), d.values, salt), "another digest")
        // The revealing events carry the salt through the typed variants.
        val resolved = Json.parseToJsonElement(
            """{"round":1,"resolution":"classic","revealed":2,"present":1,"counts":[2],"survivors":1,"remaining":2,""" +
                """"digest":"${d.digest}","salt":"$salt"}""",
        ).jsonObject
        assertEquals(salt, (Mappers.eventData("round_resolved", resolved) as EventData.RoundResolved).salt)
        val finished = Json.parseToJsonElement(
            """{"winner":"2b9c7e4a-3f61-4d2a-9c0e-8a5b1d7f3e20","amount":200,"round":1,"salt":"$salt"}""",
        ).jsonObject
        assertEquals(salt, (Mappers.eventData("game_finished", finished) as EventData.GameFinished).salt)
    }

    private val storeVectors by lazy { events(TestFiles.json(TestFiles.repoFile("store/testdata/events.json"))) }

    @Test
    fun `every event of the Go vector files decodes to its typed variant`() {
        val cfg = GameConfig(100, 2, 60_000, 60_000, 60_000, "rpsls", "classic", true, 3, 0)
        val alice = "2b9c7e4a-3f61-4d2a-9c0e-8a5b1d7f3e20"
        val rulesetHash = "9cd1769e88ab48e63c79c483a6314ce34f9c117cf4d67aa400ef1d84db64f63a"
        assertEquals(
            listOf(
                EventData.LobbyCreated("Friday <night> & \"friends\" \u2028 \u00fc", cfg),
                EventData.GameOpened(1, cfg, rulesetHash),
                EventData.PlayerRegistered(alice, 1, 1, 100, 1_735_732_860_001),
                EventData.GameStopped("tab\there, emoji \uD83C\uDFB2", Stage.REGISTRATION, 0, 100, 1, 100, 0),
            ),
            storeVectors.map { it.typed },
        )
        val byType = goChain.associate { it.type to it.typed }
        assertEquals(
            EventData.RoundResolved(
                1, "weighted", 3, 0b101, listOf(2, 0, 1, 0, 0), listOf(1, 0, -2, 0, 0), 0b1, 2,
                "1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f0e",
            ),
            byType["round_resolved"],
        )
        assertEquals(EventData.LobbyClosed, byType["lobby_closed"])
        assertEquals(EventData.PlayerRegistered(alice, 1, 1, 100, 1_735_732_890_123), byType["player_registered"])
        assertEquals(4L, goChain.count { it.typed !is EventData.Unknown }.toLong())
        // This older vector sealed a zero config (resolution ""), which no server sends: not readable, still hashed.
        val opened = byType["game_opened"] as EventData.Unknown
        assertTrue(opened.reason.contains("schema"), opened.reason)
    }

    @Test
    fun `an unknown type or unreadable data decodes to unknown and still verifies`() {
        val data = JsonObject(mapOf("shiny" to JsonPrimitive(1), "nested" to JsonObject(mapOf("b" to JsonPrimitive("x")))))
        assertEquals(EventData.Unknown("lobby_renamed", "type not known to this client"), Mappers.eventData("lobby_renamed", data))
        assertTrue(Mappers.eventData("move_committed", JsonObject(mapOf("round" to JsonPrimitive(1)))) is EventData.Unknown)
        assertTrue(Mappers.eventData("move_committed", data) is EventData.Unknown)
        val badUuid = JsonObject(mapOf("player" to JsonPrimitive("nobody"), "round" to JsonPrimitive(1), "committed" to JsonPrimitive(1)))
        assertTrue(Mappers.eventData("move_committed", badUuid) is EventData.Unknown)
        // Fields a newer server adds to a known type are ignored.
        val more = JsonObject(mapOf("gapMs" to JsonPrimitive(5), "reason" to JsonPrimitive("power cut")))
        assertEquals(EventData.ClockShifted(5), Mappers.eventData("clock_shifted", more))

        val last = storeVectors.last()
        val future = ChainEvent(
            last.seq + 1, "lobby_renamed", last.lobbyId, null, last.at, data, last.hash, "",
            Mappers.eventData(
                "lobby_renamed",
                data,
            ),
        )
            .let { it.copy(hash = EventChain.hash(it.prevHash, it)) }
        val v = ChainVerifier()
        (storeVectors + future).forEach(v::accept)
        assertEquals(future.hash, v.lastHash)
        assertThrows(ChainBrokenException::class.java) {
            ChainVerifier(last.seq, last.hash).accept(future.copy(data = JsonObject(data + ("shiny" to JsonPrimitive(2)))))
        }
    }

    @Test
    fun `a changed data field breaks the chain`() {
        val tampered = goChain.toMutableList()
        val e = tampered[2]
        tampered[2] = e.copy(data = JsonObject(e.data + ("pot" to JsonPrimitive(1000))))
        val v = ChainVerifier()
        v.accept(tampered[0])
        v.accept(tampered[1])
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
    fun `a head naming the last verified event is kept, one contradicting it breaks the chain`() {
        val v = ChainVerifier()
        v.accept(goChain[0])
        v.accept(goChain[1])
        val head = SignedHead(goChain[1].lobbyId, 2, goChain[1].hash, goChain[1].at, "0011223344556677", "ab".repeat(64))
        assertTrue(v.acceptHead(head))
        assertFalse(v.acceptHead(head), "the same head again changes nothing")
        assertEquals(head, v.head)
        // Heads of other events cannot be checked against the log here: not kept.
        assertFalse(v.acceptHead(head.copy(seq = 1, hash = goChain[0].hash)))
        assertFalse(v.acceptHead(head.copy(seq = 3, hash = goChain[2].hash)))
        assertEquals(head, v.head)
        v.accept(goChain[2])
        assertEquals(ChainCheckpoint(3, goChain[2].hash, head), v.checkpoint, "the receipt stays valid as the log grows")

        val resumed = ChainVerifier(2, goChain[1].hash, head)
        assertEquals(head, resumed.head)
        val ex = assertThrows(ChainBrokenException::class.java) { resumed.acceptHead(head.copy(hash = goChain[0].hash)) }
        assertEquals(2, ex.seq)
    }

    @Test
    fun `checkpoints keep their receipt across restarts, and an unreadable receipt only loses itself`(@TempDir dir: File) {
        val head = SignedHead(goChain[1].lobbyId, 2, goChain[1].hash, goChain[1].at, "0011223344556677", "ab".repeat(64))
        val cp = ChainCheckpoint(3, goChain[2].hash, head)
        FileChainCheckpoints(dir).save(head.lobbyId, cp)
        assertEquals(cp, FileChainCheckpoints(dir).load(head.lobbyId))
        FileChainCheckpoints(dir).save(head.lobbyId, cp.copy(head = null))
        assertEquals(cp.copy(head = null), FileChainCheckpoints(dir).load(head.lobbyId))

        val file = dir.listFiles()!!.single()
        file.writeText("3 ${goChain[2].hash}\nhead 2 ${head.hash} ${head.at} ${head.keyId} abab\n")
        assertEquals(cp.copy(head = null), FileChainCheckpoints(dir).load(head.lobbyId))
        file.writeText("1 ${goChain[0].hash}\nhead 2 ${head.hash} ${head.at} ${head.keyId} ${head.signature}\n")
        assertEquals(ChainCheckpoint(1, goChain[0].hash), FileChainCheckpoints(dir).load(head.lobbyId), "a head past the checkpoint")
    }

    @Test
    fun `the empty digest is blake2b of brackets`() {
        assertEquals(Crypto.hex(Crypto.blake2b256("[]".toByteArray())), SealedDigests.digest(emptyMap(), null))
    }
}
