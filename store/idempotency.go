package store

// Idempotency keys: queueBegin reads the result stored under a key, storeResult stores one, and
// purgeIdempotencyKeys forgets the expired ones.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/commitreveal/rps/tournament"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// IdempotencyTTL is how long a result stays stored under its key.
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

// ErrIdempotencyConflict is the use of a key with a different request than the one it was first
// used with.
var ErrIdempotencyConflict = errors.New("idempotency key reused with a different request")

// beginRead receives what queueBegin's statement reads.
type beginRead struct {
	now int64
	// newestBeat is the newest heartbeat of any replica (see errOutage).
	newestBeat *int64
	hash       []byte
	status     *int
	stored     []byte
	version    *int
	disabled   bool
	// expired is a result stored under the key that has expired: storing a new one deletes it
	// first.
	expired bool
}

// queueBegin queues the statement that reads an operation's instant (with the newest heartbeat,
// see errOutage), whether an admin disabled the actor's account and, when key is not nil, the
// result stored under the key and whether it has expired by now (by the database's clock when now
// is nil). Queued after the lobby's lock, the instant never goes back in a lobby's log, and a
// duplicate that held the lock is seen.
func queueBegin(b *pgx.Batch, actor tournament.AccountID, key *IdempotencyKey, now *int64) *beginRead {
	r := &beginRead{}
	var account, method, route, name any // NULL: no key, no match
	if key != nil {
		account, method, route, name = key.AccountID, key.Method, key.Route, key.Key
	}
	queue(b, `SELECT `+clockSQL+`, `+newestBeatSQL+`, k.request_hash, k.status, k.response, k.result_version,
			coalesce(k.created_at < coalesce($7, `+clockSQL+`) - $5, false),
			coalesce((SELECT disabled_at IS NOT NULL FROM accounts WHERE id = $6::uuid), false)
		FROM (SELECT 1) AS one LEFT JOIN idempotency_keys k
			ON k.account_id = $1 AND k.method = $2 AND k.route = $3 AND k.key = $4`,
		account, method, route, name, IdempotencyTTL.Milliseconds(), nullID(actor), now).
		QueryRow(func(row pgx.Row) error {
			return row.Scan(&r.now, &r.newestBeat, &r.hash, &r.status, &r.stored, &r.version, &r.expired, &r.disabled)
		})
	return r
}

// replay returns ErrAccountDisabled for a disabled actor, else the answer stored under key that
// has not expired, if any, or ErrIdempotencyConflict when it was stored for another request.
func (r *beginRead) replay(key *IdempotencyKey) (Answer, bool, error) {
	if r.disabled {
		return Answer{}, false, ErrAccountDisabled
	}
	if r.hash == nil || r.expired {
		return Answer{}, false, nil
	}
	if !bytes.Equal(r.hash, key.RequestHash) {
		return Answer{}, false, ErrIdempotencyConflict
	}
	if r.version == nil {
		// Stored before keys kept results: the HTTP answer itself.
		return Answer{Replayed: true, Stored: &StoredResponse{Status: *r.status, Body: r.stored}}, true, nil
	}
	request, result, err := decodeResult(*r.version, r.stored)
	if err != nil {
		return Answer{}, false, err
	}
	return Answer{Result: result, Replayed: true, Request: request}, true, nil
}

// storeResult stores an operation's result under its key, sent with the operation's held-back
// writes (and its COMMIT). An expired result under the key, which the operation's begin read,
// is deleted first (only then: a statement fewer for every other key; a key stored since that
// read is not expired). A duplicate that stored the key first, in a transaction that committed,
// makes the insert fail, which aborts this transaction before its COMMIT runs; it is retried, to
// be replayed.
func (t *pgTx) storeResult(key *IdempotencyKey, request RequestRef, r tournament.Result, now int64, expired bool) error {
	stored, err := encodeResult(request, r)
	if err != nil {
		return err
	}
	if expired {
		t.tx.later(`DELETE FROM idempotency_keys
			WHERE account_id = $1 AND method = $2 AND route = $3 AND key = $4 AND created_at < $5`,
			key.AccountID, key.Method, key.Route, key.Key, now-IdempotencyTTL.Milliseconds())
	}
	t.tx.laterChecked(func(_ pgconn.CommandTag, err error) error {
		if errors.Is(err, ErrConflict) {
			return fmt.Errorf("%w: idempotency key stored by a concurrent duplicate: %w", ErrRetry, err)
		}
		return err
	}, `INSERT INTO idempotency_keys (account_id, method, route, key, request_hash, response, result_version, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		key.AccountID, key.Method, key.Route, key.Key, key.RequestHash, stored, resultVersion, now)
	return nil
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
