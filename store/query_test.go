package store

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/commitreveal/rps/internal/pgtest"
)

// The errors of a database out of reach (what a failover looks like from rpsd) map to
// ErrUnavailable, and only those.
func TestUnavailableErrors(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.New(t)

	_, refused := pgx.Connect(ctx, "postgres://postgres@127.0.0.1:1/rps?connect_timeout=5")
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, conn.Conn().PgConn().PID()); err != nil {
		t.Fatal(err)
	}
	_, terminated := conn.Exec(ctx, `SELECT 1`)
	// What a standby answers to a write.
	readOnly := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `CREATE TABLE t (x int)`)
		return err
	})
	_, divided := pool.Exec(ctx, `SELECT 1/0`)

	for name, c := range map[string]struct {
		err         error
		unavailable bool
	}{
		"connection refused":    {refused, true},
		"connection terminated": {terminated, true},
		"read-only server":      {readOnly, true},
		"division by zero":      {divided, false},
		"no rows":               {pgx.ErrNoRows, false},
	} {
		if c.err == nil {
			t.Fatalf("%s: no error", name)
		}
		if got := errors.Is(mapErr(c.err), ErrUnavailable); got != c.unavailable {
			t.Errorf("%s (%v): mapped to ErrUnavailable %v, want %v", name, c.err, got, c.unavailable)
		}
		if got := IsUnavailable(c.err); got != c.unavailable {
			t.Errorf("%s (%v): IsUnavailable %v, want %v", name, c.err, got, c.unavailable)
		}
	}
}
