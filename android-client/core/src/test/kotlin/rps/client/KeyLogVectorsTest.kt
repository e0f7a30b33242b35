package rps.client

import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows

/** An account's key log as the server writes it (tournament/testdata/key_log.json), verified as a device verifies it. */
class KeyLogVectorsTest {
    private val file = TestFiles.json(TestFiles.repoFile("tournament/testdata/key_log.json")).jsonObject
    private val origin = file["origin"]!!.jsonPrimitive.content
    private val vectors = file["events"]!!.jsonArray.map { it.jsonObject }
    private val events = KeyEvent.listOf(JsonObject(mapOf("events" to file["events"]!!)))

    @Test
    fun `every event's canonical form and hash are the server's`() {
        for ((e, v) in events.zip(vectors)) {
            assertEquals(v["hash"]!!.jsonPrimitive.content, KeyEvent.hashOf(e), "key event ${e.seq}")
        }
    }

    @Test
    fun `the whole log verifies, every key change signed by a key the account had, and recoveries kept as the operator's`() {
        val h = KeyHistory.verify(events.first().accountId, origin, events)
        val seeds = file["seeds"]!!.jsonArray.map { SoftwarePlayerKey(Crypto.unhex(it.jsonPrimitive.content)).keyId }
        assertTrue(seeds.containsAll(h.keys.map { it.keyId }), "${h.keys} made from the seeds")
        assertEquals(events.count { it.type == KeyEvent.KEYS_RECOVERED }, h.recoveries.size)
        // After the recovery only the key the operator put in counts, marked as its.
        assertEquals(listOf(true), h.active.map { it.recovery })
        assertEquals(events.size, h.events.size)
    }

    @Test
    fun `the same log under another origin does not verify`() {
        assertThrows<KeyLogBrokenException> { KeyHistory.verify(events.first().accountId, "$origin.evil", events) }
    }
}
