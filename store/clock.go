package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/commitreveal/rps/tournament"
	"github.com/jackc/pgx/v5"
)

// Clock worker timing.
const (
	// HeartbeatInterval is how often, at most, a running clock worker records that its replica
	// is alive (more often when a quarter of the outage threshold is shorter).
	HeartbeatInterval = time.Second
	// housekeepingInterval is how often a running clock worker purges expired idempotency keys
	// and settles what other replicas left unsettled.
	housekeepingInterval = time.Minute
	// idleWait bounds a sleep with no deadline in sight: a lost notification (a dropped
	// connection) then costs at most this long.
	idleWait = time.Minute
	// failureWait is the pause after a failed pass, so a persistent failure is not a hot loop.
	failureWait = time.Second
	// clockParallelism is how many due lobbies one worker expires at once.
	clockParallelism = 4
	// heldLobbyWait is the pause before looking again at a due lobby another transaction holds.
	heldLobbyWait = 5 * time.Millisecond
)

// RunClock applies deadlines as they pass, until ctx is cancelled. It sleeps until the earliest
// open deadline or until a transaction sets an earlier one (a notification on a connection of its
// own), takes each due lobby with FOR UPDATE SKIP LOCKED and expires it in its own transaction,
// so any number of workers on one database share the work and never apply a deadline twice. It
// also writes the heartbeat every HeartbeatInterval and, apart from it, does the housekeeping. A
// lost connection is reopened (and a pass run at once, since notifications may have been
// missed); it returns nil when ctx is cancelled.
func (s *Store) RunClock(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { s.heartbeat(ctx) })
	wg.Go(func() { s.housekeeping(ctx) })
	for ctx.Err() == nil {
		err := s.clockLoop(ctx)
		if ctx.Err() != nil {
			break
		}
		s.log.Error("clock worker lost its connection; reconnecting", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(failureWait):
		}
	}
	return nil
}

// clockLoop listens on a connection of its own and runs clock passes until that connection fails
// or ctx is cancelled.
func (s *Store) clockLoop(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig)
	if err != nil {
		return fmt.Errorf("clock: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+clockChannel); err != nil {
		return fmt.Errorf("clock: listen: %w", err)
	}
	for ctx.Err() == nil {
		wait, next, err := s.clockPass(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			s.log.Error("clock pass failed", "err", err)
			wait, next = failureWait, 0
		}
		if err := sleepUntil(ctx, conn, time.Now().Add(wait), next); err != nil {
			return fmt.Errorf("clock: wait: %w", err)
		}
	}
	return nil
}

// sleepUntil waits until the given time, or until a notification of a deadline earlier than
// next (the one the worker sleeps for; 0 if none). A later deadline, the common case, does not
// cut the sleep short. Timing out, or ctx ending, is not an error.
func sleepUntil(ctx context.Context, conn *pgx.Conn, until time.Time, next int64) error {
	for {
		wctx, cancel := context.WithDeadline(ctx, until)
		note, err := conn.WaitForNotification(wctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil || errors.Is(wctx.Err(), context.DeadlineExceeded) {
				return nil
			}
			return err
		}
		deadline, perr := strconv.ParseInt(note.Payload, 10, 64)
		if perr != nil || next == 0 || deadline < next {
			return nil
		}
	}
}

// clockPass expires every due lobby, then returns how long to sleep until the next deadline.
// Several lobbies falling due together are expired in parallel: SKIP LOCKED hands each to one
// transaction, so the last of a burst is not kept waiting behind all the others.
func (s *Store) clockPass(ctx context.Context) (time.Duration, int64, error) {
	// One lobby first: most passes find one due lobby or none, and need no more transactions.
	took, err := s.expireNext(ctx)
	if err != nil {
		return 0, 0, err
	}
	if took {
		if err := s.expireAllParallel(ctx); err != nil {
			return 0, 0, err
		}
	}
	var next *int64
	var now int64
	// The index probe matches the partial index games_open_deadline.
	err = queryRow(ctx, s.pool, `SELECT min(deadline), `+clockSQL+`
		FROM games WHERE stage IN ('registration', 'moves', 'reveal') AND deadline > 0`).Scan(&next, &now)
	if err != nil {
		return 0, 0, fmt.Errorf("next deadline: %w", err)
	}
	if s.nowFn != nil {
		now = s.nowFn()
	}
	if next == nil {
		return idleWait, 0, nil
	}
	if *next < now {
		// Due but held by a transaction of its lobby, which applies the expiry itself (every
		// operation applies due expiries first): look again shortly rather than spin.
		return heldLobbyWait, *next, nil
	}
	// A stage expires when the time is strictly past its deadline: one millisecond after it.
	return min(time.Duration(*next-now+1)*time.Millisecond, idleWait), *next, nil
}

// expireAllParallel expires due lobbies with clockParallelism transactions at once until none is
// left.
func (s *Store) expireAllParallel(ctx context.Context) error {
	errs := make(chan error, clockParallelism)
	for range clockParallelism {
		go func() {
			for {
				took, err := s.expireNext(ctx)
				if err != nil || !took {
					errs <- err
					return
				}
			}
		}()
	}
	var firstErr error
	for range clockParallelism {
		if err := <-errs; err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

// expireNext takes the lobby whose open deadline passed first, skipping lobbies another
// transaction holds, and applies its expiries. It reports whether it found one.
func (s *Store) expireNext(ctx context.Context) (bool, error) {
	var took bool
	var lag time.Duration
	err := s.run(ctx, func(t *pgTx) error {
		took = false // a retried transaction starts over
		due, err := t.now(ctx)
		if err != nil {
			return err
		}
		var id tournament.LobbyID
		var deadline int64
		err = queryRow(ctx, t.tx, `SELECT l.id::text, g.deadline
			FROM games g JOIN lobbies l ON l.id = g.lobby_id AND l.game_id = g.id
			WHERE g.stage IN ('registration', 'moves', 'reveal') AND g.deadline > 0 AND g.deadline < $1
			ORDER BY g.deadline LIMIT 1
			FOR UPDATE OF l SKIP LOCKED`, due).Scan(&id, &deadline)
		if errors.Is(err, tournament.ErrNotFound) {
			return nil
		} else if err != nil {
			return fmt.Errorf("take due lobby: %w", err)
		}
		took = true
		// The instant is read again under the lock, for the reason begin gives.
		now, err := t.now(ctx)
		if err != nil {
			return err
		}
		if _, err := s.service.Expire(ctx, t, now, id); err != nil {
			return fmt.Errorf("expire lobby %s: %w", id, err)
		}
		lag = time.Duration(now-deadline) * time.Millisecond
		return nil
	})
	if took && err == nil && s.onExpiry != nil {
		s.onExpiry(lag)
	}
	return took, err
}

// heartbeat records that this replica is alive, every HeartbeatInterval or a quarter of the
// outage threshold if that is shorter, until ctx is cancelled; a beat that finds a gap longer than
// the threshold applies the outage rule first (see Recover). It does nothing else: a beat that
// waited for slower work could make the replicas see an outage that did not happen.
func (s *Store) heartbeat(ctx context.Context) {
	tick := time.NewTicker(min(HeartbeatInterval, s.outage/4))
	defer tick.Stop()
	for {
		if _, err := s.Recover(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("heartbeat failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// housekeeping, when it starts and then every housekeepingInterval until ctx is cancelled, purges
// expired idempotency keys and settles the ended games left unsettled (by a replica that stopped
// between a game's end and its settling, which at 100,000 players takes seconds). Any replica
// may do either.
func (s *Store) housekeeping(ctx context.Context) {
	tick := time.NewTicker(housekeepingInterval)
	defer tick.Stop()
	for {
		if err := s.purgeIdempotencyKeys(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("purge idempotency keys failed", "err", err)
		}
		if err := s.settleEnded(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("settling ended games failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
