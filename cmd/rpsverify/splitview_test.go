package main

import (
	"strings"
	"testing"
	"time"

	"github.com/commitreveal/rps/internal/apitest"
	"github.com/commitreveal/rps/internal/witnesstest"
	"github.com/commitreveal/rps/logpublish"
	"github.com/commitreveal/rps/tournament"
	"github.com/commitreveal/rps/translog"
)

const logOrigin = "rps.test/log"

// newLogServer is newServer with the transparency log on, cosigned by two real witnesses
// (litewitness) that know the log's key.
func newLogServer(t *testing.T) (*server, []*witnesstest.Witness) {
	t.Helper()
	ws := []*witnesstest.Witness{witnesstest.Start(t, "witness.test/w1"), witnesstest.Start(t, "witness.test/w2")}
	cfg := witnesstest.Configs(t, ws...)
	s := &server{Env: apitest.Start(t, apitest.WithClock(), apitest.WithLog(logpublish.Config{Origin: logOrigin, Witnesses: cfg, WitnessTimeout: 2 * time.Second})), t: t}
	key, err := s.Store.CurrentSigningKey(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	vkey, _ := translog.VerifierKey(logOrigin, key.Public)
	for _, w := range ws {
		w.AddLog(t, logOrigin, vkey)
	}
	return s, ws
}

// waitPublished waits until the published checkpoint holds every event, lobbies' and key logs',
// and returns its size.
func (s *server) waitPublished() int64 {
	s.t.Helper()
	var events int64
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err := s.Pool.QueryRow(s.t.Context(), `SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM account_key_events)`).Scan(&events); err != nil {
			s.t.Fatal(err)
		}
		c, _, err := translog.ParseSigned(s.Do("GET", "/log/checkpoint", "", nil).Body)
		if err == nil && c.N == events {
			return c.N
		}
	}
	s.t.Fatalf("no published checkpoint of the %d events", events)
	return 0
}

// resetLog has the operator drop the transparency log, which the integrator then rebuilds from
// the database as it is now.
func (s *server) resetLog() {
	s.t.Helper()
	s.exec(`WITH tiles AS (DELETE FROM log_tiles), ranges AS (DELETE FROM log_ranges), heads AS (DELETE FROM log_heads),
			keyRanges AS (DELETE FROM log_key_ranges), keyHeads AS (DELETE FROM log_key_heads),
			cps AS (DELETE FROM log_checkpoints WHERE size > 0), ws AS (DELETE FROM log_witnesses)
		UPDATE log_state SET size = 0, root = sha256(''), floor = '0'`)
}

// TestASplitViewIsCaught: the operator shows one history to a first client, then rewrites the
// database and shows another. The witnesses refuse to cosign the second history's checkpoint;
// a client that asks for their cosignatures refuses it too; and the first client, with the
// checkpoint it saved, prints the two checkpoints and the consistency proof that fails.
func TestASplitViewIsCaught(t *testing.T) {
	s, ws := newLogServer(t)
	witnessFlags := []string{"--witness", ws[0].VerifierKey, "--witness", ws[1].VerifierKey}
	lobby, _ := s.quickGame()
	first := s.waitPublished()
	for _, w := range ws {
		for deadline := time.Now().Add(10 * time.Second); w.Size(t, logOrigin) != first && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
	}

	// Client A verifies everything, the witness policy included, and keeps the checkpoint.
	stateA := t.TempDir() + "/a.json"
	code, out, rep := s.verify(append(witnessFlags, "--state", stateA, "--json")...)
	if code != exitOK || rep.Log == nil || !rep.Log.OK || rep.Log.Size != first || len(rep.Log.Cosigners) != 2 || rep.Lobbies[0].Log == nil {
		t.Fatalf("client A: exit %d\n%s", code, out)
	}

	// The operator rewrites the lobby's history and rebuilds the log over it, forgetting what the
	// witnesses saw; then the play goes on.
	s.rewriteLog(lobby, func(es []tournament.LoggedEvent) []tournament.LoggedEvent {
		es[0].Data, _ = tournament.Canonical(tournament.LobbyCreatedData{Name: "rewritten", Config: tournament.Config{}})
		return es
	})
	s.resetLog()
	s.register(s.lobby(classic(100)), s.players(1)...)
	second := s.waitPublished()
	if second <= first {
		t.Fatalf("the rebuilt log has %d leaves, the first %d", second, first)
	}
	// Both witnesses refused: they are still at the first history's size.
	time.Sleep(200 * time.Millisecond)
	for _, w := range ws {
		if got := w.Size(t, logOrigin); got != first {
			t.Errorf("witness %s cosigned size %d of the second history (the first had %d)", w.Name, got, first)
		}
	}

	// Client B, new, asks for the witnesses' cosignatures: the second history has none.
	code, out, rep = s.verify(append(witnessFlags, "--json")...)
	if code != exitFailed || rep.Log == nil || rep.Log.OK || !strings.Contains(rep.Log.Failure, "witness policy") {
		t.Fatalf("client B: exit %d, want %d\n%s", code, exitFailed, out)
	}
	// Client A, with its saved checkpoint, has the proof.
	code, out, _ = s.verify(append(witnessFlags, "--state", stateA)...)
	if code != exitFailed {
		t.Fatalf("client A after the rewrite: exit %d, want %d\n%s", code, exitFailed, out)
	}
	for _, want := range []string{"SECURITY ERROR", "misbehavior detected", "saved checkpoint", "new checkpoint", "proof of misbehavior", logOrigin + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("client A's output lacks %q:\n%s", want, out)
		}
	}
	t.Logf("client A:\n%s", out)
}
