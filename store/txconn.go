package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// txConn is a transaction that holds back the writes whose results nobody waits for and sends
// them together, in one round trip, just before the next statement that needs an answer (or the
// commit). A lobby's lock is held from its first statement to the commit, so every round trip
// saved there shortens the queue of the lobby's other actions.
type txConn struct {
	tx      pgx.Tx
	pending pgx.Batch
}

var _ querier = (*txConn)(nil)

// later queues a write; its error, if any, comes from the next flush.
func (c *txConn) later(sql string, args ...any) {
	c.pending.Queue(sql, args...)
}

// flush sends the queued writes, the last of them optionally one whose command tag the caller
// needs, and returns that tag.
func (c *txConn) flush(ctx context.Context) (pgconn.CommandTag, error) {
	n := c.pending.Len()
	if n == 0 {
		return pgconn.CommandTag{}, nil
	}
	batch := c.pending
	c.pending = pgx.Batch{}
	results := c.tx.SendBatch(ctx, &batch)
	var tag pgconn.CommandTag
	for i := range n {
		var err error
		if tag, err = results.Exec(); err != nil {
			_ = results.Close()
			return tag, fmt.Errorf("%s: %w", batch.QueuedQueries[i].SQL[:min(40, len(batch.QueuedQueries[i].SQL))], mapErr(err))
		}
	}
	return tag, mapErr(results.Close())
}

// send sends a batch of statements (after the writes held back) in one round trip.
func (c *txConn) send(ctx context.Context, b *pgx.Batch) error {
	if _, err := c.flush(ctx); err != nil {
		return err
	}
	return mapErr(c.tx.SendBatch(ctx, b).Close())
}

func (c *txConn) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if _, err := c.flush(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	return c.tx.Exec(ctx, sql, args...)
}

func (c *txConn) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if _, err := c.flush(ctx); err != nil {
		return nil, err
	}
	return c.tx.Query(ctx, sql, args...)
}

func (c *txConn) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if _, err := c.flush(ctx); err != nil {
		return errRow{err}
	}
	return c.tx.QueryRow(ctx, sql, args...)
}

// errRow is a row whose query could not be sent.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
