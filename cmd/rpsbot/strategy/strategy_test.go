package strategy

import (
	"slices"
	"strings"
	"testing"

	"github.com/commitreveal/rps/engine"
)

func rules(t *testing.T, id string) *engine.Ruleset {
	t.Helper()
	rs, ok := engine.Builtin().Get(id)
	if !ok {
		t.Fatalf("no builtin ruleset %q", id)
	}
	return rs
}

func play(t *testing.T, s Strategy, r Round, n int) []engine.Move {
	t.Helper()
	out := make([]engine.Move, n)
	for i := range out {
		out[i] = s.Choose(r)
		if !r.Rules.Moves().Has(out[i]) {
			t.Fatalf("%s chose %v, not a move of %s", s.Name(), out[i], r.Rules.ID())
		}
	}
	return out
}

func TestSeededStrategiesRepeat(t *testing.T) {
	r := Round{Number: 1, Players: 6, Rules: rules(t, "rpsls"), Resolution: engine.Classic}
	for _, name := range []string{Random, Smart} {
		a, _ := New(name, 42, nil)
		b, _ := New(name, 42, nil)
		c, _ := New(name, 43, nil)
		ma, mb, mc := play(t, a, r, 50), play(t, b, r, 50), play(t, c, r, 50)
		if !slices.Equal(ma, mb) {
			t.Errorf("%s: the same seed gave %v and %v", name, ma, mb)
		}
		if slices.Equal(ma, mc) {
			t.Errorf("%s: seeds 42 and 43 gave the same 50 moves", name)
		}
	}
}

func TestRandomIsUniform(t *testing.T) {
	r := Round{Number: 1, Players: 2, Rules: rules(t, "rps7"), Resolution: engine.Classic}
	s, _ := New(Random, 1, nil)
	seen := map[engine.Move]int{}
	const n = 7000
	for _, m := range play(t, s, r, n) {
		seen[m]++
	}
	if len(seen) != 7 {
		t.Fatalf("random used %d of 7 weapons: %v", len(seen), seen)
	}
	for m, k := range seen {
		if k < n/7*8/10 || k > n/7*12/10 {
			t.Errorf("move %v chosen %d times of %d, want about %d", m, k, n, n/7)
		}
	}
}

func TestScriptLoopsAndParses(t *testing.T) {
	rs := rules(t, "rpsls")
	moves, err := ParseScript(strings.NewReader("# warm-up\nrock, 1\n  SPOCK # the best\n\n2\n"), rs)
	if err != nil {
		t.Fatal(err)
	}
	want := []engine.Move{0, 1, 4, 2}
	if !slices.Equal(moves, want) {
		t.Fatalf("parsed %v, want %v", moves, want)
	}
	s, err := New(Script, 0, moves)
	if err != nil {
		t.Fatal(err)
	}
	got := play(t, s, Round{Rules: rs, Players: 2}, 6)
	if !slices.Equal(got, []engine.Move{0, 1, 4, 2, 0, 1}) {
		t.Errorf("script played %v", got)
	}
	for _, bad := range []string{"", "# nothing\n", "rock\nbanana\n", "7"} {
		if _, err := ParseScript(strings.NewReader(bad), rs); err == nil {
			t.Errorf("ParseScript(%q) succeeded", bad)
		}
	}
	if _, err := New(Script, 0, nil); err == nil {
		t.Error("a script strategy without moves was accepted")
	}
	if _, err := New("psychic", 0, nil); err == nil {
		t.Error("an unknown strategy was accepted")
	}
}

// A smart bot that has seen the others play Rock again and again must answer with a weapon that
// beats Rock, under both resolution rules and in small and large rounds.
func TestSmartCountersTheHabit(t *testing.T) {
	rs := rules(t, "rpsls")
	rock := engine.Move(0)
	for _, mode := range []engine.Resolution{engine.Classic, engine.Weighted} {
		for _, players := range []int{2, 5, 1000} {
			s, _ := New(Smart, 7, nil)
			for range 20 {
				var counts engine.Counts
				counts[rock] = int64(players - 1)
				counts[2] = 1 // the bot's own move
				s.Observe(counts, 2, true)
			}
			w, _ := rs.Weapon(s.Choose(Round{Number: 21, Players: players, Rules: rs, Resolution: mode}))
			if !w.Beats.Has(rock) {
				t.Errorf("%s, %d players: smart chose %s, which does not beat Rock", mode, players, w.Name)
			}
		}
	}
}

// Observe must not count the bot's own reveal as an opponent's.
func TestSmartIgnoresItsOwnMoves(t *testing.T) {
	s := &smart{}
	var counts engine.Counts
	counts[3] = 1
	s.Observe(counts, 3, true)
	if s.seen[3] != 0 {
		t.Errorf("the bot's own move was counted: %v", s.seen)
	}
	s.Observe(counts, 3, false)
	if s.seen[3] != 1 {
		t.Errorf("an opponent's move was not counted: %v", s.seen)
	}
}

func TestExpectedCountsAddUp(t *testing.T) {
	moves := []engine.Move{0, 1, 2}
	c := expectedCounts(moves, []float64{0.5, 0.25, 0.25}, 7)
	if c[0]+c[1]+c[2] != 7 || c[0] < 3 {
		t.Errorf("expectedCounts = %v", c[:3])
	}
}
