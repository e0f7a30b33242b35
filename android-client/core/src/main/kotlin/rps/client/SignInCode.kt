package rps.client

import okhttp3.HttpUrl.Companion.toHttpUrlOrNull
import java.net.URLDecoder
import java.net.URLEncoder

/**
 * What a player needs to sign in on a device: the server's address and a bearer token. The web
 * console shows it as a QR code beside a token it issues (`rps://sign-in?server=...&token=...`);
 * a player may also paste that text, or the token alone.
 */
data class SignInCode(val server: String?, val token: String) {
    /** The text of the QR code. */
    fun encode(): String = buildString {
        append("$SCHEME://sign-in?")
        server?.let { append("server=").append(URLEncoder.encode(it, "UTF-8")).append('&') }
        append("token=").append(URLEncoder.encode(token, "UTF-8"))
    }

    companion object {
        const val SCHEME = "rps"
        private val TOKEN = Regex("[A-Za-z0-9_-]{16,200}")

        /** Reads a scanned or pasted text: a sign-in code, or a bare token; null when it is neither. */
        fun parse(text: String): SignInCode? {
            val t = text.trim()
            if (TOKEN.matches(t)) return SignInCode(null, t)
            if (!t.startsWith("$SCHEME://sign-in?")) return null
            val params = t.substringAfter('?').split('&').mapNotNull { p ->
                val (k, v) = p.split('=', limit = 2).takeIf { it.size == 2 } ?: return@mapNotNull null
                k to URLDecoder.decode(v, "UTF-8")
            }.toMap()
            val token = params["token"]?.takeIf { TOKEN.matches(it) } ?: return null
            val server = params["server"]?.takeIf { it.toHttpUrlOrNull() != null }
            return SignInCode(server, token)
        }
    }
}
