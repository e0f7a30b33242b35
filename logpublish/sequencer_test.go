package logpublish_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"filippo.io/torchwood"
	"github.com/jackc/pgx/v5"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/commitreveal/rps/internal/apitest"
	"github.com/commitreveal/rps/internal/pgtest"
	"github.com/commitreveal/rps/logpublish"
	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
	"github.com/commitreveal/rps/translog"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const origin = "rps.test/log"

// setup starts the API over a fresh database, with lobbies that hold some events, and returns it
// with a sequencer of the log.
func setup(t *testing.T) (*apitest.Env, *logpublish.Sequencer) {
	t.Helper()
	e := apitest.Start(t, apitest.WithOrigin(origin))
	for range 3 {
		l := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 5})
		for i := range 2 {
			e.Register(l.Id.String(), e.NewPlayer(fmt.Sprint("p", i), 100))
		}
	}
	seq, err := logpublish.New(t.Context(), logpublish.Config{Store: e.Store, Origin: origin})
	if err != nil {
		t.Fatal(err)
	}
	return e, seq
}

type event struct {
	lobby string
	seq   int64
	hash  [32]byte
}

func allEvents(t *testing.T, e *apitest.Env) []event {
	t.Helper()
	rows, _ := e.Pool.Query(t.Context(), `SELECT lobby_id::text, seq, hash FROM events ORDER BY lobby_id, seq`)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (event, error) {
		var ev event
		var h []byte
		err := r.Scan(&ev.lobby, &ev.seq, &h)
		copy(ev.hash[:], h)
		return ev, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// keyEvents are the accounts' key events, as leaves.
func keyEvents(t *testing.T, e *apitest.Env) []translog.Leaf {
	t.Helper()
	rows, _ := e.Pool.Query(t.Context(), `SELECT account_id::text, seq, hash FROM account_key_events ORDER BY account_id, seq`)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (translog.Leaf, error) {
		var l translog.Leaf
		var h []byte
		err := r.Scan(&l.Account, &l.Seq, &h)
		copy(l.Hash[:], h)
		return l, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkLog checks the stored log against the events, with the standard libraries only: every
// event (a lobby's or an account's key event) is one leaf, each chain's in chain order; the checkpoint is validly signed by the current
// key; the tree the entries make has the checkpoint's root; and it returns the checkpoint.
func checkLog(t *testing.T, e *apitest.Env) torchwood.Checkpoint {
	t.Helper()
	ctx := t.Context()
	c, err := e.Store.PublishedCheckpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	key, err := e.Store.CurrentSigningKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	vkey, _ := translog.VerifierKey(origin, key.Public)
	v, _ := note.NewVerifier(vkey)
	cp, _, err := torchwood.VerifyCheckpoint(c.Signed(), torchwood.ThresholdPolicy(2, torchwood.OriginPolicy(origin), torchwood.SingleVerifierPolicy(v)))
	if err != nil {
		t.Fatalf("checkpoint: %v\n%s", err, c.Signed())
	}
	leaves, err := e.Store.LogEntries(ctx, 0, cp.N)
	if err != nil {
		t.Fatal(err)
	}
	events, keys := allEvents(t, e), keyEvents(t, e)
	if int64(len(leaves)) != cp.N || len(events)+len(keys) != len(leaves) {
		t.Fatalf("%d leaves in a tree of %d, %d events and %d key events", len(leaves), cp.N, len(events), len(keys))
	}
	seen := map[string]int64{}
	var hashes []tlog.Hash
	for i, l := range leaves {
		if l.Seq != seen[l.Chain()]+1 {
			t.Fatalf("leaf %d is event %d of %s, after its event %d", i, l.Seq, l.Chain(), seen[l.Chain()])
		}
		seen[l.Chain()] = l.Seq
		hashes = append(hashes, tlog.RecordHash(l.Entry()))
	}
	g, err := translog.Append(0, nil, hashes)
	if err != nil || g.Tree != cp.Tree {
		t.Fatalf("the entries make %v, the checkpoint says %v (%v)", g.Tree, cp.Tree, err)
	}
	for _, ev := range events {
		ranges, err := e.Store.LogRanges(ctx, "00000000-0000-0000-0000-000000000000", 1, 1)
		if err != nil || len(ranges) != 0 {
			t.Fatalf("ranges of no lobby: %v %v", ranges, err)
		}
		ranges, _ = e.Store.LogRanges(ctx, tlogLobby(ev.lobby), ev.seq, ev.seq)
		index, ok := leafOf(ranges, ev.seq)
		if !ok || leaves[index].Lobby != ev.lobby || leaves[index].Seq != ev.seq || leaves[index].Hash != ev.hash {
			t.Fatalf("event %s/%d: leaf %d (%v)", ev.lobby, ev.seq, index, ok)
		}
	}
	for _, k := range keys {
		ranges, _ := e.Store.KeyLogRanges(ctx, tournament.AccountID(k.Account), k.Seq, k.Seq)
		index, ok := leafOf(ranges, k.Seq)
		if !ok || leaves[index] != k {
			t.Fatalf("key event %s/%d: leaf %d (%v)", k.Account, k.Seq, index, ok)
		}
	}
	return cp
}

// TestKeyEventsAreLeaves: every key change of an account (a sign-up's key, a key added, one
// retired) is a leaf "key <account> <seq> <hash>" of the log, in its chain's order among the
// lobbies' events, and its inclusion proof checks against the signed checkpoint.
func TestKeyEventsAreLeaves(t *testing.T) {
	e, seq := setup(t)
	ctx := t.Context()
	if _, err := seq.Integrate(ctx); err != nil {
		t.Fatal(err)
	}
	pub1, priv1, _ := ed25519.GenerateKey(nil)
	pub2, _, _ := ed25519.GenerateKey(nil)
	sig := func(idem string) tournament.KeySignature {
		return tournament.KeySignature{KeyID: tournament.KeyID(pub1), SignedAt: time.Now().UnixMilli(), Signature: ed25519.Sign(priv1, []byte(idem)), IdempotencyKey: idem}
	}
	a, _, err := e.Store.CreateAccountWithKey(ctx, "keyed", store.SignedKey{PublicKey: pub1, Signature: sig("")})
	if err != nil {
		t.Fatal(err)
	}
	idem := func(key string) *store.IdempotencyKey {
		return &store.IdempotencyKey{AccountID: a.ID, Method: "POST", Route: "/keys", Key: key, RequestHash: make([]byte, 32)}
	}
	if r, err := e.Store.AddKey(ctx, a.ID, store.SignedKey{PublicKey: pub2, Signature: sig("k2")}, idem("k2"), store.RequestRef{}); err != nil || r.Result.Refusal != nil {
		t.Fatalf("add a key: %+v, %v", r.Result.Refusal, err)
	}
	if n, err := seq.Integrate(ctx); err != nil || n != 2 {
		t.Fatalf("integrate two key events: %d, %v", n, err)
	}
	if r, err := e.Store.RetireKey(ctx, a.ID, tournament.KeyID(pub1), sig("r1"), idem("r1"), store.RequestRef{}); err != nil || r.Result.Refusal != nil {
		t.Fatalf("retire a key: %+v, %v", r.Result.Refusal, err)
	}
	e.Register(e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 5}).Id.String(), e.NewPlayer("late", 100))
	if n, err := seq.Integrate(ctx); err != nil || n < 3 {
		t.Fatalf("integrate a key event and a lobby's: %d, %v", n, err)
	}
	cp := checkLog(t, e)
	kl, err := e.Store.KeyLog(ctx, a.ID, 0, 10)
	if err != nil || len(kl.Events) != 3 {
		t.Fatalf("key log: %+v, %v", kl, err)
	}
	for _, ev := range kl.Events {
		if !ev.Logged {
			t.Fatalf("key event %d has no leaf", ev.Seq)
		}
		leaf := translog.Leaf{Account: string(a.ID), Seq: ev.Seq, Hash: ev.Hash}
		proof, err := tlog.ProveRecord(cp.N, ev.LeafIndex, e.Store.LogHashes(ctx, cp.Tree))
		if err != nil {
			t.Fatal(err)
		}
		if err := tlog.CheckRecord(proof, cp.N, cp.Hash, ev.LeafIndex, leaf.RecordHash()); err != nil {
			t.Fatalf("key event %d at leaf %d: %v", ev.Seq, ev.LeafIndex, err)
		}
	}
}

func TestIntegrationLogsEveryEventOnceInChainOrder(t *testing.T) {
	e, seq := setup(t)
	ctx := t.Context()
	n, err := seq.Integrate(ctx)
	if err != nil || n == 0 {
		t.Fatalf("integrate: %d, %v", n, err)
	}
	first := checkLog(t, e)
	if n, err := seq.Integrate(ctx); err != nil || n != 0 {
		t.Fatalf("integrate again with nothing new: %d, %v", n, err)
	}
	l := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 5})
	e.Register(l.Id.String(), e.NewPlayer("late", 100))
	if n, err := seq.Integrate(ctx); err != nil || n == 0 {
		t.Fatalf("integrate the new lobby: %d, %v", n, err)
	}
	second := checkLog(t, e)
	tiles := translog.TileReader{Read: func(keys []translog.TileKey) (map[translog.TileKey][]byte, error) { return e.Store.LogTiles(ctx, keys) }}
	proof, err := tlog.ProveTree(second.N, first.N, tlog.TileHashReader(second.Tree, tiles))
	if err != nil {
		t.Fatal(err)
	}
	if err := tlog.CheckTree(proof, second.N, second.Hash, first.N, first.Hash); err != nil {
		t.Fatalf("consistency %d -> %d: %v", first.N, second.N, err)
	}
	// The origin is the log's: another one is refused.
	if _, err := logpublish.New(ctx, logpublish.Config{Store: e.Store, Origin: "other.example/log"}); err == nil {
		t.Fatal("a sequencer started with another origin")
	}
}

// TestReplicasIntegrateEachEventOnce: sequencers of several replicas race on one database while
// events are written; every event ends up in the log once.
func TestReplicasIntegrateEachEventOnce(t *testing.T) {
	e, first := setup(t)
	seqs := []*logpublish.Sequencer{first}
	for range 2 {
		s, err := logpublish.New(t.Context(), logpublish.Config{Store: e.Store, Origin: origin})
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, s)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for _, s := range seqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				_, _ = s.Integrate(ctx)
			}
		}()
	}
	for i := range 4 {
		l := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 5})
		for j := range 3 {
			e.Register(l.Id.String(), e.NewPlayer(fmt.Sprint("r", i, j), 100))
		}
	}
	cancel()
	wg.Wait()
	// A replica's transaction cut off by the cancel may still run on the server for a moment,
	// and events it is older than wait for it (as they must), so one more pass may not take them
	// all: integrate until every event is in, and give up only on a log that stays behind.
	// Every leaf is a lobby's event or an account's key event: wait for both kinds.
	want := len(allEvents(t, e)) + len(keyEvents(t, e))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		// That transaction may also grow the log under this pass, which then tries again.
		if _, err := first.Integrate(t.Context()); err != nil && !errors.Is(err, store.ErrLogMoved) {
			t.Fatal(err)
		}
		c, err := e.Store.PublishedCheckpoint(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if c.Size >= int64(want) || time.Now().After(deadline) {
			break
		}
	}
	checkLog(t, e)
}

// TestAnEventWhoseTransactionIsOlderWaitsForItsPredecessor builds the one case where a
// lobby's events are committed out of their transactions' order: transaction B took its id
// before A, A wrote event k and committed, B wrote event k+1 and committed, and an older
// transaction C still runs, so A's event is not known committed yet when B's is. The log holds
// B's event back until A's can go first.
func TestAnEventWhoseTransactionIsOlderWaitsForItsPredecessor(t *testing.T) {
	e, seq := setup(t)
	ctx := t.Context()
	if _, err := seq.Integrate(ctx); err != nil {
		t.Fatal(err)
	}
	lobby := allEvents(t, e)[0].lobby
	var last int64
	var prev []byte
	if err := e.Pool.QueryRow(ctx, `SELECT last_seq, last_hash FROM lobbies WHERE id = $1`, lobby).Scan(&last, &prev); err != nil {
		t.Fatal(err)
	}
	begin := func() pgx.Tx {
		tx, err := e.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
		if _, err := tx.Exec(ctx, `SELECT pg_current_xact_id()`); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	insert := func(tx pgx.Tx, seq int64, prev, hash []byte) {
		t.Helper()
		if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO events (lobby_id, seq, type, at, data, prev_hash, hash)
			VALUES ($1, $2, 'lobby_closed', 0, '{}', $3, $4)`, lobby, seq, prev, hash); err != nil {
			t.Fatal(err)
		}
	}
	hashA, hashB := bytes.Repeat([]byte{0xa}, 32), bytes.Repeat([]byte{0xb}, 32)
	b := begin()
	c := begin()
	a := begin()
	insert(a, last+1, prev, hashA)
	if err := a.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	insert(b, last+2, hashA, hashB)
	if err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	before := len(allEvents(t, e)) + len(keyEvents(t, e)) // the players' sign-ups are leaves too
	if _, err := seq.Integrate(ctx); err != nil {
		t.Fatal(err)
	}
	if h, ok, _ := e.Store.LogHead(ctx, tlogLobby(lobby)); !ok || h.Seq != last {
		t.Fatalf("with A's event not known committed, the lobby's logged head is %+v, want seq %d", h, last)
	}
	if err := c.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := seq.Integrate(ctx); err != nil {
		t.Fatal(err)
	}
	if h, ok, _ := e.Store.LogHead(ctx, tlogLobby(lobby)); !ok || h.Seq != last+2 {
		t.Fatalf("after C committed, the lobby's logged head is %+v, want seq %d", h, last+2)
	}
	if cp := checkLog(t, e); cp.N != int64(before) {
		t.Fatalf("tree of %d, %d events and key events", cp.N, before)
	}
}
