package rps.client

import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test

/**
 * The app runs from API 23 (its manifest's minSdkVersion) with no library desugaring, and
 * java.time exists from API 26 only: a class of it used by the core or the app fails there with
 * NoClassDefFoundError when the code runs (verifying a key log did, once). The JVM the tests run
 * on has java.time, so nothing else would tell.
 */
class MinSdkTest {
    @Test
    fun `no main source of the core or the app uses java time`() {
        val manifest = TestFiles.repoFile("android-client/app/src/main/AndroidManifest.xml").readText()
        assertEquals("23", Regex("""minSdkVersion="(\d+)"""").find(manifest)?.groupValues?.get(1), "the app's minSdkVersion")
        val uses = listOf("android-client/core/src/main", "android-client/app/src/main")
            .flatMap { TestFiles.repoFile(it).walk().filter { f -> f.extension == "kt" }.toList() }
            .flatMap { f ->
                f.readLines().withIndex().filter {
                    "java.time." in it.value && !it.value.trimStart().startsWith("*") &&
                        !it.value.trimStart().startsWith("//")
                }.map { "${f.name}:${it.index + 1}: ${it.value.trim()}" }
            }
        assertEquals(emptyList<String>(), uses)
    }

    @Test
    fun `key log times compare as the log writes them`() {
        assertEquals(1795000270000L, epochMsOf("2026-11-18T11:11:10.000Z"))
        assertEquals(null, epochMsOf("yesterday"))
        val key = KeyRecord(
            keyId = "k",
            publicKey = "",
            addedSeq = 1,
            addedAt = "2026-11-18T11:11:10.000Z",
            via = "add_key",
            signer = "k",
            retiredSeq = 2,
            retiredAt = "2026-11-18T11:12:10.000Z",
        )
        assertEquals(
            listOf(false, true, true, false),
            listOf(
                "2026-11-18T11:11:09.999Z",
                "2026-11-18T11:11:10.000Z",
                "2026-11-18T11:12:10.000Z",
                "2026-11-18T11:12:10.001Z",
            ).map(key::activeAt),
        )
    }
}
