package rps.client

import java.io.File

/**
 * The last event of a lobby's log that this device has verified, and the newest signed head seen
 * on that log up to it: a receipt that proves what the server showed, should it later serve
 * another history (`rpsverify --receipts` checks such heads).
 */
data class ChainCheckpoint(val seq: Long, val hash: String, val head: SignedHead? = null)

/**
 * Verified positions in lobbies' logs, so a session resumes verification where the previous one
 * stopped instead of from event 1. A server that later serves another history from before that
 * point fails the link check of the next event.
 */
interface ChainCheckpoints {
    fun load(lobbyId: String): ChainCheckpoint?
    fun save(lobbyId: String, checkpoint: ChainCheckpoint)
}

/**
 * One small file per lobby, replaced atomically: a line "seq hash", then, once a head was kept,
 * a line "head seq hash at keyId signature".
 */
class FileChainCheckpoints(private val dir: File) : ChainCheckpoints {
    init {
        dir.mkdirs()
    }

    private fun fileOf(lobbyId: String): File = FileVault.lobbyFile(dir, lobbyId, "chain")

    @Synchronized
    override fun load(lobbyId: String): ChainCheckpoint? {
        val f = fileOf(lobbyId)
        if (!f.exists()) return null
        val lines = f.readLines()
        val parts = lines.firstOrNull()?.trim()?.split(' ') ?: return null
        val seq = parts.getOrNull(0)?.toLongOrNull()
        val hash = parts.getOrNull(1)
        // An unreadable checkpoint only costs a verification from event 1.
        if (seq == null || seq < 1 || hash == null || !hash.matches(HEX64)) return null
        return ChainCheckpoint(seq, hash, lines.getOrNull(1)?.let { head(lobbyId, it, seq) })
    }

    /** The receipt line, or null when it is unreadable or names an event past the checkpoint. */
    private fun head(lobbyId: String, line: String, checkpointSeq: Long): SignedHead? {
        val p = line.trim().split(' ')
        if (p.size != 6 || p[0] != "head") return null
        val seq = p[1].toLongOrNull() ?: return null
        if (seq < 1 || seq > checkpointSeq || !p[2].matches(HEX64) || !p[5].matches(HEX128)) return null
        return SignedHead(lobbyId, seq, p[2], p[3], p[4], p[5])
    }

    @Synchronized
    override fun save(lobbyId: String, checkpoint: ChainCheckpoint) {
        val text = buildString {
            append("${checkpoint.seq} ${checkpoint.hash}\n")
            checkpoint.head?.let { append("head ${it.seq} ${it.hash} ${it.at} ${it.keyId} ${it.signature}\n") }
        }
        FileVault.writeDurably(fileOf(lobbyId)) { it.write(text.toByteArray()) }
    }

    private companion object {
        val HEX64 = Regex("[0-9a-f]{64}")
        val HEX128 = Regex("[0-9a-f]{128}")
    }
}
