package rps.client

import kotlinx.coroutines.CoroutineDispatcher
import kotlinx.coroutines.withContext
import java.security.SecureRandom
import java.util.UUID

/** What a lobby's state asks of the commit/reveal protocol, given the move saved in the vault. */
sealed interface ProtocolStep {
    data object Nothing : ProtocolStep

    /** The saved move belongs to a past round or game, or is already revealed: forget it. */
    data class Forget(val entry: VaultEntry) : ProtocolStep

    /** The move was saved but the server has no commitment yet (a crash between the two): send it again, same key. */
    data class ResumeCommit(val entry: VaultEntry) : ProtocolStep

    /** The reveal stage is open and this player has not revealed. */
    data class Reveal(val entry: VaultEntry) : ProtocolStep

    /** The reveal stage is open but the saved move is missing or is not the one committed. */
    data class VaultLost(val round: Int) : ProtocolStep

    companion object {
        /** The step [g] calls for, when this player is in it; pure. */
        fun of(g: GameView, saved: VaultEntry?): ProtocolStep {
            val you = g.you ?: return Nothing
            if (saved != null && (saved.gameId != g.id || saved.round < g.round || (saved.round == g.round && you.revealed))) {
                return Forget(saved)
            }
            return when (g.stage) {
                Stage.MOVES -> if (you.inGame && !you.committed && saved != null &&
                    saved.isFor(g.id, g.round)
                ) {
                    ResumeCommit(saved)
                } else {
                    Nothing
                }
                Stage.REVEAL -> when {
                    !you.committed || you.revealed -> Nothing
                    saved == null || !saved.isFor(g.id, g.round) || (you.commitment != null && you.commitment != saved.commitment) ->
                        VaultLost(g.round)
                    else -> Reveal(saved)
                }
                else -> Nothing
            }
        }
    }
}

/**
 * The commit/reveal protocol of one player in one lobby: a move is written to the [vault] with a
 * fresh random password and its Idempotency-Keys *before* its commitment is sent, so a crash at
 * any point can be resumed with the same keys; the reveal comes from the vault, which is cleared
 * once the server has it. Every request is retried by [retry] with its key.
 */
class MoveProtocol(
    private val lobbyId: String,
    private val api: PlayerApi,
    private val vault: Vault,
    private val random: SecureRandom,
    private val retry: RetryPolicy,
    private val io: CoroutineDispatcher,
    /** Signs the commit and the reveal with the player's key; null: sent unsigned (an account without a key). */
    private val signer: ActionSigner? = null,
) {
    suspend fun saved(): VaultEntry? = withContext(io) { vault.load(lobbyId) }

    /** Chooses [move] for [g]'s current round and writes it durably; returns only once it is stored. */
    suspend fun choose(g: GameView, move: Int): VaultEntry {
        val e = VaultEntry(
            lobbyId,
            g.id,
            g.round,
            move,
            Commitments.newPassword(random),
            UUID.randomUUID().toString(),
            UUID.randomUUID().toString(),
        )
        withContext(io) { vault.save(e) }
        return e
    }

    /** Sends [e]'s commitment, signed for its game and round (the signature binds both, so it is never stale). */
    suspend fun commit(e: VaultEntry): LobbyView {
        val auth = signer?.sign(SignedAction.COMMIT, ActionPayloads.commit(e.commitment), e.commitKey, lobbyId, e.gameId, e.round)
        return retry.run { api.commit(lobbyId, e.commitment, e.commitKey, auth) }
    }

    suspend fun reveal(e: VaultEntry): LobbyView {
        val auth = signer?.sign(SignedAction.REVEAL, ActionPayloads.reveal(e.reveal), e.revealKey, lobbyId, e.gameId, e.round)
        return retry.run { api.reveal(lobbyId, e.reveal, e.revealKey, auth) }
    }

    /** Forgets [e], unless the vault already holds a newer move. */
    suspend fun forget(e: VaultEntry) = withContext(io) { if (vault.load(lobbyId) == e) vault.clear(lobbyId) }
}
