package rps.client

import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Test
import rps.client.generated.infrastructure.Serializer
import java.time.OffsetDateTime
import rps.client.generated.models.LedgerPage as LedgerPageDto

class MappersTest {
    @Test
    fun `RFC 3339 times as Go writes them, with any fraction and offset`() {
        for (s in listOf(
            "2025-01-01T12:00:00Z",
            "2025-01-01T12:00:00.5Z",
            "2025-01-01T12:00:00.123Z",
            "2025-01-01T12:00:00.123456789Z",
            "2025-06-30T23:59:59.999+02:00",
            "1999-12-31T20:00:00-05:30",
        )) {
            assertEquals(OffsetDateTime.parse(s).toInstant().toEpochMilli(), Mappers.epochMs(s), s)
        }
        assertThrows(IllegalStateException::class.java) { Mappers.epochMs("2025-01-01 12:00") }
    }

    @Test
    fun `a time in milliseconds is written back as the same RFC 3339 time`() {
        for (ms in listOf(0L, 1_767_225_600_000L, 1_795_000_060_999L)) assertEquals(ms, Mappers.epochMs(Mappers.iso(ms)))
        assertEquals("2026-01-01T00:00:00.000Z", Mappers.iso(1_767_225_600_000L))
    }

    @Test
    fun `a ledger entry carries the admin's memo and signature as served`() {
        val page = Serializer.kotlinxSerializationJson.decodeFromString(
            LedgerPageDto.serializer(),
            """{"entries": [{"id": "7", "at": "2026-01-01T00:00:00Z", "amount": -200, "kind": "debit", "counterparty": "treasury",
               "memo": "cash out", "auth": {"action": "debit", "admin": "0b7e1c2a-9d3f-4e5a-8b6c-7d8e9f0a1b2c", "idempotencyKey": "k",
               "keyId": "7849ac3049680be1", "request": {"amount": 200, "memo": " cash out"}, "signature": "ab", "signedAt": 5}}],
               "next": null}""",
        )
        val auth = AdminAuth(
            "debit",
            "0b7e1c2a-9d3f-4e5a-8b6c-7d8e9f0a1b2c",
            "k",
            "7849ac3049680be1",
            KeyLogs.data("amount" to 200, "memo" to " cash out"),
            "ab",
            5,
            null,
        )
        assertEquals(
            LedgerPage(listOf(LedgerEntry("7", 1_767_225_600_000L, -200, LedgerKind.DEBIT, null, "cash out", auth)), null),
            Mappers.ledgerPage(page),
        )
    }
}
