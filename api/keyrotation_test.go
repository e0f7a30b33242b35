package api_test

import (
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apitest"
	"github.com/commitreveal/rps/internal/witnesstest"
	"github.com/commitreveal/rps/logpublish"
	"github.com/commitreveal/rps/translog"
)

// rotationPolicy asks for the log's signature by key and the cosignatures of every witness.
func rotationPolicy(t *testing.T, key string, ws []*witnesstest.Witness) torchwood.Policy {
	t.Helper()
	v, err := note.NewVerifier(key)
	if err != nil {
		t.Fatal(err)
	}
	p := []torchwood.Policy{torchwood.OriginPolicy(testOrigin), torchwood.SingleVerifierPolicy(v)}
	for _, w := range ws {
		cv, err := torchwood.NewCosignatureVerifier(w.VerifierKey)
		if err != nil {
			t.Fatal(err)
		}
		p = append(p, torchwood.SingleVerifierPolicy(cv))
	}
	return torchwood.ThresholdPolicy(len(p), p...)
}

// cosignedBy creates lobbies (each an event of the log) until the published checkpoint holds more
// than after leaves and satisfies p.
func cosignedBy(t *testing.T, e *apitest.Env, p torchwood.Policy, after int64) torchwood.Checkpoint {
	t.Helper()
	var body []byte
	var err error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		e.CreateLobby(map[string]any{"betSize": 1, "playersCountLimit": 2})
		body = e.Do("GET", "/log/checkpoint", "", nil).Want(t, http.StatusOK).Body
		var c torchwood.Checkpoint
		if c, _, err = torchwood.VerifyCheckpoint(body, p); err == nil && c.N > after {
			return c
		}
	}
	t.Fatalf("no checkpoint beyond %d leaves that satisfies the policy: %v\n%s", after, err, body)
	return torchwood.Checkpoint{}
}

// TestKeyRotationKeepsTheLogVerifiable: a rotation in a running server, with two real witnesses
// (litewitness). The old key signs the hand-over, which GET /v1/log lists with the new key, and
// a client that pinned the old key follows it to the new one (and to no other key); the log goes
// on as the same tree: the first checkpoints signed by the new key are cosigned by the same
// witnesses once they know it, and consistent with the last one the old key signed.
func TestKeyRotationKeepsTheLogVerifiable(t *testing.T) {
	ws := []*witnesstest.Witness{witnesstest.Start(t, "witness.test/w1"), witnesstest.Start(t, "witness.test/w2")}
	cfg := witnesstest.Configs(t, ws...)
	e := apitest.Start(t, apitest.WithLog(logpublish.Config{Origin: testOrigin, Witnesses: cfg, WitnessTimeout: 2 * time.Second}))
	var info api.LogInfo
	e.Do("GET", "/v1/log", "", nil).Want(t, http.StatusOK).Decode(t, &info)
	old := info.VerifierKeys[0].VerifierKey
	if info.VerifierKeys[0].Rotation != nil {
		t.Fatalf("the first key has a rotation: %q", *info.VerifierKeys[0].Rotation)
	}
	for _, w := range ws {
		w.AddLog(t, testOrigin, old)
	}
	before := cosignedBy(t, e, rotationPolicy(t, old, ws), 0)

	if _, err := e.Store.RotateSigningKey(t.Context()); err != nil {
		t.Fatal(err)
	}
	e.Do("GET", "/v1/log", "", nil).Want(t, http.StatusOK).Decode(t, &info)
	if len(info.VerifierKeys) != 2 || info.VerifierKeys[1].VerifierKey != old || info.VerifierKeys[0].Rotation == nil {
		t.Fatalf("keys after the rotation: %+v", info.VerifierKeys)
	}
	current := info.VerifierKeys[0].VerifierKey
	statement := []byte(*info.VerifierKeys[0].Rotation)
	r, err := translog.OpenRotation(testOrigin, statement)
	if err != nil || r.Old != old || r.New != current || r.Tree.N < before.N {
		t.Fatalf("rotation %+v, %v: want from %s to %s at %d leaves or more", r, err, old, current, before.N)
	}
	if got, err := translog.FollowRotations(testOrigin, []string{old}, [][]byte{statement}); err != nil || !slices.Equal(got, []string{old, current}) {
		t.Fatalf("a client that pinned the old key trusts %v (%v)", got, err)
	}

	// The witnesses' operators add the new key; the log goes on under it, cosigned by both.
	for _, w := range ws {
		w.AddKey(t, testOrigin, current)
	}
	after := cosignedBy(t, e, rotationPolicy(t, current, ws), before.N)
	var proof api.ConsistencyProof
	e.Do("GET", "/v1/log/consistency?from="+strconv.FormatInt(before.N, 10)+"&to="+strconv.FormatInt(after.N, 10), "", nil).Want(t, http.StatusOK).Decode(t, &proof)
	var tp tlog.TreeProof
	for _, h := range proof.Proof {
		hash, err := tlog.ParseHash(h)
		if err != nil {
			t.Fatal(err)
		}
		tp = append(tp, hash)
	}
	if err := tlog.CheckTree(tp, after.N, after.Hash, before.N, before.Hash); err != nil {
		t.Fatalf("the checkpoint of %d leaves under the new key is not consistent with the one of %d under the old: %v", after.N, before.N, err)
	}
	// The statement's tree is the log's: the same root at that size (which may have been
	// integrated but not yet published when the key was rotated).
	var atRotation api.ConsistencyProof
	e.Do("GET", "/v1/log/consistency?from="+strconv.FormatInt(r.Tree.N, 10)+"&to="+strconv.FormatInt(after.N, 10), "", nil).Want(t, http.StatusOK).Decode(t, &atRotation)
	if atRotation.FromRoot != r.Tree.Hash.String() {
		t.Fatalf("the log's root at %d is %s, the rotation says %s", r.Tree.N, atRotation.FromRoot, r.Tree.Hash)
	}
	// The old key signs nothing any more: the newest checkpoint does not verify with it alone.
	if _, _, err := torchwood.VerifyCheckpoint(e.Do("GET", "/log/checkpoint", "", nil).Body,
		rotationPolicy(t, old, nil)); err == nil {
		t.Fatal("the newest checkpoint is signed by the retired key")
	}
}

// TestPastRotationsAreSigned: a rotation made before hand-overs were signed (its statement
// missing) gets one from SignPastRotations, which rpsd runs at start, at the tree of the newest
// checkpoint made by then, so that clients that pinned the retired key follow it too.
func TestPastRotationsAreSigned(t *testing.T) {
	e := apitest.Start(t, apitest.WithLog(logpublish.Config{Origin: testOrigin}))
	var info api.LogInfo
	e.Do("GET", "/v1/log", "", nil).Want(t, http.StatusOK).Decode(t, &info)
	pinned := info.VerifierKeys[0].VerifierKey
	if _, err := e.Store.RotateSigningKey(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Pool.Exec(t.Context(), `UPDATE signing_keys SET rotation = NULL`); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second run finds nothing left to sign
		if _, err := e.Store.SignPastRotations(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	e.Do("GET", "/v1/log", "", nil).Want(t, http.StatusOK).Decode(t, &info)
	if len(info.VerifierKeys) != 2 || info.VerifierKeys[0].Rotation == nil || info.VerifierKeys[1].Rotation != nil {
		t.Fatalf("keys after signing past rotations: %+v", info.VerifierKeys)
	}
	r, err := translog.OpenRotation(testOrigin, []byte(*info.VerifierKeys[0].Rotation))
	if err != nil || r.Old != pinned || r.New != info.VerifierKeys[0].VerifierKey {
		t.Fatalf("rotation %+v, %v", r, err)
	}
	var at api.ConsistencyProof
	e.Do("GET", "/v1/log/consistency?from="+strconv.FormatInt(r.Tree.N, 10)+"&to="+strconv.FormatInt(r.Tree.N, 10), "", nil).Want(t, http.StatusOK).Decode(t, &at)
	if at.FromRoot != r.Tree.Hash.String() {
		t.Fatalf("the log's root at %d is %s, the rotation says %s", r.Tree.N, at.FromRoot, r.Tree.Hash)
	}
}
