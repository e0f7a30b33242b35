package store

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/commitreveal/rps/internal/pgtest"
	"github.com/commitreveal/rps/tournament"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// heldSamples are transactions' held rows of every kind, alone and together, with one row or
// several.
func heldSamples() []heldWrites {
	id := func() string { return uuid.NewString() }
	lobby, game, account := tournament.LobbyID(id()), tournament.GameID(id()), tournament.AccountID(id())
	g := tournament.Game{ID: game, LobbyID: lobby, Number: 1, Config: tournament.DefaultConfig(), Stage: tournament.StageMoves, Round: 1}
	l := tournament.Lobby{ID: lobby, Name: "l", Config: tournament.DefaultConfig(), GameID: game}
	move := tournament.RoundMove{GameID: game, Round: 1, AccountID: account}
	event := tournament.LoggedEvent{Seq: 2, LobbyID: lobby, GameID: game, Type: "move_committed", Data: []byte(`{}`)}
	result := resultRow{key: &IdempotencyKey{AccountID: account, Method: "POST", Route: "/r", Key: "k", RequestHash: make([]byte, 32)}, stored: []byte(`{}`)}
	posting := tournament.Posting{From: tournament.PlayerAccount(account), To: tournament.EscrowAccount(game), Amount: 1, Kind: tournament.PostingBet, GameID: game}
	commit := heldWrites{games: map[tournament.GameID]tournament.Game{game: g}, lobbies: map[tournament.LobbyID]*lobbyWrite{lobby: {moved: true}},
		moves: []tournament.RoundMove{move}, events: []tournament.LoggedEvent{event}, results: []resultRow{result}}
	reveals := heldWrites{reveals: []tournament.RoundMove{move, move, move}, events: []tournament.LoggedEvent{event, event}}
	register := heldWrites{players: []tournament.Player{{GameID: game, AccountID: account, Order: 1, Active: true}},
		postings: []tournament.Posting{posting, posting}, balances: map[tournament.AccountID]bool{account: true},
		events: []tournament.LoggedEvent{event}}
	signed := tournament.Posting{From: tournament.Treasury, To: tournament.PlayerAccount(account), Amount: 1, Kind: tournament.PostingCredit,
		Note: tournament.MoneyNote{Memo: "m", Auth: &tournament.AdminAuth{Action: "credit", Request: []byte(`{"amount":1}`)}}}
	credit := heldWrites{postings: []tournament.Posting{posting}}
	signedCredits := heldWrites{postings: []tournament.Posting{signed, posting}}
	admin := heldWrites{newGames: []tournament.Game{g}, lobbies: map[tournament.LobbyID]*lobbyWrite{lobby: {row: &l}},
		audits: []auditRow{{entry: AuditEntry{Actor: account, Action: "stop", Detail: []byte(`{}`)}}}}
	return []heldWrites{commit, reveals, register, credit, admin, signedCredits}
}

// heldStatements are the statements writeHeld queues for held rows w.
func heldStatements(t *testing.T, s *Store, w heldWrites) []*pgx.QueuedQuery {
	t.Helper()
	tx := s.newTx(&txConn{})
	tx.held = w
	if err := tx.writeHeld(); err != nil {
		t.Fatal(err)
	}
	return tx.tx.pending.QueuedQueries
}

// statementName names a statement of the held writes by its first CTE.
func statementName(sql string) string {
	name, _, _ := strings.Cut(strings.TrimPrefix(sql, "WITH "), " ")
	return name
}

// TestHeldWritesOneText checks that each statement of the held writes has one text whatever the
// transaction holds, so that a connection prepares and plans it once (the statement had one text
// per set of kinds of rows, and another for one row of a kind than for several).
func TestHeldWritesOneText(t *testing.T) {
	s := New(nil, Options{})
	texts := map[string]string{}
	for i, w := range heldSamples() {
		for _, q := range heldStatements(t, s, w) {
			name := statementName(q.SQL)
			if first, seen := texts[name]; !seen {
				texts[name] = q.SQL
			} else if q.SQL != first {
				t.Fatalf("held rows %d are written by another statement %s:\n%s\nthan before:\n%s", i, name, q.SQL, first)
			}
		}
	}
	if len(texts) != 4 {
		t.Errorf("the held writes have %d statements, want 4 (new games, registrations and postings, every action's rows, audits)", len(texts))
	}
}

// TestHeldWritesSkipAbsentKinds checks that a batch is not sent the statements of the kinds of
// rows it lacks that many batches lack: a commit's rows are written without a CTE for
// registrations, ledger entries or balances (all three with no row cost a backend 100 µs, opening
// their tables and indexes), and a credit's postings without the statement of every action's
// rows.
func TestHeldWritesSkipAbsentKinds(t *testing.T) {
	s := New(nil, Options{})
	samples := heldSamples()
	for _, q := range heldStatements(t, s, samples[0]) {
		for _, table := range []string{"game_players", "ledger_entries", "accounts"} {
			if strings.Contains(q.SQL, table) {
				t.Errorf("a commit's rows are written by a statement %s that writes %s", statementName(q.SQL), table)
			}
		}
	}
	for _, q := range heldStatements(t, s, samples[3]) {
		if name := statementName(q.SQL); name != "players" {
			t.Errorf("a credit's posting is written with the statement %s", name)
		}
	}
}

// TestHeldWritesGenericPlan checks the generic plan of the held writes, as the committer's
// connection uses it, on tables of 100,000 rows: no table of that size is read whole (a generic
// plan guesses the rows of each unnest, and a guess too high would make a join scan the table).
func TestHeldWritesGenericPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds tables of 100,000 rows")
	}
	s := New(pgtest.New(t), Options{Service: fastService()})
	seedRealisticTables(t, s, 100_000)
	checkHeldPlans(t, s)
}

// TestHeldWritesPlanOnFreshTables checks the same plans on a new database, its tables empty and
// never analyzed, under the committer's settings (forceGenericPlans): a connection plans each
// statement once, and keeps the plan as the tables grow, so it must find rows by key from the
// start (planned by the statistics of empty tables, the plan hashed whole tables, and one reveal
// read 2,253 moves a minute into the bench's mixed load).
func TestHeldWritesPlanOnFreshTables(t *testing.T) {
	t.Parallel()
	checkHeldPlans(t, New(pgtest.New(t), Options{Service: fastService()}))
}

// checkHeldPlans fails t if the generic plan of a held writes' statement, under the committer's
// settings, reads a table whole.
func checkHeldPlans(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, forceGenericPlans); err != nil {
		t.Fatal(err)
	}
	conn := tx.Conn()
	var statements []*pgx.QueuedQuery
	for _, w := range heldSamples() {
		statements = append(statements, heldStatements(t, s, w)...)
	}
	for i, q := range statements {
		plan := explainGeneric(t, conn, "held"+strconv.Itoa(i), q.SQL, q.Arguments)
		if scan := regexp.MustCompile(`Seq Scan on (accounts|games|game_players|round_moves|events|idempotency_keys|lobbies)\b`).FindString(plan); scan != "" {
			t.Errorf("the generic plan of the held writes' statement %s has a %s:\n%s", statementName(q.SQL), scan, plan)
		}
	}
}

// explainGeneric is the generic plan of sql with args, prepared on conn as name.
func explainGeneric(t *testing.T, conn *pgx.Conn, name, sql string, args []any) string {
	t.Helper()
	ctx := context.Background()
	// EXPLAIN EXECUTE takes the parameters as literals: each in its type's text format.
	held, err := conn.Prepare(ctx, name, sql)
	if err != nil {
		t.Fatal(err)
	}
	literals := make([]string, len(args))
	for i, arg := range args {
		text, err := conn.TypeMap().Encode(held.ParamOIDs[i], pgtype.TextFormatCode, arg, nil)
		if err != nil {
			t.Fatal(err)
		}
		literals[i] = "NULL"
		if text != nil {
			literals[i] = "'" + strings.ReplaceAll(string(text), "'", "''") + "'"
		}
	}
	rows, err := conn.Query(ctx, `EXPLAIN EXECUTE `+name+`(`+strings.Join(literals, ", ")+`)`)
	if err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return plan.String()
}

// seedRealisticTables gives the tables the size a service reaches: n accounts, each in one of n/10
// past games of 10 with a commitment and with an idempotency record, and a lobby of n events.
func seedRealisticTables(tb testing.TB, s *Store, n int) {
	tb.Helper()
	ctx := context.Background()
	var filler tournament.LobbyID
	err := s.Run(ctx, func(tx tournament.Tx, now int64) (err error) {
		filler, err = s.service.CreateLobby(ctx, tx, now, tournament.Actor{Role: tournament.RoleAdmin}, "filler", tournament.DefaultConfig())
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	seed := []string{
		`INSERT INTO accounts (id, name, name_key, role, created_at)
			SELECT gen_random_uuid(), 'filler-' || s, 'filler-' || s, 'player', 0 FROM generate_series(1, {n}) AS s`,
		`INSERT INTO games (id, lobby_id, number, config, ruleset_hash, stage, round, stage_started_at, deadline, extensions,
				joined, players, active, committed, revealed, escrow, payout, stop_reason, created_at, ended_at, settled)
			SELECT gen_random_uuid(), g.lobby_id, g.number + s, g.config, g.ruleset_hash, 'stopped', 0, 0, 0, 0, 10, 10, 10, 10, 0,
				0, 0, 'filler', 0, 0, true
			FROM games g, generate_series(1, {n} / 10) AS s WHERE g.lobby_id = $1`,
		`INSERT INTO game_players (game_id, account_id, ord, registered_at, active)
			SELECT g.id, a.id, a.n % 10 + 1, 0, true
			FROM (SELECT id, row_number() OVER (ORDER BY id) - 1 AS n FROM accounts WHERE name LIKE 'filler-%') AS a
			JOIN (SELECT id, row_number() OVER (ORDER BY id) - 1 AS n FROM games WHERE stop_reason = 'filler') AS g ON g.n = a.n / 10`,
		`INSERT INTO round_moves (game_id, round, account_id, commitment, committed_at)
			SELECT p.game_id, 1, p.account_id, sha256(p.account_id::text::bytea), 0
			FROM game_players p JOIN games g ON g.id = p.game_id WHERE g.stop_reason = 'filler'`,
		`INSERT INTO idempotency_keys (account_id, method, route, key, request_hash, response, result_version, created_at)
			SELECT id, 'POST', '/v1/lobbies/{id}/commit', 'k', sha256(id::text::bytea), '{}', 2, 0
			FROM accounts WHERE name LIKE 'filler-%'`,
		`WITH l AS (SELECT id, last_seq, last_hash FROM lobbies WHERE id = $1),
			e AS (INSERT INTO events (lobby_id, seq, type, at, data, prev_hash, hash)
				SELECT l.id, l.last_seq + s, 'filler', 0, '{}',
					CASE WHEN s = 1 THEN l.last_hash ELSE sha256((l.id::text || (l.last_seq + s - 1))::bytea) END,
					sha256((l.id::text || (l.last_seq + s))::bytea)
				FROM l, generate_series(1, {n}) AS s)
		UPDATE lobbies SET last_seq = l.last_seq + {n}, last_hash = sha256((l.id::text || (l.last_seq + {n}))::bytea)
			FROM l WHERE lobbies.id = l.id`,
		`ANALYZE`,
	}
	for _, sql := range seed {
		var args []any
		if strings.Contains(sql, "$1") {
			args = append(args, filler)
		}
		if _, err := s.pool.Exec(ctx, strings.ReplaceAll(sql, "{n}", strconv.Itoa(n)), args...); err != nil {
			tb.Fatalf("%s: %v", sql[:40], err)
		}
	}
}

// TestAccountNotifyNamesEveryColumn pins the condition of the accounts trigger (migration 0015)
// to the table: it compares every column but the balance, so that any change to an account but
// its balance notifies AccountsChannel (a column added later must be added to it), while a
// balance change, which every bet and payout of the held writes makes, costs no conversion of
// the rows (the condition compared them as jsonb). The key log's length and the count of active
// keys (0016) are left out too: the write path reads them from the database, not from a cache.
func TestAccountNotifyNamesEveryColumn(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.New(t)
	var condition string
	err := pool.QueryRow(ctx, `SELECT pg_get_triggerdef(oid) FROM pg_trigger
		WHERE tgrelid = 'accounts'::regclass AND tgname = 'accounts_changed'`).Scan(&condition)
	if err != nil {
		t.Fatal(err)
	}
	columns, err := collect(ctx, pool, pgx.RowTo[string], `SELECT column_name::text FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'accounts' ORDER BY ordinal_position`)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(condition, "to_jsonb") {
		t.Errorf("the accounts trigger converts the rows to jsonb: %s", condition)
	}
	quiet := map[string]bool{"balance": true, "active_keys": true, "key_seq": true}
	for _, c := range columns {
		named := strings.Contains(condition, "old."+c+" IS DISTINCT FROM new."+c+")")
		if named != !quiet[c] {
			t.Errorf("the accounts trigger names column %s: %v, want %v: %s", c, named, !quiet[c], condition)
		}
	}
}

// TestBalanceChangeNotifiesNothing checks that a balance change notifies no replica to forget
// the account's tokens, and that another change does: of a balance change of one account and the
// disabling of another, committed in that order, the first notification is the disabling's.
func TestBalanceChangeNotifiesNothing(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewURL(t)
	s := New(openPool(t, url), Options{Service: fastService()})
	paid, disabled := player(t, s, "paid", 10), player(t, s, "disabled", 0)
	listener, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = listener.Close(ctx) }()
	if _, err := listener.Exec(ctx, `LISTEN `+AccountsChannel); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `UPDATE accounts SET balance = balance + 1 WHERE id = $1`, paid.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `UPDATE accounts SET disabled_at = 1 WHERE id = $1`, disabled.ID); err != nil {
		t.Fatal(err)
	}
	n, err := listener.WaitForNotification(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n.Payload != string(disabled.ID) {
		t.Errorf("first notification names account %s, want %s (the disabled one; %s's balance changed)", n.Payload, disabled.ID, paid.ID)
	}
}

// TestHeldWritesEncodeInBinary checks that pgx sends every argument of the held writes in binary:
// an argument it cannot encode so (a string for a uuid) costs a formatted error, a new search of
// its plans and a text encoding on every statement, and PostgreSQL a parse (see uuidArray).
func TestHeldWritesEncodeInBinary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := New(pgtest.New(t), Options{Service: fastService()})
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, w := range heldSamples() {
		for _, q := range heldStatements(t, s, w) {
			held, err := conn.Conn().Prepare(ctx, "", q.SQL)
			if err != nil {
				t.Fatal(err)
			}
			for i, arg := range q.Arguments {
				if _, err := conn.Conn().TypeMap().Encode(held.ParamOIDs[i], pgtype.BinaryFormatCode, arg, nil); err != nil {
					t.Errorf("statement %s, $%d (%T): %v", statementName(q.SQL), i+1, arg, err)
				}
			}
		}
	}
}
