package translog

import (
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"slices"
	"strings"
	"testing"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// testKey is a log key of origin from a fixed seed: its signer and verifier key.
func testKey(t *testing.T, origin, seed string) (note.Signer, string) {
	t.Helper()
	s := sha256.Sum256([]byte(seed))
	key := ed25519.NewKeyFromSeed(s[:])
	signer, err := NewSigner(origin, key)
	if err != nil {
		t.Fatal(err)
	}
	vkey, err := VerifierKey(origin, key.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return signer, vkey
}

func rotate(t *testing.T, from note.Signer, r Rotation) []byte {
	t.Helper()
	signed, err := SignRotation(r, from)
	if err != nil {
		t.Fatal(err)
	}
	return signed
}

func TestRotationStatement(t *testing.T) {
	const origin = "rps.example.com/log"
	s1, k1 := testKey(t, origin, "k1")
	_, k2 := testKey(t, origin, "k2")
	tree := tlog.Tree{N: 7, Hash: tlog.RecordHash([]byte("root"))}
	r := Rotation{Origin: origin, Tree: tree, Old: k1, New: k2}
	signed := rotate(t, s1, r)
	if !strings.HasPrefix(string(signed), origin+" key rotation\n7\n"+tree.Hash.String()+"\n"+k1+"\n"+k2+"\n\n— "+origin+" ") {
		t.Fatalf("statement:\n%s", signed)
	}
	got, err := OpenRotation(origin, signed)
	if err != nil || got != r {
		t.Fatalf("OpenRotation = %+v, %v; want %+v", got, err, r)
	}

	// Standard tools read it as a signed note of the old key, and never as a checkpoint.
	v1, _ := note.NewVerifier(k1)
	if _, err := note.Open(signed, note.VerifierList(v1)); err != nil {
		t.Fatalf("note.Open: %v", err)
	}
	if _, _, err := torchwood.VerifyCheckpoint(signed, torchwood.ThresholdPolicy(2, torchwood.OriginPolicy(origin), torchwood.SingleVerifierPolicy(v1))); err == nil {
		t.Fatal("a key rotation passed for a checkpoint")
	}

	for name, bad := range map[string][]byte{
		"another origin": []byte(strings.Replace(string(signed), origin+" key", "rps.other/log key", 1)),
		"another size":   []byte(strings.Replace(string(signed), "\n7\n", "\n8\n", 1)),
		"unsigned":       []byte(strings.SplitAfter(string(signed), "\n\n")[0]),
		"a checkpoint":   mustSign(t, s1, origin, tree),
	} {
		if _, err := OpenRotation(origin, bad); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Only the old key may sign it: a new key cannot vouch for itself.
	s2, _ := testKey(t, origin, "k2")
	if _, err := SignRotation(r, s2); err == nil {
		t.Error("SignRotation by the new key: accepted")
	}
	forged, _ := note.Sign(&note.Note{Text: r.text()}, s2)
	if _, err := OpenRotation(origin, forged); err == nil {
		t.Error("a statement signed by the new key: accepted")
	}
	if _, err := SignRotation(Rotation{Origin: origin, Tree: tree, Old: k1, New: k1}, s1); err == nil {
		t.Error("a rotation to the same key: accepted")
	}
}

func mustSign(t *testing.T, s note.Signer, origin string, tree tlog.Tree) []byte {
	t.Helper()
	signed, err := SignCheckpoint(origin, tree, s)
	if err != nil {
		t.Fatal(err)
	}
	return signed
}

func TestFollowRotations(t *testing.T) {
	const origin = "rps.example.com/log"
	s1, k1 := testKey(t, origin, "k1")
	s2, k2 := testKey(t, origin, "k2")
	_, k3 := testKey(t, origin, "k3")
	sx, kx := testKey(t, origin, "intruder")
	tree := tlog.Tree{N: 3}
	r12 := rotate(t, s1, Rotation{Origin: origin, Tree: tree, Old: k1, New: k2})
	r23 := rotate(t, s2, Rotation{Origin: origin, Tree: tree, Old: k2, New: k3})
	// A statement by a key nobody trusts hands over nothing, even naming a trusted key as old.
	rx := rotate(t, sx, Rotation{Origin: origin, Tree: tree, Old: kx, New: k3})
	// A retired key handing the log over again (its thief, to a key of their own, at a tree
	// behind what the new key signed since) is a fork of the hand-over: neither is followed.
	r1x := rotate(t, s1, Rotation{Origin: origin, Tree: tlog.Tree{N: 2}, Old: k1, New: kx})
	r12again := rotate(t, s1, Rotation{Origin: origin, Tree: tlog.Tree{N: 4}, Old: k1, New: k2})
	for _, c := range []struct {
		name       string
		trusted    []string
		statements [][]byte
		want       []string
	}{
		{"the same statement twice", []string{k1}, [][]byte{r12, r12}, []string{k1, k2}},
		{"an untrusted key's fork", []string{k2}, [][]byte{r12, r1x, r23}, []string{k2, k3}},
		{"a chain, newest first", []string{k1}, [][]byte{r23, r12}, []string{k1, k2, k3}},
		{"from the middle", []string{k2}, [][]byte{r12, r23}, []string{k2, k3}},
		{"a broken chain", []string{k1}, [][]byte{r23}, []string{k1}},
		{"an untrusted signer", []string{k1}, [][]byte{rx}, []string{k1}},
		{"another log's statement", []string{k1}, [][]byte{[]byte(strings.Replace(string(r12), origin+" key", "rps.other/log key", 1))}, []string{k1}},
	} {
		got, err := FollowRotations(origin, c.trusted, c.statements)
		if err != nil || strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%s: %v (%v), want %v", c.name, got, err, c.want)
		}
	}
	for name, statements := range map[string][][]byte{
		"to another key":          {r12, r23, r1x},
		"to another key, first":   {r1x, r12},
		"of another tree":         {r12, r12again},
		"a key the chain reached": {r12, r23, rotate(t, s2, Rotation{Origin: origin, Tree: tree, Old: k2, New: kx})},
	} {
		got, err := FollowRotations(origin, []string{k1}, statements)
		if !errors.Is(err, ErrRotationFork) || !slices.Equal(got, []string{k1}) {
			t.Errorf("a trusted key's second hand-over, %s: %v (%v), want ErrRotationFork and the pinned key only", name, got, err)
		}
	}
}
