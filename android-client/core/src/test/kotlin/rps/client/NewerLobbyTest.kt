package rps.client

import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertSame
import org.junit.jupiter.api.Test

class NewerLobbyTest {
    private val config = GameConfig(100, 3, 30_000, 30_000, 30_000, "rpsls", "classic", true, 3, 100)
    private val you = YouStatus(registered = true, inGame = true, committed = false, revealed = false, commitment = null, move = null)

    private fun lobby(
        at: Long,
        round: Int = 1,
        stage: Stage = Stage.MOVES,
        committed: Int = 0,
        you: YouStatus = this.you,
        number: Int = 1,
    ) = LobbyView(
        "l",
        "lobby",
        false,
        config,
        null,
        GameView("g$number", number, stage, round, at + 30_000, 3, 3, committed, 0, 300, "h", you),
        at,
    )

    @Test
    fun `a read that began before this player's commitment was committed keeps the commitment`() {
        val afterCommit = lobby(1_000, committed = 1, you = you.copy(committed = true, commitment = "ab"))
        val stale = lobby(1_001, committed = 0)
        val kept = newerLobby(afterCommit, stale)!!
        assertEquals(true, kept.game!!.you!!.committed)
        assertEquals("ab", kept.game!!.you!!.commitment)
        assertEquals(1, kept.game!!.committed)
        assertEquals(1_001, kept.serverTime)
    }

    @Test
    fun `the commitment's answer, older by the clock than a read that missed it, still counts`() {
        val stale = lobby(1_002, committed = 0)
        val answer = lobby(1_001, committed = 1, you = you.copy(committed = true, commitment = "ab"))
        val kept = newerLobby(stale, answer)!!
        assertEquals(true, kept.game!!.you!!.committed)
        assertEquals(1, kept.game!!.committed)
        assertEquals(1_002, kept.serverTime)
        assertNull(newerLobby(kept, lobby(1_000, committed = 0)), "an older read that adds nothing is dropped")
    }

    @Test
    fun `a read of an earlier stage, round or game is dropped, an older clock too`() {
        val reveal = lobby(1_000, stage = Stage.REVEAL)
        assertNull(newerLobby(reveal, lobby(1_001, stage = Stage.MOVES)))
        assertNull(newerLobby(lobby(1_000, round = 2), lobby(1_001, round = 1, stage = Stage.REVEAL)))
        assertNull(newerLobby(lobby(1_000, number = 2, stage = Stage.REGISTRATION), lobby(1_001, number = 1, stage = Stage.FINISHED)))
        assertNull(newerLobby(reveal, lobby(999, stage = Stage.REVEAL)), "an older read of the same stage that adds nothing")
    }

    @Test
    fun `a read further on is taken as it is`() {
        val next = lobby(1_001, round = 2, committed = 0)
        assertSame(next, newerLobby(lobby(1_000, committed = 2, you = you.copy(committed = true)), next))
        val first = lobby(5)
        assertSame(first, newerLobby(null, first))
    }
}
