package store

import (
	"context"
	"crypto/ed25519"
	"slices"
	"testing"
	"time"

	"github.com/commitreveal/rps/internal/pgtest"
	"github.com/commitreveal/rps/translog"
)

// TestConcurrentRotationsEachSignTheirHandOver: two `rpsd key rotate` at once (a cron job on every
// replica) make two new keys one after the other, each handed over by the key it replaced, so a
// client that pinned the first follows to the current one. (The second rotation waited on the
// first's lock on the current key, then found no current key, signed no hand-over and retired the
// first's new key: until a restart every phone that pinned a key saw the tampering notice.)
func TestConcurrentRotationsEachSignTheirHandOver(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.New(t)
	s := New(pool, Options{Service: fastService()})
	first, err := s.CurrentSigningKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const origin = "rps.example.com/log"
	if _, err := pool.Exec(ctx, `INSERT INTO log_state (origin, size, root, updated_at) VALUES ($1, 0, sha256(''), 0)`, origin); err != nil {
		t.Fatal(err)
	}
	// Both rotations wait behind a transaction that holds the current key, so that they contend.
	hold, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hold.Rollback(ctx) }()
	if _, err := hold.Exec(ctx, `SELECT 1 FROM signing_keys WHERE retired_at IS NULL FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := s.RotateSigningKey(ctx)
			errs <- err
		}()
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var waiting int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d rotations wait, want 2", waiting)
		}
	}
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}

	rows, err := pool.Query(ctx, `SELECT rotation FROM signing_keys WHERE rotation IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	var statements [][]byte
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			t.Fatal(err)
		}
		statements = append(statements, []byte(r))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	current, err := s.CurrentSigningKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	vkey := func(k SigningKey) string {
		v, err := translog.VerifierKey(origin, k.Private.Public().(ed25519.PublicKey))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	trusted, err := translog.FollowRotations(origin, []string{vkey(first)}, statements)
	if err != nil || len(statements) != 2 || !slices.Contains(trusted, vkey(current)) {
		t.Fatalf("%d hand-overs; a client that pinned the first key trusts %v (%v), not the current one", len(statements), trusted, err)
	}
}
