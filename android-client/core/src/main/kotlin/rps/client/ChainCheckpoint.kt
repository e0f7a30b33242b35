package rps.client

import java.io.File

/** The last event of a lobby's log that this device has verified. */
data class ChainCheckpoint(val seq: Long, val hash: String)

/**
 * Verified positions in lobbies' logs, so a session resumes verification where the previous one
 * stopped instead of from event 1. A server that later serves another history from before that
 * point fails the link check of the next event.
 */
interface ChainCheckpoints {
    fun load(lobbyId: String): ChainCheckpoint?
    fun save(lobbyId: String, checkpoint: ChainCheckpoint)
}

/** One small file per lobby ("seq hash"), replaced atomically. */
class FileChainCheckpoints(private val dir: File) : ChainCheckpoints {
    init {
        dir.mkdirs()
    }

    private fun fileOf(lobbyId: String): File = FileVault.lobbyFile(dir, lobbyId, "chain")

    @Synchronized
    override fun load(lobbyId: String): ChainCheckpoint? {
        val f = fileOf(lobbyId)
        if (!f.exists()) return null
        val parts = f.readText().trim().split(' ')
        val seq = parts.getOrNull(0)?.toLongOrNull()
        val hash = parts.getOrNull(1)
        // An unreadable checkpoint only costs a verification from event 1.
        if (seq == null || seq < 1 || hash == null || !hash.matches(Regex("[0-9a-f]{64}"))) return null
        return ChainCheckpoint(seq, hash)
    }

    @Synchronized
    override fun save(lobbyId: String, checkpoint: ChainCheckpoint) {
        FileVault.writeDurably(fileOf(lobbyId)) { it.write("${checkpoint.seq} ${checkpoint.hash}\n".toByteArray()) }
    }
}
