package store

// Group commit: the actions in flight for one lobby in this process run in one transaction, under
// one hold of the lobby's row lock, instead of queueing on that lock one transaction each.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/commitreveal/rps/tournament"
	"github.com/jackc/pgx/v5"
)

// maxBatch bounds the actions of one batch, and so how long a batch holds its lobby's lock (a
// batch of 256 registrations, its writes in one statement, takes a few tens of milliseconds): as
// many as a big lobby's phones have in flight, so that each batch takes in all that waited.
const maxBatch = 256

// call is one action on a lobby, with its answer once it has run.
type call struct {
	ctx     context.Context
	actor   tournament.Actor
	key     *IdempotencyKey
	request RequestRef
	audit   *Audit
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

// batcher queues the actions that arrive for a lobby while a batch of its actions is running.
type batcher struct {
	mu sync.Mutex
	// waiting holds, for each lobby with a batch running, the calls that arrived since, in order.
	waiting map[tournament.LobbyID][]*call
}

// runCall runs c on lobby and sets its outcome. A call for a lobby with no batch running goes at
// once, alone; the calls that arrive while it runs wait, and run together, in arrival order, in
// the batch that follows, led by the first of them. A refusal commits (see tournament.Error), so a
// refused action has, in a batch, exactly the effects it would have had alone, and the actions
// after it see what they would have seen. An action that fails otherwise rolls the batch back;
// then every action of the batch runs again in a transaction of its own, so the others succeed
// without it. Across replicas, the lobby's row lock still serializes the transactions.
func (s *Store) runCall(lobby tournament.LobbyID, c *call) {
	if !validID(string(lobby)) {
		s.runAlone(lobby, c)
		return
	}
	b := &s.batches
	b.mu.Lock()
	if b.waiting == nil {
		b.waiting = make(map[tournament.LobbyID][]*call)
	}
	waiting, running := b.waiting[lobby]
	if !running {
		b.waiting[lobby] = nil
		b.mu.Unlock()
		s.lead(lobby, []*call{c})
		return
	}
	c.turn = make(chan turn, 1)
	b.waiting[lobby] = append(waiting, c)
	b.mu.Unlock()

	var next turn
	select {
	case next = <-c.turn:
	case <-c.ctx.Done():
		if b.withdraw(lobby, c) {
			c.err = c.ctx.Err()
			return
		}
		next = <-c.turn // taken into a batch already: its outcome comes
	}
	switch {
	case next.lead != nil:
		s.lead(lobby, next.lead)
	case next.alone:
		s.runAlone(lobby, c)
	default:
		s.settleGames(c.ctx, c.ended)
	}
}

// lead runs a batch, hands the lobby to the calls that arrived meanwhile, then tells the batch's
// other calls their outcome (or to run alone). After the handover, so that the lobby's next batch
// need not wait, it settles the games its own action ended and any the batch ended outside every
// action; each other call settles the games its action ended.
func (s *Store) lead(lobby tournament.LobbyID, batch []*call) {
	split, ended := s.runAndHandOver(lobby, batch)
	if split {
		s.runAlone(lobby, batch[0])
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

// runAndHandOver runs a batch and hands over, also when the batch panics (an action panics
// unrecovered when it runs alone): no call is left waiting on the lobby.
func (s *Store) runAndHandOver(lobby tournament.LobbyID, batch []*call) (split bool, ended []tournament.GameID) {
	split = true // if runBatch panics, the other calls run alone
	defer func() {
		b := &s.batches
		b.mu.Lock()
		next := b.waiting[lobby]
		if len(next) == 0 {
			delete(b.waiting, lobby)
		} else {
			next = next[:min(len(next), maxBatch)]
			b.waiting[lobby] = b.waiting[lobby][len(next):]
		}
		b.mu.Unlock()
		if len(next) > 0 {
			next[0].turn <- turn{lead: next}
		}
		for _, c := range batch[1:] {
			c.turn <- turn{alone: split}
		}
	}()
	return s.runBatch(lobby, batch)
}

// runAlone runs a call in a transaction of its own (a call of a batch that failed as a whole, or
// one on no valid lobby), then settles the games it ended; a call that panicked in a batch panics
// again, in its caller's goroutine.
func (s *Store) runAlone(lobby tournament.LobbyID, c *call) {
	if c.panicked != nil {
		panic(c.panicked)
	}
	_, ended := s.runBatch(lobby, []*call{c})
	s.settleGames(c.ctx, ended)
}

// withdraw takes a waiting call out of its lobby's queue, unless a batch took it already.
func (b *batcher) withdraw(lobby tournament.LobbyID, c *call) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	waiting := b.waiting[lobby]
	for i, w := range waiting {
		if w == c {
			b.waiting[lobby] = append(waiting[:i:i], waiting[i+1:]...)
			return true
		}
	}
	return false
}

// runBatch runs calls in one transaction, in order, and sets their outcomes; it returns the games
// the transaction ended, for the caller to settle. It reports split when a batch of several failed
// as a whole: their outcomes are not set, and each must run alone.
func (s *Store) runBatch(lobby tournament.LobbyID, calls []*call) (split bool, ended []tournament.GameID) {
	ctx := calls[0].ctx
	if len(calls) > 1 {
		// The leader's cancellation must not fail the others' actions.
		ctx = context.WithoutCancel(ctx)
	}
	ended, err := s.runTx(ctx, func(t *pgTx) error {
		return t.runCalls(ctx, lobby, calls)
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

// runCalls runs calls in the transaction t: it begins them all in one round trip (the lobby's
// lock, its game, and each call's instant, stored result and actor's rows), then runs each in
// turn. It fails only when a call failed otherwise than by a refusal.
func (t *pgTx) runCalls(ctx context.Context, lobby tournament.LobbyID, calls []*call) error {
	var b pgx.Batch
	var lock *lockRead
	if validID(string(lobby)) {
		lock = t.queueLock(&b, lobby)
	} else {
		lobby = ""
	}
	keys := make([]callKey, len(calls))
	for i, c := range calls {
		keys[i] = callKey{actor: c.actor.ID, key: c.key}
	}
	begins := queueCallReads(&b, lobby, keys, t.s.fixedNow())
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
	var game tournament.Game
	if lock != nil && lock.foundLobby {
		if _, _, err := t.holdLock(lock); err != nil {
			return err
		}
		game = lock.game
	}
	for i, c := range calls {
		begins[i].hold(t, c.actor.ID, game)
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
