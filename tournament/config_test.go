package tournament_test

import (
	"math"
	"testing"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/tournament"
)

// TestDefaultMaxRoundsSpareFairGames pins how DefaultMaxRounds was chosen: a fair game (every
// player picks a move uniformly at random) of up to maxFairPlayers players needs more than
// DefaultMaxRounds rounds with a probability below 1e-9, under every shipped ruleset and both
// resolutions. The probability is exact: the number of players still in is a Markov chain whose
// step is the engine's own Resolve over every way the players' moves can fall.
func TestDefaultMaxRoundsSpareFairGames(t *testing.T) {
	const maxFairPlayers, bound = 6, 1e-9
	for _, rs := range engine.Builtin().All() {
		for _, res := range []engine.Resolution{engine.Classic, engine.Weighted} {
			for n := 2; n <= maxFairPlayers; n++ {
				p := pastRounds(rs, res, n, tournament.DefaultMaxRounds)
				t.Logf("%s %s, %d players: P(more than %d rounds) = %.3g", rs.ID(), res, n, tournament.DefaultMaxRounds, p)
				if p >= bound {
					t.Errorf("%s %s, %d players: a fair game needs more than %d rounds with probability %.3g, want < %g",
						rs.ID(), res, n, tournament.DefaultMaxRounds, p, bound)
				}
			}
		}
	}
	if c := tournament.DefaultConfig(); c.MaxRounds != tournament.DefaultMaxRounds {
		t.Errorf("DefaultConfig().MaxRounds = %d, want %d", c.MaxRounds, tournament.DefaultMaxRounds)
	}
}

// pastRounds is the probability that a fair game of n players under rs and res has not ended
// after rounds rounds.
func pastRounds(rs *engine.Ruleset, res engine.Resolution, n, rounds int) float64 {
	moves := rs.Moves().Moves()
	// step[m][s]: the probability that a round of m players leaves s of them.
	step := make([][]float64, n+1)
	for m := 2; m <= n; m++ {
		step[m] = make([]float64, m+1)
		var counts engine.Counts
		var fall func(i, left int, ways float64)
		fall = func(i, left int, ways float64) {
			if i == len(moves)-1 {
				counts[moves[i]] = int64(left)
				out := rs.Resolve(res, counts)
				survivors := 0
				for _, s := range out.Survivors.Moves() {
					survivors += int(counts[s])
				}
				step[m][survivors] += ways / math.Pow(float64(len(moves)), float64(m))
				return
			}
			for c := 0; c <= left; c++ {
				counts[moves[i]] = int64(c)
				fall(i+1, left-c, ways*binomial(left, c))
			}
		}
		fall(0, m, 1)
	}
	dist := make([]float64, n+1)
	dist[n] = 1
	for range rounds {
		next := make([]float64, n+1)
		for m := 2; m <= n; m++ {
			for s, q := range step[m] {
				next[s] += dist[m] * q
			}
		}
		dist = next
	}
	var open float64
	for m := 2; m <= n; m++ {
		open += dist[m]
	}
	return open
}

func binomial(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}
