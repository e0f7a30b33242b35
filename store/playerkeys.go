package store

// Players' keys and their key logs (issue 31): binding a key at sign-up or later, retiring one,
// the operator's recovery, and the reads of an account's keys and key log. Each change locks the
// account's row, appends its event to the account's key chain (tournament.SealKeyEvent) and
// changes account_keys and the account's key_seq and active_keys in the same transaction; the
// transparency log's integrator (translog.go) takes the event from there as a leaf.

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commitreveal/rps/tournament"
)

// SignedKey is a public key to bind, with the player's signature of the request that binds it.
type SignedKey struct {
	PublicKey ed25519.PublicKey
	Signature tournament.KeySignature
}

// CreateAccountWithKey creates a player's account as CreateAccount does, born with key (signed by
// that key itself, over the name as sent, nameSent): its key log starts with the key_added event
// of the sign-up, in the account's creating transaction. A key bound already is refused
// (tournament.CodeKeyTaken), and so is a signature by another key (CodeBadSignature).
func (s *Store) CreateAccountWithKey(ctx context.Context, nameSent string, key SignedKey) (tournament.Account, string, error) {
	name, _, err := tournament.Name("name", nameSent, tournament.MaxAccountNameLength)
	if err != nil {
		return tournament.Account{}, "", err
	}
	if err := tournament.CheckKeySigner(0, nil, tournament.KeyID(key.PublicKey), key.Signature.KeyID); err != nil {
		return tournament.Account{}, "", err
	}
	token, hash := newToken()
	a := tournament.Account{ID: tournament.AccountID(uuid.NewString()), Name: name, Role: tournament.RolePlayer}
	// A refusal commits what its transaction did (see tournament.Error): here the account would
	// be made without its key, so a refused key rolls the account back.
	var refusal *tournament.Error
	err = s.run(ctx, func(t *pgTx) error {
		var err error
		if a, err = t.insertAccount(ctx, a, hash); err != nil {
			return err
		}
		if err = key.Signature.CheckFresh(a.CreatedAt); err == nil {
			err = t.addKey(ctx, keyState{account: a.ID}, a.CreatedAt, key.PublicKey,
				tournament.NewKeyAdded(key.PublicKey, tournament.ViaSignUp, nameSent, key.Signature))
		}
		if r, ok := tournament.IsRefusal(err); ok {
			refusal = r
			return errKeyRefused
		}
		return err
	})
	switch {
	case refusal != nil:
		return tournament.Account{}, "", refusal
	case err != nil:
		return tournament.Account{}, "", err
	}
	return a, token, nil
}

// errKeyRefused rolls back a sign-up whose key was refused.
var errKeyRefused = errors.New("the sign-up's key was refused")

// AddKey binds key to the player's account, signed by one of its active keys, or, for an account
// that never had a key, by the new key itself (tournament.CheckKeySigner), in one transaction
// under the request's idempotency key like any action. A key bound already (to any account) is
// refused with tournament.CodeKeyTaken.
func (s *Store) AddKey(ctx context.Context, account tournament.AccountID, key SignedKey, idem *IdempotencyKey, request RequestRef) (Answer, error) {
	return s.changeKeys(ctx, account, account, idem, request, nil, func(t *pgTx, st keyState, now int64) error {
		if err := key.Signature.CheckFresh(now); err != nil {
			return err
		}
		if err := tournament.CheckKeySigner(st.seq, st.active, tournament.KeyID(key.PublicKey), key.Signature.KeyID); err != nil {
			return err
		}
		if err := tournament.CheckKeyCount(st.keys); err != nil {
			return err
		}
		return t.addKey(ctx, st, now, key.PublicKey, tournament.NewKeyAdded(key.PublicKey, tournament.ViaAddKey, "", key.Signature))
	})
}

// RetireKey retires one of the account's active keys, signed by one of them (itself included).
// Its last active key is refused (tournament.CodeLastKey), a key that is not one of its active
// keys is tournament.CodeNotFound.
func (s *Store) RetireKey(ctx context.Context, account tournament.AccountID, keyID string, sig tournament.KeySignature,
	idem *IdempotencyKey, request RequestRef) (Answer, error) {
	return s.changeKeys(ctx, account, account, idem, request, nil, func(t *pgTx, st keyState, now int64) error {
		if err := sig.CheckFresh(now); err != nil {
			return err
		}
		if err := tournament.CheckKeySigner(st.seq, st.active, "", sig.KeyID); err != nil {
			return err
		}
		if err := tournament.CheckRetire(st.active, keyID); err != nil {
			return err
		}
		e, err := t.appendKeyEvent(ctx, st, now, tournament.NewKeyRetired(keyID, sig))
		if err != nil {
			return err
		}
		return t.updateKeys(ctx, st, e, -1, `UPDATE account_keys SET retired_seq = $2, retired_at = $3
			WHERE account_id = $1 AND key_id = $4 AND retired_seq IS NULL`, keyID)
	})
}

// RecoverKeys is the operator's recovery of a player who lost every key, by admin: every active
// key of the account is retired and key added, in one keys_recovered event that names the admin
// and the reason (the player signed nothing: the log shows it as the operator's word), and an
// entry of the admins' audit log. An admin's account is refused (tournament.CodeForbidden).
func (s *Store) RecoverKeys(ctx context.Context, admin, account tournament.AccountID, key ed25519.PublicKey, reason string,
	idem *IdempotencyKey, request RequestRef, audit *Audit) (Answer, error) {
	return s.changeKeys(ctx, admin, account, idem, request, audit, func(t *pgTx, st keyState, now int64) error {
		if st.role != tournament.RolePlayer {
			return &tournament.Error{Code: tournament.CodeForbidden, Message: "an admin's keys are not recovered through the API"}
		}
		// Checked before the retirements: a refusal commits what came before it.
		if err := t.checkKeyFree(ctx, st.account, key); err != nil {
			return err
		}
		retired := append([]string{}, st.active...)
		data := &tournament.KeysRecoveredData{KeyID: tournament.KeyID(key), PublicKey: hex.EncodeToString(key),
			Retired: retired, Admin: admin, Reason: reason}
		if audit != nil {
			data.Auth = audit.Auth
		}
		if len(retired) > 0 {
			if err := execOne(ctx, t.tx, `UPDATE account_keys SET retired_seq = $2, retired_at = $3
				WHERE account_id = $1 AND retired_seq IS NULL`, st.account, st.seq+1, now); err != nil {
				return fmt.Errorf("retire the keys of account %s: %w", st.account, err)
			}
		}
		st.activeDelta = -len(retired)
		return t.bindKey(ctx, st, now, key, true, data)
	})
}

// keyState is an account's key log and keys as a change finds them, under the account's row
// lock.
type keyState struct {
	account tournament.AccountID
	role    tournament.Role
	// seq, head and headAt are the key log's newest event, its hash and instant (0: the account
	// never had a key).
	seq    int64
	head   [32]byte
	headAt int64
	// active are the ids of its active keys; keys counts every key it ever had.
	active []string
	keys   int
	// activeDelta is the change of the active keys made before the event's own (a recovery's
	// retirements).
	activeDelta int
}

// changeKeys runs a key change of account, by actor, as an action under idem: it locks the
// account's row, reads its key state and runs change, whose refusals are the action's answer.
func (s *Store) changeKeys(ctx context.Context, actor, account tournament.AccountID, idem *IdempotencyKey, request RequestRef, audit *Audit,
	change func(t *pgTx, st keyState, now int64) error) (Answer, error) {
	if !validID(string(account)) {
		return Answer{}, tournament.ErrNotFound
	}
	return s.actKeyed(ctx, actor, account, idem, request, audit, func(t *pgTx, now int64) (tournament.Result, error) {
		st, err := t.lockKeys(ctx, account)
		if errors.Is(err, tournament.ErrNotFound) {
			err = &tournament.Error{Code: tournament.CodeNotFound, Message: fmt.Sprintf("no account %s", account)}
		} else if err == nil {
			// The instant was read once the batch held the account's row (queueAccountLocks),
			// after every change of the account before it; an injected clock may still go back.
			// The key log goes forward in time, as verifiers require.
			now = max(now, st.headAt)
			err = change(t, st, now)
		}
		if r, ok := tournament.IsRefusal(err); ok {
			return tournament.Result{Refusal: r, At: now}, nil
		}
		return tournament.Result{At: now}, err
	})
}

// lockKeys locks an account's row and reads its key state.
func (t *pgTx) lockKeys(ctx context.Context, account tournament.AccountID) (keyState, error) {
	st := keyState{account: account}
	var head []byte
	err := queryRow(ctx, t.tx, `SELECT a.role, a.key_seq, coalesce(e.hash, ''::bytea), coalesce(e.at, 0),
			array(SELECT key_id FROM account_keys k WHERE k.account_id = a.id AND k.retired_seq IS NULL ORDER BY key_id),
			(SELECT count(*) FROM account_keys k WHERE k.account_id = a.id)
		FROM accounts a LEFT JOIN account_key_events e ON e.account_id = a.id AND e.seq = a.key_seq
		WHERE a.id = $1 FOR UPDATE OF a`, account).Scan(&st.role, &st.seq, &head, &st.headAt, &st.active, &st.keys)
	if err != nil {
		return st, fmt.Errorf("lock the keys of account %s: %w", account, err)
	}
	copy(st.head[:], head)
	return st, nil
}

// addKey binds pub to the account with the key event data d (key_added), unless a key with its
// id or bytes is bound already.
func (t *pgTx) addKey(ctx context.Context, st keyState, now int64, pub ed25519.PublicKey, d tournament.KeyEventData) error {
	if err := t.checkKeyFree(ctx, st.account, pub); err != nil {
		return err
	}
	return t.bindKey(ctx, st, now, pub, false, d)
}

// checkKeyFree refuses a key that is bound already, by its id or its bytes (tournament.CodeKeyTaken).
// A refusal commits what its transaction did before it: a change checks this before it writes.
func (t *pgTx) checkKeyFree(ctx context.Context, account tournament.AccountID, pub ed25519.PublicKey) error {
	keyID := tournament.KeyID(pub)
	var owner tournament.AccountID
	err := queryRow(ctx, t.tx, `SELECT account_id::text FROM account_keys WHERE key_id = $1 OR public_key = $2 LIMIT 1`,
		keyID, []byte(pub)).Scan(&owner)
	switch {
	case err == nil && owner == account:
		return &tournament.Error{Code: tournament.CodeKeyTaken, Message: fmt.Sprintf("key %s is bound to this account already (a key, once retired, is not bound again)", keyID)}
	case err == nil:
		return &tournament.Error{Code: tournament.CodeKeyTaken, Message: fmt.Sprintf("key %s is bound to another account: make a new key pair", keyID)}
	case !errors.Is(err, tournament.ErrNotFound):
		return fmt.Errorf("look up key %s: %w", keyID, err)
	}
	return nil
}

// bindKey appends the key event d (key_added or keys_recovered) and binds pub to the account.
func (t *pgTx) bindKey(ctx context.Context, st keyState, now int64, pub ed25519.PublicKey, recovery bool, d tournament.KeyEventData) error {
	e, err := t.appendKeyEvent(ctx, st, now, d)
	if err != nil {
		return err
	}
	return t.updateKeys(ctx, st, e, 1, `INSERT INTO account_keys (key_id, account_id, public_key, added_seq, added_at, recovery)
		VALUES ($4, $1, $5, $2, $3, $6)`, tournament.KeyID(pub), []byte(pub), recovery)
}

// appendKeyEvent seals d as the account's next key event and inserts it.
func (t *pgTx) appendKeyEvent(ctx context.Context, st keyState, now int64, d tournament.KeyEventData) (tournament.KeyEvent, error) {
	e, err := tournament.SealKeyEvent(tournament.KeyEvent{Seq: st.seq, Hash: st.head}, st.account, now, d)
	if err != nil {
		return e, err
	}
	_, err = exec(ctx, t.tx, `INSERT INTO account_key_events (account_id, seq, type, at, data, prev_hash, hash)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, e.AccountID, e.Seq, string(e.Type), e.At, string(e.Data), e.PrevHash[:], e.Hash[:])
	if err != nil {
		return e, fmt.Errorf("append key event %d of account %s: %w", e.Seq, st.account, err)
	}
	return e, nil
}

// updateKeys runs the key row's change for event e (sql, with $1 the account, $2 the event's seq,
// $3 its instant, then args), and moves the account's key_seq to e and its active_keys by delta
// (plus the state's own delta), so that active_keys stays the count of its active keys.
func (t *pgTx) updateKeys(ctx context.Context, st keyState, e tournament.KeyEvent, delta int, sql string, args ...any) error {
	if err := execOne(ctx, t.tx, sql, append([]any{st.account, e.Seq, e.At}, args...)...); err != nil {
		return fmt.Errorf("key event %d of account %s: %w", e.Seq, st.account, err)
	}
	if err := execOne(ctx, t.tx, `UPDATE accounts SET key_seq = $2, active_keys = active_keys + $3 WHERE id = $1 AND key_seq = $4`,
		st.account, e.Seq, delta+st.activeDelta, st.seq); err != nil {
		return fmt.Errorf("account %s's key log: %w", st.account, err)
	}
	t.forgetKeys(st.account)
	return nil
}

// AccountKey is one of an account's keys, as GET /v1/accounts/{id}/keys shows it.
type AccountKey struct {
	KeyID     string
	PublicKey ed25519.PublicKey
	AddedAt   int64
	AddedSeq  int64
	// RetiredAt and RetiredSeq are 0 while the key is active.
	RetiredAt  int64
	RetiredSeq int64
	// Recovery marks a key the operator added (keys_recovered).
	Recovery bool
}

// LoggedKeyEvent is a key event with its leaf in the transparency log (Logged false: not yet).
type LoggedKeyEvent struct {
	tournament.KeyEvent
	LeafIndex int64
	Logged    bool
}

// KeyLog is an account's keys and a page of its key log.
type KeyLog struct {
	Keys   []AccountKey
	Events []LoggedKeyEvent
	// HeadSeq and HeadHash are the key log's newest event (HeadSeq 0: none).
	HeadSeq  int64
	HeadHash [32]byte
}

// KeyLog returns an account's keys, in the order they were added, and up to limit events of its
// key log after seq after, read in one snapshot. An unknown account is tournament.ErrNotFound.
func (s *Store) KeyLog(ctx context.Context, account tournament.AccountID, after int64, limit int) (KeyLog, error) {
	var kl KeyLog
	if !validID(string(account)) {
		return kl, tournament.ErrNotFound
	}
	err := s.withTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var head []byte
		err := queryRow(ctx, tx, `SELECT a.key_seq, coalesce(e.hash, ''::bytea) FROM accounts a
			LEFT JOIN account_key_events e ON e.account_id = a.id AND e.seq = a.key_seq WHERE a.id = $1`, account).Scan(&kl.HeadSeq, &head)
		if err != nil {
			return err
		}
		copy(kl.HeadHash[:], head)
		if kl.Keys, err = collect(ctx, tx, func(r pgx.CollectableRow) (AccountKey, error) {
			var k AccountKey
			var pub []byte
			err := r.Scan(&k.KeyID, &pub, &k.AddedAt, &k.AddedSeq, &k.RetiredAt, &k.RetiredSeq, &k.Recovery)
			k.PublicKey = pub
			return k, err
		}, `SELECT key_id, public_key, added_at, added_seq, coalesce(retired_at, 0), coalesce(retired_seq, 0), recovery
			FROM account_keys WHERE account_id = $1 ORDER BY added_seq, key_id`, account); err != nil {
			return fmt.Errorf("read the keys of account %s: %w", account, err)
		}
		kl.Events, err = collect(ctx, tx, func(r pgx.CollectableRow) (LoggedKeyEvent, error) {
			e := LoggedKeyEvent{KeyEvent: tournament.KeyEvent{AccountID: account}}
			var data string
			var prev, hash []byte
			var leaf *int64
			err := r.Scan(&e.Seq, &e.Type, &e.At, &data, &prev, &hash, &leaf)
			e.Data = json.RawMessage(data)
			copy(e.PrevHash[:], prev)
			copy(e.Hash[:], hash)
			if leaf != nil {
				e.LeafIndex, e.Logged = *leaf, true
			}
			return e, err
		}, `SELECT e.seq, e.type, e.at, e.data::text, e.prev_hash, e.hash, r.first_index + (e.seq - r.first_seq)
			FROM account_key_events e
			LEFT JOIN log_key_ranges r ON r.account_id = e.account_id AND e.seq >= r.first_seq AND e.seq < r.first_seq + r.count
			WHERE e.account_id = $1 AND e.seq > $2 ORDER BY e.seq LIMIT $3`, account, after, limit)
		if err != nil {
			return fmt.Errorf("read the key log of account %s: %w", account, err)
		}
		return nil
	})
	return kl, err
}
