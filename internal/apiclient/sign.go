package apiclient

// Players' signatures as a Go client makes them (issue 31): a key made on the player's side, and
// the Rps-* headers of a signed request. The message itself is tournament.ActionMessage, the one
// definition the server checks; this file only holds the key and puts the signature on the wire.

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/commitreveal/rps/tournament"
)

// PlayerKey is a player's Ed25519 key as the device that made it holds it. The server only ever
// sees its public half. It is comparable (an array, not a slice), so that what holds one can be
// a map key.
type PlayerKey struct {
	private [ed25519.PrivateKeySize]byte
	id      string
}

// NewPlayerKey makes a fresh key from crypto/rand.
func NewPlayerKey() PlayerKey {
	_, priv, _ := ed25519.GenerateKey(rand.Reader) // crypto/rand never fails (Go 1.24+)
	return playerKeyOf(priv)
}

// PlayerKeyFromSeed rebuilds a key from its 32-byte seed.
func PlayerKeyFromSeed(seed []byte) (PlayerKey, error) {
	if len(seed) != ed25519.SeedSize {
		return PlayerKey{}, fmt.Errorf("player key: a seed is %d bytes, not %d", ed25519.SeedSize, len(seed))
	}
	return playerKeyOf(ed25519.NewKeyFromSeed(seed)), nil
}

func playerKeyOf(priv ed25519.PrivateKey) PlayerKey {
	return PlayerKey{private: [ed25519.PrivateKeySize]byte(priv), id: tournament.KeyID(priv.Public().(ed25519.PublicKey))}
}

func (k PlayerKey) key() ed25519.PrivateKey { return k.private[:] }

// ReadPlayerKey reads a key file: the seed in hex on one line, as WritePlayerKey writes it.
func ReadPlayerKey(path string) (PlayerKey, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return PlayerKey{}, fmt.Errorf("player key: %w", err)
	}
	seed, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil {
		return PlayerKey{}, fmt.Errorf("player key %s: not a hex seed: %w", path, err)
	}
	k, err := PlayerKeyFromSeed(seed)
	if err != nil {
		return PlayerKey{}, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// WritePlayerKey writes the key's seed in hex to a new file readable by its owner only; it never
// overwrites a file, which may hold another key.
func WritePlayerKey(path string, k PlayerKey) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("player key: %w", err)
	}
	_, err = fmt.Fprintln(f, hex.EncodeToString(k.key().Seed()))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("player key %s: %w", path, err)
	}
	return nil
}

// Valid reports whether k holds a key (the zero PlayerKey holds none).
func (k PlayerKey) Valid() bool { return k.id != "" }

// ID is the key's id (tournament.KeyID), sent as Rps-Key-Id.
func (k PlayerKey) ID() string { return k.id }

// PublicKey is the public key in the 64 lower-case hex characters the API takes.
func (k PlayerKey) PublicKey() string {
	return hex.EncodeToString(k.key().Public().(ed25519.PublicKey))
}

// Sign signs m with k at the instant at (the signer's clock), filling in the message's key id
// and signedAt.
func (k PlayerKey) Sign(m tournament.ActionMessage, at time.Time) (Signature, error) {
	m.KeyID, m.SignedAt = k.id, at.UnixMilli()
	sig, err := m.Sign(k.key())
	if err != nil {
		return Signature{}, fmt.Errorf("sign %s: %w", m.Action, err)
	}
	return Signature{KeyID: k.id, SignedAt: m.SignedAt, Value: hex.EncodeToString(sig), GameID: string(m.GameID), Round: m.Round}, nil
}

// Signature is what a signed request carries in its Rps-* headers.
type Signature struct {
	KeyID    string
	SignedAt int64
	// Value is the signature, 128 lower-case hex characters.
	Value string
	// GameID and Round are the game and round the message names ("" and 0: none), sent as
	// Rps-Game-Id and Rps-Round so that the server rebuilds the very message signed.
	GameID string
	Round  int
}

// The signed request's headers.
const (
	HeaderKeyID     = "Rps-Key-Id"
	HeaderSignedAt  = "Rps-Signed-At"
	HeaderSignature = "Rps-Signature"
	HeaderGameID    = "Rps-Game-Id"
	HeaderRound     = "Rps-Round"
)

// Pairs lists the headers as name, value, name, value ...
func (s Signature) Pairs() []string {
	p := []string{HeaderKeyID, s.KeyID, HeaderSignedAt, strconv.FormatInt(s.SignedAt, 10), HeaderSignature, s.Value}
	if s.GameID != "" {
		p = append(p, HeaderGameID, s.GameID)
	}
	if s.Round != 0 {
		p = append(p, HeaderRound, strconv.Itoa(s.Round))
	}
	return p
}

// Editor sets the headers on a request of the generated client. The zero Signature sets none, so
// that an unsigned client (an account without a key on a server where keys are optional) takes
// the same path.
func (s Signature) Editor() RequestEditorFn {
	return func(_ context.Context, req *http.Request) error {
		if s.Value == "" {
			return nil
		}
		p := s.Pairs()
		for i := 0; i+1 < len(p); i += 2 {
			req.Header.Set(p[i], p[i+1])
		}
		return nil
	}
}
