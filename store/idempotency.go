package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/commitreveal/rps/tournament"
)

// IdempotencyTTL is how long an outcome stays stored under its key.
const IdempotencyTTL = 24 * time.Hour

// IdempotencyKey is a client's Idempotency-Key, scoped to its account, method and route, with a
// hash of the request that tells a retry from a different request under the same key.
type IdempotencyKey struct {
	AccountID   tournament.AccountID
	Method      string
	Route       string
	Key         string
	RequestHash []byte
}

// Outcome is a response as stored under an idempotency key: its status and body.
type Outcome struct {
	Status int
	Body   []byte
	// Refused is the refusal the outcome reports, if any; it is not stored.
	Refused error
	// Transient outcomes (a request the game found invalid) are not stored under the key, so the
	// client can retry with a corrected request; the transaction still commits.
	Transient bool
	// Stored, when set, is stored (and replayed) instead of the outcome itself, for a response
	// that must never be kept, such as a new token.
	Stored *Outcome
}

// ErrIdempotencyConflict is the use of a key with a different request than the one it was first
// used with.
var ErrIdempotencyConflict = errors.New("idempotency key reused with a different request")

// RunIdempotent runs fn in one transaction at one instant now (Unix milliseconds), after locking
// the lobby (if lobby names one) so that its operations run one at a time and its log never goes
// back in time. The transaction commits when fn succeeds, and is retried a few times after a
// serialization failure or deadlock, so fn must have no other side effects. When key is not nil,
// fn's outcome (unless it is Transient) is stored under the key in the same transaction. A retry with the same key and request
// gets the stored outcome back (replayed is true) and fn does not run. A concurrent duplicate
// either waits for the lobby lock the first one holds, or loses the race to store the key, rolls
// back and runs again, finding the outcome stored: either way it is replayed. A key used with
// another request is ErrIdempotencyConflict. When fn fails, nothing is stored, so the request can
// be retried.
func (s *Store) RunIdempotent(ctx context.Context, lobby tournament.LobbyID, key *IdempotencyKey,
	fn func(tx tournament.Tx, now int64) (Outcome, error)) (out Outcome, replayed bool, err error) {
	err = s.run(ctx, func(t *pgTx) error {
		out, replayed = Outcome{}, false // a retried transaction starts over
		now, previous, found, err := t.begin(ctx, lobby, key)
		if err != nil || found {
			out, replayed = previous, found
			return err
		}
		expired := now - IdempotencyTTL.Milliseconds()
		out, err = fn(t, now)
		if err != nil || key == nil || out.Transient {
			return err
		}
		stored := out
		if out.Stored != nil {
			stored = *out.Stored
		}
		// Stored once, after the operation: replacing only an expired key, so a duplicate that
		// stored it first makes this transaction roll back and run again, to be replayed.
		t.tx.later(`INSERT INTO idempotency_keys (account_id, method, route, key, request_hash, status, response, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT (account_id, method, route, key) DO UPDATE
			SET request_hash = excluded.request_hash, status = excluded.status, response = excluded.response, created_at = excluded.created_at
			WHERE idempotency_keys.created_at < $9`,
			key.AccountID, key.Method, key.Route, key.Key, key.RequestHash, stored.Status, stored.Body, now, expired)
		// Sent with the operation's held-back writes, in one round trip.
		tag, err := t.tx.flush(ctx)
		if err != nil {
			return fmt.Errorf("store idempotency key: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("%w: idempotency key stored by a concurrent duplicate", ErrRetry)
		}
		return nil
	})
	return out, replayed, err
}

// purgeIdempotencyKeys deletes the keys older than IdempotencyTTL.
func (s *Store) purgeIdempotencyKeys(ctx context.Context) error {
	return s.run(ctx, func(t *pgTx) error {
		now, err := t.now(ctx)
		if err != nil {
			return err
		}
		_, err = exec(ctx, t.tx, `DELETE FROM idempotency_keys WHERE created_at < $1`, now-IdempotencyTTL.Milliseconds())
		return err
	})
}
