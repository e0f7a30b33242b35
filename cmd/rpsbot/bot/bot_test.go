package bot

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestPlayFinishesAGame(t *testing.T) {
	for _, strat := range []string{"random", "smart", "script"} {
		t.Run(strat, func(t *testing.T) {
			f := newFakeServer(t)
			var out bytes.Buffer
			err := Play(context.Background(), PlayConfig{
				Server: f.srv.URL, AdminToken: f.admin, Bots: 4, Strategy: strat, Seed: 3,
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
			rep := f.ledgerOK(t)
			if rep.Escrows != 0 {
				t.Errorf("escrow left after the game: %d", rep.Escrows)
			}
			l, g, err := f.onlyLobby()
			if err != nil {
				t.Fatal(err)
			}
			if !l.Closed || g.Stage.Open() {
				t.Errorf("the bots' lobby should be closed with its game over: closed=%v stage=%s", l.Closed, g.Stage)
			}
		})
	}
}

// Every third mutating response is lost after the server applied the request; the bots retry
// with the same Idempotency-Key and the game still ends with the books balanced.
func TestPlaySurvivesLostResponses(t *testing.T) {
	f := newFakeServer(t)
	f.dropEvery = 3
	var out bytes.Buffer
	err := Play(context.Background(), PlayConfig{
		Server: f.srv.URL, AdminToken: f.admin, Bots: 3, Strategy: "random", Seed: 9,
		Game: GameSettings{Bet: 10, TimeoutMs: 2000, Resolution: "weighted", MaxRounds: 30}, Out: &out,
	})
	if err != nil {
		t.Fatalf("Play: %v\n%s", err, out.String())
	}
	if f.dropped.Load() == 0 {
		t.Fatal("no response was dropped")
	}
	if strings.Contains(out.String(), "warning") {
		t.Errorf("retries should have hidden the lost responses:\n%s", out.String())
	}
	f.ledgerOK(t)
}

// Ctrl-C during registration: the bots leave and get their bets back.
func TestPlayInterruptedInRegistrationRefunds(t *testing.T) {
	f := newFakeServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	// A lobby for 10 that 3 bots cannot fill, with a long entry window.
	lobbyCtx := context.Background()
	c, err := NewClient(f.srv.URL, ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.CreateLobby(lobbyCtx, f.admin, "big", GameSettings{Bet: 50, TimeoutMs: 60_000}.Input(10))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var out bytes.Buffer
	go func() {
		done <- Play(ctx, PlayConfig{Server: f.srv.URL, AdminToken: f.admin, Lobby: l.Id.String(), Bots: 3, Strategy: "random", Out: &out})
	}()
	waitFor(t, func() bool {
		_, g, err := f.onlyLobby()
		return err == nil && g.Players == 3
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Play = %v, want context.Canceled\n%s", err, out.String())
	}
	rep := f.ledgerOK(t)
	if rep.Escrows != 0 || rep.PlayerBalances != 150 {
		t.Errorf("after leaving: escrows %d, balances %d; want 0 and 150", rep.Escrows, rep.PlayerBalances)
	}
}

func TestLoadRunsAndWindsDown(t *testing.T) {
	f := newFakeServer(t)
	var out bytes.Buffer
	rep, err := Load(context.Background(), LoadConfig{
		Server: f.srv.URL, AdminToken: f.admin, Lobbies: 3, Players: 4, Duration: 700 * time.Millisecond,
		Concurrency: 4, Game: GameSettings{Bet: 10, TimeoutMs: 40, Resolution: "weighted", MaxRounds: 10},
		Strategy: "smart", Seed: 1, Skip: 0.25, Grace: 200 * time.Millisecond, Progress: 300 * time.Millisecond, Out: &out,
	})
	if err != nil {
		t.Fatalf("Load: %v\n%s", err, out.String())
	}
	rep.Print(&out)
	if rep.Actions.Count == 0 || rep.Op(OpCommit).Count == 0 || rep.Op(OpReveal).Count == 0 {
		t.Errorf("no actions measured:\n%s", out.String())
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
	if f.ledgerOK(t).Escrows != 0 {
		t.Error("money left in escrow after the load run")
	}
	for _, id := range f.lobbyIDs() {
		l, _ := f.store.Lobby(context.Background(), id)
		g, _ := f.store.Game(context.Background(), l.GameID)
		if !l.Closed || (g.Stage.Open() && g.Players > 0) {
			t.Errorf("lobby %s: closed=%v, game %s with %d players", id, l.Closed, g.Stage, g.Players)
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
