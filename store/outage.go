package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/commitreveal/rps/tournament"
)

// The outage rule: nobody is eliminated for the service's downtime. Every clock worker records,
// in the one heartbeat row, that a replica is alive; the row holds the newest beat of any
// replica. When that beat is older than the outage threshold, no replica could write for that
// long: every replica was down, or the database was out of every replica's reach (a failover, a
// network outage) while they stayed up. Then every open deadline moves by the gap, once, before
// any deadline that fell due meanwhile is applied. One replica pausing alone (a long GC pause, an
// overloaded host) is no outage: the others' beats keep the row fresh.
//
// Every transaction that may apply an expiry reads the newest beat with its instant (pgTx.now,
// and a batch's begin read) and, finding it too old, fails with errOutage before it applies
// anything; runTx then applies the rule (Recover) and runs it again. So the shift comes first
// whichever transaction the database serves first after an outage: an action, a clock worker's
// expiry or a heartbeat.

// errOutage: at the instant a transaction read, the newest heartbeat of any replica was older
// than the outage threshold, so the clock must shift before any expiry is applied.
var errOutage = errors.New("no replica's heartbeat within the outage threshold")

// newestBeatSQL reads the newest heartbeat of any replica: NULL on a database where no replica
// ran yet.
const newestBeatSQL = `(SELECT beat_at FROM heartbeat)`

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
// any transaction that found the gap. It holds the heartbeat row from its read to the beat it
// records in the same transaction, so replicas recovering together shift only once. It returns
// the gap it shifted by (0 if none).
func (s *Store) Recover(ctx context.Context) (int64, error) {
	var gap int64
	err := s.run(ctx, func(t *pgTx) error {
		gap = 0
		var last int64
		err := queryRow(ctx, t.tx, `SELECT beat_at FROM heartbeat FOR UPDATE`).Scan(&last)
		if err != nil && !errors.Is(err, tournament.ErrNotFound) {
			return fmt.Errorf("read heartbeat: %w", err)
		}
		// Read under the heartbeat's lock, so a replica that waited for another's recovery sees
		// that replica's beat as recent; and without the check pgTx.now makes, which is this.
		now, nowErr := s.nowOn(ctx, t.tx)
		if nowErr != nil {
			return nowErr
		}
		switch {
		case errors.Is(err, tournament.ErrNotFound):
			// A new database: nothing ran before, nothing to shift.
		case now-last > s.outage.Milliseconds():
			// Deadlines that had passed while a replica was still alive are applied as of then,
			// as its clock worker would have; only the later ones move.
			if err := t.expireAllDue(ctx, last); err != nil {
				return err
			}
			gap = now - last
			if err := s.service.ShiftClock(ctx, t, now, gap); err != nil {
				return fmt.Errorf("shift clock by %d ms: %w", gap, err)
			}
		}
		return t.beat(ctx, s.replica, now)
	})
	if err != nil {
		return 0, err
	}
	if gap > 0 {
		s.log.Info("clock shifted after an outage", "gap_ms", gap)
	}
	return gap, nil
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

// beat records now as the last sign of life; the beat never moves back.
func (t *pgTx) beat(ctx context.Context, replica string, now int64) error {
	_, err := exec(ctx, t.tx, `INSERT INTO heartbeat (id, replica, beat_at) VALUES (true, $1, $2)
		ON CONFLICT (id) DO UPDATE SET replica = excluded.replica,
			beat_at = greatest(heartbeat.beat_at, excluded.beat_at)`, replica, now)
	if err != nil {
		return fmt.Errorf("heartbeat: %w", err)
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
