package engine

import (
	"fmt"
	"slices"
	"testing"
)

// loadShape loads a two-weapon ruleset whose first weapon has the given
// layout; the second is the full 5x5 block (or a single tile when the first
// is the full block), which never shares a placement with it.
func loadShape(t *testing.T, layout []string, rotations bool) *Ruleset {
	t.Helper()
	other := []string{"XXXXX", "XXXXX", "XXXXX", "XXXXX", "XXXXX"}
	if slices.Equal(layout, other) {
		other = []string{"X"}
	}
	in := rulesetJSON{ID: "shape", Name: "Shape", Weapons: []weaponJSON{
		{Move: "0", Name: "A", Layout: layout, Rotations: rotations, Beats: []string{"B"}},
		{Move: "1", Name: "B", Layout: other},
	}}
	rs, err := LoadRuleset("shape.json", mustJSON(t, in))
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestPlacementCounts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		layout    []string
		rotations bool
		want      int
	}{
		{[]string{"X"}, false, 25},
		{[]string{"X"}, true, 25},                // rotations of a tile coincide
		{[]string{"XX", "XX"}, false, 16},        // 4x4 positions
		{[]string{"XXX", "XXX"}, false, 12},      // 3 columns x 4 rows
		{[]string{"XXX", "XXX"}, true, 24},       // plus the upright 2x3
		{[]string{"XXXXX"}, true, 10},            // 5 rows + 5 columns
		{[]string{"X  ", "XXX"}, true, 48},       // J: 4 distinct turns x 12
		{[]string{" XX", "XX "}, true, 24},       // S: 2 distinct turns x 12
		{[]string{"X X", " X ", "X X"}, true, 9}, // symmetric X
		{[]string{"XXXXX", "XXXXX", "XXXXX", "XXXXX", "XXXXX"}, false, 1},
		{[]string{"     ", "  X  ", "     "}, false, 25}, // margins are trimmed
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.layout, c.rotations), func(t *testing.T) {
			t.Parallel()
			rs := loadShape(t, c.layout, c.rotations)
			n := 0
			seen := map[Grid]bool{}
			for _, p := range rs.Placements() {
				if p.Move != 0 {
					continue
				}
				n++
				if seen[p.Tiles] {
					t.Errorf("placement %d listed twice", p.Tiles)
				}
				seen[p.Tiles] = true
				if p.Tiles&^FullGrid != 0 {
					t.Errorf("placement %d leaves the grid", p.Tiles)
				}
			}
			if n != c.want {
				t.Errorf("%d placements, want %d", n, c.want)
			}
		})
	}
}

func TestBuiltinPlacementCounts(t *testing.T) {
	t.Parallel()
	// rpsls: Rock 2x2 (16), Paper 2x3 turning (24), Scissors 3x3 (9),
	// Lizard S turning (24), Spock 3x3 (9).
	want := map[string]int{"rps": 49, "rpsls": 82, "rps7": 111}
	for _, rs := range Builtin().All() {
		ps := rs.Placements()
		if len(ps) != want[rs.ID()] {
			t.Errorf("%s: %d placements, want %d", rs.ID(), len(ps), want[rs.ID()])
		}
		sorted := slices.IsSortedFunc(ps, func(a, b Placement) int {
			if a.Move != b.Move {
				return int(a.Move) - int(b.Move)
			}
			if a.Rotation != b.Rotation {
				return a.Rotation - b.Rotation
			}
			return int(a.Tiles) - int(b.Tiles)
		})
		if !sorted {
			t.Errorf("%s: placements not ordered by move, rotation, tiles", rs.ID())
		}
	}
}

func TestPlacementAnchorAndRotation(t *testing.T) {
	t.Parallel()
	rs := loadShape(t, []string{"X  ", "XXX"}, true)
	var firsts []Grid
	last := -1
	for _, p := range rs.Placements() {
		if p.Move == 0 && p.Rotation != last {
			firsts = append(firsts, p.Tiles)
			last = p.Rotation
		}
	}
	// The first placement of each rotation sits in the bottom-right corner,
	// turned clockwise each time.
	want := []Grid{
		drawn(t, ".....", ".....", ".....", "..X..", "..XXX"),
		drawn(t, ".....", ".....", "...XX", "...X.", "...X."),
		drawn(t, ".....", ".....", ".....", "..XXX", "....X"),
		drawn(t, ".....", ".....", "....X", "....X", "...XX"),
	}
	if !slices.Equal(firsts, want) {
		for i := range firsts {
			t.Errorf("rotation %d:%s", i, picture(firsts[i]))
		}
	}
}

func TestAnalyzeDrawnGrids(t *testing.T) {
	t.Parallel()
	rs := rpsls(t)
	const rock, paper, scissors, lizard, spock = 0, 1, 2, 3, 4
	cases := []struct {
		name       string
		grid       Grid
		matches    []Placement
		candidates MoveSet
		valid      Grid
	}{
		{
			name:       "empty grid allows everything",
			grid:       0,
			candidates: MoveSetOf(rock, paper, scissors, lizard, spock),
			valid:      FullGrid,
		},
		{
			// Every weapon can cover the corner (Lizard only upright),
			// so the whole 3x3 box around it stays open.
			name:       "corner tile",
			grid:       drawn(t, ".....", ".....", ".....", ".....", "....X"),
			candidates: MoveSetOf(rock, paper, scissors, lizard, spock),
			valid:      drawn(t, ".....", ".....", "..XXX", "..XXX", "..XX."),
		},
		{
			name:       "diagonal pair rules out Spock",
			grid:       drawn(t, ".....", ".....", ".....", "...X.", "....X"),
			candidates: MoveSetOf(rock, paper, scissors, lizard),
			valid:      drawn(t, ".....", ".....", "..XXX", "..X.X", "..XX."),
		},
		{
			name:       "a finished Rock can still grow into Paper",
			grid:       drawn(t, ".....", ".....", ".....", "...XX", "...XX"),
			matches:    []Placement{{Move: rock, Rotation: 0, Tiles: 99}},
			candidates: MoveSetOf(rock, paper),
			valid:      drawn(t, ".....", ".....", "...XX", "..X..", "..X.."),
		},
		{
			name:       "Scissors in the middle",
			grid:       drawn(t, ".....", ".X.X.", "..X..", ".X.X.", "....."),
			matches:    []Placement{{Move: scissors, Rotation: 0, Tiles: drawn(t, ".....", ".X.X.", "..X..", ".X.X.", ".....")}},
			candidates: MoveSetOf(scissors),
			valid:      0,
		},
		{
			name:       "upright Lizard, rotation 1, fits inside upright Paper",
			grid:       drawn(t, "X....", "XX...", ".X...", ".....", "....."),
			matches:    []Placement{{Move: lizard, Rotation: 1, Tiles: drawn(t, "X....", "XX...", ".X...", ".....", ".....")}},
			candidates: MoveSetOf(paper, lizard),
			valid:      drawn(t, ".X...", ".....", "X....", ".....", "....."),
		},
		{
			name:       "opposite corners are impossible",
			grid:       drawn(t, "X....", ".....", ".....", ".....", "....X"),
			candidates: 0,
			valid:      0,
		},
		{
			name: "full grid is impossible",
			grid: FullGrid,
		},
		{
			name: "bits beyond the grid are impossible",
			grid: 1 << 25,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			a := rs.AnalyzeGrid(c.grid)
			if !slices.Equal(a.Matches, c.matches) {
				t.Errorf("matches %+v, want %+v", a.Matches, c.matches)
			}
			if a.Candidates != c.candidates {
				t.Errorf("candidates %05b, want %05b", a.Candidates, c.candidates)
			}
			if a.ValidTiles != c.valid {
				t.Errorf("valid tiles:%s\nwant:%s", picture(a.ValidTiles), picture(c.valid))
			}
			if got := rs.Candidates(c.grid); got != a.Candidates {
				t.Errorf("Candidates = %05b, AnalyzeGrid says %05b", got, a.Candidates)
			}
			if got := rs.ValidTiles(c.grid); got != a.ValidTiles {
				t.Errorf("ValidTiles = %d, AnalyzeGrid says %d", got, a.ValidTiles)
			}
		})
	}
}

func TestEveryPlacementMatchesItself(t *testing.T) {
	t.Parallel()
	for _, rs := range Builtin().All() {
		for _, p := range rs.Placements() {
			a := rs.AnalyzeGrid(p.Tiles)
			if len(a.Matches) != 1 || a.Matches[0] != p {
				t.Errorf("%s: grid %d matches %+v, want only %+v", rs.ID(), p.Tiles, a.Matches, p)
			}
			if !a.Candidates.Has(p.Move) {
				t.Errorf("%s: grid %d does not list its own weapon", rs.ID(), p.Tiles)
			}
		}
	}
}

func TestGridAllocs(t *testing.T) {
	rs := rpsls(t)
	g := drawn(t, ".....", ".....", ".....", "...X.", "....X")
	if n := testing.AllocsPerRun(100, func() { rs.ValidTiles(g) }); n != 0 {
		t.Errorf("ValidTiles allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { rs.Candidates(g) }); n != 0 {
		t.Errorf("Candidates allocates %v times", n)
	}
}

func TestGridCount(t *testing.T) {
	t.Parallel()
	if FullGrid.Count() != 25 || Grid(0).Count() != 0 || Grid(99).Count() != 4 {
		t.Error("Grid.Count is wrong")
	}
}

func BenchmarkValidTiles(b *testing.B) {
	reg := Builtin()
	for _, id := range []string{"rpsls", "rps7"} {
		rs, _ := reg.Get(id)
		b.Run(id, func(b *testing.B) {
			b.ReportAllocs()
			g := Grid(1 | 1<<6)
			for b.Loop() {
				rs.ValidTiles(g)
			}
		})
	}
}
