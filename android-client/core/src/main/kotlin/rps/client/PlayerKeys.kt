package rps.client

import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import org.bouncycastle.crypto.params.Ed25519PrivateKeyParameters
import org.bouncycastle.crypto.params.Ed25519PublicKeyParameters
import org.bouncycastle.crypto.signers.Ed25519Signer
import java.security.SecureRandom

/**
 * A player's Ed25519 key, made on the device; the server never sees its private half. The app
 * keeps it in the Android Keystore where the device can, sealed by a Keystore key otherwise;
 * [SoftwarePlayerKey] is the JVM one (tests, bots).
 */
interface PlayerKey {
    /** The 32 raw bytes of the public key. */
    val publicKey: ByteArray

    /** The key's id: the first 16 hex characters of blake2b-256 of [publicKey] (as the server's keys). */
    val keyId: String get() = HeadSignatures.keyIdOf(publicKey)

    /** The public key as it travels: 64 lower-case hex characters. */
    val publicKeyHex: String get() = Crypto.hex(publicKey)

    /** The 64-byte Ed25519 signature of [message]. */
    fun sign(message: ByteArray): ByteArray
}

/** An Ed25519 key held in memory, from its 32-byte seed (Bouncy Castle). */
class SoftwarePlayerKey(seed: ByteArray) : PlayerKey {
    private val private = Ed25519PrivateKeyParameters(seed, 0)

    /** The seed, for a caller that seals and stores it. */
    val seed: ByteArray get() = private.encoded

    override val publicKey: ByteArray = private.generatePublicKey().encoded

    override fun sign(message: ByteArray): ByteArray = Ed25519Signer().run {
        init(true, private)
        update(message, 0, message.size)
        generateSignature()
    }

    companion object {
        fun generate(random: SecureRandom = SecureRandom()): SoftwarePlayerKey =
            SoftwarePlayerKey(ByteArray(Ed25519PrivateKeyParameters.KEY_SIZE).also(random::nextBytes))
    }
}

/** The signed actions, by their names in the message. */
enum class SignedAction(val wire: String) {
    SIGN_UP("sign_up"),
    ADD_KEY("add_key"),
    RETIRE_KEY("retire_key"),
    REGISTER("register"),
    LEAVE("leave"),
    COMMIT("commit"),
    REVEAL("reveal"),
    QUICK_JOIN("quick_join"),

    // An admin's acts (AdminSignatures), signed with the admin's own key.
    CREATE_LOBBY("create_lobby"),
    SET_NEXT_CONFIG("set_next_config"),
    CLOSE_LOBBY("close_lobby"),
    STOP("stop"),

    // An admin's credit or debit (LedgerSignatures), signed with the admin's own key.
    CREDIT("credit"),
    DEBIT("debit"),
    ;

    companion object {
        fun fromWire(s: String?): SignedAction? = entries.firstOrNull { it.wire == s }
    }
}

/**
 * What a player's signature covers (`tournament.ActionMessage` on the server, the vectors in
 * `tournament/testdata/signed_actions.json`): `rps-action-v1\n` followed by the RFC 8785 JSON of
 * `{action, gameId, idempotencyKey, keyId, lobbyId, origin, payload, player, round, signedAt}`,
 * every member present, null where the action has none. [payload] is built by [ActionPayloads].
 */
data class ActionMessage(
    /** The transparency log's origin (`GET /v1/log`): a signature for one server is worth nothing on another. */
    val origin: String,
    val action: SignedAction,
    /** The acting account; null for sign_up, which makes it. */
    val player: String?,
    val lobbyId: String?,
    val gameId: String?,
    val round: Int?,
    val payload: JsonObject,
    val idempotencyKey: String?,
    val keyId: String,
    /** When the device signed, in Unix milliseconds of its own clock. */
    val signedAt: Long,
) {
    fun bytes(): ByteArray {
        val body = JsonObject(
            mapOf(
                "action" to JsonPrimitive(action.wire),
                "gameId" to nullable(gameId),
                "idempotencyKey" to nullable(idempotencyKey),
                "keyId" to JsonPrimitive(keyId),
                "lobbyId" to nullable(lobbyId),
                "origin" to JsonPrimitive(origin),
                "payload" to payload,
                "player" to nullable(player),
                "round" to (round?.let { JsonPrimitive(it) } ?: JsonNull),
                "signedAt" to JsonPrimitive(signedAt),
            ),
        )
        return (DOMAIN + CanonicalJson.encode(body)).toByteArray(Charsets.UTF_8)
    }

    /** Signs with [key], which must be the one [keyId] names. */
    fun sign(key: PlayerKey): ByteArray {
        require(key.keyId == keyId) { "the message names key $keyId, not ${key.keyId}" }
        return key.sign(bytes())
    }

    /** Whether [signature] (hex) is [publicKey]'s (hex) over this message, and [publicKey] the key it names. */
    fun verify(publicKey: String, signature: String): Boolean {
        val pub = unhexOrNull(publicKey) ?: return false
        val sig = unhexOrNull(signature) ?: return false
        if (pub.size != Ed25519PublicKeyParameters.KEY_SIZE || sig.size != 2 * Ed25519PublicKeyParameters.KEY_SIZE) return false
        if (HeadSignatures.keyIdOf(pub) != keyId) return false
        val msg = try {
            bytes()
        } catch (_: CanonicalJson.NotCanonicalizable) {
            return false
        }
        return Ed25519Signer().run {
            init(false, Ed25519PublicKeyParameters(pub, 0))
            update(msg, 0, msg.size)
            verifySignature(sig)
        }
    }

    companion object {
        /** Separates players' signatures from anything else a key could sign (a head's domain is rps-signed-head-v1). */
        const val DOMAIN = "rps-action-v1\n"

        private fun nullable(s: String?): JsonElement = s?.let { JsonPrimitive(it) } ?: JsonNull
    }
}

/** The payload of each action's message, member for member as the server rebuilds it. */
object ActionPayloads {
    fun signUp(name: String, publicKey: String) = obj("name" to JsonPrimitive(name), "publicKey" to JsonPrimitive(publicKey))
    fun addKey(publicKey: String) = obj("publicKey" to JsonPrimitive(publicKey))
    fun retireKey(keyId: String) = obj("keyId" to JsonPrimitive(keyId))

    /** [bet]: the game's betSize. */
    fun register(bet: Long) = obj("bet" to JsonPrimitive(bet))
    fun leave() = obj()
    fun commit(commitment: String) = obj("commitment" to JsonPrimitive(commitment))
    fun reveal(reveal: String) = obj("reveal" to JsonPrimitive(reveal))
    fun quickJoin(betSize: Long, ruleset: String?) =
        obj("betSize" to JsonPrimitive(betSize), "ruleset" to (ruleset?.let { JsonPrimitive(it) } ?: JsonNull))

    /** An admin's act on [account] (null: none) with the request's body [request] (null: none), as `tournament.AdminMessage` builds it. */
    fun admin(account: String?, request: JsonElement?) =
        obj("account" to (account?.let { JsonPrimitive(it) } ?: JsonNull), "request" to (request ?: JsonNull))

    private fun obj(vararg members: Pair<String, JsonElement>) = JsonObject(mapOf(*members))
}

/**
 * A signed request's `Rps-*` headers: the key, when it signed, the signature, and the game and
 * round the message names (register, leave, commit, reveal), so the server rebuilds the message.
 */
data class ActionAuth(
    val keyId: String,
    val signedAt: Long,
    val signature: String,
    val gameId: String?,
    val round: Int?,
) {
    fun headers(): Map<String, String> = buildMap {
        put("Rps-Key-Id", keyId)
        put("Rps-Signed-At", signedAt.toString())
        put("Rps-Signature", signature)
        gameId?.let { put("Rps-Game-Id", it) }
        round?.let { put("Rps-Round", it.toString()) }
    }

    companion object {
        /** Signs [m] with [key] and carries what the server needs beside the request to rebuild it. */
        fun of(m: ActionMessage, key: PlayerKey): ActionAuth = ActionAuth(m.keyId, m.signedAt, Crypto.hex(m.sign(key)), m.gameId, m.round)

        /** An account born with [key]: `sign_up` of [name] (exactly as sent) under the log's [origin]. */
        fun signUp(key: PlayerKey, name: String, origin: String, signedAt: Long): ActionAuth = of(
            ActionMessage(
                origin, SignedAction.SIGN_UP, null, null, null, null,
                ActionPayloads.signUp(
                    name,
                    key.publicKeyHex,
                ),
                null, key.keyId, signedAt,
            ),
            key,
        )
    }
}

/**
 * Signs one account's actions with its [key]: the message's origin is the server's log's
 * (read once, by [origin]), its instant the device's [clock].
 */
class ActionSigner(
    val key: PlayerKey,
    private val player: String,
    private val origin: suspend () -> String,
    private val clock: Clock = Clock.SYSTEM,
) {
    @Volatile private var knownOrigin: String? = null

    suspend fun sign(
        action: SignedAction,
        payload: JsonObject,
        idempotencyKey: String,
        lobbyId: String? = null,
        gameId: String? = null,
        round: Int? = null,
    ): ActionAuth {
        val o = knownOrigin ?: origin().also { knownOrigin = it }
        val m = ActionMessage(o, action, player, lobbyId, gameId, round, payload, idempotencyKey, key.keyId, clock.nowMs())
        return ActionAuth.of(m, key)
    }
}

/** blake2b-256 of a signature's 64 bytes, as an event shows a signature over a sealed value until the value is public. */
fun sealSignature(signature: String): String = Crypto.hex(Crypto.blake2b256(Crypto.unhex(signature)))

internal fun unhexOrNull(s: String): ByteArray? = try {
    Crypto.unhex(s)
} catch (_: IllegalArgumentException) {
    null
}
