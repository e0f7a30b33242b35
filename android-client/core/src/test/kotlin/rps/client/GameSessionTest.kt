package rps.client

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.ExperimentalCoroutinesApi
import kotlinx.coroutines.async
import kotlinx.coroutines.launch
import kotlinx.coroutines.test.TestScope
import kotlinx.coroutines.test.UnconfinedTestDispatcher
import kotlinx.coroutines.test.advanceTimeBy
import kotlinx.coroutines.test.runCurrent
import kotlinx.coroutines.test.runTest
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertSame
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir
import java.io.File
import kotlin.reflect.KClass

/**
 * The session against [RecordedServer]s: what a real rpsd answered in each scenario, replayed. The
 * test plays "me" through the session and moves the recording on for the other players.
 */
@OptIn(ExperimentalCoroutinesApi::class)
class GameSessionTest {
    @TempDir
    lateinit var dir: File

    private fun vault() = FileVault(File(dir, "vault"), AesGcmSealer(JceKeyStoreKeys(File(dir, "k.p12"), "pw".toCharArray())::key))

    private class Run(val server: RecordedServer, val session: GameSession, val history: MutableList<GameUiState>) {
        inline fun <reified T : GameUiState> last(): T = history.last().let { it as? T ?: throw AssertionError("showing $it") }
        fun saw(k: KClass<out GameUiState>) = history.any { k.isInstance(it) }
    }

    private fun TestScope.session(
        server: RecordedServer,
        vault: Vault = vault(),
        scope: CoroutineScope = backgroundScope,
        checkpoints: ChainCheckpoints? = null,
        logAuditor: LogAuditor? = null,
        signer: ActionSigner? = null,
        adminSignatures: AdminSignatures? = null,
    ): Run {
        val io = UnconfinedTestDispatcher(testScheduler)
        val s = GameSession(
            server.lobbyId,
            server,
            server,
            vault,
            scope,
            clock = { testScheduler.currentTime },
            random = server.random,
            io = io,
            checkpoints = checkpoints,
            logAuditor = logAuditor,
            signer = signer,
            adminSignatures = adminSignatures,
        )
        val history = mutableListOf<GameUiState>()
        backgroundScope.launch(UnconfinedTestDispatcher(testScheduler)) { s.state.collect { history += it } }
        s.start()
        runCurrent()
        return Run(server, s, history)
    }

    private fun TestScope.toMoves(run: Run) {
        backgroundScope.launch { run.session.join() }
        runCurrent()
        run.server.to("started")
        runCurrent()
        run.last<GameUiState.YourMove>()
    }

    @Test
    fun `the session checks the admins' acts it reads, an unsigned one counted as the operator's word`() = runTest {
        val admins = AdminSignatures(KeyHistories(KeyLogs().api()) { "rps.example.com/log" })
        val run = session(RecordedServer("win"), adminSignatures = admins)
        run.last<GameUiState.NotJoined>()
        // The recorded lobby was created by an admin without a key: its lobby_created carries no signature.
        assertEquals(1, admins.unsigned)
        assertEquals(0, admins.verified)
    }

    @Test
    fun `a whole game - join, wait, commit, auto reveal, round result, next round, win`() = runTest {
        val srv = RecordedServer("win")
        val run = session(srv)
        run.last<GameUiState.NotJoined>()

        assertTrue(run.session.join())
        runCurrent()
        val waiting = run.last<GameUiState.WaitingForPlayers>()
        assertEquals(1, waiting.players)
        assertEquals(3, waiting.limit)
        assertEquals(100, waiting.pot)

        srv.to("started")
        runCurrent()
        val move = run.last<GameUiState.YourMove>()
        assertEquals(1, move.round)
        assertEquals(3, move.remaining)
        // The deadline is the server's, moved to this device's clock by the offset the lobby read showed.
        val deadlineMs = srv.lobby().game!!.deadlineMs!!
        assertEquals(deadlineMs - run.session.clockOffsetMs, move.deadline!!.localMs)
        assertEquals(deadlineMs, move.deadline!!.serverMs)

        val v = vault()
        val vaultAtCommit = mutableListOf<Int?>()
        srv.onCommit = { vaultAtCommit += v.load(srv.lobbyId)?.move }
        assertTrue(run.session.commit(0))
        runCurrent()
        assertEquals(listOf<Int?>(0), vaultAtCommit, "the vault is written before the commitment is sent")
        val w = run.last<GameUiState.WaitingForOthers>()
        assertEquals(listOf(0, 1), listOf(w.move, w.committed))

        srv.to("reveal")
        runCurrent()
        // The reveal stage opened; the session revealed on its own and cleared the vault.
        assertEquals("revealed", srv.moment.name)
        assertNull(v.load(srv.lobbyId))
        val rev = run.last<GameUiState.Revealing>()
        assertTrue(rev.sent)
        assertEquals(0, rev.move)

        srv.to("round2")
        runCurrent()
        val result = run.history.filterIsInstance<GameUiState.RoundResult>().single().outcome
        assertEquals(1, result.round)
        assertEquals(2, result.remaining)
        assertEquals(true, result.youSurvived)
        assertEquals(listOf(2L, 0L, 1L, 0L, 0L), result.counts, "two Rocks and a Scissors")
        val round2 = run.last<GameUiState.YourMove>()
        assertEquals(2, round2.round)
        assertEquals(result, round2.lastRound)

        assertTrue(run.session.commit(0))
        runCurrent()
        srv.to("reveal2")
        runCurrent()
        assertEquals("revealed2", srv.moment.name)
        srv.to("won")
        runCurrent()
        val won = run.last<GameUiState.Won>()
        assertEquals(300, won.amount)
        assertEquals(listOf(1, 2), run.session.rounds.value.map { it.round }, "every round of the game, in order")
        assertEquals(won.lastRound, run.session.rounds.value.last())
        assertTrue(won.isFinal)
        assertEquals(srv.events.last().seq, run.session.verifiedSeq)
        for (k in listOf(
            GameUiState.NotJoined::class,
            GameUiState.WaitingForPlayers::class,
            GameUiState.YourMove::class,
            GameUiState.WaitingForOthers::class,
            GameUiState.Revealing::class,
            GameUiState.RoundResult::class,
            GameUiState.Won::class,
        )) {
            assertTrue(run.saw(k), "saw $k")
        }
    }

    @Test
    fun `every action is signed for its lobby, game, round, payload and idempotency key`() = runTest {
        val srv = RecordedServer("win")
        val key = SoftwarePlayerKey(ByteArray(32) { 5 })
        val origin = "rps.test/log"
        val run = session(srv, signer = ActionSigner(key, srv.meId, { origin }) { testScheduler.currentTime })
        toMoves(run)
        assertTrue(run.session.commit(0))
        runCurrent()
        srv.to("reveal")
        runCurrent()
        val game = srv.lobby().game!!.id
        val bet = srv.lobby().config.betSize
        assertEquals(listOf("register", "commit", "reveal"), srv.sent.map { it.action })
        for (s in srv.sent) {
            val a = s.auth!!
            val (action, payload, round) = when (s.action) {
                "register" -> Triple(SignedAction.REGISTER, ActionPayloads.register(bet), null)
                "commit" -> Triple(SignedAction.COMMIT, ActionPayloads.commit(s.value!!), 1)
                else -> Triple(SignedAction.REVEAL, ActionPayloads.reveal(s.value!!), 1)
            }
            assertEquals(game, a.gameId, s.action)
            assertEquals(round, a.round, s.action)
            val m = ActionMessage(origin, action, srv.meId, srv.lobbyId, game, round, payload, s.idempotencyKey, key.keyId, a.signedAt)
            assertTrue(m.verify(key.publicKeyHex, a.signature), "${s.action}'s signature over ${String(m.bytes())}")
        }
    }

    @Test
    fun `eliminated players see Lost, and the winner's event keeps it lost`() = runTest {
        val srv = RecordedServer("eliminated")
        val run = session(srv)
        toMoves(run)
        assertTrue(run.session.commit(0))
        srv.to("reveal")
        runCurrent()
        srv.to("out")
        runCurrent()
        assertEquals(false, run.history.filterIsInstance<GameUiState.RoundResult>().single().outcome.youSurvived)
        assertEquals(1, run.last<GameUiState.Lost>().round)
        srv.to("over")
        runCurrent()
        assertEquals(1, run.last<GameUiState.Lost>().round)
        assertEquals(listOf(1), run.session.rounds.value.map { it.round }, "the rounds played on without the player are not theirs")
    }

    @Test
    fun `a stopped game shows the reason and the share`() = runTest {
        val srv = RecordedServer("stopped")
        val run = session(srv)
        toMoves(run)
        srv.to("stopped")
        runCurrent()
        val s = run.last<GameUiState.Stopped>()
        assertEquals("maintenance", s.reason)
        assertEquals(100, s.share)
    }

    @Test
    fun `a new session after the game ended offers the next game, and leaving it refunds the bet`() = runTest {
        val srv = RecordedServer("stopped")
        val run = session(srv)
        toMoves(run)
        run.session.stop()
        srv.to("stopped")
        val again = session(srv)
        val open = again.last<GameUiState.NotJoined>()
        assertEquals(2, open.lobby.game!!.number)
        assertTrue(again.session.join())
        runCurrent()
        again.last<GameUiState.WaitingForPlayers>()
        assertTrue(again.session.leave())
        runCurrent()
        assertEquals(100, again.last<GameUiState.Left>().refund)
        assertEquals(srv.moment.me.balance, srv.recording.moments[srv.recording.moment("stopped")].me.balance)
    }

    @Test
    fun `network errors are retried with the same idempotency key`() = runTest {
        val srv = RecordedServer("win")
        val run = session(srv)
        toMoves(run)
        srv.failures["commit"] = 2
        srv.applyThenFail = true // the first attempt lands but its response is lost
        assertTrue(run.session.commit(0))
        runCurrent()
        val keys = srv.calls.filter { it.startsWith("commit ") }
        assertEquals(3, keys.size)
        assertEquals(1, keys.toSet().size, "every retry reuses the key")
        run.last<GameUiState.WaitingForOthers>()
        assertEquals("committed", srv.moment.name)

        srv.failures["reveal"] = 1
        srv.applyThenFail = false
        srv.to("reveal")
        advanceTimeBy(1_000)
        runCurrent()
        val rk = srv.calls.filter { it.startsWith("reveal ") }
        assertEquals(2, rk.size)
        assertEquals(1, rk.toSet().size)
        assertEquals("revealed", srv.moment.name)
    }

    @Test
    fun `a session killed after committing is replaced by one that reveals from the vault`() = runTest {
        val srv = RecordedServer("win")
        val first = session(srv, vault())
        toMoves(first)
        assertTrue(first.session.commit(0))
        runCurrent()
        first.session.stop()

        srv.to("reveal") // the reveal stage opens while no session runs
        val second = session(srv, vault()) // a new process: new session, new vault object over the same files
        runCurrent()
        assertEquals("revealed", srv.moment.name)
        assertNull(vault().load(srv.lobbyId))
        assertTrue(second.last<GameUiState.Revealing>().sent)
    }

    @Test
    fun `a crash between the vault write and the commit is resumed with the same key`() = runTest {
        val srv = RecordedServer("win")
        val v = vault()
        val first = session(srv, v)
        toMoves(first)
        srv.failures["commit"] = 100 // the network is down: every attempt fails
        assertFalse(first.session.commit(0))
        runCurrent()
        first.last<GameUiState.Error>()
        val saved = v.load(srv.lobbyId)
        assertNotNull(saved)
        first.session.stop()

        srv.failures.clear()
        val second = session(srv, vault())
        runCurrent()
        assertEquals("committed", srv.moment.name)
        assertEquals(saved!!.commitment, srv.moment.commitment)
        assertEquals("commit ${saved.commitKey}", srv.calls.last { it.startsWith("commit") })
        second.last<GameUiState.WaitingForOthers>()
    }

    @Test
    fun `a broken chain stops the session with a visible error`() = runTest {
        val srv = RecordedServer("win")
        val run = session(srv)
        run.session.join()
        runCurrent()
        srv.tamperEvent[srv.events.size + 1L] = RecordedServer.INJECT
        srv.to("started")
        runCurrent()
        val e = run.last<GameUiState.Error>()
        assertTrue(e.fatal)
        assertTrue(e.error is RpsException.ChainBroken)
        assertTrue(e.message.contains("failed verification"))
        srv.to("reveal")
        runCurrent()
        assertSame(e, run.history.last(), "nothing after a broken chain is believed")
    }

    @Test
    fun `refusals become readable, non-fatal errors`() = runTest {
        val srv = RecordedServer("win")
        val run = session(srv)
        srv.problemFor["register"] = srv.problem("insufficient_funds")
        assertFalse(run.session.join())
        runCurrent()
        val e = run.last<GameUiState.Error>()
        assertFalse(e.fatal)
        assertEquals("Your balance is too low for this bet.", e.message)
        assertTrue(e.previous is GameUiState.NotJoined)

        srv.problemFor["register"] = srv.problem("lobby_full")
        assertFalse(run.session.join())
        assertEquals(ErrorCode.LOBBY_FULL, (run.last<GameUiState.Error>().error as RpsException.Problem).code)

        assertTrue(run.session.join())
        runCurrent()
        run.last<GameUiState.WaitingForPlayers>()
        // Joining twice is harmless.
        srv.problemFor["register"] = srv.problem("already_registered")
        assertTrue(run.session.join())
    }

    @Test
    fun `a commit that is too late shows wrong_stage and follows the server`() = runTest {
        val srv = RecordedServer("late")
        val run = session(srv)
        toMoves(run)
        srv.feedPaused.value = true
        srv.to("moves-closed") // the moves closed without us; the session has not heard yet
        assertFalse(run.session.commit(1))
        runCurrent()
        assertEquals("late-commit", srv.moment.name)
        val e = run.last<GameUiState.Error>()
        assertEquals("Too late: the game has already moved on.", e.message)
        assertEquals(1, (e.previous as GameUiState.Lost).round)
    }

    @Test
    fun `a second tap while sending does nothing, and a tap the server would refuse is refused through the state`() = runTest {
        val srv = RecordedServer("win")
        val run = session(srv)
        assertFalse(run.session.commit(1), "not joined")
        runCurrent()
        assertEquals("You are not playing in this round.", run.last<GameUiState.Error>().message)
        toMoves(run)

        srv.failures["commit"] = 1 // the first commitment's request is lost: it waits to be retried
        val first = async { run.session.commit(0) }
        runCurrent()
        assertFalse(run.session.commit(2), "a second tap while the first is being sent")
        assertTrue(first.await())
        val commits = srv.calls.filter { it.startsWith("commit") }
        assertEquals(2, commits.size)
        assertEquals(commits[0], commits[1]) // one commitment, retried with its key
        assertTrue(run.history.takeLastWhile { it !is GameUiState.YourMove }.none { it is GameUiState.Error })

        assertFalse(run.session.commit(2), "already committed")
        runCurrent()
        assertEquals("You have already chosen your weapon this round.", run.last<GameUiState.Error>().message)
        assertEquals(2, srv.calls.count { it.startsWith("commit") }, "nothing more was sent")
    }

    @Test
    fun `a refusal stays over its screen, which goes on updating, until the screen changes`() = runTest {
        val srv = RecordedServer("eliminated")
        val run = session(srv)
        srv.problemFor["register"] = srv.problem("insufficient_funds")
        assertFalse(run.session.join())
        runCurrent()
        srv.to("bo-joined") // someone else registers: the same screen, with new figures
        runCurrent()
        val e = run.last<GameUiState.Error>()
        assertEquals("Your balance is too low for this bet.", e.message)
        assertEquals(1, (e.previous as GameUiState.NotJoined).lobby.game!!.players)
        assertTrue(run.session.join())
        runCurrent()
        run.last<GameUiState.WaitingForPlayers>()
    }

    @Test
    fun `an unauthorized token is fatal`() = runTest {
        val srv = RecordedServer("win")
        val run = session(srv)
        srv.problemFor["register"] = srv.problem("unauthorized")
        run.session.join()
        runCurrent()
        val e = run.last<GameUiState.Error>()
        assertTrue(e.fatal)
        assertTrue(e.isFinal)
    }

    @Test
    fun `a lost vault is reported when the reveal stage opens`() = runTest {
        val srv = RecordedServer("win")
        val v = vault()
        val run = session(srv, v)
        toMoves(run)
        assertTrue(run.session.commit(0))
        runCurrent()
        run.session.stop()
        v.clear(srv.lobbyId) // e.g. the app's data was wiped
        srv.to("reveal")
        val again = session(srv, v)
        runCurrent()
        val e = again.last<GameUiState.Error>()
        assertTrue(e.error is RpsException.VaultMissing)
        assertEquals("reveal", srv.moment.name, "nothing was revealed")
    }

    @Test
    fun `problem bodies map to typed errors`() {
        val p = Mappers.problem(
            409,
            """{"type":"urn:rps:problem:lobby_full","title":"Lobby full","status":409,"code":"lobby_full","detail":"full"}""",
        )
        assertEquals(ErrorCode.LOBBY_FULL, p.code)
        assertEquals("full", p.detail)
        assertFalse(p.retryable)
        val u = Mappers.problem(418, """{"type":"x","title":"x","status":418,"code":"teapot"}""")
        assertEquals(ErrorCode.UNKNOWN, u.code)
        assertEquals(418, u.status)
        val r = Mappers.problem(429, null, 2)
        assertEquals(ErrorCode.RATE_LIMITED, r.code)
        assertTrue(r.retryable)
        assertEquals(2, r.retryAfterSeconds)
        assertEquals(ErrorCode.INTERNAL, Mappers.problem(503, "<html>").code)
        for (c in ErrorCode.entries) assertTrue(c.playerMessage.isNotBlank())
        // Every code of the contract is known to the client. ProblemCode is an open string in the
        // contract, which lists this version's codes in its description: `code` status; ...
        val spec = File("../../openapi.yaml").readText()
        val problemCode = spec.substringAfter("\n    ProblemCode:\n").substringBefore("\n      example:")
        val codes = Regex("`([a-z_]+)`").findAll(problemCode.substringAfter("with their status:")).map { it.groupValues[1] }.toList()
        assertTrue(codes.size >= 20, "codes read from openapi.yaml: $codes")
        for (c in codes) assertEquals(c, ErrorCode.fromWire(c).wire)
        // The real server's refusals, as recorded.
        val win = Recording.load("win")
        for (code in listOf("insufficient_funds", "lobby_full", "already_registered", "already_committed", "wrong_stage", "unauthorized")) {
            assertEquals(code, win.problem(code).code.wire)
        }
    }

    @Test
    fun `a deadline extended without an event is picked up once the old one has passed`() = runTest {
        val srv = RecordedServer("extended")
        val run = session(srv)
        run.session.join()
        srv.to("extended")
        runCurrent()
        val first = run.last<GameUiState.WaitingForPlayers>().deadline!!
        srv.to("extended-again") // the server extends the stage again and writes no event
        runCurrent()
        assertEquals(first, run.last<GameUiState.WaitingForPlayers>().deadline)

        advanceTimeBy(first.remainingMs(testScheduler.currentTime) + GameSession.DEADLINE_GRACE_MS + 1)
        runCurrent()
        val next = run.last<GameUiState.WaitingForPlayers>().deadline!!
        assertEquals(srv.lobby().game!!.deadlineMs, next.serverMs)
        assertTrue(next.serverMs > first.serverMs)
        assertTrue(next.remainingMs(testScheduler.currentTime) > 0, "the countdown runs again")
    }

    @Test
    fun `verification resumes from the stored checkpoint and a history rewritten before it breaks there`() = runTest {
        val checkpoints = FileChainCheckpoints(File(dir, "chain"))
        val srv = RecordedServer("eliminated")
        val run = session(srv, checkpoints = checkpoints)
        srv.to("bo-joined")
        runCurrent()
        val last = srv.events.last()
        assertEquals(ChainCheckpoint(last.seq, last.hash, srv.head()), checkpoints.load(srv.lobbyId))
        run.session.stop()

        // The same log, resumed from the checkpoint: the next events link to it.
        val resumed = session(srv, checkpoints = checkpoints)
        srv.to("joined")
        runCurrent()
        assertEquals(srv.events.last().seq, resumed.session.verifiedSeq)
        assertFalse(resumed.saw(GameUiState.Error::class))
        resumed.session.stop()

        // The server now serves another history up to the checkpoint: the next event does not link.
        checkpoints.save(srv.lobbyId, ChainCheckpoint(srv.events.last().seq, "ab".repeat(32)))
        val forged = session(srv, checkpoints = checkpoints)
        srv.to("started")
        runCurrent()
        val err = forged.last<GameUiState.Error>()
        assertTrue(err.fatal)
        assertTrue(err.error is RpsException.ChainBroken, "got ${err.error}")
    }

    @Test
    fun `signed heads are checked against the server's keys and the newest is kept with the checkpoint`() = runTest {
        val checkpoints = FileChainCheckpoints(File(dir, "chain"))
        val srv = RecordedServer("eliminated")
        val run = session(srv, checkpoints = checkpoints)
        srv.to("bo-joined")
        runCurrent()
        val last = srv.events.last()
        assertEquals(srv.head(), run.session.receipt)
        assertEquals(ChainCheckpoint(last.seq, last.hash, srv.head()), checkpoints.load(srv.lobbyId))
        assertEquals(1, srv.keyFetches, "the keys are fetched once and kept")
        assertEquals(
            TrustStatus(listOf(TrustCheck.ChainVerified(last.seq), TrustCheck.HeadSigned(srv.head().keyId, last.seq))),
            run.session.trust.value,
        )
        run.session.stop()

        // A new process resumes with the receipt, and keeps newer ones.
        val resumed = session(srv, checkpoints = checkpoints)
        assertEquals(srv.head(), resumed.session.receipt)
        srv.to("started")
        runCurrent()
        assertEquals(srv.head(), checkpoints.load(srv.lobbyId)!!.head)
        assertFalse(resumed.saw(GameUiState.Error::class))
    }

    @Test
    fun `a head with a bad signature is a tampering warning and is not kept`() = runTest {
        val checkpoints = FileChainCheckpoints(File(dir, "chain"))
        val srv = RecordedServer("eliminated")
        val run = session(srv, checkpoints = checkpoints)
        srv.to("bo-joined")
        runCurrent()
        val good = checkpoints.load(srv.lobbyId)!!.head!!
        srv.tamperHead =
            { h -> h.copy(signature = h.signature.take(10) + (if (h.signature[10] == '0') '1' else '0') + h.signature.drop(11)) }
        srv.to("joined")
        runCurrent()
        val err = run.last<GameUiState.Error>()
        assertTrue(err.fatal)
        assertTrue(err.error is RpsException.BadHead, "got ${err.error}")
        assertEquals("The server's signature on the lobby's history did not verify. Do not trust this server.", err.message)
        assertEquals(good, checkpoints.load(srv.lobbyId)!!.head, "the bad head is never stored")
    }

    @Test
    fun `a head signed with an unknown key makes the session fetch the keys again, then warns`() = runTest {
        val srv = RecordedServer("eliminated")
        val run = session(srv)
        srv.to("bo-joined")
        runCurrent()
        assertEquals(1, srv.keyFetches)
        srv.tamperHead = { h -> h.copy(keyId = "00112233aabbccdd") }
        srv.to("joined")
        runCurrent()
        assertEquals(2, srv.keyFetches, "an unknown key id is looked up again (the server may have rotated its key)")
        val err = run.last<GameUiState.Error>()
        assertTrue(err.fatal && err.error is RpsException.BadHead, "got $err")
    }

    @Test
    fun `a validly signed head that contradicts the verified log is proof of a fork`() = runTest {
        val srv = RecordedServer("eliminated")
        srv.publishForger = true
        val run = session(srv)
        srv.to("bo-joined")
        runCurrent()
        srv.tamperHead = { h -> srv.forged(h.copy(hash = "ab".repeat(32))) }
        srv.to("joined")
        runCurrent()
        val err = run.last<GameUiState.Error>()
        assertTrue(err.fatal && err.error is RpsException.ChainBroken, "got $err")
    }

    @Test
    fun `a round's result arriving after the next round is shown does not take the screen back`() = runTest {
        val srv = RecordedServer("win")
        val run = session(srv)
        toMoves(run)
        assertTrue(run.session.commit(0))
        srv.to("reveal")
        runCurrent()
        assertTrue(run.last<GameUiState.Revealing>().sent)
        srv.feedPaused.value = true
        srv.to("round2")
        // The lobby, read again once the reveal deadline passed, already shows round 2.
        advanceTimeBy(
            run.last<GameUiState.Revealing>().deadline!!.remainingMs(testScheduler.currentTime) + GameSession.DEADLINE_GRACE_MS + 1,
        )
        runCurrent()
        assertEquals(2, run.last<GameUiState.YourMove>().round)
        val from = run.history.size
        srv.feedPaused.value = false
        runCurrent()
        assertFalse(run.history.drop(from).any { it is GameUiState.RoundResult }, "${run.history.drop(from)}")
        val move = run.last<GameUiState.YourMove>()
        assertEquals(2, move.round)
        assertEquals(1, move.lastRound!!.round)
    }

    private fun TestScope.auditor(srv: RecordedServer) =
        LogAuditor("http://rpsd.test", srv, FileLogTrusts(File(dir, "log")), io = UnconfinedTestDispatcher(testScheduler))

    /** Lets the session's log loop run its next attempt: the first after a head came, or a retry. */
    private fun TestScope.nextLogAttempt() {
        advanceTimeBy(GameSession.LOG_LAG_MS + 1)
        runCurrent()
    }

    @Test
    fun `each signed head is proven in the transparency log once it holds it, quietly until then`() = runTest {
        val srv = RecordedServer("logged")
        val run = session(srv, logAuditor = auditor(srv))
        val keyId = srv.recording.log!!.keys.single().keyId
        nextLogAttempt()
        assertEquals(TrustCheck.NotInLogYet(2), run.session.trust.value.checks.last())
        assertEquals(listOf("info", "inclusion 2"), srv.logCalls)

        srv.to("open-logged")
        nextLogAttempt()
        assertEquals(TrustCheck.InLog(2, 70, 75, keyId, emptyList(), null), run.session.trust.value.checks.last())

        assertTrue(run.session.join())
        runCurrent()
        nextLogAttempt()
        // Head 3 is not in the log yet: the line goes on showing the last proof, of event 2.
        assertEquals("inclusion 3", srv.logCalls.last())
        assertEquals(TrustCheck.InLog(2, 70, 75, keyId, emptyList(), null), run.session.trust.value.checks.last())
        srv.to("joined-logged")
        nextLogAttempt()
        srv.to("started-logged")
        runCurrent()
        nextLogAttempt()
        assertEquals(
            TrustStatus(
                listOf(
                    TrustCheck.ChainVerified(6),
                    TrustCheck.HeadSigned(srv.head().keyId, 6),
                    TrustCheck.InLog(6, 78, 79, keyId, emptyList(), 76),
                ),
            ),
            run.session.trust.value,
        )
        assertEquals(listOf("consistency 75 76", "consistency 76 79"), srv.logCalls.filter { it.startsWith("consistency") })
        assertFalse(run.saw(GameUiState.Error::class), "${run.history}")
        run.last<GameUiState.YourMove>()
    }

    @Test
    fun `a log that cannot be reached is asked again later, without a warning`() = runTest {
        val srv = RecordedServer("logged")
        srv.to("open-logged")
        val failing = object : PlayerApi by srv {
            var down = true
            override suspend fun logInclusion(lobbyId: String, seq: Long): LogInclusion {
                if (down) throw RpsException.Network(java.io.IOException("connection reset"))
                return srv.logInclusion(lobbyId, seq)
            }
        }
        val run = session(srv, logAuditor = LogAuditor("http://rpsd.test", failing, null, io = UnconfinedTestDispatcher(testScheduler)))
        nextLogAttempt()
        assertEquals(TrustCheck.HeadSigned(srv.head().keyId, 2), run.session.trust.value.checks.last())
        failing.down = false
        advanceTimeBy(GameSession.LOG_MAX_BACKOFF_MS)
        runCurrent()
        assertEquals(70L, (run.session.trust.value.checks.last() as TrustCheck.InLog).leafIndex)
        assertFalse(run.saw(GameUiState.Error::class), "${run.history}")
    }

    @Test
    fun `a log that contradicts what this device kept stops the session with the tampering notice`() = runTest {
        val srv = RecordedServer("logged")
        val run = session(srv, logAuditor = auditor(srv))
        srv.to("open-logged")
        nextLogAttempt()
        assertTrue(run.session.join())
        runCurrent()
        srv.to("joined-logged")
        nextLogAttempt()
        assertEquals(76L, (run.session.trust.value.checks.last() as TrustCheck.InLog).treeSize)
        // The log now shows this device an older tree than the one it kept: a rollback.
        val rolledBack = srv.recording.moments[srv.recording.moment("open-logged")].inclusion!!
        srv.tamperInclusion = { rolledBack.copy(seq = it.seq) }
        srv.to("started-logged")
        runCurrent()
        nextLogAttempt()
        val err = run.last<GameUiState.Error>()
        assertTrue(err.fatal)
        val e = err.error as RpsException.LogMisbehavior
        assertEquals(RpsException.LogMisbehavior.Kind.ROLLED_BACK, e.kind)
        assertEquals(
            "The server's transparency log went back to an older state than it showed this device. Do not trust this server.",
            err.message,
        )
    }
}
