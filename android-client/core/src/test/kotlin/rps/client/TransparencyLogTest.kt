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

    @Test
    fun `a witness's cosignature made by torchwood verifies under its key, and only there`() {
        val witness = vectors["witnessKey"]!!.jsonPrimitive.content
        val signed = vectors["cosignedCheckpoint"]!!.jsonPrimitive.content
        val c = TransparencyLog.parse(signed)
        assertTrue(TransparencyLog.signedBy(c, listOf(vkey)), "the log's own signature is still there")
        assertEquals(listOf("witness.example/w1"), TransparencyLog.cosigners(c, listOf(witness, witness)))
        // The log's key is no witness's, and a witness key is no log key.
        assertEquals(emptyList<String>(), TransparencyLog.cosigners(c, listOf(vkey)))
        assertFalse(TransparencyLog.signedBy(c, listOf(witness)))
        // A cosignature over another checkpoint, or with another time, does not verify.
        val other = TransparencyLog.parse(signed.replaceFirst("\n7\n", "\n8\n"))
        assertEquals(emptyList<String>(), TransparencyLog.cosigners(other, listOf(witness)))
        val line = signed.lines().single { it.startsWith("\u2014 witness.example/w1 ") }
        val raw = Base64.getDecoder().decode(line.substringAfterLast(' '))
        raw[4 + 7] = (raw[4 + 7].toInt() xor 1).toByte()
        val retimed = TransparencyLog.parse(signed.replace(line, "\u2014 witness.example/w1 " + Base64.getEncoder().encodeToString(raw)))
        assertEquals(emptyList<String>(), TransparencyLog.cosigners(retimed, listOf(witness)))
        // A key whose hash does not match its name and key verifies nothing.
        val misnamed = witness.replaceFirst("witness.example/w1+", "witness.example/w2+")
        assertEquals(emptyList<String>(), TransparencyLog.cosigners(c, listOf(misnamed)))
    }

    @Test
    fun `a key rotation signed by the old key hands the log over to the new one, and nothing else does`() {
        val statement = vectors["rotation"]!!.jsonPrimitive.content
        val rotated = vectors["rotatedKey"]!!.jsonPrimitive.content
        val r = TransparencyLog.rotation("rps.example.com/log", statement)!!
        assertEquals(vkey, r.oldKey)
        assertEquals(rotated, r.newKey)
        assertEquals(7L, r.size)
        assertArrayEquals(checkpoints.last().root, r.root)
        assertEquals(listOf(vkey, rotated), TransparencyLog.followRotations("rps.example.com/log", listOf(vkey), listOf(statement)).keys)
        // The new key signs the same tree, and the witness cosigns it (torchwood's cosignature).
        val after = TransparencyLog.parse(vectors["rotatedCheckpoint"]!!.jsonPrimitive.content)
        assertFalse(TransparencyLog.signedBy(after, listOf(vkey)))
        assertTrue(TransparencyLog.signedBy(after, listOf(rotated)))
        assertEquals(listOf("witness.example/w1"), TransparencyLog.cosigners(after, listOf(vectors["witnessKey"]!!.jsonPrimitive.content)))

        // A statement changed, of another log, signed by the new key, or a checkpoint is none.
        assertEquals(null, TransparencyLog.rotation("rps.example.com/log", statement.replaceFirst("\n7\n", "\n8\n")))
        assertEquals(null, TransparencyLog.rotation("rps.other/log", statement))
        val k1 = NoteSigner("rps.example.com/log", NoteSigner.ED25519, 1)
        val k2 = NoteSigner("rps.example.com/log", NoteSigner.ED25519, 2)
        val text = "rps.example.com/log key rotation\n7\n${Base64.getEncoder().encodeToString(
            r.root,
        )}\n${k1.verifierKey}\n${k2.verifierKey}\n"
        assertEquals(k2.verifierKey, TransparencyLog.rotation("rps.example.com/log", text + "\n" + k1.sign(text) + "\n")?.newKey)
        assertEquals(null, TransparencyLog.rotation("rps.example.com/log", text + "\n" + k2.sign(text) + "\n"))
        assertEquals(null, TransparencyLog.rotation("rps.example.com/log", vectors["checkpoints"]!!.jsonArray[1].jsonPrimitive.content))
        // A key trusted by no chain gains nothing from it.
        assertEquals(listOf(rotated), TransparencyLog.followRotations("rps.example.com/log", listOf(rotated), listOf(statement)).keys)
    }
}
