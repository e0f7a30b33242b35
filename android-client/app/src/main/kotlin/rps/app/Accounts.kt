package rps.app

import android.content.SharedPreferences
import android.util.Base64
import org.json.JSONArray
import org.json.JSONObject
import rps.client.Sealer
import java.security.GeneralSecurityException

/**
 * An account this device can play as: on [server], with its token sealed by the Keystore key; its
 * player key on this device ([keyRef], [DeviceKeys]) and the keys this device added to it
 * ([knownKeys]: its own and other phones' it vouched for), which its KeyWatch does not report.
 */
data class StoredAccount(
    val id: String,
    val name: String,
    val server: String,
    val sealedToken: String,
    val keyRef: String? = null,
    val knownKeys: List<String> = emptyList(),
) {
    /** The folder of its private files (vault, checkpoints): one per account, so nothing crosses over. */
    val folder: String get() = "accounts/" + id.filter { it.isLetterOrDigit() || it == '-' }
}

/**
 * An account to sign in as on [server] with its [token] (sealed once stored), and its player key
 * on this device ([keyRef], id [keyId]) when this device made it. Not a data class: its token is
 * not for a log line.
 */
class SignIn(
    val id: String,
    val name: String,
    val server: String,
    val token: String,
    val keyRef: String? = null,
    val keyId: String? = null,
)

/**
 * The accounts signed in on this device and which one is in use, in private preferences. Tokens
 * are stored sealed ([Sealer], the Keystore key) and opened only to make requests.
 */
class AccountStore(private val prefs: SharedPreferences, private val sealer: Sealer) {
    fun all(): List<StoredAccount> {
        val a = JSONArray(prefs.getString(KEY_ACCOUNTS, "[]"))
        return (0 until a.length()).map { i ->
            val o = a.getJSONObject(i)
            val known = o.optJSONArray("knownKeys")
            StoredAccount(
                o.getString("id"),
                o.getString("name"),
                o.getString("server"),
                o.getString("token"),
                o.optString("keyRef", "").ifEmpty { null },
                known?.let { k -> (0 until k.length()).map { k.getString(it) } }.orEmpty(),
            )
        }
    }

    val current: StoredAccount? get() = prefs.getString(KEY_CURRENT, null)?.let { id -> all().firstOrNull { it.id == id } }

    /** The last server address used, to propose on the first screen. */
    val lastServer: String get() = prefs.getString(KEY_LAST_SERVER, "") ?: ""

    fun rememberServer(url: String) {
        prefs.edit().putString(KEY_LAST_SERVER, url).commit()
    }

    /** Adds (or replaces, for the same id on the same server) the account of [s] and makes it current. */
    fun add(s: SignIn): StoredAccount {
        val before = all().firstOrNull { it.id == s.id && it.server == s.server }
        val acc = StoredAccount(
            s.id,
            s.name,
            s.server,
            seal(s.token),
            s.keyRef ?: before?.keyRef,
            (before?.knownKeys.orEmpty() + listOfNotNull(s.keyId)).distinct(),
        )
        save(all().filterNot { it.id == acc.id } + acc, acc.id)
        rememberServer(s.server)
        return acc
    }

    fun replaceToken(id: String, token: String) {
        save(all().map { if (it.id == id) it.copy(sealedToken = seal(token)) else it }, prefs.getString(KEY_CURRENT, null))
    }

    /** [a]'s key on this device is now [keyRef] (id [keyId]). */
    fun setKey(id: String, keyRef: String, keyId: String) =
        update(id) { it.copy(keyRef = keyRef, knownKeys = (it.knownKeys + keyId).distinct()) }

    /** This device added key [keyId] to the account (another phone's): not news for its KeyWatch. */
    fun addKnownKey(id: String, keyId: String) = update(id) { it.copy(knownKeys = (it.knownKeys + keyId).distinct()) }

    private fun update(id: String, change: (StoredAccount) -> StoredAccount) {
        save(all().map { if (it.id == id) change(it) else it }, prefs.getString(KEY_CURRENT, null))
    }

    fun rename(id: String, name: String) {
        save(all().map { if (it.id == id) it.copy(name = name) else it }, prefs.getString(KEY_CURRENT, null))
    }

    fun switchTo(id: String) {
        require(all().any { it.id == id }) { "no account $id" }
        prefs.edit().putString(KEY_CURRENT, id).commit()
    }

    /** Forgets the account; no account is current afterwards if it was. */
    fun remove(id: String) {
        val cur = prefs.getString(KEY_CURRENT, null)
        save(all().filterNot { it.id == id }, cur.takeIf { it != id })
    }

    /** The account's token, or null when it can no longer be opened (a reset Keystore). */
    fun token(a: StoredAccount): String? = try {
        String(sealer.open(Base64.decode(a.sealedToken, Base64.NO_WRAP)), Charsets.UTF_8)
    } catch (e: GeneralSecurityException) {
        null
    } catch (e: IllegalArgumentException) {
        null
    }

    private fun seal(token: String) = Base64.encodeToString(sealer.seal(token.toByteArray(Charsets.UTF_8)), Base64.NO_WRAP)

    private fun save(accounts: List<StoredAccount>, current: String?) {
        val a = JSONArray()
        for (x in accounts) {
            a.put(
                JSONObject().put("id", x.id).put("name", x.name).put("server", x.server).put("token", x.sealedToken)
                    .put("keyRef", x.keyRef ?: "").put("knownKeys", JSONArray(x.knownKeys)),
            )
        }
        prefs.edit().putString(KEY_ACCOUNTS, a.toString()).putString(KEY_CURRENT, current).commit()
    }

    private companion object {
        const val KEY_ACCOUNTS = "accounts"
        const val KEY_CURRENT = "current_account"
        const val KEY_LAST_SERVER = "last_server"
    }
}
