// Package strategy holds the bots' ways of picking a move: random, smart and script. Every
// strategy is deterministic for a given seed, so that a bot run can be repeated; only the
// passwords (chosen by the bot, not here) are truly random.
package strategy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	"github.com/commitreveal/rps/engine"
)

// Names of the strategies, as given to New and on the command line.
const (
	Random = "random"
	Smart  = "smart"
	Script = "script"
)

// Round is what a strategy knows when it picks a move.
type Round struct {
	// Number is the round within the game (1, 2, ...).
	Number int
	// Players is the number of players in the round, the bot included.
	Players int
	// Rules and Resolution are the game's.
	Rules      *engine.Ruleset
	Resolution engine.Resolution
}

// Strategy picks a bot's move for each round it plays.
type Strategy interface {
	// Name is the strategy's name (Random, Smart or Script).
	Name() string
	// Choose picks a move of r.Rules for round r.
	Choose(r Round) engine.Move
	// Observe tells the strategy how a round of the lobby ended: the number of revealed players per
	// move, and the bot's own move when it revealed in that round (so it can tell itself from the
	// others).
	Observe(counts engine.Counts, own engine.Move, revealed bool)
}

// New returns the named strategy, seeded. script is the move list of a Script strategy and is
// ignored by the others.
func New(name string, seed uint64, script []engine.Move) (Strategy, error) {
	switch name {
	case Random:
		return &random{rng: newRand(seed)}, nil
	case Smart:
		return &smart{rng: newRand(seed)}, nil
	case Script:
		if len(script) == 0 {
			return nil, errors.New("script strategy: the script has no moves")
		}
		return &scripted{moves: script}, nil
	}
	return nil, fmt.Errorf("unknown strategy %q (want %s, %s or %s)", name, Random, Smart, Script)
}

func newRand(seed uint64) *rand.Rand {
	// The second PCG word is a fixed odd constant so that seeds 0, 1, 2 ... give unrelated streams.
	return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
}

// random plays uniformly over the ruleset's weapons.
type random struct{ rng *rand.Rand }

func (s *random) Name() string { return Random }

func (s *random) Choose(r Round) engine.Move {
	moves := r.Rules.Moves().Moves()
	return moves[s.rng.IntN(len(moves))]
}

func (s *random) Observe(engine.Counts, engine.Move, bool) {}

// scripted plays a fixed list of moves, one per round, and starts again at the end.
type scripted struct {
	moves []engine.Move
	next  int
}

func (s *scripted) Name() string { return Script }

func (s *scripted) Choose(Round) engine.Move {
	m := s.moves[s.next%len(s.moves)]
	s.next++
	return m
}

func (s *scripted) Observe(engine.Counts, engine.Move, bool) {}

// ParseScript reads a script: moves separated by white space, commas or new lines, each a move
// digit or a weapon name of rules (in any case); '#' starts a comment that runs to the end of the
// line. Every move must belong to rules, so a typo fails before the first game, not mid-game.
func ParseScript(r io.Reader, rules *engine.Ruleset) ([]engine.Move, error) {
	byName := map[string]engine.Move{}
	for _, w := range rules.Weapons() {
		byName[strings.ToLower(w.Name)] = w.Move
		byName[w.Move.String()] = w.Move
	}
	var moves []engine.Move
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		for _, tok := range strings.FieldsFunc(text, func(c rune) bool { return c == ',' || c == ' ' || c == '\t' }) {
			m, ok := byName[strings.ToLower(tok)]
			if !ok {
				return nil, fmt.Errorf("line %d: %q is not a move of ruleset %s", line, tok, rules.ID())
			}
			moves = append(moves, m)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read script: %w", err)
	}
	if len(moves) == 0 {
		return nil, errors.New("the script has no moves")
	}
	return moves, nil
}
