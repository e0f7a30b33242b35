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
 * note verifier [keys] it trusts, the witnesses ([witnesses], C2SP cosignature verifier keys) it
 * pinned, and the newest [checkpoint] it verified (a signed note), which every later checkpoint
 * must extend.
 *
 * Trust on first use, pinned: at first contact the device trusts the log's current key and the
 * witnesses `GET /v1/log` lists then. A later key is trusted only through the log's key rotation
 * statements (README: "Key rotation"), an unbroken chain of them signed by a key trusted already,
 * and only once a checkpoint it signed passed every check; a checkpoint signed by any other key
 * (a new origin, a key the server lists without such a chain) is a tampering notice. The pinned
 * witnesses never change once there are some: a server that named none at first contact has the
 * first witnesses it names pinned then (which only adds a requirement), and witnesses named later
 * are counted as cosigners in addition to, never instead of, the pinned ones ([WitnessPolicy]).
 */
data class LogTrust(val origin: String, val keys: List<String>, val witnesses: List<String> = emptyList(), val checkpoint: String? = null)

/** Where [LogTrust]s are kept, per server. */
interface LogTrusts {
    fun load(server: String): LogTrust?
    fun save(server: String, trust: LogTrust)
}

/**
 * One small file per server (named by a hash of its address) in [dir], replaced atomically: a line
 * "origin <origin>", a line "key <verifier key>" per trusted key, "witness <verifier key>" per
 * witness, and once one was verified, "checkpoint <base64 of the signed checkpoint>". The app
 * gives each account a [dir] of its own, so trust is per server and account.
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
        val witnesses = mutableListOf<String>()
        var checkpoint: String? = null
        for (line in f.readLines()) {
            val (tag, value) = line.split(' ', limit = 2).takeIf { it.size == 2 } ?: continue
            when (tag) {
                "origin" -> origin = value
                "key" -> keys += value
                "witness" -> witnesses += value
                "checkpoint" -> checkpoint = try {
                    String(Base64.getDecoder().decode(value), Charsets.UTF_8)
                } catch (_: IllegalArgumentException) {
                    null
                }
            }
        }
        // A file this device cannot read back costs the protection of what it kept: start afresh.
        return if (origin == null || keys.isEmpty()) null else LogTrust(origin, keys, witnesses, checkpoint)
    }

    @Synchronized
    override fun save(server: String, trust: LogTrust) {
        val text = buildString {
            append("origin ${trust.origin}\n")
            trust.keys.forEach { append("key $it\n") }
            trust.witnesses.forEach { append("witness $it\n") }
            trust.checkpoint?.let { append("checkpoint ${Base64.getEncoder().encodeToString(it.toByteArray(Charsets.UTF_8))}\n") }
        }
        FileVault.writeDurably(fileOf(server)) { it.write(text.toByteArray(Charsets.UTF_8)) }
    }
}

/**
 * Which witnesses' cosignatures a checkpoint needs: at least [quorum] of [witnesses] (C2SP
 * cosignature verifier keys). [witnesses] null: those pinned in [LogTrust] (the first the server
 * named); [quorum] null: one of them when there are any, so that a split view needs a witness's
 * collusion, and none otherwise. A player who knows witnesses of their own configures them with a
 * quorum. Witnesses the server names beyond these are reported as cosigners when they cosign,
 * but never count towards the quorum: the server could name witnesses of its own.
 */
data class WitnessPolicy(val witnesses: List<String>? = null, val quorum: Int? = null) {
    init {
        require(quorum == null || quorum >= 0) { "a negative quorum" }
        require(witnesses == null || quorum == null || quorum <= witnesses.size) {
            "a quorum of $quorum out of ${witnesses?.size} witnesses"
        }
    }

    /** The witnesses and quorum that apply when the server named [pinned] at first contact. */
    fun resolve(pinned: List<String>): Pair<List<String>, Int> {
        val ws = witnesses ?: pinned
        return ws to (quorum ?: if (ws.isEmpty()) 0 else 1)
    }
}

/** What the log says about one event of a lobby. */
sealed interface LogOutcome {
    /**
     * Event [seq] is leaf [leafIndex] of the checkpoint of [treeSize] leaves, signed by the trusted
     * key [keyId], cosigned by [cosigners] (the policy's that cosigned, then the other witnesses
     * the server names that did), consistent with the checkpoint kept before ([consistentWith]
     * leaves; null when none was kept), and now kept itself if it is newer.
     */
    data class Included(
        val seq: Long,
        val leafIndex: Long,
        val treeSize: Long,
        val keyId: String,
        val cosigners: List<String>,
        val consistentWith: Long?,
    ) : LogOutcome

    /** No published checkpoint holds event [seq] yet: the log runs about a second behind play. */
    data class NotLogged(val seq: Long) : LogOutcome

    /** The checkpoint of [treeSize] leaves is cosigned by [cosigners] of the policy's witnesses only, fewer than its [quorum]; not kept. */
    data class NotCosigned(val seq: Long, val treeSize: Long, val cosigners: List<String>, val quorum: Int) : LogOutcome

    /** The server keeps no transparency log (an older server) and this device never kept a checkpoint of it. */
    data object NoLog : LogOutcome
}

/**
 * Checks one server's transparency log for every session of that server and account (one instance
 * each, shared, so the kept checkpoint only grows): the inclusion of a lobby's event in the latest
 * published checkpoint, that checkpoint's signature by the pinned key and its witnesses'
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
        var log = info ?: readInfo() ?: return@withLock if (trust?.checkpoint != null) LogOutcome.NotLogged(seq) else LogOutcome.NoLog
        val first = trust ?: firstContact(log)
        val p = try {
            api.logInclusion(lobbyId, seq)
        } catch (e: RpsException.Problem) {
            if (e.code == ErrorCode.NOT_LOGGED) return@withLock LogOutcome.NotLogged(seq)
            throw e
        }
        val c = parse(p.checkpoint)
        if (hasNews(c, first, log)) log = readInfo() ?: log
        val t = pinWitnesses(first, log)
        val (signer, keys) = trustedSigner(c, p.checkpoint, t, log)
        val consistentWith = extendsKept(c, p.checkpoint, t)
        val (witnesses, quorum) = policy.resolve(t.witnesses)
        val required = TransparencyLog.cosigners(c, witnesses)
        if (required.size < quorum) return@withLock LogOutcome.NotCosigned(seq, c.size, required, quorum)
        checkInclusion(lobbyId, seq, hash, p, c, t.checkpoint)
        val others = TransparencyLog.cosigners(c, log.witnesses.map { it.verifierKey } - witnesses.toSet())
        val kept = t.checkpoint?.let(::parse)
        val next = t.copy(keys = keys, checkpoint = if (kept == null || c.size > kept.size) p.checkpoint else t.checkpoint)
        if (next != t) keep(next)
        LogOutcome.Included(seq, p.leafIndex, c.size, keyIdOf(signer, log), required + others, consistentWith)
    }

    /** The signature lines (name and key hash) already asked about with a fresh `GET /v1/log`. */
    private val askedAbout = mutableSetOf<String>()

    /**
     * Whether [c] carries what the `GET /v1/log` this device read does not explain, once for each
     * such line: a signature by a key [t] does not trust (a rotation since?) or by a witness it
     * was not told of (one added since?).
     */
    private fun hasNews(c: TransparencyLog.Checkpoint, t: LogTrust, log: LogInfo): Boolean {
        val known = (t.witnesses + log.witnesses.map { it.verifierKey }).map { it.substringBefore('+') }.toSet()
        val untrusted = TransparencyLog.signerOf(c, t.keys) == null
        val news = c.signatures.filter { (it.name == c.origin && untrusted) || (it.name != c.origin && it.name !in known) }
            .map { "${it.name}+${Crypto.hex(it.keyHash)}" }
        return askedAbout.addAll(news)
    }

    /**
     * [t] with the witnesses the server names pinned when it had named none before: a first
     * requirement, never a weaker one. Pinned witnesses are never replaced.
     */
    private suspend fun pinWitnesses(t: LogTrust, log: LogInfo): LogTrust {
        if (t.witnesses.isNotEmpty() || log.witnesses.isEmpty()) return t
        return t.copy(witnesses = log.witnesses.map { it.verifierKey }).also { keep(it) }
    }

    /** `GET /v1/log`, or null when the server keeps no log. */
    private suspend fun readInfo(): LogInfo? = try {
        api.logInfo().also { info = it }
    } catch (e: RpsException.Problem) {
        if (e.code != ErrorCode.NOT_FOUND) throw e
        null
    }

    /** Pins the log's current keys and the witnesses the server names now. */
    private suspend fun firstContact(log: LogInfo): LogTrust = LogTrust(
        log.origin,
        log.keys.filter { it.validUntilMs == null && it.verifierKey.startsWith(log.origin + "+") }.map { it.verifierKey },
        log.witnesses.map { it.verifierKey },
    ).also { keep(it) }

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
     * The verifier key whose signature on [c] verifies, among those [t] trusts and those the log's
     * key rotations (in [log]) hand it over to from them, and the keys to trust if [c] passes: [t]'s
     * and the chain up to that key. None is misbehavior.
     */
    private fun trustedSigner(c: TransparencyLog.Checkpoint, signed: String, t: LogTrust, log: LogInfo): Pair<String, List<String>> {
        if (c.origin == t.origin) {
            TransparencyLog.signerOf(c, t.keys)?.let { return it to t.keys }
            val followed = TransparencyLog.followRotations(t.origin, t.keys, log.keys.mapNotNull { it.rotation })
            followed.fork?.let { (a, b) ->
                throw RpsException.LogMisbehavior(
                    RpsException.LogMisbehavior.Kind.UNTRUSTED_KEY,
                    "a log key this device trusts handed the log over twice (the two statements are the proof)",
                    t.checkpoint,
                    signed,
                    listOf(a, b),
                )
            }
            val keys = followed.keys
            TransparencyLog.signerOf(c, keys)?.let { return it to keys.take(keys.indexOf(it) + 1) }
        }
        val signers = c.signatures.joinToString { "${it.name} (key hash ${Crypto.hex(it.keyHash)})" }
        throw RpsException.LogMisbehavior(
            RpsException.LogMisbehavior.Kind.UNTRUSTED_KEY,
            "the checkpoint of ${c.origin} is signed by $signers; this device trusts ${t.origin}'s keys ${t.keys}, " +
                "and no chain of key rotations they signed leads to another",
            t.checkpoint,
            signed,
        )
    }

    /** The server's id of the log key [vkey] (`GET /v1/log`), or its note key hash when not listed. */
    private fun keyIdOf(vkey: String, log: LogInfo): String = log.keys.firstOrNull { it.verifierKey == vkey }?.keyId ?: vkey.split('+')[1]

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
            TransparencyLog.verifyInclusion(
                p.leafIndex,
                c.size,
                TransparencyLog.recordHash(TransparencyLog.entry(lobbyId, seq, h)),
                proof,
                c.root,
            )
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
}
