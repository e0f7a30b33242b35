package translog

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Rotation is a log key's statement that hands the log over to a new key (README: "Key
// rotation"): a C2SP signed note, signed by the old key under the origin, whose text is
//
//	<origin> key rotation
//	<tree size>
//	<base64 root hash>
//	<old note verifier key>
//	<new note verifier key>
//
// with the tree as it was when the key was rotated. A client that pinned the old key trusts the
// new one through it, and through nothing else. The first line cannot be a checkpoint's (an
// origin holds no space), so neither note can be taken for the other.
type Rotation struct {
	Origin   string
	Tree     tlog.Tree
	Old, New string
}

const rotationHeader = " key rotation"

// text is the statement's note text.
func (r Rotation) text() string {
	return fmt.Sprintf("%s%s\n%d\n%s\n%s\n%s\n", r.Origin, rotationHeader, r.Tree.N, r.Tree.Hash, r.Old, r.New)
}

// SignRotation signs the statement with old, the signer of r.Old.
func SignRotation(r Rotation, old note.Signer) ([]byte, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	v, _ := note.NewVerifier(r.Old)
	if old.Name() != v.Name() || old.KeyHash() != v.KeyHash() {
		return nil, fmt.Errorf("key rotation: signed by %s+%08x, not by the old key %s", old.Name(), old.KeyHash(), r.Old)
	}
	signed, err := note.Sign(&note.Note{Text: r.text()}, old)
	if err != nil {
		return nil, fmt.Errorf("sign the key rotation: %w", err)
	}
	return signed, nil
}

// check accepts a statement whose keys are two different Ed25519 note keys of the origin.
func (r Rotation) check() error {
	if err := CheckOrigin(r.Origin); err != nil {
		return err
	}
	if r.Tree.N < 0 {
		return fmt.Errorf("key rotation: a tree of %d leaves", r.Tree.N)
	}
	for _, k := range []string{r.Old, r.New} {
		// note.NewVerifier takes Ed25519 keys only (not a witness's cosignature key).
		v, err := note.NewVerifier(k)
		if err != nil {
			return fmt.Errorf("key rotation: %w", err)
		}
		if v.Name() != r.Origin {
			return fmt.Errorf("key rotation: %q is not an Ed25519 key of the log %s", k, r.Origin)
		}
	}
	if r.Old == r.New {
		return errors.New("key rotation: the new key is the old one")
	}
	return nil
}

// OpenRotation reads a signed statement of the log origin and checks its signature by the old key
// it names. Whether that key is one to trust is the caller's question (FollowRotations).
func OpenRotation(origin string, signed []byte) (Rotation, error) {
	text, _, ok := bytes.Cut(signed, []byte("\n\n"))
	lines := strings.Split(string(text), "\n")
	if !ok || len(lines) != 5 || lines[0] != origin+rotationHeader {
		return Rotation{}, fmt.Errorf("not a key rotation of %s", origin)
	}
	r := Rotation{Origin: origin, Old: lines[3], New: lines[4]}
	var err error
	if r.Tree.N, err = strconv.ParseInt(lines[1], 10, 64); err != nil || strconv.FormatInt(r.Tree.N, 10) != lines[1] {
		return Rotation{}, fmt.Errorf("key rotation: malformed tree size %q", lines[1])
	}
	if r.Tree.Hash, err = tlog.ParseHash(lines[2]); err != nil {
		return Rotation{}, fmt.Errorf("key rotation: malformed root hash %q", lines[2])
	}
	if err := r.check(); err != nil {
		return Rotation{}, err
	}
	old, _ := note.NewVerifier(r.Old)
	if _, err := note.Open(signed, note.VerifierList(old)); err != nil {
		return Rotation{}, fmt.Errorf("key rotation to %s: not signed by the old key: %w", r.New, err)
	}
	return r, nil
}

// ErrRotationFork: a trusted key signed two different hand-overs (to two keys, or of two trees).
// A key hands the log over once; a second statement is made by whoever else holds it (a thief of
// a retired key handing the log to a key of their own), and both statements are the evidence.
var ErrRotationFork = errors.New("key rotation: a trusted key handed the log over twice")

// FollowRotations returns trusted (note verifier keys of the log origin) with every key that an
// unbroken chain of statements hands the log over to: a statement counts only when it is signed
// by a key trusted already, in whatever order they come. Statements that do not verify are
// ignored: anybody can make those, and they prove nothing. A trusted key with two different
// statements is misbehaviour (ErrRotationFork, naming both): neither is followed.
func FollowRotations(origin string, trusted []string, statements [][]byte) ([]string, error) {
	out := slices.Clone(trusted)
	handOver := map[string]Rotation{} // by old key: the one statement it signed
	var forks [][2]Rotation           // two different statements of one old key
	for _, s := range statements {
		r, err := OpenRotation(origin, s)
		if err != nil {
			continue
		}
		if prev, ok := handOver[r.Old]; ok && prev != r {
			forks = append(forks, [2]Rotation{prev, r})
			continue
		}
		handOver[r.Old] = r
	}
	for grown := true; grown; {
		grown = false
		for _, key := range out {
			if r, ok := handOver[key]; ok && !slices.Contains(out, r.New) {
				out, grown = append(out, r.New), true
			}
		}
	}
	for _, f := range forks {
		if slices.Contains(out, f[0].Old) {
			return trusted, fmt.Errorf("%w: %s handed it to %s at size %d and to %s at size %d",
				ErrRotationFork, f[0].Old, f[0].New, f[0].Tree.N, f[1].New, f[1].Tree.N)
		}
	}
	return out, nil
}
