package rps.client

import org.bouncycastle.crypto.params.Ed25519PublicKeyParameters
import org.bouncycastle.crypto.signers.Ed25519Signer
import java.security.MessageDigest
import java.util.Base64

/**
 * The client's checks of the server's transparency log (README: "The transparency log"): a C2SP
 * signed checkpoint and the log's Ed25519 signature on it, the RFC 6962 inclusion proof of a
 * lobby's event, and the consistency of a newer checkpoint with one kept from before. Pure
 * functions over data; the vectors of `translog/testdata/vectors.json` pin them to the server's.
 */
object TransparencyLog {
    /** A signed checkpoint: its signed text, origin, tree size, root hash and signature lines. */
    class Checkpoint(
        val text: String,
        val origin: String,
        val size: Long,
        val root: ByteArray,
        val signatures: List<Signature>,
    )

    /** A signature line: the key's name, its 4-byte key hash, and the signature. */
    class Signature(val name: String, val keyHash: ByteArray, val signature: ByteArray)

    /** The leaf of a lobby's event: `event <lobbyId> <seq> <hash>` and a line feed. */
    fun entry(lobbyId: String, seq: Long, hash: String): ByteArray = "event $lobbyId $seq $hash\n".toByteArray(Charsets.UTF_8)

    /** RFC 6962's hash of a leaf: SHA-256 of 0x00 and the entry. */
    fun recordHash(entry: ByteArray): ByteArray = sha256(byteArrayOf(0), entry)

    private fun nodeHash(left: ByteArray, right: ByteArray) = sha256(byteArrayOf(1), left, right)

    private fun sha256(vararg parts: ByteArray): ByteArray {
        val md = MessageDigest.getInstance("SHA-256")
        parts.forEach(md::update)
        return md.digest()
    }

    /** Parses a signed checkpoint; throws [IllegalArgumentException] when it is malformed. */
    fun parse(note: String): Checkpoint {
        val split = note.indexOf("\n\n")
        require(split >= 0) { "not a signed note" }
        val text = note.substring(0, split + 1)
        val lines = text.split('\n')
        require(lines.size >= 4) { "malformed checkpoint" }
        val size = lines[1].toLongOrNull()
        require(size != null && size >= 0 && size.toString() == lines[1]) { "malformed checkpoint size" }
        val root = Base64.getDecoder().decode(lines[2])
        require(root.size == 32) { "malformed checkpoint root" }
        return Checkpoint(text, lines[0], size, root, signatureLines(note.substring(split + 2)))
    }

    /** The signature lines of a signed note (what follows its blank line); throws [IllegalArgumentException] on a malformed one. */
    private fun signatureLines(lines: String): List<Signature> = lines.split('\n').filter { it.isNotEmpty() }.map { line ->
        val parts = line.split(' ')
        require(parts.size == 3 && parts[0] == "\u2014") { "malformed signature line: $line" }
        val raw = Base64.getDecoder().decode(parts[2])
        require(raw.size > 4) { "malformed signature line: $line" }
        Signature(parts[1], raw.copyOfRange(0, 4), raw.copyOfRange(4, raw.size))
    }

    /**
     * A key rotation statement (README: "Key rotation"): the log [origin]'s tree of [size] leaves
     * with [root] when its key [oldKey] handed it over to [newKey] (note verifier keys).
     */
    class Rotation(
        val origin: String,
        val size: Long,
        val root: ByteArray,
        val oldKey: String,
        val newKey: String,
    )

    /**
     * Reads a key rotation statement of the log [origin] (a signed note: `<origin> key rotation`,
     * the tree size, the base64 root, the old and the new verifier key, one per line) and checks
     * its signature by the old key it names; null when it is malformed or that signature fails.
     * Whether the old key is one to trust is [followRotations]'s question.
     */
    fun rotation(origin: String, note: String): Rotation? {
        val split = note.indexOf("\n\n")
        if (split < 0) return null
        val text = note.substring(0, split + 1)
        val lines = text.removeSuffix("\n").split('\n')
        if (lines.size != 5 || lines[0] != "$origin key rotation") return null
        val size = lines[1].toLongOrNull()?.takeIf { it >= 0 && it.toString() == lines[1] } ?: return null
        val (root, sigs) = try {
            Base64.getDecoder().decode(lines[2]) to signatureLines(note.substring(split + 2))
        } catch (_: IllegalArgumentException) {
            return null
        }
        val old = NoteKey.parse(lines[3], ALG_ED25519)
        val new = NoteKey.parse(lines[4], ALG_ED25519)
        if (root.size != 32 || old == null || new == null || old.name != origin || new.name != origin || lines[3] == lines[4]) return null
        val signed = sigs.any { old.matches(it) && old.verify(text.toByteArray(Charsets.UTF_8), it.signature) }
        return if (signed) Rotation(origin, size, root, lines[3], lines[4]) else null
    }

    /**
     * What [followRotations] found: the [keys] to trust, or, when a key trusted there handed the
     * log over twice, that [fork] (its two statements) and the keys trusted before only.
     */
    class Followed(val keys: List<String>, val fork: Pair<String, String>? = null)

    /**
     * [trusted] (verifier keys of the log [origin]) and every key an unbroken chain of
     * [statements] hands the log over to: a statement counts only when it is signed by a key
     * trusted already, in whatever order they come. Statements that do not verify prove nothing
     * and are ignored. A key hands the log over once: a trusted key with two different statements
     * (another new key or another tree: whoever else holds it, such as a thief of a retired key)
     * is a [Followed.fork], and neither is followed (as Go's `translog.FollowRotations`).
     */
    fun followRotations(origin: String, trusted: List<String>, statements: List<String>): Followed {
        val handOver = LinkedHashMap<String, Pair<Rotation, String>>()
        val forks = mutableListOf<Triple<String, String, String>>() // the old key and its two statements
        for (s in statements) {
            val r = rotation(origin, s) ?: continue
            val prev = handOver[r.oldKey]
            if (prev == null) {
                handOver[r.oldKey] = r to s
            } else if (prev.first.newKey != r.newKey || prev.first.size != r.size || !prev.first.root.contentEquals(r.root)) {
                forks += Triple(r.oldKey, prev.second, s)
            }
        }
        val out = trusted.toMutableList()
        do {
            val next = out.firstNotNullOfOrNull { k -> handOver[k]?.first?.newKey?.takeIf { it !in out } }?.also { out += it }
        } while (next != null)
        val fork = forks.firstOrNull { it.first in out }
        return if (fork != null) Followed(trusted, fork.second to fork.third) else Followed(out)
    }

    /**
     * Whether the checkpoint carries a valid Ed25519 signature by one of the log's verifier keys
     * (`<origin>+<key hash>+<base64 of 0x01 and the key>`, as `GET /v1/log` lists them), named by
     * the checkpoint's origin.
     */
    fun signedBy(c: Checkpoint, verifierKeys: List<String>): Boolean = signerOf(c, verifierKeys) != null

    /** The first of [verifierKeys] whose signature on the checkpoint verifies, or null. */
    fun signerOf(c: Checkpoint, verifierKeys: List<String>): String? = verifierKeys.firstOrNull { vkey ->
        val key = NoteKey.parse(vkey, ALG_ED25519) ?: return@firstOrNull false
        key.name == c.origin && c.signatures.any { s -> key.matches(s) && key.verify(c.text.toByteArray(Charsets.UTF_8), s.signature) }
    }

    /**
     * The names of the witnesses among [witnessKeys] (C2SP tlog-cosignature verifier keys,
     * `<name>+<key hash>+<base64 of 0x04 and the key>`) whose Ed25519 cosignature on the checkpoint
     * verifies: signed over `cosignature/v1`, `time <seconds>` and the checkpoint's text. Each
     * witness counts once; lines of other keys are ignored.
     */
    fun cosigners(c: Checkpoint, witnessKeys: List<String>): List<String> = witnessKeys.mapNotNull { vkey ->
        val key = NoteKey.parse(vkey, ALG_COSIGNATURE) ?: return@mapNotNull null
        val ok = c.signatures.any { s ->
            if (!key.matches(s) || s.signature.size != 8 + 64) return@any false
            val time = java.nio.ByteBuffer.wrap(s.signature, 0, 8).long
            if (time < 0) return@any false
            val msg = "cosignature/v1\ntime $time\n${c.text}".toByteArray(Charsets.UTF_8)
            key.verify(msg, s.signature.copyOfRange(8, s.signature.size))
        }
        key.name.takeIf { ok }
    }.distinct()

    private const val ALG_ED25519: Byte = 1
    private const val ALG_COSIGNATURE: Byte = 4

    /**
     * A signed-note verifier key of one algorithm: its name, its key hash (the first 4 bytes of
     * SHA-256 of the name, a line feed, the algorithm byte and the key, checked here) and the
     * Ed25519 public key.
     */
    private class NoteKey(val name: String, val hash: ByteArray, val key: Ed25519PublicKeyParameters) {
        fun matches(s: Signature) = s.name == name && s.keyHash.contentEquals(hash)

        fun verify(msg: ByteArray, signature: ByteArray): Boolean {
            if (signature.size != 64) return false
            val verifier = Ed25519Signer()
            verifier.init(false, key)
            verifier.update(msg, 0, msg.size)
            return verifier.verifySignature(signature)
        }

        companion object {
            fun parse(vkey: String, alg: Byte): NoteKey? {
                val parts = vkey.split('+', limit = 3)
                if (parts.size != 3 || parts[0].isEmpty()) return null
                val raw = try {
                    Base64.getDecoder().decode(parts[2])
                } catch (_: IllegalArgumentException) {
                    return null
                }
                if (raw.size != 33 || raw[0] != alg) return null
                val hash = sha256(parts[0].toByteArray(Charsets.UTF_8), byteArrayOf('\n'.code.toByte()), raw).copyOf(4)
                if (Crypto.hex(hash) != parts[1]) return null
                // A key that is no point of the curve verifies nothing.
                val key = try {
                    Ed25519PublicKeyParameters(raw, 1)
                } catch (_: IllegalArgumentException) {
                    return null
                }
                return NoteKey(parts[0], hash, key)
            }
        }
    }

    /** RFC 9162 (2.1.3.2): whether [proof] proves [leaf] at [index] in the tree of [size] with [root]. */
    fun verifyInclusion(
        index: Long,
        size: Long,
        leaf: ByteArray,
        proof: List<ByteArray>,
        root: ByteArray,
    ): Boolean {
        if (index < 0 || index >= size) return false
        var fn = index
        var sn = size - 1
        var r = leaf
        for (p in proof) {
            if (sn == 0L) return false
            if (fn and 1L == 1L || fn == sn) {
                r = nodeHash(p, r)
                while (fn and 1L == 0L && fn != 0L) {
                    fn = fn shr 1
                    sn = sn shr 1
                }
            } else {
                r = nodeHash(r, p)
            }
            fn = fn shr 1
            sn = sn shr 1
        }
        return sn == 0L && r.contentEquals(root)
    }

    /**
     * RFC 9162 (2.1.4.2): whether [proof] shows the tree of [size1] with [root1] is a prefix of the
     * tree of [size2] with [root2]. False is the proof that the log forked.
     */
    fun verifyConsistency(
        size1: Long,
        root1: ByteArray,
        size2: Long,
        root2: ByteArray,
        proof: List<ByteArray>,
    ): Boolean {
        if (size1 < 0 || size2 < size1) return false
        if (size1 == size2) return proof.isEmpty() && root1.contentEquals(root2)
        if (size1 == 0L) return proof.isEmpty()
        if (proof.isEmpty()) return false
        var path = proof
        if (size1 and (size1 - 1) == 0L) path = listOf(root1) + path
        var fn = size1 - 1
        var sn = size2 - 1
        while (fn and 1L == 1L) {
            fn = fn shr 1
            sn = sn shr 1
        }
        var fr = path[0]
        var sr = path[0]
        for (c in path.drop(1)) {
            if (sn == 0L) return false
            if (fn and 1L == 1L || fn == sn) {
                fr = nodeHash(c, fr)
                sr = nodeHash(c, sr)
                while (fn and 1L == 0L && fn != 0L) {
                    fn = fn shr 1
                    sn = sn shr 1
                }
            } else {
                sr = nodeHash(sr, c)
            }
            fn = fn shr 1
            sn = sn shr 1
        }
        return sn == 0L && fr.contentEquals(root1) && sr.contentEquals(root2)
    }
}
