package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/commitreveal/rps/tournament"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

const accountColumns = `id::text, name, role, balance, created_at, coalesce(disabled_at, 0)`

func scanAccount(r pgx.Row, extra ...any) (tournament.Account, error) {
	var a tournament.Account
	err := r.Scan(append([]any{&a.ID, &a.Name, &a.Role, &a.Balance, &a.CreatedAt, &a.DisabledAt}, extra...)...)
	return a, err
}

// newToken returns a fresh bearer token (256 random bits, base64url) and the hash stored for it.
func newToken() (token string, hash []byte) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	token = base64.RawURLEncoding.EncodeToString(b[:])
	return token, tokenHash(token)
}

// TokenHash is what is kept of a bearer token, by the database and by the API's token cache, so
// that a leaked table or heap does not let anyone in.
func TokenHash(token string) [32]byte { return sha256.Sum256([]byte(token)) }

// tokenHash is TokenHash as a column value.
func tokenHash(token string) []byte {
	h := TokenHash(token)
	return h[:]
}

// ErrNameTaken refuses an account whose name another account has, under the PRECIS Nickname
// profile's comparison (tournament.Name): the unique index on accounts.name_key says so.
var ErrNameTaken = errors.New("the name is taken")

// CreateAccount creates an account with a zero balance and returns it with its bearer token,
// which is not stored and cannot be shown again. The name follows tournament.Name (kept in the
// PRECIS Nickname profile's form; an invisible, reordering or too long one is refused with
// validation_failed), and no other account may have it (ErrNameTaken).
func (s *Store) CreateAccount(ctx context.Context, name string, role tournament.Role) (tournament.Account, string, error) {
	name, _, err := tournament.Name("name", name, tournament.MaxAccountNameLength)
	if err != nil {
		return tournament.Account{}, "", err
	}
	token, hash := newToken()
	a := tournament.Account{ID: tournament.AccountID(uuid.NewString()), Name: name, Role: role}
	err = s.run(ctx, func(t *pgTx) error {
		var err error
		a, err = t.insertAccount(ctx, a, hash)
		return err
	})
	if err != nil {
		return tournament.Account{}, "", err
	}
	return a, token, nil
}

// insertAccount stores a new account with a zero balance (tokenHash may be nil: no token) and
// returns it with its creation time. Its name is keyed by tournament.Name, whose form it has.
func (t *pgTx) insertAccount(ctx context.Context, a tournament.Account, tokenHash []byte) (tournament.Account, error) {
	_, key, err := tournament.Name("name", a.Name, tournament.MaxAccountNameLength)
	if err != nil {
		return a, err
	}
	now, err := t.now(ctx)
	if err != nil {
		return a, err
	}
	_, err = exec(ctx, t.tx, `INSERT INTO accounts (id, name, name_key, role, token_hash, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		a.ID, a.Name, key, a.Role, tokenHash, now)
	var pgErr *pgconn.PgError
	if errors.Is(err, ErrConflict) && errors.As(err, &pgErr) && pgErr.ConstraintName == "accounts_name_key" {
		return a, fmt.Errorf("insert account %q: %w", a.Name, ErrNameTaken)
	} else if err != nil {
		return a, fmt.Errorf("insert account: %w", err)
	}
	a.CreatedAt = now
	return a, nil
}

// TokenGrace is how long the token a rotation replaced keeps working while the new one is not
// used: a client that lost the rotation's answer can still get in and rotate again.
const TokenGrace = 10 * time.Minute

// AccountByToken returns the account a bearer token belongs to (its current token, or the one
// its last rotation replaced, within the grace), or tournament.ErrNotFound. graceLeft is how long
// a replaced token keeps working (at least 1 ms), 0 for the current token: a cache must not keep a
// replaced token past it, since the grace ends without any change to the row to tell it. The
// first use of a new token retires the one it replaced; retired reports it, so that caches drop
// the account's tokens.
func (s *Store) AccountByToken(ctx context.Context, token string) (a tournament.Account, graceLeft time.Duration, retired bool, err error) {
	hash := tokenHash(token)
	var graceMs int64
	a, err = scanAccount(queryRow(ctx, s.pool, `SELECT `+accountColumns+`, token_hash = $1 AND previous_token_hash IS NOT NULL,
			CASE WHEN token_hash = $1 THEN 0 ELSE greatest(previous_token_expires_at - `+clockSQL+`, 1) END
		FROM accounts WHERE token_hash = $1 OR (previous_token_hash = $1 AND previous_token_expires_at > `+clockSQL+`)`,
		hash), &retired, &graceMs)
	graceLeft = time.Duration(graceMs) * time.Millisecond
	if err != nil || !retired {
		return a, graceLeft, false, err
	}
	_, err = exec(ctx, s.pool, `UPDATE accounts SET previous_token_hash = NULL, previous_token_expires_at = NULL
		WHERE id = $1 AND token_hash = $2`, a.ID, hash)
	if err != nil {
		return a, graceLeft, false, fmt.Errorf("retire the previous token: %w", err)
	}
	return a, graceLeft, true, nil
}

// RotateToken gives an account a fresh token and returns it. The token the request came with
// (used) keeps working for TokenGrace or until the new one is first used. The token itself is
// never stored: with an idempotency key, a duplicate of the request does not rotate again but is
// answered as a replay of the first one, whose result carries no token (token is then "").
func (s *Store) RotateToken(ctx context.Context, id tournament.AccountID, used string, key *IdempotencyKey, request RequestRef) (token string, answer Answer, err error) {
	return s.replaceToken(ctx, id, id, key, request, func(t *pgTx, hash []byte, now int64) (*tournament.Error, error) {
		return nil, execOne(ctx, t.tx, `UPDATE accounts SET token_hash = $2, previous_token_hash = $3,
			previous_token_expires_at = $4 WHERE id = $1`, id, hash, tokenHash(used), now+TokenGrace.Milliseconds())
	})
}

// IssueToken gives a player a fresh token on an admin's behalf, revoking every token the player
// had at once, records it in the admin audit log and returns the token. An unknown account is
// tournament.ErrNotFound; an admin account is refused (admins' tokens are the operator's to
// issue). Idempotent like RotateToken.
func (s *Store) IssueToken(ctx context.Context, admin, id tournament.AccountID, key *IdempotencyKey, request RequestRef,
	auth *tournament.AdminAuth) (token string, answer Answer, err error) {
	detail := json.RawMessage(`{}`)
	if auth != nil {
		if detail, err = json.Marshal(struct {
			Auth *tournament.ActionAuth `json:"auth"`
		}{auth.Audited()}); err != nil {
			return "", Answer{}, fmt.Errorf("encode audit detail: %w", err)
		}
	}
	return s.replaceToken(ctx, admin, id, key, request, func(t *pgTx, hash []byte, now int64) (*tournament.Error, error) {
		var role tournament.Role
		if err := queryRow(ctx, t.tx, `SELECT role FROM accounts WHERE id = $1 FOR UPDATE`, id).Scan(&role); err != nil {
			return nil, err
		}
		if role != tournament.RolePlayer {
			return &tournament.Error{Code: tournament.CodeForbidden, Message: "an admin's token is issued with rpsd admin token, on the server"}, nil
		}
		if err := execOne(ctx, t.tx, `UPDATE accounts SET token_hash = $2, previous_token_hash = NULL,
			previous_token_expires_at = NULL WHERE id = $1`, id, hash); err != nil {
			return nil, err
		}
		t.queueAuditEntry(AuditEntry{Actor: admin, Action: "issue_token", Target: string(id), Detail: detail}, now)
		return nil, nil
	})
}

// replaceToken runs set, which stores the hash of a fresh token (or refuses), in a keyed
// transaction; token is the fresh token when set stored it (not for a refusal or a replay).
func (s *Store) replaceToken(ctx context.Context, actor, id tournament.AccountID, key *IdempotencyKey, request RequestRef,
	set func(t *pgTx, hash []byte, now int64) (*tournament.Error, error)) (token string, answer Answer, err error) {
	if !validID(string(id)) {
		return "", Answer{}, tournament.ErrNotFound
	}
	answer, err = s.actKeyed(ctx, actor, "", key, request, nil, func(t *pgTx, now int64) (tournament.Result, error) {
		var hash []byte
		token, hash = newToken()
		refusal, err := set(t, hash, now)
		return tournament.Result{Refusal: refusal, At: now}, err
	})
	if err != nil || answer.Replayed || answer.Result.Refusal != nil {
		return "", answer, err
	}
	return token, answer, nil
}

// Account returns an account with its balance.
func (s *Store) Account(ctx context.Context, id tournament.AccountID) (tournament.Account, error) {
	if !validID(string(id)) {
		return tournament.Account{}, tournament.ErrNotFound
	}
	return scanAccount(queryRow(ctx, s.pool, `SELECT `+accountColumns+` FROM accounts WHERE id = $1`, id))
}
