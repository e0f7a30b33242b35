package rps.client.e2e

import kotlinx.coroutines.CoroutineScope
import rps.client.ActionAuth
import rps.client.ActionSigner
import rps.client.GameSession
import rps.client.HttpEventFeed
import rps.client.HttpRpsApi
import rps.client.MemoryVault
import rps.client.NewAccount
import rps.client.PlayerSignatures
import rps.client.SoftwarePlayerKey
import rps.client.roundMoves

/**
 * A player of the end-to-end tests as a device makes one: an Ed25519 key made here, the account
 * born with it (`sign_up`), every action signed ([signer]) and every player's signature checked
 * ([signatures]), against a real rpsd (which requires keys by default).
 */
class SignedPlayer(baseUrl: String, val created: NewAccount, val key: SoftwarePlayerKey) {
    val api = HttpRpsApi(baseUrl, created.token)
    private val origin = suspend { api.logInfo().origin }
    val signer = ActionSigner(key, created.account.id, origin)

    /** A checker of the players' signatures in a lobby's log, for one session. */
    fun signatures() = PlayerSignatures(api, origin, { api.getGame(it).config }) { game, round -> api.roundMoves(game, round) }

    /** A started session in [lobbyId] that signs and checks, with a vault in memory. */
    fun session(lobbyId: String, scope: CoroutineScope): GameSession =
        GameSession(lobbyId, api, HttpEventFeed(api), MemoryVault(), scope, signer = signer, signatures = signatures()).also { it.start() }

    companion object {
        suspend fun signUp(baseUrl: String, name: String): SignedPlayer {
            val anonymous = HttpRpsApi(baseUrl)
            val key = SoftwarePlayerKey.generate()
            val auth = ActionAuth.signUp(key, name, anonymous.logInfo().origin, System.currentTimeMillis())
            return SignedPlayer(baseUrl, anonymous.createAccount(name, key.publicKeyHex, auth), key)
        }
    }
}
