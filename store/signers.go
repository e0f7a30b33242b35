package store

// The state of players' keys as the write path reads it (tournament.Tx.Keys): with the batch's
// first read for each actor and signing key (see queueCallReads), else in a statement of its own.

import (
	"context"
	"fmt"

	"github.com/commitreveal/rps/tournament"
)

// signerKey names a key state held by a transaction: an account and the key that signed ("":
// none).
type signerKey struct {
	account tournament.AccountID
	key     string
}

// keyStateSQL reads an account's key state and whether $2 is one of its active keys.
const keyStateSQL = `SELECT a.active_keys, a.key_seq > 0,
		coalesce((SELECT k.retired_seq IS NULL FROM account_keys k WHERE k.key_id = $2 AND k.account_id = a.id), false)
	FROM accounts a WHERE a.id = $1`

func (t *pgTx) Keys(ctx context.Context, account tournament.AccountID, keyID string) (tournament.KeyState, error) {
	if st, ok := t.keys[signerKey{account, keyID}]; ok {
		return st, nil
	}
	if !validID(string(account)) {
		return tournament.KeyState{}, tournament.ErrNotFound
	}
	var st tournament.KeyState
	if err := queryRow(ctx, t.tx, keyStateSQL, account, keyID).Scan(&st.Active, &st.Ever, &st.SignerActive); err != nil {
		return st, fmt.Errorf("read keys of %s: %w", account, err)
	}
	t.keys[signerKey{account, keyID}] = st
	return st, nil
}

// forgetKeys drops the key states of account held by the transaction, after a change of its
// keys: the batch read every call's state before any ran, and an action after the change (in
// the same batch) must see the keys as the change left them, not sign with a key just retired.
func (t *pgTx) forgetKeys(account tournament.AccountID) {
	for k := range t.keys {
		if k.account == account {
			delete(t.keys, k)
		}
	}
}

// KeyState reads an account's key state, with whether keyID ("": none) is one of its active
// keys: for the admins' actions, which a key signs too (see tournament.KeyState.Check), checked
// before they run.
func (s *Store) KeyState(ctx context.Context, account tournament.AccountID, keyID string) (tournament.KeyState, error) {
	var st tournament.KeyState
	if !validID(string(account)) {
		return st, tournament.ErrNotFound
	}
	if err := queryRow(ctx, s.pool, keyStateSQL, account, keyID).Scan(&st.Active, &st.Ever, &st.SignerActive); err != nil {
		return st, fmt.Errorf("read keys of %s: %w", account, err)
	}
	return st, nil
}
