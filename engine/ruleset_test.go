package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"
)

func TestBuiltinRulesetsLoad(t *testing.T) {
	t.Parallel()
	// Builtin panics on a bad file; loadEmbedded reports it as a test failure.
	reg, err := loadEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, rs := range reg.All() {
		ids = append(ids, rs.ID())
	}
	if want := []string{"rps", "rps7", "rpsls"}; !slices.Equal(ids, want) {
		t.Errorf("builtin ids %v, want %v", ids, want)
	}
	if _, ok := reg.Get(DefaultRulesetID); !ok {
		t.Errorf("default ruleset %q is not built in", DefaultRulesetID)
	}
	sizes := map[string]int{"rps": 3, "rpsls": 5, "rps7": 7}
	for _, rs := range reg.All() {
		if n := len(rs.Weapons()); n != sizes[rs.ID()] {
			t.Errorf("%s has %d weapons, want %d", rs.ID(), n, sizes[rs.ID()])
		}
		if rs.Moves() != MoveSet(1<<sizes[rs.ID()]-1) {
			t.Errorf("%s moves %b are not 0..%d", rs.ID(), rs.Moves(), sizes[rs.ID()]-1)
		}
		rotating := false
		for _, w := range rs.Weapons() {
			rotating = rotating || w.Rotations
		}
		if !rotating {
			t.Errorf("%s: no weapon uses rotations", rs.ID())
		}
	}
}

func TestRPS7Circle(t *testing.T) {
	t.Parallel()
	rs, _ := Builtin().Get("rps7")
	circle := []string{"Rock", "Fire", "Scissors", "Sponge", "Paper", "Air", "Water"}
	for i, name := range circle {
		w, ok := rs.Weapon(Move(i))
		if !ok || w.Name != name {
			t.Fatalf("move %d is %q, want %q", i, w.Name, name)
		}
		want := MoveSetOf(Move((i+1)%7), Move((i+2)%7), Move((i+3)%7))
		if w.Beats != want {
			t.Errorf("%s beats %07b, want the next three %07b", name, w.Beats, want)
		}
	}
}

func TestCanonicalRoundTrip(t *testing.T) {
	t.Parallel()
	for _, rs := range Builtin().All() {
		c := rs.Canonical()
		again, err := LoadRuleset("canonical.json", c)
		if err != nil {
			t.Fatalf("%s: reload canonical: %v", rs.ID(), err)
		}
		if again.Hash() != rs.Hash() || !bytes.Equal(again.Canonical(), c) {
			t.Errorf("%s: canonical round trip changed the ruleset", rs.ID())
		}
		if !slices.Equal(again.Placements(), rs.Placements()) {
			t.Errorf("%s: canonical round trip changed placements", rs.ID())
		}
		if bytes.ContainsAny(c, "\n\t") || !bytes.HasPrefix(c, []byte(`{"id":`)) {
			t.Errorf("%s: canonical form is not compact: %s", rs.ID(), c)
		}
		if len(rs.HashHex()) != 64 || strings.ToLower(rs.HashHex()) != rs.HashHex() {
			t.Errorf("%s: hash hex %q", rs.ID(), rs.HashHex())
		}
	}
}

func TestCanonicalIgnoresFormatting(t *testing.T) {
	t.Parallel()
	a := `{"id":"two","name":"Two","weapons":[
		{"move":"1","name":"B","layout":["  ","XX"],"beats":[]},
		{"move":"0","name":"A","layout":["X "," X"],"rotations":true,"beats":["B"]}]}`
	b := `{"name":"Two","id":"two","weapons":[
		{"move":"0","name":"A","layout":["X"," X"],"rotations":true,"beats":["B"]},
		{"move":"1","name":"B","layout":["XX"]}]}`
	ra, err := LoadRuleset("a.json", []byte(a))
	if err != nil {
		t.Fatal(err)
	}
	rb, err := LoadRuleset("b.json", []byte(b))
	if err != nil {
		t.Fatal(err)
	}
	if ra.Hash() != rb.Hash() {
		t.Errorf("same rules, different hashes:\n%s\n%s", ra.Canonical(), rb.Canonical())
	}
	want := `{"id":"two","name":"Two","weapons":[{"beats":["B"],"layout":["X "," X"],"move":"0","name":"A","rotations":true},{"beats":[],"layout":["XX"],"move":"1","name":"B","rotations":false}]}`
	if string(ra.Canonical()) != want {
		t.Errorf("canonical\n%s\nwant\n%s", ra.Canonical(), want)
	}
}

func TestAccessorsReturnCopies(t *testing.T) {
	t.Parallel()
	rs := rpsls(t)
	ws := rs.Weapons()
	ws[0].Layout[0] = "broken"
	rs.Placements()[0].Tiles = 0
	rs.Canonical()[0] = 'x'
	if w, _ := rs.Weapon(0); w.Layout[0] != "XX" {
		t.Error("editing Weapons() changed the ruleset")
	}
	if rs.Placements()[0].Tiles == 0 || rs.Canonical()[0] != '{' {
		t.Error("editing a result changed the ruleset")
	}
	if _, ok := rs.Weapon(7); ok {
		t.Error("rpsls has no move 7")
	}
	if rs.Name() != "Rock Paper Scissors Lizard Spock" {
		t.Errorf("name %q", rs.Name())
	}
}

// validRuleset is the base each bad-ruleset case breaks in one way.
func validRuleset() rulesetJSON {
	return rulesetJSON{ID: "tri", Name: "Tri", Weapons: []weaponJSON{
		{Move: "0", Name: "Rock", Layout: []string{"XX", "XX"}, Beats: []string{"Scissors"}},
		{Move: "1", Name: "Paper", Layout: []string{"XXX", "XXX"}, Rotations: true, Beats: []string{"Rock"}},
		{Move: "2", Name: "Scissors", Layout: []string{"X X", " X ", "X X"}, Beats: []string{"Paper"}},
	}}
}

func TestLoadRulesetErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		edit  func(*rulesetJSON)
		raw   string   // used instead of edit when set
		words []string // each must appear in the error
	}{
		{name: "missing id", edit: func(r *rulesetJSON) { r.ID = "" }, words: []string{"missing id"}},
		{name: "bad id", edit: func(r *rulesetJSON) { r.ID = "Tri 3" }, words: []string{`"Tri 3"`, "[a-z0-9-]+"}},
		{name: "missing name", edit: func(r *rulesetJSON) { r.Name = "" }, words: []string{"missing name"}},
		{name: "one weapon", edit: func(r *rulesetJSON) { r.Weapons = r.Weapons[:1] }, words: []string{"1 weapons", "at least 2"}},
		{name: "more than 10 weapons", edit: func(r *rulesetJSON) {
			for i := range 8 {
				r.Weapons = append(r.Weapons, weaponJSON{Move: "9", Name: fmt.Sprint("W", i), Layout: []string{"X"}})
			}
		}, words: []string{"11 weapons", "more than 10"}},
		{name: "weapon without name", edit: func(r *rulesetJSON) { r.Weapons[1].Name = "" }, words: []string{"weapon #2", "missing name"}},
		{name: "duplicate name", edit: func(r *rulesetJSON) { r.Weapons[2].Name = "Rock" }, words: []string{`weapon "Rock"`, "duplicate name"}},
		{name: "non-digit move", edit: func(r *rulesetJSON) { r.Weapons[1].Move = "a" }, words: []string{`weapon "Paper"`, `move "a"`, "digit"}},
		{name: "two-digit move", edit: func(r *rulesetJSON) { r.Weapons[1].Move = "10" }, words: []string{`weapon "Paper"`, `move "10"`}},
		{name: "non-ascii digit move", edit: func(r *rulesetJSON) { r.Weapons[1].Move = "٣" }, words: []string{`weapon "Paper"`, "digit"}},
		{name: "duplicate move", edit: func(r *rulesetJSON) { r.Weapons[2].Move = "0" }, words: []string{`weapon "Scissors"`, "duplicate move 0"}},
		{name: "unknown weapon in beats", edit: func(r *rulesetJSON) { r.Weapons[0].Beats = []string{"Scissors", "Lizard"} }, words: []string{`weapon "Rock"`, `unknown weapon "Lizard"`}},
		{name: "beats itself", edit: func(r *rulesetJSON) { r.Weapons[0].Beats = []string{"Scissors", "Rock"} }, words: []string{`weapon "Rock"`, "beats itself"}},
		{name: "beats twice", edit: func(r *rulesetJSON) { r.Weapons[0].Beats = []string{"Scissors", "Scissors"} }, words: []string{`weapon "Rock"`, `"Scissors" twice`}},
		{name: "beat each other", edit: func(r *rulesetJSON) { r.Weapons[0].Beats = []string{"Scissors", "Paper"} }, words: []string{`weapon "Rock"`, `weapon "Paper"`, "beat each other"}},
		{name: "neither beats", edit: func(r *rulesetJSON) { r.Weapons[2].Beats = nil }, words: []string{`weapon "Paper"`, `weapon "Scissors"`, "neither beats"}},
		{name: "empty layout", edit: func(r *rulesetJSON) { r.Weapons[1].Layout = nil }, words: []string{`weapon "Paper"`, "layout is empty"}},
		{name: "blank layout", edit: func(r *rulesetJSON) { r.Weapons[1].Layout = []string{"   ", ""} }, words: []string{`weapon "Paper"`, "layout is empty"}},
		{name: "too many rows", edit: func(r *rulesetJSON) { r.Weapons[1].Layout = []string{"X", "X", "X", "X", "X", "X"} }, words: []string{`weapon "Paper"`, "6 rows", "larger than 5x5"}},
		{name: "too wide", edit: func(r *rulesetJSON) { r.Weapons[1].Layout = []string{"XXXXXX"} }, words: []string{`weapon "Paper"`, "6 columns", "larger than 5x5"}},
		{name: "bad character", edit: func(r *rulesetJSON) { r.Weapons[2].Layout = []string{"X.X"} }, words: []string{`weapon "Scissors"`, `character "."`}},
		{name: "shared placement", edit: func(r *rulesetJSON) { r.Weapons[2].Layout = []string{"XX", "XX"} }, words: []string{`weapon "Rock"`, `weapon "Scissors"`, "share a placement"}},
		{name: "shared placement by rotation", edit: func(r *rulesetJSON) {
			r.Weapons[0].Layout = []string{"XX"}
			r.Weapons[0].Rotations = true
			r.Weapons[2].Layout = []string{"X", "X"}
		}, words: []string{`weapon "Rock"`, `weapon "Scissors"`, "share a placement"}},
		{name: "unknown field", raw: `{"id":"tri","name":"Tri","weapon":[]}`, words: []string{"decode json", `"weapon"`}},
		{name: "move as number", raw: `{"id":"tri","name":"Tri","weapons":[{"move":0}]}`, words: []string{"decode json"}},
		{name: "not json", raw: `id: tri`, words: []string{"decode json"}},
		{name: "trailing data", raw: `{"id":"tri"} {}`, words: []string{"trailing data"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			data := []byte(c.raw)
			if c.raw == "" {
				in := validRuleset()
				c.edit(&in)
				data = mustJSON(t, in)
			}
			rs, err := LoadRuleset("rulesets/tri.json", data)
			if err == nil {
				t.Fatalf("loaded %s", rs.Canonical())
			}
			if !errors.Is(err, ErrInvalidRuleset) {
				t.Errorf("error %v does not wrap ErrInvalidRuleset", err)
			}
			for _, w := range append([]string{"rulesets/tri.json"}, c.words...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %s", err, w)
				}
			}
		})
	}
	if _, err := LoadRuleset("ok.json", mustJSON(t, validRuleset())); err != nil {
		t.Fatalf("base case does not load: %v", err)
	}
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	a, _ := LoadRuleset("a", []byte(`{"id":"b","name":"B","weapons":[{"move":"0","name":"X","layout":["X"],"beats":["Y"]},{"move":"1","name":"Y","layout":["XX"]}]}`))
	b, _ := LoadRuleset("b", []byte(`{"id":"a","name":"A","weapons":[{"move":"0","name":"X","layout":["X"],"beats":["Y"]},{"move":"1","name":"Y","layout":["XX"]}]}`))
	reg, err := NewRegistry(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if all := reg.All(); len(all) != 2 || all[0] != b || all[1] != a {
		t.Errorf("All() not sorted by id")
	}
	if got, ok := reg.Get("b"); !ok || got != a {
		t.Errorf("Get(b) = %v, %v", got, ok)
	}
	if _, ok := reg.Get("c"); ok {
		t.Error("Get(c) found something")
	}
	if _, err := NewRegistry(a, b, a); !errors.Is(err, ErrDuplicateRuleset) {
		t.Errorf("duplicate id: error %v", err)
	}
	if _, err := NewRegistry(a, nil); err == nil {
		t.Error("nil ruleset accepted")
	}
	if Builtin() != Builtin() {
		t.Error("Builtin loads more than once")
	}
}

func FuzzLoadRuleset(f *testing.F) {
	files, _ := fs.Glob(rulesetFiles, "rulesets/*.json")
	for _, name := range files {
		data, _ := rulesetFiles.ReadFile(name)
		f.Add(data)
	}
	f.Add(mustJSON(f, validRuleset()))
	f.Add([]byte(`{"id":"x","name":"X","weapons":[{"move":"0","name":"A","layout":["X"],"rotations":true,"beats":["B"]},{"move":"1","name":"B","layout":["X"]}]}`))
	f.Add([]byte(`{"id":"x","name":"X","weapons":[{"move":"0","name":"A","layout":["\u0000"]}]}`))
	f.Add([]byte(`null`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := LoadRuleset("fuzz.json", data)
		if err != nil {
			if !errors.Is(err, ErrInvalidRuleset) || !strings.HasPrefix(err.Error(), "invalid ruleset: fuzz.json: ") {
				t.Fatalf("unclear error %q", err)
			}
			return
		}
		again, err := LoadRuleset("again.json", rs.Canonical())
		if err != nil {
			t.Fatalf("canonical form does not load: %v\n%s", err, rs.Canonical())
		}
		if again.Hash() != rs.Hash() || !slices.Equal(again.Placements(), rs.Placements()) {
			t.Fatalf("canonical form changed the ruleset")
		}
		seen := map[Grid]bool{}
		for _, p := range rs.Placements() {
			if seen[p.Tiles] || p.Tiles == 0 || p.Tiles&^FullGrid != 0 || !rs.Moves().Has(p.Move) {
				t.Fatalf("bad placement %+v", p)
			}
			seen[p.Tiles] = true
		}
		var all Counts
		for _, m := range rs.Moves().Moves() {
			all[m] = 1
		}
		for _, mode := range []Resolution{Classic, Weighted} {
			if o := rs.Resolve(mode, all); o.Survivors == 0 || o.Present != rs.Moves() {
				t.Fatalf("%s: %+v", mode, o)
			}
		}
	})
}
