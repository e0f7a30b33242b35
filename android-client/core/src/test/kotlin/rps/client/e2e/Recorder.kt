package rps.client.e2e

import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.long
import kotlinx.serialization.json.put
import okhttp3.Interceptor
import okhttp3.OkHttpClient
import okhttp3.Request
import org.junit.jupiter.api.Assumptions.assumeTrue
import org.junit.jupiter.api.Tag
import org.junit.jupiter.api.Test
import rps.client.Commitments
import rps.client.Crypto
import rps.client.HttpRpsApi
import rps.client.RpsException
import rps.client.TestFiles
import java.io.File

/**
 * Records what a real rpsd answers while scripted players play, into
 * `src/test/resources/recordings/` (see rps.client.Recording): the fakes of the unit and screen
 * tests replay these answers instead of imitating the server. Runs only when asked:
 *
 *     mvn -B -f android-client/pom.xml -pl core -Pe2e -Drps.record=true -Dtest=Recorder test
 *
 * then review the diff and rerun the tests (screen goldens change with the recorded times and ids:
 * `-Drps.updateGoldens=true`). Re-record after a change of the contract. `-Drps.record=logged`
 * (a comma-separated list of scenarios) plays every scenario but writes only those named.
 */
@Tag("e2e")
class Recorder {
    private val out = File(TestFiles.repoRoot, "android-client/core/src/test/resources/recordings")
    private val pretty = Json { prettyPrint = true }

    /** The scenarios to write; null: all. */
    private var selected: Set<String>? = null

    @Test
    fun record() {
        val asked = System.getProperty("rps.record")
        assumeTrue(!asked.isNullOrBlank()) { "recording only with -Drps.record=true (or the scenarios to write)" }
        selected = if (asked == "true") null else asked.split(',').map { it.trim() }.toSet()
        assumeTrue(RpsdServer.unavailableReason() == null) { "no rpsd: ${RpsdServer.unavailableReason()}" }
        out.mkdirs()
        RpsdServer.start().use { server -> runBlocking { Session(server).recordAll() } }
    }

    /** The last answer's status and body, for every call of one client. */
    private class Capture : Interceptor {
        var status = 0
        var body = ""
        override fun intercept(chain: Interceptor.Chain): okhttp3.Response {
            val r = chain.proceed(chain.request())
            status = r.code
            body = r.peekBody(Long.MAX_VALUE).string()
            return r
        }
    }

    private inner class Player(val server: RpsdServer, val name: String, val token: String?, val id: String) {
        val capture = Capture()
        val api = HttpRpsApi(server.baseUrl, token, OkHttpClient.Builder().addInterceptor(capture).build())
        val last: JsonElement get() = Json.parseToJsonElement(capture.body)

        /** The server's refusal of [block] as `{status, body}`. */
        suspend fun refusal(block: suspend () -> Unit): JsonObject {
            try {
                block()
            } catch (e: RpsException.Problem) {
                return buildJsonObject {
                    put("status", capture.status)
                    put("body", capture.body)
                }
            }
            error("$name: expected a refusal")
        }

        fun get(path: String): JsonElement {
            val (status, body) = fetch(path)
            check(status in 200..299) { "GET $path: $status $body" }
            return Json.parseToJsonElement(body)
        }

        /** GET [path]: the status and the body. */
        fun fetch(path: String): Pair<Int, String> {
            val req = Request.Builder().url(server.baseUrl + path).apply { token?.let { header("Authorization", "Bearer $it") } }.build()
            api.http.newCall(req).execute().use { r -> return r.code to r.body!!.string() }
        }
    }

    private inner class Session(val server: RpsdServer) {
        val admin = HttpRpsApi(server.baseUrl, RpsdServer.ADMIN_TOKEN)
        val anonymous = Player(server, "anonymous", null, "")
        lateinit var ada: Player
        lateinit var bo: Player
        lateinit var cy: Player
        val problems = LinkedHashMap<String, JsonElement>()

        suspend fun player(name: String, credit: Long): Player {
            val created = anonymous.api.createAccount(name)
            if (credit > 0) admin.adminCredit(created.account.id, credit)
            return Player(server, name, created.token, created.account.id)
        }

        suspend fun recordAll() {
            ada = player("Ada", 1000)
            bo = player("Bo", 1000)
            cy = player("Cy", 1000)
            win()
            eliminated()
            stopped()
            late()
            extended()
            logged()
            // Written at the end, each with every refusal recorded on the way.
            for (t in tapes) if (selected?.contains(t.scenario) != false) t.write()
        }

        val tapes = mutableListOf<Tape>()

        /**
         * One scenario's tape: the moments "me" (Ada) saw. With [log], each moment also holds the
         * transparency log's answer about its head (`GET /v1/log/inclusion`: the proof, or
         * `not_logged`), and the tape the log's description and the consistency proofs between
         * the checkpoints of those answers.
         */
        inner class Tape(val scenario: String, val lobbyId: String, val log: Boolean = false) {
            val moments = mutableListOf<JsonObject>()
            val games = LinkedHashMap<String, JsonElement>()
            private val consistency = mutableListOf<JsonElement>()
            private val checkpointSizes = mutableListOf<Long>()

            fun mark(name: String, op: String? = null, extra: Map<String, JsonElement> = emptyMap()) {
                val page = ada.get("/v1/lobbies/$lobbyId/events?after=0&limit=1000").jsonObject
                val head = page["head"]!!
                moments += JsonObject(
                    linkedMapOf(
                        "name" to JsonPrimitive(name),
                        "op" to (op?.let(::JsonPrimitive) ?: JsonNull),
                        "events" to JsonPrimitive(page["events"]!!.jsonArray.size),
                        "head" to head,
                        "lobby" to ada.get("/v1/lobbies/$lobbyId"),
                        "me" to ada.get("/v1/me"),
                    ) + extra + (if (log) mapOf("inclusion" to inclusion(head.jsonObject["seq"]!!.jsonPrimitive.long)) else emptyMap()),
                )
            }

            /** The log's answer about event [seq] now: `{seq, answer}` or `{seq, refusal}`. */
            private fun inclusion(seq: Long): JsonObject {
                val (status, body) = ada.fetch("/v1/log/inclusion?lobbyId=$lobbyId&seq=$seq")
                return buildJsonObject {
                    put("seq", seq)
                    if (status == 200) {
                        val answer = Json.parseToJsonElement(body)
                        put("answer", answer)
                        proveConsistency(answer.jsonObject["treeSize"]!!.jsonPrimitive.long)
                    } else {
                        put(
                            "refusal",
                            buildJsonObject {
                                put("status", status)
                                put("body", body)
                            },
                        )
                    }
                }
            }

            /** Records the consistency proofs from every checkpoint seen before to the one of [size] leaves. */
            private fun proveConsistency(size: Long) {
                for (from in checkpointSizes.filter { it < size }) {
                    consistency += ada.get("/v1/log/consistency?from=$from&to=$size")
                }
                if (size !in checkpointSizes) checkpointSizes += size
            }

            /** Marks [name] once the log holds the newest event (the log runs about a second behind). */
            suspend fun markLogged(name: String) {
                val seq = ada.get(
                    "/v1/lobbies/$lobbyId/events?after=0&limit=1000",
                ).jsonObject["head"]!!.jsonObject["seq"]!!.jsonPrimitive.long
                waitUntil("event $seq in the log") { ada.fetch("/v1/log/inclusion?lobbyId=$lobbyId&seq=$seq").first == 200 }
                mark(name)
            }

            /** Ada's own step: its answer (or refusal) goes with the moment. */
            suspend fun own(name: String, op: String, extra: Map<String, JsonElement> = emptyMap(), step: suspend () -> Unit) {
                val answer = try {
                    step()
                    "response" to ada.last
                } catch (e: RpsException.Problem) {
                    "refusal" to buildJsonObject {
                        put("status", ada.capture.status)
                        put("body", ada.capture.body)
                    }
                }
                mark(name, op, extra + answer)
            }

            private var commits = 0

            suspend fun commit(name: String, move: Int) {
                val password = Crypto.base64Url(Crypto.blake2b256("$scenario/${++commits}".toByteArray()))
                val commitment = Commitments.commit(move, password)
                own(name, "commit", mapOf("password" to JsonPrimitive(password), "commitment" to JsonPrimitive(commitment))) {
                    ada.api.commit(lobbyId, commitment, "rec-$scenario-c$commits")
                }
                this.password = password
                this.move = move
            }

            private var password = ""
            private var move = 0

            suspend fun reveal(name: String) = own(name, "reveal") {
                ada.api.reveal(lobbyId, Commitments.reveal(move, password), "rec-$scenario-r$commits")
            }

            fun game(id: String) {
                games[id] = ada.get("/v1/games/$id")
            }

            private lateinit var events: JsonElement

            fun save() {
                events = ada.get("/v1/lobbies/$lobbyId/events?after=0&limit=1000").jsonObject["events"]!!
                tapes += this
            }

            fun write() {
                val root = JsonObject(
                    linkedMapOf(
                        "comment" to JsonPrimitive(
                            "Recorded from a real rpsd by android-client/core/src/test/kotlin/rps/client/e2e/Recorder.kt; re-record, do not edit.",
                        ),
                        "scenario" to JsonPrimitive(scenario),
                        "lobbyId" to JsonPrimitive(lobbyId),
                        "meId" to JsonPrimitive(ada.id),
                        "keys" to ada.get("/v1/keys"),
                        "events" to events,
                        "moments" to JsonArray(moments),
                        "games" to JsonObject(games),
                        "problems" to JsonObject(problems),
                    ) + (if (log) mapOf("log" to ada.get("/v1/log"), "consistency" to JsonArray(consistency)) else emptyMap()),
                )
                File(out, "$scenario.json").writeText(pretty.encodeToString(JsonElement.serializer(), root) + "\n")
            }
        }

        private suspend fun lobby(name: String, timeoutMs: Long = 30_000, moveTimeoutMs: Long = timeoutMs) =
            admin.adminCreateLobby(name, betSize = 100, players = 3, timeoutMs = timeoutMs, moveTimeoutMs = moveTimeoutMs).id

        private fun gameOf(t: Tape): String = t.moments.last()["lobby"]!!.jsonObject["game"]!!.jsonObject["id"]!!.jsonPrimitive.content

        /** Up to the first round's moves: open, (bo-joined,) joined, started. */
        private suspend fun Tape.toRound1(boFirst: Boolean = false) {
            mark("open")
            if (boFirst) {
                bo.api.register(lobbyId, "rec-$scenario-bo")
                mark("bo-joined")
            }
            own("joined", "register") { ada.api.register(lobbyId, "rec-$scenario-join") }
            if (!boFirst) bo.api.register(lobbyId, "rec-$scenario-bo")
            cy.api.register(lobbyId, "rec-$scenario-cy")
            mark("started")
        }

        /** Two rounds: Rock, Rock, Scissors (Ada and Bo go on), then Rock against Scissors. */
        suspend fun win() = Tape("win", lobby("Friday night RPSLS")).run {
            toRound1()
            val game = gameOf(this)
            commit("committed", 0)
            problems["already_committed"] = ada.refusal { ada.api.commit(lobbyId, "ab".repeat(32), "rec-dup") }
            bo.api.commit(lobbyId, Commitments.commit(0, "bo-1"), "rec-bo-c1")
            cy.api.commit(lobbyId, Commitments.commit(2, "cy-1"), "rec-cy-c1")
            mark("reveal")
            reveal("revealed")
            bo.api.reveal(lobbyId, "0bo-1", "rec-bo-r1")
            cy.api.reveal(lobbyId, "2cy-1", "rec-cy-r1")
            mark("round2")
            commit("committed2", 0)
            bo.api.commit(lobbyId, Commitments.commit(2, "bo-2"), "rec-bo-c2")
            mark("reveal2")
            reveal("revealed2")
            bo.api.reveal(lobbyId, "2bo-2", "rec-bo-r2")
            mark("won")
            game(game)
            save()
        }

        /** Ada plays Rock against two Papers and is out; Bo and Cy play on until Cy wins. */
        suspend fun eliminated() = Tape("eliminated", lobby("Lunch break")).run {
            toRound1(boFirst = true)
            val game = gameOf(this)
            commit("committed", 0)
            bo.api.commit(lobbyId, Commitments.commit(1, "bo-1"), "rec-e-bo-c1")
            cy.api.commit(lobbyId, Commitments.commit(1, "cy-1"), "rec-e-cy-c1")
            mark("reveal")
            reveal("revealed")
            bo.api.reveal(lobbyId, "1bo-1", "rec-e-bo-r1")
            cy.api.reveal(lobbyId, "1cy-1", "rec-e-cy-r1")
            mark("out")
            bo.api.commit(lobbyId, Commitments.commit(1, "bo-2"), "rec-e-bo-c2")
            cy.api.commit(lobbyId, Commitments.commit(2, "cy-2"), "rec-e-cy-c2")
            bo.api.reveal(lobbyId, "1bo-2", "rec-e-bo-r2")
            cy.api.reveal(lobbyId, "2cy-2", "rec-e-cy-r2")
            mark("over")
            game(game)
            save()
        }

        /** The admin stops the game during the first round's moves: the pot is shared. */
        suspend fun stopped() = Tape("stopped", lobby("Office league")).run {
            toRound1()
            val game = gameOf(this)
            admin.adminStop(lobbyId, "maintenance")
            mark("stopped")
            game(game)
            // Ada joins the next game and leaves it during registration.
            own("rejoined", "register") { ada.api.register(lobbyId, "rec-stopped-join2") }
            own("left", "leave") { ada.api.leave(lobbyId, "rec-stopped-leave") }
            problems["wrong_stage"] = ada.refusal { ada.api.commit(lobbyId, "ab".repeat(32), "rec-ws") }
            save()
        }

        /** Ada does not commit in time: the moves close without her and her late commitment is refused. */
        suspend fun late() = Tape("late", lobby("Night owls", moveTimeoutMs = 2_000)).run {
            toRound1()
            bo.api.commit(lobbyId, Commitments.commit(0, "bo-1"), "rec-l-bo-c1")
            cy.api.commit(lobbyId, Commitments.commit(2, "cy-1"), "rec-l-cy-c1")
            mark("others-committed")
            val lobby = lobbyId
            waitUntil("the moves to close") { ada.get("/v1/lobbies/$lobby").jsonObject["game"]!!.jsonObject.str("stage") == "reveal" }
            mark("moves-closed")
            commit("late-commit", 1)
            save()
        }

        /** Ada waits alone: the registration is extended once with an event, then again without one. */
        suspend fun extended() = Tape("extended", lobby("Early birds", timeoutMs = 1_000)).run {
            mark("open")
            own("joined", "register") { ada.api.register(lobbyId, "rec-x-join") }
            problems["already_registered"] = ada.refusal { ada.api.register(lobbyId, "rec-x-dup") }
            val lobby = lobbyId
            fun deadline() = ada.get("/v1/lobbies/$lobby").jsonObject["game"]!!.jsonObject["deadlineMs"]!!.jsonPrimitive.long
            val first = deadline()
            waitUntil("the first extension") { deadline() > first }
            mark("extended")
            val second = deadline()
            waitUntil("the second extension") { deadline() > second }
            mark("extended-again")
            check(moments[moments.size - 1]["events"] == moments[moments.size - 2]["events"]) { "the second extension wrote an event" }
            // Problems the other scenarios do not meet.
            val poor = player("Poor", 0)
            problems["insufficient_funds"] = poor.refusal { poor.api.register(lobbyId, "rec-poor") }
            val stranger = Player(server, "stranger", "not-a-token", "")
            problems["unauthorized"] = stranger.refusal { stranger.api.me() }
            problems["not_found"] = ada.refusal { ada.api.getGame("00000000-0000-4000-8000-000000000000") }
            val full = admin.adminCreateLobby("Full", betSize = 1, players = 2, timeoutMs = 30_000, startWhenFull = false).id
            bo.api.register(full, "rec-full-bo")
            cy.api.register(full, "rec-full-cy")
            problems["lobby_full"] = ada.refusal { ada.api.register(full, "rec-full-ada") }
            save()
        }

        /**
         * The transparency log: Ada opens a lobby's page before the log holds its first events (the
         * log says `not_logged`), then once it does; she joins (not logged, then logged, in a larger
         * checkpoint), and Bo and Cy join and start the game (a third checkpoint).
         */
        suspend fun logged() = Tape("logged", lobby("Audited table"), log = true).run {
            mark("open")
            markLogged("open-logged")
            own("joined", "register") { ada.api.register(lobbyId, "rec-log-join") }
            markLogged("joined-logged")
            bo.api.register(lobbyId, "rec-log-bo")
            cy.api.register(lobbyId, "rec-log-cy")
            markLogged("started-logged")
            check(moments.first()["inclusion"]!!.jsonObject["refusal"] != null) {
                "the log held the new lobby at once: no not_logged recorded"
            }
            save()
        }

        private suspend fun waitUntil(what: String, cond: () -> Boolean) {
            val until = System.currentTimeMillis() + 20_000
            while (!cond()) {
                check(System.currentTimeMillis() < until) { "timed out waiting for $what" }
                delay(20)
            }
        }

        private fun JsonObject.str(k: String) = this[k]!!.jsonPrimitive.content
    }
}
