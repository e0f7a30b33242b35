// Package store keeps the tournament in PostgreSQL: it runs each action's operation (Act) in a
// transaction shared with the other actions in flight (a group commit), at one instant of the
// database's clock, implements tournament.Tx over pgx with set-based writes, keeps the
// double-entry ledger, the hash-chained event log and the idempotency keys, and answers the reads. It is the only package that speaks SQL.
package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commitreveal/rps/tournament"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/singleflight"
)

// Options configure a Store.
type Options struct {
	// Service runs the game's rules: the operations of Act, and the outage rule (Recover).
	Service *tournament.Service
	// Now overrides the clock (Unix milliseconds) for tests. By default every transaction reads
	// the database's clock once, so all replicas share one time.
	Now func() int64
	// Logger receives the store's reports; nil discards them.
	Logger *slog.Logger
	// OutageThreshold is the outage rule's threshold (see Recover): a gap longer than this
	// without any replica's heartbeat shifts every open deadline by the gap. Zero means
	// DefaultOutageThreshold.
	OutageThreshold time.Duration
	// Committers is how many transactions of actions may run at once, each for its own share of
	// the lobbies (see runCall). Zero means DefaultCommitters.
	Committers int
}

// DefaultOutageThreshold is the outage threshold when Options gives none.
const DefaultOutageThreshold = 5 * time.Second

// Store is the tournament's persistence on a pgx pool. It is safe for concurrent use.
type Store struct {
	pool    *pgxpool.Pool
	service *tournament.Service
	nowFn   func() int64
	log     *slog.Logger
	// replica names this process in the heartbeat row.
	replica string
	// rulesets caches rulesets by content hash; they are immutable.
	rulesets sync.Map
	// outage is the outage rule's threshold.
	outage time.Duration
	// commit groups the actions in flight into transactions (see runCall).
	commit committers
	// writes counts the committed transactions of actions and the actions they carried.
	writes writeCounts
	// eventReads shares identical reads of the log among the callers that asked before they began.
	eventReads eventReads
	// recovery shares a recovery from an outage among the transactions that found it (see
	// recoverOutage).
	recovery singleflight.Group
	// notify wakes the local followers of lobbies; its listener runs until Close.
	notify notifier
	// noteKey authenticates the events the notifications carry (see EventsChannel and
	// loadNoteKey); nil until the listener has loaded it, and until then events are neither sent
	// nor taken in them.
	noteKey    atomic.Pointer[[32]byte]
	listenCtx  context.Context
	stopListen context.CancelFunc
	// heartbeat is the heartbeat's own connection (see outage.go).
	heartbeat heartbeatConn
}

// New returns a Store over pool.
func New(pool *pgxpool.Pool, opts Options) *Store {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	outage := opts.OutageThreshold
	if outage <= 0 {
		outage = DefaultOutageThreshold
	}
	listenCtx, stopListen := context.WithCancel(context.Background())
	return &Store{
		pool: pool, service: opts.Service, nowFn: opts.Now, log: log, replica: fmt.Sprintf("%016x", rand.Uint64()),
		outage: outage, listenCtx: listenCtx, stopListen: stopListen, commit: newCommitters(opts.Committers),
	}
}

// Close stops the store's event listener and closes the heartbeat's connection (the pool is the
// caller's to close).
func (s *Store) Close() {
	s.stopListen()
	s.heartbeat.close()
}

// failureWait is the pause before a lost listening connection is opened again.
const failureWait = time.Second

// maxAttempts bounds the tries of a transaction that lost a serialization race or a deadlock.
const maxAttempts = 5

// rollbackTimeout bounds the rollback of a failed transaction, which must not wait on a caller's
// cancelled context yet must not hang on a dead connection either.
const rollbackTimeout = 5 * time.Second

// withTx runs fn in one transaction: it commits when fn returns nil and rolls back otherwise,
// also when fn panics (the panic goes on after the rollback). The rollback runs even when ctx was
// cancelled, so the connection goes back to the pool clean and the row locks it held are freed.
func (s *Store) withTx(ctx context.Context, opts pgx.TxOptions, fn func(pgx.Tx) error) error {
	tx, err := s.pool.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("begin: %w", mapErr(err))
	}
	// Deferred, so that it runs on a panic too; after a commit it does nothing.
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		defer cancel()
		_ = tx.Rollback(rctx)
	}()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", mapErr(err))
	}
	return nil
}

// run runs fn in one transaction: it commits when fn returns nil or a refusal (a refusal commits,
// see tournament.Error; run returns it), rolls back on any other error,
// and retries a transaction that lost a serialization race or a deadlock a bounded number of times.
// The games the transaction ended are settled after it committed (see settleGames).
func (s *Store) run(ctx context.Context, fn func(t *pgTx) error) error {
	ended, err := s.runTx(ctx, fn)
	s.settleGames(ctx, ended)
	return err
}

// runTx is run without the settling: it returns the games the committed transaction ended, for
// the caller to settle.
func (s *Store) runTx(ctx context.Context, fn func(t *pgTx) error) (ended []tournament.GameID, err error) {
	for attempt := 1; ; attempt++ {
		var refusal error
		var t *pgTx
		err := s.withPipelinedTx(ctx, func(c *txConn) error {
			t = s.newTx(c)
			err := fn(t)
			if _, ok := tournament.IsRefusal(err); ok {
				refusal, err = err, nil
			}
			if err != nil {
				return err
			}
			return t.writeHeld()
		})
		if err == nil {
			return t.ended, refusal
		}
		if errors.Is(err, errOutage) && attempt < maxAttempts {
			// The clock shifts first (see outage.go), then the transaction runs again.
			if err := s.recoverOutage(ctx); err != nil {
				return nil, fmt.Errorf("recover from an outage: %w", err)
			}
			continue
		}
		if !errors.Is(err, ErrRetry) || attempt == maxAttempts {
			return nil, err
		}
		// Jitter keeps the losers of a race from colliding again in step.
		delay := time.Duration(attempt) * time.Duration(1+rand.IntN(5)) * time.Millisecond
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, err
		}
	}
}

// withPipelinedTx runs fn in one transaction whose BEGIN goes with its first statements and whose
// COMMIT goes with its last writes, which saves two round trips per transaction. It commits when
// fn returns nil and rolls back otherwise; the rollback runs even when ctx was cancelled. A
// connection released in a transaction (fn panicked) is closed by the pool, which ends the
// transaction.
func (s *Store) withPipelinedTx(ctx context.Context, fn func(c *txConn) error) (err error) {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", mapErr(err))
	}
	defer pc.Release()
	c := &txConn{tx: pc}
	c.later(`BEGIN`)
	defer func() {
		if err != nil && pc.Conn().PgConn().TxStatus() != 'I' {
			// A cancelled ctx must not stop the rollback, or the connection would be closed
			// with the transaction open.
			_, _ = pc.Exec(context.WithoutCancel(ctx), `ROLLBACK`)
		}
	}()
	if err := fn(c); err != nil {
		return err
	}
	c.later(`COMMIT`)
	if err := c.flush(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// now returns the instant of a transaction: the injected clock, or the database's, read with the
// newest heartbeat of any replica: errOutage when that is older than the outage threshold, so that
// the clock shifts before the transaction applies any expiry (see outage.go).
func (t *pgTx) now(ctx context.Context) (int64, error) {
	if t.s.nowFn != nil {
		return t.s.nowFn(), nil
	}
	var now int64
	var newest *int64
	if err := queryRow(ctx, t.tx, `SELECT `+clockSQL+`, `+newestBeatSQL).Scan(&now, &newest); err != nil {
		return 0, fmt.Errorf("read clock: %w", err)
	}
	return now, t.s.checkBeat(now, newest)
}

// nowOn reads the instant on q (a transaction or the pool): the injected clock, or the
// database's.
func (s *Store) nowOn(ctx context.Context, q querier) (int64, error) {
	if s.nowFn != nil {
		return s.nowFn(), nil
	}
	var now int64
	// clock_timestamp, not now(): now() is the transaction's start, which a lock wait makes stale.
	err := queryRow(ctx, q, `SELECT `+clockSQL).Scan(&now)
	if err != nil {
		return 0, fmt.Errorf("read clock: %w", err)
	}
	return now, nil
}

// clockSQL is the database's clock in Unix milliseconds.
const clockSQL = `floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint`
