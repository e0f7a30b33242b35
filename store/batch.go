package store

// Group commit: the actions in flight in this process, of whatever lobbies, run together in one
// transaction, as PostgreSQL's WAL writer commits many transactions with one flush: one
// committer per partition of the lobbies runs one transaction at a time, and the actions that
// arrive while it runs go into its next one.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/commitreveal/rps/tournament"
	"github.com/jackc/pgx/v5"
)

// maxBatch bounds the actions of one transaction, and so how long it holds its lobbies' locks (a
// batch of 256 registrations, its writes in one statement, takes a few tens of milliseconds): as
// many as a big lobby's phones have in flight, so that each batch takes in all that waited.
const maxBatch = 256

// DefaultCommitters is the number of committers when Options gives none. One committer makes
// the largest transactions: with 8 actions in flight, about 4 share each transaction.
const DefaultCommitters = 1

// call is one action, with its answer once it has run.
type call struct {
	ctx context.Context
	// lobby is the lobby the action acts on ("": none, or one it finds itself, such as a quick
	// join's), locked with the others of its batch before any action runs.
	lobby   tournament.LobbyID
	actor   tournament.Actor
	key     *IdempotencyKey
	request RequestRef
	audit   *Audit
	// signer is the key that signed the action ("": none; see Action.SignerKey).
	signer string
	// keysOf is the account whose keys the call changes ("": none; see changeKeys).
	keysOf tournament.AccountID
	// expiry reports that the call applies a lobby's passed deadlines for the clock worker: it
	// goes to the committer of expiries (see committers).
	expiry bool
	// apply runs the action's operation; it is the store's own code (Act's runs the operation).
	apply func(t *pgTx, now int64) (tournament.Result, error)

	answer Answer
	err    error
	// panicked is what the action panicked with in a batch run by another call's goroutine; the
	// call panics with it again in its own.
	panicked any
	// ended are the games the action ended (a deadline it applied first, or the action itself),
	// for the call to settle once the batch has committed: a batch's other calls do not wait for
	// it (at 100,000 players settling takes seconds).
	ended []tournament.GameID
	// turn receives, once, what the call is to do after waiting: lead a batch, run alone, or
	// nothing (its outcome is set).
	turn chan turn
}

type turn struct {
	// lead is the batch the call runs for everyone in it (the call first).
	lead []*call
	// alone asks the call to run in a transaction of its own.
	alone bool
}

// committers queue the actions that arrive while a transaction of actions is running. A lobby
// belongs to one committer, chosen by a hash of its id, so its actions keep their order; with one
// committer (the default) every action of the process shares its transactions, with several a
// transaction that holds its locks long (a stage change in a lobby of 100,000) holds back only
// its own committer's lobbies, and lobbies stay grouped as they would be on one shard.
//
// The clock worker's expiries have a committer of their own: in the players' queue an expiry
// waited for the transaction running, then ran in the next one with the actions that arrived
// meanwhile (16 ms from its start to its answer at the median of a short, instrumented run of the
// bench's mixed load, 7.7 ms in its own committer), while every player following the lobby waited for the next
// stage. Expiries are few (a stage that every player finished in time ends by its last action),
// so their own transactions cost little; one that meets a player's action on the same lobby
// waits for that lobby's lock, as actions on two replicas do.
type committers struct {
	mu       sync.Mutex
	seed     maphash.Seed
	queues   []commitQueue
	expiries commitQueue
}

// commitQueue is one committer: whether it is running a transaction, and the calls waiting for
// the next one, in arrival order.
type commitQueue struct {
	running bool
	waiting []*call
}

func newCommitters(n int) committers {
	if n <= 0 {
		n = DefaultCommitters
	}
	return committers{seed: maphash.MakeSeed(), queues: make([]commitQueue, n)}
}

// queueOf is the committer of a call: the expiries', or its lobby's.
func (cs *committers) queueOf(c *call) *commitQueue {
	switch {
	case c.expiry:
		return &cs.expiries
	case len(cs.queues) == 1:
		return &cs.queues[0]
	}
	return &cs.queues[maphash.String(cs.seed, string(c.lobby))%uint64(len(cs.queues))]
}

// runCall runs c and sets its outcome. When its committer is idle, the call runs at once, alone;
// the calls that arrive while a transaction runs wait, and run together, in arrival order, in
// the committer's next transaction, led by the first of them. A refusal commits (see
// tournament.Error), so a refused action has, in a batch, exactly the effects it would have had
// alone, and the actions after it see what they would have seen. An action that fails otherwise
// rolls the batch back; then every action of the batch runs again in a transaction of its own,
// so the others succeed without it. Across replicas, each lobby's row lock serializes the
// transactions.
func (s *Store) runCall(c *call) {
	cs := &s.commit
	cs.mu.Lock()
	q := cs.queueOf(c)
	if !q.running {
		q.running = true
		cs.mu.Unlock()
		s.lead(q, []*call{c})
		return
	}
	c.turn = make(chan turn, 1)
	q.waiting = append(q.waiting, c)
	cs.mu.Unlock()

	var next turn
	select {
	case next = <-c.turn:
	case <-c.ctx.Done():
		if cs.withdraw(q, c) {
			c.err = c.ctx.Err()
			return
		}
		next = <-c.turn // taken into a batch already: its outcome comes
	}
	switch {
	case next.lead != nil:
		s.lead(q, next.lead)
	case next.alone:
		s.runAlone(c)
	default:
		s.settleGames(c.ctx, c.ended)
	}
}

// lead runs a batch, hands the committer to the calls that arrived meanwhile, then tells the
// batch's other calls their outcome (or to run alone). After the handover, so that the next
// batch need not wait, it settles the games its own action ended and any the batch ended outside
// every action; each other call settles the games its action ended.
func (s *Store) lead(q *commitQueue, batch []*call) {
	split, ended := s.commitAndHandOver(q, batch)
	if split {
		s.runAlone(batch[0])
		return
	}
	others := make(map[tournament.GameID]bool)
	for _, c := range batch[1:] {
		for _, id := range c.ended {
			others[id] = true
		}
	}
	var mine []tournament.GameID
	for _, id := range ended {
		if !others[id] {
			mine = append(mine, id)
		}
	}
	s.settleGames(batch[0].ctx, mine)
}

// commitAndHandOver commits a batch and hands the committer over, also when the batch panics (an
// action panics unrecovered when it runs alone): no call is left waiting.
func (s *Store) commitAndHandOver(q *commitQueue, batch []*call) (split bool, ended []tournament.GameID) {
	split = true // if commitBatch panics, the other calls run alone
	defer func() {
		cs := &s.commit
		cs.mu.Lock()
		next := q.waiting[:min(len(q.waiting), maxBatch)]
		q.waiting = q.waiting[len(next):]
		if len(q.waiting) == 0 {
			q.waiting = nil // let go of the backing array of a burst
		}
		q.running = len(next) > 0
		cs.mu.Unlock()
		if len(next) > 0 {
			next[0].turn <- turn{lead: next}
		}
		for _, c := range batch[1:] {
			c.turn <- turn{alone: split}
		}
	}()
	return s.commitBatch(batch)
}

// runAlone runs a call in a transaction of its own (a call of a batch that failed as a whole),
// then settles the games it ended; a call that panicked in a batch panics again, in its caller's
// goroutine.
func (s *Store) runAlone(c *call) {
	if c.panicked != nil {
		panic(c.panicked)
	}
	_, ended := s.commitBatch([]*call{c})
	s.settleGames(c.ctx, ended)
}

// withdraw takes a waiting call out of its committer's queue, unless a batch took it already.
func (cs *committers) withdraw(q *commitQueue, c *call) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if i := slices.Index(q.waiting, c); i >= 0 {
		q.waiting = slices.Delete(q.waiting, i, i+1)
		return true
	}
	return false
}

// commitBatch runs calls in one transaction, in order, and sets their outcomes; it returns the
// games the transaction ended, for the caller to settle. It reports split when a batch of several
// failed as a whole: their outcomes are not set, and each must run alone.
func (s *Store) commitBatch(calls []*call) (split bool, ended []tournament.GameID) {
	ctx := calls[0].ctx
	if len(calls) > 1 {
		// The leader's cancellation must not fail the others' actions.
		ctx = context.WithoutCancel(ctx)
	}
	ended, err := s.runTx(ctx, func(t *pgTx) error {
		return t.applyCalls(ctx, calls)
	})
	if err == nil {
		s.writes.transactions.Add(1)
		s.writes.actions.Add(uint64(len(calls)))
		return false, ended
	}
	if len(calls) > 1 {
		return true, nil
	}
	calls[0].answer, calls[0].err = Answer{}, err
	return false, nil
}

// writeCounts counts the transactions that committed actions and the actions they carried (a
// refused action included), so that operators see how well actions share transactions.
type writeCounts struct {
	transactions, actions atomic.Uint64
}

// WriteStats are the totals of writeCounts since the store started.
type WriteStats struct {
	Transactions, Actions uint64
}

// WriteStats returns how many transactions committed actions and how many actions they carried.
func (s *Store) WriteStats() WriteStats {
	return WriteStats{Transactions: s.writes.transactions.Load(), Actions: s.writes.actions.Load()}
}

// keyScope is an idempotency key without its request hash: the key's identity.
type keyScope struct {
	account             tournament.AccountID
	method, route, name string
}

func (k *IdempotencyKey) scope() keyScope {
	return keyScope{k.AccountID, k.Method, k.Route, k.Key}
}

// applyCalls runs calls in the transaction t: it begins them all in one round trip (each of
// their lobbies' locks, in id order, then the lobbies' games, their accounts' locks, and each
// call's instant, stored result and actor's rows), then runs each in turn. It fails only when a call failed otherwise
// than by a refusal.
func (t *pgTx) applyCalls(ctx context.Context, calls []*call) error {
	lobbies := make([]tournament.LobbyID, 0, len(calls))
	for _, c := range calls {
		if validID(string(c.lobby)) {
			lobbies = append(lobbies, c.lobby)
		}
	}
	// One order for every transaction, so that two replicas' batches never wait for each other's
	// locks in a cycle.
	slices.Sort(lobbies)
	lobbies = slices.Compact(lobbies)
	var b pgx.Batch
	// The batch's statements are the same SQL whatever the batch (arrays, not lists of values), so
	// one generic plan serves them all; left to choose, PostgreSQL plans again on every execution
	// statements over arrays, whose length it cannot know in a generic plan.
	queue(&b, forceGenericPlans)
	t.genericPlans = true
	locks := make([]*lockRead, len(lobbies))
	for i, id := range lobbies {
		locks[i] = queueLobbyLock(&b, id)
	}
	games, rounds := queueGamesOf(&b, lobbies, closingCalls(lobbies, calls))
	t.rounds = rounds
	queueAccountLocks(&b, calls)
	keys := make([]callKey, len(calls))
	for i, c := range calls {
		keys[i] = callKey{actor: c.actor.ID, key: c.key, signer: c.signer}
		if validID(string(c.lobby)) {
			keys[i].lobby = c.lobby
		}
	}
	begins := queueCallReads(&b, keys, t.s.fixedNow())
	if err := t.tx.send(ctx, &b); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if t.s.nowFn == nil {
		for _, begin := range begins {
			if err := t.s.checkBeat(begin.now, begin.newestBeat); err != nil {
				return err
			}
		}
	}
	for _, lock := range locks {
		if lock.foundLobby {
			t.holdLock(lock, games[lock.lobby.ID])
		}
	}
	for i, c := range calls {
		begins[i].hold(t, c.actor.ID, c.signer, games[keys[i].lobby])
	}
	// stored holds the calls of this batch whose result is stored under their key, for a
	// duplicate later in the batch to replay.
	stored := make(map[keyScope]*call)
	for i, c := range calls {
		c.answer, c.err, c.ended = Answer{}, nil, nil // a retried transaction starts over
		now := begins[i].now
		if t.s.nowFn != nil {
			now = t.s.nowFn()
		}
		if answer, found, err := begins[i].replay(c.key); err != nil || found {
			c.answer, c.err = answer, err
			continue
		}
		if c.key != nil {
			if first, ok := stored[c.key.scope()]; ok {
				if !bytes.Equal(first.key.RequestHash, c.key.RequestHash) {
					c.err = ErrIdempotencyConflict
				} else {
					c.answer = first.answer
					c.answer.Replayed = true
				}
				continue
			}
		}
		endedBefore := len(t.ended)
		result, err := c.run(t, now, len(calls) > 1)
		c.ended = append([]tournament.GameID(nil), t.ended[endedBefore:]...)
		if err != nil {
			return err
		}
		c.answer = Answer{Result: result, Request: c.request}
		if refusal := result.Refusal; refusal != nil && !refusal.Replayable() {
			continue // the request may be corrected and retried under the same key
		}
		if c.audit != nil {
			if err := t.queueAudit(c.actor.ID, c.audit, result, now); err != nil {
				return err
			}
		}
		if c.key != nil {
			if err := t.storeResult(c.key, c.request, result, now, begins[i].expired); err != nil {
				return err
			}
			stored[c.key.scope()] = c
		}
	}
	return nil
}

// closingCalls counts, for each of lobbies, the calls that may close a stage of its game: every
// call on it, and an expiry as many as any stage could need.
func closingCalls(lobbies []tournament.LobbyID, calls []*call) []int32 {
	counts := make([]int32, len(lobbies))
	for _, c := range calls {
		i, found := slices.BinarySearch(lobbies, c.lobby)
		if !found {
			continue
		}
		if c.expiry {
			counts[i] = heldRoundMax
		} else if counts[i] < heldRoundMax {
			counts[i]++
		}
	}
	return counts
}

// errPanicked fails a batch in which an action panicked.
var errPanicked = errors.New("panicked")

// run runs the call's action. In a batch, run by another call's goroutine, a panic is kept for
// the call to raise in its own goroutine, and fails the batch.
func (c *call) run(t *pgTx, now int64, batched bool) (result tournament.Result, err error) {
	c.panicked = nil
	if batched {
		defer func() {
			if p := recover(); p != nil {
				c.panicked = p
				err = fmt.Errorf("%w: %v", errPanicked, p)
			}
		}()
	}
	return c.apply(t, now)
}

// queueAccountLocks queues the locks of the accounts of calls, after their lobbies' and before
// the reads that begin them: the row of every account whose keys a call changes FOR UPDATE, every
// other actor's FOR KEY SHARE (which a key change's FOR UPDATE waits for, as do a token's or a
// name's change, whose columns are unique keys; balances change under FOR NO KEY UPDATE, which
// does not wait). So an action that finds its signer's key active
// commits before a change of the account's keys takes its instant, and one that comes after the
// change reads the key retired: on two replicas, an action could otherwise find a key active that
// a retirement in flight, dated before it, had retired, and verifiers would fail the log.
//
// Without a key change (the common case) one statement locks every actor, in id order; with one,
// each account has a statement of its own, in id order, so that two transactions never take one
// account's lock in another order than another's.
func queueAccountLocks(b *pgx.Batch, calls []*call) {
	// exclusive tells, of each account, whether a call changes its keys.
	exclusive := map[string]bool{}
	for _, c := range calls {
		if id := string(c.actor.ID); validID(id) && !exclusive[id] {
			exclusive[id] = false
		}
		if id := string(c.keysOf); validID(id) {
			exclusive[id] = true
		}
	}
	ids := slices.Sorted(maps.Keys(exclusive))
	if !slices.ContainsFunc(ids, func(id string) bool { return exclusive[id] }) {
		if len(ids) > 0 {
			queue(b, `SELECT 1 FROM accounts WHERE id = ANY($1::uuid[]) ORDER BY id FOR KEY SHARE`, uuidArray(ids))
		}
		return
	}
	for _, id := range ids {
		if exclusive[id] {
			queue(b, `SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, id)
		} else {
			queue(b, `SELECT 1 FROM accounts WHERE id = $1 FOR KEY SHARE`, id)
		}
	}
}
