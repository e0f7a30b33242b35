package rps.client

import kotlinx.serialization.Serializable
import kotlinx.serialization.json.Json
import java.io.File
import java.io.FileOutputStream
import java.nio.channels.FileChannel
import java.nio.file.AtomicMoveNotSupportedException
import java.nio.file.Files
import java.nio.file.StandardCopyOption
import java.nio.file.StandardOpenOption
import java.security.KeyStore
import java.security.SecureRandom
import javax.crypto.Cipher
import javax.crypto.KeyGenerator
import javax.crypto.SecretKey
import javax.crypto.spec.GCMParameterSpec

/**
 * What a player must keep between commit and reveal. Written durably before the commitment is
 * sent; cleared once the reveal is accepted. The Idempotency-Keys are kept too, so a retry after a
 * crash is recognised by the server as the same request.
 */
@Serializable
data class VaultEntry(
    val lobbyId: String,
    val gameId: String,
    val round: Int,
    val move: Int,
    val password: String,
    val commitKey: String,
    val revealKey: String,
) {
    val reveal: String get() = Commitments.reveal(move, password)
    val commitment: String get() = Commitments.commit(reveal)
    fun isFor(gameId: String, round: Int): Boolean = this.gameId == gameId && this.round == round
}

/** Durable storage of one pending move per lobby. Implementations must be crash-safe. */
interface Vault {
    fun load(lobbyId: String): VaultEntry?

    /** Returns only once the entry is on durable storage. */
    fun save(entry: VaultEntry)
    fun clear(lobbyId: String)

    /** The lobbies with a saved move: after a restart their sessions resume (and reveal) at once. */
    fun pendingLobbies(): List<String>
}

/** Encrypts and authenticates vault files. */
interface Sealer {
    fun seal(plain: ByteArray): ByteArray
    fun open(sealed: ByteArray): ByteArray
}

/** AES-256-GCM with a random 12-byte nonce stored in front of the ciphertext. */
class AesGcmSealer(private val key: () -> SecretKey) : Sealer {
    private val random = SecureRandom()

    override fun seal(plain: ByteArray): ByteArray {
        val c = Cipher.getInstance("AES/GCM/NoPadding")
        val iv = ByteArray(12).also(random::nextBytes)
        c.init(Cipher.ENCRYPT_MODE, key(), GCMParameterSpec(128, iv))
        return iv + c.doFinal(plain)
    }

    override fun open(sealed: ByteArray): ByteArray {
        val c = Cipher.getInstance("AES/GCM/NoPadding")
        c.init(Cipher.DECRYPT_MODE, key(), GCMParameterSpec(128, sealed, 0, 12))
        return c.doFinal(sealed, 12, sealed.size - 12)
    }
}

/** The JVM's key source: an AES key in a PKCS12 key store file, created on first use (JCE). */
class JceKeyStoreKeys(private val file: File, private val password: CharArray, private val alias: String = "rps-vault") {
    @Synchronized
    fun key(): SecretKey {
        val ks = KeyStore.getInstance("PKCS12")
        if (file.exists()) {
            file.inputStream().use { ks.load(it, password) }
            (ks.getKey(alias, password) as? SecretKey)?.let { return it }
        } else {
            ks.load(null, password)
        }
        val key = KeyGenerator.getInstance("AES").apply { init(256) }.generateKey()
        ks.setEntry(alias, KeyStore.SecretKeyEntry(key), KeyStore.PasswordProtection(password))
        file.parentFile?.mkdirs()
        FileVault.writeDurably(file) { out -> ks.store(out, password) }
        return key
    }
}

/**
 * One sealed file per lobby in [dir]. A save writes a temporary file, forces it to disk, renames it
 * over the old one atomically and forces the directory, so a crash leaves the old or the new
 * entry, never a torn one.
 */
class FileVault(private val dir: File, private val sealer: Sealer) : Vault {
    private val json = Json { ignoreUnknownKeys = true }

    init {
        dir.mkdirs()
    }

    private fun fileOf(lobbyId: String): File = lobbyFile(dir, lobbyId, "vault")

    @Synchronized
    override fun load(lobbyId: String): VaultEntry? {
        val f = fileOf(lobbyId)
        if (!f.exists()) return null
        val plain = sealer.open(f.readBytes())
        return json.decodeFromString(VaultEntry.serializer(), plain.toString(Charsets.UTF_8))
    }

    @Synchronized
    override fun save(entry: VaultEntry) {
        val bytes = sealer.seal(json.encodeToString(VaultEntry.serializer(), entry).toByteArray(Charsets.UTF_8))
        writeDurably(fileOf(entry.lobbyId)) { it.write(bytes) }
    }

    @Synchronized
    override fun clear(lobbyId: String) {
        val f = fileOf(lobbyId)
        if (f.delete()) syncDir(dir)
    }

    @Synchronized
    override fun pendingLobbies(): List<String> =
        dir.list().orEmpty().filter { it.endsWith(".vault") && !it.startsWith(".") }.map { it.removeSuffix(".vault") }.sorted()

    companion object {
        /** The file of one lobby in [dir]; the id is checked so it can never name another path. */
        fun lobbyFile(dir: File, lobbyId: String, extension: String): File {
            require(lobbyId.matches(Regex("[A-Za-z0-9-]{1,64}"))) { "bad lobby id" }
            return File(dir, "$lobbyId.$extension")
        }

        fun writeDurably(target: File, write: (FileOutputStream) -> Unit) {
            val dir = target.absoluteFile.parentFile
            val tmp = File(dir, ".${target.name}.tmp")
            FileOutputStream(tmp).use { out ->
                write(out)
                out.flush()
                out.fd.sync()
            }
            try {
                Files.move(tmp.toPath(), target.toPath(), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING)
            } catch (_: AtomicMoveNotSupportedException) {
                Files.move(tmp.toPath(), target.toPath(), StandardCopyOption.REPLACE_EXISTING)
            }
            syncDir(dir)
        }

        /** Makes a rename durable; not every platform can open a directory, which is then skipped. */
        private fun syncDir(dir: File) {
            try {
                FileChannel.open(dir.toPath(), StandardOpenOption.READ).use { it.force(true) }
            } catch (_: Exception) {
            }
        }
    }
}

/** A vault that forgets everything when the process ends; for previews only. */
class MemoryVault : Vault {
    private val entries = HashMap<String, VaultEntry>()

    @Synchronized override fun load(lobbyId: String) = entries[lobbyId]

    @Synchronized override fun save(entry: VaultEntry) {
        entries[entry.lobbyId] = entry
    }

    @Synchronized override fun clear(lobbyId: String) {
        entries.remove(lobbyId)
    }

    @Synchronized override fun pendingLobbies() = entries.keys.sorted()
}
