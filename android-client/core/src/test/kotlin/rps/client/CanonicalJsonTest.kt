package rps.client

import kotlinx.serialization.json.Json
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Test

class CanonicalJsonTest {
    private fun canon(s: String) = CanonicalJson.encode(Json.parseToJsonElement(s))

    @Test
    fun `keys are sorted by UTF-16 code units and whitespace is dropped`() {
        // RFC 8785 section 3.2.3's ordering example: U+20AC, U+1F600 (surrogates D83D...), U+00FC, "\r", "1", "10"...
        assertEquals(
            """{"\r":3,"1":2,"10":1,"a":[1,{"b":null,"a":true}],"ü":5,"€":4,"😀":6}""".let { canon(it) },
            canon("""{ "😀":6, "€":4, "ü":5, "a":[1, {"b":null, "a":true}], "10":1, "1":2, "\r":3 }"""),
        )
        assertEquals(
            """{"\r":3,"1":2,"10":1,"a":[1,{"a":true,"b":null}],"ü":5,"€":4,"😀":6}""",
            canon("""{ "😀":6, "€":4, "ü":5, "a":[1, {"b":null, "a":true}], "10":1, "1":2, "\r":3 }"""),
        )
    }

    @Test
    fun `strings are escaped like JSON stringify`() {
        assertEquals(
            "\"\\u0000\\u001f\\b\\t\\n\\f\\r\\\"\\\\/<>&\u2028\u00e9\uD83D\uDE42\u007f\"",
            canon("\"\\u0000\\u001F\\b\\t\\n\\f\\r\\\"\\\\\\/<>&\\u2028é🙂\u007f\""),
        )
    }

    @Test
    fun `integers are printed plainly and fractions are refused`() {
        assertEquals("[0,-1,9007199254740991,100]", canon("[-0, -1, 9007199254740991, 1E2]"))
        assertThrows(IllegalArgumentException::class.java) { canon("[1.5]") }
        assertThrows(IllegalArgumentException::class.java) { canon("[9007199254740992]") }
    }
}
