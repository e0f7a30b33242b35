package memstore_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/tournament"
	"github.com/commitreveal/rps/tournament/memstore"
	"github.com/commitreveal/rps/tournament/tournamenttest"
)

// TestClone: a copy, whole or forgetting the past, goes on exactly as the original (the same
// events, hash for hash, the same balances and ledger), and changing it leaves the original as
// it was.
func TestClone(t *testing.T) {
	ctx := context.Background()
	// Game ids from a counter each store's run resets, so that the runs' logs can agree.
	ids := 0
	svc := tournament.NewService(tournament.Options{Rules: engine.Builtin(), MinTimeoutMs: tournamenttest.Timeout, NewSalt: tournamenttest.NewSalt, NewID: func() string {
		ids++
		return fmt.Sprintf("00000000-0000-4000-9000-%012d", ids)
	}})
	s := memstore.New()
	admin := tournament.Actor{ID: tournament.AccountID(tournamenttest.NewID()), Role: tournament.RoleAdmin}
	a := tournament.Actor{ID: tournament.AccountID(tournamenttest.NewID()), Role: tournament.RolePlayer}
	b := tournament.Actor{ID: tournament.AccountID(tournamenttest.NewID()), Role: tournament.RolePlayer}
	for _, acct := range []tournament.Actor{admin, a, b} {
		funds := int64(1000)
		if acct == admin {
			funds = 0
		}
		if err := s.CreateAccount(ctx, acct.ID, "x", acct.Role, funds); err != nil {
			t.Fatal(err)
		}
	}
	cfg := tournament.DefaultConfig()
	cfg.BetSize = 10
	var lobby tournament.LobbyID
	now := tournamenttest.Start
	must := func(s *memstore.Store, fn func(tx tournament.Tx) error) {
		t.Helper()
		if err := s.Do(ctx, fn); err != nil {
			t.Fatal(err)
		}
	}
	must(s, func(tx tournament.Tx) (err error) {
		lobby, err = svc.CreateLobby(ctx, tx, now, admin, "clone", cfg)
		return err
	})
	// play has both players win a game in turn, in store x.
	play := func(x *memstore.Store, game int) {
		now += 10
		must(x, func(tx tournament.Tx) error { return svc.Register(ctx, tx, now, a, lobby) })
		must(x, func(tx tournament.Tx) error { return svc.Register(ctx, tx, now, b, lobby) })
		ra, rb := fmt.Sprintf("0a%d", game), fmt.Sprintf("%db%d", 1+game%2, game)
		must(x, func(tx tournament.Tx) error { return svc.Commit(ctx, tx, now, a, lobby, engine.Commit(ra)) })
		must(x, func(tx tournament.Tx) error { return svc.Commit(ctx, tx, now, b, lobby, engine.Commit(rb)) })
		must(x, func(tx tournament.Tx) error { return svc.Reveal(ctx, tx, now, a, lobby, ra) })
		must(x, func(tx tournament.Tx) error { return svc.Reveal(ctx, tx, now, b, lobby, rb) })
	}
	for game := range 3 {
		play(s, game)
	}
	// Clone in the middle of a round: the current game's rows must come along, its count of
	// leaves too.
	now += 10
	must(s, func(tx tournament.Tx) error { return svc.Register(ctx, tx, now, a, lobby) })
	must(s, func(tx tournament.Tx) error { return svc.Leave(ctx, tx, now, a, lobby) })
	must(s, func(tx tournament.Tx) error { return svc.Register(ctx, tx, now, a, lobby) })
	must(s, func(tx tournament.Tx) error { return svc.Register(ctx, tx, now, b, lobby) })
	must(s, func(tx tournament.Tx) error { return svc.Commit(ctx, tx, now, a, lobby, engine.Commit("0a3")) })
	before, _ := s.Events(ctx, lobby)

	whole, compact := s.Clone(false), s.Clone(true)
	if got, _ := compact.Events(ctx, lobby); len(got) != 1 || got[0].Hash != before[len(before)-1].Hash {
		t.Fatalf("the compact copy keeps %d events, want the last one", len(got))
	}
	start, startIDs := now, ids
	for _, x := range []*memstore.Store{s, whole, compact} {
		now, ids = start, startIDs
		must(x, func(tx tournament.Tx) error { return svc.Commit(ctx, tx, now, b, lobby, engine.Commit("1b3")) })
		must(x, func(tx tournament.Tx) error { return svc.Reveal(ctx, tx, now, a, lobby, "0a3") })
		must(x, func(tx tournament.Tx) error { return svc.Reveal(ctx, tx, now, b, lobby, "1b3") })
		play(x, 4)
		play(x, 5)
	}
	want, _ := s.Events(ctx, lobby)
	wantLedger, _ := s.Ledger(ctx)
	for name, x := range map[string]*memstore.Store{"whole": whole, "compact": compact} {
		got, _ := x.Events(ctx, lobby)
		if last, wantLast := got[len(got)-1], want[len(want)-1]; last.Seq != wantLast.Seq || last.Hash != wantLast.Hash {
			t.Errorf("%s copy: last event %d %x, the original's %d %x", name, last.Seq, last.Hash, wantLast.Seq, wantLast.Hash)
		}
		if ledger, _ := x.Ledger(ctx); ledger != wantLedger || !ledger.OK() {
			t.Errorf("%s copy: ledger %+v, the original's %+v", name, ledger, wantLedger)
		}
		for _, p := range []tournament.Actor{a, b} {
			got, _ := x.Balance(ctx, p.ID)
			want, _ := s.Balance(ctx, p.ID)
			if got != want {
				t.Errorf("%s copy: balance %d, the original's %d", name, got, want)
			}
		}
	}
	if n := len(want); n <= len(before) {
		t.Fatalf("the original did not go on: %d events before, %d after", len(before), n)
	}
	// The copies went on in their own memory: a fresh copy of the state before is unchanged.
	if got, _ := whole.Clone(false).Events(ctx, lobby); len(got) != len(want) {
		t.Errorf("whole copy has %d events, want %d", len(got), len(want))
	}
}

// TestCloneCopiesEveryField: Clone copies the store's fields one by one; a field added to Store
// must be added to Clone (and here).
func TestCloneCopiesEveryField(t *testing.T) {
	cloned := []string{"mu", "accounts", "lobbies", "games", "players", "leaves", "moves", "rulesets", "events", "entries", "keys"}
	typ := reflect.TypeOf(memstore.Store{})
	for i := range typ.NumField() {
		if name := typ.Field(i).Name; !slices.Contains(cloned, name) {
			t.Errorf("Store has a field %s that Clone does not copy", name)
		}
	}
}

// TestCloneKeepsLeaves: a compact copy remembers how often each player left the current game,
// so it refuses a rejoin past the limit as the original does.
func TestCloneKeepsLeaves(t *testing.T) {
	ctx := context.Background()
	svc := tournament.NewService(tournament.Options{Rules: engine.Builtin(), MinTimeoutMs: tournamenttest.Timeout, NewID: tournamenttest.NewID, NewSalt: tournamenttest.NewSalt})
	s := memstore.New()
	admin := tournament.Actor{ID: tournament.AccountID(tournamenttest.NewID()), Role: tournament.RoleAdmin}
	a := tournament.Actor{ID: tournament.AccountID(tournamenttest.NewID()), Role: tournament.RolePlayer}
	if err := s.CreateAccount(ctx, admin.ID, "admin", admin.Role, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateAccount(ctx, a.ID, "a", a.Role, 100); err != nil {
		t.Fatal(err)
	}
	now := tournamenttest.Start
	var lobby tournament.LobbyID
	if err := s.Do(ctx, func(tx tournament.Tx) (err error) {
		lobby, err = svc.CreateLobby(ctx, tx, now, admin, "leaves", tournament.DefaultConfig())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	register := func(x *memstore.Store) error {
		return x.Do(ctx, func(tx tournament.Tx) error { return svc.Register(ctx, tx, now, a, lobby) })
	}
	var refusal error
	for refusal == nil {
		if refusal = register(s); refusal == nil {
			if err := s.Do(ctx, func(tx tournament.Tx) error { return svc.Leave(ctx, tx, now, a, lobby) }); err != nil {
				t.Fatal(err)
			}
		}
	}
	want, ok := tournament.IsRefusal(refusal)
	if !ok || want.Code != tournament.CodeRejoinLimit {
		t.Fatalf("rejoining again and again: %v, want rejoin_limit", refusal)
	}
	if got, _ := tournament.IsRefusal(register(s.Clone(true))); got == nil || got.Code != want.Code {
		t.Errorf("the compact copy answers a rejoin past the limit with %v, want %s", got, want.Code)
	}
}
