package strategy

import (
	"math"
	"math/rand/v2"

	"github.com/commitreveal/rps/engine"
)

// smart estimates what the others will play from the moves they revealed in the lobby's earlier
// rounds and picks the weapon with the best expected outcome under the game's resolution rule.
//
// The outcome of a round for a weapon w is its share of the survivors: 1/S if the bot survives
// with S players in all, 0 if it is out. Maximising the expected share prefers surviving, and
// among surviving moves prefers those that leave fewer rivals, which is what wins the pot.
type smart struct {
	rng *rand.Rand
	// seen counts the others' revealed moves so far, by move.
	seen [engine.MaxWeapons]float64
}

// Monte Carlo budget: sampledOpponents or fewer opponents are drawn one by one, samples times;
// larger rounds use the expected counts instead, which the law of large numbers makes accurate.
const (
	samples          = 256
	sampledOpponents = 64
)

func (s *smart) Name() string { return Smart }

func (s *smart) Observe(counts engine.Counts, own engine.Move, revealed bool) {
	for m, n := range counts {
		if n > 0 {
			s.seen[m] += float64(n)
		}
	}
	if revealed && s.seen[own] > 0 {
		s.seen[own]--
	}
}

// distribution is the others' estimated probability per move of rules: the empirical frequency
// with one pseudo-count per weapon, so that the first round is uniform and no move is ever
// treated as impossible.
func (s *smart) distribution(rules *engine.Ruleset) (moves []engine.Move, p []float64) {
	moves = rules.Moves().Moves()
	p = make([]float64, len(moves))
	total := 0.0
	for i, m := range moves {
		p[i] = s.seen[m] + 1
		total += p[i]
	}
	for i := range p {
		p[i] /= total
	}
	return moves, p
}

func (s *smart) Choose(r Round) engine.Move {
	moves, p := s.distribution(r.Rules)
	opponents := max(r.Players-1, 1)
	value := make([]float64, len(moves))
	if opponents <= sampledOpponents {
		// The same samples score every candidate (common random numbers), so that the comparison
		// between candidates is not drowned in sampling noise.
		for range samples {
			var counts engine.Counts
			for range opponents {
				counts[moves[pick(s.rng, p)]]++
			}
			for i, m := range moves {
				value[i] += share(r, counts, m)
			}
		}
	} else {
		counts := expectedCounts(moves, p, opponents)
		for i, m := range moves {
			value[i] = share(r, counts, m)
		}
	}
	best, ties := math.Inf(-1), []engine.Move(nil)
	for i, v := range value {
		switch {
		case v > best+1e-12:
			best, ties = v, []engine.Move{moves[i]}
		case math.Abs(v-best) <= 1e-12:
			ties = append(ties, moves[i])
		}
	}
	return ties[s.rng.IntN(len(ties))]
}

// share is the bot's share of the survivors when it plays m against the others' counts.
func share(r Round, others engine.Counts, m engine.Move) float64 {
	counts := others
	counts[m]++
	out := r.Rules.Resolve(r.Resolution, counts)
	if !out.Survivors.Has(m) {
		return 0
	}
	var survivors int64
	for _, sm := range out.Survivors.Moves() {
		survivors += counts[sm]
	}
	return 1 / float64(survivors)
}

// pick draws an index from the distribution p.
func pick(rng *rand.Rand, p []float64) int {
	x := rng.Float64()
	for i, q := range p {
		if x < q {
			return i
		}
		x -= q
	}
	return len(p) - 1
}

// expectedCounts spreads n players over moves in proportion to p, rounding by largest remainder
// so that the counts add up to n.
func expectedCounts(moves []engine.Move, p []float64, n int) engine.Counts {
	var counts engine.Counts
	rest := n
	frac := make([]float64, len(moves))
	for i, m := range moves {
		x := p[i] * float64(n)
		counts[m] = int64(x)
		frac[i] = x - math.Floor(x)
		rest -= int(counts[m])
	}
	for ; rest > 0; rest-- {
		top := 0
		for i := range frac {
			if frac[i] > frac[top] {
				top = i
			}
		}
		counts[moves[top]]++
		frac[top] = -1
	}
	return counts
}
