package store

import (
	"context"
	"errors"
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

// settleGames adds, once, every player's result of each game that has just ended to the
// player's totals: overall, for the day, and for each period whose base the day is after. It runs
// after the transaction that ended the games committed, each game in a transaction of its own, so
// that the lobby's lock is not held for it (at 100,000 players it took 3.8 s, as long as the
// escrow's split). A game whose settling failed, or whose replica stopped before it, is left to
// settleEnded. It reads the game's postings to its players, so reading the standings never scans
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

// settleEnded settles the ended games that are not settled yet (see settleGames), oldest first. A
// game that fails to settle does not hold up the others: the error of each is returned, and the
// next sweep tries it again.
func (s *Store) settleEnded(ctx context.Context) error {
	ids, err := collect(ctx, s.pool, pgx.RowTo[tournament.GameID], `SELECT id::text FROM games
		WHERE NOT settled AND stage IN ('finished', 'stopped') ORDER BY ended_at LIMIT 1000`)
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
const settleSQL = `WITH claim AS (
		UPDATE games SET settled = true
		WHERE id = $1 AND NOT settled AND stage IN ('finished', 'stopped')
		RETURNING id, winner, round > 0 AS played, (ended_at / 86400000)::int AS day),
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
