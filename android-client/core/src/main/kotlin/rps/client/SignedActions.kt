package rps.client

import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.intOrNull
import kotlinx.serialization.json.longOrNull

/**
 * Whether a player's action in a lobby's log was signed by that player: the event's `data.auth`
 * against the player's verified [KeyHistory], the message rebuilt from the log as the server
 * built it (spec of issue 31, "Signed actions in the lobby log"). Pure: the caller fetches the
 * key logs, the game's bet and, for commit and reveal, the round's transcript once it is public.
 */
object SignedActions {
    /** A player's action recorded by [e], with what its `auth` says; null for any other event. */
    data class Recorded(
        val event: ChainEvent,
        val player: String,
        /** The action the event's type allows (commit, reveal, leave; register for either register or quick_join). */
        val kind: SignedAction,
        val auth: JsonObject?,
    ) {
        val round: Int? get() = (event.data["round"] as? JsonPrimitive)?.intOrNull
        val action: SignedAction? get() = SignedAction.fromWire(str("action"))
        val keyId: String? get() = str("keyId")
        val idempotencyKey: String? get() = str("idempotencyKey")
        val sealed: Boolean get() = kind == SignedAction.COMMIT || kind == SignedAction.REVEAL

        fun str(k: String): String? = (auth?.get(k) as? JsonPrimitive)?.takeIf { it.isString }?.content
    }

    fun recorded(e: ChainEvent): Recorded? {
        val kind = when (e.type) {
            "player_registered" -> SignedAction.REGISTER
            "player_left" -> SignedAction.LEAVE
            "move_committed" -> SignedAction.COMMIT
            "move_revealed" -> SignedAction.REVEAL
            else -> return null
        }
        val player = (e.data["player"] as? JsonPrimitive)?.content ?: return null
        return Recorded(e, player, kind, e.data["auth"] as? JsonObject)
    }

    /**
     * Why [r] is not its player's signed action, or null when it is. [keys] is the player's key
     * history, [origin] the log's, [betSize] the game's bet (register and quick_join sign it);
     * [value] and [signature] are the commitment or reveal and its signature from the round's
     * transcript (commit, reveal; null while the round is not public: only the seal is checked then);
     * [ruleset] is the game's (a quick join signs the ruleset it would play; null: not checked).
     */
    fun problem(
        r: Recorded,
        keys: KeyHistory,
        origin: String,
        betSize: Long,
        value: String? = null,
        signature: String? = null,
        ruleset: String? = null,
    ): String? {
        val at = r.event.at
        if (r.auth == null) {
            return when {
                keys.hadKeyAt(at) -> "unsigned, though the player had key(s) ${keys.keys.filter {
                    it.activeAt(at)
                }.map { it.keyId }}"
                keys.beforeSignUp(at) -> "unsigned, dated before the player signed up with a key at ${keys.signedUpAt}"
                else -> null
            }
        }
        val action = r.action
        val allowed = if (r.kind == SignedAction.REGISTER) setOf(SignedAction.REGISTER, SignedAction.QUICK_JOIN) else setOf(r.kind)
        if (action !in allowed) return "a ${r.event.type} event signed as \"${r.str("action")}\""
        val keyId = r.keyId ?: return "auth without keyId"
        val key = keys.key(keyId) ?: return "signed by key $keyId, which is not one of the player's keys"
        if (!key.activeAt(at)) return "signed by key $keyId, which was not active at $at (added ${key.addedAt}, retired ${key.retiredAt})"
        val signedAt = (r.auth["signedAt"] as? JsonPrimitive)?.longOrNull ?: return "auth without signedAt"
        signedAtProblem(signedAt, at)?.let { return it }
        val signedRuleset = r.str("ruleset")
        if (action == SignedAction.QUICK_JOIN && ruleset != null && signedRuleset != null && signedRuleset != ruleset) {
            // The server chooses the game, not its ruleset: the player signed the one it would play.
            return "a quick join signed for a game of ruleset $signedRuleset, in a game of ruleset $ruleset"
        }
        val lobby = r.event.lobbyId.takeIf { action != SignedAction.QUICK_JOIN }
        val game = r.event.gameId.takeIf { action != SignedAction.QUICK_JOIN }
        val payload = when (action!!) {
            SignedAction.REGISTER -> ActionPayloads.register(betSize)
            SignedAction.QUICK_JOIN -> ActionPayloads.quickJoin(betSize, signedRuleset)
            SignedAction.LEAVE -> ActionPayloads.leave()
            SignedAction.COMMIT -> ActionPayloads.commit(value ?: return sealedProblem(r))
            SignedAction.REVEAL -> ActionPayloads.reveal(value ?: return sealedProblem(r))
            else -> return "not a lobby action"
        }
        val m =
            ActionMessage(origin, action, r.player, lobby, game, r.round.takeIf { r.sealed }, payload, r.idempotencyKey, keyId, signedAt)
        val sig = if (r.sealed) {
            val s = signature ?: return "the transcript shows no signature for the player's ${action.wire} of round ${r.round}"
            if (sealSignature(s) != r.str("sealedSignature")) return "the transcript's signature is not the one the event sealed"
            s
        } else {
            r.str("signature") ?: return "auth without signature"
        }
        return if (m.verify(
                key.publicKey,
                sig,
            )
        ) {
            null
        } else {
            "the signature by key $keyId does not verify over ${String(m.bytes(), Charsets.UTF_8)}"
        }
    }

    /** Why a signature made at [signedAt] cannot stand for an event at [at] (null: it can), as `tournament.CheckSignedAt` says. */
    fun signedAtProblem(signedAt: Long, at: String): String? {
        val eventMs = epochMsOf(at) ?: return "unreadable time $at"
        return if (signedAt < eventMs - MAX_AGE_MS ||
            signedAt > eventMs + MAX_SKEW_MS
        ) {
            "signed at $signedAt, outside the window around $at"
        } else {
            null
        }
    }

    /** Before the round is public only the seal's form can be checked. */
    private fun sealedProblem(r: Recorded): String? {
        val s = r.str("sealedSignature") ?: return "auth without sealedSignature"
        return if (HEX64.matches(s)) null else "sealedSignature \"$s\" is not 64 hex"
    }

    private val HEX64 = Regex("[0-9a-f]{64}")

    /** tournament.SignatureMaxAge and SignatureMaxSkew: the window the server accepts a signature in. */
    const val MAX_AGE_MS = 23L * 60 * 60 * 1000
    const val MAX_SKEW_MS = 5L * 60 * 1000
}
