package store

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/commitreveal/rps/tournament"
)

// TestExpiredKeyIsReplaced: an outcome is replayed under its key until it expires; then the key
// is free for any request, whose outcome replaces the expired one (the begin read saw it expired,
// so the transaction deletes it before it inserts the new one).
func TestExpiredKeyIsReplaced(t *testing.T) {
	t.Parallel()
	var clock atomic.Int64
	s, adm, lobby := batchLobby(t, &clock, 1000)
	run := func(request string) keyedResult {
		var r keyedResult
		keyed(t, s, lobby, key(adm, "k", request), &r, func(context.Context, tournament.Tx, int64) error { return nil })()
		return r
	}
	check := func(step string, r keyedResult, wantBody string, wantReplayed bool) {
		t.Helper()
		if r.err != nil || string(r.out.Body) != wantBody || r.replayed != wantReplayed {
			t.Fatalf("%s: got %q replayed=%v err=%v, want %q replayed=%v", step, r.out.Body, r.replayed, r.err, wantBody, wantReplayed)
		}
	}
	first := fmt.Sprintf("ok %d", clock.Load())
	check("first", run("a"), first, false)
	check("retry", run("a"), first, true)
	if r := run("b"); !errors.Is(r.err, ErrIdempotencyConflict) {
		t.Fatalf("another request under a live key: err %v, want a conflict", r.err)
	}
	clock.Add(IdempotencyTTL.Milliseconds() + 1)
	second := fmt.Sprintf("ok %d", clock.Load())
	check("after expiry", run("b"), second, false)
	check("retry after expiry", run("b"), second, true)
	var stored int
	if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM idempotency_keys WHERE key = 'k'`).Scan(&stored); err != nil || stored != 1 {
		t.Fatalf("rows under the key: %d (%v), want 1", stored, err)
	}
}
