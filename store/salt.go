package store

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/commitreveal/rps/tournament"
)

// NewSalt is rpsd's salt source (tournament.Options.NewSalt): 32 bytes from crypto/rand, whatever
// the game and round. The salt is what keeps a published digest of sealed commitments from being
// an offline oracle, so it must be unpredictable.
func NewSalt(tournament.GameID, int) tournament.Salt {
	var s tournament.Salt
	_, _ = rand.Read(s[:]) // crypto/rand.Read never fails (Go 1.24+)
	return s
}

// EndSalt returns the salt that the event ending a game revealed (the salt of the moves_closed
// digest of a round that never resolved: its last committer won, or it stopped in its reveal
// stage), or "" when it revealed none.
func (s *Store) EndSalt(ctx context.Context, game tournament.GameID) (string, error) {
	var salt string
	err := queryRow(ctx, s.pool, `SELECT coalesce(data ->> 'salt', '') FROM events
		WHERE game_id = $1 AND type IN ('game_finished', 'game_stopped')`, game).Scan(&salt)
	if errors.Is(err, tournament.ErrNotFound) {
		return "", nil
	} else if err != nil {
		return "", fmt.Errorf("read the salt of game %s's end: %w", game, err)
	}
	return salt, nil
}
