package store

// Idempotency keys: queueCallReads reads the result stored under a key, storeResult stores one, and
// Prune (retention.go) forgets the expired ones.

import (
	"errors"
	"time"

	"github.com/commitreveal/rps/tournament"
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

// storeResult holds an operation's result under its key, written with the transaction's other
// held rows (see writeHeld). An expired result under the key, which the operation's begin read,
// is deleted first (only then: a statement fewer for every other key; a key stored since that
// read is not expired). A duplicate that stored the key first, in a transaction that committed,
// makes the insert fail, which aborts this transaction before its COMMIT runs; it is retried, to
// be replayed (see checkKeyStored).
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
	t.held.results = append(t.held.results, resultRow{key: key, stored: stored, at: now})
	return nil
}
