package rps.client.e2e

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Assumptions.assumeTrue
import org.junit.jupiter.api.BeforeAll
import org.junit.jupiter.api.Tag
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.io.TempDir
import rps.client.AccountInfo
import rps.client.ActionPayloads
import rps.client.AesGcmSealer
import rps.client.ChainEvent
import rps.client.ChainVerifier
import rps.client.EventData
import rps.client.FileChainCheckpoints
import rps.client.FileLogTrusts
import rps.client.FileVault
import rps.client.GameEnding
import rps.client.GameSession
import rps.client.GameUiState
import rps.client.HeadSignatures
import rps.client.HttpEventFeed
import rps.client.HttpRpsApi
import rps.client.JceKeyStoreKeys
import rps.client.LogAuditor
import rps.client.SignedAction
import rps.client.Stage
import rps.client.TransparencyLog
import rps.client.TrustCheck
import java.io.File
import java.util.UUID

/** The client against a real rpsd with a throwaway database. Run with `-Pe2e`. */
@Tag("e2e")
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class EndToEndTest {
    private lateinit var server: RpsdServer
    private lateinit var admin: HttpRpsApi
    private val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)

    @TempDir
    lateinit var dir: File

    @BeforeAll
    fun startServer() {
        val why = RpsdServer.unavailableReason()
        assumeTrue(why == null) { "end-to-end tests skipped: $why" }
        server = RpsdServer.start()
        admin = HttpRpsApi(server.baseUrl, RpsdServer.ADMIN_TOKEN)
    }

    @AfterAll
    fun stopServer() {
        scope.cancel()
        if (::server.isInitialized) server.close()
    }

    private inner class Player(val name: String, val token: String, val account: AccountInfo, val signed: SignedPlayer) {
        val vaultDir = File(dir, "vault-$name")
        fun vault() = FileVault(vaultDir, AesGcmSealer(JceKeyStoreKeys(File(dir, "keys-$name.p12"), name.toCharArray())::key))
        fun api() = HttpRpsApi(server.baseUrl, token)
        val checkpoints = FileChainCheckpoints(File(dir, "chain-$name"))
        val logTrusts = FileLogTrusts(File(dir, "log-$name"))

        /** The player's device checks the server's transparency log once for all its sessions. */
        val auditor by lazy { LogAuditor(server.baseUrl, api(), logTrusts) }
        fun session(lobbyId: String): GameSession {
            val api = api()
            return GameSession(
                lobbyId, api, HttpEventFeed(api), vault(), scope, checkpoints = checkpoints, logAuditor = auditor,
                signer = signed.signer, signatures = signed.signatures(),
            )
                .also { it.start() }
        }
    }

    private suspend fun player(name: String, credit: Long): Player {
        val signed = SignedPlayer.signUp(server.baseUrl, name)
        val created = signed.created
        admin.adminCredit(created.account.id, credit)
        return Player(name, created.token, created.account, signed)
    }

    private suspend fun GameSession.await(what: String, ms: Long = 20_000, pred: (GameUiState) -> Boolean): GameUiState = try {
        withTimeout(ms) { state.first { s -> (s is GameUiState.Error && s.fatal) || pred(s) } }
    } catch (e: kotlinx.coroutines.TimeoutCancellationException) {
        throw AssertionError("$name timed out waiting for $what; state ${state.value}\n${server.log.readText().takeLast(3000)}")
    }.also { check(!(it is GameUiState.Error && it.fatal)) { "fatal error while waiting for $what: $it" } }

    private val GameSession.name get() = lobbyId

    private suspend fun GameSession.awaitMove(round: Int) = await("round $round") { it is GameUiState.YourMove && it.round == round }

    @Test
    fun `three players play until one wins and the balances match the ledger`() = runBlocking {
        val players = listOf(player("ann", 1000), player("bob", 1000), player("cyd", 1000))
        val lobby = admin.adminCreateLobby("e2e three", betSize = 100, players = 3, timeoutMs = 5000)
        val sessions = players.map { it.session(lobby.id) }
        for (s in sessions) {
            s.await("lobby") { it is GameUiState.NotJoined }
            assertTrue(s.join())
        }
        // Round 1: everyone plays Rock, so everyone replays. Round 2: Rock beats Scissors and Lizard.
        for (s in sessions) s.awaitMove(1)
        for (s in sessions) assertTrue(s.commit(0))
        for (s in sessions) s.awaitMove(2)
        // Round 2 may show before round 1's result event has been applied: wait for the result.
        val r1 = (
            sessions[0].await("round 1's result") { it is GameUiState.YourMove && it.round == 2 && it.lastRound != null }
                as GameUiState.YourMove
            ).lastRound!!
        assertEquals(1, r1.round)
        assertEquals(0b1, r1.present)
        assertEquals(true, r1.youSurvived)
        listOf(0, 2, 3).zip(sessions).forEach { (m, s) -> assertTrue(s.commit(m)) }

        val won = sessions[0].await("the win") { it is GameUiState.Won } as GameUiState.Won
        assertEquals(300, won.amount)
        for (s in sessions.drop(1)) s.await("the loss") { it is GameUiState.Lost }

        val balances = players.map { it.api().me().balance }
        assertEquals(listOf(1200L, 900L, 900L), balances)
        val ledger = admin.adminLedger()
        assertTrue(ledger.ok, "ledger invariants: $ledger")
        assertEquals(0, ledger.entriesSum)
        assertEquals(-ledger.treasury, ledger.playerBalances + ledger.escrows)

        // My games, as the real server tells it: the winner's and a loser's view of the same game.
        val annGames = players[0].api().myGames()
        val annGame = annGames.games.single()
        assertEquals(null, annGames.next)
        assertEquals(listOf(lobby.id, "e2e three"), listOf(annGame.lobbyId, annGame.lobbyName))
        assertEquals(listOf(GameEnding.WON, 100L, 200L, "ann"), listOf(annGame.ending, annGame.stake, annGame.net, annGame.winnerName))
        assertTrue(annGame.endedAtMs != null && annGame.endedAtMs!! >= annGame.registeredAtMs, "$annGame")
        val bobGame = players[1].api().myGames().games.single()
        assertEquals(
            listOf(GameEnding.ELIMINATED, 2, -100L, "ann"),
            listOf(bobGame.ending, bobGame.eliminatedRound, bobGame.net, bobGame.winnerName),
        )

        // The whole log verifies from the first event, as the sessions checked it live, and every
        // event the real server wrote reads as its type.
        val log = mutableListOf<ChainEvent>()
        val v = ChainVerifier()
        HttpEventFeed(HttpRpsApi(server.baseUrl)).follow(lobby.id, 0).first { item ->
            if (item is ChainEvent) {
                v.accept(item)
                log += item
            }
            ((item as? ChainEvent)?.typed as? EventData.GameOpened)?.number == 2
        }
        assertTrue(v.lastSeq >= sessions[0].verifiedSeq)
        assertEquals(emptyList<ChainEvent>(), log.filter { it.typed is EventData.Unknown })
        assertEquals(
            setOf(
                "lobby_created", "game_opened", "player_registered", "round_started", "move_committed", "moves_closed",
                "move_revealed", "round_resolved", "game_finished",
            ),
            log.map { it.type }.toSet(),
        )
        assertEquals(
            EventData.GameFinished(players[0].account.id, 300, 2),
            log.map {
                it.typed
            }.filterIsInstance<EventData.GameFinished>().single(),
        )

        // Each session kept the newest head it saw, signed by the server's key, with its checkpoint.
        val keys = players[0].api().signingKeys()
        val key = rps.client.Crypto.unhex(keys.first().publicKey)
        for ((p, s) in players.zip(sessions)) {
            val receipt = s.receipt ?: throw AssertionError("${p.name} kept no signed head")
            assertEquals(keys.first().keyId, receipt.keyId)
            assertEquals(receipt, p.checkpoints.load(lobby.id)!!.head)
            assertTrue(HeadSignatures.verify(key, receipt), "a real head from rpsd verifies")
            assertEquals(log.single { it.seq == receipt.seq }.hash, receipt.hash)
        }
        val receipt = sessions[0].receipt!!
        val sig = rps.client.Crypto.unhex(receipt.signature)
        sig[10] = (sig[10].toInt() xor 1).toByte()
        assertFalse(HeadSignatures.verify(key, receipt.copy(signature = rps.client.Crypto.hex(sig))), "a flipped signature bit")
        assertFalse(HeadSignatures.verify(key, receipt.copy(seq = receipt.seq - 1)), "another seq")
        assertFalse(HeadSignatures.verify(key, receipt.copy(hash = log.first().hash)), "another hash")

        // Each device proved the game's events in the transparency log (the log runs about a second
        // behind play): through the chain, the proof of the game's last event covers all before it.
        val logInfo = admin.logInfo()
        val finished = log.single { it.typed is EventData.GameFinished }.seq
        for ((p, s) in players.zip(sessions)) {
            val inLog = try {
                withTimeout(30_000) { s.trust.first { t -> t.checks.any { it is TrustCheck.InLog && it.seq >= finished } } }
            } catch (e: kotlinx.coroutines.TimeoutCancellationException) {
                throw AssertionError(
                    "${p.name}'s game was never proven in the log: ${s.trust.value}\n${server.log.readText().takeLast(3000)}",
                )
            }.checks.filterIsInstance<TrustCheck.InLog>().single()
            assertEquals(logInfo.keys.single { it.validUntilMs == null }.keyId, inLog.keyId)
            assertTrue(inLog.leafIndex < inLog.treeSize, "$inLog")
            val trust = p.logTrusts.load(server.baseUrl)!!
            assertEquals(logInfo.origin, trust.origin)
            val kept = TransparencyLog.parse(trust.checkpoint!!)
            assertTrue(kept.size >= inLog.treeSize && TransparencyLog.signedBy(kept, trust.keys), "${p.name} kept ${trust.checkpoint}")
            // The event keeps its leaf as the log grows.
            assertEquals(inLog.leafIndex, admin.logInclusion(lobby.id, inLog.seq).leafIndex)
        }
        assertFalse(sessions.any { s -> s.state.value is GameUiState.Error }, "${sessions.map { it.state.value }}")
        sessions.forEach { it.stop() }
    }

    @Test
    fun `a session killed after committing is replaced by one that reveals in time`() = runBlocking {
        val ann = player("ann2", 500)
        val bob = player("bob2", 500)
        val lobby = admin.adminCreateLobby("e2e restart", betSize = 50, players = 2, timeoutMs = 5000)
        val a1 = ann.session(lobby.id)
        val b = bob.session(lobby.id)
        a1.await("lobby") { it is GameUiState.NotJoined }
        assertTrue(a1.join())
        b.await("lobby") { it is GameUiState.NotJoined }
        assertTrue(b.join())
        a1.awaitMove(1)
        b.awaitMove(1)

        assertTrue(a1.commit(1)) // Paper
        a1.stop() // killed: the process is gone, only the vault's files remain
        assertTrue(ann.vault().load(lobby.id) != null)

        assertTrue(b.commit(0)) // Rock; everyone has committed, so the reveal stage opens now
        val snapshot = ann.api().getLobby(lobby.id)
        assertEquals(Stage.REVEAL, snapshot.game!!.stage)
        assertEquals(false, snapshot.game!!.you!!.revealed)

        val a2 = ann.session(lobby.id) // a new app process with the same vault
        val won = a2.await("the win after restart") { it is GameUiState.Won } as GameUiState.Won
        assertEquals(100, won.amount)
        // The win may be seen on the event stream just before the reveal's own response clears the vault.
        withTimeout(5_000) { while (ann.vault().load(lobby.id) != null) kotlinx.coroutines.delay(20) }
        assertEquals(550, ann.api().me().balance)
        assertEquals(450, bob.api().me().balance)
        b.await("the loss") { it is GameUiState.Lost }
        assertTrue(admin.adminLedger().ok)
        a2.stop()
        b.stop()
    }

    @Test
    fun `refusals from the real server are typed`() = runBlocking {
        val poor = player("poor", 1)
        val lobby = admin.adminCreateLobby("e2e poor", betSize = 100, players = 2, timeoutMs = 5000)
        val s = poor.session(lobby.id)
        s.await("lobby") { it is GameUiState.NotJoined }
        assertEquals(false, s.join())
        val e = s.state.value as GameUiState.Error
        assertEquals("Your balance is too low for this bet.", e.message)
        s.stop()
        val idem = UUID.randomUUID().toString()
        val a = poor.api()
        // Unsigned, from an account with a key: refused before anything else, with a code of its own.
        val unsigned = runCatching { a.register(lobby.id, idem) }.exceptionOrNull()
        assertTrue(unsigned is rps.client.RpsException.Problem && unsigned.code == rps.client.ErrorCode.SIGNATURE_REQUIRED, "$unsigned")
        val game = a.getLobby(lobby.id).game!!.id
        val auth = poor.signed.signer.sign(SignedAction.REGISTER, ActionPayloads.register(100), idem, lobby.id, game)
        val r = runCatching { a.register(lobby.id, idem, auth) }.exceptionOrNull()
        assertTrue(r is rps.client.RpsException.Problem && r.code == rps.client.ErrorCode.INSUFFICIENT_FUNDS, "$r")
    }
}
