package rps.app

import android.app.Application
import android.content.Context
import android.util.Base64
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.MainScope
import rps.client.AesGcmSealer
import rps.client.ChainCheckpoints
import rps.client.Clock
import rps.client.DirectoryApi
import rps.client.EventFeed
import rps.client.FileChainCheckpoints
import rps.client.FileVault
import rps.client.GameSession
import rps.client.HttpEventFeed
import rps.client.HttpRpsApi
import rps.client.PlayerApi
import rps.client.Vault
import java.io.File
import java.security.GeneralSecurityException
import java.security.SecureRandom
import javax.crypto.SecretKey

/** What the screens talk to: one server, as one account. */
class Backend(val player: PlayerApi, val directory: DirectoryApi, val feed: EventFeed)

/**
 * App-wide state. The server URL lives in private preferences; the account's token too, sealed
 * like the vault's passwords with a key that never leaves the Android Keystore. Game sessions live
 * here rather than in a screen, so a committed move is revealed even when its screen is closed or
 * rotated; after the process was killed, [onCreate] resumes the lobbies the vault still has a
 * move for. Tests replace [connect], [clock] and [secretKey].
 */
open class RpsApp : Application() {
    private val prefs by lazy { getSharedPreferences("rps", Context.MODE_PRIVATE) }
    private val sealer by lazy { AesGcmSealer(::secretKey) }
    private val sessions = HashMap<String, GameSession>()

    /** Sessions outlive screens: this scope is never cancelled. */
    val scope: CoroutineScope = MainScope()

    open val clock: Clock get() = Clock.SYSTEM

    /** Where the passwords of commitments come from. */
    open val random: SecureRandom get() = SecureRandom()

    open fun connect(serverUrl: String, token: String?): Backend = HttpRpsApi(serverUrl, token).let { Backend(it, it, HttpEventFeed(it)) }

    protected open fun secretKey(): SecretKey = AndroidKeystoreKeys.key()

    var serverUrl: String
        get() = prefs.getString(PREF_SERVER, DEFAULT_SERVER) ?: DEFAULT_SERVER
        set(v) {
            if (v.trim() != serverUrl) forgetSessions()
            prefs.edit().putString(PREF_SERVER, v.trim()).apply()
        }

    /** The bearer token, or null when there is none or it can no longer be opened (a reset Keystore). */
    var token: String?
        get() = prefs.getString(PREF_TOKEN, null)?.let { sealed ->
            try {
                String(sealer.open(Base64.decode(sealed, Base64.NO_WRAP)), Charsets.UTF_8)
            } catch (e: GeneralSecurityException) {
                null
            } catch (e: IllegalArgumentException) {
                null
            }
        }
        set(v) {
            forgetSessions()
            val sealed = v?.let { Base64.encodeToString(sealer.seal(it.toByteArray(Charsets.UTF_8)), Base64.NO_WRAP) }
            prefs.edit().putString(PREF_TOKEN, sealed).commit()
        }

    fun backend(): Backend = connect(serverUrl, token)

    /** Passwords between commit and reveal: private storage, sealed with the Keystore key. */
    val vault: Vault by lazy { FileVault(File(filesDir, "vault"), sealer) }

    /** The last verified event of each lobby's log. */
    val checkpoints: ChainCheckpoints by lazy { FileChainCheckpoints(File(filesDir, "chain")) }

    /** The lobby's running session; a new one once the previous game is over for this player. */
    fun session(lobbyId: String): GameSession {
        sessions[lobbyId]?.takeIf { !it.state.value.isFinal }?.let { return it }
        sessions.remove(lobbyId)?.stop()
        val b = backend()
        return GameSession(lobbyId, b.player, b.feed, vault, scope, clock = clock, random = random, checkpoints = checkpoints)
            .also {
                sessions[lobbyId] = it
                it.start()
            }
    }

    /** Drops every session (a new account or server; in tests, what a killed process loses). */
    internal fun forgetSessions() {
        sessions.values.forEach { it.stop() }
        sessions.clear()
    }

    override fun onCreate() {
        super.onCreate()
        resumePendingMoves()
    }

    /** A move committed before the process was killed is revealed without waiting for its screen. */
    internal fun resumePendingMoves() {
        if (token != null) vault.pendingLobbies().forEach(::session)
    }

    companion object {
        /** The emulator's address of the development machine running `make run`. */
        const val DEFAULT_SERVER = "http://10.0.2.2:8080"
        private const val PREF_SERVER = "server"
        private const val PREF_TOKEN = "token_sealed"
    }
}
