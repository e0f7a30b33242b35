package store

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commitreveal/rps/tournament"
)

// The entry points and reads below serve the tests (the shared suite's adapter, the model test,
// the clock tests); the service itself goes through Act and the API's read models.

// Players returns up to limit players of a game with a registration order greater than after,
// in registration order.
func (s *Store) Players(ctx context.Context, game tournament.GameID, after, limit int) ([]tournament.Player, error) {
	if !validID(string(game)) {
		return nil, nil
	}
	return collect(ctx, s.pool, func(r pgx.CollectableRow) (tournament.Player, error) { return scanPlayer(r) },
		`SELECT `+playerColumns+` FROM game_players WHERE game_id = $1 AND ord > $2 ORDER BY ord LIMIT $3`,
		game, after, limit)
}

// Moves returns up to limit moves of a game's round by players whose id sorts (bytewise) after
// after (empty: from the start), in that order.
func (s *Store) Moves(ctx context.Context, game tournament.GameID, round int, after tournament.AccountID, limit int) ([]tournament.RoundMove, error) {
	if !validID(string(game)) || (after != "" && !validID(string(after))) {
		return nil, nil
	}
	if after == "" {
		after = tournament.AccountID(uuid.Nil.String())
	}
	// The nil uuid sorts first and is never an account's id.
	return collect(ctx, s.pool, func(r pgx.CollectableRow) (tournament.RoundMove, error) { return scanMove(r) },
		`SELECT `+moveColumns+` FROM round_moves rm
		WHERE game_id = $1 AND round = $2 AND account_id > $3 ORDER BY account_id LIMIT $4`,
		game, round, after, limit)
}

// Run runs fn in one transaction at one instant now (Unix milliseconds) with the store's
// tournament.Tx. The transaction commits when fn returns nil or a refusal (expiries applied
// before a refused action are kept), and Run returns fn's refusal; it rolls back on any other
// error. A transaction that lost a serialization race or a deadlock is retried a few times, so fn
// may run more than once and must not have other side effects.
//
// Run reads the clock before fn locks anything; an operation on an existing lobby uses RunLobby.
func (s *Store) Run(ctx context.Context, fn func(tx tournament.Tx, now int64) error) error {
	return s.run(ctx, func(t *pgTx) error {
		now, err := t.now(ctx)
		if err != nil {
			return err
		}
		return fn(t, now)
	})
}

// RunLobby is Run for an operation on an existing lobby: it locks the lobby before it reads the
// clock, so that an operation that waited for the lock does not act at an instant before its
// predecessor's, and a lobby's log never goes back in time. An unknown lobby is left to fn's
// LockLobby to report. Like the API's operations, it runs in a batch with the others in flight
// on the lobby (see runCall).
func (s *Store) RunLobby(ctx context.Context, lobby tournament.LobbyID, fn func(tx tournament.Tx, now int64) error) error {
	c := &call{ctx: ctx, lobby: lobby, apply: func(t *pgTx, now int64) (tournament.Result, error) {
		err := fn(t, now)
		if refusal, ok := tournament.IsRefusal(err); ok {
			return tournament.Result{Refusal: refusal, At: now}, nil // a refusal commits
		}
		return tournament.Result{At: now}, err
	}}
	s.runCall(c)
	if c.err == nil && c.answer.Result.Refusal != nil {
		return c.answer.Result.Refusal
	}
	return c.err
}

// refusalCode is the refusal code of err, or "" when err is not a refusal.
func refusalCode(err error) tournament.Code {
	if e, ok := tournament.IsRefusal(err); ok {
		return e.Code
	}
	return ""
}
