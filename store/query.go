package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/commitreveal/rps/tournament"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// This file holds the query helpers every SQL call goes through, and mapErr, the one place that
// turns driver errors into domain errors.

// querier is what both a pool and a transaction can run.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Domain errors for driver failures. Each wraps the driver's error, so errors.As still finds the
// *pgconn.PgError with its constraint name.
var (
	// ErrConflict is a unique violation: the row exists already.
	ErrConflict = errors.New("conflict")
	// ErrConstraint is a check, foreign key or not-null violation: the write would break an
	// invariant the schema guards.
	ErrConstraint = errors.New("constraint violated")
	// ErrRetry is a serialization failure or a deadlock: the transaction lost a race and may
	// succeed if run again (Run does so a bounded number of times).
	ErrRetry = errors.New("transaction conflict")
	// ErrUnavailable means the database could not be reached or cannot take writes right now: the
	// primary is down, restarting or being replaced by a standby (a failover), or the connection
	// reached a read-only standby. The operation either did not happen or committed without its
	// answer arriving; a retry with the same idempotency key tells which.
	ErrUnavailable = errors.New("database unavailable")
)

// mapErr is the one place that turns driver errors into domain errors: no rows is
// tournament.ErrNotFound, and SQLSTATEs map to the errors above. Other errors pass unchanged.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return tournament.ErrNotFound
	}
	if IsUnavailable(err) {
		if errors.Is(err, ErrUnavailable) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return err
	}
	switch pgErr.Code {
	case "23505": // unique_violation
		return fmt.Errorf("%w: %s: %w", ErrConflict, pgErr.ConstraintName, err)
	case "23514", "23503", "23502": // check, foreign key, not null
		return fmt.Errorf("%w: %s: %w", ErrConstraint, pgErr.ConstraintName, err)
	case "40001", "40P01": // serialization_failure, deadlock_detected
		return fmt.Errorf("%w: %w", ErrRetry, err)
	}
	return err
}

// IsUnavailable reports whether err, mapped or straight from the driver, means the database is out
// of reach rather than that the operation is wrong: no connection could be made (also none to a
// writable server, with target_session_attrs=read-write during a failover), the connection broke,
// the server is shutting down or starting, or it is a read-only standby.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrUnavailable) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"): // connection exception
			return true
		case pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03": // admin or crash shutdown, cannot connect now
			return true
		case pgErr.Code == "25006": // read_only_sql_transaction: a standby
			return true
		}
		return false
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) || pgconn.SafeToRetry(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE)
}

// row maps the error of a single-row query.
type row struct{ pgx.Row }

func (r row) Scan(dest ...any) error { return mapErr(r.Row.Scan(dest...)) }

func queryRow(ctx context.Context, q querier, sql string, args ...any) row {
	return row{q.QueryRow(ctx, sql, plainArgs(args)...)}
}

func exec(ctx context.Context, q querier, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := q.Exec(ctx, sql, plainArgs(args)...)
	return tag, mapErr(err)
}

// queue queues a statement of a batch.
func queue(b *pgx.Batch, sql string, args ...any) *pgx.QueuedQuery {
	return b.Queue(sql, plainArgs(args)...)
}

// plainArgs turns the core's string types (ids, stages, kinds) into plain strings, in place. pgx
// sends a plain string as text, which Postgres parses into the parameter's type; for any other
// type it first tries the parameter type's binary format, which has no encoding of a string type
// into a uuid, and pgx fails that try with a formatted error before it falls back to text: 6% of
// rpsd's CPU under the mixed load went there (pprof: pgtype.newEncodeError and the plan search).
func plainArgs(args []any) []any {
	for i, a := range args {
		switch v := a.(type) {
		case tournament.LobbyID:
			args[i] = string(v)
		case tournament.GameID:
			args[i] = string(v)
		case tournament.AccountID:
			args[i] = string(v)
		case tournament.Stage:
			args[i] = string(v)
		case tournament.EventType:
			args[i] = string(v)
		case tournament.PostingKind:
			args[i] = string(v)
		case tournament.Code:
			args[i] = string(v)
		}
	}
	return args
}

// uuidArray is ids as a parameter of type uuid[] that pgx sends in binary. It has no binary
// encoding of a string as a uuid: given strings, it tries, fails with a formatted error, searches
// its plans again (failures are not cached) and falls back to text, which PostgreSQL parses
// element by element; a batch's held writes have about ten such arrays. An id that is not a uuid
// leaves them as given, for PostgreSQL to refuse as it did.
func uuidArray[T ~string](ids []T) any {
	out := make([]pgtype.UUID, len(ids))
	for i, id := range ids {
		if err := out[i].Scan(string(id)); err != nil {
			return ids
		}
	}
	return out
}

// execOne runs a statement that must change exactly one row; none is tournament.ErrNotFound.
func execOne(ctx context.Context, q querier, sql string, args ...any) error {
	tag, err := exec(ctx, q, sql, args...)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return tournament.ErrNotFound
	}
	return nil
}

// collect runs a query and scans every row with fn.
func collect[T any](ctx context.Context, q querier, fn pgx.RowToFunc[T], sql string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, sql, plainArgs(args)...)
	if err != nil {
		return nil, mapErr(err)
	}
	out, err := pgx.CollectRows(rows, fn)
	return out, mapErr(err)
}

// validID reports whether s can be an id in the database. Ids from outside (a URL path) are
// checked before they reach a query, because Postgres would fail the transaction on a malformed
// uuid instead of just finding no row. Only the canonical 36-character form is accepted.
func validID(s string) bool {
	return len(s) == 36 && uuid.Validate(s) == nil
}
