package rps.client

import kotlinx.coroutines.test.runTest
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows

/** An account's key log as a device verifies it, and what its own account's [KeyWatch] flags. */
class KeyLogTest {
    private val phone = KeyLogs.key(1)
    private val second = KeyLogs.key(2)
    private val operators = KeyLogs.key(3)

    @Test
    fun `keys signed up, added by a key of the account and retired by one verify`() {
        val h = KeyLogs().signUp(phone).addKey(second, phone).retire(phone.keyId, second).history()
        assertEquals(listOf(phone.keyId, second.keyId), h.keys.map { it.keyId })
        assertEquals(listOf(second.keyId), h.active.map { it.keyId })
        assertEquals(3L, h.key(phone.keyId)!!.retiredSeq)
        assertEquals(phone.keyId, h.key(second.keyId)!!.signer)
    }

    @Test
    fun `a first key bound later proves possession of itself`() {
        val h = KeyLogs().addKey(phone, phone).history()
        assertEquals(listOf(phone.keyId), h.active.map { it.keyId })
    }

    @Test
    fun `a key added with a signature by no key of the account is refused`() {
        // What an operator can write: a key_added signed by a key of its own.
        val log = KeyLogs().signUp(phone).addKey(operators, operators)
        val e = assertThrows<KeyLogBrokenException> { log.history() }
        assertEquals(2L, e.event!!.seq)
        assertTrue(e.message!!.contains("did not have"), e.message)
    }

    @Test
    fun `a signature that does not verify over the rebuilt message is refused`() {
        val log = KeyLogs().signUp(phone).addKey(second, phone)
        val forged = log.events[1].data.toMutableMap().apply { put("publicKey", JsonPrimitive(operators.publicKeyHex)) }
        forged["keyId"] = JsonPrimitive(operators.keyId)
        val bad = KeyLogs()
        bad.events += log.events[0]
        bad.add("key_added", JsonObject(forged))
        val e = assertThrows<KeyLogBrokenException> { bad.history() }
        assertTrue(e.message!!.contains("does not verify"), e.message)
    }

    @Test
    fun `a rewritten event breaks the chain`() {
        val log = KeyLogs().signUp(phone).addKey(second, phone)
        log.events[0] = log.events[0].copy(at = KeyLogs.at(1))
        assertThrows<KeyLogBrokenException> { log.history() }
    }

    @Test
    fun `a recovery retires every active key and is kept as the operator's`() {
        val h = KeyLogs().signUp(phone).addKey(second, phone).recover(operators, listOf(phone.keyId, second.keyId)).history()
        assertEquals(listOf(operators.keyId), h.active.map { it.keyId })
        assertTrue(h.key(operators.keyId)!!.recovery)
        assertEquals(listOf(3L), h.recoveries.map { it.seq })
        // A recovery that leaves a key in place is not one the spec allows.
        assertThrows<KeyLogBrokenException> {
            KeyLogs().signUp(phone).addKey(second, phone).recover(operators, listOf(phone.keyId)).history()
        }
    }

    @Test
    fun `a key is active from the event that added it to the one that retired it`() {
        val log = KeyLogs().signUp(phone)
        val before = KeyLogs.at(log.nowMs - 1)
        val during = log.now()
        log.addKey(second, phone).retire(phone.keyId, second)
        val h = log.history()
        assertFalse(h.key(phone.keyId)!!.activeAt(before))
        assertTrue(h.key(phone.keyId)!!.activeAt(during))
        assertFalse(h.key(phone.keyId)!!.activeAt(log.now()))
        assertTrue(h.key(second.keyId)!!.activeAt(log.now()))
    }

    @Test
    fun `the watch flags a key the device did not add, with the event as evidence`() = runTest {
        val log = KeyLogs().signUp(phone).addKey(second, phone)
        val r = KeyWatch(log.api(), log.accountId) { log.origin }.check(phone.keyId, emptySet())
        val alert = r.alerts.single() as KeyAlert.UnknownKey
        assertEquals(second.keyId, alert.key.keyId)
        assertTrue(alert.evidence.contains("key event 2"), alert.evidence)
        // The second phone this device added itself is no news.
        assertTrue(KeyWatch(log.api(), log.accountId) { log.origin }.check(phone.keyId, setOf(second.keyId)).alerts.isEmpty())
    }

    @Test
    fun `the watch flags the operator's recovery, and a log it cannot verify`() = runTest {
        val recovered = KeyLogs().signUp(phone).recover(operators, listOf(phone.keyId))
        val r = KeyWatch(recovered.api(), recovered.accountId) { recovered.origin }.check(phone.keyId, emptySet())
        val alert = r.alerts.single() as KeyAlert.Recovered
        assertEquals(listOf(phone.keyId), alert.retired)
        assertEquals("lost phone", alert.reason)

        val forged = KeyLogs().signUp(phone).addKey(operators, operators)
        val b = KeyWatch(forged.api(), forged.accountId) { forged.origin }.check(phone.keyId, emptySet())
        assertTrue(b.alerts.single() is KeyAlert.Broken)
    }

    @Test
    fun `a device recovered by the operator is told so plainly, and the history before its key is not news`() {
        val h = KeyLogs().signUp(second).addKey(KeyLogs.key(4), second).recover(phone, listOf(second.keyId, KeyLogs.key(4).keyId)).history()
        val r = KeyWatch.report(h, phone.keyId, emptySet())
        assertTrue(r.alerts.isEmpty())
        assertEquals(3L, r.ownRecovery!!.seq)
        assertTrue(r.deviceKey!!.recovery)
    }

    @Test
    fun `a device whose key is not on the account has nothing to watch yet`() {
        val r = KeyWatch.report(KeyLogs().signUp(second).history(), phone.keyId, emptySet())
        assertNull(r.deviceKey)
        assertTrue(r.alerts.isEmpty())
    }
}
