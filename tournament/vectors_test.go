package tournament

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// What the vector files of testdata (signed_actions.json, signed_admin_actions.json,
// key_log.json) share: the keys they sign with, the members their messages name, and how a file
// is checked against the vectors a test generates.

// The RFC 8032 test keys 1 to 3, by seed: any implementation can check their public keys.
const (
	rfc8032Seed1 = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
	rfc8032Seed2 = "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb"
	rfc8032Seed3 = "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7"
)

// The log, player, lobby, game and instant the vectors' messages name.
const (
	vectorOrigin = "rps.example.com/log"
	vectorPlayer = AccountID("6f1c2a9e-3b7d-4c5e-8f10-2a3b4c5d6e7f")
	vectorLobby  = LobbyID("0b8e7c6d-5a4f-4e3d-9c2b-1a0f9e8d7c6b")
	vectorGame   = GameID("7d6c5b4a-3f2e-4d1c-8b0a-9f8e7d6c5b4a")
	vectorAt     = int64(1795000000123)
)

// seedKey is the Ed25519 key of a seed in hex, and its public half.
func seedKey(tb testing.TB, seed string) (ed25519.PrivateKey, ed25519.PublicKey) {
	tb.Helper()
	key := ed25519.NewKeyFromSeed(mustHex(tb, seed))
	return key, key.Public().(ed25519.PublicKey)
}

func mustHex(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// vectorFile is a file of testdata that a test generates, for the other languages' clients to
// check themselves against.
type vectorFile struct {
	name string
	// test generates the file, rewriting it when the flag named flag (update) is set.
	test   string
	flag   string
	update *bool
	// changed is what a stale file means changed.
	changed string
}

// check fails unless the file holds v, as indented JSON; with the update flag it writes v first.
func (f vectorFile) check(t *testing.T, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", f.name)
	if *f.update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./tournament -run %s %s)", err, f.test, f.flag)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: %s changed (run with %s only if that is intended)", path, f.changed, f.flag)
	}
}
