package memstore_test

import (
	"context"
	"testing"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/tournament"
	"github.com/commitreveal/rps/tournament/memstore"
	"github.com/commitreveal/rps/tournament/tournamenttest"
)

// TestReviewQuickJoinKeepsItsBetAndRuleset: a quick join picks its lobbies by the current game's
// bet and ruleset in one read, then registers in one of them in another transaction. Meanwhile
// the game may end and the lobby open its next one with another config (PUT next-config, then a
// stop): the registration must not land in it. The player asked (and signed) for its bet and
// ruleset, and a signed quick_join whose event sits in a game of another bet no longer verifies.
// The join is passed over (a tentative refusal), and nothing changes.
func TestReviewQuickJoinKeepsItsBetAndRuleset(t *testing.T) {
	ctx := context.Background()
	svc := tournament.NewService(tournament.Options{Rules: engine.Builtin(), MinTimeoutMs: tournamenttest.Timeout,
		NewSalt: tournamenttest.NewSalt, NewID: tournamenttest.NewID})
	s := memstore.New()
	admin := tournament.Actor{ID: tournament.AccountID(tournamenttest.NewID()), Role: tournament.RoleAdmin}
	p := tournament.Actor{ID: tournament.AccountID(tournamenttest.NewID()), Role: tournament.RolePlayer}
	if err := s.CreateAccount(ctx, admin.ID, "admin", admin.Role, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateAccount(ctx, p.ID, "p", p.Role, 5000); err != nil {
		t.Fatal(err)
	}
	cfg := tournament.DefaultConfig()
	cfg.BetSize = 1000 // the lobby's game now; the quick join read one of bet 100
	var lobby tournament.LobbyID
	if err := s.Do(ctx, func(tx tournament.Tx) (err error) {
		lobby, err = svc.CreateLobby(ctx, tx, tournamenttest.Start, admin, "l", cfg)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		bet     int64
		ruleset string
	}{{"another bet", 100, ""}, {"another ruleset", 1000, "rps"}} {
		var r tournament.Result
		if err := s.Do(ctx, func(tx tournament.Tx) (err error) {
			r, err = tournament.Join{LobbyID: lobby, BetSize: c.bet, Ruleset: c.ruleset}.Apply(ctx, svc, tx, tournamenttest.Start+1, p)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if r.Refusal == nil || !r.Refusal.Tentative() {
			t.Fatalf("%s: a quick join for bet %d, ruleset %q registered in a game of bet 1000, ruleset %s: %+v", c.name, c.bet, c.ruleset, cfg.Ruleset, r)
		}
		if balance, _ := s.Balance(ctx, p.ID); balance != 5000 {
			t.Fatalf("%s: balance %d, want 5000 untouched", c.name, balance)
		}
	}
	var r tournament.Result
	if err := s.Do(ctx, func(tx tournament.Tx) (err error) {
		r, err = tournament.Join{LobbyID: lobby, BetSize: 1000, Ruleset: cfg.Ruleset}.Apply(ctx, svc, tx, tournamenttest.Start+1, p)
		return err
	}); err != nil || r.Refusal != nil {
		t.Fatalf("a quick join that fits: %v %+v", err, r.Refusal)
	}
}
