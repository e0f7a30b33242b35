package store

// The one entry point of an action: Act runs a tournament.Operation with its committer (see
// batch.go), keeps its result under the request's idempotency key, and returns that result for
// the caller to render after the commit.

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/commitreveal/rps/tournament"
	"github.com/jackc/pgx/v5"
)

// Action is one request's operation, as Act runs it.
type Action struct {
	Actor tournament.Actor
	// Key is the request's idempotency key (nil: none).
	Key *IdempotencyKey
	// Request identifies the request, kept with its result under Key so that a replay is
	// rendered as the first answer was (a problem names its request).
	Request RequestRef
	Op      tournament.Operation
	// Audit, when set, is the entry of the admins' audit log written with the operation.
	Audit *Audit
	// SignerKey is the id of the player's key that signed the operation ("": unsigned), read
	// with the batch so that the operation knows whether it is still active (tournament.Tx.Keys).
	SignerKey string
}

// RequestRef identifies a request in its answer: its id and its path.
type RequestRef struct {
	ID   string `json:"id,omitempty"`
	Path string `json:"path,omitempty"`
}

// Answer is what Act returns: the operation's result, fresh or as stored under the key.
type Answer struct {
	Result tournament.Result
	// Replayed reports that the result is the one stored under the request's key by an earlier
	// request (Request is then that request's).
	Replayed bool
	Request  RequestRef
	// Stored, set only for a replay of a key stored before keys kept results (a record of format
	// 1, kept for its IdempotencyTTL), is the HTTP answer as it was stored; Result is then zero.
	Stored *StoredResponse
}

// StoredResponse is an HTTP answer as a key stored before results were kept it.
type StoredResponse struct {
	Status int
	Body   []byte
}

// Audit is the entry of the admins' audit log that records an admin's action, with the request
// and the status of its answer. Status is the status of the answer when the operation is done,
// Refused that of each refusal (an unlisted code is recorded as 0).
type Audit struct {
	Action string
	// Target is the account or lobby acted on ("" when none).
	Target  string
	Request json.RawMessage
	Status  int
	Refused map[tournament.Code]int
	// Auth is the admin's signature of the request (nil: unsigned); the entry shows it without
	// the request, which is beside it.
	Auth *tournament.AdminAuth
}

// detail is the audit entry's detail for a result: the request and the status of its answer.
func (a *Audit) detail(r tournament.Result) ([]byte, error) {
	status := a.Status
	if r.Refusal != nil {
		status = a.Refused[r.Refusal.Code]
	}
	request := a.Request
	if request == nil {
		request = json.RawMessage("null")
	}
	var auth *tournament.ActionAuth
	if a.Auth != nil {
		auth = a.Auth.Audited()
	}
	detail, err := json.Marshal(struct {
		Request json.RawMessage        `json:"request"`
		Status  int                    `json:"status"`
		Auth    *tournament.ActionAuth `json:"auth,omitempty"`
	}{request, status, auth})
	if err != nil {
		return nil, fmt.Errorf("encode audit detail: %w", err)
	}
	return detail, nil
}

// Act runs an action's operation, at one instant of the database's clock, in one transaction
// (shared with the other actions in flight, see runCall) after locking its lobby,
// so that a lobby's actions run one at a time and its log never goes back in time. A disabled
// actor is refused with ErrAccountDisabled before the operation runs.
//
// The result, a refusal included, is stored under the action's key in the same transaction,
// unless the refusal is not Replayable (see tournament.Error). A retry with the same key and
// request gets the stored result back (Replayed) and the operation does not run again; a
// concurrent duplicate either runs after the first (waiting for the lobby, or later in the same
// batch) or loses the race to store the key, rolls back and runs again, finding it stored:
// either way it is replayed. A key used with another request is ErrIdempotencyConflict. An error
// stores nothing, so the request can be retried.
func (s *Store) Act(ctx context.Context, a Action) (Answer, error) {
	_, expiry := a.Op.(tournament.Expire)
	c := &call{ctx: ctx, lobby: a.Op.Lobby(), actor: a.Actor, key: a.Key, request: a.Request, audit: a.Audit, signer: a.SignerKey,
		expiry: expiry,
		apply: func(t *pgTx, now int64) (tournament.Result, error) {
			return a.Op.Apply(ctx, s.service, t, now, a.Actor)
		}}
	s.runCall(c)
	return c.answer, c.err
}

// Replay returns the answer stored under key (nil: none), if any, without running anything: for a
// request whose operation turned out to have nothing to run (a quick join that found no game),
// whose earlier attempt may have run one. A disabled actor is ErrAccountDisabled; a key stored
// for another request is ErrIdempotencyConflict.
func (s *Store) Replay(ctx context.Context, actor tournament.AccountID, key *IdempotencyKey) (Answer, bool, error) {
	var b pgx.Batch
	read := queueCallReads(&b, []callKey{{actor: actor, key: key}}, s.fixedNow())
	if err := s.pool.SendBatch(ctx, &b).Close(); err != nil {
		return Answer{}, false, mapErr(err)
	}
	return read[0].replay(key)
}

// fixedNow is the injected clock's instant, or nil for the database's.
func (s *Store) fixedNow() *int64 {
	if s.nowFn == nil {
		return nil
	}
	now := s.nowFn()
	return &now
}

// actKeyed runs one of the store's own operations on an account (not a lobby), apply, through
// the same path as Act; keysOf is the account whose keys it changes ("": none).
func (s *Store) actKeyed(ctx context.Context, actor, keysOf tournament.AccountID, key *IdempotencyKey, request RequestRef, audit *Audit,
	apply func(t *pgTx, now int64) (tournament.Result, error)) (Answer, error) {
	c := &call{ctx: ctx, actor: tournament.Actor{ID: actor}, keysOf: keysOf, key: key, request: request, audit: audit, apply: apply}
	s.runCall(c)
	return c.answer, c.err
}
