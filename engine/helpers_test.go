package engine

import (
	"encoding/json"
	"testing"
)

// rpsls returns the shipped default ruleset.
func rpsls(t testing.TB) *Ruleset {
	t.Helper()
	rs, ok := Builtin().Get(DefaultRulesetID)
	if !ok {
		t.Fatalf("builtin registry has no %q", DefaultRulesetID)
	}
	return rs
}

// drawn turns rows drawn as on screen (top row first, 5 characters, 'X' for
// a filled tile) into a Grid, so grid tests read like pictures.
func drawn(t testing.TB, rows ...string) Grid {
	t.Helper()
	if len(rows) != GridSize {
		t.Fatalf("drawing has %d rows, want %d", len(rows), GridSize)
	}
	var g Grid
	for r, row := range rows {
		if len(row) != GridSize {
			t.Fatalf("drawing row %d is %q, want %d characters", r, row, GridSize)
		}
		for c := 0; c < GridSize; c++ {
			switch row[c] {
			case 'X':
				g |= 1 << ((GridSize-1-r)*GridSize + (GridSize - 1 - c))
			case ' ', '.':
			default:
				t.Fatalf("drawing row %d has %q", r, row[c])
			}
		}
	}
	return g
}

// picture renders a grid the way drawn reads it, for failure messages.
func picture(g Grid) string {
	s := ""
	for r := 0; r < GridSize; r++ {
		s += "\n"
		for c := 0; c < GridSize; c++ {
			if g&(1<<((GridSize-1-r)*GridSize+(GridSize-1-c))) != 0 {
				s += "X"
			} else {
				s += "."
			}
		}
	}
	return s
}

// mustJSON marshals a test ruleset description.
func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
