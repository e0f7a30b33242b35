package rps.client.e2e

import rps.client.TestFiles
import java.io.File
import java.net.HttpURLConnection
import java.net.ServerSocket
import java.net.URI
import java.util.concurrent.TimeUnit

/**
 * A real rpsd for end-to-end tests: `RPS_E2E_SERVER_CMD` (a command line) if set, otherwise a
 * binary built with `go build ./cmd/rpsd` from the repository root. It gets a free port, a
 * throwaway data dir (its private Postgres lives there), a lowered minimum timeout and a known admin
 * token, and is stopped (with its Postgres) by [close].
 */
class RpsdServer private constructor(private val process: Process, val baseUrl: String, val dataDir: File, val log: File) : AutoCloseable {
    companion object {
        const val ADMIN_TOKEN = "e2e-admin-token-0123456789abcdefghijklmnop"

        /** Why no server can be had, or null when one can. */
        fun unavailableReason(): String? {
            if (!System.getenv("RPS_E2E_SERVER_CMD").isNullOrBlank()) return null
            if (!File(
                    TestFiles.repoRoot,
                    "cmd/rpsd",
                ).isDirectory
            ) {
                return "no cmd/rpsd in ${TestFiles.repoRoot} and RPS_E2E_SERVER_CMD is not set"
            }
            if (findGo() == null) return "no `go` on PATH to build rpsd and RPS_E2E_SERVER_CMD is not set"
            return null
        }

        private fun findGo(): String? =
            (System.getenv("PATH") ?: "").split(File.pathSeparator).map { File(it, "go") }.firstOrNull { it.canExecute() }?.path
                ?: File("/usr/local/go/bin/go").takeIf { it.canExecute() }?.path

        private fun command(work: File): List<String> {
            System.getenv("RPS_E2E_SERVER_CMD")?.takeIf { it.isNotBlank() }?.let { return listOf("sh", "-c", it) }
            val bin = File(work, "rpsd")
            val build = ProcessBuilder(findGo()!!, "build", "-o", bin.path, "./cmd/rpsd")
                .directory(TestFiles.repoRoot).redirectErrorStream(true).start()
            val out = build.inputStream.bufferedReader().readText()
            check(build.waitFor(600, TimeUnit.SECONDS) && build.exitValue() == 0) { "go build ./cmd/rpsd failed:\n$out" }
            return listOf(bin.path)
        }

        fun start(): RpsdServer {
            // Postgres runs as another user when we are root: every folder on the way must be enterable.
            val work = File(System.getProperty("java.io.tmpdir"), "rps-e2e-" + System.nanoTime()).apply { mkdirs() }
            work.setReadable(true, false)
            work.setExecutable(true, false)
            val data = File(work, "data")
            val port = ServerSocket(0).use { it.localPort }
            val log = File(work, "rpsd.log")
            val pb = ProcessBuilder(command(work)).directory(TestFiles.repoRoot).redirectErrorStream(true).redirectOutput(log)
            pb.environment().apply {
                put("RPSD_ADDR", "127.0.0.1:$port")
                put("RPSD_MIN_TIMEOUT_MS", "200")
                put("RPSD_ADMIN_TOKEN", ADMIN_TOKEN)
                put("RPSD_DATA_DIR", data.path)
                remove("DATABASE_URL")
            }
            val p = pb.start()
            val server = RpsdServer(p, "http://127.0.0.1:$port", data, log)
            val until = System.nanoTime() + TimeUnit.SECONDS.toNanos(120)
            while (System.nanoTime() < until) {
                if (!p.isAlive) error("rpsd exited with ${p.exitValue()}:\n${log.readText().takeLast(4000)}")
                if (server.ready()) return server
                Thread.sleep(200)
            }
            server.close()
            error("rpsd was not ready within 120 s:\n${log.readText().takeLast(4000)}")
        }
    }

    fun ready(): Boolean = try {
        val c = URI("$baseUrl/readyz").toURL().openConnection() as HttpURLConnection
        c.connectTimeout = 1000
        c.readTimeout = 2000
        c.responseCode == 200
    } catch (_: Exception) {
        false
    }

    /** SIGTERM, so rpsd stops its private Postgres; forcibly after 30 s. */
    override fun close() {
        process.destroy()
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            process.destroyForcibly()
            process.waitFor(10, TimeUnit.SECONDS)
        }
        dataDir.parentFile.deleteRecursively()
    }
}
