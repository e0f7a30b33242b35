package engine

import (
	"errors"
	"fmt"
	"testing"
)

func TestParseResolution(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"classic", "weighted"} {
		r, err := ParseResolution(s)
		if err != nil || string(r) != s {
			t.Errorf("ParseResolution(%q) = %q, %v", s, r, err)
		}
	}
	for _, s := range []string{"", "Classic", "random"} {
		if _, err := ParseResolution(s); !errors.Is(err, ErrUnknownResolution) {
			t.Errorf("ParseResolution(%q) error = %v, want ErrUnknownResolution", s, err)
		}
	}
}

func TestRPSLSBeatsTable(t *testing.T) {
	t.Parallel()
	rs := rpsls(t)
	want := map[string][]string{
		"Rock":     {"Scissors", "Lizard"},
		"Paper":    {"Rock", "Spock"},
		"Scissors": {"Paper", "Lizard"},
		"Lizard":   {"Paper", "Spock"},
		"Spock":    {"Rock", "Scissors"},
	}
	digits := map[string]Move{"Rock": 0, "Paper": 1, "Scissors": 2, "Lizard": 3, "Spock": 4}
	for name, beats := range want {
		w, ok := rs.Weapon(digits[name])
		if !ok || w.Name != name {
			t.Fatalf("move %d is %q, want %q (Gear's digits)", digits[name], w.Name, name)
		}
		var set MoveSet
		for _, b := range beats {
			set |= 1 << digits[b]
		}
		if w.Beats != set {
			t.Errorf("%s beats %b, want %b", name, w.Beats, set)
		}
	}
}

// TestGearCases are the cases of Gear's own program, with the survivors it
// expects, in RPSLS notation: R Rock, P Paper, S Scissors, L Lizard, K Spock.
func TestGearCases(t *testing.T) {
	t.Parallel()
	rs := rpsls(t)
	letter := map[byte]Move{'R': 0, 'P': 1, 'S': 2, 'L': 3, 'K': 4}
	set := func(s string) MoveSet {
		var out MoveSet
		for i := 0; i < len(s); i++ {
			out |= 1 << letter[s[i]]
		}
		return out
	}
	cases := []struct{ players, survivors string }{
		{"LPSR", "LPSR"},
		{"KLKK", "L"},
		{"RRKR", "K"},
		{"RRKS", "K"},
		{"KLLK", "L"},
		{"KLLP", "L"},
		{"RPK", "P"},
		{"RSL", "R"},
		{"RSK", "K"},
		{"PSL", "S"},
		{"PLK", "L"},
		{"RPS", "RPS"},
		{"RPL", "RPL"},
		{"RLK", "RLK"},
		{"PSK", "PSK"},
		{"SLK", "SLK"},
	}
	// Every set of 4 or 5 distinct moves continues.
	for mask := 1; mask < 1<<5; mask++ {
		if n := MoveSet(mask).Count(); n >= 4 {
			s := ""
			for _, m := range MoveSet(mask).Moves() {
				s += string("RPSLK"[m])
			}
			cases = append(cases, struct{ players, survivors string }{s, s})
		}
	}
	for _, c := range cases {
		var counts Counts
		for i := 0; i < len(c.players); i++ {
			counts[letter[c.players[i]]]++
		}
		got := rs.Resolve(Classic, counts)
		if got.Survivors != set(c.survivors) {
			t.Errorf("players %s: survivors %05b, want %s (%05b)", c.players, got.Survivors, c.survivors, set(c.survivors))
		}
		if got.Present != set(c.players) {
			t.Errorf("players %s: present %05b", c.players, got.Present)
		}
		if got.Scores != [MaxWeapons]int64{} {
			t.Errorf("players %s: classic has scores %v", c.players, got.Scores)
		}
	}
}

// multisets calls f with every count vector of up to maxPlayers players over
// the ruleset's moves, the empty round included.
func multisets(rs *Ruleset, maxPlayers int, f func(Counts)) {
	moves := rs.Moves().Moves()
	var c Counts
	var rec func(i, left int)
	rec = func(i, left int) {
		if i == len(moves) {
			f(c)
			return
		}
		for n := 0; n <= left; n++ {
			c[moves[i]] = int64(n)
			rec(i+1, left-n)
		}
		c[moves[i]] = 0
	}
	rec(0, maxPlayers)
}

// players expands counts into one move per player, the form a reference
// implementation without bitmasks works on.
func players(c Counts) []Move {
	var out []Move
	for m, n := range c {
		for range n {
			out = append(out, Move(m))
		}
	}
	return out
}

func beats(rs *Ruleset, a, b Move) bool {
	w, _ := rs.Weapon(a)
	return w.Beats.Has(b)
}

// referenceClassic is the classic rule written the slow, obvious way.
func referenceClassic(rs *Ruleset, ps []Move) MoveSet {
	var distinct []Move
	for _, p := range ps {
		seen := false
		for _, d := range distinct {
			seen = seen || d == p
		}
		if !seen {
			distinct = append(distinct, p)
		}
	}
	var winners []Move
	for _, w := range distinct {
		all := true
		for _, v := range distinct {
			if v != w && !beats(rs, w, v) {
				all = false
			}
		}
		if all {
			winners = append(winners, w)
		}
	}
	if len(winners) == 1 {
		return MoveSetOf(winners...)
	}
	return MoveSetOf(distinct...)
}

// gearRule is Gear's rule for RPSLS as its program states it.
func gearRule(rs *Ruleset, ps []Move) MoveSet {
	d := MoveSetOf(ps...)
	switch d.Count() {
	case 2, 3:
		for _, w := range d.Moves() {
			all := true
			for _, v := range d.Moves() {
				if v != w && !beats(rs, w, v) {
					all = false
				}
			}
			if all {
				return MoveSetOf(w)
			}
		}
	}
	return d
}

// referenceWeighted scores player by player instead of by mask.
func referenceWeighted(rs *Ruleset, ps []Move) (MoveSet, [MaxWeapons]int64) {
	var scores [MaxWeapons]int64
	present := MoveSetOf(ps...)
	for _, w := range present.Moves() {
		for _, p := range ps {
			if beats(rs, w, p) {
				scores[w]++
			} else if beats(rs, p, w) {
				scores[w]--
			}
		}
	}
	var out MoveSet
	for _, w := range present.Moves() {
		top := true
		for _, v := range present.Moves() {
			if scores[v] > scores[w] {
				top = false
			}
		}
		if top {
			out |= 1 << w
		}
	}
	return out, scores
}

func TestResolveBruteForce(t *testing.T) {
	t.Parallel()
	for _, rs := range Builtin().All() {
		t.Run(rs.ID(), func(t *testing.T) {
			t.Parallel()
			n := 0
			multisets(rs, 6, func(c Counts) {
				n++
				ps := players(c)
				classic := rs.Resolve(Classic, c)
				weighted := rs.Resolve(Weighted, c)
				if want := referenceClassic(rs, ps); classic.Survivors != want {
					t.Errorf("classic %v: survivors %b, want %b", c, classic.Survivors, want)
				}
				if rs.ID() == "rpsls" {
					if want := gearRule(rs, ps); classic.Survivors != want {
						t.Errorf("classic %v: survivors %b, Gear's rule says %b", c, classic.Survivors, want)
					}
				}
				want, scores := referenceWeighted(rs, ps)
				if weighted.Survivors != want || weighted.Scores != scores {
					t.Errorf("weighted %v: survivors %b scores %v, want %b %v", c, weighted.Survivors, weighted.Scores, want, scores)
				}
				for _, o := range []Outcome{classic, weighted} {
					if o.Present != MoveSetOf(ps...) {
						t.Errorf("%v: present %b", c, o.Present)
					}
					if (o.Survivors == 0) != (len(ps) == 0) || o.Survivors&^o.Present != 0 {
						t.Errorf("%v: survivors %b of present %b", c, o.Survivors, o.Present)
					}
				}
				if classic.Present.Count() == 2 && weighted.Survivors != classic.Survivors {
					t.Errorf("%v: two weapons present, weighted %b differs from classic %b", c, weighted.Survivors, classic.Survivors)
				}
			})
			if n < 80 {
				t.Fatalf("only %d multisets enumerated", n)
			}
		})
	}
}

func TestResolveIgnoresStrayCounts(t *testing.T) {
	t.Parallel()
	rs := rpsls(t)
	// Move 7 is not an RPSLS weapon and negative counts are not players.
	got := rs.Resolve(Classic, Counts{0: 2, 2: -3, 7: 5})
	if got.Present != MoveSetOf(0) || got.Survivors != MoveSetOf(0) {
		t.Errorf("got %+v, want only Rock present and surviving", got)
	}
	if got := rs.Resolve(Weighted, Counts{}); got != (Outcome{}) {
		t.Errorf("empty round: %+v", got)
	}
}

func TestResolveWeightedLargeLobby(t *testing.T) {
	t.Parallel()
	rs := rpsls(t)
	// All five present: classic would replay, weighted must pick.
	c := Counts{100, 10, 30, 20, 1}
	got := rs.Resolve(Weighted, c)
	// Rock: +30 +20 -10 -1 = 39; Paper: +100 +1 -30 -20 = 51;
	// Scissors: +10 +20 -100 -1 = -71; Lizard: +10 +1 -100 -30 = -119;
	// Spock: +100 +30 -10 -20 = 100.
	want := [MaxWeapons]int64{39, 51, -71, -119, 100}
	if got.Scores != want || got.Survivors != MoveSetOf(4) {
		t.Errorf("got %+v, want scores %v and Spock", got, want)
	}
	if classic := rs.Resolve(Classic, c); classic.Survivors != classic.Present {
		t.Errorf("classic should replay everyone, got %b", classic.Survivors)
	}
	// A perfectly balanced round ties everyone.
	if got := rs.Resolve(Weighted, Counts{1, 1, 1, 1, 1}); got.Survivors != rs.Moves() {
		t.Errorf("balanced round: survivors %b", got.Survivors)
	}
}

func TestResolveAllocs(t *testing.T) {
	rs := rpsls(t)
	c := Counts{3, 1, 4, 1, 5}
	for _, mode := range []Resolution{Classic, Weighted} {
		if n := testing.AllocsPerRun(100, func() { rs.Resolve(mode, c) }); n != 0 {
			t.Errorf("Resolve(%s) allocates %v times", mode, n)
		}
	}
}

func BenchmarkResolve(b *testing.B) {
	reg := Builtin()
	for _, id := range []string{"rpsls", "rps7"} {
		rs, _ := reg.Get(id)
		for _, mode := range []Resolution{Classic, Weighted} {
			b.Run(fmt.Sprintf("%s/%s", id, mode), func(b *testing.B) {
				b.ReportAllocs()
				c := Counts{3, 1, 4, 1, 5, 9, 2}
				for b.Loop() {
					rs.Resolve(mode, c)
				}
			})
		}
	}
}
