package store

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
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
	// nil for the first key, and for a key made before the log existed until SignPastRotations.
	Rotation []byte
}

// KeyID names a public key (tournament.KeyID: a player's keys are named by the same rule).
func KeyID(pub ed25519.PublicKey) string { return tournament.KeyID(pub) }

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
		// One rotation at a time (two `rpsd key rotate` at once): the second, waiting on the
		// first's lock of the current key, would find none current once it committed, sign no
		// hand-over and retire the first's new key. Behind this lock it reads the key the first made
		// (a statement's snapshot is taken once the lock is held) and hands over from that.
		if _, err := exec(ctx, tx, `LOCK TABLE signing_keys IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return fmt.Errorf("lock the signing keys: %w", err)
		}
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
// no log (or no key) yet (SignPastRotations signs it once there is a log).
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
	r := translog.Rotation{Origin: st.Origin, Tree: tlog.Tree{N: st.Size, Hash: st.Root}}
	return rotationStatement(r, ed25519.NewKeyFromSeed(seed), next)
}

// SignPastRotations has each retired key sign the hand-over to the key that replaced it where a
// rotation made before such statements existed left none, so that clients that pinned the retired
// key follow that rotation too. The tree is the newest checkpoint made by the time of the rotation
// (the empty tree when there was none). It returns how many it signed; none without a log.
func (s *Store) SignPastRotations(ctx context.Context) (int, error) {
	st, err := s.LogState(ctx)
	if errors.Is(err, tournament.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the log: %w", err)
	}
	type past struct {
		id        string
		pub, seed []byte
		size      int64
		root      []byte
	}
	missing, err := collect(ctx, s.pool, func(r pgx.CollectableRow) (past, error) {
		var p past
		err := r.Scan(&p.id, &p.pub, &p.seed, &p.size, &p.root)
		return p, err
	}, `SELECT k.id, k.public_key, prev.seed, coalesce(c.size, 0), c.root
		FROM signing_keys k
		CROSS JOIN LATERAL (SELECT seed FROM signing_keys p WHERE p.retired_at <= k.created_at AND p.id <> k.id
			ORDER BY p.retired_at DESC, p.created_at DESC LIMIT 1) prev
		LEFT JOIN LATERAL (SELECT size, root FROM log_checkpoints WHERE created_at <= k.created_at ORDER BY size DESC LIMIT 1) c ON true
		WHERE k.rotation IS NULL`)
	if err != nil {
		return 0, fmt.Errorf("read past rotations: %w", err)
	}
	for _, p := range missing {
		r := translog.Rotation{Origin: st.Origin, Tree: tlog.Tree{N: p.size}}
		if p.root == nil {
			r.Tree.Hash, err = tlog.TreeHash(0, nil)
		} else {
			copy(r.Tree.Hash[:], p.root)
		}
		if err != nil {
			return 0, err
		}
		statement, err := rotationStatement(r, ed25519.NewKeyFromSeed(p.seed), p.pub)
		if err != nil {
			return 0, err
		}
		// Ed25519 signs deterministically: two replicas starting at once write the same statement.
		if _, err := exec(ctx, s.pool, `UPDATE signing_keys SET rotation = $2 WHERE id = $1 AND rotation IS NULL`, p.id, string(statement)); err != nil {
			return 0, fmt.Errorf("sign the rotation to %s: %w", p.id, err)
		}
	}
	return len(missing), nil
}

// rotationStatement completes r with the keys' verifier keys and has old sign it.
func rotationStatement(r translog.Rotation, old ed25519.PrivateKey, next ed25519.PublicKey) ([]byte, error) {
	signer, err := translog.NewSigner(r.Origin, old)
	if err != nil {
		return nil, err
	}
	if r.Old, err = translog.VerifierKey(r.Origin, old.Public().(ed25519.PublicKey)); err != nil {
		return nil, err
	}
	if r.New, err = translog.VerifierKey(r.Origin, next); err != nil {
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
