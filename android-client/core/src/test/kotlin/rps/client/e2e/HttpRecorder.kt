package rps.client.e2e

import kotlinx.coroutines.runBlocking
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import okhttp3.Interceptor
import okhttp3.OkHttpClient
import org.junit.jupiter.api.Assumptions.assumeTrue
import org.junit.jupiter.api.Tag
import org.junit.jupiter.api.Test
import rps.client.BetBand
import rps.client.Commitments
import rps.client.HttpRpsApi
import rps.client.LobbyFilter
import rps.client.RecordedHttp
import rps.client.RpsException
import rps.client.StandingsOrder
import rps.client.StandingsPeriod
import rps.client.TestFiles
import java.io.File

/**
 * Records what a real rpsd answers to the app's lobby and history screens, into
 * `src/test/resources/recordings/lobbies.json`, replayed by rps.client.RecordedHttp: the lobby
 * list under every filter the app offers, matchmaking (a join, `insufficient_funds`, and
 * `no_match` after the last game with that bet filled), the standings, profiles, games with
 * their players and rounds, and the ledger, after scripted players played the games the history
 * shows. Runs only when asked:
 *
 *     mvn -B -f android-client/pom.xml -pl core -Pe2e -Drps.record=true -Dtest=HttpRecorder test
 *
 * then review the diff and rerun the app's tests (goldens change with the recorded names, times
 * and amounts: `-Drps.updateGoldens=true`, and look at them).
 */
@Tag("e2e")
class HttpRecorder {
    private val out = File(TestFiles.repoRoot, "android-client/core/src/test/resources/recordings/lobbies.json")
    private val pretty = Json { prettyPrint = true }

    @Test
    fun record() {
        assumeTrue(System.getProperty("rps.record") == "true") { "recording only with -Drps.record=true" }
        assumeTrue(RpsdServer.unavailableReason() == null) { "no rpsd: ${RpsdServer.unavailableReason()}" }
        RpsdServer.start().use { server -> runBlocking { Script(server).run() } }
    }

    private inner class Script(val server: RpsdServer) {
        val admin = HttpRpsApi(server.baseUrl, RpsdServer.ADMIN_TOKEN)
        val moments = listOf("start", "joined", "taken")
        var moment = "start"

        /** While false, a client's calls are the script's own steps, not answers for the tape. */
        var taping = false
        val exchanges = mutableListOf<JsonElement>()
        val accounts = LinkedHashMap<String, String>()
        val ids = LinkedHashMap<String, String>()

        /** Tapes every exchange of the client of [who] while [taping]. */
        inner class Tape(private val who: String) : Interceptor {
            override fun intercept(chain: Interceptor.Chain): okhttp3.Response {
                val key = RecordedHttp.key(chain.request())
                val r = chain.proceed(chain.request())
                if (taping) {
                    exchanges += JsonObject(
                        linkedMapOf(
                            "moment" to JsonPrimitive(moment),
                            "as" to JsonPrimitive(who),
                            "request" to JsonPrimitive(key),
                            "status" to JsonPrimitive(r.code),
                            "response" to RecordedHttp.answer(r.peekBody(Long.MAX_VALUE).string()),
                        ),
                    )
                }
                return r
            }
        }

        suspend fun player(name: String, credit: Long): HttpRpsApi {
            val created = HttpRpsApi(server.baseUrl).createAccount(name)
            if (credit > 0) admin.adminCredit(created.account.id, credit)
            accounts[name.lowercase()] = created.account.id
            return HttpRpsApi(server.baseUrl, created.token, OkHttpClient.Builder().addInterceptor(Tape(name.lowercase())).build())
        }

        private var secrets = 0

        /** One round: everyone in [moves] commits, then reveals. */
        suspend fun round(lobby: String, moves: List<Pair<HttpRpsApi, Int>>) {
            val pw = moves.map { "secret-${++secrets}" }
            moves.forEachIndexed { i, (p, m) -> p.commit(lobby, Commitments.commit(m, pw[i]), "c$secrets-$i") }
            moves.forEachIndexed { i, (p, m) -> p.reveal(lobby, Commitments.reveal(m, pw[i]), "r$secrets-$i") }
        }

        suspend fun lobby(name: String, ruleset: String, bet: Long, players: Int) = admin.adminCreateLobby(
            name,
            betSize = bet,
            players = players,
            timeoutMs = 120_000,
            ruleset = ruleset,
        ).id.also { ids[name] = it }

        suspend fun run() {
            val ada = player("Ada", 1000)
            val bo = player("Bo", 5000)
            val cy = player("Cy", 5000)
            val dee = player("Dee", 5000)
            val games = mutableListOf<String>()
            suspend fun join(lobby: String, vararg ps: HttpRpsApi): String {
                ps.forEachIndexed { i, p -> p.register(lobby, "join-$lobby-$i-${games.size}") }
                return admin.getLobby(lobby).game!!.id.also { games += it }
            }

            // Ada's history: a win in two rounds, a share of a stopped game, out in round 1, a refund.
            val office = lobby("Office league", "rpsls", 100, 3)
            join(office, ada, bo, cy)
            round(office, listOf(ada to 0, bo to 0, cy to 2))
            round(office, listOf(ada to 0, bo to 2))
            join(office, ada, bo, cy)
            admin.adminStop(office, "maintenance")
            val lunch = lobby("Lunch break", "rps", 50, 3)
            join(lunch, ada, bo, cy)
            round(lunch, listOf(ada to 0, bo to 1, cy to 1))
            round(lunch, listOf(bo to 1, cy to 2))
            join(lunch, ada)
            admin.adminStop(lunch, "closing time")

            // Lobbies in every state the list shows.
            join(lobby("Friday night RPSLS", "rpsls", 100, 3), bo)
            lobby("Pocket change", "rps", 10, 2)
            join(lobby("Seven ways", "rps7", 50, 4), cy)
            val high = lobby("High rollers", "rpsls", 500, 3)
            join(high, bo, cy, dee)
            round(high, listOf(bo to 0, cy to 0, dee to 2))
            bo.commit(high, Commitments.commit(1, "bo-high-2"), "bo-high-2")
            join(lobby("Big league", "rps", 2000, 2), dee)
            admin.adminClose(lobby("Old hall", "rps", 100, 2))

            taping = true
            val rulesets = ada.listRulesets().map { it.id }
            for (r in rulesets) ada.getRuleset(r)
            for (b in BetBand.entries) for (r in listOf(null) + rulesets) ada.listLobbies(null, LobbyFilter(b, r))
            ada.me()
            expectRefusal("insufficient_funds") { ada.quickJoin(2000, null, "qj-2000") }
            // The history screens.
            ada.myGames()
            ada.myLedger()
            for (by in StandingsOrder.entries) for (period in StandingsPeriod.entries) ada.standings(by, period)
            for (id in accounts.values) {
                ada.profile(id)
                ada.accountGames(id)
            }
            for (g in games) {
                val game = ada.game(g)
                ada.gamePlayers(g)
                for (r in 1..game.round) ada.round(g, r)
            }

            moment = "joined"
            ids["joined"] = ada.quickJoin(100, null, "qj-100").id
            ada.listLobbies(null, LobbyFilter())
            ada.myGames()
            ada.me()

            moment = "taken"
            taping = false
            join(ids.getValue("Pocket change"), bo, dee)
            taping = true
            expectRefusal("no_match") { ada.quickJoin(10, null, "qj-10") }
            ada.listLobbies(null, LobbyFilter())

            val root = JsonObject(
                linkedMapOf(
                    "comment" to JsonPrimitive(
                        "Recorded from a real rpsd by android-client/core/src/test/kotlin/rps/client/e2e/HttpRecorder.kt; re-record, do not edit.",
                    ),
                    "accounts" to JsonObject(accounts.mapValues { JsonPrimitive(it.value) }),
                    "ids" to JsonObject(ids.mapValues { JsonPrimitive(it.value) }),
                    "moments" to JsonArray(moments.map(::JsonPrimitive)),
                    "exchanges" to JsonArray(exchanges),
                ),
            )
            out.parentFile.mkdirs()
            out.writeText(pretty.encodeToString(JsonElement.serializer(), root) + "\n")
        }

        suspend fun expectRefusal(code: String, block: suspend () -> Unit) {
            try {
                block()
            } catch (e: RpsException.Problem) {
                check(e.code.wire == code) { "expected $code, got $e" }
                return
            }
            error("expected $code")
        }
    }
}
