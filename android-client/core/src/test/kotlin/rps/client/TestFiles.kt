package rps.client

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonElement
import java.io.File

/** Files of the repository the tests check the client against. */
object TestFiles {
    val repoRoot: File = File(System.getProperty("rps.repoRoot") ?: "../..").canonicalFile

    fun repoFile(path: String): File = File(repoRoot, path)

    fun json(file: File): JsonElement = Json.parseToJsonElement(file.readText())

    fun resource(name: String): String = TestFiles::class.java.getResource("/$name")?.readText() ?: error("missing test resource $name")
}
