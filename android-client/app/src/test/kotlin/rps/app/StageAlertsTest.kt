package rps.app

import org.junit.Assert.assertEquals
import org.junit.Assert.assertNull
import org.junit.Test
import rps.client.Deadline
import rps.client.GameUiState
import rps.client.RpsException
import java.io.IOException

class StageAlertsTest {
    private fun yourMove(round: Int, deadlineMs: Long?) = GameUiState.YourMove(round, deadlineMs?.let { Deadline(it, it) }, 0, 3, 300, null)

    @Test
    fun `a round is announced once, then its deadline once, 10 s before`() {
        val a = StageAlerts()
        val s = yourMove(1, 30_000)
        assertEquals(StageAlert.MoveOpened(1, 30), a.due(s, 0))
        assertNull(a.due(s, 1_000))
        assertEquals(20_000L, a.nextCheckAt(s))
        assertNull(a.due(s, 19_999))
        assertEquals(StageAlert.DeadlineNear(1, 10), a.due(s, 20_000))
        assertNull(a.due(s, 25_000))
        assertNull(a.nextCheckAt(s))
        assertEquals(StageAlert.MoveOpened(2, 30), a.due(yourMove(2, 60_000), 30_000))
    }

    @Test
    fun `a round that opens with less than 10 s left is one alert, none once it is over`() {
        val a = StageAlerts()
        assertEquals(StageAlert.DeadlineNear(1, 5), a.due(yourMove(1, 5_000), 0))
        assertNull(a.due(yourMove(1, 5_000), 1_000))
        assertNull(StageAlerts().due(yourMove(1, 5_000), 5_000))
        val noDeadline = yourMove(1, null)
        assertEquals(StageAlert.MoveOpened(1, null), StageAlerts().due(noDeadline, 0))
        assertNull(StageAlerts().nextCheckAt(noDeadline))
    }

    @Test
    fun `a refusal shown over the round keeps it, other states need nothing`() {
        val refusal = GameUiState.Error(RpsException.Network(IOException("reset")), false, yourMove(1, 30_000))
        assertEquals(StageAlert.MoveOpened(1, 30), StageAlerts().due(refusal, 0))
        val waiting = GameUiState.WaitingForOthers(1, Deadline(30_000, 30_000), 1, 3, 300, 0)
        assertNull(StageAlerts().due(waiting, 25_000))
    }

    @Test
    fun `in a running game from registration until the player is out`() {
        assertEquals(true, StageAlerts.inRunningGame(GameUiState.WaitingForPlayers(1, 3, 100, null)))
        assertEquals(true, StageAlerts.inRunningGame(yourMove(2, null)))
        assertEquals(false, StageAlerts.inRunningGame(GameUiState.Connecting))
        assertEquals(false, StageAlerts.inRunningGame(GameUiState.Won(300, 2, null)))
        assertEquals(false, StageAlerts.inRunningGame(GameUiState.Lost(1, null)))
        assertEquals(false, StageAlerts.inRunningGame(GameUiState.Left(100)))
    }
}
