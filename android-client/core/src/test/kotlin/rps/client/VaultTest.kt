package rps.client

import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir
import java.io.File

class VaultTest {
    @TempDir
    lateinit var dir: File

    private fun vault(): FileVault {
        val keys = JceKeyStoreKeys(File(dir, "keys.p12"), "pw".toCharArray())
        return FileVault(File(dir, "vault"), AesGcmSealer(keys::key))
    }

    private val lobby = "5a1f0c1e-8d4b-4c55-9a43-2f1d0e7b6c11"
    private val entry = VaultEntry(lobby, "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b", 2, 3, Commitments.newPassword(), "ck", "rk")

    @Test
    fun `an entry survives a new vault object and is encrypted at rest`() {
        vault().save(entry)
        val again = vault() // a new process: new key store reader, new vault
        assertEquals(entry, again.load(lobby))
        assertEquals(Commitments.commit(3, entry.password), again.load(lobby)!!.commitment)
        val raw = File(dir, "vault/$lobby.vault").readBytes().toString(Charsets.ISO_8859_1)
        assertFalse(raw.contains(entry.password), "the password must not be stored in clear")
        assertFalse(File(dir, "vault/.$lobby.vault.tmp").exists())
    }

    @Test
    fun `clear forgets the entry and a save replaces it`() {
        val v = vault()
        v.save(entry)
        v.save(entry.copy(round = 3))
        assertEquals(3, v.load(lobby)!!.round)
        assertEquals(listOf(lobby), vault().pendingLobbies())
        v.clear(lobby)
        assertNull(v.load(lobby))
        assertNull(vault().load(lobby))
        assertEquals(emptyList<String>(), vault().pendingLobbies())
    }

    @Test
    fun `a tampered file is refused`() {
        vault().save(entry)
        val f = File(dir, "vault/$lobby.vault")
        val b = f.readBytes()
        b[b.size - 1] = (b[b.size - 1].toInt() xor 1).toByte()
        f.writeBytes(b)
        assertThrows(Exception::class.java) { vault().load(lobby) }
    }

    @Test
    fun `the sealer round-trips with a fresh nonce each time`() {
        val s = AesGcmSealer(JceKeyStoreKeys(File(dir, "k.p12"), "x".toCharArray())::key)
        val a = s.seal("hello".toByteArray())
        val b = s.seal("hello".toByteArray())
        assertTrue(!a.contentEquals(b))
        assertArrayEquals("hello".toByteArray(), s.open(a))
    }
}
