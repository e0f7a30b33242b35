package store

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// TestPruneKeepsWhatVerifiersNeed: three hours of checkpoints, one a second (every seventh never
// published: its witnesses did not answer), and idempotency keys on both sides of their window.
// Prune, in batches of at most pruneBatch rows, keeps every checkpoint of the last hour, the first
// published one of each earlier hour and the newest published one, and the keys of the last 24
// hours; the kept set is computed here from the rule, row by row.
func TestPruneKeepsWhatVerifiersNeed(t *testing.T) {
	t.Parallel()
	var clock atomic.Int64
	const hour = int64(time.Hour / time.Millisecond)
	now := 100*hour + 1234
	clock.Store(now)
	s := newStore(t, Options{Service: fastService(), Now: clock.Load})
	ctx := context.Background()
	adm := admin(t, s)

	const span = 3 * 3600
	type row struct {
		size, createdAt int64
		published       bool
	}
	var rows []row
	for i := range int64(span) {
		rows = append(rows, row{size: i + 1, createdAt: now - (span-i)*1000, published: i%7 != 3})
	}
	// The newest row is an unpublished one, as while the witnesses are asked.
	rows = append(rows, row{size: span + 1, createdAt: now, published: false})
	sizes, created, published := make([]int64, len(rows)), make([]int64, len(rows)), make([]*int64, len(rows))
	for i, r := range rows {
		sizes[i], created[i] = r.size, r.createdAt
		if r.published {
			published[i] = &created[i]
		}
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO log_checkpoints (size, root, note, created_at, published_at)
		SELECT size, decode(repeat('00', 32), 'hex'), 'note', created_at, published_at FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS r (size, created_at, published_at)`,
		sizes, created, published); err != nil {
		t.Fatal(err)
	}
	var want []int64
	newestPublished := int64(0)
	for _, r := range rows {
		if r.published {
			newestPublished = r.size
		}
	}
	firstOfPeriod := map[int64]bool{}
	for _, r := range rows {
		period := r.createdAt / hour
		first := r.published && !firstOfPeriod[period]
		if first {
			firstOfPeriod[period] = true
		}
		if r.createdAt >= now-hour || r.size >= newestPublished || first {
			want = append(want, r.size)
		}
	}

	for i, age := range []int64{25 * hour, 24*hour + 1, 24 * hour, hour} {
		if _, err := s.pool.Exec(ctx, `INSERT INTO idempotency_keys (account_id, method, route, key, request_hash, response, result_version, created_at)
			VALUES ($1, 'POST', '/r', $2, $3, '{}', 1, $4)`, string(adm.ID), string(rune('a'+i)), make([]byte, 32), now-age); err != nil {
			t.Fatal(err)
		}
	}

	first, err := s.pruneBatch(ctx, 100)
	if err != nil || first.Checkpoints != 100 || first.IdempotencyKeys != 2 {
		t.Fatalf("one batch of 100: %+v (%v), want 100 checkpoints and the 2 expired keys", first, err)
	}
	total, err := s.Prune(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var kept []int64
	if err := s.pool.QueryRow(ctx, `SELECT array_agg(size ORDER BY size) FROM log_checkpoints`).Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(kept, want) {
		t.Fatalf("kept %d checkpoints %v..., want %d %v...", len(kept), kept[:min(8, len(kept))], len(want), want[:min(8, len(want))])
	}
	if int(first.Checkpoints+total.Checkpoints) != len(rows)-len(want) {
		t.Fatalf("pruned %d+%d checkpoints, want %d", first.Checkpoints, total.Checkpoints, len(rows)-len(want))
	}
	var keys []string
	if err := s.pool.QueryRow(ctx, `SELECT array_agg(key ORDER BY key) FROM idempotency_keys`).Scan(&keys); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys, []string{"c", "d"}) {
		t.Fatalf("kept keys %v, want c and d (at most 24 hours old)", keys)
	}
	if again, err := s.Prune(ctx); err != nil || again != (Pruned{}) {
		t.Fatalf("a second Prune: %+v (%v), want nothing left to prune", again, err)
	}
}
