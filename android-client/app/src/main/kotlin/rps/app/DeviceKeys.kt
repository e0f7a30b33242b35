package rps.app

import android.os.Build
import android.security.keystore.KeyGenParameterSpec
import android.security.keystore.KeyProperties
import rps.client.PlayerKey
import rps.client.Sealer
import rps.client.SoftwarePlayerKey
import java.io.File
import java.security.GeneralSecurityException
import java.security.KeyPairGenerator
import java.security.KeyStore
import java.security.PrivateKey
import java.security.SecureRandom
import java.security.Signature
import java.security.spec.ECGenParameterSpec
import java.util.UUID

/**
 * This device's player keys, one per account, named by a reference kept with the account. Where
 * the device's Keystore makes Ed25519 keys (Android 13+ with KeyMint) the private key never leaves
 * it (`ks:<alias>`); elsewhere the key is a software key whose seed is sealed by the Keystore's
 * AES key ([sealer], as the vault's passwords) in the app's private files (`sealed:<file>`).
 */
class DeviceKeys(
    private val dir: File,
    private val sealer: Sealer,
    private val useKeystore: Boolean,
    /** Where a software key's seed comes from. */
    private val random: () -> SecureRandom = { SecureRandom() },
) {
    /** A new key and its reference. */
    fun create(): Pair<String, PlayerKey> {
        if (useKeystore) {
            try {
                val alias = "rps-player-" + UUID.randomUUID()
                return "ks:$alias" to KeystoreEd25519.generate(alias)
            } catch (_: GeneralSecurityException) {
                // No Ed25519 in this device's Keystore: a sealed software key below.
            } catch (_: IllegalArgumentException) {
            }
        }
        val key = SoftwarePlayerKey.generate(random())
        val name = UUID.randomUUID().toString()
        dir.mkdirs()
        val f = File(dir, name)
        val tmp = File(dir, "$name.tmp")
        tmp.writeBytes(sealer.seal(key.seed))
        tmp.renameTo(f)
        return "sealed:$name" to key
    }

    /** The key [ref] names, or null when it is gone (a reset Keystore, deleted files). */
    fun open(ref: String): PlayerKey? = try {
        when {
            ref.startsWith("ks:") -> KeystoreEd25519.open(ref.removePrefix("ks:"))
            ref.startsWith("sealed:") -> File(dir, ref.removePrefix("sealed:").filter { it.isLetterOrDigit() || it == '-' })
                .takeIf { it.exists() }?.let { SoftwarePlayerKey(sealer.open(it.readBytes())) }
            else -> null
        }
    } catch (_: GeneralSecurityException) {
        null
    } catch (_: IllegalArgumentException) {
        null
    }

    /** Whether [ref] is held by the Keystore itself. */
    fun inKeystore(ref: String): Boolean = ref.startsWith("ks:")

    companion object {
        /** Ed25519 keys came to the Android Keystore with Android 13 (KeyMint 2); older ones refuse them. */
        val keystoreMayHaveEd25519: Boolean get() = Build.VERSION.SDK_INT >= 33
    }
}

/** An Ed25519 key that never leaves the Android Keystore (Android 13+). */
private class KeystoreEd25519(private val private: PrivateKey, override val publicKey: ByteArray) : PlayerKey {
    override fun sign(message: ByteArray): ByteArray = Signature.getInstance("Ed25519").run {
        initSign(private)
        update(message)
        sign()
    }

    companion object {
        fun generate(alias: String): PlayerKey {
            val gen = KeyPairGenerator.getInstance(KeyProperties.KEY_ALGORITHM_EC, "AndroidKeyStore")
            gen.initialize(
                KeyGenParameterSpec.Builder(alias, KeyProperties.PURPOSE_SIGN)
                    .setAlgorithmParameterSpec(ECGenParameterSpec("ed25519"))
                    .setDigests(KeyProperties.DIGEST_NONE)
                    .build(),
            )
            val pair = gen.generateKeyPair()
            return KeystoreEd25519(pair.private, raw(pair.public.encoded))
        }

        fun open(alias: String): PlayerKey? {
            val ks = KeyStore.getInstance("AndroidKeyStore").apply { load(null) }
            val entry = ks.getEntry(alias, null) as? KeyStore.PrivateKeyEntry ?: return null
            return KeystoreEd25519(entry.privateKey, raw(entry.certificate.publicKey.encoded))
        }

        /** The 32 raw bytes at the end of an Ed25519 SubjectPublicKeyInfo (its fixed 12-byte header first). */
        private fun raw(spki: ByteArray): ByteArray {
            if (spki.size != 44) throw GeneralSecurityException("not an Ed25519 public key (${spki.size} bytes)")
            return spki.copyOfRange(12, 44)
        }
    }
}
