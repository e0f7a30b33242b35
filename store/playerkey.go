package store

import (
	"context"
	"crypto/ed25519"

	"github.com/commitreveal/rps/tournament"
)

// PlayerKey is a player's key as a signature check needs it.
type PlayerKey struct {
	KeyID     string
	AccountID tournament.AccountID
	PublicKey ed25519.PublicKey
	// RetiredAt is when the key was retired (0: it is active).
	RetiredAt int64
}

// PlayerKey returns the key with id keyID, retired or not, or tournament.ErrNotFound.
func (s *Store) PlayerKey(ctx context.Context, keyID string) (PlayerKey, error) {
	k := PlayerKey{KeyID: keyID}
	var pub []byte
	err := queryRow(ctx, s.pool, `SELECT account_id::text, public_key, coalesce(retired_at, 0) FROM account_keys WHERE key_id = $1`,
		keyID).Scan(&k.AccountID, &pub, &k.RetiredAt)
	k.PublicKey = pub
	return k, err
}
