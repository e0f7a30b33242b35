package store

import (
	"context"
	"fmt"

	"github.com/commitreveal/rps/tournament"
	"github.com/jackc/pgx/v5"
)

// MatchCandidates returns up to limit lobbies whose current game a player could join with the
// bet betSize (and the ruleset, unless it is ""), closest to starting first: the fewest places
// left, then the earliest registration deadline (an empty registration has none), then the
// oldest lobby. Games the player is in already are left out. Nothing is locked: the registration
// decides, under the lobby's lock.
func (s *Store) MatchCandidates(ctx context.Context, account tournament.AccountID, betSize int64, ruleset string, limit int) ([]tournament.LobbyID, error) {
	ids, err := collect(ctx, s.pool, pgx.RowTo[tournament.LobbyID], `SELECT l.id::text
		FROM lobbies l JOIN games g ON g.id = l.game_id
		WHERE `+joinableSQL+`
			AND (g.config ->> 'betSize')::bigint = $2
			AND ($3::text IS NULL OR g.config ->> 'ruleset' = $3)
			AND NOT EXISTS (SELECT 1 FROM game_players gp WHERE gp.game_id = g.id AND gp.account_id = $1)
		ORDER BY (g.config ->> 'playersCountLimit')::int - g.players, g.deadline = 0, g.deadline, l.created_at, l.id
		LIMIT $4`, account, betSize, nullString(ruleset), limit)
	if err != nil {
		return nil, fmt.Errorf("find lobbies to join: %w", err)
	}
	return ids, nil
}
