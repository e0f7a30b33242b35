package rps.client

/**
 * The 5x5 weapon grid as a 25-bit mask, exactly as the server's engine: tile (row, column) is bit
 * `row_from_bottom * 5 + col_from_right`, so bit 0 is the bottom-right tile and bit 24 the top-left.
 */
object Grid {
    const val SIZE = 5
    const val FULL: Int = (1 shl 25) - 1

    /** The bit of the tile in [row] (0 = top) and [col] (0 = left), as drawn on screen. */
    fun bit(row: Int, col: Int): Int {
        require(row in 0 until SIZE && col in 0 until SIZE) { "tile ($row, $col) is off the grid" }
        return 1 shl ((SIZE - 1 - row) * SIZE + (SIZE - 1 - col))
    }

    fun has(grid: Int, row: Int, col: Int): Boolean = grid and bit(row, col) != 0

    fun toggle(grid: Int, row: Int, col: Int): Int = grid xor bit(row, col)

    fun count(grid: Int): Int = Integer.bitCount(grid)
}

/** One position of one rotation of a weapon's layout. */
data class Placement(val move: Int, val rotation: Int, val tiles: Int)

/** What a drawn grid is and can become. [candidates] is a mask of moves (bit m = move m). */
data class GridAnalysis(val grid: Int, val matches: List<Placement>, val candidates: Int, val validTiles: Int) {
    val candidateMoves: List<Int> get() = (0..9).filter { candidates and (1 shl it) != 0 }
    val matchedMove: Int? get() = matches.firstOrNull()?.move
    fun isValidTile(row: Int, col: Int): Boolean = validTiles and Grid.bit(row, col) != 0
}

/** The grid logic of a ruleset, given all its placements (from `GET /v1/rulesets/{id}`). */
class WeaponGrid(val placements: List<Placement>) {
    private val tiles = IntArray(placements.size) { placements[it].tiles }

    fun candidates(grid: Int): Int {
        var s = 0
        for (p in placements) if (p.tiles and grid == grid) s = s or (1 shl p.move)
        return s
    }

    fun validTiles(grid: Int): Int {
        var u = 0
        for (t in tiles) if (t and grid == grid) u = u or t
        return u and grid.inv()
    }

    fun analyze(grid: Int): GridAnalysis {
        var candidates = 0
        var valid = 0
        val matches = ArrayList<Placement>(1)
        for (p in placements) {
            if (p.tiles and grid != grid) continue
            candidates = candidates or (1 shl p.move)
            valid = valid or p.tiles
            if (p.tiles == grid) matches += p
        }
        return GridAnalysis(grid, matches, candidates, valid and grid.inv())
    }

    /** The placement of [move] to fill the grid with when the player picks it: its first way round, nearest the middle. */
    fun centered(move: Int): Placement? {
        val mine = placements.filter { it.move == move }
        val first = mine.minOfOrNull { it.rotation } ?: return null
        return mine.filter { it.rotation == first }.minByOrNull { offCentre(it.tiles) }
    }

    /** How far the middle of [tiles] is from the grid's middle, squared (in tiles, times the count squared). */
    private fun offCentre(tiles: Int): Int {
        var rows = 0
        var cols = 0
        val n = Integer.bitCount(tiles)
        for (b in 0 until Grid.SIZE * Grid.SIZE) {
            if (tiles and (1 shl b) == 0) continue
            rows += b / Grid.SIZE
            cols += b % Grid.SIZE
        }
        val dr = 2 * rows - (Grid.SIZE - 1) * n
        val dc = 2 * cols - (Grid.SIZE - 1) * n
        return dr * dr + dc * dc
    }

    companion object {
        /** Placements of every weapon from its layout, as the engine derives them. */
        fun fromLayouts(weapons: List<Weapon>): WeaponGrid =
            WeaponGrid(weapons.flatMap { Layouts.placements(it.move, it.layout, it.rotations) })
    }
}

/** Layout rows (of `X` and spaces, top row first) to placements, mirroring engine/grid.go. */
object Layouts {
    private class Shape(val h: Int, val w: Int, val cells: Array<BooleanArray>) {
        fun rotate(): Shape {
            val out = Array(Grid.SIZE) { BooleanArray(Grid.SIZE) }
            for (r in 0 until h) for (c in 0 until w) out[c][h - 1 - r] = cells[r][c]
            return Shape(w, h, out)
        }

        fun rows(): List<String> = (0 until h).map { r -> String(CharArray(w) { c -> if (cells[r][c]) 'X' else ' ' }) }

        fun mask(): Int {
            var g = 0
            for (r in 0 until h) for (c in 0 until w) if (cells[r][c]) g = g or (1 shl ((h - 1 - r) * Grid.SIZE + (w - 1 - c)))
            return g
        }
    }

    private fun parse(rows: List<String>): Shape {
        var top = Grid.SIZE
        var bottom = -1
        var left = Grid.SIZE
        var right = -1
        rows.forEachIndexed { r, row ->
            row.forEachIndexed { c, ch ->
                require(ch == 'X' || ch == ' ') { "layout has character '$ch'" }
                if (ch == 'X') {
                    top = minOf(top, r)
                    bottom = maxOf(bottom, r)
                    left = minOf(left, c)
                    right = maxOf(right, c)
                }
            }
        }
        require(bottom >= 0) { "layout is empty" }
        require(rows.size <= Grid.SIZE && rows.maxOf { it.length } <= Grid.SIZE) { "layout larger than 5x5" }
        val cells = Array(Grid.SIZE) { BooleanArray(Grid.SIZE) }
        for (r in top..bottom) for (c in left..right) if (c < rows[r].length) cells[r - top][c - left] = rows[r][c] == 'X'
        return Shape(bottom - top + 1, right - left + 1, cells)
    }

    /** The distinct ways [layout] may be drawn (itself alone without [rotations]), as rows of `X` and spaces. */
    fun shapes(layout: List<String>, rotations: Boolean): List<List<String>> {
        val out = LinkedHashMap<Int, List<String>>()
        var cur = parse(layout)
        for (rot in 0 until if (rotations) 4 else 1) {
            if (rot > 0) cur = cur.rotate()
            val shape = cur
            out.getOrPut(shape.mask()) { shape.rows() }
        }
        return out.values.toList()
    }

    fun placements(move: Int, layout: List<String>, rotations: Boolean): List<Placement> {
        val out = ArrayList<Placement>()
        val seen = HashSet<Int>()
        var cur = parse(layout)
        for (rot in 0 until if (rotations) 4 else 1) {
            if (rot > 0) cur = cur.rotate()
            val base = cur.mask()
            if (!seen.add(base)) continue
            for (dy in 0..Grid.SIZE - cur.h) {
                for (dx in 0..Grid.SIZE - cur.w) {
                    out += Placement(move, rot, base shl (dy * Grid.SIZE + dx))
                }
            }
        }
        return out
    }
}

/** Round resolution with masks, mirroring engine/resolve.go (for showing why a round ended as it did). */
object Resolver {
    data class Outcome(val present: Int, val survivors: Int, val scores: LongArray)

    /** [beats] is indexed by move: the mask of moves that move beats. */
    fun resolve(mode: String, beats: IntArray, counts: LongArray): Outcome {
        val n = beats.size
        var moves = 0
        for (m in 0 until n) moves = moves or (1 shl m)
        var present = 0
        for (m in counts.indices) if (counts[m] > 0) present = present or (1 shl m)
        present = present and moves
        val scores = LongArray(10)
        if (present == 0) return Outcome(0, 0, scores)
        val presentMoves = (0 until n).filter { present and (1 shl it) != 0 }
        if (mode == "weighted") {
            var best = Long.MIN_VALUE
            var survivors = 0
            for (m in presentMoves) {
                var s = 0L
                for (q in presentMoves) {
                    if (beats[m] and (1 shl q) != 0) s += counts[q]
                    if (beats[q] and (1 shl m) != 0) s -= counts[q]
                }
                scores[m] = s
                if (s > best) {
                    best = s
                    survivors = 1 shl m
                } else if (s == best) {
                    survivors = survivors or (1 shl m)
                }
            }
            return Outcome(present, survivors, scores)
        }
        for (m in presentMoves) {
            if (present and (1 shl m).inv() and beats[m].inv() == 0) return Outcome(present, 1 shl m, scores)
        }
        return Outcome(present, present, scores)
    }
}
