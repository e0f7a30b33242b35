package store

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"golang.org/x/crypto/blake2b"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/commitreveal/rps/tournament"
	"github.com/commitreveal/rps/translog"
)

// SigningKey is one of the server's Ed25519 keys that sign chain heads. Private is set only for
// the current key, read to sign.
type SigningKey struct {
	ID        string
	Public    ed25519.PublicKey
	Private   ed25519.PrivateKey
	CreatedAt int64
	// RetiredAt is when a newer key replaced this one; 0 for the current key.
	RetiredAt int64
	// Rotation is the hand-over to this key signed by the key it replaced (translog.Rotation);
	// nil for the first key and a key made before the log existed.
	Rotation []byte
}

// KeyID names a public key: the first 16 hex characters of its blake2b-256.
func KeyID(pub ed25519.PublicKey) string {
	sum := blake2b.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// CurrentSigningKey returns the key that signs now, generating the first one if there is none.
// Two replicas starting at once cannot both create one: the partial unique index admits a single
// current key, and the loser reads the winner's.
func (s *Store) CurrentSigningKey(ctx context.Context) (SigningKey, error) {
	k, err := s.currentKey(ctx)
	if errors.Is(err, tournament.ErrNotFound) {
		err = s.withTx(ctx, pgx.TxOptions{}, func(tx pgx.Tx) error {
			pub, priv, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				return fmt.Errorf("generate key: %w", err)
			}
			return insertKey(ctx, tx, pub, priv, nil)
		})
		if err != nil && !errors.Is(err, ErrConflict) {
			return SigningKey{}, fmt.Errorf("create signing key: %w", err)
		}
		k, err = s.currentKey(ctx)
	}
	return k, err
}

// KeysChannel is notified, on commit, with the id of a new current signing key (the first one, or
// the one a rotation made), so that every replica's listener switches the note key at once.
const KeysChannel = "rps_keys"

// loadNoteKey derives the key that authenticates the events notifications carry (see
// EventsChannel) from the seed of the current signing key, which no role that cannot read
// signing_keys knows, and makes it the one notifications are sent and taken with (none while there
// is no key yet). The listener calls it on its own connection when it starts listening and at each
// notification of KeysChannel: notifications arrive in commit order, so every notification
// committed after a rotation is checked under the new key, and a retired key authenticates nothing
// from then on. A replica that switches a little later sends, meanwhile, events under the retired
// key, which the others take as news of a seq only, reading the event from the log: nothing is lost.
func (s *Store) loadNoteKey(ctx context.Context, q querier) error {
	var seed []byte
	err := queryRow(ctx, q, `SELECT seed FROM signing_keys WHERE retired_at IS NULL`).Scan(&seed)
	if errors.Is(err, tournament.ErrNotFound) {
		s.noteKey.Store(nil)
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the note key: %w", err)
	}
	key := sha256.Sum256(append([]byte("rps-event-note-v1\n"), seed...))
	s.noteKey.Store(&key)
	return nil
}

// RotateSigningKey retires the current key and makes a new one current, in one transaction; the
// old public key stays published. When the deployment keeps a transparency log, the old key signs
// the hand-over (translog.Rotation, with the log's tree as it is at the rotation: the log is
// locked against appends meanwhile), kept with the new key, so that clients that pinned the old
// key follow the rotation and trust no other new key.
func (s *Store) RotateSigningKey(ctx context.Context) (SigningKey, error) {
	err := s.withTx(ctx, pgx.TxOptions{}, func(tx pgx.Tx) error {
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return fmt.Errorf("generate key: %w", err)
		}
		rotation, err := signRotation(ctx, tx, pub)
		if err != nil {
			return err
		}
		if _, err := exec(ctx, tx, `UPDATE signing_keys SET retired_at = `+clockSQL+` WHERE retired_at IS NULL`); err != nil {
			return err
		}
		return insertKey(ctx, tx, pub, priv, rotation)
	})
	if err != nil {
		return SigningKey{}, fmt.Errorf("rotate signing key: %w", err)
	}
	return s.currentKey(ctx)
}

// signRotation has the current key sign the log's hand-over to the key next; nil when there is
// no log (or no key) yet: nothing was signed with the old key that a client would have pinned.
func signRotation(ctx context.Context, tx pgx.Tx, next ed25519.PublicKey) (rotation []byte, err error) {
	var seed []byte
	err = queryRow(ctx, tx, `SELECT seed FROM signing_keys WHERE retired_at IS NULL FOR UPDATE`).Scan(&seed)
	if errors.Is(err, tournament.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the current key: %w", err)
	}
	st, err := scanLogState(queryRow(ctx, tx, logStateSQL+` FOR SHARE`))
	if errors.Is(err, tournament.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the log: %w", err)
	}
	old := ed25519.NewKeyFromSeed(seed)
	signer, err := translog.NewSigner(st.Origin, old)
	if err != nil {
		return nil, err
	}
	r := translog.Rotation{Origin: st.Origin, Tree: tlog.Tree{N: st.Size, Hash: st.Root}}
	if r.Old, err = translog.VerifierKey(st.Origin, old.Public().(ed25519.PublicKey)); err != nil {
		return nil, err
	}
	if r.New, err = translog.VerifierKey(st.Origin, next); err != nil {
		return nil, err
	}
	return translog.SignRotation(r, signer)
}

func insertKey(ctx context.Context, tx pgx.Tx, pub ed25519.PublicKey, priv ed25519.PrivateKey, rotation []byte) error {
	_, err := exec(ctx, tx, `WITH key AS (INSERT INTO signing_keys (id, public_key, seed, created_at, rotation)
			VALUES ($1, $2, $3, `+clockSQL+`, $5))
		SELECT pg_notify($4, $1)`, KeyID(pub), []byte(pub), priv.Seed(), KeysChannel, nullString(string(rotation)))
	return err
}

func (s *Store) currentKey(ctx context.Context) (SigningKey, error) {
	var k SigningKey
	var pub, seed []byte
	var rotation *string
	err := queryRow(ctx, s.pool, `SELECT id, public_key, seed, created_at, rotation FROM signing_keys
		WHERE retired_at IS NULL`).Scan(&k.ID, &pub, &seed, &k.CreatedAt, &rotation)
	if err != nil {
		return SigningKey{}, err
	}
	k.Public, k.Private = ed25519.PublicKey(pub), ed25519.NewKeyFromSeed(seed)
	if rotation != nil {
		k.Rotation = []byte(*rotation)
	}
	return k, nil
}

// SigningKeys lists every public key, newest first, without private parts.
func (s *Store) SigningKeys(ctx context.Context) ([]SigningKey, error) {
	return collect(ctx, s.pool, func(r pgx.CollectableRow) (SigningKey, error) {
		var k SigningKey
		var pub []byte
		var rotation *string
		err := r.Scan(&k.ID, &pub, &k.CreatedAt, &k.RetiredAt, &rotation)
		k.Public = pub
		if rotation != nil {
			k.Rotation = []byte(*rotation)
		}
		return k, err
	}, `SELECT id, public_key, created_at, coalesce(retired_at, 0), rotation FROM signing_keys ORDER BY created_at DESC, id`)
}

// Head returns the head of a lobby's log: its last seq and hash (0 and zero bytes when empty).
func (s *Store) Head(ctx context.Context, lobby tournament.LobbyID) (int64, [32]byte, error) {
	var seq int64
	var hash []byte
	var out [32]byte
	if !validID(string(lobby)) {
		return 0, out, tournament.ErrNotFound
	}
	err := queryRow(ctx, s.pool, `SELECT last_seq, last_hash FROM lobbies WHERE id = $1`, lobby).Scan(&seq, &hash)
	copy(out[:], hash)
	return seq, out, err
}
