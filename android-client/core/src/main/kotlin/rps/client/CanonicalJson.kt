package rps.client

import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import java.math.BigDecimal
import java.math.BigInteger

/**
 * RFC 8785 (JSON Canonicalization Scheme) for the JSON the server hashes: object keys sorted by
 * UTF-16 code units, no whitespace, strings escaped as ECMAScript's JSON.stringify does, and
 * numbers restricted to integers (the server never hashes fractions), printed without exponent.
 */
object CanonicalJson {
    /** The largest integer every JSON reader holds exactly (2^53 - 1). */
    private val MAX_SAFE = BigInteger.valueOf(9007199254740991L)

    class NotCanonicalizable(message: String) : IllegalArgumentException(message)

    fun encode(e: JsonElement): String = StringBuilder().also { write(it, e) }.toString()

    fun encodeToBytes(e: JsonElement): ByteArray = encode(e).toByteArray(Charsets.UTF_8)

    private fun write(sb: StringBuilder, e: JsonElement) {
        when (e) {
            is JsonNull -> sb.append("null")
            is JsonObject -> {
                sb.append('{')
                var first = true
                // String.compareTo orders by UTF-16 code units, which is what RFC 8785 asks for.
                for (k in e.keys.sorted()) {
                    if (!first) sb.append(',')
                    first = false
                    writeString(sb, k)
                    sb.append(':')
                    write(sb, e.getValue(k))
                }
                sb.append('}')
            }
            is JsonArray -> {
                sb.append('[')
                e.forEachIndexed { i, v ->
                    if (i > 0) sb.append(',')
                    write(sb, v)
                }
                sb.append(']')
            }
            is JsonPrimitive -> when {
                e.isString -> writeString(sb, e.content)
                e.content == "true" || e.content == "false" -> sb.append(e.content)
                else -> sb.append(integer(e.content))
            }
        }
    }

    private fun integer(literal: String): String {
        val d = try {
            BigDecimal(literal)
        } catch (_: NumberFormatException) {
            throw NotCanonicalizable("not a JSON number: $literal")
        }
        val i = try {
            d.toBigIntegerExact()
        } catch (_: ArithmeticException) {
            throw NotCanonicalizable("fractions are not canonicalized: $literal")
        }
        if (i.abs() > MAX_SAFE) throw NotCanonicalizable("integer beyond 2^53-1: $literal")
        return i.toString()
    }

    private fun writeString(sb: StringBuilder, s: String) {
        sb.append('"')
        for (ch in s) {
            when (ch) {
                '"' -> sb.append("\\\"")
                '\\' -> sb.append("\\\\")
                '\b' -> sb.append("\\b")
                '\u000C' -> sb.append("\\f")
                '\n' -> sb.append("\\n")
                '\r' -> sb.append("\\r")
                '\t' -> sb.append("\\t")
                else -> if (ch < ' ') {
                    sb.append("\\u00").append("0123456789abcdef"[ch.code shr 4]).append("0123456789abcdef"[ch.code and 0xf])
                } else {
                    sb.append(ch)
                }
            }
        }
        sb.append('"')
    }
}
