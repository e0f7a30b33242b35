package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/commitreveal/rps/tournament"
)

// GamePosting is a posting between a game's escrow and a player, as the public sees it.
type GamePosting struct {
	ID     int64
	Kind   tournament.PostingKind
	Player tournament.AccountID
	// Amount is positive: into the escrow for a bet, out of it otherwise.
	Amount int64
	At     int64
}

// GamePostings returns up to limit postings of a game's escrow with an id greater than after,
// oldest first.
func (s *Store) GamePostings(ctx context.Context, game tournament.GameID, after int64, limit int) ([]GamePosting, error) {
	if !validID(string(game)) {
		return nil, nil
	}
	return collect(ctx, s.pool, pgx.RowToStructByPos[GamePosting], `SELECT e.posting_id, e.kind,
			p.player_id::text, abs(e.amount), e.at
		FROM ledger_entries e
		JOIN ledger_entries p ON p.posting_id = e.posting_id AND p.account_kind = 'player'
		WHERE e.escrow_id = $1 AND e.posting_id > $2
		ORDER BY e.posting_id LIMIT $3`, game, after, limit)
}
