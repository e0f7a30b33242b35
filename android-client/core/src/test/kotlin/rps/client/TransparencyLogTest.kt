package rps.client

import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.long
import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.util.Base64

/** The client's log checks against the server's vectors (translog/testdata/vectors.json). */
class TransparencyLogTest {
    private val vectors = TestFiles.json(TestFiles.repoFile("translog/testdata/vectors.json")).jsonObject
    private val vkey = vectors["verifierKey"]!!.jsonPrimitive.content
    private val checkpoints = vectors["checkpoints"]!!.jsonArray.map { TransparencyLog.parse(it.jsonPrimitive.content) }
    private val leaves = vectors["leaves"]!!.jsonArray.map { it.jsonObject }

    private fun hashes(v: JsonObject) = v["proof"]!!.jsonArray.map { Base64.getDecoder().decode(it.jsonPrimitive.content) }

    @Test
    fun `leaves hash as the server's`() {
        for (l in leaves) {
            val entry = l["entry"]!!.jsonPrimitive.content
            val (_, lobby, seq, hash) = entry.trimEnd('\n').split(' ')
            assertArrayEquals(entry.toByteArray(), TransparencyLog.entry(lobby, seq.toLong(), hash))
            assertEquals(l["recordHash"]!!.jsonPrimitive.content, Crypto.hex(TransparencyLog.recordHash(entry.toByteArray())))
        }
    }

    @Test
    fun `checkpoints are signed by the log's key, and only by it`() {
        for (c in checkpoints) {
            assertEquals("rps.example.com/log", c.origin)
            assertTrue(TransparencyLog.signedBy(c, listOf(vkey)))
        }
        val other = vkey.replaceAfterLast('+', "ASs211IGFgPE9NAIImlqdsDquWHMBrjyeM7RCrLk66kv")
        assertFalse(TransparencyLog.signedBy(checkpoints[0], listOf(other)))
        val forged = TransparencyLog.parse(vectors["checkpoints"]!!.jsonArray[0].jsonPrimitive.content.replaceFirst("\n3\n", "\n4\n"))
        assertFalse(TransparencyLog.signedBy(forged, listOf(vkey)))
        assertThrows<IllegalArgumentException> { TransparencyLog.parse("rps.example.com/log\n3\n") }
    }

    @Test
    fun `every leaf's inclusion proof verifies, and not for another leaf`() {
        val tree = checkpoints.last()
        for (v in vectors["inclusion"]!!.jsonArray.map { it.jsonObject }) {
            val index = v["index"]?.jsonPrimitive?.long ?: 0L
            val leaf = Crypto.unhex(leaves[index.toInt()]["recordHash"]!!.jsonPrimitive.content)
            assertTrue(TransparencyLog.verifyInclusion(index, tree.size, leaf, hashes(v), tree.root), "leaf $index")
            val other = Crypto.unhex(leaves[((index + 1) % leaves.size).toInt()]["recordHash"]!!.jsonPrimitive.content)
            assertFalse(TransparencyLog.verifyInclusion(index, tree.size, other, hashes(v), tree.root), "another leaf at $index")
        }
    }

    @Test
    fun `consistency proofs verify, and a forked tree fails`() {
        val (small, big) = checkpoints
        for (v in vectors["consistency"]!!.jsonArray.map { it.jsonObject }) {
            val from = v["from"]!!.jsonPrimitive.long
            if (from == small.size) {
                assertTrue(TransparencyLog.verifyConsistency(small.size, small.root, big.size, big.root, hashes(v)))
                val forked = small.root.copyOf().also { it[0] = (it[0] + 1).toByte() }
                assertFalse(TransparencyLog.verifyConsistency(small.size, forked, big.size, big.root, hashes(v)))
            }
        }
        assertTrue(TransparencyLog.verifyConsistency(big.size, big.root, big.size, big.root, emptyList()))
        assertFalse(TransparencyLog.verifyConsistency(big.size, big.root, small.size, small.root, emptyList()))
    }
}
