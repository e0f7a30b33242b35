package rps.client

import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import org.bouncycastle.crypto.digests.Blake2bDigest
import java.security.SecureRandom
import java.util.Base64

/** Hashing and encoding helpers shared by commitments and the event chain. */
object Crypto {
    /** Unkeyed BLAKE2b with a 32-byte digest over the concatenation of [parts]. */
    fun blake2b256(vararg parts: ByteArray): ByteArray {
        val d = Blake2bDigest(256)
        for (p in parts) d.update(p, 0, p.size)
        val out = ByteArray(32)
        d.doFinal(out, 0)
        return out
    }

    fun hex(bytes: ByteArray): String {
        val sb = StringBuilder(bytes.size * 2)
        for (b in bytes) {
            val v = b.toInt() and 0xff
            sb.append(HEX[v ushr 4]).append(HEX[v and 0x0f])
        }
        return sb.toString()
    }

    fun unhex(s: String): ByteArray {
        require(s.length % 2 == 0) { "odd hex length ${s.length}" }
        return ByteArray(s.length / 2) { i ->
            val hi = Character.digit(s[2 * i], 16)
            val lo = Character.digit(s[2 * i + 1], 16)
            require(hi >= 0 && lo >= 0) { "not hex at ${2 * i}" }
            ((hi shl 4) or lo).toByte()
        }
    }

    fun base64Url(bytes: ByteArray): String = Base64.getUrlEncoder().withoutPadding().encodeToString(bytes)

    private const val HEX = "0123456789abcdef"
}

/**
 * The digest of a stage's sealed values, as `moves_closed` and `round_resolved` carry it: blake2b-256
 * of the RFC 8785 array of `{"player": id, "value": v}` sorted bytewise by player id. `moves_closed`'s
 * (the commitments, still sealed when it is published) is salted, `blake2b-256(salt || array)`,
 * with the 32 bytes whose hex the event that makes the commitments public reveals (`round_resolved`,
 * or `game_finished`/`game_stopped` when the game ends before the round resolves); a null salt is
 * the unsalted form (the reveals' digest, and commitments in logs older than salts).
 */
object SealedDigests {
    /** The digest of [values] (player id to value), salted with [salt] (64 lower-case hex) unless null. */
    fun digest(values: Map<String, String>, salt: String?): String {
        val array = JsonArray(
            values.entries.sortedWith { a, b -> compareBytes(a.key.toByteArray(), b.key.toByteArray()) }.map { (player, value) ->
                JsonObject(mapOf("player" to JsonPrimitive(player), "value" to JsonPrimitive(value)))
            },
        )
        val bytes = CanonicalJson.encodeToBytes(array)
        if (salt == null) return Crypto.hex(Crypto.blake2b256(bytes))
        require(SALT.matches(salt)) { "a salt is 64 lower-case hex characters, got \"$salt\"" }
        return Crypto.hex(Crypto.blake2b256(Crypto.unhex(salt), bytes))
    }

    /** Whether [digest] is the digest of [values] with [salt]; false for a malformed salt. */
    fun matches(digest: String, values: Map<String, String>, salt: String?): Boolean =
        (salt == null || SALT.matches(salt)) && digest(values, salt) == digest

    private fun compareBytes(a: ByteArray, b: ByteArray): Int {
        for (i in 0 until minOf(a.size, b.size)) {
            val c = (a[i].toInt() and 0xff) - (b[i].toInt() and 0xff)
            if (c != 0) return c
        }
        return a.size - b.size
    }

    private val SALT = Regex("[0-9a-f]{64}")
}

/**
 * Commitments exactly as the server (and Gear's program) computes them:
 * `blake2b-256(utf8(digit + password))`, lower-case hex.
 */
object Commitments {
    /** Bytes of randomness in a generated password. */
    const val PASSWORD_BYTES = 32

    fun commit(preimage: String): String = Crypto.hex(Crypto.blake2b256(preimage.toByteArray(Charsets.UTF_8)))

    /** The reveal string for [move] (0..9) and [password]. */
    fun reveal(move: Int, password: String): String {
        require(move in 0..9) { "move must be 0..9, got $move" }
        return "$move$password"
    }

    fun commit(move: Int, password: String): String = commit(reveal(move, password))

    /** 32 random bytes from [random] as base64url text (43 characters, no padding). */
    fun newPassword(random: SecureRandom = SecureRandom()): String {
        val b = ByteArray(PASSWORD_BYTES)
        random.nextBytes(b)
        return Crypto.base64Url(b)
    }
}
