package rps.client

import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/** The keys screen as a pure function of what the device knows ([keysUiStateOf]). */
class KeysUiStateTest {
    private val phone = KeyLogs.key(1)
    private val other = KeyLogs.key(2)

    private fun report(log: KeyLogs, device: PlayerKey?, known: Set<String> = emptySet()) = KeyWatch.report(
        log.history(),
        device?.keyId ?: "",
        known,
    )

    @Test
    fun `before the key log is read the screen checks, and says when the server cannot be reached`() {
        assertTrue(keysUiStateOf(KeysSnapshot()) is KeysUiState.Checking)
        val e = RpsException.Network(java.io.IOException("down"))
        assertEquals(e, (keysUiStateOf(KeysSnapshot(readFailure = e)) as KeysUiState.Unreachable).error)
    }

    @Test
    fun `a device without a key binds the account's first key itself, or waits for a phone of the account`() {
        val none = keysUiStateOf(KeysSnapshot(report = report(KeyLogs(), null)))
        assertEquals(true, (none as KeysUiState.NoKey).firstKey)
        val taken = keysUiStateOf(KeysSnapshot(report = report(KeyLogs().signUp(other), null)))
        assertEquals(false, (taken as KeysUiState.NoKey).firstKey)
        val waiting = keysUiStateOf(KeysSnapshot(deviceKey = phone, report = report(KeyLogs().signUp(other), phone)))
        assertEquals(phone.publicKeyHex, (waiting as KeysUiState.AwaitingOtherPhone).publicKey)
    }

    @Test
    fun `the account's keys list this phone's, the others' and the operator's, retired ones last, with the alerts`() {
        val s =
            keysUiStateOf(
                KeysSnapshot(deviceKey = phone, report = report(KeyLogs().signUp(phone).addKey(other, phone), phone, setOf(other.keyId))),
            )
        s as KeysUiState.Keys
        assertEquals(listOf(KeyLine.Kind.THIS_PHONE, KeyLine.Kind.ACTIVE), s.lines.map { it.kind })
        assertTrue(s.alerts.isEmpty())
        // The operator's recovery retired this phone's key: its key is the account's now, and the notice says so.
        val recovered = KeyLogs().signUp(phone).recover(KeyLogs.key(3), listOf(phone.keyId))
        val r = keysUiStateOf(KeysSnapshot(deviceKey = phone, report = report(recovered, phone))) as KeysUiState.Keys
        assertEquals(listOf(KeyLine.Kind.RECOVERY, KeyLine.Kind.RETIRED), r.lines.map { it.kind })
        assertTrue(r.alerts.single() is KeyAlert.Recovered)
    }

    @Test
    fun `a key log that does not verify is only the red notice`() {
        val forged = KeyLogs().signUp(phone).addKey(other, other)
        val r = KeyWatchReport(null, null, listOf(KeyAlert.Broken(KeyLogBrokenException(forged.events[1], "forged"))), null)
        assertTrue(keysUiStateOf(KeysSnapshot(deviceKey = phone, report = r)) is KeysUiState.Broken)
    }

    @Test
    fun `retiring is offered for the account's other active keys only, and confirmed only for one of them`() {
        val old = KeyLogs.key(5)
        val log = KeyLogs().signUp(phone).addKey(other, phone).addKey(old, phone).retire(old.keyId, phone)
        fun keys(confirming: String?, busy: Boolean = false) = keysUiStateOf(
            KeysSnapshot(
                deviceKey = phone,
                report = report(log, phone, setOf(other.keyId, old.keyId)),
                busy = busy,
                confirmingRetire = confirming,
            ),
        ) as KeysUiState.Keys

        val s = keys(null)
        assertEquals(listOf(other.keyId), s.lines.filter { it.retirable }.map { it.keyId })
        assertEquals(null, s.confirmRetire)
        val asked = keys(other.keyId, busy = true)
        assertEquals(
            KeyLine(other.keyId, log.history().key(other.keyId)!!.addedAt, KeyLine.Kind.ACTIVE, retirable = true),
            asked.confirmRetire,
        )
        assertTrue(asked.busy)
        // Never this phone's own key, nor one already retired (by another phone meanwhile).
        assertEquals(null, keys(phone.keyId).confirmRetire)
        assertEquals(null, keys(old.keyId).confirmRetire)
        // The operator's recovery retired this phone's key: it cannot sign, so it offers to retire nothing.
        val recovered = KeyLogs().signUp(phone).recover(KeyLogs.key(3), listOf(phone.keyId))
        val r = keysUiStateOf(KeysSnapshot(deviceKey = phone, report = report(recovered, phone), confirmingRetire = KeyLogs.key(3).keyId))
        r as KeysUiState.Keys
        assertTrue(r.lines.none { it.retirable } && r.confirmRetire == null)
        // An active key the operator put in is offered like any other, to a phone whose key is active.
        val afterRecovery = KeyLogs().signUp(other).recover(KeyLogs.key(3), listOf(other.keyId)).addKey(phone, KeyLogs.key(3))
        val mine = keysUiStateOf(KeysSnapshot(deviceKey = phone, report = report(afterRecovery, phone))) as KeysUiState.Keys
        assertEquals(listOf(KeyLine.Kind.RECOVERY), mine.lines.filter { it.retirable }.map { it.kind })
    }

    @Test
    fun `a key this phone did not add is a red alarm while it is active, and said plainly once it is retired`() {
        val stranger = KeyLogs.key(6)
        val appeared = KeyLogs().signUp(phone).addKey(other, phone).addKey(stranger, other)
        fun notices(log: KeyLogs) = (
            keysUiStateOf(KeysSnapshot(deviceKey = phone, report = report(log, phone, setOf(other.keyId))))
                as KeysUiState.Keys
            ).notices

        val open = notices(appeared).single() as KeyNotice.Alarm
        assertEquals(stranger.keyId, (open.alert as KeyAlert.UnknownKey).key.keyId)
        val added = appeared.events.last()

        // (KeyLogs appends: appeared is now the log with the retirement.)
        val retired = appeared.retire(stranger.keyId, phone).events.last()
        val settled = notices(appeared).single() as KeyNotice.RetiredUnknownKey
        assertEquals(KeyNotice.RetiredBy.ThisPhone, settled.retiredBy)
        assertEquals(retired.at, settled.retiredAt)
        // The evidence that it appeared stays: the key_added event.
        assertEquals(added.evidence, settled.alert.evidence)

        val byOtherPhone = notices(KeyLogs().signUp(phone).addKey(other, phone).addKey(stranger, other).retire(stranger.keyId, other))
        assertEquals(KeyNotice.RetiredBy.OtherKey(other.keyId), (byOtherPhone.single() as KeyNotice.RetiredUnknownKey).retiredBy)

        // Retired by the operator's recovery, which is an alarm of its own.
        val rescuer = KeyLogs.key(3)
        val recovered = KeyLogs().signUp(phone).addKey(other, phone).addKey(stranger, other)
            .recover(rescuer, listOf(phone.keyId, other.keyId, stranger.keyId))
        val afterRecovery = keysUiStateOf(KeysSnapshot(deviceKey = phone, report = report(recovered, phone, setOf(other.keyId))))
        afterRecovery as KeysUiState.Keys
        assertEquals(
            listOf(KeyNotice.RetiredBy.Operator),
            afterRecovery.notices.filterIsInstance<KeyNotice.RetiredUnknownKey>().map { it.retiredBy },
        )
        assertTrue(afterRecovery.notices.any { it is KeyNotice.Alarm && it.alert is KeyAlert.Recovered })
    }

    @Test
    fun `the account's keys alarm while a key this phone did not add is active, and only settle once every such key is retired`() {
        val stranger = KeyLogs.key(6)
        fun attention(log: KeyLogs) =
            keysUiStateOf(KeysSnapshot(deviceKey = phone, report = report(log, phone, setOf(other.keyId)))).attention

        assertEquals(KeysAttention.NONE, attention(KeyLogs().signUp(phone).addKey(other, phone)))
        val log = KeyLogs().signUp(phone).addKey(other, phone).addKey(stranger, other)
        assertEquals(KeysAttention.ALARM, attention(log))
        assertEquals(KeysAttention.SETTLED, attention(log.retire(stranger.keyId, phone)))
        // A second one still active keeps the alarm.
        assertEquals(KeysAttention.ALARM, attention(log.addKey(KeyLogs.key(7), other)))
        // Retired by the operator's recovery: the recovery itself is the alarm.
        val recovered = KeyLogs().signUp(phone).addKey(other, phone).addKey(stranger, other)
            .recover(KeyLogs.key(3), listOf(phone.keyId, other.keyId, stranger.keyId))
        assertEquals(KeysAttention.ALARM, attention(recovered))
        val forged = KeyLogs().signUp(phone).addKey(other, other)
        val broken = KeyWatchReport(null, null, listOf(KeyAlert.Broken(KeyLogBrokenException(forged.events[1], "forged"))), null)
        assertEquals(KeysAttention.ALARM, keysUiStateOf(KeysSnapshot(deviceKey = phone, report = broken)).attention)
        assertEquals(KeysAttention.NONE, keysUiStateOf(KeysSnapshot()).attention)
    }

    @Test
    fun `a key event's evidence reads a field a line, which key, who signed and when first, each value exact`() {
        val log = KeyLogs().signUp(phone).addKey(other, phone)
        val added = log.events.last()
        assertEquals(
            listOf(
                "keyId" to other.keyId,
                "signer" to phone.keyId,
                // The signer's clock, Unix milliseconds as signed, read as a time in the log's format.
                "signedAt" to "2026-11-18T11:08:10.000Z (1795000090000)",
                "via" to "add_key",
                "publicKey" to other.publicKeyHex,
                "signature" to added.str("signature"),
                "idempotencyKey" to added.str("idempotencyKey"),
            ),
            added.dataToRead,
        )
        // A null field (a sign-up has no Idempotency-Key) says nothing; a list is comma-separated.
        assertEquals(null, log.events.first().dataToRead.toMap()["idempotencyKey"])
        val recovery = KeyLogs().signUp(phone).addKey(other, phone).recover(KeyLogs.key(3), listOf(phone.keyId, other.keyId)).events.last()
        assertEquals("${phone.keyId}, ${other.keyId}", recovery.dataToRead.toMap()["retired"])
    }
}
