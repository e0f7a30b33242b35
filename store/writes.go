package store

// Set-based writes: the rows a transaction's operations write are held in memory (the pgTx's
// caches show them to its own reads) and written together, one statement for all of them, each
// kind of row by one of its data-modifying CTEs over arrays: every event of the batch in one
// insert (their chain hashes computed in Go), every move, registration, ledger posting,
// idempotency record and audit row likewise, each game and lobby row once, and one
// notification per lobby. They are written when a statement needs them in the database first
// (a set effect, a read of a whole round) and at the commit, so a batch of actions that changes
// no stage costs the statements of one action.
//
// Foreign keys are checked at the end of the statement, so a row may refer to another written by
// the same statement (a move to its registration, an event to the one before it).

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/commitreveal/rps/tournament"
	"github.com/jackc/pgx/v5/pgconn"
)

// heldWrites are the rows written since the transaction last wrote.
type heldWrites struct {
	// newGames are games inserted, as they are now; games are the other games changed.
	newGames []tournament.Game
	games    map[tournament.GameID]tournament.Game
	// lobbies are the lobbies whose row changed (Lobby set) or whose chain head moved.
	lobbies  map[tournament.LobbyID]*lobbyWrite
	players  []tournament.Player
	moves    []tournament.RoundMove
	reveals  []tournament.RoundMove
	postings []tournament.Posting
	events   []tournament.LoggedEvent
	results  []resultRow
	audits   []auditRow
	// balances are the players whose balance a held posting changes.
	balances map[tournament.AccountID]bool
}

// lobbyWrite is a lobby's held change: its row, or only its chain head (the pgTx's heads).
type lobbyWrite struct {
	// row is the lobby's row when it changed, nil when only its chain head moved.
	row *tournament.Lobby
	// moved reports that its chain head moved.
	moved bool
}

// resultRow is a result stored under its key.
type resultRow struct {
	key    *IdempotencyKey
	stored []byte
	at     int64
}

// auditRow is an entry of the audit log.
type auditRow struct {
	entry AuditEntry
	at    int64
}

func (w *heldWrites) empty() bool {
	return len(w.newGames) == 0 && len(w.games) == 0 && len(w.lobbies) == 0 && len(w.players) == 0 &&
		len(w.moves) == 0 && len(w.reveals) == 0 && len(w.postings) == 0 && len(w.events) == 0 &&
		len(w.results) == 0 && len(w.audits) == 0
}

// holdGame holds a game's row as it is now.
func (w *heldWrites) holdGame(g tournament.Game, inserted bool) {
	for i := range w.newGames {
		if w.newGames[i].ID == g.ID {
			w.newGames[i] = g
			return
		}
	}
	if inserted {
		w.newGames = append(w.newGames, g)
		return
	}
	if w.games == nil {
		w.games = make(map[tournament.GameID]tournament.Game)
	}
	w.games[g.ID] = g
}

func (w *heldWrites) lobby(id tournament.LobbyID) *lobbyWrite {
	if w.lobbies == nil {
		w.lobbies = make(map[tournament.LobbyID]*lobbyWrite)
	}
	l := w.lobbies[id]
	if l == nil {
		l = &lobbyWrite{}
		w.lobbies[id] = l
	}
	return l
}

// pendingMove reports whether a move of the key is held as an insert.
func (w *heldWrites) pendingMove(m tournament.RoundMove) bool {
	return slices.ContainsFunc(w.moves, func(h tournament.RoundMove) bool {
		return h.GameID == m.GameID && h.Round == m.Round && h.AccountID == m.AccountID
	})
}

// writeHeld queues the statement that writes the held rows (sent with the next statement that
// needs an answer, or with the COMMIT), and forgets them.
func (t *pgTx) writeHeld() error {
	w := &t.held
	if w.empty() {
		return nil
	}
	var b setStatement
	// Games first: registrations, moves, postings and events refer to them. A new game's
	// ruleset was saved by a statement before this one.
	if len(w.newGames) > 0 {
		b.cte("new_games", `INSERT INTO games (id, lobby_id, number, config, ruleset_hash, stage, round,
				stage_started_at, deadline, extensions, joined, players, active, committed, revealed, escrow,
				winner, payout, stop_reason, created_at, ended_at)
			SELECT `+gameRowsSQL(&b, w.newGames))
	}
	if len(w.games) > 0 {
		games := make([]tournament.Game, 0, len(w.games))
		for _, g := range w.games {
			games = append(games, g)
		}
		slices.SortFunc(games, func(a, b tournament.Game) int { return strings.Compare(string(a.ID), string(b.ID)) })
		b.cte("games", `UPDATE games g SET stage = u.stage, round = u.round, stage_started_at = u.stage_started_at,
				deadline = u.deadline, extensions = u.extensions, joined = u.joined, players = u.players,
				active = u.active, committed = u.committed, revealed = u.revealed, escrow = u.escrow,
				winner = u.winner, payout = u.payout, stop_reason = u.stop_reason, ended_at = u.ended_at
			FROM (SELECT `+gameRowsSQL(&b, games)+`) AS u (id, lobby_id, number, config, ruleset_hash, stage, round,
				stage_started_at, deadline, extensions, joined, players, active, committed, revealed, escrow,
				winner, payout, stop_reason, created_at, ended_at)
			WHERE g.id = u.id`)
	}
	if len(w.lobbies) > 0 {
		t.lobbyRows(&b)
	}
	if len(w.players) > 0 {
		n := len(w.players)
		game, account, ord, at := make([]string, n), make([]string, n), make([]int32, n), make([]int64, n)
		for i, p := range w.players {
			game[i], account[i], ord[i], at[i] = string(p.GameID), string(p.AccountID), int32(p.Order), p.RegisteredAt
		}
		b.cte("players", `INSERT INTO game_players (game_id, account_id, ord, registered_at, active, eliminated_round)
			SELECT game, account, ord, at, true, 0
			FROM unnest(`+b.arg(game)+`::uuid[], `+b.arg(account)+`::uuid[], `+b.arg(ord)+`::int[], `+b.arg(at)+`::bigint[])
				AS p (game, account, ord, at)`)
	}
	if len(w.moves) > 0 {
		n := len(w.moves)
		game, round, account, commitment, at := make([]string, n), make([]int32, n), make([]string, n), make([][]byte, n), make([]int64, n)
		for i, m := range w.moves {
			game[i], round[i], account[i], commitment[i], at[i] = string(m.GameID), int32(m.Round), string(m.AccountID), m.Commitment[:], m.CommittedAt
		}
		b.cte("moves", `INSERT INTO round_moves (game_id, round, account_id, commitment, committed_at)
			SELECT * FROM unnest(`+b.arg(game)+`::uuid[], `+b.arg(round)+`::int[], `+b.arg(account)+`::uuid[], `+
			b.arg(commitment)+`::bytea[], `+b.arg(at)+`::bigint[])`)
	}
	if len(w.reveals) > 0 {
		n := len(w.reveals)
		game, round, account, reveal, move, at := make([]string, n), make([]int32, n), make([]string, n), make([][]byte, n), make([]int16, n), make([]int64, n)
		for i, m := range w.reveals {
			game[i], round[i], account[i], reveal[i], move[i], at[i] = string(m.GameID), int32(m.Round), string(m.AccountID), []byte(m.Reveal), int16(m.Move), m.RevealedAt
		}
		// Each row by its whole primary key (a round has up to 100,000).
		b.cte("reveals", `UPDATE round_moves m SET revealed = true, reveal = u.reveal, move = u.move, revealed_at = u.at
			FROM unnest(`+b.arg(game)+`::uuid[], `+b.arg(round)+`::int[], `+b.arg(account)+`::uuid[], `+
			b.arg(reveal)+`::bytea[], `+b.arg(move)+`::smallint[], `+b.arg(at)+`::bigint[])
				AS u (game, round, account, reveal, move, at)
			WHERE m.game_id = u.game AND m.round = u.round AND m.account_id = u.account`)
	}
	if len(w.postings) > 0 {
		postingRows(&b, w.postings)
	}
	if len(w.events) > 0 {
		if err := t.eventRows(&b); err != nil {
			return err
		}
	}
	if len(w.results) > 0 {
		n := len(w.results)
		account, method, route, name, hash, stored, at := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([][]byte, n), make([][]byte, n), make([]int64, n)
		for i, r := range w.results {
			k := r.key
			account[i], method[i], route[i], name[i], hash[i], stored[i], at[i] = string(k.AccountID), k.Method, k.Route, k.Key, k.RequestHash, r.stored, r.at
		}
		b.cte("results", `INSERT INTO idempotency_keys (account_id, method, route, key, request_hash, response, result_version, created_at)
			SELECT account, method, route, key, hash, stored, `+strconv.Itoa(resultVersion)+`, at
			FROM unnest(`+b.arg(account)+`::uuid[], `+b.arg(method)+`::text[], `+b.arg(route)+`::text[], `+
			b.arg(name)+`::text[], `+b.arg(hash)+`::bytea[], `+b.arg(stored)+`::bytea[], `+b.arg(at)+`::bigint[])
				AS k (account, method, route, key, hash, stored, at)`)
	}
	if len(w.audits) > 0 {
		n := len(w.audits)
		actor, name, target, detail, at := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]int64, n)
		for i, a := range w.audits {
			actor[i], name[i], target[i], detail[i], at[i] = string(a.entry.Actor), a.entry.Action, a.entry.Target, string(a.entry.Detail), a.at
		}
		b.cte("audits", `INSERT INTO admin_audit (actor, action, target, detail, at)
			SELECT actor, action, target, detail::jsonb, at
			FROM unnest(`+b.arg(actor)+`::uuid[], `+b.arg(name)+`::text[], `+b.arg(target)+`::text[], `+
			b.arg(detail)+`::text[], `+b.arg(at)+`::bigint[]) AS a (actor, action, target, detail, at)`)
	}
	t.deadlineNote(&b)
	t.held = heldWrites{}
	t.tx.laterChecked(checkHeldWrite, b.sql(), b.args...)
	return nil
}

// checkHeldWrite turns the failures of held writes that lost a race into a retry of the
// transaction: a result's insert, because a concurrent duplicate stored the key first in a
// transaction that committed (the retry replays it); a balance gone below zero, because another
// transaction spent it after this one read it unlocked (see callRead.hold; the retry reads it
// again, and refuses the bet).
func checkHeldWrite(_ pgconn.CommandTag, err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return err
	}
	switch {
	case errors.Is(err, ErrConflict) && pgErr.ConstraintName == "idempotency_keys_pkey":
		return fmt.Errorf("%w: idempotency key stored by a concurrent duplicate: %w", ErrRetry, err)
	case errors.Is(err, ErrConstraint) && pgErr.ConstraintName == "accounts_player_balance_nonnegative":
		return fmt.Errorf("%w: a balance was spent concurrently: %w", ErrRetry, err)
	}
	return err
}

// gameRowsSQL is the select list of games rows from arrays, in the columns' order.
func gameRowsSQL(b *setStatement, games []tournament.Game) string {
	n := len(games)
	id, lobby, number, config, ruleset, stage := make([]string, n), make([]string, n), make([]int32, n), make([]tournament.Config, n), make([]string, n), make([]string, n)
	round, started, deadline, extensions := make([]int32, n), make([]int64, n), make([]int64, n), make([]int32, n)
	joined, players, active, committed, revealed := make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
	escrow, winner, payout, reason, created, ended := make([]int64, n), make([]string, n), make([]int64, n), make([]string, n), make([]int64, n), make([]int64, n)
	for i, g := range games {
		id[i], lobby[i], number[i], config[i], ruleset[i], stage[i] = string(g.ID), string(g.LobbyID), int32(g.Number), g.Config, g.RulesetHash, string(g.Stage)
		round[i], started[i], deadline[i], extensions[i] = int32(g.Round), g.StageStartedAt, g.Deadline, int32(g.Extensions)
		joined[i], players[i], active[i], committed[i], revealed[i] = int32(g.Joined), int32(g.Players), int32(g.Active), int32(g.Committed), int32(g.Revealed)
		escrow[i], winner[i], payout[i], reason[i], created[i], ended[i] = g.Escrow, string(g.Winner), g.Payout, g.StopReason, g.CreatedAt, g.EndedAt
	}
	return `id, lobby_id, number, config, ruleset_hash, stage, round, stage_started_at, deadline, extensions,
			joined, players, active, committed, revealed, escrow, nullif(winner, '')::uuid, payout, stop_reason, created_at, ended_at
		FROM unnest(` + b.arg(id) + `::uuid[], ` + b.arg(lobby) + `::uuid[], ` + b.arg(number) + `::int[], ` + b.arg(config) + `::jsonb[], ` +
		b.arg(ruleset) + `::text[], ` + b.arg(stage) + `::text[], ` + b.arg(round) + `::int[], ` + b.arg(started) + `::bigint[], ` +
		b.arg(deadline) + `::bigint[], ` + b.arg(extensions) + `::int[], ` + b.arg(joined) + `::int[], ` + b.arg(players) + `::int[], ` +
		b.arg(active) + `::int[], ` + b.arg(committed) + `::int[], ` + b.arg(revealed) + `::int[], ` + b.arg(escrow) + `::bigint[], ` +
		b.arg(winner) + `::text[], ` + b.arg(payout) + `::bigint[], ` + b.arg(reason) + `::text[], ` + b.arg(created) + `::bigint[], ` +
		b.arg(ended) + `::bigint[])
			AS r (id, lobby_id, number, config, ruleset_hash, stage, round, stage_started_at, deadline, extensions,
				joined, players, active, committed, revealed, escrow, winner, payout, stop_reason, created_at, ended_at)`
}

// lobbyRows writes the lobbies' changed rows and moved chain heads, each lobby's by one UPDATE
// (two of one row in a statement would not both take effect).
func (t *pgTx) lobbyRows(b *setStatement) {
	ids := make([]tournament.LobbyID, 0, len(t.held.lobbies))
	for id := range t.held.lobbies {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var rows []tournament.Lobby
	var rowHeads, heads []tournament.LoggedEvent
	for _, id := range ids {
		switch l := t.held.lobbies[id]; {
		case l.row != nil:
			rows, rowHeads = append(rows, *l.row), append(rowHeads, t.heads[id])
		case l.moved:
			head := t.heads[id]
			head.LobbyID = id
			heads = append(heads, head)
		}
	}
	if len(rows) > 0 {
		n := len(rows)
		id, name, closed, config, next, game, games := make([]string, n), make([]string, n), make([]bool, n), make([]tournament.Config, n), make([]*tournament.Config, n), make([]string, n), make([]int32, n)
		seq, hash := make([]int64, n), make([][]byte, n)
		for i, l := range rows {
			id[i], name[i], closed[i], config[i], next[i], game[i], games[i] = string(l.ID), l.Name, l.Closed, l.Config, l.NextConfig, string(l.GameID), int32(l.Games)
			seq[i], hash[i] = rowHeads[i].Seq, rowHeads[i].Hash[:]
			if seq[i] == 0 {
				hash[i] = nil
			}
		}
		b.cte("lobby_rows", `UPDATE lobbies l SET name = u.name, closed = u.closed, config = u.config,
				next_config = u.next, game_id = nullif(u.game, '')::uuid, games = u.games, last_seq = u.seq, last_hash = u.hash
			FROM unnest(`+b.arg(id)+`::uuid[], `+b.arg(name)+`::text[], `+b.arg(closed)+`::boolean[], `+
			b.arg(config)+`::jsonb[], `+b.arg(next)+`::jsonb[], `+b.arg(game)+`::text[], `+b.arg(games)+`::int[], `+
			b.arg(seq)+`::bigint[], `+b.arg(hash)+`::bytea[])
				AS u (id, name, closed, config, next, game, games, seq, hash)
			WHERE l.id = u.id`)
	}
	if len(heads) > 0 {
		n := len(heads)
		id, seq, hash := make([]string, n), make([]int64, n), make([][]byte, n)
		for i, h := range heads {
			id[i], seq[i], hash[i] = string(h.LobbyID), h.Seq, h.Hash[:]
		}
		b.cte("heads", `UPDATE lobbies l SET last_seq = u.seq, last_hash = u.hash
			FROM unnest(`+b.arg(id)+`::uuid[], `+b.arg(seq)+`::bigint[], `+b.arg(hash)+`::bytea[]) AS u (id, seq, hash)
			WHERE l.id = u.id`)
	}
}

// postingRows writes postings, each as its two ledger entries (in order: the entries' ids order
// a player's ledger), and applies them to the player balances, each balance once.
func postingRows(b *setStatement, postings []tournament.Posting) {
	n := len(postings)
	fromKind, fromPlayer, fromEscrow, toKind, toPlayer, toEscrow := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	amount, kind, game, at := make([]int64, n), make([]string, n), make([]string, n), make([]int64, n)
	for i, p := range postings {
		fromKind[i], fromPlayer[i], fromEscrow[i] = ledgerSide(p.From)
		toKind[i], toPlayer[i], toEscrow[i] = ledgerSide(p.To)
		amount[i], kind[i], game[i], at[i] = p.Amount, string(p.Kind), string(p.GameID), p.At
	}
	// A volatile nextval makes Postgres evaluate postings once, in order, whoever refers to it.
	b.cte("postings", `SELECT p.*, nextval('ledger_posting_seq') AS posting
		FROM unnest(`+b.arg(fromKind)+`::text[], `+b.arg(fromPlayer)+`::text[], `+b.arg(fromEscrow)+`::text[], `+
		b.arg(toKind)+`::text[], `+b.arg(toPlayer)+`::text[], `+b.arg(toEscrow)+`::text[], `+b.arg(amount)+`::bigint[], `+
		b.arg(kind)+`::text[], `+b.arg(game)+`::text[], `+b.arg(at)+`::bigint[]) WITH ORDINALITY
			AS p (from_kind, from_player, from_escrow, to_kind, to_player, to_escrow, amount, kind, game, at, ord)`)
	b.cte("entries", `INSERT INTO ledger_entries (posting_id, account_kind, player_id, escrow_id, amount, kind, game_id, at)
		SELECT p.posting, s.kind, nullif(s.player, '')::uuid, nullif(s.escrow, '')::uuid, s.amount, p.kind, nullif(p.game, '')::uuid, p.at
		FROM postings p CROSS JOIN LATERAL (VALUES
			(1, p.from_kind, p.from_player, p.from_escrow, -p.amount),
			(2, p.to_kind, p.to_player, p.to_escrow, p.amount)) AS s (side, kind, player, escrow, amount)
		ORDER BY p.ord, s.side`)
	b.cte("balances", `UPDATE accounts a SET balance = a.balance + d.delta
		FROM (SELECT player::uuid, sum(amount) AS delta FROM (
				SELECT from_player, -amount FROM postings UNION ALL SELECT to_player, amount FROM postings
			) AS sides (player, amount) WHERE player <> '' GROUP BY player) AS d
		WHERE a.id = d.player`)
}

// setStatement builds the one statement of a transaction's held writes: its CTEs and arguments.
type setStatement struct {
	ctes  []string
	args  []any
	notes []string
}

// arg adds an argument and returns its placeholder.
func (b *setStatement) arg(v any) string {
	b.args = append(b.args, v)
	return "$" + strconv.Itoa(len(b.args))
}

func (b *setStatement) cte(name, sql string) {
	b.ctes = append(b.ctes, name+" AS ("+sql+")")
}

// notify adds a notification to send on commit.
func (b *setStatement) notify(channel, payload string) {
	b.notes = append(b.notes, channel, payload)
}

func (b *setStatement) sql() string {
	var main string
	if len(b.notes) == 0 {
		main = "SELECT 1"
	} else {
		var channels, payloads []string
		for i := 0; i < len(b.notes); i += 2 {
			channels, payloads = append(channels, b.notes[i]), append(payloads, b.notes[i+1])
		}
		main = `SELECT count(pg_notify(c, p)) FROM unnest(` + b.arg(channels) + `::text[], ` + b.arg(payloads) + `::text[]) AS n (c, p)`
	}
	if len(b.ctes) == 0 {
		return main
	}
	return "WITH " + strings.Join(b.ctes, ",\n") + "\n" + main
}
