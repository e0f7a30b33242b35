package rps.client

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.ExperimentalCoroutinesApi
import kotlinx.coroutines.async
import kotlinx.coroutines.flow.first
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
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir
import java.io.File
import kotlin.reflect.KClass

@OptIn(ExperimentalCoroutinesApi::class)
class GameSessionTest {
    @TempDir
    lateinit var dir: File

    private fun vault() = FileVault(File(dir, "vault"), AesGcmSealer(JceKeyStoreKeys(File(dir, "k.p12"), "pw".toCharArray())::key))

    private class Run(val server: FakeServer, val session: GameSession, val history: MutableList<GameUiState>) {
        inline fun <reified T : GameUiState> last(): T = history.last() as T
        fun saw(k: KClass<out GameUiState>) = history.any { k.isInstance(it) }
    }

    private fun TestScope.session(
        server: FakeServer,
        vault: Vault = vault(),
        scope: CoroutineScope = backgroundScope,
        checkpoints: ChainCheckpoints? = null,
    ): Run {
        val io = UnconfinedTestDispatcher(testScheduler)
        val s =
            GameSession(server.lobbyId, server, server, vault, scope, clock = {
                testScheduler.currentTime
            }, io = io, checkpoints = checkpoints)
        val history = mutableListOf<GameUiState>()
        backgroundScope.launch(UnconfinedTestDispatcher(testScheduler)) { s.state.collect { history += it } }
        s.start()
        runCurrent()
        return Run(server, s, history)
    }

    private fun TestScope.server() = FakeServer(now = { testScheduler.currentTime })

    @Test
    fun `a whole game - join, wait, commit, auto reveal, round result, next round, win`() = runTest {
        val srv = server()
        val run = session(srv)
        assertTrue(run.history.last() is GameUiState.NotJoined)

        assertTrue(run.session.join())
        runCurrent()
        val waiting = run.last<GameUiState.WaitingForPlayers>()
        assertEquals(1, waiting.players)
        assertEquals(3, waiting.limit)
        assertEquals(100, waiting.pot)

        srv.othersJoin(2)
        runCurrent()
        val move = run.last<GameUiState.YourMove>()
        assertEquals(1, move.round)
        // The server's clock is 5 s ahead: the local deadline is corrected by that offset.
        assertEquals(srv.deadlineMs!! - srv.skewMs, move.deadline!!.localMs)
        assertEquals(srv.skewMs, run.session.clockOffsetMs)

        val v = vault()
        val vaultAtCommit = mutableListOf<Int?>()
        srv.onCommit = { vaultAtCommit += v.load(srv.lobbyId)?.move }
        assertTrue(run.session.commit(2))
        runCurrent()
        assertEquals(listOf<Int?>(2), vaultAtCommit, "the vault is written before the commitment is sent")
        val w = run.last<GameUiState.WaitingForOthers>()
        assertEquals(2, w.move)
        assertEquals(1, w.committed)

        srv.othersCommit()
        runCurrent()
        // The reveal stage opened; the session revealed on its own and cleared the vault.
        assertEquals(2, srv.you.move)
        assertTrue(srv.calls.any { it.startsWith("reveal ") })
        assertNull(v.load(srv.lobbyId))
        val rev = run.last<GameUiState.Revealing>()
        assertTrue(rev.sent)
        assertEquals(2, rev.move)

        srv.othersReveal()
        runCurrent()
        srv.resolve(survivors = 2, meSurvives = true, present = 0b111, survivorsMask = 0b111)
        runCurrent()
        val result = run.history.filterIsInstance<GameUiState.RoundResult>().single().outcome
        assertEquals(1, result.round)
        assertEquals(2, result.remaining)
        assertEquals(true, result.youSurvived)
        val round2 = run.last<GameUiState.YourMove>()
        assertEquals(2, round2.round)
        assertEquals(result, round2.lastRound)

        run.session.commit(0)
        runCurrent()
        srv.othersCommit()
        runCurrent()
        srv.othersReveal()
        runCurrent()
        srv.resolve(survivors = 1, meSurvives = true, present = 0b101, survivorsMask = 0b001)
        runCurrent()
        val won = run.last<GameUiState.Won>()
        assertEquals(300, won.amount)
        assertTrue(won.isFinal)
        assertEquals(srv.events.size.toLong(), run.session.verifiedSeq)
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

    private suspend fun TestScope.toMoves(run: Run) {
        run.session.join()
        run.server.othersJoin(2)
        runCurrent()
        assertTrue(run.history.last() is GameUiState.YourMove)
    }

    @Test
    fun `eliminated players see Lost, and the winner's event keeps it lost`() = runTest {
        val run = session(server())
        toMoves(run)
        run.session.commit(1)
        run.server.othersCommit()
        runCurrent()
        run.server.othersReveal()
        run.server.resolve(survivors = 2, meSurvives = false, present = 0b110, survivorsMask = 0b100)
        runCurrent()
        assertEquals(false, run.history.filterIsInstance<GameUiState.RoundResult>().single().outcome.youSurvived)
        assertEquals(1, run.last<GameUiState.Lost>().round)
    }

    @Test
    fun `a stopped game shows the reason and the share`() = runTest {
        val run = session(server())
        toMoves(run)
        run.server.stop("maintenance")
        runCurrent()
        val s = run.last<GameUiState.Stopped>()
        assertEquals("maintenance", s.reason)
        assertEquals(100, s.share)
    }

    @Test
    fun `a new session after the game ended offers the next game`() = runTest {
        val srv = server()
        val run = session(srv)
        toMoves(run)
        run.session.stop()
        srv.stop("admin")
        val again = session(srv)
        assertTrue(again.history.last() is GameUiState.NotJoined)
    }

    @Test
    fun `network errors are retried with the same idempotency key`() = runTest {
        val srv = server()
        val run = session(srv)
        toMoves(run)
        srv.failures["commit"] = 2
        srv.applyThenFail = true // the first attempt lands but its response is lost
        assertTrue(run.session.commit(3))
        runCurrent()
        val keys = srv.calls.filter { it.startsWith("commit ") }
        assertEquals(3, keys.size)
        assertEquals(1, keys.toSet().size, "every retry reuses the key")
        assertTrue(run.history.last() is GameUiState.WaitingForOthers)
        assertEquals(1, srv.committed)

        srv.failures["reveal"] = 1
        srv.applyThenFail = false
        srv.othersCommit()
        advanceTimeBy(1_000)
        runCurrent()
        val rk = srv.calls.filter { it.startsWith("reveal ") }
        assertEquals(2, rk.size)
        assertEquals(1, rk.toSet().size)
        assertTrue(srv.you.revealed)
    }

    @Test
    fun `a session killed after committing is replaced by one that reveals from the vault`() = runTest {
        val srv = server()
        val v = vault()
        val first = session(srv, v)
        toMoves(first)
        first.session.commit(4)
        runCurrent()
        first.session.stop()

        srv.othersCommit() // the reveal stage opens while no session runs
        val second = session(srv, vault()) // a new process: new session, new vault object over the same files
        runCurrent()
        assertTrue(srv.you.revealed)
        assertEquals(4, srv.you.move)
        assertNull(vault().load(srv.lobbyId))
        assertTrue(second.last<GameUiState.Revealing>().sent)
    }

    @Test
    fun `a crash between the vault write and the commit is resumed with the same key`() = runTest {
        val srv = server()
        val v = vault()
        val first = session(srv, v)
        toMoves(first)
        srv.failures["commit"] = 100 // the network is down: every attempt fails
        assertFalse(first.session.commit(1))
        runCurrent()
        assertTrue(first.history.last() is GameUiState.Error)
        val saved = v.load(srv.lobbyId)
        assertNotNull(saved)
        first.session.stop()

        srv.failures.clear()
        val second = session(srv, vault())
        runCurrent()
        assertTrue(srv.you.committed)
        assertEquals(saved!!.commitment, srv.myCommitment)
        assertEquals("commit ${saved.commitKey}", srv.calls.last { it.startsWith("commit") })
        assertTrue(second.history.last() is GameUiState.WaitingForOthers)
    }

    @Test
    fun `a broken chain stops the session with a visible error`() = runTest {
        val srv = server()
        val run = session(srv)
        run.session.join()
        runCurrent()
        srv.tamperNext = true
        srv.othersJoin(1)
        runCurrent()
        val e = run.last<GameUiState.Error>()
        assertTrue(e.fatal)
        assertTrue(e.error is RpsException.ChainBroken)
        assertTrue(e.message.contains("failed verification"))
        srv.othersJoin(1)
        runCurrent()
        assertTrue(run.history.last() === e, "nothing after a broken chain is believed")
    }

    @Test
    fun `refusals become readable, non-fatal errors`() = runTest {
        val srv = server()
        val run = session(srv)
        srv.problemFor["register"] = RpsException.Problem(ErrorCode.INSUFFICIENT_FUNDS, 409, "balance 0")
        assertFalse(run.session.join())
        runCurrent()
        val e = run.last<GameUiState.Error>()
        assertFalse(e.fatal)
        assertEquals("Your balance is too low for this bet.", e.message)
        assertTrue(e.previous is GameUiState.NotJoined)

        srv.problemFor["register"] = RpsException.Problem(ErrorCode.LOBBY_FULL, 409, null)
        assertFalse(run.session.join())
        assertEquals(ErrorCode.LOBBY_FULL, (run.last<GameUiState.Error>().error as RpsException.Problem).code)

        assertTrue(run.session.join())
        runCurrent()
        assertTrue(run.history.last() is GameUiState.WaitingForPlayers)
        // Joining twice is harmless.
        assertTrue(run.session.join())
    }

    @Test
    fun `a commit that is too late shows wrong_stage and follows the server`() = runTest {
        val srv = server()
        val run = session(srv)
        toMoves(run)
        srv.problemFor["commit"] = RpsException.Problem(ErrorCode.WRONG_STAGE, 409, null)
        assertFalse(run.session.commit(0))
        runCurrent()
        assertEquals("Too late: the game has already moved on.", run.last<GameUiState.Error>().message)
    }

    @Test
    fun `a second tap while sending does nothing, and a tap the server would refuse is refused through the state`() = runTest {
        val srv = server()
        val run = session(srv)
        assertFalse(run.session.commit(1), "not joined")
        runCurrent()
        assertEquals("You are not playing in this round.", run.last<GameUiState.Error>().message)
        toMoves(run)

        srv.failures["commit"] = 1 // the first commitment's answer is lost: it waits to be retried
        val first = async { run.session.commit(1) }
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
        val srv = server()
        val run = session(srv)
        srv.problemFor["register"] = RpsException.Problem(ErrorCode.INSUFFICIENT_FUNDS, 402, null)
        assertFalse(run.session.join())
        runCurrent()
        srv.othersJoin(1) // someone else registers: the same screen, with new figures
        runCurrent()
        val e = run.last<GameUiState.Error>()
        assertEquals("Your balance is too low for this bet.", e.message)
        assertEquals(1, (e.previous as GameUiState.NotJoined).lobby.game!!.players)
        assertTrue(run.session.join())
        runCurrent()
        assertTrue(run.history.last() is GameUiState.WaitingForPlayers, "a new screen clears the refusal")
    }

    @Test
    fun `an unauthorized token is fatal`() = runTest {
        val srv = server()
        val run = session(srv)
        srv.problemFor["register"] = RpsException.Problem(ErrorCode.UNAUTHORIZED, 401, null)
        run.session.join()
        runCurrent()
        val e = run.last<GameUiState.Error>()
        assertTrue(e.fatal)
        assertTrue(e.isFinal)
    }

    @Test
    fun `a lost vault is reported when the reveal stage opens`() = runTest {
        val srv = server()
        val v = vault()
        val run = session(srv, v)
        toMoves(run)
        run.session.commit(2)
        runCurrent()
        run.session.stop()
        v.clear(srv.lobbyId) // e.g. the app's data was wiped
        srv.othersCommit()
        val again = session(srv, v)
        runCurrent()
        val e = again.last<GameUiState.Error>()
        assertTrue(e.error is RpsException.VaultMissing)
        assertFalse(srv.you.revealed)
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
    }

    @Test
    fun `a deadline extended without an event is picked up once the old one has passed`() = runTest {
        val srv = server()
        val run = session(srv)
        run.session.join()
        runCurrent()
        val first = run.last<GameUiState.WaitingForPlayers>().deadline!!
        srv.deadlineMs = srv.deadlineMs!! + 7_000 // the server extends the stage and writes no event

        advanceTimeBy(first.remainingMs(testScheduler.currentTime) + GameSession.DEADLINE_GRACE_MS + 1)
        runCurrent()
        val next = run.last<GameUiState.WaitingForPlayers>().deadline!!
        assertEquals(first.serverMs + 7_000, next.serverMs)
        assertTrue(next.remainingMs(testScheduler.currentTime) > 0, "the countdown runs again")
    }

    @Test
    fun `verification resumes from the stored checkpoint and a history rewritten before it breaks there`() = runTest {
        val checkpoints = FileChainCheckpoints(File(dir, "chain"))
        val srv = server()
        val run = session(srv, checkpoints = checkpoints)
        run.session.join()
        srv.othersJoin(1)
        runCurrent()
        val last = srv.events.last()
        assertEquals(ChainCheckpoint(last.seq, last.hash, srv.head(last.seq)), checkpoints.load(srv.lobbyId))
        run.session.stop()

        // The same log, resumed from the checkpoint: the next events link to it.
        val resumed = session(srv, checkpoints = checkpoints)
        srv.othersJoin(1)
        runCurrent()
        assertEquals(srv.events.last().seq, resumed.session.verifiedSeq)
        assertFalse(resumed.saw(GameUiState.Error::class))
        resumed.session.stop()

        // The server now serves another history up to the checkpoint: the next event does not link.
        checkpoints.save(srv.lobbyId, ChainCheckpoint(srv.events.last().seq, "ab".repeat(32)))
        val forged = session(srv, checkpoints = checkpoints)
        srv.changeNextConfig()
        runCurrent()
        val err = forged.last<GameUiState.Error>()
        assertTrue(err.fatal)
        assertTrue(err.error is RpsException.ChainBroken, "got ${err.error}")
    }

    @Test
    fun `signed heads are checked against the server's keys and the newest is kept with the checkpoint`() = runTest {
        val checkpoints = FileChainCheckpoints(File(dir, "chain"))
        val srv = server()
        val run = session(srv, checkpoints = checkpoints)
        run.session.join()
        runCurrent()
        srv.othersJoin(2)
        runCurrent()
        val last = srv.events.last()
        assertEquals(srv.head(last.seq), run.session.receipt)
        assertEquals(ChainCheckpoint(last.seq, last.hash, srv.head(last.seq)), checkpoints.load(srv.lobbyId))
        assertEquals(1, srv.keyFetches, "the keys are fetched once and kept")
        run.session.stop()

        // A new process resumes with the receipt, and keeps newer ones.
        val resumed = session(srv, checkpoints = checkpoints)
        assertEquals(srv.head(last.seq), resumed.session.receipt)
        srv.othersCommit()
        runCurrent()
        assertEquals(srv.head(srv.events.last().seq), checkpoints.load(srv.lobbyId)!!.head)
        assertFalse(resumed.saw(GameUiState.Error::class))
    }

    @Test
    fun `a head with a bad signature is a tampering warning and is not kept`() = runTest {
        val checkpoints = FileChainCheckpoints(File(dir, "chain"))
        val srv = server()
        val run = session(srv, checkpoints = checkpoints)
        run.session.join()
        runCurrent()
        val good = checkpoints.load(srv.lobbyId)!!.head!!
        srv.tamperHead =
            { h -> h.copy(signature = h.signature.take(10) + (if (h.signature[10] == '0') '1' else '0') + h.signature.drop(11)) }
        srv.othersJoin(1)
        runCurrent()
        val err = run.last<GameUiState.Error>()
        assertTrue(err.fatal)
        assertTrue(err.error is RpsException.BadHead, "got ${err.error}")
        assertEquals("The server's signature on the lobby's history did not verify. Do not trust this server.", err.message)
        assertEquals(good, checkpoints.load(srv.lobbyId)!!.head, "the bad head is never stored")
    }

    @Test
    fun `a head signed with an unknown key makes the session fetch the keys again, then warns`() = runTest {
        val srv = server()
        val run = session(srv)
        run.session.join()
        runCurrent()
        assertEquals(1, srv.keyFetches)
        srv.tamperHead = { h -> h.copy(keyId = "00112233aabbccdd") }
        srv.othersJoin(1)
        runCurrent()
        assertEquals(2, srv.keyFetches, "an unknown key id is looked up again (the server may have rotated its key)")
        val err = run.last<GameUiState.Error>()
        assertTrue(err.fatal && err.error is RpsException.BadHead, "got $err")
    }

    @Test
    fun `a validly signed head that contradicts the verified log is proof of a fork`() = runTest {
        val srv = server()
        val run = session(srv)
        run.session.join()
        runCurrent()
        srv.tamperHead = { h -> srv.signed(h.copy(hash = "ab".repeat(32))) }
        srv.othersJoin(1)
        runCurrent()
        val err = run.last<GameUiState.Error>()
        assertTrue(err.fatal && err.error is RpsException.ChainBroken, "got $err")
    }

    @Test
    fun `a round's result arriving after the next round is shown does not take the screen back`() = runTest {
        val srv = server()
        val run = session(srv)
        run.session.join()
        srv.othersJoin(2)
        runCurrent()
        assertTrue(run.session.commit(0))
        srv.othersCommit()
        runCurrent()
        assertTrue(run.last<GameUiState.Revealing>().sent)
        srv.feedPaused.value = true
        srv.othersReveal()
        srv.resolve(survivors = 2, meSurvives = true, present = 0b111, survivorsMask = 0b001)
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
}
