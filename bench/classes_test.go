package main

import "testing"

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
