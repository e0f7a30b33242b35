package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// txConn is a transaction that holds back the writes whose results nobody waits for and sends
// them together, in one round trip, with the next statement that needs an answer (or with the
// commit). A lobby's lock is held from its first statement to the commit, so every round trip
// saved there shortens the queue of the lobby's other actions.
type txConn struct {
	tx      conn
	pending pgx.Batch
	// checks[i], when not nil, judges the outcome of pending statement i.
	checks []func(pgconn.CommandTag, error) error
	// restore, when not empty, is a statement to run before the next one: the committer's plan
	// settings, set aside for statements over a whole round (see pgTx.withCustomPlans) and put
	// back only when another statement comes, so that a stage change's consecutive statements
	// over its round share one setting aside.
	restore string
}

// restoreSettings queues the statement that puts the settings back, if one is due.
func (c *txConn) restoreSettings() {
	if c.restore != "" {
		queue(&c.pending, c.restore)
		c.checks = append(c.checks, nil)
		c.restore = ""
	}
}

// conn is what txConn runs statements on: a connection on which it sent BEGIN, or a pgx.Tx.
type conn interface {
	querier
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

var _ querier = (*txConn)(nil)

// later queues a write; its error, if any, comes from the next flush.
func (c *txConn) later(sql string, args ...any) {
	c.laterChecked(nil, sql, args...)
}

// laterChecked queues a write whose outcome (its command tag and its error, mapped) check turns
// into the error that fails the flush, if any.
func (c *txConn) laterChecked(check func(pgconn.CommandTag, error) error, sql string, args ...any) {
	c.restoreSettings()
	queue(&c.pending, sql, args...)
	c.checks = append(c.checks, check)
}

// flush sends the queued writes in one round trip.
func (c *txConn) flush(ctx context.Context) error {
	return c.send(ctx, nil)
}

// send sends the queued writes followed by the statements of b (nil: none), whose callbacks
// receive their results, in one round trip. It returns the first error: a write's, or a
// callback's (mapped: no row is tournament.ErrNotFound).
func (c *txConn) send(ctx context.Context, b *pgx.Batch) error {
	if b != nil && b.Len() > 0 {
		c.restoreSettings()
	}
	n := c.pending.Len()
	if n == 0 && (b == nil || b.Len() == 0) {
		return nil
	}
	batch, checks := c.pending, c.checks
	c.pending, c.checks = pgx.Batch{}, nil
	if b != nil {
		batch.QueuedQueries = append(batch.QueuedQueries, b.QueuedQueries...)
	}
	results := c.tx.SendBatch(ctx, &batch)
	for i := range n {
		tag, err := results.Exec()
		err = mapErr(err)
		if checks[i] != nil {
			err = checks[i](tag, err)
		}
		if err != nil {
			_ = results.Close()
			return fmt.Errorf("%s: %w", batch.QueuedQueries[i].SQL[:min(40, len(batch.QueuedQueries[i].SQL))], err)
		}
	}
	return mapErr(results.Close())
}

func (c *txConn) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c.restoreSettings()
	if err := c.flush(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	return c.tx.Exec(ctx, sql, plainArgs(args)...)
}

func (c *txConn) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	c.restoreSettings()
	if err := c.flush(ctx); err != nil {
		return nil, err
	}
	return c.tx.Query(ctx, sql, plainArgs(args)...)
}

// QueryRow sends the query with the writes held back, in the same round trip, when it is scanned.
func (c *txConn) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	c.restoreSettings()
	if c.pending.Len() == 0 {
		return c.tx.QueryRow(ctx, sql, plainArgs(args)...)
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
	var b pgx.Batch
	queue(&b, r.sql, r.args...).QueryRow(func(row pgx.Row) error { return row.Scan(dest...) })
	return r.c.send(r.ctx, &b)
}
