package main

import (
	"strings"
	"testing"
)

// TestAccountLocksHaveTheirClass: the batch's account locks (store's queueAccountLocks), as
// pg_stat_statements normalises them, are counted as such, not as the clients' reads.
func TestAccountLocksHaveTheirClass(t *testing.T) {
	const want = "a batch's account locks (an action's signer against a key change)"
	for _, q := range []string{
		`SELECT $2 FROM accounts WHERE id = ANY($1::uuid[]) ORDER BY id FOR KEY SHARE`,
		`SELECT $2 FROM accounts WHERE id = $1 FOR KEY SHARE`,
		`SELECT $2 FROM accounts WHERE id = $1 FOR UPDATE`,
	} {
		if got := classOf(q); got != want {
			t.Errorf("%s: class %q, want %q", q, got, want)
		}
	}
	if got := classOf(`SELECT id::text, name FROM accounts WHERE id = $1`); got == want {
		t.Errorf("a client's read of an account is counted as a batch's account lock")
	}
}

// TestGameReadHasItsClass: the batch's read of its games, with the rounds it may close (store's
// queueGamesOf, as pg_stat_statements normalises it), is counted as such, not as the clients'
// reads.
func TestGameReadHasItsClass(t *testing.T) {
	q := `SELECT id::text, lobby_id::text, number, config, ruleset_hash, stage, round, stage_started_at, deadline,
		moves_salt, CASE WHEN g.stage IN ($3, $4) THEN (SELECT coalesce(json_agg(json_build_object($5, m.account_id)), $6)
			FROM round_moves m WHERE m.game_id = g.id AND m.round = g.round) END
		FROM unnest($1::uuid[], $2::int[]) AS x (lobby, calls)
		CROSS JOIN LATERAL (SELECT * FROM games WHERE id = (SELECT game_id FROM lobbies WHERE id = x.lobby) LIMIT $7) AS g`
	q = strings.Join(strings.Fields(q), " ") // as statementClasses reads it
	if got, want := classOf(q), "a batch's game read (with the rounds it may close)"; got != want {
		t.Errorf("class %q, want %q", got, want)
	}
}
