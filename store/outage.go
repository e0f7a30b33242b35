package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/commitreveal/rps/tournament"
)

// The outage rule: nobody is eliminated for the service's downtime. Every clock worker records,
// in a heartbeat row of its replica's own, that the replica is alive; the newest row is the
// newest beat of any replica. When that beat is older than the outage threshold, no replica could
// write for that long: every replica was down, or the database was out of every replica's reach
// (a failover, a network outage) while they stayed up. Then every open deadline moves by the gap,
// once, before any deadline that fell due meanwhile is applied. One replica pausing alone (a long
// GC pause, an overloaded host, a process stopped in the middle of its beat) is no outage: the
// others go on beating in their own rows, which its locks do not hold up.
//
// Every transaction that may apply an expiry reads the newest beat with its instant (pgTx.now,
// and a batch's begin read) and, finding it too old, fails with errOutage before it applies
// anything; runTx then applies the rule (Recover) and runs it again. So the shift comes first
// whichever transaction the database serves first after an outage: an action, a clock worker's
// expiry or a heartbeat.
//
// A beat goes through a connection of its own (heartbeatConn), never the requests' pool: with
// every connection of that pool busy, a beat waiting for one would age past the threshold and a
// saturated pool would look like an outage to every replica, shifting every deadline.

// errOutage: at the instant a transaction read, the newest heartbeat of any replica was older
// than the outage threshold, so the clock must shift before any expiry is applied.
var errOutage = errors.New("no replica's heartbeat within the outage threshold")

// newestBeatSQL reads the newest heartbeat of any replica: NULL on a database where no replica
// ran yet.
const newestBeatSQL = `(SELECT max(beat_at) FROM heartbeats)`

// recoveryLock is the advisory lock that serialises recoveries, so that replicas finding one gap
// together shift the clock once. Only a transaction that found the newest beat too old takes it:
// a plain beat never waits for another replica.
const recoveryLock int64 = 0x7270735f72636f76 // "rps_rcov"

// beatRetention is how long the beat of a replica that stopped beating is kept after the
// newest: long enough to outlive any restart, short enough that restarts leave no pile of rows.
const beatRetention = time.Hour

// recoveryTimeout bounds a recovery that one transaction started for every transaction of the
// replica that found the gap (so one caller giving up does not fail the others).
const recoveryTimeout = time.Minute

// checkBeat returns errOutage when the newest beat (nil: none yet) is older than the threshold at
// now.
func (s *Store) checkBeat(now int64, newest *int64) error {
	if newest != nil && now-*newest > s.outage.Milliseconds() {
		return fmt.Errorf("%w: the newest is %d ms old", errOutage, now-*newest)
	}
	return nil
}

// Recover applies the outage rule and records a beat: if the newest heartbeat of any replica is
// older than the outage threshold, every open deadline moves later by the gap (with one
// clock_shifted event per lobby), after the deadlines that had passed while a replica was still
// alive are applied as of then. It runs at start-up, before RunClock, at every heartbeat, and for
// any transaction that found the gap. The beat alone, the common case, runs on the heartbeat's own
// connection. Finding the gap, it takes recoveryLock in a transaction of the pool and reads the
// newest beat again under it, and records its beat in the same transaction, so replicas
// recovering together shift only once. It returns the gap it shifted by (0 if none).
func (s *Store) Recover(ctx context.Context) (int64, error) {
	if beat, err := s.beatAlone(ctx); err != nil || beat {
		return 0, err
	}
	var gap int64
	err := s.run(ctx, func(t *pgTx) error {
		gap = 0
		last, now, err := s.newestBeat(ctx, t.tx)
		if err != nil {
			return err
		}
		if last == nil || now-*last <= s.outage.Milliseconds() {
			// No gap any more: another replica recovered meanwhile.
			return s.beat(ctx, t.tx, now)
		}
		if _, err := exec(ctx, t.tx, `SELECT pg_advisory_xact_lock($1)`, recoveryLock); err != nil {
			return fmt.Errorf("lock the recovery: %w", err)
		}
		// Read under the lock, so a replica that waited for another's recovery sees that
		// replica's beat as recent.
		if last, now, err = s.newestBeat(ctx, t.tx); err != nil {
			return err
		}
		if now-*last > s.outage.Milliseconds() {
			// Deadlines that had passed while a replica was still alive are applied as of then,
			// as its clock worker would have; only the later ones move.
			if err := t.expireAllDue(ctx, *last); err != nil {
				return err
			}
			gap = now - *last
			if err := s.service.ShiftClock(ctx, t, now, gap); err != nil {
				return fmt.Errorf("shift clock by %d ms: %w", gap, err)
			}
		}
		return s.beat(ctx, t.tx, now)
	})
	if err != nil {
		return 0, err
	}
	if gap > 0 {
		s.log.Info("clock shifted after an outage", "gap_ms", gap)
	}
	return gap, nil
}

// beatAlone records the replica's beat on the heartbeat's own connection, unless the newest beat
// of any replica (nil: none yet, a new database) is older than the outage threshold: then it
// writes nothing and returns false, and Recover applies the rule.
func (s *Store) beatAlone(ctx context.Context) (bool, error) {
	pool, err := s.heartbeat.pool(s.pool)
	if err != nil {
		return false, err
	}
	beat := false
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		last, now, err := s.newestBeat(ctx, tx)
		if err != nil || (last != nil && now-*last > s.outage.Milliseconds()) {
			return err
		}
		beat = true
		return s.beat(ctx, tx, now)
	})
	if err != nil {
		return false, mapErr(err)
	}
	return beat, nil
}

// heartbeatConn is the heartbeat's pool of one connection, opened on the first beat with the
// store pool's settings and closed with the store.
type heartbeatConn struct {
	mu     sync.Mutex
	p      *pgxpool.Pool
	closed bool
}

func (h *heartbeatConn) pool(like *pgxpool.Pool) (*pgxpool.Pool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errors.New("heartbeat: the store is closed")
	}
	if h.p == nil {
		cfg := like.Config()
		cfg.MaxConns, cfg.MinConns, cfg.MinIdleConns = 1, 0, 0
		p, err := pgxpool.NewWithConfig(context.Background(), cfg)
		if err != nil {
			return nil, fmt.Errorf("heartbeat: open its connection: %w", err)
		}
		h.p = p
	}
	return h.p, nil
}

func (h *heartbeatConn) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	if h.p != nil {
		h.p.Close()
	}
}

// newestBeat reads, on q, the newest heartbeat of any replica (nil when none ever beat) and the
// database's clock, without the check pgTx.now makes (which is Recover's own).
func (s *Store) newestBeat(ctx context.Context, q querier) (*int64, int64, error) {
	var newest *int64
	var now int64
	if err := queryRow(ctx, q, `SELECT `+clockSQL+`, `+newestBeatSQL).Scan(&now, &newest); err != nil {
		return nil, 0, fmt.Errorf("read heartbeat: %w", err)
	}
	if s.nowFn != nil {
		now = s.nowFn()
	}
	return newest, now, nil
}

// recoverOutage runs Recover for a transaction that found the gap, once for all those of this
// replica that found it at the same time.
func (s *Store) recoverOutage(ctx context.Context) error {
	done := s.recovery.DoChan("", func() (any, error) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recoveryTimeout)
		defer cancel()
		return s.Recover(rctx)
	})
	select {
	case r := <-done:
		return r.Err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// beat records, on q, now as the replica's last sign of life, in its own row (the beat never
// moves back), and forgets the beats of replicas long gone.
func (s *Store) beat(ctx context.Context, q querier, now int64) error {
	_, err := exec(ctx, q, `INSERT INTO heartbeats (replica, beat_at) VALUES ($1, $2)
		ON CONFLICT (replica) DO UPDATE SET beat_at = greatest(heartbeats.beat_at, excluded.beat_at)`, s.replica, now)
	if err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	if _, err := exec(ctx, q, `DELETE FROM heartbeats WHERE beat_at < $1`, now-beatRetention.Milliseconds()); err != nil {
		return fmt.Errorf("forget old heartbeats: %w", err)
	}
	return nil
}

// expireAllDue applies, at instant at, the expiries of every lobby whose deadline had passed by
// then. It runs inside Recover's transaction, which every other transaction that would apply an
// expiry waits for (see errOutage).
func (t *pgTx) expireAllDue(ctx context.Context, at int64) error {
	lobbies, err := collect(ctx, t.tx, pgx.RowTo[tournament.LobbyID], `SELECT l.id::text
		FROM games g JOIN lobbies l ON l.id = g.lobby_id AND l.game_id = g.id
		WHERE `+openSQL+` AND `+dueSQL("$1")+`
		ORDER BY g.deadline`, at)
	if err != nil {
		return fmt.Errorf("due lobbies: %w", err)
	}
	for _, id := range lobbies {
		if _, err := t.s.service.Expire(ctx, t, at, id); err != nil {
			return fmt.Errorf("expire lobby %s: %w", id, err)
		}
	}
	return nil
}
