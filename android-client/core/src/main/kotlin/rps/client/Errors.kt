package rps.client

import java.io.IOException

/** The server's stable problem codes, with a message a player can read. */
enum class ErrorCode(val wire: String, val playerMessage: String) {
    VALIDATION_FAILED("validation_failed", "The request was not accepted; please update the app."),
    UNAUTHORIZED("unauthorized", "Your session is no longer valid. Please sign in again."),
    FORBIDDEN("forbidden", "This account is not allowed to do that."),
    NOT_FOUND("not_found", "That lobby or game no longer exists."),
    WRONG_STAGE("wrong_stage", "Too late: the game has already moved on."),
    NOT_IN_GAME("not_in_game", "You are not playing in this round."),
    ALREADY_REGISTERED("already_registered", "You are already registered in this game."),
    REJOIN_LIMIT("rejoin_limit", "You left this game too often to join it again. Wait for the next one."),
    NAME_TAKEN("name_taken", "Another player has this name. Choose another one."),
    LOBBY_FULL("lobby_full", "This game is full. Wait for the next one."),
    INSUFFICIENT_FUNDS("insufficient_funds", "Your balance is too low for this bet."),
    MONEY_LIMIT("money_limit", "The server holds as much money as it can; this deposit was refused."),
    ALREADY_COMMITTED("already_committed", "You have already chosen your weapon this round."),
    ALREADY_REVEALED("already_revealed", "Your weapon is already revealed."),
    COMMITMENT_MISMATCH("commitment_mismatch", "Your saved move does not match what you committed; it could not be revealed."),
    INVALID_MOVE("invalid_move", "That weapon is not part of this game."),
    IDEMPOTENCY_CONFLICT("idempotency_conflict", "A retried request did not match the original. Please try again."),
    PAYLOAD_TOO_LARGE("payload_too_large", "The request was too large."),
    METHOD_NOT_ALLOWED("method_not_allowed", "The request was not accepted; please update the app."),
    RATE_LIMITED("rate_limited", "Too many requests. Please wait a moment."),
    INTERNAL("internal", "The server had a problem. Please try again."),
    ACCOUNT_DISABLED("account_disabled", "This account has been disabled. Please contact support."),
    NO_MATCH("no_match", "No open game with this bet right now. Try again in a moment."),
    NOT_LOGGED("not_logged", "The transparency log has not published this yet. Try again in a moment."),
    UNAVAILABLE("unavailable", "The server is switching to its standby database. Retrying..."),
    SIGNATURE_REQUIRED("signature_required", "This account has a key: every action must be signed. Please update the app."),
    KEY_REQUIRED("key_required", "This server asks every player for a key. Open your account to make one."),
    BAD_SIGNATURE("bad_signature", "The server did not accept this device's signature. Its key may have been retired."),
    SIGNATURE_EXPIRED("signature_expired", "The server refused the signature's time. Check the phone's clock."),
    STALE_SIGNATURE("stale_signature", "The game moved on while you were signing. Try again."),
    LAST_KEY("last_key", "This is the account's last key. Add another one before retiring it."),
    KEY_TAKEN("key_taken", "This key is already bound to an account."),
    KEY_LIMIT("key_limit", "This account has had as many keys as it may. Ask the operator for a recovery."),
    UNKNOWN("unknown", "Something went wrong on the server."),
    ;

    companion object {
        fun fromWire(s: String?): ErrorCode = entries.firstOrNull { it.wire == s } ?: UNKNOWN
    }
}

/** Everything the client can fail with, each with a message for the player. */
sealed class RpsException(message: String, cause: Throwable? = null) : Exception(message, cause) {
    abstract val playerMessage: String

    /** Worth retrying with the same Idempotency-Key. */
    open val retryable: Boolean get() = false

    /** An RFC 9457 problem from the server. */
    class Problem(
        val code: ErrorCode,
        val status: Int,
        val detail: String?,
        val field: String? = null,
        val retryAfterSeconds: Int? = null,
    ) : RpsException("${code.wire} ($status)${detail?.let { ": $it" } ?: ""}") {
        override val playerMessage: String get() = code.playerMessage
        override val retryable: Boolean get() = status >= 500 || code == ErrorCode.RATE_LIMITED
    }

    /** The server could not be reached or the connection dropped. */
    class Network(cause: IOException) : RpsException("network: ${cause.message}", cause) {
        override val playerMessage: String get() = "No connection to the server. Retrying..."
        override val retryable: Boolean get() = true
    }

    /** The lobby's event log does not verify: someone changed history. */
    class ChainBroken(val broken: ChainBrokenException) : RpsException("event chain broken: ${broken.message}", broken) {
        override val playerMessage: String
            get() = "The lobby's history failed verification (event ${broken.seq}). Do not trust this server."
    }

    /**
     * A signed head whose key the server does not publish or whose signature does not verify:
     * someone other than the server wrote it, or the server is lying about its keys.
     */
    class BadHead(val head: SignedHead, reason: String) : RpsException("signed head of event ${head.seq}: $reason") {
        override val playerMessage: String get() = "The server's signature on the lobby's history did not verify. Do not trust this server."
    }

    /**
     * The server's transparency log contradicts itself or what this device kept: a checkpoint not
     * signed by a key this device trusts, one smaller than or forked from the checkpoint kept
     * ([kept]), or a proof that fails. [kept] and [shown] are the two signed checkpoints and
     * [proof] the failing proof's hashes: together the evidence, as `rpsverify` prints it.
     */
    class LogMisbehavior(
        val kind: Kind,
        val reason: String,
        val kept: String?,
        val shown: String,
        val proof: List<String> = emptyList(),
    ) : RpsException("transparency log misbehavior: $reason") {
        enum class Kind(val playerMessage: String) {
            UNTRUSTED_KEY("The server's transparency log is signed by a key this device does not trust. Do not trust this server."),
            ROLLED_BACK("The server's transparency log went back to an older state than it showed this device. Do not trust this server."),
            FORKED("The server's transparency log contradicts what it showed this device before. Do not trust this server."),
            BAD_PROOF("The server could not prove that the lobby's history is in its transparency log. Do not trust this server."),
        }

        override val playerMessage: String get() = kind.playerMessage

        /** The evidence in plain text, as Go's checksum database client and `rpsverify` print it. */
        val evidence: String
            get() = buildString {
                append("SECURITY ERROR\ntransparency log: misbehavior detected!\n").append(reason).append("\n\n")
                kept?.let { append("kept checkpoint:\n").append(indent(it)).append('\n') }
                append("new checkpoint:\n").append(indent(shown)).append('\n')
                if (proof.isNotEmpty()) {
                    append(
                        "proof of misbehavior (the proof that fails):\n",
                    ).append(indent(proof.joinToString("\n"))).append('\n')
                }
            }

        private fun indent(s: String) = "\t" + s.trimEnd('\n').replace("\n", "\n\t")
    }

    /**
     * An action in the lobby's log that its player did not sign: unsigned though the player had a
     * key, signed by a key that was not the player's then, or a signature that does not verify.
     * The operator (or whoever can write the server's database) wrote it in the player's name.
     * With [admin], an admin's act ([AdminSignatures]) whose signature does not hold: [player] is
     * the admin, and the signature not that admin's or the admin's signature of another act,
     * lobby, game or request.
     */
    class UnsignedAction(val event: ChainEvent, val player: String, val reason: String, val admin: Boolean = false) :
        RpsException("event ${event.seq} (${event.type} of ${if (admin) "admin" else "player"} $player): $reason") {
        override val playerMessage: String
            get() = if (admin) {
                "An admin's act in this lobby (event ${event.seq}) was not signed by that admin. Do not trust this server."
            } else {
                "A move in this game (event ${event.seq}) was not signed by its player. Do not trust this server."
            }

        /** The event and why, as `rpsverify` prints it. */
        val evidence: String
            get() = "event ${event.seq} of lobby ${event.lobbyId} at ${event.at}: ${event.type} ${CanonicalJson.encode(event.data)}\n" +
                "hash ${event.hash}\nnot signed by ${if (admin) "admin" else "player"} $player: $reason"
    }

    /** An account's key log does not verify: a key changed without the signature of a key the account had, or a rewritten chain. */
    class KeyLogBroken(val broken: KeyLogBrokenException) : RpsException("key log: ${broken.message}", broken) {
        override val playerMessage: String get() = "A player's key history failed verification. Do not trust this server."
        val evidence: String get() = listOfNotNull(broken.event?.evidence, broken.message).joinToString("\n")
    }

    /** The saved password for a committed move is missing, so the move cannot be revealed. */
    class VaultMissing(val round: Int) : RpsException("no vault entry for round $round") {
        override val playerMessage: String get() = "Your saved move for round $round was lost, so it cannot be revealed."
    }

    /** The server answered something this client does not understand. */
    class Unexpected(message: String, cause: Throwable? = null) : RpsException(message, cause) {
        override val playerMessage: String get() = "Unexpected answer from the server."
    }
}
