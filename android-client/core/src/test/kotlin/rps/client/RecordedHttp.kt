package rps.client

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.int
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import okhttp3.Interceptor
import okhttp3.MediaType.Companion.toMediaType
import okhttp3.OkHttpClient
import okhttp3.Protocol
import okhttp3.Request
import okhttp3.Response
import okhttp3.ResponseBody.Companion.toResponseBody
import okio.Buffer
import java.util.concurrent.CopyOnWriteArrayList

/**
 * A fake server that knows nothing of the API: it answers the requests of a real [HttpRpsApi]
 * (the generated client, its mapping and error handling included) with what a real rpsd answered
 * to the same request, recorded by `e2e/HttpRecorder.kt` into `recordings/[name].json`. An answer
 * is looked up by who asked (an account of the recording), the request (method, path, query and
 * body) and the [moment]: the latest answer recorded at or before it. A request that was never
 * recorded fails the test, naming itself.
 */
class RecordedHttp(val name: String) {
    private val root = Json.parseToJsonElement(TestFiles.resource("recordings/$name.json")).jsonObject

    /** The recording's accounts' ids, by name ("ada", "bo", ...). */
    val accounts: Map<String, String> = root["accounts"]!!.jsonObject.mapValues { it.value.jsonPrimitive.content }

    /** Anything else the recorder noted (ids of lobbies and games, by name). */
    val ids: Map<String, String> = root["ids"]!!.jsonObject.mapValues { it.value.jsonPrimitive.content }
    val moments: List<String> = root["moments"]!!.jsonArray.map { it.jsonPrimitive.content }

    private class Exchange(
        val moment: Int,
        val who: String,
        val request: String,
        val status: Int,
        val body: String,
    )

    private val exchanges = root["exchanges"]!!.jsonArray.map {
        val o = it.jsonObject
        val answer = o["response"]!!
        Exchange(
            moments.indexOf(o["moment"]!!.jsonPrimitive.content),
            o["as"]!!.jsonPrimitive.content,
            o["request"]!!.jsonPrimitive.content,
            o["status"]!!.jsonPrimitive.int,
            if (answer is JsonPrimitive && answer.isString) answer.content else answer.toString(),
        )
    }

    /** The names the server sent (of lobbies, rulesets, weapons, players): data, not the app's text. */
    val names: Set<String> by lazy {
        val found = HashSet<String>()
        fun walk(e: JsonElement) {
            when (e) {
                is JsonObject -> e.forEach { (k, v) ->
                    if (k in NAME_KEYS && v is JsonPrimitive && v.isString) found += v.content else walk(v)
                }
                is kotlinx.serialization.json.JsonArray -> e.forEach(::walk)
                else -> {}
            }
        }
        root["exchanges"]!!.jsonArray.forEach { walk(it.jsonObject["response"]!!) }
        found
    }

    @Volatile private var at = 0

    val moment: String get() = moments[at]

    /** Moves to [moment]: later requests get what the server answered then. */
    fun to(moment: String) {
        at = moments.indexOf(moment).also { require(it >= 0) { "no moment $moment in recording $name" } }
    }

    /** Every request served, as "who METHOD path?query", in order. */
    val requests: MutableList<String> = CopyOnWriteArrayList()

    /** The client [who] (an account of the recording, or "anonymous") uses: the real one, on this replay. */
    fun api(who: String): HttpRpsApi = HttpRpsApi(BASE_URL, null, OkHttpClient.Builder().addInterceptor(Replay(who)).build())

    private inner class Replay(private val who: String) : Interceptor {
        override fun intercept(chain: Interceptor.Chain): Response {
            val req = chain.request()
            val key = key(req)
            requests += "$who ${key.substringBefore(' ' + BODY)}"
            val now = at
            val ex = exchanges.lastOrNull { it.who == who && it.request == key && it.moment <= now }
                ?: throw AssertionError("recording $name has no answer to $who's $key at moment ${moments[now]}: record it (HttpRecorder)")
            return Response.Builder()
                .request(req)
                .protocol(Protocol.HTTP_1_1)
                .code(ex.status)
                .message("recorded")
                .body(ex.body.toResponseBody("application/json".toMediaType()))
                .build()
        }
    }

    companion object {
        const val BASE_URL = "http://recorded.test"
        private const val BODY = "body:"
        private val NAME_KEYS = setOf("name", "lobbyName", "winnerName")

        /** What identifies a request: method, path, query as sent and, for a body, the body. */
        fun key(req: Request): String {
            val url = req.url
            val body = req.body?.let { b -> Buffer().also { b.writeTo(it) }.readUtf8() }
            return "${req.method} ${url.encodedPath}${url.encodedQuery?.let { "?$it" } ?: ""}${body?.let { " $BODY$it" } ?: ""}"
        }

        /** A recorded answer's body: JSON as JSON (to be read in a review), anything else as text. */
        fun answer(body: String): JsonElement = try {
            Json.parseToJsonElement(body).takeIf { it is JsonObject } ?: JsonPrimitive(body)
        } catch (_: Exception) {
            if (body.isEmpty()) JsonNull else JsonPrimitive(body)
        }
    }
}
