package main

// The harness of the end-to-end tests: the rpsd binary built once per test process, started as
// a child process on a free port, and a small JSON client for its API.

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/blake2b"

	"github.com/commitreveal/rps/internal/apiclient"
	"github.com/commitreveal/rps/internal/ha"
	"github.com/commitreveal/rps/internal/pgcluster"
	"github.com/commitreveal/rps/internal/pgtest"
	"github.com/commitreveal/rps/tournament"
)

// adminToken is the bootstrap admin's token of every server started with RPSD_ADMIN_TOKEN.
const adminToken = "e2e-admin-token-0123456789abcdef"

// rpsdBin is the binary built by TestMain.
var rpsdBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "rpsd-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "rpsd e2e:", err)
		os.Exit(1)
	}
	rpsdBin = filepath.Join(dir, "rpsd")
	build := exec.Command("go", "build", "-o", rpsdBin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "rpsd e2e: go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	// pgtest.Main exits the process, so the binary's folder is removed by a watchdog that wakes
	// when this process is gone, whatever the way it goes.
	if err := removeAtExit(dir); err != nil {
		fmt.Fprintln(os.Stderr, "rpsd e2e:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	pgtest.Main(m)
}

// removeAtExit removes dir once this process has exited.
func removeAtExit(dir string) error {
	return ha.RunAtExit(`rm -rf "$1"`, dir)
}

// settingNames are the environment variables rpsd reads; a child gets only the ones a test sets.
var settingNames = []string{"DATABASE_URL", "RPSD_ADDR", "RPSD_ADMIN_TOKEN", "RPSD_MIN_TIMEOUT_MS", "RPSD_DATA_DIR", "RPSD_OUTAGE_THRESHOLD_MS", "RPSD_METRICS_ADDR"}

// childEnv is this process's environment without rpsd's settings, plus env.
func childEnv(env map[string]string) []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !contains(settingNames, name) {
			out = append(out, kv)
		}
	}
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// freeAddr returns 127.0.0.1:<a port that was free just now>.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // only its free port was wanted
	return addr
}

// syncBuffer is a bytes.Buffer safe for the writer goroutine of exec and a reading test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// runResult is the outcome of a short rpsd command.
type runResult struct {
	code           int
	stdout, stderr string
}

// runRPSD runs `rpsd args...` to completion with env.
func runRPSD(t *testing.T, env map[string]string, args ...string) runResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, rpsdBin, args...)
	cmd.Env = childEnv(env)
	cmd.Dir = t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := runResult{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		res.code = exit.ExitCode()
	default:
		t.Fatalf("rpsd %v: %v", args, err)
	}
	return res
}

// server is an rpsd process serving the API.
type server struct {
	t    *testing.T
	name string
	addr string
	URL  string
	// metricsURL is the private listener's /metrics (RPSD_METRICS_ADDR).
	metricsURL string
	cmd        *exec.Cmd
	stdout     syncBuffer
	stderr     syncBuffer
	done       chan struct{}
	err        error // cmd.Wait's result, once done is closed
	// origin is the transparency log's origin, which players' signatures name: read once.
	origin string
}

// startServer starts `rpsd` with env (RPSD_ADDR and RPSD_METRICS_ADDR are added) and waits until it is ready. The
// process is killed at the end of the test if the test has not stopped it.
func startServer(t *testing.T, name string, env map[string]string) *server {
	t.Helper()
	s := &server{t: t, name: name, addr: freeAddr(t), done: make(chan struct{})}
	s.URL = "http://" + s.addr
	metricsAddr := freeAddr(t)
	s.metricsURL = "http://" + metricsAddr + "/metrics"
	all := map[string]string{"RPSD_ADDR": s.addr, "RPSD_METRICS_ADDR": metricsAddr}
	for k, v := range env {
		all[k] = v
	}
	s.cmd = exec.Command(rpsdBin)
	s.cmd.Env = childEnv(all)
	s.cmd.Dir = t.TempDir() // never the package folder: a default ./.rpsd must not land there
	s.cmd.Stdout, s.cmd.Stderr = &s.stdout, &s.stderr
	// A postmaster started by rpsd must not hold our pipes; if it did, Wait would still return.
	s.cmd.WaitDelay = 3 * time.Second
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		if !s.exited() {
			_ = s.cmd.Process.Kill()
			<-s.done
		}
		if t.Failed() {
			t.Logf("%s stdout:\n%s\n%s stderr:\n%s", name, s.stdout.String(), name, s.stderr.String())
		}
	})
	s.waitReady()
	return s
}

func (s *server) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

func (s *server) waitReady() {
	s.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := client.Get(s.URL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if s.exited() {
			s.t.Fatalf("%s exited before it was ready (%v):\n%s", s.name, s.err, s.stderr.String())
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s not ready after 60 s (last: %v):\n%s", s.name, err, s.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// wait waits up to timeout for the process to exit and returns its exit code.
func (s *server) wait(timeout time.Duration) int {
	s.t.Helper()
	select {
	case <-s.done:
	case <-time.After(timeout):
		_ = s.cmd.Process.Kill()
		<-s.done
		s.t.Fatalf("%s did not exit within %v; killed", s.name, timeout)
	}
	var exit *exec.ExitError
	switch {
	case s.err == nil:
		return 0
	case errors.As(s.err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return exit.ExitCode()
	default:
		s.t.Fatalf("%s: %v", s.name, s.err)
		return -1
	}
}

// terminate sends SIGTERM and returns the exit code.
func (s *server) terminate() int {
	s.t.Helper()
	return s.signal(syscall.SIGTERM)
}

// signal sends sig and returns the exit code.
func (s *server) signal(sig syscall.Signal) int {
	s.t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("%v to %s: %v", sig, s.name, err)
	}
	return s.wait(20 * time.Second)
}

// kill sends SIGKILL and waits for the process to be gone.
func (s *server) kill() {
	s.t.Helper()
	if err := s.cmd.Process.Kill(); err != nil {
		s.t.Fatalf("SIGKILL %s: %v", s.name, err)
	}
	s.wait(10 * time.Second)
}

// privateDir creates an RPSD_DATA_DIR the postgres user can enter, and makes sure that no
// postmaster started in it outlives the test: at the test's end any live one is stopped and the
// folder removed.
func privateDir(t *testing.T) string {
	t.Helper()
	if _, err := pgcluster.FindBinaries(); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "rpsd-e2e-cluster-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if pid := postmasterPID(dir); pid > 0 && processAlive(pid) {
			t.Logf("stopping the postmaster (pid %d) left running in %s", pid, dir)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c, err := pgcluster.Start(ctx, pgcluster.Options{Dir: dir})
			if err != nil {
				t.Errorf("reach the leftover cluster: %v", err)
			} else if err := c.Stop(); err != nil {
				t.Errorf("stop the leftover cluster: %v", err)
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("remove %s: %v", dir, err)
		}
	})
	return dir
}

// guardCluster arms pgcluster's exit watchdog on the live cluster in dir, so that the postmaster
// is stopped even if this test process dies before its cleanups run (a test timeout), and returns
// the cluster.
func guardCluster(t *testing.T, dir string) *pgcluster.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgcluster.Start(ctx, pgcluster.Options{Dir: dir})
	if err != nil {
		t.Fatalf("reach the private cluster: %v", err)
	}
	if c.Started() {
		t.Fatalf("no postmaster was running in %s: the test started one", dir)
	}
	if err := c.StopAtExit(true); err != nil {
		t.Fatal(err)
	}
	return c
}

// postmasterPID returns the pid in dir/data/postmaster.pid, or 0 if there is none.
func postmasterPID(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid"))
	if err != nil {
		return 0
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(first))
	return pid
}

// processAlive reports whether pid runs and is not a zombie.
func processAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// exitsSoon reports whether pid is gone within a few seconds: `pg_ctl stop -w` returns once
// postmaster.pid is removed, a moment before the postmaster process has quite exited.
func exitsSoon(pid int) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if !processAlive(pid) {
			return true
		}
	}
	return false
}

// call sends a JSON request and decodes a JSON answer into out (if not nil); it returns the
// status and the raw body.
func (s *server) call(method, path, token string, body, out any) (int, []byte) {
	s.t.Helper()
	resp := s.send(method, path, token, "", body)
	if out != nil && len(resp.body) > 0 && resp.status < 300 {
		if err := json.Unmarshal(resp.body, out); err != nil {
			s.t.Fatalf("%s %s: decode %s: %v", method, path, resp.body, err)
		}
	}
	return resp.status, resp.body
}

// sent is an answer with its headers.
type sent struct {
	status int
	header http.Header
	body   []byte
}

// send sends a JSON request (body if not nil) with a token and an Idempotency-Key when not empty,
// and headers (name, value pairs), and fails the test on a transport error.
func (s *server) send(method, path, token, key string, body any, headers ...string) sent {
	s.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.URL+path, r)
	if err != nil {
		s.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	client := &http.Client{Timeout: 40 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s on %s: %v", method, path, s.name, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("%s %s on %s: read body: %v", method, path, s.name, err)
	}
	return sent{status: resp.StatusCode, header: resp.Header, body: raw}
}

// must is call that fails the test unless the status is want.
func (s *server) must(want int, method, path, token string, body, out any) {
	s.t.Helper()
	if got, raw := s.call(method, path, token, body, out); got != want {
		s.t.Fatalf("%s %s: status %d, want %d: %s", method, path, got, want, raw)
	}
}

// player is an account, its token and the key it signs its actions with.
type player struct {
	ID, Token string
	Key       apiclient.PlayerKey
}

// newPlayer signs up name with a key of its own (a signed sign_up) and has the admin credit it
// with amount.
func (s *server) newPlayer(name string, amount int64) player {
	s.t.Helper()
	var created struct {
		Account struct {
			ID string `json:"id"`
		} `json:"account"`
		Token string `json:"token"`
	}
	key := apiclient.NewPlayerKey()
	headers := s.sign(key, tournament.ActionMessage{Action: tournament.ActionSignUp,
		Payload: tournament.ActionPayload{Name: name, PublicKey: key.PublicKey()}})
	r := s.send("POST", "/v1/accounts", "", "", map[string]any{"name": name, "publicKey": key.PublicKey()}, headers...)
	if r.status != http.StatusCreated {
		s.t.Fatalf("sign up %s: status %d: %s", name, r.status, r.body)
	}
	if err := json.Unmarshal(r.body, &created); err != nil {
		s.t.Fatalf("sign up %s: %v", name, err)
	}
	if amount > 0 {
		s.must(http.StatusOK, "POST", "/v1/admin/accounts/"+created.Account.ID+"/credits", adminToken, map[string]any{"amount": amount}, nil)
	}
	return player{ID: created.Account.ID, Token: created.Token, Key: key}
}

// sign signs m with key now, on the server's origin, and returns the Rps-* headers.
func (s *server) sign(key apiclient.PlayerKey, m tournament.ActionMessage) []string {
	s.t.Helper()
	if s.origin == "" {
		var log struct {
			Origin string `json:"origin"`
		}
		s.must(http.StatusOK, "GET", "/v1/log", "", nil, &log)
		s.origin = log.Origin
	}
	m.Origin = s.origin
	sig, err := key.Sign(m, time.Now())
	if err != nil {
		s.t.Fatal(err)
	}
	return sig.Pairs()
}

// signed returns the Rps-* headers of p's action in the lobby's current game (and round, for a
// commit or a reveal) under the Idempotency-Key key; the register's payload is the game's bet,
// read with the game.
func (s *server) signed(lobby string, p player, key string, action tournament.ActionName, payload tournament.ActionPayload) []string {
	s.t.Helper()
	var l struct {
		Config struct {
			BetSize int64 `json:"betSize"`
		} `json:"config"`
		Game struct {
			ID    string `json:"id"`
			Round int    `json:"round"`
		} `json:"game"`
	}
	s.must(http.StatusOK, "GET", "/v1/lobbies/"+lobby, "", nil, &l)
	m := tournament.ActionMessage{Action: action, Player: tournament.AccountID(p.ID), LobbyID: tournament.LobbyID(lobby),
		GameID: tournament.GameID(l.Game.ID), Payload: payload, IdempotencyKey: key}
	switch action {
	case tournament.ActionRegister:
		m.Payload.Bet = l.Config.BetSize
	case tournament.ActionCommit, tournament.ActionReveal:
		m.Round = l.Game.Round
	}
	return s.sign(p.Key, m)
}

// act sends p's signed action and fails the test unless the status is want.
func (s *server) act(want int, method, lobby, path string, p player, action tournament.ActionName, payload tournament.ActionPayload, body any) {
	s.t.Helper()
	key := apiclient.NewKey()
	if r := s.send(method, "/v1/lobbies/"+lobby+path, p.Token, key, body, s.signed(lobby, p, key, action, payload)...); r.status != want {
		s.t.Fatalf("%s %s: status %d, want %d: %s", action, lobby, r.status, want, r.body)
	}
}

// balance is the player's balance from GET /v1/me.
func (s *server) balance(p player) int64 {
	s.t.Helper()
	var me struct {
		Balance int64 `json:"balance"`
	}
	s.must(http.StatusOK, "GET", "/v1/me", p.Token, nil, &me)
	return me.Balance
}

// createLobby creates a lobby with config and returns its id.
func (s *server) createLobby(name string, config map[string]any) string {
	s.t.Helper()
	var lobby struct {
		ID string `json:"id"`
	}
	s.must(http.StatusCreated, "POST", "/v1/lobbies", adminToken, map[string]any{"name": name, "config": config}, &lobby)
	return lobby.ID
}

func (s *server) register(lobby string, p player) {
	s.t.Helper()
	s.act(http.StatusCreated, "POST", lobby, "/players", p, tournament.ActionRegister, tournament.ActionPayload{}, nil)
}

func (s *server) commit(lobby string, p player, reveal string) {
	s.t.Helper()
	sum := blake2b.Sum256([]byte(reveal))
	c := hex.EncodeToString(sum[:])
	s.act(http.StatusOK, "POST", lobby, "/commitments", p, tournament.ActionCommit, tournament.ActionPayload{Commitment: c}, map[string]any{"commitment": c})
}

func (s *server) reveal(lobby string, p player, reveal string) {
	s.t.Helper()
	s.act(http.StatusOK, "POST", lobby, "/reveals", p, tournament.ActionReveal, tournament.ActionPayload{Reveal: reveal}, map[string]any{"reveal": reveal})
}

// gameState is the part of a lobby's current game the tests look at.
type gameState struct {
	ID          string `json:"id"`
	Stage       string `json:"stage"`
	Round       int    `json:"round"`
	DeadlineMs  *int64 `json:"deadlineMs"`
	Players     int    `json:"players"`
	Remaining   int    `json:"remaining"`
	Committed   int    `json:"committed"`
	Revealed    int    `json:"revealed"`
	Pot         int64  `json:"pot"`
	Extensions  int    `json:"extensions"`
	ServerTime  int64  `json:"-"`
	StageStarts string `json:"stageStartedAt"`
}

// lobbyGame is GET /v1/lobbies/{id}'s game (which applies due expiries first).
func (s *server) lobbyGame(lobby string) gameState {
	s.t.Helper()
	var l struct {
		Game       gameState `json:"game"`
		ServerTime int64     `json:"serverTime"`
	}
	s.must(http.StatusOK, "GET", "/v1/lobbies/"+lobby, "", nil, &l)
	l.Game.ServerTime = l.ServerTime
	return l.Game
}

// event is a logged event.
type event struct {
	Seq    int64           `json:"seq"`
	Type   string          `json:"type"`
	GameID *string         `json:"gameId"`
	At     string          `json:"at"`
	Data   json.RawMessage `json:"data"`
}

// events reads a lobby's log after seq after, long-polling up to wait seconds (0: no wait).
// Reading the log never applies an expiry.
func (s *server) events(lobby string, after int64, wait int) []event {
	s.t.Helper()
	var page struct {
		Events []event `json:"events"`
	}
	path := fmt.Sprintf("/v1/lobbies/%s/events?after=%d&limit=1000", lobby, after)
	if wait > 0 {
		path += fmt.Sprintf("&wait=%d", wait)
	}
	s.must(http.StatusOK, "GET", path, "", nil, &page)
	return page.Events
}

// waitEvent long-polls a lobby's log until an event of type typ appears, up to timeout.
func (s *server) waitEvent(lobby, typ string, timeout time.Duration) (event, time.Time) {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	var after int64
	for time.Now().Before(deadline) {
		for _, e := range s.events(lobby, after, 1) {
			if e.Type == typ {
				return e, time.Now()
			}
			after = e.Seq
		}
	}
	s.t.Fatalf("no %s event in lobby %s within %v", typ, lobby, timeout)
	return event{}, time.Time{}
}

// eventTypes lists the types of a lobby's whole log.
func eventTypes(events []event) []string {
	var types []string
	for _, e := range events {
		types = append(types, e.Type)
	}
	return types
}

// ledgerOK asks the admin ledger whether every invariant holds.
func (s *server) ledgerOK() {
	s.t.Helper()
	var report struct {
		OK bool `json:"ok"`
	}
	if _, raw := s.call("GET", "/v1/admin/ledger", adminToken, nil, &report); !report.OK {
		s.t.Errorf("ledger invariants do not hold: %s", raw)
	}
}

// atMillis parses an event's `at`.
func atMillis(t *testing.T, at string) int64 {
	t.Helper()
	ts, err := time.Parse("2006-01-02T15:04:05.000Z", at)
	if err != nil {
		t.Fatalf("event time %q: %v", at, err)
	}
	return ts.UnixMilli()
}
