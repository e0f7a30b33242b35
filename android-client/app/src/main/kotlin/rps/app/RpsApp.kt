package rps.app

import android.app.Application
import android.content.Context
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.MainScope
import rps.client.AccountKeys
import rps.client.ActionAuth
import rps.client.ActionSigner
import rps.client.AdminSignatures
import rps.client.AesGcmSealer
import rps.client.ChainCheckpoints
import rps.client.Clock
import rps.client.DeviceKeyHolder
import rps.client.DirectoryApi
import rps.client.EventFeed
import rps.client.FileChainCheckpoints
import rps.client.FileLogTrusts
import rps.client.FileVault
import rps.client.GameSession
import rps.client.HistoryApi
import rps.client.HttpEventFeed
import rps.client.HttpRpsApi
import rps.client.KeyHistories
import rps.client.KeysApi
import rps.client.LogAuditor
import rps.client.PlayerApi
import rps.client.PlayerKey
import rps.client.PlayerSignatures
import rps.client.RetryPolicy
import rps.client.TranscriptRounds
import rps.client.Vault
import rps.client.roundMoves
import java.io.File
import java.security.SecureRandom
import java.util.concurrent.ConcurrentHashMap
import javax.crypto.SecretKey

/** What the screens talk to: one server, as one account (or anonymously). */
class Backend(
    val player: PlayerApi,
    val directory: DirectoryApi,
    val feed: EventFeed,
    val history: HistoryApi,
    val keys: KeysApi,
)

/**
 * App-wide state: the accounts signed in on this device ([accounts]; tokens sealed with a key
 * that never leaves the Android Keystore), each with its own vault and chain checkpoints in its own
 * folder, and the game sessions, keyed by account and lobby. Sessions live here rather than in a
 * screen, so a committed move is revealed even when its screen is closed or another account is in
 * use, always with its own account's token; after the process was killed, [onCreate] resumes every
 * lobby any account's vault still has a move for. Tests replace [connect], [clock], [random] and
 * [secretKey].
 */
open class RpsApp : Application() {
    private val prefs by lazy { getSharedPreferences("rps", Context.MODE_PRIVATE) }
    private val sealer by lazy { AesGcmSealer(::secretKey) }
    private val sessions = HashMap<String, GameSession>()
    private val vaults = HashMap<String, Vault>()
    private val chains = HashMap<String, ChainCheckpoints>()
    private val auditors = HashMap<String, LogAuditor>()

    val accounts: AccountStore by lazy { AccountStore(prefs, sealer) }

    /** Android 13+'s permission to notify: asked once, remembered across processes. */
    val notifyPermission: NotifyPermission by lazy { NotifyPermission(prefs) }

    /** The games the player is in, kept going by [GameService] while every screen is gone. */
    val runningGames: RunningGames by lazy { RunningGames(this) }

    /** Sessions outlive screens: this scope is never cancelled. */
    val scope: CoroutineScope = MainScope()

    open val clock: Clock get() = Clock.SYSTEM

    /** Where the passwords of commitments come from. */
    open val random: SecureRandom get() = SecureRandom()

    open fun connect(serverUrl: String, token: String?): Backend = HttpRpsApi(serverUrl, token).let {
        Backend(it, it, HttpEventFeed(it), it, it)
    }

    protected open fun secretKey(): SecretKey = AndroidKeystoreKeys.key()

    /** Whether player keys are made in the Android Keystore (Ed25519 there from Android 13); tests keep them sealed. */
    protected open val keystorePlayerKeys: Boolean get() = DeviceKeys.keystoreMayHaveEd25519

    /** The accounts' player keys on this device. */
    val deviceKeys: DeviceKeys by lazy { DeviceKeys(File(filesDir, "keys"), sealer, keystorePlayerKeys, ::keyRandom) }

    /** Where a sealed software key's seed comes from. */
    protected open fun keyRandom(): SecureRandom = SecureRandom()

    /** Read from game sessions and the ledger's checks, on whatever threads they run. */
    private val origins = ConcurrentHashMap<String, String>()

    /** The transparency log's origin of [server] (what every signature binds), read once. */
    suspend fun originOf(server: String, b: Backend): String = origins[server] ?: readOrigin(b).also { origins[server] = it }

    protected open suspend fun readOrigin(b: Backend): String = RetryPolicy().run { b.player.logInfo().origin }

    /** The clock signatures to [b] are dated by: the server accepts a signature only near its own time. */
    protected open fun signingClock(b: Backend): Clock = clock

    /** [a]'s key on this device, or null when it has none (or it is gone). */
    fun keyOf(a: StoredAccount): PlayerKey? = a.keyRef?.let(deviceKeys::open)

    /** Signs [a]'s actions with its key on this device; null: they go unsigned. */
    fun signerOf(a: StoredAccount, b: Backend = backendOf(a)): ActionSigner? =
        keyOf(a)?.let { ActionSigner(it, a.id, { originOf(a.server, b) }, signingClock(b)) }

    /** The keys screen's work for [a]: its key log watched, its first key bound, other phones added. */
    fun accountKeysOf(a: StoredAccount): AccountKeys {
        val b = backendOf(a)
        val holder = object : DeviceKeyHolder {
            private fun stored() = accounts.all().firstOrNull { it.id == a.id } ?: a
            override fun key() = keyOf(stored())
            override val inKeystore get() = stored().keyRef?.let(deviceKeys::inKeystore) == true
            override fun create(): PlayerKey {
                val (ref, key) = deviceKeys.create()
                accounts.setKey(a.id, ref, key.keyId)
                forgetSessions(a) // its sessions sign from now on
                return key
            }
            override fun known() = stored().knownKeys.toSet()
            override fun addKnown(keyId: String) = accounts.addKnownKey(a.id, keyId)
        }
        return AccountKeys(b.keys, a.id, { originOf(a.server, b) }, holder, signingClock(b))
    }

    val account: StoredAccount? get() = accounts.current

    /** The server of the account in use, or the last one typed in. */
    val serverUrl: String get() = account?.server ?: accounts.lastServer

    /** The account in use, or anonymous requests to the last server when none is. */
    fun backend(): Backend = account?.let(::backendOf) ?: connect(accounts.lastServer, null)

    fun backendOf(a: StoredAccount): Backend = connect(a.server, accounts.token(a))

    /** Passwords between commit and reveal, per account: private storage, sealed with the Keystore key. */
    fun vaultOf(a: StoredAccount): Vault = vaults.getOrPut(a.id) { FileVault(File(filesDir, a.folder + "/vault"), sealer) }

    /** The last verified event of each lobby's log, per account. */
    fun checkpointsOf(a: StoredAccount): ChainCheckpoints =
        chains.getOrPut(a.id) { FileChainCheckpoints(File(filesDir, a.folder + "/chain")) }

    /**
     * The server's transparency log as [a] checks it, shared by its sessions: the log key pinned on
     * first use and the last checkpoint kept, in the account's folder (per server and account).
     */
    private fun logAuditorOf(a: StoredAccount, b: Backend): LogAuditor =
        auditors.getOrPut(a.id) { LogAuditor(a.server, b.player, FileLogTrusts(File(filesDir, a.folder + "/log"))) }

    val vault: Vault get() = vaultOf(account ?: error("no account"))
    val checkpoints: ChainCheckpoints get() = checkpointsOf(account ?: error("no account"))

    /**
     * The lobby's session for the account in use. A session whose game is over for this player is
     * kept while its ending is on screen ([keepEnded], e.g. after a change of theme) and replaced by
     * a new one when the player comes to the lobby again or asks for the next game.
     */
    fun session(lobbyId: String, keepEnded: Boolean = false): GameSession = session(account ?: error("no account"), lobbyId, keepEnded)

    private fun session(a: StoredAccount, lobbyId: String, keepEnded: Boolean = false): GameSession {
        val key = "${a.id}/$lobbyId"
        sessions[key]?.takeIf { keepEnded || !it.state.value.isFinal }?.let { return it }
        sessions.remove(key)?.stop()
        val b = backendOf(a)
        // Players' and admins' key histories, read once for both checks.
        val histories = KeyHistories(b.keys) { originOf(a.server, b) }
        return GameSession(
            lobbyId, b.player, b.feed,
            vaultOf(
                a,
            ),
            scope, clock = clock, random = random, checkpoints = checkpointsOf(a), logAuditor = logAuditorOf(a, b),
            pastRounds = TranscriptRounds(b.history, b.directory),
            signer = signerOf(a, b),
            signatures = PlayerSignatures(
                histories,
                { gameId -> b.player.getGame(gameId).config },
                { gameId, round -> b.history.roundMoves(gameId, round) },
            ),
            adminSignatures = AdminSignatures(histories),
        )
            .also {
                sessions[key] = it
                it.start()
                runningGames.follow(key, a.id, lobbyId, it)
            }
    }

    /** The lobbies in which [a] has a move waiting to be revealed. */
    fun pendingMoves(a: StoredAccount): List<String> = vaultOf(a).pendingLobbies()

    /**
     * Creates account [name] on [server], born with a key made on this device (`sign_up` signed by
     * it, so every action it takes is signed from the first), and signs in as it.
     */
    suspend fun createAccount(server: String, name: String): StoredAccount {
        val b = connect(server, null)
        val (ref, key) = deviceKeys.create()
        val auth = ActionAuth.signUp(key, name, originOf(server, b), signingClock(b).nowMs())
        val created = b.directory.createAccount(name, key.publicKeyHex, auth)
        return signIn(SignIn(created.account.id, created.account.name, server, created.token, ref, key.keyId))
    }

    /** Signs in as a new account (or again as a known one) and makes it the one in use. */
    fun signIn(s: SignIn): StoredAccount {
        accounts.all().firstOrNull { it.id == s.id }?.let(::forgetSessions)
        return accounts.add(s)
    }

    /** Makes [a] the account in use; the other accounts' sessions go on with their own tokens. */
    fun switchTo(a: StoredAccount) = accounts.switchTo(a.id)

    /**
     * A game of account [id] is to be shown (a notification was tapped): that account becomes the
     * one in use when it is signed in here and is not already. Returns it when it was switched to.
     */
    fun switchForGame(id: String?): StoredAccount? {
        val a = accounts.all().firstOrNull { it.id == id } ?: return null
        if (account?.id == a.id) return null
        switchTo(a)
        return a
    }

    /** Keeps [a]'s new token; its sessions start again with it. */
    fun replaceToken(a: StoredAccount, token: String) {
        accounts.replaceToken(a.id, token)
        forgetSessions(a)
        auditors.remove(a.id)
        accounts.all().firstOrNull { it.id == a.id }?.let { fresh -> pendingMoves(fresh).forEach { session(fresh, it) } }
    }

    /** Forgets [a] on this device: its token, its sessions and its files (a move waiting in its vault is given up). */
    fun signOut(a: StoredAccount) {
        forgetSessions(a)
        vaults.remove(a.id)
        chains.remove(a.id)
        auditors.remove(a.id)
        File(filesDir, a.folder).deleteRecursively()
        accounts.remove(a.id)
    }

    private fun forgetSessions(a: StoredAccount) {
        sessions.keys.filter { it.startsWith("${a.id}/") }.forEach {
            sessions.remove(it)?.stop()
            runningGames.forget(it)
        }
    }

    /** Drops every session (in tests, what a killed process loses). */
    internal fun forgetSessions() {
        sessions.values.forEach { it.stop() }
        sessions.clear()
        runningGames.forgetAll()
    }

    override fun onCreate() {
        super.onCreate()
        registerActivityLifecycleCallbacks(runningGames)
        migrateSingleAccount()
        resumePendingMoves()
    }

    /**
     * Versions before several accounts kept one token and one vault: they become an account (its
     * id is not known offline; its name is read again when the account screen shows it) with its
     * files moved into its folder, so a move waiting in the old vault is still revealed.
     */
    private fun migrateSingleAccount() {
        val sealed = prefs.getString(LEGACY_TOKEN, null) ?: return
        val server = prefs.getString(LEGACY_SERVER, null) ?: ""
        val a = StoredAccount(LEGACY_ID, "", server, sealed)
        accounts.token(a)?.let { token ->
            val dir = File(filesDir, a.folder).apply { mkdirs() }
            for (f in listOf("vault", "chain")) File(filesDir, f).takeIf { it.exists() }?.renameTo(File(dir, f))
            accounts.add(SignIn(a.id, a.name, a.server, token))
        }
        prefs.edit().remove(LEGACY_TOKEN).remove(LEGACY_SERVER).commit()
    }

    /** A move committed before the process was killed is revealed, by its own account, without waiting for its screen. */
    internal fun resumePendingMoves() {
        for (a in accounts.all()) if (accounts.token(a) != null) pendingMoves(a).forEach { session(a, it) }
    }

    companion object {
        private const val LEGACY_TOKEN = "token_sealed"
        private const val LEGACY_SERVER = "server"
        private const val LEGACY_ID = "this-device"
    }
}
