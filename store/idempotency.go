package store

// Idempotency keys: queueBegin reads the outcome stored under a key, storeOutcome stores one, and
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

// Outcome is what a key replays: a status and a body, both chosen and read by the caller (the
// store does not interpret them).
type Outcome struct {
	Status int
	Body   []byte
	// Refused is the refusal the outcome reports, if any; it is not stored. An outcome whose
	// refusal is not Replayable is not stored under the key (see tournament.Error).
	Refused error
	// Audit, when set, is written to the admins' audit log with the operation's effects.
	Audit *AuditEntry
}

// ErrIdempotencyConflict is the use of a key with a different request than the one it was first
// used with.
var ErrIdempotencyConflict = errors.New("idempotency key reused with a different request")

// RunIdempotent runs fn for actor (refused with ErrAccountDisabled if an admin disabled the
// account) in one transaction at one instant now (Unix milliseconds), after locking the lobby (if
// lobby names one) so that its operations run one at a time and its log never goes back in time.
// The transaction commits when fn succeeds, and is retried a few times after a serialization
// failure or deadlock, so fn must have no other side effects. The transaction may be shared with
// other actions on the same lobby (see runCall), each keeping its own outcome. When key is not
// nil, fn's outcome (unless its refusal is not Replayable) is stored under the key in the same
// transaction. A retry with the same key and request gets the stored outcome back (replayed is
// true) and fn does not run. A concurrent duplicate either runs after the first one (waiting for
// the lobby lock, or later in the same batch), or loses the race to store the key, rolls back and
// runs again, finding the outcome stored: either way it is replayed. A key used with another
// request is ErrIdempotencyConflict. When fn fails, nothing is stored, so the request can be
// retried.
func (s *Store) RunIdempotent(ctx context.Context, actor tournament.AccountID, lobby tournament.LobbyID, key *IdempotencyKey,
	fn func(tx tournament.Tx, now int64) (Outcome, error)) (out Outcome, replayed bool, err error) {
	return s.runKeyed(ctx, actor, lobby, key, func(t *pgTx, now int64) (Outcome, error) { return fn(t, now) })
}

// runKeyed is RunIdempotent for the store's own operations, which run SQL of their own on t.
func (s *Store) runKeyed(ctx context.Context, actor tournament.AccountID, lobby tournament.LobbyID, key *IdempotencyKey,
	fn func(t *pgTx, now int64) (Outcome, error)) (out Outcome, replayed bool, err error) {
	c := &call{ctx: ctx, actor: actor, key: key, fn: fn}
	s.runCall(lobby, c)
	return c.out, c.replayed, c.err
}

// beginRead receives what queueBegin's statement reads.
type beginRead struct {
	now int64
	// newestBeat is the newest heartbeat of any replica (see errOutage).
	newestBeat *int64
	hash       []byte
	status     *int
	body       []byte
	disabled   bool
	// expired is an outcome stored under the key that has expired: storing a new one deletes it
	// first.
	expired bool
}

// queueBegin queues the statement that reads an operation's instant (with the newest heartbeat,
// see errOutage), whether an admin disabled the actor's account and, when key is not nil, the
// outcome stored under the key and whether it has expired by now (by the database's clock when now
// is nil). Queued after the lobby's lock, the instant never goes back in a lobby's log, and a
// duplicate that held the lock is seen.
func queueBegin(b *pgx.Batch, actor tournament.AccountID, key *IdempotencyKey, now *int64) *beginRead {
	r := &beginRead{}
	var account, method, route, name any // NULL: no key, no match
	if key != nil {
		account, method, route, name = key.AccountID, key.Method, key.Route, key.Key
	}
	queue(b, `SELECT `+clockSQL+`, `+newestBeatSQL+`, k.request_hash, k.status, k.response,
			coalesce(k.created_at < coalesce($7, `+clockSQL+`) - $5, false),
			coalesce((SELECT disabled_at IS NOT NULL FROM accounts WHERE id = $6::uuid), false)
		FROM (SELECT 1) AS one LEFT JOIN idempotency_keys k
			ON k.account_id = $1 AND k.method = $2 AND k.route = $3 AND k.key = $4`,
		account, method, route, name, IdempotencyTTL.Milliseconds(), nullID(actor), now).
		QueryRow(func(row pgx.Row) error {
			return row.Scan(&r.now, &r.newestBeat, &r.hash, &r.status, &r.body, &r.expired, &r.disabled)
		})
	return r
}

// outcome returns ErrAccountDisabled for a disabled actor, else the outcome stored under key that
// has not expired, if any, or ErrIdempotencyConflict when it was stored for another request.
func (r *beginRead) outcome(key *IdempotencyKey) (Outcome, bool, error) {
	if r.disabled {
		return Outcome{}, false, ErrAccountDisabled
	}
	if r.status == nil || r.expired {
		return Outcome{}, false, nil
	}
	if !bytes.Equal(r.hash, key.RequestHash) {
		return Outcome{}, false, ErrIdempotencyConflict
	}
	return Outcome{Status: *r.status, Body: r.body}, true, nil
}

// storeOutcome stores an operation's outcome under its key, sent with the operation's held-back
// writes (and its COMMIT). An expired outcome under the key, which the operation's begin read,
// is deleted first (only then: a statement fewer for every other key; a key stored since that
// read is not expired). A duplicate that stored the key first, in a transaction that committed,
// makes the insert fail, which aborts this transaction before its COMMIT runs; it is retried, to
// be replayed.
func (t *pgTx) storeOutcome(key *IdempotencyKey, out Outcome, now int64, expired bool) {
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
	}, `INSERT INTO idempotency_keys (account_id, method, route, key, request_hash, status, response, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		key.AccountID, key.Method, key.Route, key.Key, key.RequestHash, out.Status, out.Body, now)
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
