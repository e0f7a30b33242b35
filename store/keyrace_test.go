package store

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/commitreveal/rps/tournament"
)

// TestRetireOnAnotherReplicaOrdersWithActions: a player retires a lost phone's key on one replica
// while, on another, whoever holds the phone acts with it. The retirement took its instant when
// its transaction began and the account's lock after; the action read the key active (the
// retirement not yet committed) at a later instant and committed too. The log then had an action
// signed by a key retired before it, and every verifier failed an honest server. Now one of them
// waits for the other: the action commits before the retirement's instant, or reads the key
// retired and is refused.
//
// Both are made to wait on the account's row, held by another transaction: the retirement
// first, then the action; the row is let go once both wait.
func TestRetireOnAnotherReplicaOrdersWithActions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, lobby := batchLobby(t, nil, 60_000)
	other := New(s.pool, Options{Service: fastService()}) // a second replica
	t.Cleanup(other.Close)
	p, lost, kept := phoneLost(t, s)
	game := lobbyGame(t, s, lobby)

	holder, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Rollback(ctx) }()
	if _, err := holder.Exec(ctx, `SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, string(p.ID)); err != nil {
		t.Fatal(err)
	}
	waiting := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			var got int
			if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got >= n {
				return
			}
		}
		t.Fatalf("fewer than %d transactions wait for the account's row", n)
	}

	var wg sync.WaitGroup
	var retired, registered Answer
	var retireErr, registerErr error
	wg.Go(func() {
		retired, retireErr = other.RetireKey(ctx, p.ID, lost.id, kept.sig("retire"), keyIdem(p.ID, "/me/keys/"+lost.id, "retire"), RequestRef{})
	})
	waiting(1)
	time.Sleep(20 * time.Millisecond) // the action's instant comes later than any the retirement read
	wg.Go(func() { registered, registerErr = registerSignedBy(s, p, lost, lobby, game) })
	waiting(2)
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	if code := keyRefusal(t, retired, retireErr); code != "" {
		t.Fatalf("retire: %s", code)
	}
	code, err := answerCode(registered, registerErr)
	if err != nil {
		t.Fatal(err)
	}
	kl := checkKeyLog(t, s, p.ID)
	retiredAt := kl.Events[len(kl.Events)-1].At
	switch {
	case code == tournament.CodeBadSignature:
		// The action came after the retirement: refused, and nothing moved.
		if a, err := s.Account(ctx, p.ID); err != nil || a.Balance != 100 {
			t.Fatalf("balance %d (%v), want 100 untouched", a.Balance, err)
		}
	case code != "":
		t.Fatalf("the action: refused %s, want taken before the retirement or refused bad_signature", code)
	case registered.Result.At > retiredAt: // a key retired at the instant of an action was active for it (verifiers agree)
		t.Fatalf("the action signed by key %s was taken at %s, the key retired at %s: the log has an action signed by a retired key",
			lost.id, tournament.FormatTime(registered.Result.At), tournament.FormatTime(retiredAt))
	}
}
