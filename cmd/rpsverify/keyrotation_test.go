package main

import (
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/commitreveal/rps/internal/apitest"
	"github.com/commitreveal/rps/logpublish"
	"github.com/commitreveal/rps/translog"
)

// TestAPinnedLogKeyFollowsARotation: a verifier given the log's key with --log-key goes on
// verifying, its saved checkpoint included, after the operator rotates the key, through the
// hand-over the old key signed; a key that no rotation leads from still refuses the checkpoint.
func TestAPinnedLogKeyFollowsARotation(t *testing.T) {
	s := &server{Env: apitest.Start(t, apitest.WithClock(), apitest.WithLog(logpublish.Config{Origin: logOrigin})), t: t}
	key, err := s.Store.CurrentSigningKey(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	pinned, _ := translog.VerifierKey(logOrigin, key.Public)
	s.quickGame()
	s.waitPublished()
	state := t.TempDir() + "/state.json"
	if code, out, _ := s.verify("--log-key", pinned, "--state", state); code != exitOK {
		t.Fatalf("before the rotation: exit %d\n%s", code, out)
	}

	next, err := s.Store.RotateSigningKey(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	vkey, _ := translog.VerifierKey(logOrigin, next.Public)
	v, _ := note.NewVerifier(vkey)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		s.lobby(classic(100)) // an event of the log
		if _, err := note.Open(s.Do("GET", "/log/checkpoint", "", nil).Body, note.VerifierList(v)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no checkpoint signed by the new key")
		}
	}
	s.waitPublished()
	if code, out, rep := s.verify("--log-key", pinned, "--state", state, "--json"); code != exitOK || rep.Log == nil || rep.Log.ConsistentWith == nil {
		t.Fatalf("after the rotation, with the pinned key: exit %d\n%s", code, out)
	}
	stranger, _ := translog.VerifierKey(logOrigin, make([]byte, 32))
	if code, out, _ := s.verify("--log-key", stranger); code != exitFailed {
		t.Fatalf("with a key no rotation leads from: exit %d, want %d\n%s", code, exitFailed, out)
	}
}
