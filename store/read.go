package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/commitreveal/rps/tournament"
	"github.com/commitreveal/rps/translog"
	"github.com/jackc/pgx/v5"
)

// The read models below read committed state without locking, for the API and for tests. They
// return sealed values (commitments, reveals) as stored: hiding them until their stage closes is
// the caller's job.

// LobbyView is a lobby with its latest game's header and the head of its log, as of Now (the
// database's clock, Unix milliseconds), all read from one snapshot: a read never shows a game
// header from before an action and the caller's own part from after it.
type LobbyView struct {
	Lobby tournament.Lobby
	Game  tournament.Game
	// Caller is the reading player's part in Game while Game is open (zero when the read named
	// no player or the player is not in it).
	Caller Caller
	// HeadSeq and HeadHash are the log's last event (0 and zeros for an empty log).
	HeadSeq  int64
	HeadHash [32]byte
	Now      int64
	// Logged is the lobby's newest event in the transparency log and its leaf (Seq 0: none yet).
	Logged translog.Head
}

// Lobby returns a lobby with its latest game, or tournament.ErrNotFound.
func (s *Store) Lobby(ctx context.Context, id tournament.LobbyID) (LobbyView, error) {
	return s.LobbyAs(ctx, id, "")
}

// LobbyAs returns a lobby with its latest game and, when account is a player's, that player's
// part in the game, or tournament.ErrNotFound.
func (s *Store) LobbyAs(ctx context.Context, id tournament.LobbyID, account tournament.AccountID) (LobbyView, error) {
	if !validID(string(id)) {
		return LobbyView{}, tournament.ErrNotFound
	}
	var v LobbyView
	var head []byte
	var caller Caller
	// Clients poll this read: it comes back in one round trip, every row from one snapshot.
	var b pgx.Batch
	b.Queue(`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`)
	queue(&b, `SELECT `+lobbyColumns+`, last_seq, last_hash FROM lobbies WHERE id = $1`, id).QueryRow(func(r pgx.Row) error {
		var err error
		v.Lobby, err = scanLobby(row{r}, &v.HeadSeq, &head)
		return err
	})
	queue(&b, `SELECT `+gameColumns+`, `+clockSQL+` FROM games WHERE id = (SELECT game_id FROM lobbies WHERE id = $1)`, id).
		QueryRow(func(r pgx.Row) error {
			var err error
			v.Game, err = scanGame(row{r}, &v.Now)
			return err
		})
	if validID(string(account)) {
		queue(&b, callerSQL(`(SELECT id, round FROM games WHERE id = (SELECT game_id FROM lobbies WHERE id = $2))`), account, id).
			QueryRow(func(r pgx.Row) error {
				c, err := scanCaller(r)
				if errors.Is(err, pgx.ErrNoRows) {
					return nil // not registered in the game
				}
				caller = c
				return err
			})
	}
	// The log's head of the lobby, in the same snapshot (a primary-key read).
	queue(&b, `SELECT seq, leaf_index FROM log_heads WHERE lobby_id = $1`, id).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			if err := rows.Scan(&v.Logged.Seq, &v.Logged.LeafIndex); err != nil {
				return err
			}
			v.Logged.Lobby = string(id)
		}
		return rows.Err()
	})
	b.Queue(`COMMIT`)
	if err := mapErr(s.pool.SendBatch(ctx, &b).Close()); err != nil {
		return LobbyView{}, err
	}
	copy(v.HeadHash[:], head)
	if v.Game.Stage.Open() {
		v.Caller = caller
	}
	if s.nowFn != nil {
		v.Now = s.nowFn()
	}
	return v, nil
}

// ErrBadCursor is a page cursor this store did not hand out.
var ErrBadCursor = errors.New("unknown page cursor")

// LobbyFilter narrows a lobby list to the lobbies whose current game matches every field set.
type LobbyFilter struct {
	// Stage is the game's stage ("" for any).
	Stage tournament.Stage
	// Joinable, when set, keeps only the lobbies a player could register in now (true) or only
	// the others (false): the game is in registration and not full.
	Joinable *bool
	// MinBet and MaxBet bound the game's bet, inclusive (nil: no bound).
	MinBet, MaxBet *int64
	// Ruleset is the game's ruleset id ("" for any).
	Ruleset string
}

// LobbyCursor is the position after the last lobby of a page: joinable lobbies come first, then
// the others, each oldest first.
type LobbyCursor struct {
	Joinable  bool
	CreatedAt int64
	Lobby     tournament.LobbyID
}

// String encodes the cursor for a client.
func (c LobbyCursor) String() string {
	j := "0"
	if c.Joinable {
		j = "1"
	}
	return j + "_" + strconv.FormatInt(c.CreatedAt, 10) + "_" + string(c.Lobby)
}

// ParseLobbyCursor decodes a cursor of String's form; anything else is ErrBadCursor.
func ParseLobbyCursor(s string) (LobbyCursor, error) {
	parts := strings.Split(s, "_")
	if len(parts) != 3 || (parts[0] != "0" && parts[0] != "1") || !validID(parts[2]) {
		return LobbyCursor{}, ErrBadCursor
	}
	at, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return LobbyCursor{}, ErrBadCursor
	}
	return LobbyCursor{Joinable: parts[0] == "1", CreatedAt: at, Lobby: tournament.LobbyID(parts[2])}, nil
}

// Joinable reports whether a player could register in the lobby's game now (see
// tournament.Game.Joinable).
func (v LobbyView) Joinable() bool { return v.Game.Joinable() }

// Cursor is the cursor of the page that continues after v.
func (v LobbyView) Cursor() LobbyCursor {
	return LobbyCursor{Joinable: v.Joinable(), CreatedAt: v.Lobby.CreatedAt, Lobby: v.Lobby.ID}
}

// ListLobbies returns up to limit lobbies that match the filter, joinable ones first, each group
// oldest first, after the cursor (nil: from the first), with their latest games and, when
// account is a player's, that player's part in each open one, all as of one instant.
func (s *Store) ListLobbies(ctx context.Context, f LobbyFilter, after *LobbyCursor, limit int, account tournament.AccountID) ([]LobbyView, error) {
	var views []LobbyView
	var (
		joinable  bool
		createdAt int64
		lobby     any
	)
	if after != nil {
		joinable, createdAt, lobby = after.Joinable, after.CreatedAt, string(after.Lobby)
	}
	var minBet, maxBet any
	if f.MinBet != nil {
		minBet = *f.MinBet
	}
	if f.MaxBet != nil {
		maxBet = *f.MaxBet
	}
	var joinableFilter any
	if f.Joinable != nil {
		joinableFilter = *f.Joinable
	}
	// One snapshot for the instant and the rows.
	err := s.withTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		now, err := s.nowOn(ctx, tx)
		if err != nil {
			return err
		}
		views, err = collect(ctx, tx, func(r pgx.CollectableRow) (LobbyView, error) {
			var v LobbyView
			var err error
			v.Lobby, err = scanLobby(r, gameDest(&v.Game)...)
			v.Now = now
			return v, err
		}, `WITH page AS (
				SELECT l.id, l.game_id, l.created_at, NOT `+joinableSQL+` AS later
				FROM lobbies l JOIN games g ON g.id = l.game_id
				WHERE ($1::text IS NULL OR g.stage = $1)
					AND ($2::boolean IS NULL OR `+joinableSQL+` = $2)
					AND ($3::bigint IS NULL OR (g.config ->> 'betSize')::bigint >= $3)
					AND ($4::bigint IS NULL OR (g.config ->> 'betSize')::bigint <= $4)
					AND ($5::text IS NULL OR g.config ->> 'ruleset' = $5)
					AND ($6::uuid IS NULL OR (NOT `+joinableSQL+`, l.created_at, l.id) > (NOT $7::boolean, $8::bigint, $6::uuid))
				ORDER BY 4, l.created_at, l.id LIMIT $9)
			SELECT l.*, g.* FROM page
			CROSS JOIN LATERAL (SELECT `+lobbyColumns+` FROM lobbies WHERE id = page.id) l
			CROSS JOIN LATERAL (SELECT `+gameColumns+` FROM games WHERE id = page.game_id) g
			ORDER BY page.later, page.created_at, page.id`,
			nullString(string(f.Stage)), joinableFilter, minBet, maxBet, nullString(f.Ruleset), lobby, joinable, createdAt, limit)
		if err != nil {
			return fmt.Errorf("list lobbies: %w", err)
		}
		var open []tournament.Game
		for _, v := range views {
			if v.Game.Stage.Open() {
				open = append(open, v.Game)
			}
		}
		callers, err := callersOn(ctx, tx, account, open)
		for i := range views {
			views[i].Caller = callers[views[i].Game.ID]
		}
		return err
	})
	return views, err
}

// nullString is an optional text argument: NULL when empty.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Caller is a player's part in a game: its registration and its move in the game's current
// round, each nil when there is none.
type Caller struct {
	Player *tournament.Player
	Move   *tournament.RoundMove
}

// callersOn reads, in one query, a player's part in each of the games (as of the rounds their
// headers give) in which it is registered.
func callersOn(ctx context.Context, q querier, account tournament.AccountID, games []tournament.Game) (map[tournament.GameID]Caller, error) {
	out := make(map[tournament.GameID]Caller, len(games))
	if !validID(string(account)) || len(games) == 0 {
		return out, nil
	}
	ids := make([]string, len(games))
	rounds := make([]int32, len(games))
	for i, g := range games {
		ids[i], rounds[i] = string(g.ID), int32(g.Round)
	}
	rows, err := collect(ctx, q, func(r pgx.CollectableRow) (Caller, error) { return scanCaller(r) },
		callerSQL(`unnest($2::uuid[], $3::int[])`), account, uuidArray(ids), rounds)
	if err != nil {
		return nil, fmt.Errorf("read callers: %w", err)
	}
	for _, c := range rows {
		out[c.Player.GameID] = c
	}
	return out, nil
}

// callerSQL reads a player's registration and move in each game of games, a relation of (id,
// round) pairs (the round whose move is read); $1 is the player.
func callerSQL(games string) string {
	return `SELECT gp.game_id::text, gp.account_id::text, gp.ord, gp.registered_at, gp.active, gp.eliminated_round,
			g.round, ` + moveFields + `
		FROM ` + games + ` AS g (id, round)
		JOIN game_players gp ON gp.game_id = g.id AND gp.account_id = $1
		LEFT JOIN round_moves rm ON rm.game_id = g.id AND rm.round = g.round AND rm.account_id = $1`
}

// scanCaller scans a row of callerSQL.
func scanCaller(r pgx.Row) (Caller, error) {
	var p tournament.Player
	var m moveRow
	err := r.Scan(append([]any{&p.GameID, &p.AccountID, &p.Order, &p.RegisteredAt, &p.Active, &p.EliminatedRound,
		&m.m.Round}, m.dest()...)...)
	move, committed := m.move()
	if err != nil || !committed {
		return Caller{Player: &p}, err
	}
	move.GameID, move.AccountID = p.GameID, p.AccountID
	return Caller{Player: &p, Move: &move}, nil
}

// GamePlayer is a player of a game with the account's name.
type GamePlayer struct {
	tournament.Player
	Name string
}

// GamePlayers is Players with each account's name.
func (s *Store) GamePlayers(ctx context.Context, game tournament.GameID, after, limit int) ([]GamePlayer, error) {
	if !validID(string(game)) {
		return nil, nil
	}
	return collect(ctx, s.pool, func(r pgx.CollectableRow) (GamePlayer, error) {
		var p GamePlayer
		err := r.Scan(&p.GameID, &p.AccountID, &p.Order, &p.RegisteredAt, &p.Active, &p.EliminatedRound, &p.Name)
		return p, err
	}, `SELECT gp.game_id::text, gp.account_id::text, gp.ord, gp.registered_at, gp.active, gp.eliminated_round, a.name
		FROM game_players gp JOIN accounts a ON a.id = gp.account_id
		WHERE gp.game_id = $1 AND gp.ord > $2 ORDER BY gp.ord LIMIT $3`, game, after, limit)
}

// RoundResult returns the data of the event that resolved a round of a game, or nil if the round
// has not been resolved (yet, or ever: a game can end before its round resolves).
func (s *Store) RoundResult(ctx context.Context, g tournament.Game, round int) (*tournament.RoundResolvedData, error) {
	var result tournament.RoundResolvedData
	err := queryRow(ctx, s.pool, `SELECT data FROM events
		WHERE game_id = $1 AND type = 'round_resolved' AND (data ->> 'round')::int = $2`, g.ID, round).Scan(&result)
	if errors.Is(err, tournament.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("read round result: %w", err)
	}
	return &result, nil
}

// Game returns a game's header, or tournament.ErrNotFound.
func (s *Store) Game(ctx context.Context, id tournament.GameID) (tournament.Game, error) {
	if !validID(string(id)) {
		return tournament.Game{}, tournament.ErrNotFound
	}
	return scanGame(queryRow(ctx, s.pool, `SELECT `+gameColumns+` FROM games WHERE id = $1`, id))
}

// LobbyGames returns up to limit of a lobby's games numbered below before (0: from the newest),
// newest first; tournament.ErrNotFound when no such lobby exists.
func (s *Store) LobbyGames(ctx context.Context, lobby tournament.LobbyID, before int64, limit int) ([]tournament.Game, error) {
	if !validID(string(lobby)) {
		return nil, tournament.ErrNotFound
	}
	games, err := collect(ctx, s.pool, func(r pgx.CollectableRow) (tournament.Game, error) { return scanGame(r) },
		`SELECT `+gameColumns+` FROM games WHERE lobby_id = $1 AND ($2 = 0 OR number < $2)
		ORDER BY number DESC LIMIT $3`, lobby, before, limit)
	if err != nil {
		return nil, fmt.Errorf("read lobby games: %w", err)
	}
	if len(games) == 0 {
		// No (more) games, or no lobby: one index probe says which (not the whole lobby view).
		var exists bool
		if err := queryRow(ctx, s.pool, `SELECT EXISTS (SELECT 1 FROM lobbies WHERE id = $1)`, lobby).Scan(&exists); err != nil {
			return nil, fmt.Errorf("read lobby: %w", err)
		}
		if !exists {
			return nil, tournament.ErrNotFound
		}
	}
	return games, nil
}

// RoundPlayer is a player of a round with its move, if it committed one.
type RoundPlayer struct {
	AccountID tournament.AccountID
	Order     int
	// Move is nil for a player who did not commit in the round.
	Move *tournament.RoundMove
}

// RoundPlayers returns up to limit of the players who were in a round when it started, with a
// registration order greater than after, in registration order, each with its move.
func (s *Store) RoundPlayers(ctx context.Context, game tournament.GameID, round, after, limit int) ([]RoundPlayer, error) {
	if !validID(string(game)) {
		return nil, nil
	}
	// A player was in round r if it is still in, or went out in round r or later.
	return collect(ctx, s.pool, func(r pgx.CollectableRow) (RoundPlayer, error) {
		var p RoundPlayer
		var m moveRow
		err := r.Scan(append([]any{&p.AccountID, &p.Order}, m.dest()...)...)
		move, committed := m.move()
		if err != nil || !committed {
			return p, err
		}
		move.GameID, move.Round, move.AccountID = game, round, p.AccountID
		p.Move = &move
		return p, nil
	}, `SELECT gp.account_id::text, gp.ord, `+moveFields+`
		FROM game_players gp
		LEFT JOIN round_moves rm ON rm.game_id = gp.game_id AND rm.round = $2 AND rm.account_id = gp.account_id
		WHERE gp.game_id = $1 AND (gp.active OR gp.eliminated_round >= $2) AND gp.ord > $3
		ORDER BY gp.ord LIMIT $4`, game, round, after, limit)
}
