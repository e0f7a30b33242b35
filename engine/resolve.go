package engine

import (
	"errors"
	"fmt"
	"math/bits"
)

// Resolution names the rule that picks a round's survivors; a game stores it
// in its config, so the names are part of the public contract.
type Resolution string

const (
	// Classic is Gear's rule, generalised to any ruleset: if one present
	// weapon beats every other present weapon, only its players survive,
	// otherwise everyone who revealed survives.
	Classic Resolution = "classic"
	// Weighted makes big lobbies finish: a weapon scores the players it
	// beats minus the players that beat it, and the top scorers survive.
	Weighted Resolution = "weighted"
)

// ErrUnknownResolution is wrapped by ParseResolution for names it does not know.
var ErrUnknownResolution = errors.New("unknown resolution")

// ParseResolution validates a resolution name taken from user input.
func ParseResolution(s string) (Resolution, error) {
	switch r := Resolution(s); r {
	case Classic, Weighted:
		return r, nil
	}
	return "", fmt.Errorf("%w %q: want %q or %q", ErrUnknownResolution, s, Classic, Weighted)
}

// Outcome is a resolved round together with what an event needs to explain it.
type Outcome struct {
	// Present holds the ruleset's moves with a positive count.
	Present MoveSet
	// Survivors holds the moves whose players go on; it is empty only when
	// Present is empty.
	Survivors MoveSet
	// Scores is, for Weighted, each present move's players beaten minus
	// players beating it; zero for absent moves and for Classic.
	Scores [MaxWeapons]int64
}

// Resolve picks the survivors of a round from the count of revealed players
// per move. Counts of zero or less, and counts of moves outside the ruleset,
// are treated as absent, so a caller's stray slot cannot create a weapon.
// A mode other than Weighted resolves as Classic; validate user input with
// ParseResolution first. Resolve does not allocate: it runs once per round
// but must stay cheap enough to run inside the round's database transaction.
func (r *Ruleset) Resolve(mode Resolution, counts Counts) Outcome {
	var out Outcome
	for m, n := range counts {
		if n > 0 {
			out.Present |= 1 << m
		}
	}
	out.Present &= r.moves
	if out.Present == 0 {
		return out
	}
	if mode == Weighted {
		var best int64
		first := true
		for p := out.Present; p != 0; p &= p - 1 {
			m := bits.TrailingZeros16(uint16(p))
			var s int64
			for q := out.Present & r.beats[m]; q != 0; q &= q - 1 {
				s += counts[bits.TrailingZeros16(uint16(q))]
			}
			for q := out.Present & r.beatenBy[m]; q != 0; q &= q - 1 {
				s -= counts[bits.TrailingZeros16(uint16(q))]
			}
			out.Scores[m] = s
			switch {
			case first || s > best:
				best, first = s, false
				out.Survivors = 1 << m
			case s == best:
				out.Survivors |= 1 << m
			}
		}
		return out
	}
	for p := out.Present; p != 0; p &= p - 1 {
		m := bits.TrailingZeros16(uint16(p))
		// The beats relation is antisymmetric, so at most one present
		// weapon can beat all the others.
		if out.Present&^(1<<m)&^r.beats[m] == 0 {
			out.Survivors = 1 << m
			return out
		}
	}
	out.Survivors = out.Present
	return out
}
