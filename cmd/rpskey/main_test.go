package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// vectors reads the fields shared by tournament/testdata/signed_actions.json.
func vectors(t *testing.T) (seed string, sigs map[string]string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "tournament", "testdata", "signed_actions.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Seed    string `json:"seed"`
		Vectors []struct {
			Fields struct {
				IdempotencyKey *string `json:"idempotencyKey"`
			} `json:"fields"`
			Action    string `json:"action"`
			Signature string `json:"signature"`
		} `json:"vectors"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	sigs = map[string]string{}
	for _, x := range v.Vectors {
		name := x.Action
		if x.Fields.IdempotencyKey != nil {
			name += " " + *x.Fields.IdempotencyKey
		}
		sigs[name] = x.Signature
	}
	return v.Seed, sigs
}

// TestSignPrintsTheVectorsHeaders: signing the vectors' actions from the command line prints the
// vectors' signatures in curl's -H arguments, with the game, the round and the Idempotency-Key.
func TestSignPrintsTheVectorsHeaders(t *testing.T) {
	seed, sigs := vectors(t)
	keyFile := filepath.Join(t.TempDir(), "vectors.key")
	if err := os.WriteFile(keyFile, []byte(seed+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	at := func() time.Time { return time.UnixMilli(1795000000123) }
	const (
		player = "6f1c2a9e-3b7d-4c5e-8f10-2a3b4c5d6e7f"
		lobby  = "0b8e7c6d-5a4f-4e3d-9c2b-1a0f9e8d7c6b"
		game   = "7d6c5b4a-3f2e-4d1c-8b0a-9f8e7d6c5b4a"
	)
	common := []string{"--key", keyFile, "--origin", "rps.example.com/log"}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"sign_up", []string{"sign_up", "--name", "Ålice \"A\""},
			"-H Rps-Key-Id:7849ac3049680be1 -H Rps-Signed-At:1795000000123 -H Rps-Signature:" + sigs["sign_up"]},
		{"register register-1", []string{"register", "--player", player, "--lobby", lobby, "--game", game, "--bet", "100", "--idempotency-key", "register-1"},
			"-H Rps-Key-Id:7849ac3049680be1 -H Rps-Signed-At:1795000000123 -H Rps-Signature:" + sigs["register register-1"] +
				" -H Rps-Game-Id:" + game + " -H Idempotency-Key:register-1"},
		{"commit commit-1", []string{"--player", player, "--lobby", lobby, "--game", game, "--round", "1",
			"--commitment", "cb86442693864466112de9876585a7f068c7c0acfc4aae60b312a4ef297f44ae", "--idempotency-key", "commit-1", "commit"},
			"-H Rps-Key-Id:7849ac3049680be1 -H Rps-Signed-At:1795000000123 -H Rps-Signature:" + sigs["commit commit-1"] +
				" -H Rps-Game-Id:" + game + " -H Rps-Round:1 -H Idempotency-Key:commit-1"},
	} {
		var out, errOut strings.Builder
		args := append([]string{"sign"}, c.args...)
		args = append(args, common...)
		if code := run(args, at, &out, &errOut); code != 0 {
			t.Fatalf("%s: exit %d: %s", c.name, code, errOut.String())
		}
		if got := strings.TrimSpace(out.String()); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

// TestNewWritesAKeyOnce: new makes a key file that sign reads, and refuses to overwrite it.
func TestNewWritesAKeyOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "alice.key")
	var out, errOut strings.Builder
	if code := run([]string{"new", path}, time.Now, &out, &errOut); code != 0 {
		t.Fatalf("new: exit %d: %s", code, errOut.String())
	}
	if pub := strings.TrimSpace(out.String()); len(pub) != 64 || strings.Trim(pub, "0123456789abcdef") != "" {
		t.Fatalf("new printed %q, want the public key in hex", out.String())
	}
	if code := run([]string{"new", path}, time.Now, &out, &errOut); code != 1 {
		t.Fatalf("a second new on the same file: exit %d, want 1", code)
	}
	out.Reset()
	if code := run([]string{"sign", "--key", path, "--origin", "o", "--player", "p", "leave", "--idempotency-key", "two words"}, time.Now, &out, &errOut); code != 2 {
		t.Fatalf("an idempotency key with a space: exit %d, want 2", code)
	}
}
