package rps.client

import kotlinx.coroutines.test.runTest
import kotlinx.serialization.json.JsonObject
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/**
 * A player's credits and debits against the signing admin's own key log: a signed one names the
 * key, an unsigned one is the operator's word, and each forgery (a signature put on another
 * amount, memo, action or account, or by a key the admin did not have then) fails, saying why.
 */
class LedgerSignaturesTest {
    private val adminKey = KeyLogs.key(7)
    private val admins = KeyLogs(accountId = ADMIN).signUp(adminKey, name = "operator")
    private val checker = LedgerSignatures(KeyHistories(admins.api()) { admins.origin }, PLAYER)
    private val at = admins.nowMs + 1000

    private fun auth(
        request: JsonObject,
        action: SignedAction = SignedAction.CREDIT,
        key: PlayerKey = adminKey,
        signedAt: Long = at - 500,
        account: String = PLAYER,
    ): AdminAuth {
        val m = AdminMessage.of(admins.origin, action, ADMIN, null, account, request, "idem-1", key.keyId, signedAt, null)
        return AdminAuth(action.wire, ADMIN, "idem-1", key.keyId, request, Crypto.hex(m.sign(key)), signedAt, null)
    }

    private fun entry(
        amount: Long,
        memo: String?,
        auth: AdminAuth?,
        kind: LedgerKind = LedgerKind.CREDIT,
        atMs: Long = at,
    ) = LedgerEntry("1", atMs, amount, kind, null, memo, auth)

    private val prize = KeyLogs.data("amount" to 500, "memo" to "  prize, table 4 ")

    private suspend fun failed(e: LedgerEntry, says: String) {
        val r = checker.check(e)
        assertTrue(r is LedgerSignature.Failed && says in r.problem, "$r; want a failure saying \"$says\"")
    }

    @Test
    fun `a signed credit and debit name the admin's key, an unsigned one is the operator's word`() = runTest {
        val signed = LedgerSignature.Signed(adminKey.keyId, ADMIN)
        assertEquals(signed, checker.check(entry(500, "prize, table 4", auth(prize))))
        val debit = auth(KeyLogs.data("amount" to 200), SignedAction.DEBIT)
        assertEquals(signed, checker.check(entry(-200, null, debit, LedgerKind.DEBIT)))
        assertEquals(LedgerSignature.Unsigned, checker.check(entry(100, "welcome bonus", null)))
        assertNull(checker.check(entry(-10, null, null, LedgerKind.BET)), "a game's entry has no admin's signature to show")
    }

    @Test
    fun `a signature that does not verify fails`() = runTest {
        val a = auth(prize)
        val flipped = a.signature.replaceRange(0, 2, if (a.signature.startsWith("00")) "01" else "00")
        failed(entry(500, "prize, table 4", a.copy(signature = flipped)), "does not verify")
    }

    @Test
    fun `a signature for another account fails`() = runTest {
        failed(entry(500, "prize, table 4", auth(prize, account = "11111111-2222-4333-8444-555555555555")), "does not verify")
    }

    @Test
    fun `a signature by a key not in the admin's key log, or before it was added, fails`() = runTest {
        failed(entry(500, "prize, table 4", auth(prize, key = KeyLogs.key(9))), "not one of admin")
        failed(entry(500, "prize, table 4", auth(prize, signedAt = admins.nowMs - 2000), atMs = admins.nowMs - 1000), "not active")
    }

    @Test
    fun `a signature made outside its window around the entry fails`() = runTest {
        failed(entry(500, "prize, table 4", auth(prize, signedAt = at + SignedActions.MAX_SKEW_MS + 1)), "outside the window")
    }

    @Test
    fun `a request for another amount or memo fails`() = runTest {
        failed(entry(50, "prize, table 4", auth(prize)), "amount 500, where the entry shows 50")
        failed(entry(500, "prize, table 5", auth(prize)), "memo \"prize, table 4\"")
        failed(entry(500, null, auth(prize)), "where the entry shows null")
    }

    @Test
    fun `a signature of another action than the entry's kind fails`() = runTest {
        failed(entry(-500, "prize, table 4", auth(prize), LedgerKind.DEBIT), "a debit signed as \"credit\"")
        failed(entry(-10, null, auth(prize), LedgerKind.BET), "a bet entry carries")
    }

    @Test
    fun `a signature by an admin whose key log does not verify fails`() = runTest {
        val broken = KeyLogs(accountId = ADMIN).signUp(adminKey, name = "operator")
        broken.events[0] = broken.events[0].copy(hash = "00".repeat(32))
        val checker = LedgerSignatures(KeyHistories(broken.api()) { admins.origin }, PLAYER)
        val r = checker.check(entry(500, "prize, table 4", auth(prize)))
        assertTrue(r is LedgerSignature.Failed && "key log does not verify" in r.problem, "$r")
    }

    private companion object {
        const val ADMIN = "0b7e1c2a-9d3f-4e5a-8b6c-7d8e9f0a1b2c"
        const val PLAYER = "6f1c2a9e-3b7d-4c5e-8f10-2a3b4c5d6e7f"
    }
}
