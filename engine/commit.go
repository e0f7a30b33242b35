package engine

import (
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/crypto/blake2b"
)

// MaxRevealBytes bounds a reveal so a player cannot make the server hash and
// store arbitrarily large strings.
const MaxRevealBytes = 1024

// Sentinel errors for reveals and commitments. Returned errors wrap them with
// detail; test with errors.Is. Details never quote the password part of a
// reveal, because the error may be logged or shown to someone else.
var (
	// ErrRevealEmpty: a reveal needs at least the move digit.
	ErrRevealEmpty = errors.New("reveal is empty")
	// ErrRevealTooLong: the reveal exceeds MaxRevealBytes.
	ErrRevealTooLong = errors.New("reveal is longer than " + strconv.Itoa(MaxRevealBytes) + " bytes")
	// ErrRevealNotDigit: the first byte is not an ASCII digit.
	ErrRevealNotDigit = errors.New("reveal does not start with an ASCII digit 0-9")
	// ErrUnknownMove: the digit is not a move of the game's ruleset.
	ErrUnknownMove = errors.New("move is not a weapon of the ruleset")
	// ErrBadCommitment: the text is not exactly 64 hex characters.
	ErrBadCommitment = errors.New("commitment is not 64 lower-case hex characters")
)

// Commitment is the blake2b-256 digest a player publishes before revealing,
// as in Gear's protocol.
type Commitment [32]byte

// Commit hashes a reveal string (the move digit followed by the password)
// exactly as Gear does: blake2b-256 over its UTF-8 bytes.
func Commit(preimage string) Commitment {
	return blake2b.Sum256([]byte(preimage))
}

// CommitMove is the commitment a player makes for move m with password.
func CommitMove(m Move, password string) Commitment {
	return Commit(string(rune(m.Digit())) + password)
}

// ParseCommitment reads a commitment from lower-case hex, its one spelling (as
// every hash and digest of the log), so that a commitment compares as text too;
// the exact length is required so that a truncated paste is never mistaken for
// a hash.
func ParseCommitment(s string) (Commitment, error) {
	var c Commitment
	if len(s) != 2*len(c) {
		return c, fmt.Errorf("%w: got %d characters", ErrBadCommitment, len(s))
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return r >= 'A' && r <= 'F' }); i >= 0 {
		return Commitment{}, fmt.Errorf("%w: upper-case %q at %d (lower case only)", ErrBadCommitment, s[i], i)
	}
	if _, err := hex.Decode(c[:], []byte(s)); err != nil {
		return Commitment{}, fmt.Errorf("%w: %w", ErrBadCommitment, err)
	}
	return c, nil
}

// String is the lower-case hex form used in JSON and events.
func (c Commitment) String() string { return hex.EncodeToString(c[:]) }

// MarshalText makes a commitment appear as hex in JSON.
func (c Commitment) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText parses hex with the rules of ParseCommitment.
func (c *Commitment) UnmarshalText(b []byte) error {
	p, err := ParseCommitment(string(b))
	if err != nil {
		return err
	}
	*c = p
	return nil
}

// Matches reports whether reveal is the preimage of the commitment. The
// comparison is constant-time so response timing says nothing about how
// close a guess came.
func (c Commitment) Matches(reveal string) bool {
	h := Commit(reveal)
	return subtle.ConstantTimeCompare(c[:], h[:]) == 1
}

// CheckRevealSize is the one check of MaxRevealBytes: ErrRevealTooLong for a longer reveal.
func CheckRevealSize(reveal string) error {
	if len(reveal) > MaxRevealBytes {
		return fmt.Errorf("%w: got %d bytes", ErrRevealTooLong, len(reveal))
	}
	return nil
}

// ParseReveal extracts the move from a reveal: its first byte must be an
// ASCII digit naming a weapon of the ruleset (unicode.IsDigit would accept
// other scripts' digits). The rest is the password and may be any bytes,
// including none. Checks run in a fixed order (empty, too long, not a digit,
// unknown move) so clients can rely on which error they get.
func (r *Ruleset) ParseReveal(reveal string) (Move, error) {
	if reveal == "" {
		return 0, ErrRevealEmpty
	}
	if err := CheckRevealSize(reveal); err != nil {
		return 0, err
	}
	if reveal[0] < '0' || reveal[0] > '9' {
		return 0, fmt.Errorf("%w: first byte is %q", ErrRevealNotDigit, reveal[:1])
	}
	m := Move(reveal[0] - '0')
	if !r.moves.Has(m) {
		return 0, fmt.Errorf("%w: move %s in ruleset %q", ErrUnknownMove, m, r.id)
	}
	return m, nil
}
