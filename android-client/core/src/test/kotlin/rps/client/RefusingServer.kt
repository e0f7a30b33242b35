package rps.client

import com.sun.net.httpserver.Headers
import com.sun.net.httpserver.HttpServer
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.assertThrows
import java.net.InetSocketAddress
import java.util.Collections

/**
 * A tiny local HTTP server, for the tests of what [HttpRpsApi] puts on the wire: it keeps every
 * request it gets and refuses each with the problem of [status], [title] and [code]. [api] is a
 * client of it with [token].
 */
class RefusingServer(token: String, status: Int, title: String, code: String) : AutoCloseable {
    /** A request as the server got it. */
    class Seen(val method: String, val path: String, val headers: Headers, val body: String)

    val requests: MutableList<Seen> = Collections.synchronizedList(mutableListOf())

    private val server = HttpServer.create(InetSocketAddress("127.0.0.1", 0), 0).apply {
        createContext("/") { ex ->
            requests += Seen(ex.requestMethod, ex.requestURI.path, ex.requestHeaders, ex.requestBody.readBytes().decodeToString())
            val problem = """{"type":"about:blank","title":"$title","status":$status,"code":"$code","detail":"test"}"""
            ex.responseHeaders.add("Content-Type", "application/problem+json")
            ex.sendResponseHeaders(status, problem.length.toLong())
            ex.responseBody.use { it.write(problem.toByteArray()) }
        }
        start()
    }

    val api = HttpRpsApi("http://127.0.0.1:${server.address.port}", token)

    /** The request [call] sent, which the server refused. */
    fun sent(call: suspend HttpRpsApi.() -> Unit): Seen {
        assertThrows<RpsException.Problem> { runBlocking { api.call() } }
        return requests.last()
    }

    override fun close() = server.stop(0)
}
