package engine

import "math/bits"

// MaxWeapons bounds a ruleset because a move is a single ASCII digit, the
// first byte of a reveal, exactly as in Gear's protocol.
const MaxWeapons = 10

// Move is a weapon's move digit as a number, 0..9.
type Move uint8

// Digit is the byte a reveal starts with for this move.
func (m Move) Digit() byte { return '0' + byte(m) }

// String renders the move as its digit, the form players and logs know it by.
func (m Move) String() string { return string(rune(m.Digit())) }

// MoveSet is a set of moves as a bitmask (bit m set = move m), so that events
// and SQL can carry "who survives" as one integer whatever the lobby size.
type MoveSet uint16

// MoveSetOf builds a set; moves outside 0..9 are ignored.
func MoveSetOf(moves ...Move) MoveSet {
	var s MoveSet
	for _, m := range moves {
		if m < MaxWeapons {
			s |= 1 << m
		}
	}
	return s
}

// Has reports whether m is in the set.
func (s MoveSet) Has(m Move) bool { return m < MaxWeapons && s&(1<<m) != 0 }

// Count is the number of moves in the set.
func (s MoveSet) Count() int { return bits.OnesCount16(uint16(s)) }

// Moves lists the set's moves in ascending order.
func (s MoveSet) Moves() []Move {
	out := make([]Move, 0, s.Count())
	for m := Move(0); m < MaxWeapons; m++ {
		if s.Has(m) {
			out = append(out, m)
		}
	}
	return out
}

// Counts holds the number of revealed players per move, indexed by move.
type Counts [MaxWeapons]int64
