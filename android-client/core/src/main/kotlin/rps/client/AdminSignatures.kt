package rps.client

import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.longOrNull
import java.text.Normalizer

/**
 * Checks, as a session reads them, the admins' acts a lobby's log records (README "Admins sign
 * too"; `rpsverify`'s adminsignatures.go and the console's adminacts.js check the same): a lobby
 * created, its next config changed, the lobby closed, a game stopped by an admin. Each carries
 * the admin's signature of the request in `data.auth` (`AdminAuth`), which must name the action
 * the event records, ask for what the event shows, be bound to the lobby and game the event is
 * in, be signed by a key active in the ADMIN's own key log at the event, within that key's window,
 * verify over the message rebuilt from the log ([AdminMessage]), and stand for one event only.
 * An act without a signature is the operator's word: counted ([unsigned]), not refused (the
 * server allows it for an admin without a key, as rpsverify does without
 * --require-admin-signatures). Not thread-safe: one caller at a time (the session's checking coroutine).
 */
class AdminSignatures(private val histories: KeyHistories) {
    /** The lobby's current game, from the last game_opened read (null before the first, or when the session began after it). */
    private var game: String? = null

    /** Whether this checker read the lobby's log from its first event, so [game] is known at every event. */
    private var fromStart: Boolean? = null
    private val requests = HashMap<Triple<String, SignedAction, String>, Long>()

    /** How many admins' acts verified. */
    var verified: Int = 0
        private set

    /** How many admins' acts carry no signature: the operator's word alone. */
    var unsigned: Int = 0
        private set

    /**
     * Checks [e]; throws [RpsException.UnsignedAction] (an admin's) when it is an admin's act whose signature
     * does not hold, or [RpsException.KeyLogBroken] when the admin's key log does not verify.
     */
    suspend fun check(e: ChainEvent) {
        if (fromStart == null) fromStart = e.seq == 1L
        if (e.type == "game_opened") game = e.gameId
        val action = ACTS[e.type] ?: return
        val auth = e.data["auth"]
        if (auth == null || auth is JsonNull) {
            // A stop the rules make (a stage extended too often, too many rounds, the lobby closed) is no admin's act.
            if (action != SignedAction.STOP || e.str("reason") !in RULES_STOPS) unsigned++
            return
        }
        val a = auth as? JsonObject ?: throw RpsException.UnsignedAction(e, NO_ADMIN, admin = true, reason = "auth is not an object: $auth")
        val admin = a.str("admin") ?: throw RpsException.UnsignedAction(e, NO_ADMIN, admin = true, reason = "auth without admin")
        problem(e, action, admin, a)?.let { throw RpsException.UnsignedAction(e, admin, it, admin = true) }
        val idem = a.str("idempotencyKey") ?: ""
        requests.putIfAbsent(Triple(admin, action, idem), e.seq)?.let { first ->
            val reason = "replays the signed request of event $first (idempotency key $idem)"
            throw RpsException.UnsignedAction(e, admin, reason, admin = true)
        }
        verified++
    }

    private suspend fun problem(e: ChainEvent, action: SignedAction, admin: String, a: JsonObject): String? {
        val signed = a.str("action")
        if (signed != action.wire) return "a ${e.type} event signed as \"$signed\""
        askedFor(e, action, a["request"])?.let { return it }
        val signature = a.str("signature") ?: return "auth without signature"
        if (action == SignedAction.CREATE_LOBBY) {
            val made = createdLobby(signature)
            if (made != e.lobbyId) return "the signed creation makes lobby $made, not lobby ${e.lobbyId}"
        }
        val gameId = a["gameId"]?.takeIf { it !is JsonNull }?.let { (it as? JsonPrimitive)?.takeIf { p -> p.isString }?.content }
        if (gameId == "") return "an empty gameId (the contract: a game's id, or no member)"
        expectedGame(e, action)?.let { expected -> if (gameId != expected.id) return "signed for game $gameId, not game ${expected.id}" }
        val keyId = a.str("keyId") ?: return "auth without keyId"
        val signedAt = (a["signedAt"] as? JsonPrimitive)?.longOrNull ?: return "auth without signedAt"
        val o = histories.origin()
        val m = AdminMessage.of(o, action, admin, e.lobbyId, null, a["request"], a.str("idempotencyKey"), keyId, signedAt, gameId)
        return AdminMessage.problem(histories, m, signature, e.at) { "over ${m.bytes().decodeToString()}" }
    }

    /** The game a stop or a next config must name: the one stopped, or the lobby's current one; null: none to check. */
    private fun expectedGame(e: ChainEvent, action: SignedAction): Game? = when (action) {
        SignedAction.STOP -> Game(e.gameId)
        // Known only to a checker that read the lobby's log from its start (a resumed session did not see the game open).
        SignedAction.SET_NEXT_CONFIG -> if (fromStart == true || game != null) Game(game) else null
        else -> Game(null)
    }

    private data class Game(val id: String?)

    /** Why the signed [request] did not ask for what [e] shows (null: it did), as the server reads a request. */
    private fun askedFor(e: ChainEvent, action: SignedAction, request: JsonElement?): String? {
        val req = request?.takeIf { it !is JsonNull }
        fun member(k: String) = (req as? JsonObject)?.get(k)
        fun text(k: String) = (member(k) as? JsonPrimitive)?.takeIf { it.isString }?.content
        return when (action) {
            SignedAction.CREATE_LOBBY -> {
                val shown = e.typed as? EventData.LobbyCreated ?: return "data that is not a lobby_created's"
                val name = text("name")?.let(::nickname)
                when {
                    name != shown.name -> "a request for name \"${text("name")}\", where the event shows \"${shown.name}\""
                    else -> configAsked(member("config"), shown.config)
                }
            }
            SignedAction.SET_NEXT_CONFIG -> {
                val shown = e.typed as? EventData.NextConfigChanged ?: return "data that is not a next_config_changed's"
                configAsked(req, shown.config) // the request's body is the config itself
            }
            SignedAction.STOP -> {
                val reason = text("reason")?.trim()
                val shown = e.str("reason")
                if (reason != shown) "a request for reason \"${text("reason")}\", where the event shows \"$shown\"" else null
            }
            else -> null
        }
    }

    private fun configAsked(request: JsonElement?, shown: GameConfig): String? {
        val asked = Mappers.configOfRequest(request)
        return if (asked == shown) null else "a request for config $request (read as $asked), where the event shows $shown"
    }

    private fun JsonObject.str(k: String): String? = (get(k) as? JsonPrimitive)?.takeIf { it.isString }?.content

    private fun ChainEvent.str(k: String): String? = data.str(k)

    companion object {
        /** The events an admin's act writes, and the action whose signature each records. */
        private val ACTS = mapOf(
            "lobby_created" to SignedAction.CREATE_LOBBY,
            "next_config_changed" to SignedAction.SET_NEXT_CONFIG,
            "lobby_closed" to SignedAction.CLOSE_LOBBY,
            "game_stopped" to SignedAction.STOP,
        )

        /** The stop reasons the rules give (tournament.RulesStop; the contract's GameStoppedData.reason), which no admin signs. */
        private val RULES_STOPS = setOf("max_extensions", "max_rounds", "lobby closed")

        /**
         * The id of the lobby a signed create_lobby makes (`tournament.AdminAuth.CreatedLobby`): its
         * message names no lobby, so the id is derived from the signature, a UUID of version 8
         * made of blake2b-256("rps-lobby-v1\n" || the 64 signature bytes); null: no signature in hex.
         */
        fun createdLobby(signature: String): String? {
            val sig = unhexOrNull(signature) ?: return null
            val b = Crypto.blake2b256("rps-lobby-v1\n".toByteArray(Charsets.UTF_8), sig).copyOf(16)
            b[6] = (b[6].toInt() and 0x0f or 0x80).toByte() // version 8
            b[8] = (b[8].toInt() and 0x3f or 0x80).toByte() // the RFC 9562 variant
            val h = Crypto.hex(b)
            return "${h.substring(0, 8)}-${h.substring(8, 12)}-${h.substring(12, 16)}-${h.substring(16, 20)}-${h.substring(20)}"
        }

        /**
         * A lobby name in the form the server keeps it (tournament.Name: PRECIS Nickname, RFC 8266):
         * every space one ASCII space, none around, NFKC, until stable. What it refuses is not
         * refused here: the event shows a name the server accepted.
         */
        internal fun nickname(s: String): String {
            var n = s
            while (true) {
                val next = Normalizer.normalize(
                    n.map { if (Character.isSpaceChar(it)) ' ' else it }.joinToString("").trim().replace(SPACES, " "),
                    Normalizer.Form.NFKC,
                )
                if (next == n) return n
                n = next
            }
        }

        private val SPACES = Regex(" {2,}")

        /** Who an auth that names no admin is said to be by. */
        private const val NO_ADMIN = "(none named)"
    }
}

/**
 * What an admin signs (`tournament.AdminMessage`; vectors in tournament/testdata/signed_admin_actions.json):
 * an [ActionMessage] whose player is the admin, on the lobby acted on (none for a lobby's
 * creation, which makes it) or the account ([account], null: none), with the request's body as
 * the payload's `request` (null: none).
 */
object AdminMessage {
    fun of(
        origin: String,
        action: SignedAction,
        admin: String,
        lobbyId: String?,
        account: String?,
        request: JsonElement?,
        idempotencyKey: String?,
        keyId: String,
        signedAt: Long,
        gameId: String?,
    ) = ActionMessage(
        origin,
        action,
        admin,
        lobbyId.takeIf { action != SignedAction.CREATE_LOBBY },
        gameId,
        null,
        ActionPayloads.admin(account, request),
        idempotencyKey,
        keyId,
        signedAt,
    )

    /**
     * What is wrong with [signature] of admin message [m] for an act at [at] (null: nothing),
     * under the admin's key log in [histories]: the key must be one of the admin's, active at
     * [at], verify [m], and [m] be signed within the window around [at]. [unverified] ends the
     * problem of a signature that does not verify (what it was checked over).
     */
    suspend fun problem(
        histories: KeyHistories,
        m: ActionMessage,
        signature: String,
        at: String,
        unverified: () -> String,
    ): String? {
        val admin = m.player!!
        val keyId = m.keyId
        return histories.problem(admin) { keys ->
            val key = keys.key(keyId)
            when {
                key == null -> "signed by key $keyId, which is not one of admin $admin's keys"
                !key.activeAt(at) -> "signed by key $keyId, which was not active at $at (added ${key.addedAt}, retired ${key.retiredAt})"
                !m.verify(key.publicKey, signature) -> "the signature by key $keyId does not verify ${unverified()}"
                else -> SignedActions.signedAtProblem(m.signedAt, at)
            }
        }
    }
}
