package store

import (
	"context"
	"errors"
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/commitreveal/rps/tournament"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// referenceChecks are the references of the rows every action writes, which migration 0018 no
// longer has PostgreSQL check by foreign key (each check cost a query and a row lock per row):
// each by the name of the constraint it replaces, as a query counting the rows that refer to
// nothing. Every store test runs them when it ends (newStore), so a write that breaks one fails
// the test that made it.
var referenceChecks = []struct{ constraint, dangling string }{
	{"events_lobby_id_fkey", `SELECT count(*) FROM events e WHERE NOT EXISTS (SELECT FROM lobbies l WHERE l.id = e.lobby_id)`},
	{"events_game_id_fkey", `SELECT count(*) FROM events e
		WHERE e.game_id IS NOT NULL AND NOT EXISTS (SELECT FROM games g WHERE g.id = e.game_id)`},
	{"idempotency_keys_account_id_fkey", `SELECT count(*) FROM idempotency_keys k
		WHERE NOT EXISTS (SELECT FROM accounts a WHERE a.id = k.account_id)`},
	{"round_moves_game_id_account_id_fkey", `SELECT count(*) FROM round_moves m
		WHERE NOT EXISTS (SELECT FROM game_players p WHERE p.game_id = m.game_id AND p.account_id = m.account_id)`},
	{"game_players_game_id_fkey", `SELECT count(*) FROM game_players p WHERE NOT EXISTS (SELECT FROM games g WHERE g.id = p.game_id)`},
	{"game_players_account_id_fkey", `SELECT count(*) FROM game_players p
		WHERE NOT EXISTS (SELECT FROM accounts a WHERE a.id = p.account_id)`},
	{"ledger_entries_player_id_fkey", `SELECT count(*) FROM ledger_entries e
		WHERE e.player_id IS NOT NULL AND NOT EXISTS (SELECT FROM accounts a WHERE a.id = e.player_id)`},
	{"ledger_entries_escrow_id_fkey", `SELECT count(*) FROM ledger_entries e
		WHERE e.escrow_id IS NOT NULL AND NOT EXISTS (SELECT FROM games g WHERE g.id = e.escrow_id)`},
	{"ledger_entries_game_id_fkey", `SELECT count(*) FROM ledger_entries e
		WHERE e.game_id IS NOT NULL AND NOT EXISTS (SELECT FROM games g WHERE g.id = e.game_id)`},
}

// danglingReferences returns, by constraint, how many rows of q's database refer to nothing.
func danglingReferences(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (map[string]int64, error) {
	found := map[string]int64{}
	for _, c := range referenceChecks {
		var n int64
		if err := q.QueryRow(ctx, c.dangling).Scan(&n); err != nil {
			return nil, err
		}
		if n > 0 {
			found[c.constraint] = n
		}
	}
	return found, nil
}

// checkReferences fails t if a row of s's database refers to nothing.
func checkReferences(t *testing.T, s *Store) {
	t.Helper()
	found, err := danglingReferences(context.Background(), s.pool)
	if err != nil {
		t.Errorf("check references: %v", err)
		return
	}
	for constraint, n := range found {
		t.Errorf("%d rows break %s (see referenceChecks)", n, constraint)
	}
}

// TestReferenceChecksAreTheDroppedKeys pins referenceChecks to the foreign keys migration 0018
// dropped: one check per key, no more.
func TestReferenceChecksAreTheDroppedKeys(t *testing.T) {
	up, err := os.ReadFile("../migrations/0018_hot_path_references.up.sql")
	if err != nil {
		t.Fatal(err)
	}
	var dropped, checked []string
	for _, m := range regexp.MustCompile(`DROP CONSTRAINT (\w+)`).FindAllSubmatch(up, -1) {
		dropped = append(dropped, string(m[1]))
	}
	for _, c := range referenceChecks {
		checked = append(checked, c.constraint)
	}
	slices.Sort(dropped)
	slices.Sort(checked)
	if !slices.Equal(dropped, checked) {
		t.Fatalf("migration 0018 drops %v; referenceChecks checks %v", dropped, checked)
	}
}

// oneRegistration returns a store with one lobby and one player registered in its game, with a
// bet: a row of each kind the tests below break.
func oneRegistration(t *testing.T, name string) (*Store, tournament.LobbyID) {
	t.Helper()
	s := newStore(t, Options{})
	cfg := tournament.DefaultConfig()
	cfg.BetSize = 10
	lobby := createLobby(t, s, admin(t, s), cfg)
	if err := register(s, player(t, s, name, 100), lobby); err != nil {
		t.Fatal(err)
	}
	return s, lobby
}

// TestDanglingReferencesAreFound breaks, for each check, one row of a played registration (in a
// transaction rolled back), and expects that check, and only it, to find it.
func TestDanglingReferencesAreFound(t *testing.T) {
	t.Parallel()
	s, lobby := oneRegistration(t, "refs")
	ctx := t.Context()
	game := lobbyGame(t, s, lobby)
	// No id the suite's service makes (tournamenttest.NewID counts up from ...0001, so that id
	// was this test's own lobby when it ran first).
	const nobody = `'ffffffff-ffff-4fff-bfff-ffffffffffff'::uuid`
	const zero = `decode(repeat('00', 32), 'hex')`
	breaks := map[string]string{
		"events_lobby_id_fkey": `INSERT INTO events (lobby_id, seq, type, at, data, prev_hash, hash)
			VALUES (` + nobody + `, 1, 'lobby_created', 0, '{}', ` + zero + `, ` + zero + `)`,
		"events_game_id_fkey": `UPDATE events SET game_id = ` + nobody + `
			WHERE (lobby_id, seq) = (SELECT lobby_id, seq FROM events WHERE game_id IS NOT NULL LIMIT 1)`,
		"idempotency_keys_account_id_fkey": `INSERT INTO idempotency_keys (account_id, method, route, key, request_hash,
			response, result_version, created_at) VALUES (` + nobody + `, 'POST', '/v1/x', 'k', ` + zero + `, '\x', 1, 0)`,
		"round_moves_game_id_account_id_fkey": `INSERT INTO round_moves (game_id, round, account_id, commitment, committed_at)
			VALUES ('` + string(game) + `', 1, ` + nobody + `, ` + zero + `, 0)`,
		"game_players_game_id_fkey":     `UPDATE game_players SET game_id = ` + nobody,
		"game_players_account_id_fkey":  `UPDATE game_players SET account_id = ` + nobody,
		"ledger_entries_player_id_fkey": `UPDATE ledger_entries SET player_id = ` + nobody + ` WHERE id = (SELECT max(id) FROM ledger_entries WHERE player_id IS NOT NULL)`,
		"ledger_entries_escrow_id_fkey": `UPDATE ledger_entries SET escrow_id = ` + nobody + ` WHERE escrow_id IS NOT NULL`,
		"ledger_entries_game_id_fkey":   `UPDATE ledger_entries SET game_id = ` + nobody + ` WHERE id = (SELECT max(id) FROM ledger_entries WHERE account_kind = 'player' AND game_id IS NOT NULL)`,
	}
	for _, c := range referenceChecks {
		sql, ok := breaks[c.constraint]
		if !ok {
			t.Errorf("no row broken for %s", c.constraint)
			continue
		}
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tag, err := tx.Exec(ctx, sql)
		var found map[string]int64
		if err == nil {
			found, err = danglingReferences(ctx, tx)
		}
		_ = tx.Rollback(ctx)
		if err != nil {
			t.Fatalf("%s: %v", c.constraint, err)
		}
		if tag.RowsAffected() != 1 || len(found) != 1 || found[c.constraint] != 1 {
			t.Errorf("%d rows breaking %s: the checks found %v", tag.RowsAffected(), c.constraint, found)
		}
	}
}

// droppedChecksDown is the down of migration 0019: the CHECK constraints that the rows every
// action writes no longer have PostgreSQL evaluate (it rebuilt them for every statement), added
// again as they were (TestHotPathDownsRestoreTheSchema, in migrations, holds it to them).
const droppedChecksDown = "../migrations/0019_hot_path_checks.down.sql"

// brokenCheck adds the checks migration 0019 dropped again, in a transaction it rolls back:
// adding a CHECK constraint validates every row, so it returns PostgreSQL's error naming a
// check that a row breaks, or nil. q's rows are checked as q sees them.
func brokenCheck(ctx context.Context, q pgx.Tx) error {
	down, err := os.ReadFile(droppedChecksDown)
	if err != nil {
		return err
	}
	sp, err := q.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = sp.Rollback(ctx) }()
	if _, err := sp.Exec(ctx, `SET LOCAL lock_timeout = '10s'`); err != nil {
		return err
	}
	_, err = sp.Exec(ctx, string(down), pgx.QueryExecModeSimpleProtocol)
	return err
}

// checkRows fails t if a row of s's database breaks a check migration 0019 dropped.
func checkRows(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Errorf("check rows: %v", err)
		return
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := brokenCheck(ctx, tx); err != nil {
		t.Errorf("a row breaks a check that migration 0019 dropped (see %s): %v", droppedChecksDown, err)
	}
}

// TestBrokenChecksAreFound breaks, in transactions rolled back, a row of a played registration
// for a few of the checks migration 0019 dropped, and expects brokenCheck to name that check.
func TestBrokenChecksAreFound(t *testing.T) {
	t.Parallel()
	s, _ := oneRegistration(t, "checks")
	ctx := t.Context()
	breaks := map[string]string{
		"games_committed_check": `UPDATE games SET committed = -1`,
		"games_stage_check":     `UPDATE games SET stage = 'paused', escrow = 0, deadline = 0`,
		"lobbies_check":         `UPDATE lobbies SET last_hash = NULL`,
		"game_players_check":    `UPDATE game_players SET eliminated_round = 1`,
		"events_check":          `UPDATE events SET prev_hash = hash WHERE seq = 1`,
		"idempotency_keys_request_hash_check": `INSERT INTO idempotency_keys (account_id, method, route, key, request_hash, response, result_version, created_at)
			SELECT id, 'POST', '/v1/x', 'k', '\x00', '\x', 1, 0 FROM accounts LIMIT 1`,
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := brokenCheck(ctx, tx); err != nil {
		t.Fatalf("before any row is broken: %v", err)
	}
	_ = tx.Rollback(ctx)
	for constraint, sql := range breaks {
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tag, err := tx.Exec(ctx, sql)
		if err == nil {
			err = brokenCheck(ctx, tx)
		}
		_ = tx.Rollback(ctx)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "23514" || pgErr.ConstraintName != constraint || tag.RowsAffected() == 0 {
			t.Errorf("%d rows broken for %s: brokenCheck returned %v", tag.RowsAffected(), constraint, err)
		}
	}
}
