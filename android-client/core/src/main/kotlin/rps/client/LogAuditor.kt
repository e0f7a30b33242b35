package rps.client

import kotlinx.coroutines.CoroutineDispatcher
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.sync.Mutex
import kotlinx.coroutines.sync.withLock
import kotlinx.coroutines.withContext
import java.io.File
import java.util.Base64

/**
 * What this device trusts and keeps of one server's transparency log: the log's [origin], the
 * note verifier [keys] it trusts, and the newest [checkpoint] it verified (a signed note), which
 * every later checkpoint must extend.
 *
 * Trust on first use: at first contact the device trusts the keys `GET /v1/log` lists then. A key
 * listed later is trusted only when the server lists it as the rotation of a trusted key (that key
 * retired, and this one the next to start signing); any other new key, or a new origin, is not, and
 * a checkpoint it signs is a tampering notice. A declared rotation cannot hide a fork: the new
 * key's checkpoints must still be consistent with the kept one.
 */
data class LogTrust(val origin: String, val keys: List<String>, val checkpoint: String? = null)

/** Where [LogTrust]s are kept, per server. */
interface LogTrusts {
    fun load(server: String): LogTrust?
    fun save(server: String, trust: LogTrust)
}

/**
 * One small file per server (named by a hash of its address) in [dir], the folder of the chain
 * checkpoints, replaced atomically: a line "origin <origin>", a line "key <verifier key>" per
 * trusted key, and once one was verified, "checkpoint <base64 of the signed checkpoint>".
 */
class FileLogTrusts(private val dir: File) : LogTrusts {
    init {
        dir.mkdirs()
    }

    private fun fileOf(server: String): File =
        File(dir, "server-" + Crypto.hex(Crypto.blake2b256(server.toByteArray(Charsets.UTF_8))).take(32) + ".log")

    @Synchronized
    override fun load(server: String): LogTrust? {
        val f = fileOf(server)
        if (!f.exists()) return null
        var origin: String? = null
        val keys = mutableListOf<String>()
        var checkpoint: String? = null
        for (line in f.readLines()) {
            val (tag, value) = line.split(' ', limit = 2).takeIf { it.size == 2 } ?: continue
            when (tag) {
                "origin" -> origin = value
                "key" -> keys += value
                "checkpoint" -> checkpoint = try {
                    String(Base64.getDecoder().decode(value), Charsets.UTF_8)
                } catch (_: IllegalArgumentException) {
                    null
                }
            }
        }
        // A file this device cannot read back costs the protection of what it kept: start afresh.
        return if (origin == null || keys.isEmpty()) null else LogTrust(origin, keys, checkpoint)
    }

    @Synchronized
    override fun save(server: String, trust: LogTrust) {
        val text = buildString {
            append("origin ${trust.origin}\n")
            trust.keys.forEach { append("key $it\n") }
            trust.checkpoint?.let { append("checkpoint ${Base64.getEncoder().encodeToString(it.toByteArray(Charsets.UTF_8))}\n") }
        }
        FileVault.writeDurably(fileOf(server)) { it.write(text.toByteArray(Charsets.UTF_8)) }
    }
}

/**
 * Which witnesses' cosignatures a checkpoint needs: at least [quorum] of [witnesses] (C2SP
 * cosignature verifier keys). [witnesses] null: those `GET /v1/log` lists, whose cosignatures are
 * counted but, with the default quorum 0, not required (the app's default; a player who knows
 * witnesses of their own configures them with a quorum).
 */
data class WitnessPolicy(val witnesses: List<String>? = null, val quorum: Int = 0) {
    init {
        require(quorum >= 0) { "a negative quorum" }
        require(witnesses == null || quorum <= witnesses.size) { "a quorum of $quorum out of ${witnesses?.size} witnesses" }
    }
}

/** What the log says about one event of a lobby. */
sealed interface LogOutcome {
    /**
     * Event [seq] is leaf [leafIndex] of the checkpoint of [treeSize] leaves, signed by a trusted
     * key, cosigned by [cosigners], consistent with the checkpoint kept before ([consistentWith]
     * leaves; null when none was kept), and now kept itself if it is newer.
     */
    data class Included(val seq: Long, val leafIndex: Long, val treeSize: Long, val cosigners: List<String>, val consistentWith: Long?) :
        LogOutcome

    /** No published checkpoint holds event [seq] yet: the log runs about a second behind play. */
    data class NotLogged(val seq: Long) : LogOutcome

    /** The checkpoint of [treeSize] leaves is cosigned by [cosigners] only, fewer than the policy's [quorum]; not kept. */
    data class NotCosigned(val seq: Long, val treeSize: Long, val cosigners: List<String>, val quorum: Int) : LogOutcome

    /** The server keeps no transparency log (an older server) and this device never kept a checkpoint of it. */
    data object NoLog : LogOutcome
}

/**
 * Checks one server's transparency log for every session of that server (one instance per server,
 * shared, so the kept checkpoint only grows): the inclusion of a lobby's event in the latest
 * published checkpoint, that checkpoint's signature by a trusted key and its witnesses'
 * cosignatures under [policy], and its consistency with the checkpoint kept from before (C2SP
 * signed notes, RFC 6962 proofs, with [TransparencyLog]). Requests and checks run one at a time,
 * so an answer in flight never meets a kept checkpoint newer than itself.
 */
class LogAuditor(
    server: String,
    private val api: PlayerApi,
    private val trusts: LogTrusts? = null,
    private val policy: WitnessPolicy = WitnessPolicy(),
    private val io: CoroutineDispatcher = Dispatchers.IO,
) {
    private val server = server.trimEnd('/')
    private val lock = Mutex()
    private var info: LogInfo? = null
    private var trust: LogTrust? = null
    private var loaded = false

    /** What this device trusts and keeps of the log now (null before first contact). */
    val trusted: LogTrust? get() = trust

    /**
     * Proves that the lobby's event [seq], whose chain hash this device verified as [hash], is in
     * the log. Throws [RpsException.LogMisbehavior] when the log contradicts itself or what this
     * device kept, and the request's error when the server cannot be asked.
     */
    suspend fun prove(lobbyId: String, seq: Long, hash: String): LogOutcome = lock.withLock {
        if (!loaded) {
            trust = withContext(io) { trusts?.load(server) }
            loaded = true
        }
        val log = info ?: readInfo() ?: return@withLock if (trust?.checkpoint != null) LogOutcome.NotLogged(seq) else LogOutcome.NoLog
        val p = try {
            api.logInclusion(lobbyId, seq)
        } catch (e: RpsException.Problem) {
            if (e.code == ErrorCode.NOT_LOGGED) return@withLock LogOutcome.NotLogged(seq)
            throw e
        }
        val c = parse(p.checkpoint)
        val t = trustedSigner(c, p.checkpoint, trust ?: firstContact(log))
        val consistentWith = extendsKept(c, p.checkpoint, t)
        val cosigners = TransparencyLog.cosigners(c, policy.witnesses ?: (info ?: log).witnesses.map { it.verifierKey })
        if (cosigners.size < policy.quorum) return@withLock LogOutcome.NotCosigned(seq, c.size, cosigners, policy.quorum)
        checkInclusion(lobbyId, seq, hash, p, c, t.checkpoint)
        val kept = t.checkpoint?.let(::parse)
        if (kept == null || c.size > kept.size) keep(t.copy(checkpoint = p.checkpoint))
        LogOutcome.Included(seq, p.leafIndex, c.size, cosigners, consistentWith)
    }

    /** `GET /v1/log`, or null when the server keeps no log. */
    private suspend fun readInfo(): LogInfo? = try {
        api.logInfo().also { info = it }
    } catch (e: RpsException.Problem) {
        if (e.code != ErrorCode.NOT_FOUND) throw e
        null
    }

    private suspend fun firstContact(log: LogInfo): LogTrust =
        LogTrust(log.origin, log.keys.map { it.verifierKey }.filter { it.startsWith(log.origin + "+") }).also { keep(it) }

    private suspend fun keep(t: LogTrust) {
        trust = t
        trusts?.let { withContext(io) { it.save(server, t) } }
    }

    private fun parse(signed: String): TransparencyLog.Checkpoint = try {
        TransparencyLog.parse(signed)
    } catch (e: IllegalArgumentException) {
        throw RpsException.Unexpected("a malformed checkpoint: ${e.message}", e)
    }

    /**
     * The trust under which [c] is signed by a trusted key: [t], or [t] with the rotations the
     * server declared since (the log's keys are read again, as a rotation would change them).
     */
    private suspend fun trustedSigner(c: TransparencyLog.Checkpoint, signed: String, t: LogTrust): LogTrust {
        if (c.origin == t.origin && TransparencyLog.signerOf(c, t.keys) != null) return t
        val rotated = withRotations(t, readInfo()?.keys.orEmpty())
        if (rotated != t) keep(rotated)
        if (c.origin == rotated.origin && TransparencyLog.signerOf(c, rotated.keys) != null) return rotated
        val signers = c.signatures.joinToString { "${it.name} (key hash ${Crypto.hex(it.keyHash)})" }
        throw RpsException.LogMisbehavior(
            RpsException.LogMisbehavior.Kind.UNTRUSTED_KEY,
            "the checkpoint of ${c.origin} is signed by $signers; this device trusts ${rotated.origin}'s keys ${rotated.keys}",
            rotated.checkpoint,
            signed,
        )
    }

    /**
     * The number of leaves of the kept checkpoint [c] extends (null when none is kept): a smaller
     * tree, another root at the same size or a consistency proof that fails is misbehavior.
     */
    private suspend fun extendsKept(c: TransparencyLog.Checkpoint, signed: String, t: LogTrust): Long? {
        val keptText = t.checkpoint ?: return null
        val kept = parse(keptText)
        fun misbehavior(kind: RpsException.LogMisbehavior.Kind, reason: String, proof: List<String> = emptyList()) =
            RpsException.LogMisbehavior(kind, reason, keptText, signed, proof)
        when {
            c.size < kept.size -> throw misbehavior(
                RpsException.LogMisbehavior.Kind.ROLLED_BACK,
                "the log shrank from ${kept.size} to ${c.size} leaves",
            )
            c.size == kept.size && !c.root.contentEquals(kept.root) -> throw misbehavior(
                RpsException.LogMisbehavior.Kind.FORKED,
                "two trees of ${c.size} leaves with different roots",
            )
            c.size > kept.size -> {
                val p = api.logConsistency(kept.size, c.size)
                val proof = decode(p.proof)
                if (proof == null || !TransparencyLog.verifyConsistency(kept.size, kept.root, c.size, c.root, proof)) {
                    throw misbehavior(
                        RpsException.LogMisbehavior.Kind.FORKED,
                        "the consistency proof from ${kept.size} to ${c.size} leaves fails",
                        p.proof,
                    )
                }
            }
        }
        return kept.size
    }

    /** [p] proves the leaf of (lobby, [seq], [hash]) in [c]; otherwise misbehavior. */
    private fun checkInclusion(
        lobbyId: String,
        seq: Long,
        hash: String,
        p: LogInclusion,
        c: TransparencyLog.Checkpoint,
        kept: String?,
    ) {
        val proof = decode(p.proof)
        fun proves(h: String) = proof != null &&
            TransparencyLog.verifyInclusion(p.leafIndex, c.size, TransparencyLog.recordHash(TransparencyLog.entry(lobbyId, seq, h)), proof, c.root)
        if (p.lobbyId == lobbyId && p.seq == seq && p.treeSize == c.size && proves(hash)) return
        val (kind, reason) = if (p.lobbyId == lobbyId && p.seq == seq && p.hash != hash && p.treeSize == c.size && proves(p.hash)) {
            RpsException.LogMisbehavior.Kind.FORKED to
                "the log holds hash ${p.hash} for event $seq of lobby $lobbyId; the history this device verified has $hash"
        } else {
            RpsException.LogMisbehavior.Kind.BAD_PROOF to
                "the inclusion proof of event $seq of lobby $lobbyId (leaf ${p.leafIndex}) fails in the checkpoint of ${c.size} leaves"
        }
        throw RpsException.LogMisbehavior(kind, reason, kept, p.checkpoint, p.proof)
    }

    private fun decode(hashes: List<String>): List<ByteArray>? = try {
        hashes.map { Base64.getDecoder().decode(it) }.takeIf { l -> l.all { it.size == 32 } }
    } catch (_: IllegalArgumentException) {
        null
    }

    companion object {
        /**
         * [t] with the keys [listed] declares as rotations of trusted ones: a key is trusted when a
         * trusted key of the same origin is listed as retired and this key is the first to start
         * signing from then on. Repeated, so a chain of rotations is followed.
         */
        fun withRotations(t: LogTrust, listed: List<LogKeyInfo>): LogTrust {
            val same = listed.filter { it.verifierKey.startsWith(t.origin + "+") }
            val trusted = LinkedHashSet(t.keys)
            while (true) {
                val next = same.filter { it.verifierKey in trusted }.mapNotNull { old ->
                    val retired = old.validUntilMs ?: return@mapNotNull null
                    same.filter { it.validFromMs >= retired && it.verifierKey != old.verifierKey }.minByOrNull { it.validFromMs }
                }.map { it.verifierKey }.filter { it !in trusted }
                if (next.isEmpty()) break
                trusted += next
            }
            return if (trusted.size == t.keys.size) t else t.copy(keys = trusted.toList())
        }
    }
}
