package rps.client

import kotlinx.coroutines.sync.Mutex
import kotlinx.coroutines.sync.withLock
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import org.bouncycastle.crypto.params.Ed25519PublicKeyParameters
import org.bouncycastle.crypto.signers.Ed25519Signer

/**
 * Checks signed heads against the server's Ed25519 public keys (`GET /v1/keys`). The keys are
 * fetched on first use and kept; they are fetched again only for a key id not seen yet (the
 * server rotated its key). A key listed under an id that is not its own is ignored.
 */
class HeadSignatures(private val fetchKeys: suspend () -> List<SigningKeyInfo>) {
    private val lock = Mutex()
    private val keys = HashMap<String, ByteArray>()

    /**
     * Returns when [h] is signed by a key the server publishes; throws [RpsException.BadHead]
     * when its key is unknown or its signature does not verify, and the fetch's own error when
     * the keys cannot be read.
     */
    suspend fun check(h: SignedHead) {
        val key = lock.withLock { keys[h.keyId] ?: fetch(h.keyId) }
            ?: throw RpsException.BadHead(h, "signed with key ${h.keyId}, which the server does not publish")
        if (!verify(key, h)) throw RpsException.BadHead(h, "the signature by key ${h.keyId} does not verify")
    }

    /** Holds [lock]. */
    private suspend fun fetch(keyId: String): ByteArray? {
        for (k in fetchKeys()) {
            val pub = try {
                Crypto.unhex(k.publicKey)
            } catch (_: IllegalArgumentException) {
                continue
            }
            if (pub.size == Ed25519PublicKeyParameters.KEY_SIZE && keyIdOf(pub) == k.keyId) keys[k.keyId] = pub
        }
        return keys[keyId]
    }

    companion object {
        /** Separates head signatures from anything else the server's key could sign. */
        private const val DOMAIN = "rps-signed-head-v1\n"

        /**
         * What a head's signature covers (`SignedHead` in openapi.yaml): the domain line, then the
         * RFC 8785 canonical JSON of its other fields exactly as served.
         */
        fun signedMessage(h: SignedHead): ByteArray {
            val body = JsonObject(
                mapOf(
                    "at" to JsonPrimitive(h.at),
                    "hash" to JsonPrimitive(h.hash),
                    "keyId" to JsonPrimitive(h.keyId),
                    "lobbyId" to JsonPrimitive(h.lobbyId),
                    "seq" to JsonPrimitive(h.seq),
                ),
            )
            return (DOMAIN + CanonicalJson.encode(body)).toByteArray(Charsets.UTF_8)
        }

        /** Whether [h]'s signature is [publicKey]'s (32 raw bytes) over [signedMessage]. */
        fun verify(publicKey: ByteArray, h: SignedHead): Boolean {
            val sig = try {
                Crypto.unhex(h.signature)
            } catch (_: IllegalArgumentException) {
                return false
            }
            if (sig.size != Ed25519PublicKeyParameters.KEY_SIZE * 2 || publicKey.size != Ed25519PublicKeyParameters.KEY_SIZE) return false
            val msg = signedMessage(h)
            return Ed25519Signer().run {
                init(false, Ed25519PublicKeyParameters(publicKey, 0))
                update(msg, 0, msg.size)
                verifySignature(sig)
            }
        }

        /** A key's id: the first 16 hex characters of blake2b-256 of the public key. */
        fun keyIdOf(publicKey: ByteArray): String = Crypto.hex(Crypto.blake2b256(publicKey)).take(16)
    }
}
