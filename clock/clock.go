// Package clock is the clock worker: it applies deadlines as they pass, so that stages advance
// on time without waiting for the next action. It applies each through the store's one entry
// point for an action (store.Act with a tournament.Expire), exactly as an action would, in a
// transaction with the actions in flight; every action also applies the deadlines due before it, so correctness never
// depends on the worker being on time. It also keeps the replica's heartbeat (the outage rule,
// see store.Recover) and the housekeeping.
package clock

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
)

// Timing.
const (
	// housekeepingInterval is how often a worker prunes what the retention policy no longer
	// keeps (store.Prune) and settles what other replicas left unsettled.
	housekeepingInterval = time.Minute
	// idleWait bounds a sleep with no deadline in sight: a lost notification (a dropped
	// connection) then costs at most this long.
	idleWait = time.Minute
	// failureWait is the pause after a failed pass, so a persistent failure is not a hot loop.
	failureWait = time.Second
	// parallelism is how many due lobbies one worker expires at once: a burst of them falling
	// due together does not keep the last waiting behind all the others.
	parallelism = 4
	// dueBatch is how many due lobbies a pass reads at a time.
	dueBatch = 64
	// heldLobbyWait is the pause before looking again at a due lobby that an expiry left due
	// (its transaction read an instant before the deadline).
	heldLobbyWait = 5 * time.Millisecond
)

// Options configure a Worker.
type Options struct {
	// Logger receives the worker's reports; nil discards them.
	Logger *slog.Logger
	// OnExpiry, if set, is told of every lobby the worker expired and how long after its
	// deadline (for metrics).
	OnExpiry func(lag time.Duration)
}

// Worker applies the deadlines of the lobbies of one store.
type Worker struct {
	store    *store.Store
	log      *slog.Logger
	onExpiry func(lag time.Duration)
}

// New returns a worker on st.
func New(st *store.Store, o Options) *Worker {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Worker{store: st, log: log, onExpiry: o.OnExpiry}
}

// Run applies deadlines as they pass, until ctx is cancelled. It sleeps until the earliest open
// deadline or until a transaction sets an earlier one (a notification on a connection of its own),
// then expires each due lobby. Any number of workers, on any number of replicas, may run on one
// database: an expiry is applied under its lobby's lock, after the deadlines due were read again,
// so none is applied twice. It also records the heartbeat every store.BeatInterval and, apart
// from it, does the housekeeping. A lost connection is reopened (and a pass run at once, since
// notifications may have been missed); it returns nil when ctx is cancelled.
func (w *Worker) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { w.heartbeat(ctx) })
	wg.Go(func() { w.every(ctx, "settling ended games", w.store.SettleEnded) })
	wg.Go(func() {
		w.every(ctx, "pruning", func(ctx context.Context) error { _, err := w.store.Prune(ctx); return err })
	})
	for ctx.Err() == nil {
		err := w.loop(ctx)
		if ctx.Err() != nil {
			break
		}
		w.log.Error("clock worker lost its connection; reconnecting", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(failureWait):
		}
	}
	return nil
}

// loop listens for new deadlines and runs passes until its connection fails or ctx is cancelled.
func (w *Worker) loop(ctx context.Context) error {
	listener, err := w.store.ListenDeadlines(ctx)
	if err != nil {
		return err
	}
	defer listener.Close(ctx)
	for ctx.Err() == nil {
		wait, next, err := w.pass(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			w.log.Error("clock pass failed", "err", err)
			wait, next = failureWait, 0
		}
		if err := listener.Wait(ctx, time.Now().Add(wait), next); err != nil {
			return err
		}
	}
	return nil
}

// pass expires every due lobby, then returns how long to sleep until the next deadline.
func (w *Worker) pass(ctx context.Context) (time.Duration, int64, error) {
	for {
		due, err := w.store.DueLobbies(ctx, dueBatch)
		if err != nil {
			return 0, 0, err
		}
		if len(due) == 0 {
			break
		}
		progressed, err := w.expireAll(ctx, due)
		if err != nil {
			return 0, 0, err
		}
		if !progressed || len(due) < dueBatch {
			break
		}
	}
	next, now, err := w.store.NextDeadline(ctx)
	if err != nil {
		return 0, 0, err
	}
	if next == 0 {
		return idleWait, 0, nil
	}
	if due := tournament.DueAt(next); due <= now {
		// Still due: an expiry read its instant just before the deadline (or another replica
		// holds the lobby and applies it itself). Look again shortly rather than spin.
		return heldLobbyWait, next, nil
	}
	return min(time.Duration(tournament.DueAt(next)-now)*time.Millisecond, idleWait), next, nil
}

// expireAll expires the due lobbies, parallelism at a time, and reports whether any deadline was
// applied.
func (w *Worker) expireAll(ctx context.Context, due []store.DueLobby) (bool, error) {
	var mu sync.Mutex
	var progressed bool
	var firstErr error
	work := make(chan store.DueLobby)
	var wg sync.WaitGroup
	for range min(parallelism, len(due)) {
		wg.Go(func() {
			for d := range work {
				expired, err := w.expire(ctx, d)
				mu.Lock()
				progressed = progressed || expired
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	for _, d := range due {
		work <- d
	}
	close(work)
	wg.Wait()
	return progressed, firstErr
}

// expire applies a due lobby's deadlines through the store's entry point for an action, and
// reports whether there were any left to apply (another replica's worker, or an action, may have
// applied them first).
func (w *Worker) expire(ctx context.Context, d store.DueLobby) (bool, error) {
	answer, err := w.store.Act(ctx, store.Action{Op: tournament.Expire{LobbyID: d.Lobby}})
	if err != nil {
		return false, err
	}
	r := answer.Result
	if r.Refusal != nil {
		return false, r.Refusal
	}
	if r.Expired && w.onExpiry != nil {
		w.onExpiry(time.Duration(r.At-d.Deadline) * time.Millisecond)
	}
	return r.Expired, nil
}

// heartbeat records that this replica is alive, every store.BeatInterval, until ctx is
// cancelled; a beat that finds a gap longer than the outage threshold applies the outage rule
// first (see store.Recover). It does nothing else: a beat that waited for slower work could make
// the replicas see an outage that did not happen.
func (w *Worker) heartbeat(ctx context.Context) {
	tick := time.NewTicker(w.store.BeatInterval())
	defer tick.Stop()
	for {
		if _, err := w.store.Recover(ctx); err != nil && ctx.Err() == nil {
			w.log.Error("heartbeat failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// every runs job when it starts and then every housekeepingInterval until ctx is cancelled. The
// housekeeping jobs each run on their own: settling the ended games left unsettled (by a replica
// that stopped between a game's end and its settling, which at 100,000 players takes seconds),
// and pruning old checkpoints and expired idempotency keys (store.Prune), whose first pass after
// an upgrade works through months of checkpoints and must not hold the players' standings back
// meanwhile. Any replica may do either.
func (w *Worker) every(ctx context.Context, what string, job func(context.Context) error) {
	tick := time.NewTicker(housekeepingInterval)
	defer tick.Stop()
	for {
		if err := job(ctx); err != nil && ctx.Err() == nil {
			w.log.Error(what+" failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
