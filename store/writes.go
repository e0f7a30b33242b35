package store

// Set-based writes: the rows a transaction's operations write are held in memory (the pgTx's
// caches show them to its own reads) and written together, by a few statements sent in one round
// trip, each kind of row by one data-modifying CTE over arrays: every event of the batch in one
// insert (their chain hashes computed in Go), every move, registration, ledger posting,
// idempotency record and audit row likewise, each game and lobby row once, and one
// notification per lobby. They are written when a statement needs them in the database first
// (a set effect, a read of a whole round) and at the commit, so a batch of actions that changes
// no stage costs the statements of one action.
//
// Each statement's text is the same whatever the batch holds: its CTEs are always there, over
// unnest of array parameters, empty when there is no row of their kind (see writeHeld). So each
// is prepared and planned once per connection, and under plan_cache_mode = force_generic_plan
// (the committer's) never planned again. Their generic plans guess a few rows per array, so each
// UPDATE finds its rows by primary key (checked on tables of 100,000 rows, writes_test.go).
//
// The rows every action writes have no foreign keys but the chain of events (migration 0018: a
// check per row cost a query and a row lock); it is checked at the end of each statement, so an
// event may refer to the one before it written by the same statement. Nor have they CHECK
// constraints but those that guard money (migration 0019: PostgreSQL rebuilt every check of a
// table for each statement that wrote it). Every store test checks both when it ends.

import (
	"encoding/json"
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

// writeHeld queues the statements that write the held rows (sent with the next statement that
// needs an answer, or with the COMMIT), and forgets them. Each statement's text is the same for
// every batch, so that a connection plans it once: every kind of row it writes has its CTE, over
// arrays, empty when the batch has no row of that kind. A CTE with no row still costs the opening
// of its table and indexes (about 20 µs each here, 100 µs for the registrations and postings), so
// the kinds of rows that many batches lack have statements of their own, sent only when they
// have rows, in the order of their references: new games (once a game); registrations and
// postings (a third of the mixed load's actions); the rows of every action (games, lobbies,
// moves, events, results; and the notifications); admins' audit entries.
func (t *pgTx) writeHeld() error {
	w := &t.held
	if w.empty() {
		return nil
	}
	if len(w.newGames) > 0 {
		// A new game's ruleset was saved by a statement before this one.
		var b setStatement
		b.cte("new_games", `INSERT INTO games (id, lobby_id, number, config, ruleset_hash, stage, round,
				stage_started_at, deadline, extensions, joined, players, active, committed, revealed, escrow,
				winner, payout, stop_reason, created_at, ended_at)
			SELECT id, lobby_id, number, config, ruleset_hash, stage, round, stage_started_at, deadline, extensions,
				joined, players, active, committed, revealed, escrow, nullif(winner, '')::uuid, payout, stop_reason,
				created_at, ended_at
			FROM `+gameRows(&b, w.newGames, true))
		t.tx.laterChecked(checkHeldWrite, b.sql(), b.args...)
	}
	if len(w.players) > 0 || len(w.postings) > 0 {
		var b setStatement
		playerRows(&b, w.players)
		if err := postingRows(&b, w.postings); err != nil {
			return err
		}
		t.tx.laterChecked(checkHeldWrite, b.sql(), b.args...)
	}
	if err := t.writeActionRows(); err != nil {
		return err
	}
	if len(w.audits) > 0 {
		var b setStatement
		auditRows(&b, w.audits)
		t.tx.laterChecked(checkHeldWrite, b.sql(), b.args...)
	}
	t.held = heldWrites{}
	return nil
}

// writeActionRows queues the statement of the rows that every action writes (and the
// notifications), when there are some.
func (t *pgTx) writeActionRows() error {
	w := &t.held
	var b setStatement
	games := make([]tournament.Game, 0, len(w.games))
	for _, g := range w.games {
		games = append(games, g)
	}
	slices.SortFunc(games, func(a, b tournament.Game) int { return strings.Compare(string(a.ID), string(b.ID)) })
	b.cte("games", `UPDATE games g SET stage = u.stage, round = u.round, stage_started_at = u.stage_started_at,
			deadline = u.deadline, extensions = u.extensions, joined = u.joined, players = u.players,
			active = u.active, committed = u.committed, revealed = u.revealed, escrow = u.escrow,
			winner = nullif(u.winner, '')::uuid, payout = u.payout, stop_reason = u.stop_reason, ended_at = u.ended_at,
			moves_salt = u.moves_salt
		FROM `+gameRows(&b, games, false)+`
		WHERE g.id = u.id`)
	t.lobbyRows(&b)
	n := len(w.moves)
	game, round, account, commitment, at := make([]string, n), make([]int32, n), make([]string, n), make([][]byte, n), make([]int64, n)
	signature := make([][]byte, n)
	for i, m := range w.moves {
		game[i], round[i], account[i], commitment[i], at[i] = string(m.GameID), int32(m.Round), string(m.AccountID), m.Commitment[:], m.CommittedAt
		signature[i] = m.CommitSignature
	}
	b.cte("moves", `INSERT INTO round_moves (game_id, round, account_id, commitment, committed_at, commit_signature)
		SELECT m.game, m.round, m.account, m.commitment, m.at, m.signature
		FROM `+b.arrays("m", col("game", "uuid", game), col("round", "int", round), col("account", "uuid", account),
		col("commitment", "bytea", commitment), col("at", "bigint", at), col("signature", "bytea", signature)))
	n = len(w.reveals)
	game, round, account, reveal, move, at := make([]string, n), make([]int32, n), make([]string, n), make([][]byte, n), make([]int16, n), make([]int64, n)
	signature = make([][]byte, n)
	for i, m := range w.reveals {
		game[i], round[i], account[i], reveal[i], move[i], at[i] = string(m.GameID), int32(m.Round), string(m.AccountID), []byte(m.Reveal), int16(m.Move), m.RevealedAt
		signature[i] = m.RevealSignature
	}
	// Each row by its whole primary key (a round has up to 100,000).
	b.cte("reveals", `UPDATE round_moves m SET revealed = true, reveal = u.reveal, move = u.move, revealed_at = u.at,
			reveal_signature = u.signature
		FROM `+b.arrays("u", col("game", "uuid", game), col("round", "int", round), col("account", "uuid", account),
		col("reveal", "bytea", reveal), col("move", "smallint", move), col("at", "bigint", at), col("signature", "bytea", signature))+`
		WHERE m.game_id = u.game AND m.round = u.round AND m.account_id = u.account`)
	if err := t.eventRows(&b); err != nil {
		return err
	}
	n = len(w.results)
	account, method, route, name, hash, stored, at := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([][]byte, n), make([][]byte, n), make([]int64, n)
	for i, r := range w.results {
		k := r.key
		account[i], method[i], route[i], name[i], hash[i], stored[i], at[i] = string(k.AccountID), k.Method, k.Route, k.Key, k.RequestHash, r.stored, r.at
	}
	b.cte("results", `INSERT INTO idempotency_keys (account_id, method, route, key, request_hash, response, result_version, created_at)
		SELECT k.account, k.method, k.route, k.key, k.hash, k.stored, `+strconv.Itoa(resultVersion)+`, k.at
		FROM `+b.arrays("k", col("account", "uuid", account), col("method", "text", method), col("route", "text", route),
		col("key", "text", name), col("hash", "bytea", hash), col("stored", "bytea", stored), col("at", "bigint", at)))
	t.deadlineNote(&b)
	if len(w.games)+len(w.lobbies)+len(w.moves)+len(w.reveals)+len(w.events)+len(w.results)+len(b.notes) > 0 {
		t.tx.laterChecked(checkHeldWrite, b.sql(), b.args...)
	}
	return nil
}

// playerRows writes registrations.
func playerRows(b *setStatement, players []tournament.Player) {
	n := len(players)
	game, account, ord, at := make([]string, n), make([]string, n), make([]int32, n), make([]int64, n)
	for i, p := range players {
		game[i], account[i], ord[i], at[i] = string(p.GameID), string(p.AccountID), int32(p.Order), p.RegisteredAt
	}
	b.cte("players", `INSERT INTO game_players (game_id, account_id, ord, registered_at, active, eliminated_round)
		SELECT p.game, p.account, p.ord, p.at, true, 0
		FROM `+b.arrays("p", col("game", "uuid", game), col("account", "uuid", account), col("ord", "int", ord), col("at", "bigint", at)))
}

// auditRows writes entries of the admins' audit log.
func auditRows(b *setStatement, audits []auditRow) {
	n := len(audits)
	actor, action, target, detail, at := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]int64, n)
	for i, a := range audits {
		actor[i], action[i], target[i], detail[i], at[i] = string(a.entry.Actor), a.entry.Action, a.entry.Target, string(a.entry.Detail), a.at
	}
	b.cte("audits", `INSERT INTO admin_audit (actor, action, target, detail, at)
		SELECT a.actor, a.action, a.target, a.detail::jsonb, a.at
		FROM `+b.arrays("a", col("actor", "uuid", actor), col("action", "text", action), col("target", "text", target),
		col("detail", "text", detail), col("at", "bigint", at)))
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

// gameRows is the FROM item u of games rows: the columns an update changes, or with all (a new
// game's).
func gameRows(b *setStatement, games []tournament.Game, all bool) string {
	n := len(games)
	id, stage, round, started, deadline, extensions := make([]string, n), make([]string, n), make([]int32, n), make([]int64, n), make([]int64, n), make([]int32, n)
	joined, players, active, committed, revealed := make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
	escrow, winner, payout, reason, ended := make([]int64, n), make([]string, n), make([]int64, n), make([]string, n), make([]int64, n)
	lobby, number, config, ruleset, created := make([]string, n), make([]int32, n), make([]tournament.Config, n), make([]string, n), make([]int64, n)
	for i, g := range games {
		id[i], stage[i], round[i], started[i], deadline[i], extensions[i] = string(g.ID), string(g.Stage), int32(g.Round), g.StageStartedAt, g.Deadline, int32(g.Extensions)
		joined[i], players[i], active[i], committed[i], revealed[i] = int32(g.Joined), int32(g.Players), int32(g.Active), int32(g.Committed), int32(g.Revealed)
		escrow[i], winner[i], payout[i], reason[i], ended[i] = g.Escrow, string(g.Winner), g.Payout, g.StopReason, g.EndedAt
		lobby[i], number[i], config[i], ruleset[i], created[i] = string(g.LobbyID), int32(g.Number), g.Config, g.RulesetHash, g.CreatedAt
	}
	cols := []column{col("id", "uuid", id), col("stage", "text", stage), col("round", "int", round),
		col("stage_started_at", "bigint", started), col("deadline", "bigint", deadline), col("extensions", "int", extensions),
		col("joined", "int", joined), col("players", "int", players), col("active", "int", active),
		col("committed", "int", committed), col("revealed", "int", revealed), col("escrow", "bigint", escrow),
		col("winner", "text", winner), col("payout", "bigint", payout), col("stop_reason", "text", reason), col("ended_at", "bigint", ended)}
	if !all {
		// A new game has no salt; a game's salt is written until its event reveals it, then NULL.
		salt := make([][]byte, n)
		for i, g := range games {
			if !g.Salt.IsZero() {
				salt[i] = g.Salt[:]
			}
		}
		cols = append(cols, col("moves_salt", "bytea", salt))
	}
	if all {
		cols = append(cols, col("lobby_id", "uuid", lobby), col("number", "int", number), col("config", "jsonb", config),
			col("ruleset_hash", "text", ruleset), col("created_at", "bigint", created))
	}
	return b.arrays("u", cols...)
}

// lobbyRows writes the lobbies' changed rows and moved chain heads, each lobby's by one row of
// one UPDATE (two of one row in a statement would not both take effect): a lobby whose row
// changed gets all its columns (whole), one whose chain head only moved its head.
func (t *pgTx) lobbyRows(b *setStatement) {
	ids := make([]tournament.LobbyID, 0, len(t.held.lobbies))
	for id := range t.held.lobbies {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	n := len(ids)
	id, whole, name, closed, config, next, game, games := make([]string, n), make([]bool, n), make([]string, n), make([]bool, n), make([]*tournament.Config, n), make([]*tournament.Config, n), make([]string, n), make([]int32, n)
	seq, hash := make([]int64, n), make([][]byte, n)
	for i, lobby := range ids {
		head := t.heads[lobby]
		id[i], seq[i], hash[i] = string(lobby), head.Seq, head.Hash[:]
		if head.Seq == 0 {
			hash[i] = nil
		}
		if l := t.held.lobbies[lobby].row; l != nil {
			whole[i], name[i], closed[i], config[i], next[i], game[i], games[i] = true, l.Name, l.Closed, &l.Config, l.NextConfig, string(l.GameID), int32(l.Games)
		}
	}
	b.cte("lobby_rows", `UPDATE lobbies l SET name = CASE WHEN u.whole THEN u.name ELSE l.name END,
			closed = CASE WHEN u.whole THEN u.closed ELSE l.closed END,
			config = CASE WHEN u.whole THEN u.config ELSE l.config END,
			next_config = CASE WHEN u.whole THEN u.next ELSE l.next_config END,
			game_id = CASE WHEN u.whole THEN nullif(u.game, '')::uuid ELSE l.game_id END,
			games = CASE WHEN u.whole THEN u.games ELSE l.games END,
			last_seq = u.seq, last_hash = u.hash
		FROM `+b.arrays("u", col("id", "uuid", id), col("whole", "boolean", whole), col("name", "text", name),
		col("closed", "boolean", closed), col("config", "jsonb", config), col("next", "jsonb", next), col("game", "text", game),
		col("games", "int", games), col("seq", "bigint", seq), col("hash", "bytea", hash))+`
		WHERE l.id = u.id`)
}

// postingRows writes postings, each as its two ledger entries (in order: the entries' ids order
// a player's ledger), and applies them to the player balances, each balance once.
func postingRows(b *setStatement, postings []tournament.Posting) error {
	n := len(postings)
	fromKind, fromPlayer, fromEscrow, toKind, toPlayer, toEscrow := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	amount, kind, game, at := make([]int64, n), make([]string, n), make([]string, n), make([]int64, n)
	for i, p := range postings {
		fromKind[i], fromPlayer[i], fromEscrow[i] = ledgerSide(p.From)
		toKind[i], toPlayer[i], toEscrow[i] = ledgerSide(p.To)
		amount[i], kind[i], game[i], at[i] = p.Amount, string(p.Kind), string(p.GameID), p.At
	}
	ord := make([]int32, n)
	for i := range ord {
		ord[i] = int32(i)
	}
	memo, auth, err := postingNotes(postings)
	if err != nil {
		return err
	}
	// A volatile nextval makes Postgres evaluate postings once, in order, whoever refers to it.
	b.cte("postings", `SELECT p.*, nextval('ledger_posting_seq') AS posting
		FROM `+b.arrays("p", col("from_kind", "text", fromKind), col("from_player", "text", fromPlayer),
		col("from_escrow", "text", fromEscrow), col("to_kind", "text", toKind), col("to_player", "text", toPlayer),
		col("to_escrow", "text", toEscrow), col("amount", "bigint", amount), col("kind", "text", kind),
		col("game", "text", game), col("at", "bigint", at), col("ord", "int", ord),
		col("memo", "text", memo), col("auth", "text", auth))+`
		ORDER BY p.ord`)
	b.cte("entries", `INSERT INTO ledger_entries (posting_id, account_kind, player_id, escrow_id, amount, kind, game_id, at, memo, auth)
		SELECT p.posting, s.kind, nullif(s.player, '')::uuid, nullif(s.escrow, '')::uuid, s.amount, p.kind, nullif(p.game, '')::uuid, p.at,
			nullif(p.memo, ''), nullif(p.auth, '')::jsonb
		FROM postings p CROSS JOIN LATERAL (VALUES
			(1, p.from_kind, p.from_player, p.from_escrow, -p.amount),
			(2, p.to_kind, p.to_player, p.to_escrow, p.amount)) AS s (side, kind, player, escrow, amount)
		ORDER BY p.ord, s.side`)
	b.cte("balances", `UPDATE accounts a SET balance = a.balance + d.delta
		FROM (SELECT player::uuid, sum(amount) AS delta FROM (
				SELECT from_player, -amount FROM postings UNION ALL SELECT to_player, amount FROM postings
			) AS sides (player, amount) WHERE player <> '' GROUP BY player) AS d
		WHERE a.id = d.player`)
	return nil
}

// postingNotes are the memos and the admins' signatures (JSON) of postings ("": none, as for
// every posting of a game).
func postingNotes(postings []tournament.Posting) (memo, auth []string, err error) {
	memo, auth = make([]string, len(postings)), make([]string, len(postings))
	for i, p := range postings {
		memo[i] = p.Note.Memo
		if p.Note.Auth != nil {
			b, err := json.Marshal(p.Note.Auth)
			if err != nil {
				return nil, nil, fmt.Errorf("encode the signature of a %s: %w", p.Kind, err)
			}
			auth[i] = string(b)
		}
	}
	return memo, auth, nil
}

// setStatement builds the one statement of a transaction's held writes: its CTEs and arguments.
type setStatement struct {
	sqlArgs
	ctes  []string
	notes []string
}

func (b *setStatement) cte(name, sql string) {
	b.ctes = append(b.ctes, name+" AS ("+sql+")")
}

// notify adds a notification to send on commit.
func (b *setStatement) notify(channel, payload string) {
	b.notes = append(b.notes, channel, payload)
}

func (b *setStatement) sql() string {
	n := len(b.notes) / 2
	channels, payloads := make([]string, n), make([]string, n)
	for i := range n {
		channels[i], payloads[i] = b.notes[2*i], b.notes[2*i+1]
	}
	return "WITH " + strings.Join(b.ctes, ",\n") + "\nSELECT count(pg_notify(n.c, n.p)) FROM " +
		b.arrays("n", col("c", "text", channels), col("p", "text", payloads))
}

// sqlArgs collects a statement's arguments and names their placeholders.
type sqlArgs struct {
	args []any
}

// arg adds an argument and returns its placeholder.
func (a *sqlArgs) arg(v any) string {
	a.args = append(a.args, v)
	return "$" + strconv.Itoa(len(a.args))
}

// arrays is a FROM item, named alias, of rows given column by column, as unnest of array
// parameters: its text does not depend on the number of rows (none included).
func (a *sqlArgs) arrays(alias string, cols ...column) string {
	args, names := make([]string, len(cols)), make([]string, len(cols))
	for i, c := range cols {
		args[i], names[i] = a.arg(c.array())+"::"+c.typ+"[]", c.name
	}
	return "unnest(" + strings.Join(args, ", ") + ") AS " + alias + " (" + strings.Join(names, ", ") + ")"
}

// column is a column of rows given column by column (see rows).
type column struct {
	name, typ string
	// values is the column's slice, and at(i) its element i.
	values any
	at     func(i int) any
}

// array is the column's values as an array parameter.
func (c column) array() any {
	if ids, ok := c.values.([]string); ok && c.typ == "uuid" {
		return uuidArray(ids)
	}
	return c.values
}

// col is a column of rows of SQL type typ.
func col[T any](name, typ string, values []T) column {
	return column{name: name, typ: typ, values: values, at: func(i int) any { return values[i] }}
}

// rows is a FROM item, named alias, of n rows given column by column: one row as a VALUES of
// scalar parameters, several as unnest of array parameters (the held writes use arrays, whatever
// their number of rows). One row is the common case: its estimate is exact whatever the
// parameters, so Postgres settles on one generic plan for the statement; unnest's is a guess when
// planned generically, which makes it plan the statement again on every execution in the default
// plan_cache_mode (which a batch of several pays once for all).
func (a *sqlArgs) rows(alias string, n int, cols ...column) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.name
	}
	var b strings.Builder
	if n == 1 {
		b.WriteString("(VALUES (")
		for i, c := range cols {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(a.arg(c.at(0)) + "::" + c.typ)
		}
		b.WriteString("))")
	} else {
		b.WriteString("unnest(")
		for i, c := range cols {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(a.arg(c.array()) + "::" + c.typ + "[]")
		}
		b.WriteString(")")
	}
	b.WriteString(" AS " + alias + " (" + strings.Join(names, ", ") + ")")
	return b.String()
}
