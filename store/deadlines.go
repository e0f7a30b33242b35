package store

// What the clock worker (package clock) asks of the database: when the next deadline falls,
// which lobbies are due, and a connection that is told of every new deadline. It applies the
// deadlines themselves through Act, as any action.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/commitreveal/rps/tournament"
	"github.com/jackc/pgx/v5"
)

// NextDeadline returns the earliest deadline of an open stage (0: none) and the instant it read
// it at (the injected clock's, or the database's).
func (s *Store) NextDeadline(ctx context.Context) (next, now int64, err error) {
	var earliest *int64
	// An index probe: the predicate is the partial index games_open_deadline's.
	err = queryRow(ctx, s.pool, `SELECT min(g.deadline), `+clockSQL+` FROM games g WHERE `+openDeadlineSQL).Scan(&earliest, &now)
	if err != nil {
		return 0, 0, fmt.Errorf("next deadline: %w", err)
	}
	if s.nowFn != nil {
		now = s.nowFn()
	}
	if earliest != nil {
		next = *earliest
	}
	return next, now, nil
}

// DueLobby is a lobby whose current game's deadline has passed.
type DueLobby struct {
	Lobby    tournament.LobbyID
	Deadline int64
}

// DueLobbies returns up to limit lobbies whose current game's open stage is due now, the earliest
// deadline first. Nothing is locked: the expiry decides, under the lobby's lock.
func (s *Store) DueLobbies(ctx context.Context, limit int) ([]DueLobby, error) {
	due, err := collect(ctx, s.pool, pgx.RowToStructByPos[DueLobby], `SELECT l.id::text, g.deadline
		FROM games g JOIN lobbies l ON l.id = g.lobby_id AND l.game_id = g.id
		WHERE `+openSQL+` AND `+dueSQL(`coalesce($1, `+clockSQL+`)`)+`
		ORDER BY g.deadline LIMIT $2`, s.fixedNow(), limit)
	if err != nil {
		return nil, fmt.Errorf("due lobbies: %w", err)
	}
	return due, nil
}

// DeadlineListener is a connection of its own that is told, on commit, of every deadline a
// transaction sets (see ClockChannel).
type DeadlineListener struct {
	conn *pgx.Conn
}

// ListenDeadlines opens a DeadlineListener.
func (s *Store) ListenDeadlines(ctx context.Context) (*DeadlineListener, error) {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+ClockChannel); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("listen: %w", err)
	}
	return &DeadlineListener{conn: conn}, nil
}

// Close closes the listener's connection.
func (l *DeadlineListener) Close(ctx context.Context) {
	_ = l.conn.Close(context.WithoutCancel(ctx))
}

// Wait waits until the given time, or until a transaction sets a deadline earlier than next (the
// one the caller sleeps for; 0 if none). A later deadline, the common case, does not cut the wait
// short. Timing out, or ctx ending, is not an error; a lost connection is.
func (l *DeadlineListener) Wait(ctx context.Context, until time.Time, next int64) error {
	for {
		wctx, cancel := context.WithDeadline(ctx, until)
		note, err := l.conn.WaitForNotification(wctx)
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

// BeatInterval is how often a replica records that it is alive (see Recover): every second, or a
// quarter of the outage threshold if that is shorter.
func (s *Store) BeatInterval() time.Duration {
	return min(time.Second, s.outage/4)
}
