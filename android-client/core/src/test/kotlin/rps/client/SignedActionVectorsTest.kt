package rps.client

import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.int
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.long
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestFactory

/** The signed message, key id, signature and sealed signature against the server's vectors (tournament/testdata/signed_actions.json). */
class SignedActionVectorsTest {
    private val file = TestFiles.json(TestFiles.repoFile("tournament/testdata/signed_actions.json")).jsonObject
    private val key = SoftwarePlayerKey(Crypto.unhex(file["seed"]!!.jsonPrimitive.content))

    @Test
    fun `the key and its id are the vectors'`() {
        assertEquals(file["publicKey"]!!.jsonPrimitive.content, key.publicKeyHex)
        assertEquals(file["keyId"]!!.jsonPrimitive.content, key.keyId)
    }

    @TestFactory
    fun `every vector's message and signature are rebuilt byte for byte`(): List<DynamicTest> =
        file["vectors"]!!.jsonArray.mapIndexed { i, v ->
            val o = v.jsonObject
            DynamicTest.dynamicTest("$i ${o["action"]!!.jsonPrimitive.content}") {
                val m = messageOf(o["fields"]!!.jsonObject)
                assertEquals(o["message"]!!.jsonPrimitive.content, String(m.bytes(), Charsets.UTF_8))
                val sig = o["signature"]!!.jsonPrimitive.content
                assertEquals(sig, Crypto.hex(m.sign(key)))
                assertTrue(m.verify(key.publicKeyHex, sig))
                // Any other lobby, game, round, payload, idempotency key or instant: the signature is worth nothing.
                for (other in variants(m)) assertFalse(other.verify(key.publicKeyHex, sig), "$other")
            }
        }

    @Test
    fun `the payload builders give the vectors' payloads`() {
        val byAction = file["vectors"]!!.jsonArray.map { it.jsonObject["fields"]!!.jsonObject }
        fun payload(action: String, n: Int = 0) = byAction.filter { it["action"]!!.jsonPrimitive.content == action }[n]["payload"]
        val pk = "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c"
        assertEquals(payload("add_key"), ActionPayloads.addKey(pk))
        assertEquals(payload("retire_key"), ActionPayloads.retireKey("0123456789abcdef"))
        assertEquals(payload("register"), ActionPayloads.register(100))
        assertEquals(payload("leave"), ActionPayloads.leave())
        assertEquals(payload("quick_join", 0), ActionPayloads.quickJoin(100, "rpsls"))
        assertEquals(payload("quick_join", 1), ActionPayloads.quickJoin(250, null))
        assertEquals(payload("sign_up"), ActionPayloads.signUp("Ålice \"A\"", key.publicKeyHex))
    }

    @Test
    fun `a sealed signature is the vectors'`() {
        val s = file["sealedSignature"]!!.jsonObject
        assertEquals(s["sealed"]!!.jsonPrimitive.content, sealSignature(s["signature"]!!.jsonPrimitive.content))
    }

    @Test
    fun `the headers carry the key, the instant, the signature, the game and the round`() {
        val m =
            messageOf(
                file["vectors"]!!.jsonArray.first {
                    it.jsonObject["action"]!!.jsonPrimitive.content == "commit"
                }.jsonObject["fields"]!!.jsonObject,
            )
        val h = ActionAuth.of(m, key).headers()
        assertEquals(setOf("Rps-Key-Id", "Rps-Signed-At", "Rps-Signature", "Rps-Game-Id", "Rps-Round"), h.keys)
        assertEquals("1795000000123", h["Rps-Signed-At"])
        assertEquals("1", h["Rps-Round"])
        assertEquals(128, h["Rps-Signature"]!!.length)
    }

    private fun variants(m: ActionMessage): List<ActionMessage> = listOf(
        m.copy(lobbyId = "0b8e7c6d-5a4f-4e3d-9c2b-1a0f9e8d7c6c"),
        m.copy(gameId = "7d6c5b4a-3f2e-4d1c-8b0a-9f8e7d6c5b4b"),
        m.copy(round = (m.round ?: 0) + 1),
        m.copy(payload = JsonObject(m.payload + ("x" to JsonNull))),
        m.copy(idempotencyKey = (m.idempotencyKey ?: "") + "x"),
        m.copy(origin = m.origin + "x"),
        m.copy(signedAt = m.signedAt + 1),
        m.copy(player = (m.player ?: "") + "x"),
    )

    companion object {
        fun messageOf(f: JsonObject): ActionMessage {
            fun str(k: String) = f[k]!!.takeIf { it != JsonNull }?.jsonPrimitive?.content
            return ActionMessage(
                origin = str("origin")!!,
                action = SignedAction.fromWire(str("action"))!!,
                player = str("player"),
                lobbyId = str("lobbyId"),
                gameId = str("gameId"),
                round = f["round"]!!.takeIf { it != JsonNull }?.jsonPrimitive?.int,
                payload = f["payload"]!!.jsonObject,
                idempotencyKey = str("idempotencyKey"),
                keyId = str("keyId")!!,
                signedAt = f["signedAt"]!!.jsonPrimitive.long,
            )
        }
    }
}
