package main

import (
	"context"
	"encoding/hex"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/commitreveal/rps/translog"
)

// TestKeyRotate: the server makes its signing key on the first start and never prints it;
// `rpsd key rotate` beside the running server makes a new one, which the server signs with within
// seconds, and the old public key stays published.
func TestKeyRotate(t *testing.T) {
	t.Parallel()
	env := dbEnv(t, nil)
	s := startServer(t, "rpsd", env)
	var keys struct {
		Keys []struct {
			KeyID      string  `json:"keyId"`
			ValidUntil *string `json:"validUntil"`
		} `json:"keys"`
	}
	s.must(http.StatusOK, "GET", "/v1/keys", "", nil, &keys)
	if len(keys.Keys) != 1 || keys.Keys[0].ValidUntil != nil {
		t.Fatalf("keys after the first start: %+v", keys)
	}
	first := keys.Keys[0].KeyID
	var log struct {
		Origin       string `json:"origin"`
		VerifierKeys []struct {
			VerifierKey string  `json:"verifierKey"`
			Rotation    *string `json:"rotation"`
		} `json:"verifierKeys"`
	}
	s.must(http.StatusOK, "GET", "/v1/log", "", nil, &log)
	pinned := log.VerifierKeys[0].VerifierKey

	rotate := exec.Command(rpsdBin, "key", "rotate")
	rotate.Env = childEnv(env)
	rotate.Dir = t.TempDir()
	out, err := rotate.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "signing key ") {
		t.Fatalf("rpsd key rotate: %v\n%s", err, out)
	}
	s.must(http.StatusOK, "GET", "/v1/keys", "", nil, &keys)
	if len(keys.Keys) != 2 || keys.Keys[0].ValidUntil != nil || keys.Keys[1].KeyID != first || keys.Keys[1].ValidUntil == nil {
		t.Fatalf("keys after a rotation: %+v", keys)
	}

	// The old log key handed the log over to the new one, which a client that pinned it follows.
	s.must(http.StatusOK, "GET", "/v1/log", "", nil, &log)
	if len(log.VerifierKeys) != 2 || log.VerifierKeys[0].Rotation == nil || !strings.Contains(string(out), *log.VerifierKeys[0].Rotation) {
		t.Fatalf("no key rotation statement in GET /v1/log or the command's output: %+v\n%s", log.VerifierKeys, out)
	}
	trusted, err := translog.FollowRotations(log.Origin, []string{pinned}, [][]byte{[]byte(*log.VerifierKeys[0].Rotation)})
	if err != nil || len(trusted) != 2 || trusted[1] != log.VerifierKeys[0].VerifierKey {
		t.Fatalf("a client that pinned %s follows the rotation to %v (%v)", pinned, trusted, err)
	}

	lobby := s.createLobby("signed", map[string]any{"betSize": 1, "playersCountLimit": 2})
	deadline := time.Now().Add(10 * time.Second)
	for {
		var view struct {
			Head struct {
				KeyID string `json:"keyId"`
			} `json:"head"`
		}
		s.must(http.StatusOK, "GET", "/v1/lobbies/"+lobby, "", nil, &view)
		if view.Head.KeyID == keys.Keys[0].KeyID {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server still signs with %s after a rotation", view.Head.KeyID)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// No private key in anything the server or the command printed.
	conn, err := pgx.Connect(context.Background(), env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, _ := conn.Query(context.Background(), `SELECT seed FROM signing_keys`)
	seeds, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil || len(seeds) != 2 {
		t.Fatalf("seeds: %v %d", err, len(seeds))
	}
	printed := s.stdout.String() + s.stderr.String() + string(out)
	for _, seed := range seeds {
		if strings.Contains(strings.ToLower(printed), hex.EncodeToString(seed)) {
			t.Errorf("a private key was printed")
		}
	}
}
