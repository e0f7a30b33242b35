package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/commitreveal/rps/tournament"
	"github.com/jackc/pgx/v5"
)

// Ending is how a game ended for one of its players.
type Ending string

// Endings of a game for a player.
const (
	// EndingPlaying: the game has not ended.
	EndingPlaying Ending = "playing"
	// EndingWon: the player took the escrow.
	EndingWon Ending = "won"
	// EndingEliminated: the player went out in a round (Record.Round says which).
	EndingEliminated Ending = "eliminated"
	// EndingRefunded: the game was stopped during registration and the bet came back.
	EndingRefunded Ending = "refunded"
	// EndingShare: the game was stopped (by an admin or a bound) with the player still in, and
	// the player got a share of the escrow.
	EndingShare Ending = "share"
)

// Record is one game of a player: the game's header, its lobby's name, the winner's name and the
// player's own registration and result.
type Record struct {
	Game       tournament.Game
	LobbyName  string
	WinnerName string
	Player     tournament.Player
	// Net is what the player got back from the game minus its bet (minus the bet while the game
	// is open): the sum of the game's ledger postings to the player.
	Net    int64
	Ending Ending
	// Round is the round the player went out in, for EndingEliminated.
	Round int
}

// ending says how a game ended for one of its players. The game's own rules decide who is out
// and who is paid; this only names the result they left in the player's row and the header.
func ending(g tournament.Game, p tournament.Player) (Ending, int) {
	switch {
	case g.Stage.Open():
		return EndingPlaying, 0
	case g.Winner == p.AccountID:
		return EndingWon, 0
	case p.EliminatedRound > 0:
		return EndingEliminated, p.EliminatedRound
	case g.Stage == tournament.StageStopped && g.Round == 0:
		return EndingRefunded, 0
	case g.Stage == tournament.StageStopped:
		return EndingShare, 0
	}
	// A finished game has one player left, its winner; anyone else went out in its last round.
	return EndingEliminated, g.Round
}

// RecordCursor is a position in a player's games, newest first: the registration time and the
// game of the last record seen.
type RecordCursor struct {
	RegisteredAt int64
	Game         tournament.GameID
}

// String encodes the cursor for a client.
func (c RecordCursor) String() string {
	return strconv.FormatInt(c.RegisteredAt, 10) + "_" + string(c.Game)
}

// ParseRecordCursor decodes a cursor of String's form; anything else is ErrBadCursor.
func ParseRecordCursor(s string) (RecordCursor, error) {
	at, game, ok := strings.Cut(s, "_")
	n, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || n < 0 || !validID(game) {
		return RecordCursor{}, ErrBadCursor
	}
	return RecordCursor{RegisteredAt: n, Game: tournament.GameID(game)}, nil
}

// recordSQL reads a player's games from a page of its rows of game_players, m: the header of each
// game with its lobby's and winner's names, then the player's row and its net, the sum of the
// game's postings to it (one index probe: the bet, and what came back).
const recordSQL = `SELECT gr.*, m.account_id::text, m.ord, m.registered_at, m.active, m.eliminated_round,
		(SELECT coalesce(sum(amount), 0)::bigint FROM ledger_entries
			WHERE game_id = m.game_id AND player_id = m.account_id AND account_kind = 'player')
	FROM m CROSS JOIN LATERAL (SELECT ` + gameColumns + `,
			(SELECT name FROM lobbies WHERE lobbies.id = games.lobby_id),
			coalesce((SELECT name FROM accounts WHERE accounts.id = games.winner), '')
		FROM games WHERE games.id = m.game_id) gr
	ORDER BY m.account_id, m.registered_at DESC, m.game_id DESC`

func scanRecord(r pgx.CollectableRow) (Record, error) {
	var rec Record
	p := &rec.Player
	g, err := scanGame(r, &rec.LobbyName, &rec.WinnerName, &p.AccountID, &p.Order, &p.RegisteredAt, &p.Active, &p.EliminatedRound, &rec.Net)
	if err != nil {
		return rec, err
	}
	rec.Game, p.GameID = g, g.ID
	rec.Ending, rec.Round = ending(g, *p)
	return rec, nil
}

// PlayerGames returns up to limit of a player's games, newest registration first, after the
// cursor (nil: from the newest).
func (s *Store) PlayerGames(ctx context.Context, account tournament.AccountID, after *RecordCursor, limit int) ([]Record, error) {
	if !validID(string(account)) {
		return nil, nil
	}
	var at any
	var game any
	if after != nil {
		at, game = after.RegisteredAt, string(after.Game)
	}
	recs, err := collect(ctx, s.pool, scanRecord, `WITH m AS (
			SELECT account_id, game_id, ord, registered_at, active, eliminated_round FROM game_players
			WHERE account_id = $1 AND ($2::bigint IS NULL OR (registered_at, game_id) < ($2, $3::uuid))
			ORDER BY registered_at DESC, game_id DESC LIMIT $4)
		`+recordSQL, account, at, game, limit)
	if err != nil {
		return nil, fmt.Errorf("read player games: %w", err)
	}
	return recs, nil
}

// AccountGames is PlayerGames for anyone to read (an account's public profile), and
// tournament.ErrNotFound when no such account exists.
func (s *Store) AccountGames(ctx context.Context, account tournament.AccountID, after *RecordCursor, limit int) ([]Record, error) {
	recs, err := s.PlayerGames(ctx, account, after, limit)
	if err != nil || len(recs) > 0 {
		return recs, err
	}
	// An empty page: of an account with no (more) games, or of none at all.
	exists := false
	if validID(string(account)) {
		if err := queryRow(ctx, s.pool, `SELECT EXISTS (SELECT 1 FROM accounts WHERE id = $1)`, account).Scan(&exists); err != nil {
			return nil, fmt.Errorf("read account: %w", err)
		}
	}
	if !exists {
		return nil, tournament.ErrNotFound
	}
	return nil, nil
}
