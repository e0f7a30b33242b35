package store

import (
	"bytes"
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
}

// ErrIdempotencyConflict is the use of a key with a different request than the one it was first
// used with.
var ErrIdempotencyConflict = errors.New("idempotency key reused with a different request")

// RunIdempotent runs fn like RunLobby and, when key is not nil, stores fn's outcome (unless it
// is Transient) under the key in the same transaction. A retry with the same key and request
// gets the stored outcome back (replayed is true) and fn does not run; a concurrent duplicate
// waits for the first to commit and is then replayed. A key used with another request is
// ErrIdempotencyConflict. When fn fails, nothing is stored, so the request can be retried.
func (s *Store) RunIdempotent(ctx context.Context, lobby tournament.LobbyID, key *IdempotencyKey,
	fn func(tx tournament.Tx, now int64) (Outcome, error)) (out Outcome, replayed bool, err error) {
	err = s.run(ctx, func(t *pgTx) error {
		out, replayed = Outcome{}, false // a retried transaction starts over
		now, err := t.lockedNow(ctx, lobby)
		if err != nil {
			return err
		}
		if key != nil {
			stored, found, err := t.claimKey(ctx, key, now)
			if err != nil {
				return err
			}
			if found {
				out, replayed = stored, true
				return nil
			}
		}
		out, err = fn(t, now)
		if err != nil || key == nil {
			return err
		}
		if out.Transient {
			return execOne(ctx, t.tx, `DELETE FROM idempotency_keys
				WHERE account_id = $1 AND method = $2 AND route = $3 AND key = $4`,
				key.AccountID, key.Method, key.Route, key.Key)
		}
		return execOne(ctx, t.tx, `UPDATE idempotency_keys SET status = $5, response = $6
			WHERE account_id = $1 AND method = $2 AND route = $3 AND key = $4`,
			key.AccountID, key.Method, key.Route, key.Key, out.Status, out.Body)
	})
	return out, replayed, err
}

// claimKey inserts the key, or finds the outcome stored under it. The insert of a key that a
// transaction still in progress has inserted waits for that transaction: this is how a
// concurrent duplicate waits for the first request.
func (t *pgTx) claimKey(ctx context.Context, key *IdempotencyKey, now int64) (Outcome, bool, error) {
	// An expired key is as good as new.
	_, err := exec(ctx, t.tx, `DELETE FROM idempotency_keys
		WHERE account_id = $1 AND method = $2 AND route = $3 AND key = $4 AND created_at < $5`,
		key.AccountID, key.Method, key.Route, key.Key, now-IdempotencyTTL.Milliseconds())
	if err != nil {
		return Outcome{}, false, fmt.Errorf("expire idempotency key: %w", err)
	}
	// Status 102 marks the claim until the outcome replaces it before commit.
	tag, err := exec(ctx, t.tx, `INSERT INTO idempotency_keys (account_id, method, route, key, request_hash, status, response, created_at)
		VALUES ($1, $2, $3, $4, $5, 102, '', $6) ON CONFLICT DO NOTHING`,
		key.AccountID, key.Method, key.Route, key.Key, key.RequestHash, now)
	if err != nil {
		return Outcome{}, false, fmt.Errorf("claim idempotency key: %w", err)
	}
	if tag.RowsAffected() == 1 {
		return Outcome{}, false, nil
	}
	var out Outcome
	var hash []byte
	err = queryRow(ctx, t.tx, `SELECT request_hash, status, response FROM idempotency_keys
		WHERE account_id = $1 AND method = $2 AND route = $3 AND key = $4`,
		key.AccountID, key.Method, key.Route, key.Key).Scan(&hash, &out.Status, &out.Body)
	if err != nil {
		return Outcome{}, false, fmt.Errorf("read idempotency key: %w", err)
	}
	if !bytes.Equal(hash, key.RequestHash) {
		return Outcome{}, false, ErrIdempotencyConflict
	}
	return out, true, nil
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
