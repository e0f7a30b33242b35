package rps.client

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
