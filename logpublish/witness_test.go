package logpublish_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"

	"github.com/commitreveal/rps/internal/apitest"
	"github.com/commitreveal/rps/internal/witnesstest"
	"github.com/commitreveal/rps/logpublish"
	"github.com/commitreveal/rps/translog"
)

// witnessed starts two real witnesses (litewitness) and the API with its log asking them, and
// has the witnesses know the log's key.
func witnessed(t *testing.T) (*apitest.Env, []*witnesstest.Witness, note.Verifier) {
	t.Helper()
	return witnessedWith(t, 0)
}

// witnessedWith is witnessed with the log integrating every period (apitest's default if 0).
func witnessedWith(t testing.TB, period time.Duration) (*apitest.Env, []*witnesstest.Witness, note.Verifier) {
	t.Helper()
	ws := []*witnesstest.Witness{witnesstest.Start(t, "witness.test/w1"), witnesstest.Start(t, "witness.test/w2")}
	e := apitest.Start(t, apitest.WithClock(), apitest.WithLog(logpublish.Config{Origin: origin, Witnesses: witnesstest.Configs(t, ws...), WitnessTimeout: 2 * time.Second, Period: period}))
	key, err := e.Store.CurrentSigningKey(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	vkey, _ := translog.VerifierKey(origin, key.Public)
	for _, w := range ws {
		w.AddLog(t, origin, vkey)
	}
	v, _ := note.NewVerifier(vkey)
	return e, ws, v
}

// policy asks for the log's signature and k of the witnesses' cosignatures.
func policy(log note.Verifier, k int, ws []*witnesstest.Witness) torchwood.Policy {
	var wp []torchwood.Policy
	for _, w := range ws {
		v, err := torchwood.NewCosignatureVerifier(w.VerifierKey)
		if err != nil {
			panic(err)
		}
		wp = append(wp, torchwood.SingleVerifierPolicy(v))
	}
	return torchwood.ThresholdPolicy(2, torchwood.ThresholdPolicy(2, torchwood.OriginPolicy(origin), torchwood.SingleVerifierPolicy(log)),
		torchwood.ThresholdPolicy(k, wp...))
}

// waitCosigned waits for a published checkpoint that holds every event (the lobbies' and the
// accounts' key events: players sign up with keys) and satisfies p.
func waitCosigned(t *testing.T, e *apitest.Env, p torchwood.Policy) torchwood.Checkpoint {
	t.Helper()
	var events int64
	if err := e.Pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM account_key_events)`).Scan(&events); err != nil {
		t.Fatal(err)
	}
	var body []byte
	var err error
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		body = e.Do("GET", "/log/checkpoint", "", nil).Want(t, http.StatusOK).Body
		var c torchwood.Checkpoint
		if c, _, err = torchwood.VerifyCheckpoint(body, p); err == nil && c.N == events {
			return c
		}
	}
	t.Fatalf("no checkpoint of %d events that satisfies the policy: %v\n%s", events, err, body)
	return torchwood.Checkpoint{}
}

func play(t *testing.T, e *apitest.Env, players int) {
	t.Helper()
	l := e.CreateLobby(map[string]any{"betSize": 1, "playersCountLimit": 50})
	for i := range players {
		e.Register(l.Id.String(), e.NewPlayer(fmt.Sprint("w", i), 10)).Want(t, http.StatusCreated)
	}
}

func TestWitnessesCosignEveryCheckpoint(t *testing.T) {
	e, ws, log := witnessed(t)
	both, either := policy(log, 2, ws), policy(log, 1, ws)
	play(t, e, 3)
	c := waitCosigned(t, e, both)
	if got := ws[0].Size(t, origin); got != c.N {
		t.Fatalf("witness 1 cosigned size %d, the checkpoint is %d", got, c.N)
	}

	// A witness that is down does not hold the log back: the next checkpoint is published with
	// the other's cosignature.
	ws[1].Stop()
	play(t, e, 2)
	down := waitCosigned(t, e, either)
	if _, _, err := torchwood.VerifyCheckpoint(e.Do("GET", "/log/checkpoint", "", nil).Body, both); err == nil {
		t.Fatal("a stopped witness cosigned")
	}
	// Back up, it is asked again from the size it last cosigned, with the consistency proof.
	ws[1].Restart(t)
	play(t, e, 1)
	back := waitCosigned(t, e, both)
	if back.N <= down.N || ws[1].Size(t, origin) != back.N {
		t.Fatalf("witness 2 at %d after coming back, checkpoint %d", ws[1].Size(t, origin), back.N)
	}
	var info struct {
		Witnesses []struct{ Name, VerifierKey, Url string }
	}
	e.Do("GET", "/v1/log", "", nil).Want(t, http.StatusOK).Decode(t, &info)
	if len(info.Witnesses) != 2 || info.Witnesses[0].Name != "witness.test/w1" || info.Witnesses[1].VerifierKey != ws[1].VerifierKey {
		t.Fatalf("GET /v1/log witnesses %+v", info.Witnesses)
	}
}
