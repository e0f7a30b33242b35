package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/commitreveal/rps/migrations"
	"github.com/commitreveal/rps/tournament"
)

// The bootstrap admin is the oldest admin account: the one rpsd creates at its first start.
const bootstrapAdminSQL = `SELECT id::text FROM accounts WHERE role = 'admin' ORDER BY created_at, id LIMIT 1 FOR UPDATE`

// EnsureAdmin makes sure the bootstrap admin exists. With a token, the admin is created with it
// or given it; without one, a missing admin is created with a fresh token. It returns the token
// and whether the admin was created; the token is empty when an existing admin kept its own.
func (s *Store) EnsureAdmin(ctx context.Context, token string) (string, bool, error) {
	var created bool
	err := s.run(ctx, func(t *pgTx) error {
		created = false
		id, err := t.bootstrapAdmin(ctx)
		switch {
		case errors.Is(err, tournament.ErrNotFound):
			if token == "" {
				token, _ = newToken()
			}
			created = true
			_, err := t.insertAccount(ctx, tournament.Account{ID: tournament.AccountID(uuid.NewString()), Name: "admin", Role: tournament.RoleAdmin}, tokenHash(token))
			return err
		case err != nil:
			return err
		case token != "":
			return execOne(ctx, t.tx, `UPDATE accounts SET token_hash = $2 WHERE id = $1`, id, tokenHash(token))
		}
		return nil
	})
	if err != nil {
		return "", false, fmt.Errorf("ensure admin: %w", err)
	}
	return token, created, nil
}

// RotateAdminToken gives the bootstrap admin (created if missing) a fresh token, revoking the
// old one, and returns it.
func (s *Store) RotateAdminToken(ctx context.Context) (string, error) {
	token, _ := newToken()
	if _, _, err := s.EnsureAdmin(ctx, token); err != nil {
		return "", err
	}
	return token, nil
}

func (t *pgTx) bootstrapAdmin(ctx context.Context) (tournament.AccountID, error) {
	var id tournament.AccountID
	err := queryRow(ctx, t.tx, bootstrapAdminSQL).Scan(&id)
	return id, err
}

// Ready reports whether the database answers and its schema is at the version this build
// expects. Its error is fit to show anyone: connection details go to the log only.
func (s *Store) Ready(ctx context.Context) error {
	want, err := migrations.Latest()
	if err != nil {
		return err
	}
	var version int64
	var dirty bool
	if err := queryRow(ctx, s.pool, `SELECT version, dirty FROM schema_migrations`).Scan(&version, &dirty); err != nil {
		s.log.Warn("readiness check failed", "err", err)
		return errors.New("database unreachable")
	}
	if dirty || version != int64(want) {
		return fmt.Errorf("database schema at version %d (dirty %v), this build needs %d", version, dirty, want)
	}
	return nil
}
