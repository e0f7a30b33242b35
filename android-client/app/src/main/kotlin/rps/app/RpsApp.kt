package rps.app

import android.app.Application
import android.content.Context
import rps.client.AesGcmSealer
import rps.client.FileVault
import rps.client.HttpEventFeed
import rps.client.HttpRpsApi
import rps.client.Vault
import java.io.File

/** App-wide settings and clients: the server URL and the account's token live in private preferences. */
class RpsApp : Application() {
    val prefs by lazy { getSharedPreferences("rps", Context.MODE_PRIVATE) }

    var serverUrl: String
        get() = prefs.getString("server", DEFAULT_SERVER) ?: DEFAULT_SERVER
        set(v) { prefs.edit().putString("server", v.trim()).apply() }

    var token: String?
        get() = prefs.getString("token", null)
        set(v) { prefs.edit().putString("token", v).commit() }

    fun api(): HttpRpsApi = HttpRpsApi(serverUrl, token)

    fun feed(api: HttpRpsApi) = HttpEventFeed(api)

    /** Passwords between commit and reveal: private storage, encrypted with an Android Keystore key. */
    val vault: Vault by lazy { FileVault(File(filesDir, "vault"), AesGcmSealer(AndroidKeystoreKeys::key)) }

    companion object {
        /** The emulator's address of the development machine running `make run`. */
        const val DEFAULT_SERVER = "http://10.0.2.2:8080"
    }
}
