package store

import (
	"context"
	"fmt"
	"time"
)

// Retention: what would grow without bound is pruned, a bounded batch per statement, so that a
// backlog (a database that ran for months before this) never holds locks or bloats one
// transaction. Kept forever: events, the ledger (postings), the audit log, accounts and games,
// and the log's tiles, ranges and heads (every proof is computed from them). Pruned:
//   - checkpoints (one a second while players play): every checkpoint of the last
//     CheckpointsKeptWhole, and before that the first published one of each CheckpointPeriod,
//     and always the newest published one (what /checkpoint serves and witnesses cosign next
//     from). A verifier needs no stored checkpoint to check another: consistency and inclusion
//     proofs are computed from the tiles, which are all kept.
//   - idempotency keys past IdempotencyTTL (a replay after that runs the request again).
//   - heartbeats: each beat already forgets the rows of replicas silent for beatRetention.
const (
	CheckpointsKeptWhole = time.Hour
	CheckpointPeriod     = time.Hour
	// pruneBatch is how many rows one statement deletes at most.
	pruneBatch = 5000
)

// Pruned counts the rows a Prune deleted.
type Pruned struct {
	Checkpoints, IdempotencyKeys int64
}

// Prune deletes what the retention policy no longer keeps, batch after batch until none is left
// (or ctx ends); each batch is a statement (and a transaction) of its own.
func (s *Store) Prune(ctx context.Context) (Pruned, error) {
	var total Pruned
	for {
		n, err := s.pruneBatch(ctx, pruneBatch)
		total.Checkpoints += n.Checkpoints
		total.IdempotencyKeys += n.IdempotencyKeys
		if err != nil || (n.Checkpoints < pruneBatch && n.IdempotencyKeys < pruneBatch) {
			return total, err
		}
	}
}

// pruneBatch deletes at most limit checkpoints and limit idempotency keys that the policy no
// longer keeps.
func (s *Store) pruneBatch(ctx context.Context, limit int) (Pruned, error) {
	var n Pruned
	now, err := s.nowOn(ctx, s.pool)
	if err != nil {
		return n, err
	}
	// A checkpoint is the first published of its period when the published one just below it
	// (found through the partial index on published sizes) was created before the period
	// began. Kept ones stay at the bottom of the scan: a few a day, never a backlog.
	tag, err := exec(ctx, s.pool, `DELETE FROM log_checkpoints WHERE size IN (
		SELECT c.size FROM log_checkpoints c
		WHERE c.created_at < $1
			AND c.size < (SELECT max(size) FROM log_checkpoints WHERE published_at IS NOT NULL)
			AND (c.published_at IS NULL OR coalesce((SELECT d.created_at FROM log_checkpoints d
				WHERE d.published_at IS NOT NULL AND d.size < c.size ORDER BY d.size DESC LIMIT 1), -1)
				>= c.created_at - c.created_at % $2)
		ORDER BY c.size LIMIT $3)`,
		now-CheckpointsKeptWhole.Milliseconds(), CheckpointPeriod.Milliseconds(), limit)
	if err != nil {
		return n, fmt.Errorf("prune checkpoints: %w", err)
	}
	n.Checkpoints = tag.RowsAffected()
	tag, err = exec(ctx, s.pool, `DELETE FROM idempotency_keys WHERE ctid IN (
		SELECT ctid FROM idempotency_keys WHERE created_at < $1 ORDER BY created_at LIMIT $2)`,
		now-IdempotencyTTL.Milliseconds(), limit)
	if err != nil {
		return n, fmt.Errorf("prune idempotency keys: %w", err)
	}
	n.IdempotencyKeys = tag.RowsAffected()
	return n, nil
}
