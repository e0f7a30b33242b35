package rps.client

import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Test
import java.time.OffsetDateTime

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
}
