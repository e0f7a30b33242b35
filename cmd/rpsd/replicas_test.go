package main

// Several rpsd replicas on one database, as behind a load balancer: bots act each through one
// replica, live followers read every lobby through every replica, idempotent retries land on
// another replica, and the clock workers of all three race for the same deadlines.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/blake2b"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/cmd/rpsbot/bot"
	"github.com/commitreveal/rps/internal/apitest"
	"github.com/commitreveal/rps/internal/pgtest"
	"github.com/commitreveal/rps/tournament"
)

// replicaEnv is the environment of replicas sharing databaseURL, with every rate limit off unless
// extra sets one.
func replicaEnv(databaseURL string, extra map[string]string) map[string]string {
	env := map[string]string{
		"DATABASE_URL": databaseURL, "RPSD_ADMIN_TOKEN": adminToken, "RPSD_MIN_TIMEOUT_MS": "200",
		"RPSD_ACCOUNT_RATE": "0", "RPSD_IP_RATE": "0", "RPSD_SIGNUP_RATE": "0",
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// startReplicas starts n rpsd processes on one database.
func startReplicas(t *testing.T, n int, env map[string]string) []*server {
	t.Helper()
	replicas := make([]*server, n)
	for i := range replicas {
		replicas[i] = startServer(t, fmt.Sprintf("replica %d", i), env)
	}
	return replicas
}

// chainEvent is a served event, with when a follower read it.
type chainEvent struct {
	api.Event
	received time.Time
}

// gameOf is the event's game id, "" for a lobby-level event.
func (e chainEvent) gameOf() string {
	if e.GameId == nil {
		return ""
	}
	return e.GameId.String()
}

// wholeLog reads a lobby's whole log through s, page by page.
func (s *server) wholeLog(lobby string) []chainEvent {
	s.t.Helper()
	var all []chainEvent
	for {
		var page struct {
			Events []chainEvent `json:"events"`
		}
		s.must(http.StatusOK, "GET", fmt.Sprintf("/v1/lobbies/%s/events?after=%d&limit=1000", lobby, len(all)), "", nil, &page)
		all = append(all, page.Events...)
		if len(page.Events) < 1000 {
			return all
		}
	}
}

// verifyLog checks that a lobby's log numbers its events 1, 2, 3... and that every hash is the
// chain's.
func verifyLog(t *testing.T, events []chainEvent) {
	t.Helper()
	served := make([]api.Event, len(events))
	for i, e := range events {
		served[i] = e.Event
	}
	apitest.VerifyChain(t, served, 1, "")
}

// stageChangesOnce checks that every stage change of a lobby's log happened exactly once: a game
// opens once and ends at most once, and a round starts, closes its moves and resolves at most once
// each. It returns how many stages ended at their deadline (by the clock) rather than by an action.
func stageChangesOnce(t *testing.T, events []chainEvent) (byClock int) {
	t.Helper()
	seen := map[string]int{}
	deadline := map[string]int64{} // the deadline of the stage a key opened
	for _, e := range events {
		var d struct {
			Round    int   `json:"round"`
			Deadline int64 `json:"deadline"`
		}
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatalf("event %d data %s: %v", e.Seq, e.Data, err)
		}
		game := e.gameOf()
		at := atMillis(t, e.At)
		var key string
		switch e.Type {
		case "game_opened":
			key = "opened " + game
		case "game_finished", "game_stopped":
			key = "ended " + game
		case "round_started":
			key = fmt.Sprintf("round %s %d", game, d.Round)
			deadline[fmt.Sprintf("moves %s %d", game, d.Round)] = d.Deadline
		case "moves_closed":
			key = fmt.Sprintf("moves %s %d", game, d.Round)
			deadline[fmt.Sprintf("reveal %s %d", game, d.Round)] = d.Deadline
		case "round_resolved":
			key = fmt.Sprintf("reveal %s %d", game, d.Round)
		default:
			continue
		}
		seen[key]++
		if seen[key] > 1 {
			t.Errorf("lobby %s: stage change %q happened %d times (event %d)", e.LobbyId, key, seen[key], e.Seq)
		}
		if due, ok := deadline[key]; ok && due == at {
			byClock++
		}
	}
	return byClock
}

// follow reads a lobby's live event stream from s into the returned channel until ctx ends,
// resuming with Last-Event-ID whenever the stream breaks (as a browser's EventSource does).
func follow(ctx context.Context, s *server, lobby string) <-chan chainEvent {
	out := make(chan chainEvent, 1024)
	go func() {
		defer close(out)
		var last int64
		for ctx.Err() == nil {
			last = streamOnce(ctx, s.URL, lobby, last, out)
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return out
}

// streamOnce reads one connection of the stream after seq last and returns the last seq read.
func streamOnce(ctx context.Context, base, lobby string, last int64, out chan<- chainEvent) int64 {
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/v1/lobbies/"+lobby+"/events/stream", nil)
	if err != nil {
		return last
	}
	req.Header.Set("Last-Event-ID", fmt.Sprint(last))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return last
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return last
	}
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	hasID := false // the message has an id: an event (signed heads come without)
	for lines.Scan() {
		line := lines.Text()
		if line == "" || strings.HasPrefix(line, "id: ") {
			hasID = line != ""
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || !hasID {
			continue
		}
		var e chainEvent
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			return last
		}
		e.received = time.Now()
		select {
		case out <- e:
			last = e.Seq
		case <-ctx.Done():
			return last
		}
	}
	return last
}

// collect drains a follower until it has delivered through seq last, or the timeout passes.
func collect(in <-chan chainEvent, last int64, timeout time.Duration) []chainEvent {
	var got []chainEvent
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for len(got) == 0 || got[len(got)-1].Seq < last {
		select {
		case e, ok := <-in:
			if !ok {
				return got
			}
			got = append(got, e)
		case <-timer.C:
			return got
		}
	}
	return got
}

func TestThreeReplicas(t *testing.T) {
	start := time.Now()
	replicas := startReplicas(t, 3, replicaEnv(pgtest.NewURL(t), nil))
	t.Logf("3 replicas ready in %v", time.Since(start).Round(time.Millisecond))
	retriesReplayOnAnotherReplica(t, replicas)

	const lobbies, seatsPerLobby, games = 6, 3, 6
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	stats := bot.NewStats()
	clients := make([]*bot.Client, len(replicas))
	for i, r := range replicas {
		c, err := bot.NewClient(r.URL, bot.ClientOptions{Stats: stats, Conns: lobbies * seatsPerLobby})
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = c
	}
	pool := bot.NewPool(lobbies * seatsPerLobby)
	defer pool.Close()
	accounts, err := bot.CreateAccounts(ctx, clients[0], pool, adminToken, lobbies*seatsPerLobby, "replica-bot", 1_000_000, nil)
	if err != nil {
		t.Fatal(err)
	}
	settings := bot.GameSettings{Bet: 10, TimeoutMs: 300, MaxRounds: 5}
	ids := make([]string, lobbies)
	followers := make([][]<-chan chainEvent, lobbies)
	followCtx, stopFollowing := context.WithCancel(ctx)
	defer stopFollowing()
	for l := range ids {
		lobby, err := clients[l%len(clients)].CreateLobby(ctx, adminToken, fmt.Sprintf("replicas %d", l), settings.Input(seatsPerLobby))
		if err != nil {
			t.Fatal(err)
		}
		ids[l] = lobby.Id.String()
		for _, r := range replicas {
			followers[l] = append(followers[l], follow(followCtx, r, ids[l]))
		}
	}

	played := time.Now()
	var wg sync.WaitGroup
	for l, lobby := range ids {
		seats, err := bot.NewSeats(accounts[l*seatsPerLobby:(l+1)*seatsPerLobby], "random", uint64(100*l), nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range seats {
			// Each bot acts through one replica; the lobby is followed through another.
			s.Client = clients[(l+i)%len(clients)]
		}
		runner := bot.NewRunner(bot.RunnerOptions{
			Client: clients[(l+seatsPerLobby)%len(clients)], Pool: pool, Lobby: lobby, Seats: seats, Games: games,
			Skip: 0.25, Seed: uint64(l), Wait: 2 * time.Second,
			Logf: func(format string, args ...any) { t.Logf("lobby %d: "+format, append([]any{l}, args...)...) },
		})
		wg.Go(func() {
			if err := runner.Run(ctx, ctx); err != nil {
				t.Errorf("lobby %d: %v", l, err)
			}
		})
	}
	wg.Wait()
	playTime := time.Since(played)

	var total, delivered, byClock, gamesPlayed int
	for l, lobby := range ids {
		log := replicas[l%len(replicas)].wholeLog(lobby)
		verifyLog(t, log)
		byClock += stageChangesOnce(t, log)
		total += len(log)
		for _, e := range log {
			if e.Type == "game_finished" || e.Type == "game_stopped" {
				gamesPlayed++
			}
		}
		for i, f := range followers[l] {
			got := collect(f, int64(len(log)), 10*time.Second)
			delivered += len(got)
			if len(got) != len(log) {
				t.Errorf("lobby %d: the follower on replica %d got %d of %d events", l, i, len(got), len(log))
				continue
			}
			for j := range got {
				if got[j].Seq != log[j].Seq || got[j].Hash != log[j].Hash {
					t.Errorf("lobby %d: the follower on replica %d got event %d (%s) at position %d, the log has %d (%s)",
						l, i, got[j].Seq, got[j].Hash, j, log[j].Seq, log[j].Hash)
					break
				}
			}
		}
	}
	stopFollowing()
	for _, r := range replicas {
		r.ledgerOK()
	}
	if byClock == 0 {
		t.Error("no stage ended by its deadline: the clock workers were not exercised")
	}
	if n := stats.Server5xx(); n > 0 {
		t.Errorf("%d answers with a 5xx status", n)
	}
	t.Logf("%d lobbies, %d games in %v; %d events, %d delivered live to %d followers (one per lobby and replica); %d stages ended by the clock",
		lobbies, gamesPlayed, playTime.Round(time.Millisecond), total, delivered, lobbies*len(replicas), byClock)
	for i, r := range replicas {
		t.Logf("replica %d applied %s deadlines", i, metricValue(t, r, "rps_clock_expiries_total"))
	}
}

// metricValue is the sum of a counter's samples on s's /metrics.
func metricValue(t *testing.T, s *server, name string) string {
	t.Helper()
	res, err := http.Get(s.metricsURL)
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	raw, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("metrics: %d %v", res.StatusCode, err)
	}
	var sum float64
	found := false
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, name); ok && (strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, "{")) {
			var v float64
			if _, err := fmt.Sscan(rest[strings.LastIndexByte(rest, ' ')+1:], &v); err == nil {
				sum += v
				found = true
			}
		}
	}
	if !found {
		return "?"
	}
	return fmt.Sprint(sum)
}

// retriesReplayOnAnotherReplica sends each action with an Idempotency-Key to one replica and its
// retries to the others: the retries replay the first answer and change nothing.
func retriesReplayOnAnotherReplica(t *testing.T, r []*server) {
	t.Helper()
	alice, bob := r[0].newPlayer("alice", 1000), r[1].newPlayer("bob", 1000)
	lobby := r[2].createLobby("retries", map[string]any{"betSize": 100, "playersCountLimit": 2})
	replayed := func(first sent, retry sent, what string) {
		t.Helper()
		if retry.status != first.status || !bytes.Equal(retry.body, first.body) || retry.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("%s: retry got %d %s (replayed %q), the first answer was %d %s", what,
				retry.status, retry.body, retry.header.Get("Idempotent-Replayed"), first.status, first.body)
		}
	}
	// Each retry carries the first attempt's signature, as a client retrying a request does.
	players := "/v1/lobbies/" + lobby + "/players"
	sig := r[0].signed(lobby, alice, "alice-joins", tournament.ActionRegister, tournament.ActionPayload{})
	first := r[0].send("POST", players, alice.Token, "alice-joins", nil, sig...)
	if first.status != http.StatusCreated {
		t.Fatalf("register: %d %s", first.status, first.body)
	}
	replayed(first, r[1].send("POST", players, alice.Token, "alice-joins", nil, sig...), "register retried on replica 1")
	replayed(first, r[2].send("POST", players, alice.Token, "alice-joins", nil, sig...), "register retried on replica 2")
	for _, s := range r {
		if b := s.balance(alice); b != 900 {
			t.Fatalf("alice's balance on %s is %d after one registration of 100, want 900", s.name, b)
		}
	}
	r[1].register(lobby, bob)

	sum := blake2b.Sum256([]byte("0alice-secret"))
	commit := map[string]any{"commitment": hex.EncodeToString(sum[:])}
	commitments := "/v1/lobbies/" + lobby + "/commitments"
	sig = r[2].signed(lobby, alice, "alice-commits", tournament.ActionCommit, tournament.ActionPayload{Commitment: commit["commitment"].(string)})
	first = r[2].send("POST", commitments, alice.Token, "alice-commits", commit, sig...)
	if first.status != http.StatusOK {
		t.Fatalf("commit: %d %s", first.status, first.body)
	}
	replayed(first, r[0].send("POST", commitments, alice.Token, "alice-commits", commit, sig...), "commit retried on replica 0")
	other := blake2b.Sum256([]byte("1alice-secret"))
	otherSig := r[1].signed(lobby, alice, "alice-commits", tournament.ActionCommit, tournament.ActionPayload{Commitment: hex.EncodeToString(other[:])})
	if got := r[1].send("POST", commitments, alice.Token, "alice-commits", map[string]any{"commitment": hex.EncodeToString(other[:])}, otherSig...); got.status != http.StatusConflict ||
		!strings.Contains(string(got.body), `"idempotency_conflict"`) {
		t.Fatalf("the key reused with another body on replica 1: %d %s, want 409 idempotency_conflict", got.status, got.body)
	}
	r[0].commit(lobby, bob, "2bob-secret")
	r[1].reveal(lobby, alice, "0alice-secret")
	r[2].reveal(lobby, bob, "2bob-secret")
	for _, s := range r {
		if a, b := s.balance(alice), s.balance(bob); a != 1100 || b != 900 {
			t.Fatalf("balances on %s: alice %d, bob %d; want 1100 and 900", s.name, a, b)
		}
	}
}
