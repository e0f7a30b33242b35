package rps.client

import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.MutableStateFlow
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.flow
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import org.bouncycastle.crypto.params.Ed25519PrivateKeyParameters
import org.bouncycastle.crypto.signers.Ed25519Signer
import java.io.IOException
import java.security.SecureRandom
import java.util.Base64

/**
 * A fake server that knows no rule of the game: it replays a [Recording] of a real rpsd. The test
 * moves the recording to a moment ([to]) as the other players' steps; a step of the player under
 * test (register, commit, reveal, leave) moves it to the next moment recorded for that step and
 * answers what the real server answered then. The feed serves the recorded events and signed heads
 * up to the current moment.
 *
 * What it adds is transport trouble, set by the test: lost requests or answers ([failures],
 * [applyThenFail]), refusals ([problemFor]), late events ([feedPaused]), a changed event or head
 * ([tamperEvent], [tamperHead]), and a second signing key the server publishes ([forger]). Of the
 * transparency log it serves the answers recorded at the current moment, and adds what a test
 * sets: witnesses' cosignatures ([witnesses]), checkpoints signed by another key ([logSigner],
 * listed as [logKeys] says), a changed proof ([tamperInclusion]).
 */
class RecordedServer(val recording: Recording) :
    PlayerApi,
    EventFeed {
    constructor(name: String) : this(Recording.load(name))

    val lobbyId: String get() = recording.lobbyId
    val meId: String get() = recording.meId

    private val position = MutableStateFlow(0)

    /** The index of the current moment. */
    val at: Int get() = position.value
    val moment: Recording.Moment get() = recording.moments[at]

    /** The lobby as the player sees it now. */
    fun lobby(): LobbyView = moment.lobby

    /** Moves to the moment [name] (later, usually: the other players' steps, the clock's expiries). */
    fun to(name: String) {
        position.value = recording.moment(name)
    }

    /** The events served so far. */
    val events: List<ChainEvent> get() = served(moment.eventCount)

    /** Every request, as "op key", in order. */
    val calls = mutableListOf<String>()
    private val replies = HashMap<String, LobbyView>()

    /** Makes the next N calls of an op fail; with [applyThenFail] the step happens and the answer is lost. */
    val failures = HashMap<String, Int>()
    var applyThenFail = false
    val problemFor = HashMap<String, RpsException.Problem>()

    /** Runs when a commitment arrives, before it is taken (to look at the vault then). */
    var onCommit: (() -> Unit)? = null

    /** While true, the feed delivers nothing (events are late; answers are not). */
    val feedPaused = MutableStateFlow(false)

    /** Events whose data is served changed (seq to the changed data): a server rewriting history. */
    val tamperEvent = HashMap<Long, (JsonObject) -> JsonObject>()

    /** When set, changes each head served (a forger's or a broken server's head). */
    var tamperHead: ((SignedHead) -> SignedHead)? = null

    /** The player's own actions as sent: the action, its Idempotency-Key, the commitment or reveal, and its signature (null: unsigned). */
    data class Sent(val action: String, val idempotencyKey: String, val value: String?, val auth: ActionAuth?)

    val sent = ArrayList<Sent>()

    /** Calls of [signingKeys]. */
    var keyFetches = 0

    /** A key the server also publishes when [publishForger] is set: a test signs with it what the server would not. */
    val forger = Ed25519PrivateKeyParameters(ByteArray(32) { 7 }, 0)
    var publishForger = false
    private val forgerId = HeadSignatures.keyIdOf(forger.generatePublicKey().encoded)

    /** The problem the real server answered with [code]. */
    fun problem(code: String) = recording.problem(code)

    /**
     * What the player's device draws as the password of its next commitment: the one recorded for
     * the next commit of the recording, so the commitment is the one the real server got.
     */
    val random: SecureRandom = object : SecureRandom() {
        override fun nextBytes(bytes: ByteArray) {
            val m = recording.moments.drop(at + 1).firstOrNull { it.op == "commit" } ?: error("no commit after ${moment.name}")
            val pw = Base64.getUrlDecoder().decode(m.password!!)
            check(bytes.size == pw.size) { "asked for ${bytes.size} random bytes, the recording has ${pw.size}" }
            pw.copyInto(bytes)
        }
    }

    /** Runs a step: transport trouble first, then the recorded answer (replayed for a repeated key). */
    private fun gate(op: String, key: String?, step: () -> LobbyView): LobbyView {
        calls += "$op ${key ?: ""}".trim()
        problemFor.remove(op)?.let { throw it }
        val f = failures[op] ?: 0
        if (f > 0) {
            failures[op] = f - 1
            if (!applyThenFail) throw RpsException.Network(IOException("connection reset"))
        }
        val l = (if (key != null) replies["$op $key"] else null) ?: step().also { if (key != null) replies["$op $key"] = it }
        if (f > 0) throw RpsException.Network(IOException("response lost"))
        return l
    }

    /** Moves to the next moment recorded for the player's [op] and answers as the server did. */
    private fun own(op: String, check: (Recording.Moment) -> Unit = {}): LobbyView {
        val next = recording.moments.withIndex().drop(at + 1).firstOrNull { it.value.op == op }
            ?: throw AssertionError("$recording: no $op after ${moment.name}; the test took a step the recording does not have")
        check(next.value)
        position.value = next.index
        next.value.refusal?.let { throw it }
        return next.value.response ?: error("${next.value} has no answer")
    }

    override suspend fun me() = moment.me
    override suspend fun getLobby(lobbyId: String) = gate("get", null) { lobby() }
    override suspend fun getGame(gameId: String) = recording.games[gameId] ?: throw problem("not_found")

    override suspend fun register(lobbyId: String, idempotencyKey: String, auth: ActionAuth?) =
        gate("register", idempotencyKey) { own("register") }.also { sent += Sent("register", idempotencyKey, null, auth) }
    override suspend fun leave(lobbyId: String, idempotencyKey: String, auth: ActionAuth?) =
        gate("leave", idempotencyKey) { own("leave") }.also { sent += Sent("leave", idempotencyKey, null, auth) }

    override suspend fun commit(lobbyId: String, commitment: String, idempotencyKey: String, auth: ActionAuth?) =
        gate("commit", idempotencyKey) {
            sent += Sent("commit", idempotencyKey, commitment, auth)
            onCommit?.invoke()
            own("commit") { m ->
                if (m.commitment != commitment) {
                    throw AssertionError("$m committed ${m.commitment}, the test $commitment: a move other than the recorded one?")
                }
            }
        }

    override suspend fun reveal(lobbyId: String, reveal: String, idempotencyKey: String, auth: ActionAuth?) =
        gate("reveal", idempotencyKey) {
            sent += Sent("reveal", idempotencyKey, reveal, auth)
            own("reveal") { m -> if (m.refusal == null) check(m.response!!.game!!.you!!.revealed) { "$m: not revealed" } }
        }

    override suspend fun signingKeys(): List<SigningKeyInfo> {
        keyFetches++
        val forged = SigningKeyInfo(forgerId, Crypto.hex(forger.generatePublicKey().encoded), "2025-01-01T00:00:00.000Z", null)
        return recording.keys + listOfNotNull(forged.takeIf { publishForger })
    }

    /** [h] signed with the [forger] key. */
    fun forged(h: SignedHead): SignedHead {
        val unsigned = h.copy(keyId = forgerId, signature = "")
        val msg = HeadSignatures.signedMessage(unsigned)
        val sig = Ed25519Signer().run {
            init(true, forger)
            update(msg, 0, msg.size)
            generateSignature()
        }
        return unsigned.copy(signature = Crypto.hex(sig))
    }

    /** The first [n] events as served (tampered where a test said so). */
    private fun served(n: Int): List<ChainEvent> = recording.events.take(n).map { e ->
        tamperEvent[e.seq]?.let { e.copy(data = it(e.data)) } ?: e
    }

    /** The head the server signed at the current moment. */
    fun head(): SignedHead = moment.head.let { tamperHead?.invoke(it) ?: it }

    /** The events with seq > after, then each new moment's, each batch followed by its signed head (like SSE with resume). */
    override fun follow(lobbyId: String, after: Long): Flow<FeedItem> = flow {
        var last = after
        while (true) {
            position.first { recording.moments[it].eventCount > last }
            feedPaused.first { !it }
            val m = moment
            for (e in served(m.eventCount).drop(last.toInt())) emit(e)
            last = m.eventCount.toLong()
            if (m.head.seq == last) emit(head())
        }
    }

    /** Witnesses that cosign every checkpoint served (and are listed by [logInfo]), but those in [witnessesDown]. */
    val witnesses = mutableListOf<NoteSigner>()
    val witnessesDown = mutableSetOf<String>()

    /** When set, checkpoints are served signed by this key instead of the server's. */
    var logSigner: NoteSigner? = null

    /** The log keys [logInfo] lists: the recorded ones unless a test changes them. */
    var logKeys: List<LogKeyInfo> = recording.log?.keys.orEmpty()

    /** When set, changes each inclusion proof served. */
    var tamperInclusion: ((LogInclusion) -> LogInclusion)? = null

    /** The log requests, as "inclusion seq" and "consistency from to", in order. */
    val logCalls = mutableListOf<String>()

    /** A key with the log's name that [logKeys] can list and [logSigner] sign with: a server signing what it would not. */
    val logForger: NoteSigner by lazy { NoteSigner(recording.log!!.origin, NoteSigner.ED25519, 7) }

    override suspend fun logInfo(): LogInfo {
        logCalls += "info"
        val l = recording.log ?: throw problem("not_found")
        return l.copy(keys = logKeys, witnesses = witnesses.map { LogWitnessInfo(it.name, it.verifierKey) })
    }

    /** The proof recorded at the current moment for its head; the refusal recorded there (`not_logged`) if there is one. */
    override suspend fun logInclusion(lobbyId: String, seq: Long): LogInclusion {
        logCalls += "inclusion $seq"
        val m = moment
        m.inclusionRefusal?.let { throw it }
        val p = m.inclusion ?: throw AssertionError("$m recorded no inclusion proof")
        if (p.seq != seq) throw AssertionError("$m recorded the inclusion of event ${p.seq}, the session asked for $seq")
        val served = p.copy(checkpoint = served(p.checkpoint))
        return tamperInclusion?.invoke(served) ?: served
    }

    override suspend fun logConsistency(from: Long, to: Long): LogConsistency {
        logCalls += "consistency $from $to"
        return recording.consistency.firstOrNull { it.from == from && it.to == to }
            ?: throw AssertionError("$recording has no consistency proof from $from to $to")
    }

    /** [checkpoint] as served now: re-signed by [logSigner] if set, cosigned by the [witnesses] that are up. */
    fun served(checkpoint: String): String {
        val text = checkpoint.substring(0, checkpoint.indexOf("\n\n") + 1)
        val logLines = logSigner?.let { listOf(it.sign(text)) } ?: checkpoint.substring(text.length + 1).lines().filter { it.isNotEmpty() }
        val cosignatures = witnesses.filter { it.name !in witnessesDown }.map { it.sign(text, time = 1_735_732_890) }
        return text + "\n" + (logLines + cosignatures).joinToString("") { it + "\n" }
    }

    companion object {
        /** An event changed after it was hashed. */
        val INJECT: (JsonObject) -> JsonObject = { JsonObject(it + ("injected" to JsonPrimitive(true))) }
    }
}
