// Package migrations holds the database schema as numbered golang-migrate
// files (NNNN_name.up.sql and NNNN_name.down.sql), embedded in the binary,
// and applies them.
package migrations

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"

	"github.com/golang-migrate/migrate/v4"
	_ "github.com/golang-migrate/migrate/v4/database/pgx/v5" // registers the pgx5:// driver
	"github.com/golang-migrate/migrate/v4/source/iofs"
)

//go:embed *.sql
var files embed.FS

// Up applies every migration not yet applied to the database at
// databaseURL (postgres://, postgresql:// or pgx5://), over a connection of
// its own that it closes before returning. A database already up to date is
// not an error. Concurrent callers (several replicas starting at once) are
// serialised by golang-migrate's advisory lock. Cancelling ctx stops after
// the migration in progress.
func Up(ctx context.Context, databaseURL string) (err error) {
	m, err := open(databaseURL)
	if err != nil {
		return err
	}
	defer closeMigrate(m, &err)
	// golang-migrate takes no context; GracefulStop is its way to stop
	// between two migrations.
	stop := context.AfterFunc(ctx, func() { m.GracefulStop <- true })
	defer stop()

	err = m.Up()
	if errors.Is(err, migrate.ErrNoChange) {
		err = nil
	}
	if err != nil {
		var dirty migrate.ErrDirty
		if errors.As(err, &dirty) {
			return fmt.Errorf("migrate: database is dirty at version %d, whose migration failed earlier: "+
				"repair the schema, then clear the flag (golang-migrate CLI: migrate force): %w", dirty.Version, err)
		}
		// A failed migration leaves the database dirty at its version.
		if v, isDirty, verr := m.Version(); verr == nil && isDirty {
			return fmt.Errorf("migrate: migration %d failed: %w", v, err)
		}
		return fmt.Errorf("migrate up: %w", err)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("migrate up: %w", context.Cause(ctx))
	}
	return nil
}

// Version returns the version of the last migration applied to the
// database (0 if none) and whether that migration failed half-way.
func Version(ctx context.Context, databaseURL string) (version uint, dirty bool, err error) {
	if err := ctx.Err(); err != nil {
		return 0, false, err
	}
	m, err := open(databaseURL)
	if err != nil {
		return 0, false, err
	}
	defer closeMigrate(m, &err)
	version, dirty, err = m.Version()
	if errors.Is(err, migrate.ErrNilVersion) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("migration version: %w", err)
	}
	return version, dirty, nil
}

// Latest returns the highest version among the embedded migrations: the
// version Up leaves a database at.
func Latest() (uint, error) {
	src, err := iofs.New(files, ".")
	if err != nil {
		return 0, fmt.Errorf("read migrations: %w", err)
	}
	defer src.Close()
	v, err := src.First()
	if err != nil {
		return 0, fmt.Errorf("first migration: %w", err)
	}
	for {
		next, err := src.Next(v)
		if errors.Is(err, fs.ErrNotExist) {
			return v, nil
		}
		if err != nil {
			return 0, fmt.Errorf("next migration after %d: %w", v, err)
		}
		v = next
	}
}

func open(databaseURL string) (*migrate.Migrate, error) {
	dbURL, err := pgx5URL(databaseURL)
	if err != nil {
		return nil, err
	}
	src, err := iofs.New(files, ".")
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	m, err := migrate.NewWithSourceInstance("iofs", src, dbURL)
	if err != nil {
		src.Close()
		return nil, fmt.Errorf("open migrations: %w", err)
	}
	return m, nil
}

// closeMigrate closes the source and the database connection, reporting a
// failure to close only if nothing failed before.
func closeMigrate(m *migrate.Migrate, err *error) {
	srcErr, dbErr := m.Close()
	if *err == nil {
		if cerr := errors.Join(srcErr, dbErr); cerr != nil {
			*err = fmt.Errorf("close migrations: %w", cerr)
		}
	}
}

// pgx5URL turns a postgres:// or postgresql:// URL into the pgx5:// form
// that selects golang-migrate's pgx v5 driver. It drops pgxpool's pool_*
// settings, which the migration's single connection would send to the
// server as unknown run-time parameters.
func pgx5URL(databaseURL string) (string, error) {
	u, err := url.Parse(databaseURL)
	if err != nil {
		// The parse error would echo the URL, password included.
		return "", errors.New("migrate: database URL does not parse")
	}
	switch u.Scheme {
	case "postgres", "postgresql", "pgx5":
		u.Scheme = "pgx5"
		q := u.Query()
		for name := range q {
			if strings.HasPrefix(name, "pool_") {
				q.Del(name)
			}
		}
		u.RawQuery = q.Encode()
		return u.String(), nil
	default:
		return "", fmt.Errorf("migrate: database URL scheme %q is not postgres, postgresql or pgx5", u.Scheme)
	}
}
