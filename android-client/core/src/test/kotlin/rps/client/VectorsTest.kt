package rps.client

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.boolean
import kotlinx.serialization.json.int
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.long
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestFactory

/** The client against the Go engine's shared vectors (engine/testdata/vectors.json). */
class VectorsTest {
    private val vectors = TestFiles.json(TestFiles.repoFile("engine/testdata/vectors.json")).jsonObject

    @Test
    fun `the five Gear commitments match`() {
        val gear = mapOf(
            "0pass12" to "cb86442693864466112de9876585a7f068c7c0acfc4aae60b312a4ef297f44ae",
            "1pass12" to "b34c1092cdce02200b7eaa684af4563d0644b46aa2ac115dec287bd62ca268de",
            "2pass12" to "88e53c3a1200f7b4c3cbeca95ae266f64c623c6ee0e357fe570cfae2ad4f34c1",
            "3pass12" to "c580388dad876ea2b7861889a6617cba2693c4765c7445b8eaea739ab4cdb127",
            "4pass12" to "9ce58f3df7e4b407e7d421d2e310e69613ff26164c27d446f76ce0060ce93380",
        )
        for ((pre, want) in gear) {
            assertEquals(want, Commitments.commit(pre), pre)
            assertEquals(want, Commitments.commit(pre[0] - '0', pre.substring(1)), pre)
        }
    }

    @TestFactory
    fun `every commitment vector matches`(): List<DynamicTest> = vectors["commitments"]!!.jsonArray.map { v ->
        val pre = v.jsonObject["preimage"]!!.jsonPrimitive.content
        val want = v.jsonObject["commitment"]!!.jsonPrimitive.content
        DynamicTest.dynamicTest(pre.take(20)) { assertEquals(want, Commitments.commit(pre)) }
    }

    @Test
    fun `generated passwords are 32 random bytes as base64url`() {
        val a = Commitments.newPassword()
        val b = Commitments.newPassword()
        assertEquals(43, a.length)
        assertTrue(a.matches(Regex("[A-Za-z0-9_-]{43}")))
        assertTrue(a != b)
    }

    private fun rulesets() = vectors["rulesets"]!!.jsonArray.map { it.jsonObject }

    private fun placement(o: JsonObject) =
        Placement(o["move"]!!.jsonPrimitive.int, o["rotation"]!!.jsonPrimitive.int, o["tiles"]!!.jsonPrimitive.int)

    private fun weapons(rs: JsonObject): List<Weapon> {
        val canonical = Json.parseToJsonElement(rs["canonical"]!!.jsonPrimitive.content).jsonObject
        val ws = canonical["weapons"]!!.jsonArray.map { it.jsonObject }
        val byName = ws.associate { it["name"]!!.jsonPrimitive.content to it["move"]!!.jsonPrimitive.content.toInt() }
        return ws.map { w ->
            Weapon(
                move = w["move"]!!.jsonPrimitive.content.toInt(),
                name = w["name"]!!.jsonPrimitive.content,
                layout = w["layout"]!!.jsonArray.map { it.jsonPrimitive.content },
                rotations = w["rotations"]?.jsonPrimitive?.boolean ?: false,
                beats = w["beats"]!!.jsonArray.map { byName.getValue(it.jsonPrimitive.content) },
            )
        }
    }

    @TestFactory
    fun `placements derived from layouts equal the engine's`(): List<DynamicTest> = rulesets().map { rs ->
        DynamicTest.dynamicTest(rs["id"]!!.jsonPrimitive.content) {
            val want = rs["placements"]!!.jsonArray.map { placement(it.jsonObject) }
            val got = WeaponGrid.fromLayouts(weapons(rs).sortedBy { it.move }).placements
            assertEquals(want, got)
        }
    }

    @TestFactory
    fun `every grid case matches the engine`(): List<DynamicTest> = rulesets().flatMap { rs ->
        val grid = WeaponGrid(rs["placements"]!!.jsonArray.map { placement(it.jsonObject) })
        rs["grids"]!!.jsonArray.map { it.jsonObject }.map { c ->
            val g = c["grid"]!!.jsonPrimitive.int
            DynamicTest.dynamicTest("${rs["id"]!!.jsonPrimitive.content} grid $g") {
                val a = grid.analyze(g)
                assertEquals(c["matches"]!!.jsonArray.map { placement(it.jsonObject) }, a.matches, "matches")
                assertEquals(c["candidates"]!!.jsonPrimitive.int, a.candidates, "candidates")
                assertEquals(c["validTiles"]!!.jsonPrimitive.int, a.validTiles, "validTiles")
                assertEquals(a.candidates, grid.candidates(g))
                assertEquals(a.validTiles, grid.validTiles(g))
            }
        }
    }

    @TestFactory
    fun `a weapon picked in the legend fills the grid with that weapon alone`(): List<DynamicTest> = rulesets().flatMap { rs ->
        val grid = WeaponGrid(rs["placements"]!!.jsonArray.map { placement(it.jsonObject) })
        weapons(rs).map { w ->
            DynamicTest.dynamicTest("${rs["id"]!!.jsonPrimitive.content} ${w.name}") {
                val a = grid.analyze(grid.centered(w.move)!!.tiles)
                assertEquals(listOf(w.move), a.matches.map { it.move }.distinct())
                // The legend draws one shape for each distinct way the weapon may be drawn.
                val ways = grid.placements.filter { it.move == w.move }.map { it.rotation }.distinct()
                assertEquals(ways.size, Layouts.shapes(w.layout, w.rotations).size)
            }
        }
    }

    @Test
    fun `the legend's shapes are the layout and its distinct turns`() {
        assertEquals(listOf(listOf("XX", "XX")), Layouts.shapes(listOf("XX", "XX"), rotations = true))
        assertEquals(listOf(listOf(" XX", "XX "), listOf("X ", "XX", " X")), Layouts.shapes(listOf(" XX", "XX "), rotations = true))
        assertEquals(listOf(listOf("X X", "X X", "XXX")), Layouts.shapes(listOf("X X", "X X", "XXX"), rotations = false))
        // The middle of the grid for a 3x3 weapon: rows and columns 1 to 3.
        val spock = WeaponGrid.fromLayouts(listOf(Weapon(4, "Spock", listOf("X X", "X X", "XXX"), false, emptyList())))
        val tiles = spock.centered(4)!!.tiles
        assertEquals(listOf(1, 3, 1, 3, 1, 2, 3), (0 until 5).flatMap { r -> (0 until 5).filter { c -> Grid.has(tiles, r, c) } })
    }

    @Test
    fun `grid coordinates follow the engine's bit numbering`() {
        assertEquals(1, Grid.bit(4, 4)) // bottom-right
        assertEquals(1 shl 4, Grid.bit(4, 0)) // bottom-left
        assertEquals(1 shl 20, Grid.bit(0, 4)) // top-right
        assertEquals(1 shl 24, Grid.bit(0, 0)) // top-left
        assertEquals(Grid.FULL, (0 until 5).flatMap { r -> (0 until 5).map { c -> Grid.bit(r, c) } }.reduce(Int::or))
    }

    @TestFactory
    fun `every resolution case matches the engine`(): List<DynamicTest> {
        val beatsById = rulesets().associate { rs ->
            val ws = weapons(rs)
            val beats = IntArray(ws.maxOf { it.move } + 1)
            for (w in ws) for (b in w.beats) beats[w.move] = beats[w.move] or (1 shl b)
            rs["id"]!!.jsonPrimitive.content to beats
        }
        return vectors["resolutions"]!!.jsonArray.map { it.jsonObject }.mapIndexed { i, c ->
            DynamicTest.dynamicTest("resolution $i") {
                val counts = c["counts"]!!.jsonArray.map { it.jsonPrimitive.long }.toLongArray()
                val out = Resolver.resolve(
                    c["mode"]!!.jsonPrimitive.content,
                    beatsById.getValue(c["ruleset"]!!.jsonPrimitive.content),
                    counts,
                )
                assertEquals(c["present"]!!.jsonPrimitive.int, out.present, "present")
                assertEquals(c["survivors"]!!.jsonPrimitive.int, out.survivors, "survivors")
                assertEquals(c["scores"]!!.jsonArray.map { it.jsonPrimitive.long }, out.scores.toList(), "scores")
            }
        }
    }
}
