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

// EnsureAdmin makes sure the bootstrap admin exists: when there is none, it is created with
// token, or with a fresh token when token is empty. It returns the admin's token and true when
// it created the admin; an existing admin keeps its own token whatever token is (a rotated token
// must not be undone by a restart), and the returned token is then empty.
func (s *Store) EnsureAdmin(ctx context.Context, token string) (string, bool, error) {
	var created bool
	err := s.run(ctx, func(t *pgTx) error {
		created = false
		_, err := t.bootstrapAdmin(ctx)
		if !errors.Is(err, tournament.ErrNotFound) {
			return err
		}
		if token == "" {
			token, _ = newToken()
		}
		created = true
		_, err = t.insertAccount(ctx, tournament.Account{ID: tournament.AccountID(uuid.NewString()), Name: "admin", Role: tournament.RoleAdmin}, tokenHash(token))
		return err
	})
	if err != nil {
		return "", false, fmt.Errorf("ensure admin: %w", err)
	}
	if !created {
		return "", false, nil
	}
	return token, true, nil
}

// RotateAdminToken gives the bootstrap admin (created if missing) a fresh token, revoking the
// old one at once, and returns it.
func (s *Store) RotateAdminToken(ctx context.Context) (string, error) {
	token, created, err := s.EnsureAdmin(ctx, "")
	if err != nil || created {
		return token, err
	}
	token, hash := newToken()
	err = s.run(ctx, func(t *pgTx) error {
		id, err := t.bootstrapAdmin(ctx)
		if err != nil {
			return err
		}
		return execOne(ctx, t.tx, `UPDATE accounts SET token_hash = $2, previous_token_hash = NULL,
			previous_token_expires_at = NULL WHERE id = $1`, id, hash)
	})
	if err != nil {
		return "", fmt.Errorf("rotate admin token: %w", err)
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
