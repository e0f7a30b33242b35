package rps.client

import kotlinx.coroutines.test.runTest
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import org.junit.jupiter.api.io.TempDir
import java.io.File
import java.util.Base64

/**
 * The log checks against the transparency log's answers recorded from a real rpsd (`logged`): a
 * lobby's heads not logged yet, then logged in three growing checkpoints. Moving the recording
 * back is a rollback; a log key of the test's own ([RecordedServer.logForger]) signs the split
 * views a real server would never sign.
 */
class LogAuditorTest {
    @TempDir
    lateinit var dir: File

    private fun trusts() = FileLogTrusts(File(dir, "log"))

    private fun auditor(srv: RecordedServer, trusts: LogTrusts? = trusts(), policy: WitnessPolicy = WitnessPolicy()) =
        LogAuditor("http://rpsd.test/", srv, trusts, policy)

    /** Proves the head of the moment [name]. */
    private suspend fun LogAuditor.proveAt(srv: RecordedServer, name: String): LogOutcome {
        srv.to(name)
        return prove(srv.lobbyId, srv.head().seq, srv.head().hash)
    }

    private suspend fun misbehavior(kind: RpsException.LogMisbehavior.Kind, step: suspend () -> Unit): RpsException.LogMisbehavior {
        val e = try {
            step()
            null
        } catch (e: RpsException.LogMisbehavior) {
            e
        } ?: throw AssertionError("no misbehavior detected, expected $kind")
        assertEquals(kind, e.kind, e.evidence)
        assertTrue(e.evidence.startsWith("SECURITY ERROR\ntransparency log: misbehavior detected!\n"), e.evidence)
        return e
    }

    private val keyId get() = Recording.load("logged").log!!.keys.single().keyId

    @Test
    fun `a head is proven once the log holds it, and each newer checkpoint is consistent with the one kept`() = runTest {
        val srv = RecordedServer("logged")
        val a = auditor(srv)
        assertEquals(LogOutcome.NotLogged(2), a.proveAt(srv, "open"))
        assertNull(a.trusted!!.checkpoint, "nothing verified yet, nothing kept")

        assertEquals(LogOutcome.Included(2, 70, 75, keyId, emptyList(), null), a.proveAt(srv, "open-logged"))
        assertEquals(srv.moment.inclusion!!.checkpoint, a.trusted!!.checkpoint)
        assertEquals(LogOutcome.NotLogged(3), a.proveAt(srv, "joined"))
        assertEquals(LogOutcome.Included(3, 75, 76, keyId, emptyList(), 75), a.proveAt(srv, "joined-logged"))
        assertEquals(listOf("info", "inclusion 2", "inclusion 2", "inclusion 3", "inclusion 3", "consistency 75 76"), srv.logCalls)

        // A new process reads what the last one kept, and goes on from there.
        val again = auditor(srv)
        assertEquals(LogOutcome.Included(6, 78, 79, keyId, emptyList(), 76), again.proveAt(srv, "started-logged"))
        assertEquals(srv.moment.inclusion!!.checkpoint, trusts().load("http://rpsd.test")!!.checkpoint)
        assertEquals(listOf(srv.recording.log!!.keys.single().verifierKey), trusts().load("http://rpsd.test")!!.keys)
    }

    @Test
    fun `a log that went back to an older checkpoint is a rollback`() = runTest {
        val srv = RecordedServer("logged")
        val a = auditor(srv)
        a.proveAt(srv, "joined-logged")
        val kept = a.trusted!!.checkpoint!!
        val e = misbehavior(RpsException.LogMisbehavior.Kind.ROLLED_BACK) { a.proveAt(srv, "open-logged") }
        assertEquals(kept, e.kept)
        assertEquals(srv.moment.inclusion!!.checkpoint, e.shown)
        assertEquals(kept, a.trusted!!.checkpoint, "the kept checkpoint stays")
        // So does a new process of the same device.
        misbehavior(RpsException.LogMisbehavior.Kind.ROLLED_BACK) { auditor(srv).proveAt(srv, "open-logged") }
    }

    /** The server signs with [RecordedServer.logForger] from the start, and this device kept [kept] of it (with [root]). */
    private fun splitView(srv: RecordedServer, size: Long, root: ByteArray): LogTrusts {
        srv.logKeys = listOf(LogKeyInfo("forger", srv.logForger.verifierKey, 0, null))
        srv.logSigner = srv.logForger
        val text = "${srv.recording.log!!.origin}\n$size\n${Base64.getEncoder().encodeToString(root)}\n"
        val kept = text + "\n" + srv.logForger.sign(text) + "\n"
        return trusts().also {
            it.save("http://rpsd.test", LogTrust(srv.recording.log!!.origin, listOf(srv.logForger.verifierKey), checkpoint = kept))
        }
    }

    @Test
    fun `a checkpoint the kept one is not a prefix of is a split view, with the failing proof as evidence`() = runTest {
        val srv = RecordedServer("logged")
        val other = TransparencyLog.parse(srv.recording.moments[srv.recording.moment("open-logged")].inclusion!!.checkpoint).root
        other[0] = (other[0].toInt() xor 1).toByte()
        val a = auditor(srv, splitView(srv, 75, other))
        val e = misbehavior(RpsException.LogMisbehavior.Kind.FORKED) { a.proveAt(srv, "joined-logged") }
        assertTrue(e.reason.contains("consistency proof from 75 to 76 leaves fails"), e.reason)
        assertEquals(srv.recording.consistency.first { it.from == 75L && it.to == 76L }.proof, e.proof)
        assertTrue(e.evidence.contains("kept checkpoint:\n\t${srv.recording.log!!.origin}\n\t75\n"), e.evidence)

        // Another tree of the same size is a fork without a proof to ask for.
        val b = auditor(srv, splitView(srv, 76, other))
        val same = misbehavior(RpsException.LogMisbehavior.Kind.FORKED) { b.proveAt(srv, "joined-logged") }
        assertTrue(same.reason.contains("two trees of 76 leaves"), same.reason)
    }

    @Test
    fun `a consistent checkpoint under the same key passes where the split view failed`() = runTest {
        // The control of the test above: the same forged key, the true root kept.
        val srv = RecordedServer("logged")
        val root = TransparencyLog.parse(srv.recording.moments[srv.recording.moment("open-logged")].inclusion!!.checkpoint).root
        val a = auditor(srv, splitView(srv, 75, root))
        assertEquals(LogOutcome.Included(3, 75, 76, "forger", emptyList(), 75), a.proveAt(srv, "joined-logged"))
    }

    @Test
    fun `an inclusion proof that fails, or a log holding another hash for the event, is misbehavior`() = runTest {
        val srv = RecordedServer("logged")
        val a = auditor(srv)
        a.proveAt(srv, "open-logged")
        // One hash of the proof replaced by another.
        srv.tamperInclusion = { p -> p.copy(proof = p.proof.mapIndexed { i, h -> if (i == p.proof.size - 1) p.proof[0] else h }) }
        val e = misbehavior(RpsException.LogMisbehavior.Kind.BAD_PROOF) { a.proveAt(srv, "joined-logged") }
        val served = srv.moment.inclusion!!.proof
        assertEquals(served.dropLast(1) + served[0], e.proof)
        srv.tamperInclusion = { p -> p.copy(leafIndex = p.leafIndex - 1) }
        misbehavior(RpsException.LogMisbehavior.Kind.BAD_PROOF) { a.proveAt(srv, "joined-logged") }

        // The log proves another hash for event 3 than the history this device verified.
        srv.tamperInclusion = null
        val forked = misbehavior(RpsException.LogMisbehavior.Kind.FORKED) { a.prove(srv.lobbyId, 3, "ab".repeat(32)) }
        assertTrue(forked.reason.contains("the log holds hash ${srv.head().hash} for event 3"), forked.reason)
        assertEquals(75L, TransparencyLog.parse(a.trusted!!.checkpoint!!).size, "nothing kept from a failed proof")
    }

    @Test
    fun `the log key is pinned at first contact, and a checkpoint signed by another key fails, even one the server lists`() = runTest {
        val srv = RecordedServer("logged")
        val a = auditor(srv)
        a.proveAt(srv, "open-logged")
        srv.logKeys = srv.logKeys + LogKeyInfo("forger", srv.logForger.verifierKey, 1, null)
        srv.logSigner = srv.logForger
        val e = misbehavior(RpsException.LogMisbehavior.Kind.UNTRUSTED_KEY) { a.proveAt(srv, "joined-logged") }
        assertTrue(e.reason.contains("this device trusts"), e.reason)
        // A new process of the same device and account, and one of the same device on another server, differ.
        misbehavior(RpsException.LogMisbehavior.Kind.UNTRUSTED_KEY) { auditor(srv).proveAt(srv, "joined-logged") }
        val elsewhere = LogAuditor("http://other.test", srv, trusts())
        assertEquals("forger", (elsewhere.proveAt(srv, "joined-logged") as LogOutcome.Included).keyId)
    }

    @Test
    fun `the witnesses named at first contact must cosign, one of them by default`() = runTest {
        val srv = RecordedServer("logged")
        val w1 = NoteSigner("witness.test/w1", NoteSigner.COSIGNATURE, 11)
        val w2 = NoteSigner("witness.test/w2", NoteSigner.COSIGNATURE, 12)
        srv.witnesses += listOf(w1, w2)
        val a = auditor(srv)
        assertEquals(listOf(w1.name, w2.name), (a.proveAt(srv, "open-logged") as LogOutcome.Included).cosigners)
        srv.witnessesDown += w1.name
        assertEquals(listOf(w2.name), (a.proveAt(srv, "joined-logged") as LogOutcome.Included).cosigners)

        // No cosignature: not proven, not kept, and no alarm (witnesses lag or are down): asked again later.
        srv.witnessesDown += w2.name
        assertEquals(LogOutcome.NotCosigned(6, 79, emptyList(), 1), a.proveAt(srv, "started-logged"))
        assertEquals(76L, TransparencyLog.parse(a.trusted!!.checkpoint!!).size)
        // A witness the server names later counts in addition to the pinned ones, never instead of them.
        val w3 = NoteSigner("witness.test/w3", NoteSigner.COSIGNATURE, 13)
        srv.witnesses += w3
        assertEquals(LogOutcome.NotCosigned(6, 79, emptyList(), 1), a.proveAt(srv, "started-logged"))
        srv.witnessesDown.clear()
        assertEquals(listOf(w1.name, w2.name, w3.name), (a.proveAt(srv, "started-logged") as LogOutcome.Included).cosigners)
        assertEquals(listOf(w1.verifierKey, w2.verifierKey), a.trusted!!.witnesses, "the pinned witnesses stay as they were")

        // A player's own policy: both of two witnesses of their choosing.
        val s = RecordedServer("logged").also { it.witnesses += w1 }
        val strict = auditor(s, null, WitnessPolicy(listOf(w1.verifierKey, w2.verifierKey), 2))
        assertEquals(LogOutcome.NotCosigned(2, 75, listOf(w1.name), 2), strict.proveAt(s, "open-logged"))
        assertThrows<IllegalArgumentException> { WitnessPolicy(listOf(w1.verifierKey), 2) }
    }

    @Test
    fun `a server without a log is not checked, and one that dropped its log after this device kept a checkpoint is pending`() = runTest {
        val srv = RecordedServer("win")
        assertEquals(LogOutcome.NoLog, LogAuditor("http://rpsd.test", srv, trusts()).prove(srv.lobbyId, 1, "00"))
        val kept = RecordedServer("logged")
        auditor(kept).proveAt(kept, "open-logged")
        assertEquals(LogOutcome.NotLogged(1), auditor(srv).prove(srv.lobbyId, 1, "00"))
    }

    @Test
    fun `a device pinned to a server without witnesses requires the first ones it names, and only adds later ones`() = runTest {
        val srv = RecordedServer("logged")
        val a = auditor(srv)
        assertEquals(emptyList<String>(), (a.proveAt(srv, "open-logged") as LogOutcome.Included).cosigners)
        // The operator adds a witness: its cosignature shows the device there is one to ask for.
        val w1 = NoteSigner("witness.test/w1", NoteSigner.COSIGNATURE, 11)
        srv.witnesses += w1
        assertEquals(listOf(w1.name), (a.proveAt(srv, "joined-logged") as LogOutcome.Included).cosigners)
        assertEquals(listOf(w1.verifierKey), trusts().load("http://rpsd.test")!!.witnesses, "pinned, as at a first contact")
        // From then on a checkpoint it did not cosign is not enough, in this process or the next,
        // and a witness the operator names instead of it does not stand in for it.
        srv.witnessesDown += w1.name
        assertEquals(LogOutcome.NotCosigned(6, 79, emptyList(), 1), a.proveAt(srv, "started-logged"))
        srv.witnesses += NoteSigner("witness.test/own", NoteSigner.COSIGNATURE, 14)
        srv.witnesses -= w1
        assertEquals(LogOutcome.NotCosigned(6, 79, emptyList(), 1), auditor(srv).proveAt(srv, "started-logged"))
    }

    /** The server's log key is [old] from the start (a key this test can sign with), with witness [w]. */
    private fun rotatable(srv: RecordedServer, old: NoteSigner, w: NoteSigner) {
        srv.logKeys = listOf(LogKeyInfo("old", old.verifierKey, 1, null))
        srv.logSigner = old
        srv.witnesses += w
    }

    /** The hand-over of the log from [from] to [to] at the tree of the moment [at], signed by [signer]. */
    private fun rotation(
        srv: RecordedServer,
        at: String,
        from: NoteSigner,
        to: NoteSigner,
        signer: NoteSigner = from,
    ): String {
        val c = TransparencyLog.parse(srv.recording.moments[srv.recording.moment(at)].inclusion!!.checkpoint)
        val text = "${c.origin} key rotation\n${c.size}\n${Base64.getEncoder().encodeToString(
            c.root,
        )}\n${from.verifierKey}\n${to.verifierKey}\n"
        return text + "\n" + signer.sign(text) + "\n"
    }

    /** The server rotated to [to] with [statement]: it lists both keys and signs with [to]. */
    private fun rotated(srv: RecordedServer, old: NoteSigner, to: NoteSigner, statement: String) {
        srv.logKeys = listOf(LogKeyInfo("new", to.verifierKey, 2, null, statement), LogKeyInfo("old", old.verifierKey, 1, 2))
        srv.logSigner = to
    }

    @Test
    fun `a pinned device follows the log's key rotation once its witnesses cosign under the new key`() = runTest {
        val srv = RecordedServer("logged")
        val old = srv.logForger
        val new = NoteSigner(srv.recording.log!!.origin, NoteSigner.ED25519, 8)
        val w1 = NoteSigner("witness.test/w1", NoteSigner.COSIGNATURE, 11)
        rotatable(srv, old, w1)
        val a = auditor(srv)
        assertEquals(LogOutcome.Included(2, 70, 75, "old", listOf(w1.name), null), a.proveAt(srv, "open-logged"))

        rotated(srv, old, new, rotation(srv, "open-logged", old, new))
        // The witness does not know the new key yet: not cosigned, asked again quietly, nothing trusted yet.
        srv.witnessesDown += w1.name
        assertEquals(LogOutcome.NotCosigned(3, 76, emptyList(), 1), a.proveAt(srv, "joined-logged"))
        assertEquals(listOf(old.verifierKey), a.trusted!!.keys)
        srv.witnessesDown.clear()
        assertEquals(LogOutcome.Included(3, 75, 76, "new", listOf(w1.name), 75), a.proveAt(srv, "joined-logged"))
        assertEquals(listOf(old.verifierKey, new.verifierKey), trusts().load("http://rpsd.test")!!.keys)

        // A new process goes on under the new key; a replica that still signs with the old one passes too.
        assertEquals(LogOutcome.Included(6, 78, 79, "new", listOf(w1.name), 76), auditor(srv).proveAt(srv, "started-logged"))
        srv.logSigner = old
        assertEquals("old", (a.proveAt(srv, "started-logged") as LogOutcome.Included).keyId)
    }

    @Test
    fun `a new key no chain of rotations from the pinned one leads to is still misbehavior`() = runTest {
        val srv = RecordedServer("logged")
        val old = srv.logForger
        val new = NoteSigner(srv.recording.log!!.origin, NoteSigner.ED25519, 8)
        val intruder = NoteSigner(srv.recording.log!!.origin, NoteSigner.ED25519, 9)
        val w1 = NoteSigner("witness.test/w1", NoteSigner.COSIGNATURE, 11)
        rotatable(srv, old, w1)
        auditor(srv).proveAt(srv, "open-logged")
        for (statement in listOf(
            rotation(srv, "open-logged", old, new, signer = new), // the new key vouching for itself
            rotation(srv, "open-logged", intruder, new, signer = intruder), // a key this device never trusted
            rotation(srv, "open-logged", old, intruder), // a hand-over to another key than the one signing
            rotation(srv, "open-logged", old, new).replaceFirst("\n75\n", "\n74\n"), // changed after signing
        )) {
            rotated(srv, old, new, statement)
            val e = misbehavior(RpsException.LogMisbehavior.Kind.UNTRUSTED_KEY) { auditor(srv).proveAt(srv, "joined-logged") }
            assertTrue(e.reason.contains("no chain of key rotations"), e.reason)
            assertEquals(listOf(old.verifierKey), trusts().load("http://rpsd.test")!!.keys)
        }
        // The pinned key handed the log over twice (a thief of it signing a second hand-over): neither is followed.
        val toNew = rotation(srv, "open-logged", old, new)
        val toIntruder = rotation(srv, "open-logged", old, intruder)
        srv.logKeys = listOf(
            LogKeyInfo("intruder", intruder.verifierKey, 3, null, toIntruder),
            LogKeyInfo("new", new.verifierKey, 2, 3, toNew),
            LogKeyInfo("old", old.verifierKey, 1, 2),
        )
        val e = misbehavior(RpsException.LogMisbehavior.Kind.UNTRUSTED_KEY) { auditor(srv).proveAt(srv, "joined-logged") }
        assertTrue(e.reason.contains("handed the log over twice"), e.reason)
        assertEquals(listOf(toIntruder, toNew), e.proof)
        assertEquals(listOf(old.verifierKey), trusts().load("http://rpsd.test")!!.keys)
    }
}
