package main

// PostgreSQL failover mid-game: two rpsd replicas on a pg_auto_failover formation (a monitor, a
// primary and a synchronous secondary, scripts/ha/formation.sh), bots playing several lobbies,
// the primary SIGKILLed, the secondary promoted, play going on. Nothing acknowledged may be lost,
// nothing may be answered wrongly, and nobody may be eliminated because of the failover: the
// deadlines that fell due meanwhile move by the gap.

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/blake2b"

	"github.com/commitreveal/rps/internal/ha"
	"github.com/commitreveal/rps/tournament"
)

// formation runs formation.sh with args and returns its standard output.
func formation(t *testing.T, args ...string) string {
	t.Helper()
	out, err := ha.Formation(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// haAvailable tells whether pg_auto_failover is installed; make test and make test-ha install
// it, and RPSD_TEST_HA=1 makes its absence a failure rather than a skip.
func haAvailable(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("pg_autoctl"); err == nil {
		return
	}
	if os.Getenv("RPSD_TEST_HA") != "" {
		t.Fatal("pg_autoctl is missing: run scripts/ha/ensure-auto-failover.sh")
	}
	t.Skip("pg_auto_failover is not installed (make test-ha installs it)")
}

// answer classes of the bots' calls.
const (
	answerOK      = "2xx"
	answer503     = "503 unavailable"
	answerNetwork = "connection error"
)

// haBot is a player acting through one replica, retrying each action with its Idempotency-Key
// through an outage, as a phone on a bad network would.
type haBot struct {
	name   string
	server *server
	player player
	secret map[string]string // by game id and round
}

// ack is an action the server acknowledged with a 2xx. Those acknowledged before the kill
// command returned count as before the kill.
type ack struct {
	kind, lobby, game, player string
	round                     int
	at                        time.Time
}

// haRun is what the bots saw.
type haRun struct {
	mu        sync.Mutex
	acks      []ack
	answers   map[string]int
	wrong     []string
	killedAt  time.Time
	firstBack time.Time // the first action acknowledged after the kill
}

func (h *haRun) count(class string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.answers[class]++
}

// lobbyView is the part of a lobby the bots read.
type lobbyView struct {
	Config struct {
		BetSize int64 `json:"betSize"`
	} `json:"config"`
	Game struct {
		ID         string `json:"id"`
		Stage      string `json:"stage"`
		Round      int    `json:"round"`
		DeadlineMs *int64 `json:"deadlineMs"`
		You        *struct {
			Registered bool `json:"registered"`
			InGame     bool `json:"inGame"`
			Committed  bool `json:"committed"`
			Revealed   bool `json:"revealed"`
		} `json:"you"`
	} `json:"game"`
}

// do sends one request and classifies the answer: 2xx, 503 unavailable, a connection error, or
// another status with its problem code.
func (b *haBot) do(ctx context.Context, method, path, key string, body any, headers ...string) (class string, status int, raw []byte) {
	var r io.Reader
	if body != nil {
		enc, _ := json.Marshal(body)
		r = bytes.NewReader(enc)
	}
	req, err := http.NewRequestWithContext(ctx, method, b.server.URL+path, r)
	if err != nil {
		return answerNetwork, 0, nil
	}
	req.Header.Set("Authorization", "Bearer "+b.player.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return answerNetwork, 0, nil
	}
	defer resp.Body.Close()
	raw, err = io.ReadAll(resp.Body)
	switch {
	case err != nil:
		return answerNetwork, resp.StatusCode, nil
	case resp.StatusCode < 300:
		return answerOK, resp.StatusCode, raw
	case resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(raw), `"unavailable"`):
		return answer503, resp.StatusCode, raw
	}
	var problem struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(raw, &problem)
	return fmt.Sprintf("%d %s", resp.StatusCode, problem.Code), resp.StatusCode, raw
}

// act sends an action, signed by the bot's player for the game and round of the state it acted
// on, with a fresh key and retries it with the same key and signature through 503s and
// connection errors. It returns the lobby the 2xx answered with, or ok false after a refusal.
// The action is recorded in game and round: the answer shows the lobby after the action, which
// may be the next round or game already.
func (b *haBot) act(ctx context.Context, run *haRun, kind tournament.ActionName, lobby, game string, round int, path string,
	payload tournament.ActionPayload, body any) (lobbyView, bool) {
	key := fmt.Sprintf("%s-%s-%d", b.name, kind, rand.Uint64())
	m := tournament.ActionMessage{Action: kind, Player: tournament.AccountID(b.player.ID), LobbyID: tournament.LobbyID(lobby),
		GameID: tournament.GameID(game), Payload: payload, IdempotencyKey: key}
	if kind == tournament.ActionCommit || kind == tournament.ActionReveal {
		m.Round = round
	}
	sig := b.server.sign(b.player.Key, m)
	retried := false
	for ctx.Err() == nil {
		sentAt := time.Now()
		class, _, raw := b.do(ctx, "POST", path, key, body, sig...)
		run.count(class)
		switch class {
		case answerOK:
			var l lobbyView
			if err := json.Unmarshal(raw, &l); err != nil {
				run.mu.Lock()
				run.wrong = append(run.wrong, fmt.Sprintf("%s %s: undecodable 2xx %s", b.name, kind, raw))
				run.mu.Unlock()
				return l, false
			}
			now := time.Now()
			run.mu.Lock()
			run.acks = append(run.acks, ack{kind: string(kind), lobby: lobby, game: game, player: b.player.ID, round: round, at: now})
			if !run.killedAt.IsZero() && sentAt.After(run.killedAt) && run.firstBack.IsZero() {
				run.firstBack = now
			}
			run.mu.Unlock()
			return l, true
		case answer503, answerNetwork:
			retried = true
			time.Sleep(100 * time.Millisecond)
			continue
		case "409 wrong_stage", "409 not_in_game", "409 stale_signature":
			// The clock closed the stage (or eliminated the bot, or the game or round the bot
			// signed for ended) between the bot's read and its action: a right answer, also for a
			// retry after an outage.
			return lobbyView{}, false
		}
		run.mu.Lock()
		run.wrong = append(run.wrong, fmt.Sprintf("%s %s (retried after an outage: %v): %s %s", b.name, kind, retried, class, raw))
		run.mu.Unlock()
		return lobbyView{}, false
	}
	return lobbyView{}, false
}

// play acts in the lobby until ctx ends: it reads the lobby as its player and does what is due,
// letting a moves stage pass now and then so that stages also end by the clock.
func (b *haBot) play(ctx context.Context, run *haRun, lobby string, rng *rand.Rand) {
	base := "/v1/lobbies/" + lobby
	for ctx.Err() == nil {
		class, _, raw := b.do(ctx, "GET", base, "", nil)
		run.count(class)
		if class != answerOK {
			if class != answer503 && class != answerNetwork && ctx.Err() == nil {
				run.mu.Lock()
				run.wrong = append(run.wrong, fmt.Sprintf("%s read the lobby: %s %s", b.name, class, raw))
				run.mu.Unlock()
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		var l lobbyView
		if err := json.Unmarshal(raw, &l); err != nil || l.Game.You == nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		g, you := l.Game, l.Game.You
		round := fmt.Sprintf("%s/%d", g.ID, g.Round)
		switch {
		case g.Stage == "registration" && !you.Registered:
			b.act(ctx, run, tournament.ActionRegister, lobby, g.ID, g.Round, base+"/players", tournament.ActionPayload{Bet: l.Config.BetSize}, nil)
		case g.Stage == "moves" && you.InGame && !you.Committed && b.secret[round] == "":
			if rng.IntN(5) == 0 {
				b.secret[round] = "skip"
				continue
			}
			secret := fmt.Sprintf("%d%s-%d", rng.IntN(5), b.name, rng.Uint64())
			b.secret[round] = secret
			sum := blake2b.Sum256([]byte(secret))
			c := hex.EncodeToString(sum[:])
			b.act(ctx, run, tournament.ActionCommit, lobby, g.ID, g.Round, base+"/commitments", tournament.ActionPayload{Commitment: c}, map[string]any{"commitment": c})
		case g.Stage == "reveal" && you.Committed && !you.Revealed && b.secret[round] != "" && b.secret[round] != "skip":
			b.act(ctx, run, tournament.ActionReveal, lobby, g.ID, g.Round, base+"/reveals", tournament.ActionPayload{Reveal: b.secret[round]},
				map[string]any{"reveal": b.secret[round]})
		default:
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func TestFailover(t *testing.T) {
	haAvailable(t)
	began := time.Now()
	dir, err := os.MkdirTemp("", "rpsd-ha-")
	if err != nil {
		t.Fatal(err)
	}
	// The formation is stopped (every process by PID) and its folder removed at the end of the
	// test, and by a watchdog if this process dies first.
	t.Cleanup(func() { formation(t, "down", dir) })
	if err := ha.DownAtExit(dir); err != nil {
		t.Fatal(err)
	}
	databaseURL := formation(t, "up", dir)
	formed := time.Since(began)

	env := replicaEnv(databaseURL, nil)
	replicas := startReplicas(t, 2, env)
	const lobbies = 4
	var bots []*haBot
	var ids []string
	for l := range lobbies {
		ids = append(ids, replicas[0].createLobby(fmt.Sprintf("failover %d", l), map[string]any{
			"betSize": 10, "playersCountLimit": 2, "entryTimeoutMs": 1000, "moveTimeoutMs": 1000, "revealTimeoutMs": 1000,
		}))
		for i := range 2 {
			name := fmt.Sprintf("bot-%d-%d", l, i)
			r := replicas[(l+i)%len(replicas)]
			bots = append(bots, &haBot{name: name, server: r, player: r.newPlayer(name, 100_000), secret: map[string]string{}})
		}
	}

	run := &haRun{answers: map[string]int{}}
	ctx, stopBots := context.WithCancel(context.Background())
	defer stopBots()
	// A live follower per lobby, on the replica its first bot does not use, across the failover.
	followCtx, stopFollowing := context.WithCancel(context.Background())
	defer stopFollowing()
	followers := make([]<-chan chainEvent, lobbies)
	for l, id := range ids {
		followers[l] = follow(followCtx, replicas[(l+1)%len(replicas)], id)
	}
	var wg sync.WaitGroup
	for i, b := range bots {
		rng := rand.New(rand.NewPCG(uint64(i), 16))
		wg.Go(func() { b.play(ctx, run, ids[i/2], rng) })
	}
	time.Sleep(3 * time.Second) // play before the kill

	primary := formation(t, "primary", dir)
	beforeKill := time.Now()
	formation(t, "kill", dir, primary)
	run.mu.Lock()
	run.killedAt = time.Now()
	ackedBefore := len(run.acks)
	run.mu.Unlock()
	t.Logf("SIGKILLed the primary %s with %d actions acknowledged", primary, ackedBefore)

	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		run.mu.Lock()
		back := !run.firstBack.IsZero()
		run.mu.Unlock()
		if back {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no action succeeded within 2 minutes of the kill")
		}
	}
	time.Sleep(3 * time.Second) // play after the failover
	stopBots()
	wg.Wait()
	if now := formation(t, "primary", dir); now == primary || now == "" {
		t.Errorf("the primary is %q after the failover, want the other node than %s", now, primary)
	}

	killMs, backMs := run.killedAt.UnixMilli(), run.firstBack.UnixMilli()
	logs := map[string][]chainEvent{}
	for _, id := range ids {
		logs[id] = replicas[0].wholeLog(id)
		verifyLog(t, logs[id])
		stageChangesOnce(t, logs[id])
	}
	for _, r := range replicas {
		r.ledgerOK()
	}
	// The followers got every event in order; those written a second after the failover came
	// within moments, woken by the notification listener that reconnected to the new primary
	// (without it they wait for the stream's next 15 s heartbeat: seconds late in this window).
	var lag time.Duration
	for l, id := range ids {
		got := collect(followers[l], int64(len(logs[id])), 20*time.Second)
		if len(got) != len(logs[id]) {
			t.Errorf("lobby %s: the follower got %d of %d events", id, len(got), len(logs[id]))
			continue
		}
		for j, e := range got {
			if e.Seq != logs[id][j].Seq || e.Hash != logs[id][j].Hash {
				t.Errorf("lobby %s: the follower got event %d at position %d, the log has %d", id, e.Seq, j, logs[id][j].Seq)
				break
			}
			if at := atMillis(t, e.At); at > backMs+1000 {
				lag = max(lag, e.received.Sub(time.UnixMilli(at)))
			}
		}
	}
	stopFollowing()
	if lag > time.Second {
		t.Errorf("events after the failover reached a follower up to %v late: the notification listener did not reconnect", lag)
	}
	lost := acknowledgedButLost(t, run.acks, logs)
	for _, a := range lost {
		t.Errorf("%s by %s in game %s round %d was acknowledged at %v (%v after the kill) but is not in the log",
			a.kind, a.player, a.game, a.round, a.at.Format("15:04:05.000"), a.at.Sub(run.killedAt))
	}
	for _, w := range run.wrong {
		t.Errorf("wrong answer: %s", w)
	}
	// The database was out of every replica's reach for longer than the outage threshold (5 s by
	// default; a failover takes 8-11 s here): the first replica to reach the new primary shifted
	// every open deadline by the gap, once, before any deadline that fell due meanwhile was applied.
	shiftAt, gap := failoverShift(t, logs, killMs)
	t.Logf("the last beat before the kill %d ms before it; first action acknowledged after it %d ms after it; the clock shifted %d ms after it",
		killMs-(shiftAt-gap), backMs-killMs, shiftAt-killMs)
	// Replicas beat every second; two allow for a loaded machine.
	if lastBeat := shiftAt - gap; lastBeat > killMs || lastBeat < beforeKill.UnixMilli()-2000 {
		t.Errorf("clock_shifted at %d by %d ms: the last heartbeat it saw, at %d, is not within 2 s before the kill (%d-%d)",
			shiftAt, gap, lastBeat, beforeKill.UnixMilli(), killMs)
	}
	if shiftAt > backMs {
		t.Errorf("the clock shifted at %d, after the first action acknowledged after the kill at %d", shiftAt, backMs)
	}
	due := 0
	for _, id := range ids {
		due += notEliminatedByFailover(t, logs[id], killMs, shiftAt)
		if n := playedAfter(logs[id], backMs); n == 0 {
			t.Errorf("lobby %s: no event after the failover; play did not go on", id)
		}
	}
	if due == 0 {
		t.Error("no lobby had a stage whose deadline fell due during the failover: the kill tested nothing")
	}
	t.Logf("formation up in %v; kill to first successful action %v; %d actions acknowledged (%d before the kill), answers %v; "+
		"clock shifted by %d ms, %d ms after the kill, in every lobby; %d deadlines fell due during the failover and moved; "+
		"live events after it reached followers within %v; whole test %v",
		formed.Round(100*time.Millisecond), run.firstBack.Sub(run.killedAt).Round(10*time.Millisecond), len(run.acks), ackedBefore,
		run.answers, gap, shiftAt-killMs, due, lag.Round(time.Millisecond), time.Since(began).Round(100*time.Millisecond))
}

// failoverShift finds the clock_shifted events written after the kill: one in every lobby that
// has any (a lobby whose game had no deadline open has none), all of the one shift (the same
// instant and gap), and none before the kill. It returns that shift's instant and gap.
func failoverShift(t *testing.T, logs map[string][]chainEvent, killMs int64) (at, gap int64) {
	t.Helper()
	for id, events := range logs {
		n := 0
		for _, e := range events {
			if e.Type != "clock_shifted" {
				continue
			}
			var d struct {
				GapMs int64 `json:"gapMs"`
			}
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			n++
			eAt := atMillis(t, e.At)
			switch {
			case eAt < killMs:
				t.Errorf("lobby %s: clock_shifted at %s by %d ms, before the kill", id, e.At, d.GapMs)
			case at == 0:
				at, gap = eAt, d.GapMs
			case eAt != at || d.GapMs != gap:
				t.Errorf("lobby %s: clock_shifted at %d by %d ms, another lobby's at %d by %d: the clock shifted more than once",
					id, eAt, d.GapMs, at, gap)
			}
		}
		if n > 1 {
			t.Errorf("lobby %s: %d clock_shifted events, want one", id, n)
		}
	}
	if at == 0 {
		t.Fatal("no clock_shifted event after the failover: deadlines that fell due during it were applied")
	}
	return at, gap
}

// notEliminatedByFailover checks that nobody in a lobby was eliminated because of the failover. No
// event may carry an instant from the kill to the clock's shift (such an event would be a deadline
// applied as of a moment when nobody could act); and the stage open when the primary was killed,
// if its deadline fell due before the shift (due is 1), closes only after the lobby's
// clock_shifted (by the players' actions, or by the clock at its shifted deadline).
func notEliminatedByFailover(t *testing.T, events []chainEvent, killMs, shiftAt int64) (due int) {
	t.Helper()
	open := -1
	var deadline int64
	for i, e := range events {
		at := atMillis(t, e.At)
		if at >= killMs && at < shiftAt {
			t.Errorf("lobby %s: %s at %s (%d ms after the kill), between the kill and the clock's shift (%d ms after it)",
				e.LobbyId, e.Type, e.At, at-killMs, shiftAt-killMs)
		}
		if at >= killMs {
			continue
		}
		var d struct {
			Deadline int64 `json:"deadline"`
		}
		_ = json.Unmarshal(e.Data, &d)
		switch e.Type {
		case "player_registered", "round_started", "moves_closed":
			open, deadline = i, d.Deadline
		case "stage_extended", "game_finished", "game_stopped":
			open = -1
		}
	}
	if open < 0 || deadline == 0 || deadline < killMs || deadline >= shiftAt {
		return 0
	}
	shifted := false
	for _, e := range events[open+1:] {
		switch e.Type {
		case "clock_shifted":
			shifted = true
		case "round_started", "moves_closed", "round_resolved", "stage_extended", "game_finished", "game_stopped":
			if !shifted {
				t.Errorf("lobby %s: the stage due at %d during the failover was closed by %s at %s, before the clock shifted",
					e.LobbyId, deadline, e.Type, e.At)
			}
			return 1
		}
	}
	if !shifted {
		t.Errorf("lobby %s: the stage due at %d during the failover is open and its deadline did not move", events[open].LobbyId, deadline)
	}
	return 1
}

// acknowledgedButLost returns the acknowledged actions the logs do not show.
func acknowledgedButLost(t *testing.T, acks []ack, logs map[string][]chainEvent) []ack {
	t.Helper()
	kinds := map[string]string{"player_registered": "register", "move_committed": "commit", "move_revealed": "reveal"}
	seen := map[string]bool{}
	for _, events := range logs {
		for _, e := range events {
			kind, ok := kinds[e.Type]
			if !ok || e.GameId == nil {
				continue
			}
			var d struct {
				Player string `json:"player"`
				Round  int    `json:"round"`
			}
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			if kind == "register" {
				d.Round = 0
			}
			seen[fmt.Sprintf("%s %s %s %d", kind, e.gameOf(), d.Player, d.Round)] = true
		}
	}
	var lost []ack
	for _, a := range acks {
		round := a.round
		if a.kind == "register" {
			round = 0
		}
		if !seen[fmt.Sprintf("%s %s %s %d", a.kind, a.game, a.player, round)] {
			lost = append(lost, a)
		}
	}
	return lost
}

// playedAfter counts the events after ms.
func playedAfter(events []chainEvent, ms int64) int {
	n := 0
	for _, e := range events {
		if ts, err := time.Parse("2006-01-02T15:04:05.000Z", e.At); err == nil && ts.UnixMilli() > ms {
			n++
		}
	}
	return n
}
