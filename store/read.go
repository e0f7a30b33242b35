package store

import (
	"context"
	"fmt"

	"github.com/commitreveal/rps/tournament"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The read models below read committed state without locking, for the API and for tests. They
// return sealed values (commitments, reveals) as stored: hiding them until their stage closes is
// the caller's job.

// LobbyView is a lobby with its latest game's header.
type LobbyView struct {
	Lobby tournament.Lobby
	Game  tournament.Game
}

// Lobby returns a lobby with its latest game, or tournament.ErrNotFound.
func (s *Store) Lobby(ctx context.Context, id tournament.LobbyID) (LobbyView, error) {
	if !validID(string(id)) {
		return LobbyView{}, tournament.ErrNotFound
	}
	l, err := scanLobby(queryRow(ctx, s.pool, `SELECT `+lobbyColumns+` FROM lobbies WHERE id = $1`, id))
	if err != nil {
		return LobbyView{}, err
	}
	g, err := s.Game(ctx, l.GameID)
	if err != nil {
		return LobbyView{}, fmt.Errorf("read game %s: %w", l.GameID, err)
	}
	return LobbyView{Lobby: l, Game: g}, nil
}

// Game returns a game's header, or tournament.ErrNotFound.
func (s *Store) Game(ctx context.Context, id tournament.GameID) (tournament.Game, error) {
	if !validID(string(id)) {
		return tournament.Game{}, tournament.ErrNotFound
	}
	return scanGame(queryRow(ctx, s.pool, `SELECT `+gameColumns+` FROM games WHERE id = $1`, id))
}

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
		`SELECT `+moveColumns+` FROM round_moves
		WHERE game_id = $1 AND round = $2 AND account_id > $3 ORDER BY account_id LIMIT $4`,
		game, round, after, limit)
}
