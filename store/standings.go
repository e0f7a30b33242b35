package store

// Standings: each ended game's results added, once, to its players' totals, after the
// transaction that ended it committed.

import (
	"context"
	"errors"
	"fmt"

	"github.com/commitreveal/rps/tournament"
	"github.com/jackc/pgx/v5"
)

// settleGames adds, once, every player's result of each game that has just ended to the
// player's totals: overall, for the day, and for each period whose base the day is after. It runs
// after the transaction that ended the games committed, each game in a transaction of its own, so
// that the lobby's lock is not held for it (at 100,000 players it took 3.8 s, as long as the
// escrow's split). A game whose settling failed, or whose replica stopped before it, is left to
// SettleEnded. It reads the game's postings to its players, so reading the standings never scans
// the ledger.
func (s *Store) settleGames(ctx context.Context, games []tournament.GameID) {
	for _, id := range games {
		if err := s.settleGame(ctx, id); err != nil && ctx.Err() == nil {
			s.log.Error("settling an ended game failed; the next sweep retries", "game", id, "err", err)
		}
	}
}

// settleGame settles one ended game, unless it is settled already.
func (s *Store) settleGame(ctx context.Context, id tournament.GameID) error {
	return s.run(context.WithoutCancel(ctx), func(t *pgTx) error {
		t.tx.later(settleSQL, id)
		return nil
	})
}

// SettleEnded settles the ended games that are not settled yet (see settleGames), oldest first. A
// game that fails to settle does not hold up the others: the error of each is returned, and the
// next sweep tries it again.
func (s *Store) SettleEnded(ctx context.Context) error {
	ids, err := collect(ctx, s.pool, pgx.RowTo[tournament.GameID], `SELECT g.id::text FROM games g
		WHERE NOT g.settled AND `+endedSQL+` ORDER BY ended_at LIMIT 1000`)
	if err != nil {
		return fmt.Errorf("find unsettled games: %w", err)
	}
	var errs []error
	for _, id := range ids {
		if ctx.Err() != nil {
			break
		}
		if err := s.settleGame(ctx, id); err != nil {
			errs = append(errs, fmt.Errorf("settle game %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// settleSQL settles game $1 if it has ended and is not settled yet, in one statement: the claim
// of the game's settled flag makes it count once, however many replicas try, and together with
// the totals it adds, so that a crash cannot keep one without the other. A game stopped during
// its registration (every bet refunded, round 0) is not a game played: it is claimed and adds
// nothing.
var settleSQL = `WITH claim AS (
		UPDATE games g SET settled = true
		WHERE g.id = $1 AND NOT g.settled AND ` + endedSQL + `
		RETURNING g.id, g.winner, g.round > 0 AS played, (g.ended_at / 86400000)::int AS day),
	counted AS (
		SELECT gp.account_id, coalesce(sum(e.amount), 0)::bigint AS net,
			(gp.account_id IS NOT DISTINCT FROM claim.winner)::int AS won, claim.day
		FROM claim JOIN game_players gp ON gp.game_id = claim.id AND claim.played
		LEFT JOIN ledger_entries e ON e.game_id = $1 AND e.player_id = gp.account_id AND e.account_kind = 'player'
		GROUP BY gp.account_id, claim.winner, claim.day),
	totals AS (
		INSERT INTO account_totals AS t (account_id, games, wins, net)
		SELECT account_id, 1, won, net FROM counted
		ON CONFLICT (account_id) DO UPDATE
		SET games = t.games + 1, wins = t.wins + excluded.wins, net = t.net + excluded.net),
	days AS (
		INSERT INTO account_days AS d (day, account_id, games, wins, net)
		SELECT day, account_id, 1, won, net FROM counted
		ON CONFLICT (day, account_id) DO UPDATE
		SET games = d.games + 1, wins = d.wins + excluded.wins, net = d.net + excluded.net),
	-- A period being rolled forward waits for this share lock, and this for the roll.
	open_periods AS (SELECT days FROM periods WHERE base < (SELECT day FROM claim) FOR SHARE)
	INSERT INTO account_period_totals AS p (days, account_id, games, wins, net)
	SELECT open_periods.days, account_id, 1, won, net FROM counted, open_periods
	ON CONFLICT (days, account_id) DO UPDATE
	SET games = p.games + 1, wins = p.wins + excluded.wins, net = p.net + excluded.net`

// dayOf is the UTC day (days since the Unix epoch) of an instant in Unix milliseconds.
func dayOf(ms int64) int32 {
	return int32(ms / 86_400_000)
}
