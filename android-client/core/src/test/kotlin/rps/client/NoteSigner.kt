package rps.client

import org.bouncycastle.crypto.params.Ed25519PrivateKeyParameters
import org.bouncycastle.crypto.signers.Ed25519Signer
import java.nio.ByteBuffer
import java.security.MessageDigest
import java.util.Base64

/**
 * A C2SP signed-note key for tests, from a fixed seed: a log's key ([ED25519], signing a
 * checkpoint's text) or a witness's ([COSIGNATURE], signing `cosignature/v1`, the time and the
 * text). The client's verification is pinned to Go's by translog/testdata/vectors.json; this only
 * makes more signatures of the same kinds.
 */
class NoteSigner(val name: String, private val alg: Byte, seed: Byte) {
    private val key = Ed25519PrivateKeyParameters(ByteArray(32) { seed }, 0)
    private val public = byteArrayOf(alg) + key.generatePublicKey().encoded
    private val keyHash = MessageDigest.getInstance("SHA-256").digest(name.toByteArray() + '\n'.code.toByte() + public).copyOf(4)

    /** The verifier key, `<name>+<key hash>+<base64 of the algorithm and key>`. */
    val verifierKey: String = "$name+${Crypto.hex(keyHash)}+${Base64.getEncoder().encodeToString(public)}"

    /** The signature line (without its line feed) of the note whose text is [text]; [time] for a cosignature. */
    fun sign(text: String, time: Long = 0): String {
        val stamp = ByteBuffer.allocate(8).putLong(time).array()
        val msg = if (alg == COSIGNATURE) "cosignature/v1\ntime $time\n$text" else text
        val sig = Ed25519Signer().run {
            init(true, key)
            val b = msg.toByteArray(Charsets.UTF_8)
            update(b, 0, b.size)
            generateSignature()
        }
        val payload = keyHash + (if (alg == COSIGNATURE) stamp else ByteArray(0)) + sig
        return "\u2014 $name ${Base64.getEncoder().encodeToString(payload)}"
    }

    companion object {
        const val ED25519: Byte = 1
        const val COSIGNATURE: Byte = 4
    }
}
