package rps.client

import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.longOrNull

/** What the admin's signature on a credit's or debit's ledger entry says, once checked. */
sealed interface LedgerSignature {
    /** Signed by [admin]'s key [keyId], active in the admin's key log at the entry, over a request for what the entry shows. */
    data class Signed(val keyId: String, val admin: String) : LedgerSignature

    /** No signature: the operator's word alone (the server allows it from an admin without a key). */
    data object Unsigned : LedgerSignature

    /** A signature that does not hold, and why. */
    data class Failed(val problem: String) : LedgerSignature
}

/**
 * Checks the admins' signatures on [account]'s own ledger entries (README "Admins sign too";
 * api/ledger_notes_test.go checks the same): a credit's or debit's `auth` must name the entry's
 * kind as its action, ask for the entry's amount (its absolute value) and memo (trimmed, as the
 * entry shows it), be signed by a key active in the ADMIN's own key log at the entry, within the
 * window around it, and verify over the message rebuilt with the player's own account
 * ([AdminMessage], no lobby), so a signature for another account does not verify. No log holds
 * these entries: a signature attributes the money's movement, it does not prove nothing else moved.
 * Not thread-safe: one caller at a time (the screen's checking coroutine), as [KeyHistories].
 */
class LedgerSignatures(private val histories: KeyHistories, private val account: String) {
    /**
     * What [e]'s signature says; null for a game's entry, which no admin signs and which carries
     * none. An admin's key log that does not verify fails the signature; failing to read it throws.
     */
    suspend fun check(e: LedgerEntry): LedgerSignature? {
        val action = ACTIONS[e.kind]
        val auth = e.auth
        return when {
            action == null && auth == null -> null
            action == null -> LedgerSignature.Failed("a ${e.kind.wire} entry carries an admin's signature")
            auth == null -> LedgerSignature.Unsigned
            else -> try {
                problem(e, action, auth)?.let(LedgerSignature::Failed) ?: LedgerSignature.Signed(auth.keyId, auth.admin)
            } catch (broken: RpsException.KeyLogBroken) {
                LedgerSignature.Failed("admin ${auth.admin}'s key log does not verify (${broken.broken.message})")
            }
        }
    }

    private suspend fun problem(e: LedgerEntry, action: SignedAction, a: AdminAuth): String? {
        if (a.action != action.wire) return "a ${e.kind.wire} signed as \"${a.action}\""
        askedFor(e, a)?.let { return it }
        val m = AdminMessage.of(histories.origin(), action, a.admin, null, account, a.request, a.idempotencyKey, a.keyId, a.signedAt, null)
        return AdminMessage.problem(histories, m, a.signature, Mappers.iso(e.atMs)) { "for this account's ${e.kind.wire}" }
    }

    /** Why the signed request did not ask for what [e] shows (null: it did), as the server reads a credit's or debit's body. */
    private fun askedFor(e: LedgerEntry, a: AdminAuth): String? {
        val amount = (a.request?.get("amount") as? JsonPrimitive)?.takeUnless { it.isString }?.longOrNull
        val memo = (a.request?.get("memo") as? JsonPrimitive)?.takeIf { it.isString }?.content?.trim()?.ifEmpty { null }
        return when {
            amount != Math.abs(e.amount) -> "a request for amount $amount, where the entry shows ${Math.abs(e.amount)}"
            memo != e.memo -> "a request for memo ${memo?.let { "\"$it\"" }}, where the entry shows ${e.memo?.let { "\"$it\"" }}"
            else -> null
        }
    }

    private companion object {
        /** The entries an admin's request makes, and the action its signature names. */
        val ACTIONS = mapOf(LedgerKind.CREDIT to SignedAction.CREDIT, LedgerKind.DEBIT to SignedAction.DEBIT)
    }
}
