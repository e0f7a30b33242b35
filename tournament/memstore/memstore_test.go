package memstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/tournament"
	"github.com/commitreveal/rps/tournament/memstore"
	"github.com/commitreveal/rps/tournament/tournamenttest"
)

// TestSuite runs the shared scenario and property suite against the in-memory store.
func TestSuite(t *testing.T) {
	tournamenttest.Run(t, func(t *testing.T) tournamenttest.Backend { return memstore.New() })
}

// bigGame plays one game of n players who pick uniformly random moves (from a seeded source) until
// it ends or maxRounds rounds have been played, and returns the number of rounds and whether the
// game finished.
func bigGame(t *testing.T, n int, res engine.Resolution, seed uint64, maxRounds int) (int, bool) {
	t.Helper()
	ctx := context.Background()
	s := memstore.New()
	svc := tournament.NewService(tournament.Options{Rules: engine.Builtin(), MinTimeoutMs: tournamenttest.Timeout, NewID: tournamenttest.NewID, NewSalt: tournamenttest.NewSalt})
	now := tournamenttest.Start
	const funds = 100
	admin := tournament.Actor{ID: tournament.AccountID(tournamenttest.NewID()), Role: tournament.RoleAdmin}
	if err := s.CreateAccount(ctx, admin.ID, "admin", admin.Role, 0); err != nil {
		t.Fatal(err)
	}
	players := make([]tournament.Actor, n)
	accounts := make([]tournament.AccountID, n)
	for i := range players {
		players[i] = tournament.Actor{ID: tournament.AccountID(tournamenttest.NewID()), Role: tournament.RolePlayer}
		accounts[i] = players[i].ID
		if err := s.CreateAccount(ctx, players[i].ID, fmt.Sprintf("p%d", i), tournament.RolePlayer, funds); err != nil {
			t.Fatal(err)
		}
	}
	cfg := tournament.DefaultConfig()
	cfg.BetSize = 10
	cfg.PlayersCountLimit = n
	cfg.Resolution = res
	var lobby tournament.LobbyID
	do := func(fn func(tx tournament.Tx) error) {
		t.Helper()
		if err := s.Do(ctx, fn); err != nil {
			t.Fatal(err)
		}
	}
	do(func(tx tournament.Tx) (err error) {
		lobby, err = svc.CreateLobby(ctx, tx, now, admin, "big", cfg)
		return err
	})
	l, _ := s.Lobby(ctx, lobby)
	game := l.GameID
	for _, p := range players {
		do(func(tx tournament.Tx) error { return svc.Register(ctx, tx, now, p, lobby) })
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	rounds := 0
	for {
		g, err := s.Game(ctx, game)
		if err != nil {
			t.Fatal(err)
		}
		if !g.Stage.Open() || rounds == maxRounds {
			tournamenttest.VerifyLedger(t, ctx, s, accounts, funds*int64(n), []tournament.LobbyID{lobby})
			if rounds <= 20 {
				tournamenttest.VerifyLobby(t, ctx, s, lobby)
			}
			return rounds, g.Stage == tournament.StageFinished
		}
		if g.Stage != tournament.StageMoves {
			t.Fatalf("round %d: stage %s", g.Round, g.Stage)
		}
		rounds++
		ps, err := s.Players(ctx, game)
		if err != nil {
			t.Fatal(err)
		}
		var reveals []string
		var active []tournament.Actor
		for i, p := range ps {
			if !p.Active {
				continue
			}
			reveal := fmt.Sprintf("%dpw-%d-%d", rng.IntN(5), rounds, i)
			reveals = append(reveals, reveal)
			active = append(active, tournament.Actor{ID: p.AccountID, Role: tournament.RolePlayer})
		}
		now += 10
		for i, a := range active {
			do(func(tx tournament.Tx) error { return svc.Commit(ctx, tx, now, a, lobby, engine.Commit(reveals[i])) })
		}
		for i, a := range active {
			do(func(tx tournament.Tx) error { return svc.Reveal(ctx, tx, now, a, lobby, reveals[i]) })
		}
		t.Logf("%s round %d: %d players", res, rounds, len(active))
	}
}

// TestWeightedThousandPlayers: weighted resolution ends a 1,000-player game of random moves in a
// handful of rounds.
func TestWeightedThousandPlayers(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		rounds, finished := bigGame(t, 1000, engine.Weighted, seed, 50)
		t.Logf("weighted, 1000 players, seed %d: finished=%v in %d rounds", seed, finished, rounds)
		if !finished || rounds > 15 {
			t.Errorf("seed %d: finished=%v after %d rounds, want a winner within 15", seed, finished, rounds)
		}
	}
}

// TestClassicThousandPlayers shows why weighted exists: with classic resolution, 1,000 random
// players keep showing all five weapons, so every round is replayed.
func TestClassicThousandPlayers(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	rounds, finished := bigGame(t, 1000, engine.Classic, 1, 10)
	t.Logf("classic, 1000 players: finished=%v after %d rounds", finished, rounds)
	if finished {
		t.Errorf("classic finished a 1000-player random game in %d rounds", rounds)
	}
}
