package api_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apitest"
	"github.com/commitreveal/rps/logpublish"
)

// This file checks the transparency log from the outside, with the ecosystem's libraries alone
// (x/mod's tlog and note, torchwood's tile client and proof verifier) and what README and the
// contract say: no code of ours computes or checks a hash here, so any tool of that ecosystem
// can audit the log the same way.

const testOrigin = "rps.test/log"

// logEnv starts the API with its log and returns it with the log's policy: the origin and the
// verifier key GET /v1/log gives.
func logEnv(t *testing.T) (*apitest.Env, torchwood.Policy) {
	t.Helper()
	e := apitest.Start(t, apitest.WithLog(logpublish.Config{Origin: testOrigin}))
	var info api.LogInfo
	e.Do("GET", "/v1/log", "", nil).Want(t, http.StatusOK).Decode(t, &info)
	if info.Origin != testOrigin || len(info.VerifierKeys) != 1 || info.Tiles != "/log/" {
		t.Fatalf("log info %+v", info)
	}
	v, err := note.NewVerifier(info.VerifierKeys[0].VerifierKey)
	if err != nil {
		t.Fatal(err)
	}
	return e, torchwood.ThresholdPolicy(2, torchwood.OriginPolicy(testOrigin), torchwood.SingleVerifierPolicy(v))
}

// entry is a leaf as README describes it.
func entry(lobby string, seq int64, hash string) []byte {
	return []byte(fmt.Sprintf("event %s %d %s\n", lobby, seq, hash))
}

// checkpoint fetches /log/checkpoint and verifies it.
func checkpoint(t *testing.T, e *apitest.Env, policy torchwood.Policy) torchwood.Checkpoint {
	t.Helper()
	r := e.Do("GET", "/log/checkpoint", "", nil).Want(t, http.StatusOK)
	c, _, err := torchwood.VerifyCheckpoint(r.Body, policy)
	if err != nil {
		t.Fatalf("checkpoint: %v\n%s", err, r.Body)
	}
	return c
}

// waitForLog waits until the published checkpoint holds every event of the lobbies and every key
// event of the accounts.
func waitForLog(t *testing.T, e *apitest.Env, policy torchwood.Policy) torchwood.Checkpoint {
	t.Helper()
	var events int64
	if err := e.Pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM account_key_events)`).Scan(&events); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := checkpoint(t, e, policy)
		if c.N == events {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log holds %d leaves, there are %d events", c.N, events)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestTheLogChecksOutWithTheStandardLibraries(t *testing.T) {
	e, policy := logEnv(t)
	ctx := t.Context()
	var lobbies, players []string
	for i := range 2 {
		l := e.CreateLobby(map[string]any{"betSize": 1, "playersCountLimit": 200})
		lobbies = append(lobbies, l.Id.String())
		for j := range 130 {
			p := e.NewPlayer(fmt.Sprint("p", i, j), 10)
			players = append(players, p.ID)
			e.Register(l.Id.String(), p).Want(t, http.StatusCreated)
		}
	}
	first := waitForLog(t, e, policy)
	if first.N < 256 {
		t.Fatalf("only %d leaves: the test should cross a tile", first.N)
	}

	// Every leaf, read with torchwood's client (which checks each tile against the checkpoint),
	// is one event as the events pages serve it, each lobby's in order, or one key event (each
	// player's sign-up with its key) as its account's key log serves it.
	fetcher, err := torchwood.NewTileFetcher(e.URL+"/log/", torchwood.WithHTTPClient(e.Client))
	if err != nil {
		t.Fatal(err)
	}
	client, err := torchwood.NewClient(fetcher)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	pageLeaves := map[string]int64{}
	for _, lobby := range lobbies {
		for _, ev := range e.AllEvents(lobby) {
			want[string(entry(lobby, ev.Seq, ev.Hash))] = true
		}
		var page api.EventPage
		e.Do("GET", "/v1/lobbies/"+lobby+"/events?limit=1000", "", nil).Want(t, http.StatusOK).Decode(t, &page)
		for _, ev := range page.Events {
			if ev.LeafIndex == nil {
				t.Fatalf("lobby %s event %d has no leaf index", lobby, ev.Seq)
			}
			pageLeaves[string(entry(lobby, ev.Seq, ev.Hash))] = *ev.LeafIndex
		}
	}
	for _, a := range players {
		var keys api.AccountKeys
		e.Do("GET", "/v1/accounts/"+a+"/keys", "", nil).Want(t, http.StatusOK).Decode(t, &keys)
		for _, ev := range keys.Events {
			if ev.LeafIndex == nil {
				t.Fatalf("account %s key event %d has no leaf index", a, ev.Seq)
			}
			leaf := fmt.Sprintf("key %s %d %s\n", a, ev.Seq, ev.Hash)
			want[leaf], pageLeaves[leaf] = true, *ev.LeafIndex
		}
	}
	var n int64
	for index, leaf := range client.AllEntries(ctx, first.Tree, 0) {
		if !want[string(leaf)] || pageLeaves[string(leaf)] != index {
			t.Fatalf("leaf %d %q: not an event, or not where its page says (%d)", index, leaf, pageLeaves[string(leaf)])
		}
		delete(want, string(leaf))
		n++
	}
	if err := client.Err(); err != nil || n != first.N || len(want) != 0 {
		t.Fatalf("read %d leaves of %d (%v); %d events not found", n, first.N, err, len(want))
	}

	// An inclusion proof, and its receipt, check out with x/mod and torchwood.
	events := e.AllEvents(lobbies[1])
	ev := events[len(events)/2]
	var proof api.LogProof
	e.Do("GET", fmt.Sprintf("/v1/log/inclusion?lobbyId=%s&seq=%d", lobbies[1], ev.Seq), "", nil).Want(t, http.StatusOK).Decode(t, &proof)
	rh := tlog.RecordHash(entry(lobbies[1], ev.Seq, ev.Hash))
	var p tlog.RecordProof
	for _, h := range proof.Proof {
		x, err := tlog.ParseHash(h)
		if err != nil {
			t.Fatal(err)
		}
		p = append(p, x)
	}
	c, _, err := torchwood.VerifyCheckpoint([]byte(proof.Checkpoint), policy)
	if err != nil || c.N != proof.TreeSize {
		t.Fatalf("proof's checkpoint: %v", err)
	}
	if err := tlog.CheckRecord(p, c.N, c.Hash, proof.LeafIndex, rh); err != nil {
		t.Fatalf("inclusion proof: %v", err)
	}
	if err := torchwood.VerifyProof(policy, rh, []byte(proof.Receipt)); err != nil {
		t.Fatalf("receipt: %v\n%s", err, proof.Receipt)
	}
	if err := torchwood.VerifyProof(policy, tlog.RecordHash(entry(lobbies[1], ev.Seq, strings.Repeat("0", 64))), []byte(proof.Receipt)); err == nil {
		t.Fatal("the receipt proves another event too")
	}
	// The same leaf through torchwood's client and the tiles.
	if got, _, err := client.Entry(ctx, c.Tree, proof.LeafIndex); err != nil || string(got) != string(entry(lobbies[1], ev.Seq, ev.Hash)) {
		t.Fatalf("entry %d: %q, %v", proof.LeafIndex, got, err)
	}

	// A lobby view names its newest logged event and, asked, proves it.
	var view api.Lobby
	e.Do("GET", "/v1/lobbies/"+lobbies[0]+"?logProof=true", "", nil).Want(t, http.StatusOK).Decode(t, &view)
	if view.Log == nil || view.LogProof == nil || view.Log.Seq != view.LogProof.Seq || view.LogProof.Seq != view.Head.Seq {
		t.Fatalf("lobby view's log %+v, proof %+v, head %+v", view.Log, view.LogProof, view.Head)
	}
	if err := torchwood.VerifyProof(policy, tlog.RecordHash(entry(lobbies[0], view.Head.Seq, view.Head.Hash)), []byte(view.LogProof.Receipt)); err != nil {
		t.Fatalf("lobby view's receipt: %v", err)
	}
	var page api.EventPage
	e.Do("GET", "/v1/lobbies/"+lobbies[0]+"/events?after=3&limit=2&logProof=true", "", nil).Want(t, http.StatusOK).Decode(t, &page)
	if page.LogProof == nil || page.LogProof.Seq != 5 {
		t.Fatalf("page's proof %+v", page.LogProof)
	}

	// The log grows; the new checkpoint is consistent with the old one, by the API's proof and by
	// one computed from the tiles.
	l := e.CreateLobby(map[string]any{"betSize": 1, "playersCountLimit": 5})
	e.Register(l.Id.String(), e.NewPlayer("late", 10)).Want(t, http.StatusCreated)
	second := waitForLog(t, e, policy)
	var cons api.ConsistencyProof
	e.Do("GET", fmt.Sprintf("/v1/log/consistency?from=%d", first.N), "", nil).Want(t, http.StatusOK).Decode(t, &cons)
	var tp tlog.TreeProof
	for _, h := range cons.Proof {
		x, _ := tlog.ParseHash(h)
		tp = append(tp, x)
	}
	if cons.To != second.N || tlog.CheckTree(tp, second.N, second.Hash, first.N, first.Hash) != nil {
		t.Fatalf("consistency %d -> %d: %+v", first.N, second.N, cons)
	}
	own, err := tlog.ProveTree(second.N, first.N, torchwood.TileHashReaderWithContext(ctx, second.Tree, fetcher))
	if err != nil || tlog.CheckTree(own, second.N, second.Hash, first.N, first.Hash) != nil {
		t.Fatalf("consistency from the tiles: %v", err)
	}
	e.Do("GET", fmt.Sprintf("/v1/log/consistency?from=%d&to=%d", first.N, second.N+1), "", nil).WantProblem(t, http.StatusConflict, "not_logged")
	e.Do("GET", fmt.Sprintf("/v1/log/consistency?from=%d&to=%d", first.N, first.N-1), "", nil).WantProblem(t, http.StatusBadRequest, "validation_failed")
	e.Do("GET", fmt.Sprintf("/v1/log/inclusion?lobbyId=%s&seq=9999", lobbies[0]), "", nil).WantProblem(t, http.StatusNotFound, "not_found")
}

func TestTilesAreServedAsC2SPSays(t *testing.T) {
	e, policy := logEnv(t)
	l := e.CreateLobby(map[string]any{"betSize": 1, "playersCountLimit": 20})
	for j := range 6 {
		e.Register(l.Id.String(), e.NewPlayer(fmt.Sprint("p", j), 10)).Want(t, http.StatusCreated)
	}
	c := waitForLog(t, e, policy)
	get := func(path string, headers ...string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequestWithContext(context.Background(), "GET", e.URL+path, nil)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, body
	}
	resp, body := get("/log/checkpoint")
	if resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" || resp.Header.Get("Cache-Control") != "public, max-age=1" || !strings.HasPrefix(string(body), testOrigin+"\n") {
		t.Fatalf("checkpoint: %v %q", resp.Header, body)
	}
	tile := fmt.Sprintf("/log/tile/0/000.p/%d", c.N)
	resp, body = get(tile)
	if resp.StatusCode != 200 || len(body) != int(c.N)*32 || resp.Header.Get("Content-Type") != "application/octet-stream" || resp.Header.Get("Cache-Control") != "public, max-age=10" {
		t.Fatalf("%s: %d, %d bytes, %v", tile, resp.StatusCode, len(body), resp.Header)
	}
	_, narrow := get("/log/tile/0/000.p/2")
	if string(narrow) != string(body[:64]) {
		t.Fatal("a narrower partial tile is not a prefix of the wider one")
	}
	resp, bundle := get(fmt.Sprintf("/log/tile/entries/000.p/%d", c.N), "Accept-Encoding", "gzip")
	if resp.Header.Get("Content-Encoding") != "gzip" || resp.StatusCode != 200 {
		t.Fatalf("entries: %d %v", resp.StatusCode, resp.Header)
	}
	_ = bundle
	for _, path := range []string{"/log/tile/0/000", "/log/tile/0/001.p/1", fmt.Sprintf("/log/tile/0/000.p/%d", c.N+1), "/log/tile/entries/000", "/log/tile/9/x", "/log/tile/0/0000", "/log/nothing",
		// Indexes whose entries lie past int64 (issue 29: the first one answered tile 0), and a
		// level the store's smallint would have wrapped onto level 0.
		"/log/tile/entries/x072/x057/x594/x037/x927/936.p/1", "/log/tile/0/x072/x057/x594/x037/x927/936.p/1",
		"/log/tile/entries/x036/x028/x797/x018/x963/968.p/1", "/log/tile/6/001.p/1", "/log/tile/65536/000.p/1"} {
		if resp, _ := get(path); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, resp.StatusCode)
		}
	}
	// The data tiles are what the hash tiles hash.
	tiles, err := torchwood.NewTileFetcher(e.URL+"/log/", torchwood.WithHTTPClient(e.Client))
	if err != nil {
		t.Fatal(err)
	}
	data, err := tiles.ReadEndpoint(t.Context(), fmt.Sprintf("tile/entries/000.p/%d", c.N))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; len(data) > 0; i++ {
		var leaf []byte
		if leaf, data, err = torchwood.ReadTileEntry(data); err != nil {
			t.Fatal(err)
		}
		h := tlog.RecordHash(leaf)
		if hex.EncodeToString(h[:]) != hex.EncodeToString(body[i*32:(i+1)*32]) {
			t.Fatalf("entry %d does not hash to the tile's hash %d", i, i)
		}
	}
}

// TestStreamEventsCarryTheirLeaves: an event the log has carries the same leafIndex in a page
// and in a stream catching up on it (issue 29: only the page's copy had it), with follow=false
// and with a followed stream.
func TestStreamEventsCarryTheirLeaves(t *testing.T) {
	e, policy := logEnv(t)
	l := e.CreateLobby(map[string]any{"betSize": 1, "playersCountLimit": 20})
	lobby := l.Id.String()
	for j := range 3 {
		e.Register(lobby, e.NewPlayer(fmt.Sprint("p", j), 10)).Want(t, http.StatusCreated)
	}
	waitForLog(t, e, policy)
	var page api.EventPage
	e.Do("GET", "/v1/lobbies/"+lobby+"/events", "", nil).Want(t, http.StatusOK).Decode(t, &page)
	for _, query := range []string{"follow=false", ""} {
		stream := e.OpenStream(lobby, "", query)
		streamed := apitest.DecodeSSE(t, stream.Until(t, page.Next, 5*time.Second))
		stream.Close()
		if len(streamed) != len(page.Events) {
			t.Fatalf("%q: %d events streamed, %d in the page", query, len(streamed), len(page.Events))
		}
		for i, ev := range page.Events {
			if ev.LeafIndex == nil {
				t.Fatalf("the page's event %d has no leafIndex", ev.Seq)
			}
			if got := streamed[i].LeafIndex; got == nil || *got != *ev.LeafIndex {
				t.Errorf("%q: event %d streamed with leafIndex %v, the page has %d", query, ev.Seq, apitest.JSONOf(got), *ev.LeafIndex)
			}
		}
	}
}
