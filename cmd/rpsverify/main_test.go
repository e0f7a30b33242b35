package main

// The tests run rpsd's API in process over a real, migrated Postgres database (internal/pgtest),
// play games through it, and run rpsverify against it as a third party would; then they tamper
// with the database and check that the verifier names what was changed.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/commitreveal/rps/internal/apitest"
	"github.com/commitreveal/rps/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// server is rpsd's API with its clock worker over a fresh database (internal/apitest).
type server struct {
	*apitest.Env
	t *testing.T
}

func newServer(t *testing.T) *server {
	t.Helper()
	return &server{Env: apitest.Start(t, apitest.WithClock()), t: t}
}

// do sends a request and decodes the answer, failing the test unless its status is want (any
// 2xx for 200).
func (s *server) do(method, path, token string, body any, want int) map[string]any {
	s.t.Helper()
	r := s.Do(method, path, token, body)
	if r.Status != want && !(want == http.StatusOK && r.Status/100 == 2) {
		s.t.Fatalf("%s: status %d, want %d: %s", r.Req, r.Status, want, r.Body)
	}
	var out map[string]any
	_ = json.Unmarshal(r.Body, &out)
	return out
}

type player = apitest.Player

func (s *server) player(funds int64) player {
	s.t.Helper()
	return s.NewPlayer("p", funds)
}

func (s *server) players(n int) []player {
	out := make([]player, n)
	for i := range out {
		out[i] = s.player(10_000)
	}
	return out
}

func (s *server) lobby(cfg map[string]any) string {
	s.t.Helper()
	return s.do("POST", "/v1/lobbies", s.Admin, map[string]any{"name": "verified", "config": cfg}, http.StatusCreated)["id"].(string)
}

func (s *server) register(lobby string, ps ...player) {
	s.t.Helper()
	for _, p := range ps {
		s.Register(lobby, p).Want(s.t, http.StatusCreated)
	}
}

// reveals are "<digit>secret-<player id>", so every test move is its own.
func revealOf(p player, move string) string { return move + "secret-" + p.ID }

func (s *server) commit(lobby string, p player, move string) {
	s.t.Helper()
	s.Commit(lobby, p, revealOf(p, move)).Want(s.t, http.StatusOK)
}

func (s *server) reveal(lobby string, p player, move string) {
	s.t.Helper()
	s.Reveal(lobby, p, revealOf(p, move)).Want(s.t, http.StatusOK)
}

// round has each player commit and then reveal its move ("" skips the player).
func (s *server) round(lobby string, ps []player, moves ...string) {
	s.t.Helper()
	for i, m := range moves {
		if m != "" {
			s.commit(lobby, ps[i], m)
		}
	}
	for i, m := range moves {
		if m != "" {
			s.reveal(lobby, ps[i], m)
		}
	}
}

// waitFor long-polls the lobby's log until it holds n events of type typ.
func (s *server) waitFor(lobby, typ string, n int) {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var count int
		var after float64
		for {
			page := s.do("GET", fmt.Sprintf("/v1/lobbies/%s/events?after=%d&limit=1000", lobby, int64(after)), "", nil, http.StatusOK)
			events := page["events"].([]any)
			for _, e := range events {
				if e.(map[string]any)["type"] == typ {
					count++
				}
			}
			after = page["next"].(float64)
			if len(events) < 1000 {
				break
			}
		}
		if count >= n {
			return
		}
		s.do("GET", fmt.Sprintf("/v1/lobbies/%s/events?after=%d&wait=1", lobby, int64(after)), "", nil, http.StatusOK)
	}
	s.t.Fatalf("lobby %s: no %d %s events within 10s", lobby, n, typ)
}

// verify runs rpsverify with args against the server and returns its exit status, its standard
// output and, with --json, its report.
func (s *server) verify(args ...string) (int, string, Report) {
	s.t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(s.t.Context(), append([]string{"--server", s.URL, "--quiet"}, args...), &stdout, &stderr)
	var rep Report
	for _, a := range args {
		if a == "--json" {
			if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
				s.t.Fatalf("rpsverify %v: report: %v\n%s\n%s", args, err, stdout.String(), stderr.String())
			}
		}
	}
	if code == exitNetwork {
		s.t.Logf("rpsverify %v: stderr: %s", args, stderr.String())
	}
	return code, stdout.String(), rep
}

// stageMs is the stage timeout of the games that wait for deadlines.
const stageMs = 1000

func classic(bet int) map[string]any {
	return map[string]any{"betSize": bet, "playersCountLimit": 3, "ruleset": "rpsls", "resolution": "classic"}
}

// quickGame plays one classic game of three to its end without a deadline: everyone replays
// round 1 (all Rock), then Rock beats Scissors twice in round 2.
func (s *server) quickGame() (lobby string, ps []player) {
	s.t.Helper()
	ps = s.players(3)
	lobby = s.lobby(classic(100))
	s.register(lobby, ps...)
	s.round(lobby, ps, "0", "0", "0")
	s.round(lobby, ps, "0", "2", "2")
	s.waitFor(lobby, "game_finished", 1)
	return lobby, ps
}

// playMany plays games of every kind: classic and weighted, replays, a leave, stops in every
// stage, eliminations at the moves and reveal deadlines, extensions, a stop after too many
// extensions, a win by default, a next config with another ruleset.
func (s *server) playMany() []string {
	t := s.t
	t.Helper()
	quick, _ := s.quickGame()

	// Classic: a leave and an admin stop in registration (refunds), then a stop in moves (split).
	ps := s.players(4)
	a := s.lobby(map[string]any{"betSize": 100, "playersCountLimit": 4})
	s.register(a, ps[0], ps[1], ps[2])
	s.Leave(a, ps[2]).Want(s.t, http.StatusOK)
	s.do("POST", "/v1/lobbies/"+a+"/stop", s.Admin, map[string]any{"reason": "test"}, http.StatusOK)
	s.register(a, ps...)
	s.commit(a, ps[0], "1")
	s.do("POST", "/v1/lobbies/"+a+"/stop", s.Admin, map[string]any{"reason": "test"}, http.StatusOK)

	// Weighted with deadlines: one player never commits, one never reveals; Rock beats Scissors.
	// A second is long enough for the others to act in time on a loaded machine.
	weighted := map[string]any{"betSize": 101, "playersCountLimit": 4, "ruleset": "rpsls", "resolution": "weighted",
		"entryTimeoutMs": stageMs, "moveTimeoutMs": stageMs, "revealTimeoutMs": stageMs, "maxExtensions": 1}
	w := s.lobby(weighted)
	ps = s.players(4)
	s.register(w, ps...)
	s.commit(w, ps[0], "0")
	s.commit(w, ps[1], "2")
	s.commit(w, ps[2], "4")
	s.waitFor(w, "moves_closed", 1)
	s.reveal(w, ps[0], "0")
	s.reveal(w, ps[1], "2")
	s.waitFor(w, "game_finished", 1)
	// Game 2 starts at the registration deadline with three; two commit; nobody reveals: one
	// extension, then a stop that splits 303 between the two committers (151 + 152).
	s.register(w, ps[0], ps[1], ps[2])
	s.waitFor(w, "round_started", 2)
	s.commit(w, ps[0], "1")
	s.commit(w, ps[1], "3")
	s.waitFor(w, "game_stopped", 1)

	// A next config with another ruleset, a stop in reveal, and a win by default at the moves
	// deadline in the next game.
	r := s.lobby(map[string]any{"betSize": 7, "playersCountLimit": 2, "ruleset": "rps", "moveTimeoutMs": stageMs})
	ps = s.players(2)
	s.register(r, ps...)
	s.commit(r, ps[0], "0")
	s.commit(r, ps[1], "1")
	s.do("PUT", "/v1/lobbies/"+r+"/next-config", s.Admin, map[string]any{"betSize": 9, "playersCountLimit": 2, "ruleset": "rps7",
		"resolution": "weighted", "moveTimeoutMs": stageMs}, http.StatusOK)
	s.do("POST", "/v1/lobbies/"+r+"/stop", s.Admin, map[string]any{"reason": "test"}, http.StatusOK)
	s.register(r, ps...)
	s.commit(r, ps[0], "6")
	s.waitFor(r, "game_finished", 1)
	return []string{quick, a, w, r}
}

// TestVerifierOnManyGames plays games of every kind: the verifier passes, resumes from its
// state, and every event matches its schema.
func TestVerifierOnManyGames(t *testing.T) {
	s := newServer(t)
	lobbies := s.playMany()
	code, out, rep := s.verify("--json")
	if code != exitOK || !rep.OK || len(rep.Lobbies) != len(lobbies) {
		t.Fatalf("verify: exit %d, report %+v\n%s", code, rep, out)
	}
	games := 0
	for _, l := range rep.Lobbies {
		games += l.Finished + l.Stopped
	}
	if games != 7 {
		t.Errorf("verified %d ended games, want 7: %+v", games, rep.Lobbies)
	}

	state := t.TempDir() + "/state.json"
	if code, out, _ := s.verify("--state", state); code != exitOK || !strings.Contains(out, "ok: events 1..") {
		t.Fatalf("first run with state: exit %d\n%s", code, out)
	}
	// Another game in the first lobby; the next run resumes after the games already verified.
	ps := s.players(3)
	s.register(lobbies[0], ps...)
	s.round(lobbies[0], ps, "4", "2", "2")
	s.waitFor(lobbies[0], "game_finished", 2)
	code, out, rep = s.verify("--state", state, "--lobby", lobbies[0], "--json")
	if code != exitOK || rep.Lobbies[0].From == 0 || rep.Lobbies[0].Finished != 1 {
		t.Fatalf("resumed run: exit %d, %+v\n%s", code, rep, out)
	}

	code, _, _ = s.verify("--lobby", uuid.NewString())
	if code != exitFailed {
		t.Errorf("unknown lobby: exit %d, want %d", code, exitFailed)
	}
	var stderr bytes.Buffer
	if code := run(t.Context(), []string{"--lobby", lobbies[0]}, io.Discard, &stderr); code != exitUsage {
		t.Errorf("no --server: exit %d, want %d", code, exitUsage)
	}
	if code := run(t.Context(), []string{"--server", "http://127.0.0.1:1", "--quiet"}, io.Discard, &stderr); code != exitNetwork {
		t.Errorf("no server: exit %d, want %d", code, exitNetwork)
	}
	checkEventSchemas(t, s, lobbies)
}

// TestVerifierOnASealedRevealStage: while a round's reveal stage is open its commitments stay
// sealed (only moves_closed's digest binds them), so the verifier checks that digest once the
// round has resolved, or the game ended: a log that stops in the reveal stage verifies, and so
// does the same log once the round is resolved, in a stop in the reveal stage too.
func TestVerifierOnASealedRevealStage(t *testing.T) {
	s := newServer(t)
	ps := s.players(3)
	lobby := s.lobby(classic(10))
	s.register(lobby, ps...)
	s.commit(lobby, ps[0], "0")
	s.commit(lobby, ps[1], "2")
	s.commit(lobby, ps[2], "2")
	s.reveal(lobby, ps[0], "0")
	if code, out, _ := s.verify("--lobby", lobby); code != exitOK {
		t.Fatalf("verify during the reveal stage: exit %d\n%s", code, out)
	}
	s.reveal(lobby, ps[1], "2")
	s.reveal(lobby, ps[2], "2")
	s.waitFor(lobby, "game_finished", 1)
	// Game 2 is stopped in its reveal stage, which makes its commitments public.
	s.register(lobby, ps...)
	s.commit(lobby, ps[0], "1")
	s.commit(lobby, ps[1], "1")
	s.commit(lobby, ps[2], "3")
	if code, out, _ := s.verify("--lobby", lobby); code != exitOK {
		t.Fatalf("verify during game 2's reveal stage: exit %d\n%s", code, out)
	}
	s.do("POST", "/v1/lobbies/"+lobby+"/stop", s.Admin, map[string]any{"reason": "test"}, http.StatusOK)
	code, out, rep := s.verify("--lobby", lobby, "--json")
	if code != exitOK || rep.Lobbies[0].Finished != 1 || rep.Lobbies[0].Stopped != 1 {
		t.Fatalf("verify after the win and the stop: exit %d, %+v\n%s", code, rep, out)
	}
}
