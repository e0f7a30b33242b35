package rps.client

import kotlinx.serialization.KSerializer
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.int
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import rps.client.generated.infrastructure.Serializer
import rps.client.generated.models.Account
import rps.client.generated.models.ConsistencyProof
import rps.client.generated.models.Event
import rps.client.generated.models.GameSummary
import rps.client.generated.models.Lobby
import rps.client.generated.models.LogProof
import rps.client.generated.models.SigningKeyList
import rps.client.generated.models.LogInfo as LogInfoDto
import rps.client.generated.models.SignedHead as SignedHeadDto

/**
 * What a real rpsd answered while scripted players played one scenario (recorded by
 * `e2e/Recorder.kt` into `src/test/resources/recordings/`): the lobby's whole event log, and a
 * list of moments, each the state one player ("me") saw after a step: the lobby as the server
 * showed it to them, their account, how many events the log had and the head the server signed
 * for them, and, for a step of their own, the request they sent and the server's answer.
 *
 * The JSON is decoded with the generated DTOs and [Mappers], like a live answer, so a change of
 * the contract shows here; re-record then.
 */
class Recording private constructor(val name: String, private val root: JsonObject) {
    val lobbyId: String = root.str("lobbyId")
    val meId: String = root.str("meId")
    val events: List<ChainEvent> = root["events"]!!.jsonArray.map { Mappers.event(decode(Event.serializer(), it)) }
    val keys: List<SigningKeyInfo> = Mappers.signingKeys(decode(SigningKeyList.serializer(), root["keys"]!!))
    val moments: List<Moment> = root["moments"]!!.jsonArray.map { Moment(it.jsonObject) }
    val games: Map<String, GameResult> = root["games"]?.jsonObject.orEmpty()
        .mapValues { Mappers.gameResult(decode(GameSummary.serializer(), it.value)) }

    /** `GET /v1/log` as recorded at the end, or null for a recording without the transparency log. */
    val log: LogInfo? = root["log"]?.let { Mappers.logInfo(decode(LogInfoDto.serializer(), it)) }

    /** The consistency proofs recorded between the checkpoints of the moments' inclusion proofs. */
    val consistency: List<LogConsistency> = root["consistency"]?.jsonArray.orEmpty()
        .map { Mappers.logConsistency(decode(ConsistencyProof.serializer(), it)) }

    /** The server's refusals, recorded by code: `{status, body}`. */
    private val problems: JsonObject = root["problems"]?.jsonObject ?: JsonObject(emptyMap())

    fun moment(name: String): Int = moments.indexOfFirst { it.name == name }.also { require(it >= 0) { "no moment $name in $this" } }

    /** The server's own answer refusing a request with [code], as recorded. */
    fun problem(code: String): RpsException.Problem = problemOf(problems[code]?.jsonObject ?: error("no recorded $code problem in $this"))

    override fun toString() = "recording $name"

    inner class Moment(o: JsonObject) {
        val name: String = o.str("name")

        /** The step of "me" that led here (register, commit, reveal, leave), if it was theirs. */
        val op: String? = o["op"]?.takeIf { it != JsonNull }?.jsonPrimitive?.content

        /** For a commit, the password that was committed (the replay's random yields it), and the commitment sent. */
        val password: String? = o["password"]?.jsonPrimitive?.content
        val commitment: String? = o["commitment"]?.jsonPrimitive?.content

        /** Events in the log at this moment. */
        val eventCount: Int = o["events"]!!.jsonPrimitive.int
        val head: SignedHead = Mappers.head(decode(SignedHeadDto.serializer(), o["head"]!!))
        val lobby: LobbyView = Mappers.lobby(decode(Lobby.serializer(), o["lobby"]!!))
        val me: AccountInfo = Mappers.account(decode(Account.serializer(), o["me"]!!))

        /** The answer to [op]: the lobby, or a refusal. */
        val response: LobbyView? = o["response"]?.let { Mappers.lobby(decode(Lobby.serializer(), it)) }
        val refusal: RpsException.Problem? = o["refusal"]?.jsonObject?.let(::problemOf)

        /** What the log answered about [head] at this moment: its inclusion proof, or a refusal (`not_logged`). */
        val inclusion: LogInclusion? = o["inclusion"]?.jsonObject?.get("answer")?.let {
            Mappers.logInclusion(decode(LogProof.serializer(), it))
        }
        val inclusionRefusal: RpsException.Problem? = o["inclusion"]?.jsonObject?.get("refusal")?.jsonObject?.let(::problemOf)

        override fun toString() = "moment $name of ${this@Recording}"
    }

    companion object {
        /** The generated models' UUID adapters, unknown keys ignored; not the generated client's shared Json (see HttpRpsApi). */
        private val json = Json {
            serializersModule = Serializer.kotlinxSerializationAdapters
            ignoreUnknownKeys = true
        }

        private fun <T> decode(s: KSerializer<T>, e: JsonElement): T = json.decodeFromJsonElement(s, e)

        private fun problemOf(o: JsonObject) = Mappers.problem(o["status"]!!.jsonPrimitive.int, o.str("body"))

        private fun JsonObject.str(key: String) = this[key]?.jsonPrimitive?.content ?: error("recording: no $key")

        private val cache = HashMap<String, Recording>()

        /** `recordings/[name].json` from the test resources. */
        @Synchronized
        fun load(name: String): Recording =
            cache.getOrPut(name) { Recording(name, Json.parseToJsonElement(TestFiles.resource("recordings/$name.json")).jsonObject) }
    }
}
