package engine

import "math/bits"

// Grid is a drawing on the 5x5 weapon grid as a bitmask: bit
// row_from_bottom*5 + col_from_right is set for a filled tile. With this
// numbering a shape anchored in the bottom-right corner moves one column left
// with <<1 and one row up with <<5, so every placement is a single shift.
type Grid uint32

// GridSize is the side of the square weapon grid.
const GridSize = 5

// FullGrid has all 25 tiles filled; bits above it are never part of a grid.
const FullGrid Grid = 1<<25 - 1

// Count is the number of filled tiles.
func (g Grid) Count() int { return bits.OnesCount32(uint32(g)) }

// Placement is one position of one rotation of a weapon's layout on the grid.
type Placement struct {
	// Move is the weapon placed.
	Move Move
	// Rotation is the number of clockwise quarter turns applied to the
	// layout, 0..3; rotations that look the same as a smaller one are
	// omitted, so a square only ever has rotation 0.
	Rotation int
	// Tiles are the grid tiles the placement fills.
	Tiles Grid
}

// GridAnalysis is everything a client needs to guide a player drawing a weapon.
type GridAnalysis struct {
	// Matches are the placements equal to the grid: a complete weapon. The
	// loader guarantees no two weapons share a placement, so there is at
	// most one, but it is a list to keep clients free of that assumption.
	Matches []Placement
	// Candidates are the weapons that some placement containing the grid
	// still allows.
	Candidates MoveSet
	// ValidTiles are the tiles that may still be added: the union of the
	// placements containing the grid, minus the grid.
	ValidTiles Grid
}

// Candidates returns the weapons the grid can still become. It does not
// allocate because a client asks on every tap.
func (r *Ruleset) Candidates(g Grid) MoveSet {
	var s MoveSet
	for _, p := range r.placements {
		if p.Tiles&g == g {
			s |= 1 << p.Move
		}
	}
	return s
}

// ValidTiles returns the tiles that may still be added to the grid without
// ruling out every weapon; an impossible grid has none. It does not allocate.
func (r *Ruleset) ValidTiles(g Grid) Grid {
	var u Grid
	for _, t := range r.tiles {
		if t&g == g {
			u |= t
		}
	}
	return u &^ g
}

// AnalyzeGrid answers matches, candidates and valid tiles at once. An
// impossible grid is an ordinary answer (nothing matches, nothing is left),
// not an error, because players draw it all the time.
func (r *Ruleset) AnalyzeGrid(g Grid) GridAnalysis {
	var a GridAnalysis
	for _, p := range r.placements {
		if p.Tiles&g != g {
			continue
		}
		a.Candidates |= 1 << p.Move
		a.ValidTiles |= p.Tiles
		if p.Tiles == g {
			a.Matches = append(a.Matches, p)
		}
	}
	a.ValidTiles &^= g
	return a
}

// shape is a layout's filled cells inside its bounding box, row 0 at the top
// and column 0 at the left, as written in the ruleset file.
type shape struct {
	h, w  int
	cells [GridSize][GridSize]bool
}

// rotate turns the shape a quarter turn clockwise.
func (s shape) rotate() shape {
	out := shape{h: s.w, w: s.h}
	for r := 0; r < s.h; r++ {
		for c := 0; c < s.w; c++ {
			out.cells[c][s.h-1-r] = s.cells[r][c]
		}
	}
	return out
}

// mask anchors the shape's bounding box in the bottom-right corner.
func (s shape) mask() Grid {
	var g Grid
	for r := 0; r < s.h; r++ {
		for c := 0; c < s.w; c++ {
			if s.cells[r][c] {
				g |= 1 << ((s.h-1-r)*GridSize + (s.w - 1 - c))
			}
		}
	}
	return g
}

// rows renders the shape as layout rows, padded to its width so the
// canonical form of a layout is unique.
func (s shape) rows() []string {
	out := make([]string, s.h)
	for r := 0; r < s.h; r++ {
		b := make([]byte, s.w)
		for c := 0; c < s.w; c++ {
			b[c] = ' '
			if s.cells[r][c] {
				b[c] = 'X'
			}
		}
		out[r] = string(b)
	}
	return out
}

// placements lists every shift of every distinct rotation, ordered by
// rotation and then by ascending tile mask.
func (s shape) placements(m Move, rotations bool) []Placement {
	var out []Placement
	var seen []Grid
	cur := s
	turns := 1
	if rotations {
		turns = 4
	}
	for rot := 0; rot < turns; rot, cur = rot+1, cur.rotate() {
		base := cur.mask()
		dup := false
		for _, b := range seen {
			dup = dup || b == base
		}
		if dup {
			continue
		}
		seen = append(seen, base)
		for dy := 0; dy <= GridSize-cur.h; dy++ {
			for dx := 0; dx <= GridSize-cur.w; dx++ {
				out = append(out, Placement{Move: m, Rotation: rot, Tiles: base << (dy*GridSize + dx)})
			}
		}
	}
	return out
}
