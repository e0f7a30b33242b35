package bot

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apitest"
	"github.com/commitreveal/rps/internal/pgtest"
	"github.com/commitreveal/rps/tournament"
)

// The bots are tested against the real API (internal/apitest) over a real Postgres.
func TestMain(m *testing.M) { pgtest.Main(m) }

// start serves the API for the bots: a 10 ms minimum stage timeout and a running clock worker,
// so that games whose players stop moving end by themselves.
func start(t *testing.T, opts ...apitest.Option) *apitest.Env {
	t.Helper()
	return apitest.Start(t, append([]apitest.Option{apitest.WithMinTimeout(10), apitest.WithClock()}, opts...)...)
}

// dropper applies every every-th request that carries an Idempotency-Key and then drops its
// response (the connection closes unanswered), as a network failure after the server committed
// would.
type dropper struct {
	next    http.Handler
	every   int64
	seen    atomic.Int64
	dropped atomic.Int64
}

func (d *dropper) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Idempotency-Key") == "" || d.seen.Add(1)%d.every != 0 {
		d.next.ServeHTTP(w, r)
		return
	}
	d.next.ServeHTTP(httptest.NewRecorder(), r)
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, "cannot drop the response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	d.dropped.Add(1)
	_ = conn.Close()
}

// ledgerOK asserts that the books balance.
func ledgerOK(t *testing.T, e *apitest.Env) api.LedgerReport {
	t.Helper()
	rep := e.Ledger()
	if !rep.Ok {
		t.Errorf("ledger invariants broken: %+v", rep)
	}
	return rep
}

// lobbies lists every lobby, as the admin sees it.
func lobbies(t *testing.T, e *apitest.Env) []api.Lobby {
	t.Helper()
	var all []api.Lobby
	path := "/v1/lobbies?limit=100"
	for {
		var page api.LobbyPage
		e.Do("GET", path, e.Admin, nil).Want(t, http.StatusOK).Decode(t, &page)
		all = append(all, page.Lobbies...)
		if page.Next == nil {
			return all
		}
		path = "/v1/lobbies?limit=100&after=" + *page.Next
	}
}

// onlyLobby is the one lobby of the server.
func onlyLobby(t *testing.T, e *apitest.Env) (api.Lobby, bool) {
	t.Helper()
	ls := lobbies(t, e)
	if len(ls) != 1 || ls[0].Game == nil {
		return api.Lobby{}, false
	}
	return ls[0], true
}

// gameOpen reports whether a game can still change (it has not finished or stopped).
func gameOpen(g *api.GameState) bool {
	return g != nil && g.Stage != api.StageFinished && g.Stage != api.StageStopped
}

func TestPlayFinishesAGame(t *testing.T) {
	for _, strat := range []string{"random", "smart", "script"} {
		t.Run(strat, func(t *testing.T) {
			e := start(t)
			var out bytes.Buffer
			err := Play(context.Background(), PlayConfig{
				Server: e.URL, AdminToken: e.Admin, Bots: 4, Strategy: strat, Seed: 3,
				Script: "rock paper\nspock # comment", Fund: 500,
				Game: GameSettings{Bet: 100, TimeoutMs: 2000, Resolution: "weighted", MaxRounds: 30}, Out: &out,
			})
			if err != nil {
				t.Fatalf("Play: %v\n%s", err, out.String())
			}
			text := out.String()
			for _, want := range []string{"round 1:", "final standings:", " 1. "} {
				if !strings.Contains(text, want) {
					t.Errorf("output lacks %q:\n%s", want, text)
				}
			}
			if strat != "script" && !strings.Contains(text, "won 400") && !strings.Contains(text, "stopped") {
				t.Errorf("no winner of the 400 pot:\n%s", text)
			}
			// Every bot's line carries its own record of the game, and the nets add up to zero.
			if n := strings.Count(text, ", net "); n != 4 {
				t.Errorf("%d bots' records in the standings, want 4:\n%s", n, text)
			}
			var total int64
			for _, line := range strings.Split(text, "\n") {
				if _, net, ok := strings.Cut(line, ", net "); ok {
					n, err := strconv.ParseInt(net, 10, 64)
					if err != nil {
						t.Fatalf("net in %q: %v", line, err)
					}
					total += n
				}
			}
			if total != 0 {
				t.Errorf("the bots' nets add up to %d, want 0:\n%s", total, text)
			}
			rep := ledgerOK(t, e)
			if rep.Escrows != 0 {
				t.Errorf("escrow left after the game: %d", rep.Escrows)
			}
			l, ok := onlyLobby(t, e)
			if !ok {
				t.Fatalf("want one lobby with a game: %+v", lobbies(t, e))
			}
			if !l.Closed || gameOpen(l.Game) {
				t.Errorf("the bots' lobby should be closed with its game over: closed=%v stage=%s", l.Closed, l.Game.Stage)
			}
			signedByTheirPlayers(t, e, l.Id.String(), 100)
		})
	}
}

// signedByTheirPlayers checks that every registration, commitment and reveal in the lobby's log
// carries its player's signature (issue 31): by a key of the player's key log, and, for a
// registration, verifying over the message rebuilt from the log (a game's bet is bet).
func signedByTheirPlayers(t *testing.T, e *apitest.Env, lobby string, bet int64) {
	t.Helper()
	keys := map[string]map[string]string{} // public keys by key id, by account
	keysOf := func(account string) map[string]string {
		if k, ok := keys[account]; ok {
			return k
		}
		var page struct {
			Keys []struct {
				KeyID     string `json:"keyId"`
				PublicKey string `json:"publicKey"`
			} `json:"keys"`
		}
		e.Do("GET", "/v1/accounts/"+account+"/keys", "", nil).Want(t, http.StatusOK).Decode(t, &page)
		keys[account] = map[string]string{}
		for _, k := range page.Keys {
			keys[account][k.KeyID] = k.PublicKey
		}
		return keys[account]
	}
	actions := map[string]tournament.ActionName{"player_registered": tournament.ActionRegister,
		"move_committed": tournament.ActionCommit, "move_revealed": tournament.ActionReveal}
	signed := 0
	for _, ev := range e.AllEvents(lobby) {
		action, ok := actions[ev.Type]
		if !ok {
			continue
		}
		var d struct {
			Player string `json:"player"`
			Auth   *struct {
				Action          tournament.ActionName `json:"action"`
				IdempotencyKey  string                `json:"idempotencyKey"`
				KeyID           string                `json:"keyId"`
				SignedAt        int64                 `json:"signedAt"`
				Signature       string                `json:"signature"`
				SealedSignature string                `json:"sealedSignature"`
			} `json:"auth"`
		}
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		if d.Auth == nil || d.Auth.Action != action {
			t.Fatalf("event %d (%s) is not signed as %s by its player: %s", ev.Seq, ev.Type, action, ev.Data)
		}
		pub, ok := keysOf(d.Player)[d.Auth.KeyID]
		if !ok {
			t.Fatalf("event %d (%s): key %s is not in player %s's key log", ev.Seq, ev.Type, d.Auth.KeyID, d.Player)
		}
		if action == tournament.ActionRegister {
			m := tournament.ActionMessage{Origin: e.Origin(), Action: action, Player: tournament.AccountID(d.Player),
				LobbyID: tournament.LobbyID(lobby), GameID: tournament.GameID(ev.GameId.String()), Payload: tournament.ActionPayload{Bet: bet},
				IdempotencyKey: d.Auth.IdempotencyKey, KeyID: d.Auth.KeyID, SignedAt: d.Auth.SignedAt}
			key, _ := hex.DecodeString(pub)
			sig, _ := hex.DecodeString(d.Auth.Signature)
			if !m.Verify(key, sig) {
				t.Fatalf("event %d: the registration's signature does not verify over %+v", ev.Seq, m)
			}
		} else if len(d.Auth.SealedSignature) != 64 {
			t.Fatalf("event %d (%s): no sealed signature: %s", ev.Seq, ev.Type, ev.Data)
		}
		signed++
	}
	if signed < 4 {
		t.Errorf("only %d signed actions in the lobby's log", signed)
	}
}

// Every third mutating response is lost after the server applied the request; the bots retry
// with the same Idempotency-Key and the game still ends with the books balanced.
func TestPlaySurvivesLostResponses(t *testing.T) {
	d := &dropper{every: 3}
	e := start(t, apitest.WithHandler(func(h http.Handler) http.Handler { d.next = h; return d }))
	var out bytes.Buffer
	err := Play(context.Background(), PlayConfig{
		Server: e.URL, AdminToken: e.Admin, Bots: 3, Strategy: "random", Seed: 9,
		Game: GameSettings{Bet: 10, TimeoutMs: 2000, Resolution: "weighted", MaxRounds: 30}, Out: &out,
	})
	if err != nil {
		t.Fatalf("Play: %v\n%s", err, out.String())
	}
	if d.dropped.Load() == 0 {
		t.Fatal("no response was dropped")
	}
	if strings.Contains(out.String(), "warning") {
		t.Errorf("retries should have hidden the lost responses:\n%s", out.String())
	}
	ledgerOK(t, e)
}

// Ctrl-C during registration: the bots leave and get their bets back.
func TestPlayInterruptedInRegistrationRefunds(t *testing.T) {
	e := start(t)
	ctx, cancel := context.WithCancel(context.Background())
	// A lobby for 10 that 3 bots cannot fill, with a long entry window.
	lobbyCtx := context.Background()
	c, err := NewClient(e.URL, ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.CreateLobby(lobbyCtx, e.Admin, "big", GameSettings{Bet: 50, TimeoutMs: 60_000}.Input(10))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var out bytes.Buffer
	go func() {
		done <- Play(ctx, PlayConfig{Server: e.URL, AdminToken: e.Admin, Lobby: l.Id.String(), Bots: 3, Strategy: "random", Out: &out})
	}()
	waitFor(t, func() bool {
		l, ok := onlyLobby(t, e)
		return ok && l.Game.Players == 3
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Play = %v, want context.Canceled\n%s", err, out.String())
	}
	rep := ledgerOK(t, e)
	if rep.Escrows != 0 || rep.PlayerBalances != 150 {
		t.Errorf("after leaving: escrows %d, balances %d; want 0 and 150", rep.Escrows, rep.PlayerBalances)
	}
}

// A load run plays and winds down whichever way its bots follow their lobbies: by one long poll
// per lobby, by every bot's own long polls, or by every bot's own event stream.
func TestLoadRunsAndWindsDown(t *testing.T) {
	for _, follow := range []Follow{FollowLobby, FollowPoll, FollowStream} {
		t.Run(string(follow), func(t *testing.T) { testLoadRunsAndWindsDown(t, follow) })
	}
}

func testLoadRunsAndWindsDown(t *testing.T, follow Follow) {
	e := start(t)
	var out bytes.Buffer
	const nLobbies, nPlayers = 3, 4
	// The measured window opens once, before the play, and closes once.
	var window []bool
	rep, err := Load(context.Background(), LoadConfig{
		Server: e.URL, AdminToken: e.Admin, Lobbies: nLobbies, Players: nPlayers, Duration: 2500 * time.Millisecond,
		// Stages long enough for a round to be played on a loaded machine (an action can take 200
		// ms there; with 40 ms stages no reveal came in time), short enough for skipped commits to
		// let several expire within the run.
		Concurrency: 4, Game: GameSettings{Bet: 10, TimeoutMs: 300, Resolution: "weighted", MaxRounds: 10},
		Strategy: "smart", Seed: 1, Skip: 0.25, Grace: 200 * time.Millisecond, Progress: 300 * time.Millisecond,
		Follow: follow, Window: func(begins bool) { window = append(window, begins) }, Out: &out,
	})
	if err != nil {
		t.Fatalf("Load: %v\n%s", err, out.String())
	}
	rep.Print(&out)
	if rep.Actions.Count == 0 || rep.Op(OpCommit).Count == 0 || rep.Op(OpReveal).Count == 0 {
		t.Errorf("no actions measured:\n%s", out.String())
	}
	if fmt.Sprint(window) != "[true false]" {
		t.Errorf("measured window %v, want it opened and closed once: [true false]", window)
	}
	// Following by stream, every bot opened a stream of its own (and nothing polled but each
	// runner's read of the log before it follows it); by poll, every bot polled.
	switch streams, polls := rep.Op(OpStream).Count, rep.Op(OpEvents).Count; follow {
	case FollowStream:
		if streams < nLobbies*nPlayers || polls > nLobbies {
			t.Errorf("%d streams opened and %d polls, want at least %d streams and no long poll:\n%s", streams, polls, nLobbies*nPlayers, out.String())
		}
	case FollowPoll:
		if streams != 0 || polls < nLobbies*nPlayers {
			t.Errorf("%d streams opened and %d polls, want no stream and at least %d polls:\n%s", streams, polls, nLobbies*nPlayers, out.String())
		}
	}
	if rep.Lag.Count == 0 {
		t.Errorf("skipped commits should have let stages expire and be measured:\n%s", out.String())
	}
	if rep.LedgerOK == nil || !*rep.LedgerOK || rep.Server5xx != 0 {
		t.Errorf("ledger %v, 5xx %d", rep.LedgerOK, rep.Server5xx)
	}
	if !strings.Contains(out.String(), "t=") {
		t.Errorf("no progress line:\n%s", out.String())
	}
	if ledgerOK(t, e).Escrows != 0 {
		t.Error("money left in escrow after the load run")
	}
	for _, l := range lobbies(t, e) {
		if !l.Closed || (gameOpen(l.Game) && l.Game.Players > 0) {
			t.Errorf("lobby %s: closed=%v, game %+v", l.Id, l.Closed, l.Game)
		}
	}
}

func TestCheckLoopback(t *testing.T) {
	for _, ok := range []string{"http://127.0.0.1:8080", "http://localhost:1", "http://[::1]:80", "http://127.3.2.1"} {
		if err := CheckLoopback(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"http://10.0.0.1:8080", "https://example.com", "http://0.0.0.0:8080"} {
		if err := CheckLoopback(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestSummarize(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	s := summarize(ds)
	if s.P50 != 50*time.Millisecond || s.P90 != 90*time.Millisecond || s.P99 != 99*time.Millisecond || s.Max != 100*time.Millisecond {
		t.Errorf("summarize = %+v", s)
	}
	if summarize(nil).Count != 0 {
		t.Error("empty summary")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
