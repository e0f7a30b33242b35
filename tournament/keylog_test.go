package tournament

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

var updateKeyLog = flag.Bool("update-keylog", false, "rewrite testdata/key_log.json")

// keyLogVector is one key event of testdata/key_log.json: the event as GET
// /v1/accounts/{id}/keys serves it, the canonical envelope its hash covers, and its leaf.
type keyLogVector struct {
	Seq       int64           `json:"seq"`
	Type      KeyEventType    `json:"type"`
	AccountID AccountID       `json:"accountId"`
	At        string          `json:"at"`
	Data      json.RawMessage `json:"data"`
	PrevHash  string          `json:"prevHash"`
	Hash      string          `json:"hash"`
	Canonical string          `json:"canonical"`
	Leaf      string          `json:"leaf"`
	// Message is the signed message the player's signature in data covers (none for
	// keys_recovered, the operator's).
	Message string `json:"message,omitempty"`
}

// The RFC 8032 test keys 1 to 3, by seed.
const (
	keyLogSeed1 = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
	keyLogSeed2 = "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb"
	keyLogSeed3 = "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7"
)

// TestKeyLogVectors pins an account's key log (a sign-up's key, a second key added by the
// first, the first retired by the second, the operator's recovery) to testdata/key_log.json: each
// event's hash over its RFC 8785 envelope, its chain, its leaf in the transparency log, and the
// players' signatures over their messages, for the other languages' clients to check themselves
// against.
func TestKeyLogVectors(t *testing.T) {
	const (
		account = AccountID("6f1c2a9e-3b7d-4c5e-8f10-2a3b4c5d6e7f")
		admin   = AccountID("0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d")
		origin  = "rps.example.com/log"
		at      = int64(1795000000123)
	)
	keys := make([]ed25519.PrivateKey, 3)
	for i, s := range []string{keyLogSeed1, keyLogSeed2, keyLogSeed3} {
		keys[i] = ed25519.NewKeyFromSeed(mustHex(t, s))
	}
	pub := func(i int) ed25519.PublicKey { return keys[i].Public().(ed25519.PublicKey) }
	// sign signs m with key i at the event's instant.
	sign := func(i int, m ActionMessage, idem string, signedAt int64) (KeySignature, []byte) {
		m.Origin, m.KeyID, m.SignedAt, m.IdempotencyKey = origin, KeyID(pub(i)), signedAt, idem
		msg, err := m.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		sig, err := m.Sign(keys[i])
		if err != nil {
			t.Fatal(err)
		}
		return KeySignature{KeyID: m.KeyID, SignedAt: signedAt, Signature: sig, IdempotencyKey: idem}, msg
	}
	signUp, signUpMsg := sign(0, ActionMessage{Action: ActionSignUp,
		Payload: ActionPayload{Name: "alice", PublicKey: hex.EncodeToString(pub(0))}}, "", at-5)
	add, addMsg := sign(0, ActionMessage{Action: ActionAddKey, Player: account,
		Payload: ActionPayload{PublicKey: hex.EncodeToString(pub(1))}}, "add-1", at+60_000)
	retire, retireMsg := sign(1, ActionMessage{Action: ActionRetireKey, Player: account,
		Payload: ActionPayload{KeyID: KeyID(pub(0))}}, "retire-1", at+120_000)
	changes := []struct {
		data KeyEventData
		at   int64
		msg  []byte
	}{
		{NewKeyAdded(pub(0), ViaSignUp, "alice", signUp), at, signUpMsg},
		{NewKeyAdded(pub(1), ViaAddKey, "", add), at + 60_001, addMsg},
		{NewKeyRetired(KeyID(pub(0)), retire), at + 120_001, retireMsg},
		{&KeysRecoveredData{KeyID: KeyID(pub(2)), PublicKey: hex.EncodeToString(pub(2)), Retired: []string{KeyID(pub(1))},
			Admin: admin, Reason: "lost phone; identity checked by video call"}, at + 180_000, nil},
	}
	var prev KeyEvent
	var out []keyLogVector
	for _, c := range changes {
		e, err := SealKeyEvent(prev, account, c.at, c.data)
		if err != nil {
			t.Fatal(err)
		}
		canonical, err := Canonical(keyEnvelope{AccountID: e.AccountID, At: FormatTime(e.At), Data: e.Data, Seq: e.Seq, Type: e.Type})
		if err != nil {
			t.Fatal(err)
		}
		if h := chainHashOf(e.PrevHash, canonical); h != e.Hash || e.PrevHash != prev.Hash {
			t.Fatalf("key event %d: hash %x, recomputed %x; prevHash %x after %x", e.Seq, e.Hash, h, e.PrevHash, prev.Hash)
		}
		out = append(out, keyLogVector{Seq: e.Seq, Type: e.Type, AccountID: account, At: FormatTime(e.At), Data: e.Data,
			PrevHash: hex.EncodeToString(e.PrevHash[:]), Hash: hex.EncodeToString(e.Hash[:]), Canonical: string(canonical),
			Leaf: "key " + string(account) + " " + strconv.FormatInt(e.Seq, 10) + " " + hex.EncodeToString(e.Hash[:]) + "\n", Message: string(c.msg)})
		prev = e
	}
	got, err := json.MarshalIndent(struct {
		Comment string         `json:"comment"`
		Origin  string         `json:"origin"`
		Seeds   []string       `json:"seeds"`
		Events  []keyLogVector `json:"events"`
	}{
		Comment: "An account's key log: hash = blake2b-256(prevHash || canonical), canonical = RFC 8785 JSON of " +
			"{accountId, at, data, seq, type}, prevHash 32 zero bytes for seq 1; leaf = the transparency log's entry. " +
			"The signatures in data are Ed25519 over message (rebuilt by a verifier from the event and origin) by the " +
			"keys of seeds (RFC 8032 tests 1 to 3). Generated by tournament's TestKeyLogVectors.",
		Origin: origin, Seeds: []string{keyLogSeed1, keyLogSeed2, keyLogSeed3}, Events: out,
	}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "key_log.json")
	if *updateKeyLog {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./tournament -run TestKeyLogVectors -update-keylog)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: the key log's format changed (run with -update-keylog only if that is intended)", path)
	}
}

// TestKeyRules: an account's first key signs itself; later changes are signed by an active key;
// the last active key is not retired.
func TestKeyRules(t *testing.T) {
	code := func(err error) Code {
		if e, ok := IsRefusal(err); ok {
			return e.Code
		}
		return ""
	}
	for _, c := range []struct {
		name string
		err  error
		want Code
	}{
		{"first key by itself", CheckKeySigner(0, nil, "k1", "k1"), ""},
		{"first key by another", CheckKeySigner(0, nil, "k1", "k2"), CodeBadSignature},
		{"a retirement without keys", CheckKeySigner(0, nil, "", "k1"), CodeBadSignature},
		{"second key by the first", CheckKeySigner(1, []string{"k1"}, "k2", "k1"), ""},
		{"second key by itself", CheckKeySigner(1, []string{"k1"}, "k2", "k2"), CodeBadSignature},
		{"a change by a retired key", CheckKeySigner(3, []string{"k2"}, "k3", "k1"), CodeBadSignature},
		{"retire one of two", CheckRetire([]string{"k1", "k2"}, "k1"), ""},
		{"retire the last", CheckRetire([]string{"k2"}, "k2"), CodeLastKey},
		{"retire an unknown key", CheckRetire([]string{"k1", "k2"}, "k3"), CodeNotFound},
		{"a fresh signature", KeySignature{SignedAt: 1_000}.CheckFresh(2_000), ""},
		{"a signature a day old", KeySignature{SignedAt: 1_000}.CheckFresh(1_000 + 24*60*60*1000), CodeSignatureExpired},
	} {
		if got := code(c.err); got != c.want {
			t.Errorf("%s: %q (%v), want %q", c.name, got, c.err, c.want)
		}
	}
}
