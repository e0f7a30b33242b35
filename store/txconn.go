package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// txConn is a transaction that holds back the writes whose results nobody waits for and sends
// them together, in one round trip, with the next statement that needs an answer (or just before
// the commit). A lobby's lock is held from its first statement to the commit, so every round trip
// saved there shortens the queue of the lobby's other actions.
type txConn struct {
	tx      pgx.Tx
	pending pgx.Batch
	// checks[i], when not nil, judges the command tag of pending statement i.
	checks []func(pgconn.CommandTag) error
}

var _ querier = (*txConn)(nil)

// later queues a write; its error, if any, comes from the next flush.
func (c *txConn) later(sql string, args ...any) {
	c.laterChecked(nil, sql, args...)
}

// laterChecked queues a write whose command tag check judges when it is sent; check's error fails
// the flush like the statement's own.
func (c *txConn) laterChecked(check func(pgconn.CommandTag) error, sql string, args ...any) {
	c.pending.Queue(sql, args...)
	c.checks = append(c.checks, check)
}

// flush sends the queued writes in one round trip.
func (c *txConn) flush(ctx context.Context) error {
	return c.flushWith(ctx, "", nil, nil)
}

// flushWith sends the queued writes followed, if sql is not empty, by a query whose row scan
// receives, in one round trip. scan's error (mapped: no row is tournament.ErrNotFound) is returned.
func (c *txConn) flushWith(ctx context.Context, sql string, args []any, scan func(pgx.Row) error) error {
	n := c.pending.Len()
	if n == 0 && sql == "" {
		return nil
	}
	batch, checks := c.pending, c.checks
	c.pending, c.checks = pgx.Batch{}, nil
	if sql != "" {
		batch.Queue(sql, args...)
	}
	results := c.tx.SendBatch(ctx, &batch)
	for i := range n {
		tag, err := results.Exec()
		if err == nil && checks[i] != nil {
			err = checks[i](tag)
		}
		if err != nil {
			_ = results.Close()
			return fmt.Errorf("%s: %w", batch.QueuedQueries[i].SQL[:min(40, len(batch.QueuedQueries[i].SQL))], mapErr(err))
		}
	}
	if sql != "" {
		if err := mapErr(scan(results.QueryRow())); err != nil {
			_ = results.Close()
			return err
		}
	}
	return mapErr(results.Close())
}

// send sends a batch of statements (after the writes held back) in one round trip.
func (c *txConn) send(ctx context.Context, b *pgx.Batch) error {
	if err := c.flush(ctx); err != nil {
		return err
	}
	return mapErr(c.tx.SendBatch(ctx, b).Close())
}

func (c *txConn) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := c.flush(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	return c.tx.Exec(ctx, sql, args...)
}

func (c *txConn) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := c.flush(ctx); err != nil {
		return nil, err
	}
	return c.tx.Query(ctx, sql, args...)
}

// QueryRow sends the query with the writes held back, in the same round trip, when it is scanned.
func (c *txConn) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if c.pending.Len() == 0 {
		return c.tx.QueryRow(ctx, sql, args...)
	}
	return pendingRow{c: c, ctx: ctx, sql: sql, args: args}
}

// pendingRow is a query sent, with the writes held back before it, when it is scanned.
type pendingRow struct {
	c    *txConn
	ctx  context.Context
	sql  string
	args []any
}

func (r pendingRow) Scan(dest ...any) error {
	return r.c.flushWith(r.ctx, r.sql, r.args, func(row pgx.Row) error { return row.Scan(dest...) })
}
