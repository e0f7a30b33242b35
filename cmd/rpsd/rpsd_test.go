package main

// End-to-end tests of the rpsd binary: the README walk-through, restarts on the private
// cluster, an outage that must not eliminate anyone, a clean shutdown, and the subcommands.

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/commitreveal/rps/internal/pgcluster"
	"github.com/commitreveal/rps/internal/pgtest"
)

// dbEnv is the environment of a server on the test's own database.
func dbEnv(t *testing.T, extra map[string]string) map[string]string {
	env := map[string]string{
		"DATABASE_URL":        pgtest.NewURL(t),
		"RPSD_ADMIN_TOKEN":    adminToken,
		"RPSD_MIN_TIMEOUT_MS": "200",
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// readmeScript returns the ```sh blocks between the README's <!-- name:start --> and
// <!-- name:end --> markers.
func readmeScript(t *testing.T, name string) string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "<!-- "+name+":start -->")
	if !ok {
		t.Fatalf("README.md has no <!-- %s:start --> marker", name)
	}
	section, _, ok := strings.Cut(rest, "<!-- "+name+":end -->")
	if !ok {
		t.Fatalf("README.md has no <!-- %s:end --> marker", name)
	}
	blocks := regexp.MustCompile("(?ms)^```sh\n(.*?)^```").FindAllStringSubmatch(section, -1)
	if len(blocks) == 0 {
		t.Fatalf("no ```sh block in the README's %s", name)
	}
	var script strings.Builder
	for _, b := range blocks {
		script.WriteString(b[1])
		script.WriteString("\n")
	}
	return script.String()
}

// TestReadmeWalkthrough runs the README's walk-through, exactly as written, against a server.
func TestReadmeWalkthrough(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "curl", "jq", "b2sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the README walk-through needs %s, which is not installed", tool)
		}
	}
	script := readmeScript(t, "walkthrough")
	// The walk-through signs with rpskey, which README has the reader install.
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "rpskey"), "../rpskey").CombinedOutput(); err != nil {
		t.Fatalf("go build rpskey: %v\n%s", err, out)
	}
	s := startServer(t, "rpsd", dbEnv(t, nil))

	path := filepath.Join(t.TempDir(), "walkthrough.sh")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", path)
	cmd.Env = append(childEnv(map[string]string{"PATH": bin + string(os.PathListSeparator) + os.Getenv("PATH")}), "S="+s.URL, "ADMIN="+adminToken)
	cmd.Dir = t.TempDir()
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("walk-through failed: %v\nstdout:\n%s\nstderr:\n%s\nscript:\n%s", err, stdout.String(), stderr.String(), script)
	}
	out := stdout.String()
	t.Logf("walk-through output:\n%s", out)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")

	// The balances come out as bare numbers, alice's then bob's, and the ledger check is last.
	i := slices.Index(lines, "1100")
	if i < 0 || i+1 >= len(lines) || lines[i+1] != "900" {
		t.Errorf("want alice's balance 1100 followed by bob's 900 in the output")
	}
	if last := lines[len(lines)-1]; last != "true" {
		t.Errorf("last line (ledger ok) = %q, want true", last)
	}
	for _, want := range []string{`"type":"game_finished"`, `"stage":"finished"`, `"reveal":"0pass12"`, `"reveal":"2bob-secret"`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s", want)
		}
	}
	runReadmeVerify(t, s)
}

// TestRestartMidGame kills rpsd in the middle of two games and starts it again on the same
// private cluster: it reuses the live postmaster, the games go on, and a deadline that passes
// after the restart is applied by the new process.
func TestRestartMidGame(t *testing.T) {
	t.Parallel()
	dir := privateDir(t)
	env := map[string]string{
		"RPSD_DATA_DIR":       dir,
		"RPSD_ADMIN_TOKEN":    adminToken,
		"RPSD_MIN_TIMEOUT_MS": "200",
		// This test is about deadlines honoured across a short restart, not about outages.
		"RPSD_OUTAGE_THRESHOLD_MS": "600000",
	}
	s1 := startServer(t, "rpsd#1", env)
	guardCluster(t, dir)
	pid := postmasterPID(dir)
	if pid <= 0 || !processAlive(pid) {
		t.Fatalf("no live postmaster in %s after the first start", dir)
	}

	alice, bob := s1.newPlayer("alice", 1000), s1.newPlayer("bob", 1000)
	carol, dave := s1.newPlayer("carol", 1000), s1.newPlayer("dave", 1000)

	// Game 1: both registered, alice has committed; slow timeouts.
	game1 := s1.createLobby("played", map[string]any{"betSize": 100, "playersCountLimit": 2, "moveTimeoutMs": 60000, "revealTimeoutMs": 60000})
	s1.register(game1, alice)
	s1.register(game1, bob)
	s1.commit(game1, alice, "0alice-secret")

	// Game 2: carol commits, dave never will; the moves deadline is a few seconds ahead.
	const moveTimeout = 3000
	game2 := s1.createLobby("timed", map[string]any{"betSize": 100, "playersCountLimit": 2, "moveTimeoutMs": moveTimeout, "revealTimeoutMs": 60000})
	s1.register(game2, carol)
	s1.register(game2, dave)
	s1.commit(game2, carol, "3carol-secret")
	g2 := s1.lobbyGame(game2)
	if g2.Stage != "moves" || g2.Committed != 1 || g2.DeadlineMs == nil {
		t.Fatalf("game 2 before the kill: %+v", g2)
	}
	deadline := *g2.DeadlineMs

	s1.kill()
	if !processAlive(pid) {
		t.Fatalf("the postmaster (pid %d) died with rpsd", pid)
	}

	s2 := startServer(t, "rpsd#2", env)
	restartedAt := time.Now().UnixMilli()
	if got := postmasterPID(dir); got != pid {
		t.Errorf("postmaster pid after the restart = %d, want the reused %d", got, pid)
	}
	if !strings.Contains(s2.stderr.String(), `"reused":true`) {
		t.Errorf("the second rpsd did not log that it reused the running cluster:\n%s", s2.stderr.String())
	}
	if restartedAt >= deadline {
		t.Logf("the restart took until %d ms past game 2's deadline", restartedAt-deadline)
	} else if evs := s2.events(game2, 0, 0); slices.Contains(eventTypes(evs), "game_finished") {
		t.Fatalf("game 2 finished before its deadline: %v", eventTypes(evs))
	}

	// Game 1 goes on where it was: bob commits, both reveal, rock beats scissors.
	if g := s2.lobbyGame(game1); g.Stage != "moves" || g.Committed != 1 || g.Remaining != 2 {
		t.Fatalf("game 1 after the restart: %+v", g)
	}
	s2.commit(game1, bob, "2bob-secret")
	if g := s2.lobbyGame(game1); g.Stage != "reveal" {
		t.Fatalf("game 1 after both commits: stage %s, want reveal", g.Stage)
	}
	s2.reveal(game1, alice, "0alice-secret")
	s2.reveal(game1, bob, "2bob-secret")
	finished, _ := s2.waitEvent(game1, "game_finished", 5*time.Second)
	var won struct {
		Winner string `json:"winner"`
		Amount int64  `json:"amount"`
	}
	if err := json.Unmarshal(finished.Data, &won); err != nil {
		t.Fatal(err)
	}
	if won.Winner != alice.ID || won.Amount != 200 {
		t.Errorf("game 1 finished with %s, want alice (%s) winning 200", finished.Data, alice.ID)
	}

	// Game 2: nobody asks about it; the new process's clock applies the moves deadline, and
	// carol, the only one who committed, wins.
	ended, seenAt := s2.waitEvent(game2, "game_finished", time.Duration(moveTimeout)*time.Millisecond+10*time.Second)
	if err := json.Unmarshal(ended.Data, &won); err != nil {
		t.Fatal(err)
	}
	if won.Winner != carol.ID || won.Amount != 200 {
		t.Errorf("game 2 finished with %s, want carol (%s) winning 200", ended.Data, carol.ID)
	}
	if at := atMillis(t, ended.At); at < deadline {
		t.Errorf("game 2 finished at %d, before its deadline %d", at, deadline)
	}
	if lag := seenAt.UnixMilli() - deadline; lag > 2000 {
		t.Errorf("game 2's expiry was seen %d ms after its deadline", lag)
	}

	for p, want := range map[*player]int64{&alice: 1100, &bob: 900, &carol: 1100, &dave: 900} {
		if got := s2.balance(*p); got != want {
			t.Errorf("balance of %s = %d, want %d", p.ID, got, want)
		}
	}
	s2.ledgerOK()
	// Ctrl-C in the terminal of `make run`: as clean an exit as SIGTERM.
	if code := s2.signal(syscall.SIGINT); code != 0 {
		t.Errorf("rpsd#2 exit code %d after SIGINT, want 0", code)
	}
	// The reused postmaster is the new process's to stop on a clean exit.
	if !exitsSoon(pid) {
		t.Errorf("the reused postmaster (pid %d) still runs after rpsd#2's clean exit", pid)
	}
}

// TestCommandsBesideRunningServer runs the one-shot commands (`admin token`, `migrate`) on the
// private cluster of a server that is running: they reuse its postmaster and must leave it
// running for the server.
func TestCommandsBesideRunningServer(t *testing.T) {
	t.Parallel()
	dir := privateDir(t)
	env := map[string]string{"RPSD_DATA_DIR": dir, "RPSD_ADMIN_TOKEN": adminToken, "RPSD_MIN_TIMEOUT_MS": "200"}
	s := startServer(t, "rpsd", env)
	guardCluster(t, dir)
	pid := postmasterPID(dir)

	rotated := runRPSD(t, map[string]string{"RPSD_DATA_DIR": dir}, "admin", "token")
	if rotated.code != 0 {
		t.Fatalf("rpsd admin token: exit code %d:\n%s", rotated.code, rotated.stderr)
	}
	token := strings.TrimSpace(rotated.stdout)
	if !processAlive(pid) {
		t.Errorf("`rpsd admin token` stopped the postmaster (pid %d) of the running server", pid)
	}
	if code, raw := s.call("GET", "/readyz", "", nil, nil); code != http.StatusOK {
		t.Errorf("after `rpsd admin token`: GET /readyz = %d %s, want 200", code, raw)
	}
	if code, raw := s.call("GET", "/v1/admin/ledger", token, nil, nil); code != http.StatusOK {
		t.Errorf("after `rpsd admin token`: GET /v1/admin/ledger with the new token = %d %s, want 200", code, raw)
	}

	if res := runRPSD(t, map[string]string{"RPSD_DATA_DIR": dir}, "migrate"); res.code != 0 {
		t.Errorf("rpsd migrate: exit code %d:\n%s", res.code, res.stderr)
	}
	if code, raw := s.call("GET", "/readyz", "", nil, nil); code != http.StatusOK {
		t.Errorf("after `rpsd migrate`: GET /readyz = %d %s, want 200", code, raw)
	}
	if code := s.terminate(); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
}

// TestOutageShiftsDeadlines kills rpsd, keeps it down past a game's moves deadline and past the
// outage threshold, and starts it again: the deadline moves by the gap instead of eliminating
// the player who has not committed yet.
func TestOutageShiftsDeadlines(t *testing.T) {
	t.Parallel()
	const threshold = 1000
	env := dbEnv(t, map[string]string{"RPSD_OUTAGE_THRESHOLD_MS": strconv.Itoa(threshold)})
	s1 := startServer(t, "rpsd#1", env)
	alice, bob := s1.newPlayer("alice", 1000), s1.newPlayer("bob", 1000)
	lobby := s1.createLobby("outage", map[string]any{"betSize": 100, "playersCountLimit": 2, "moveTimeoutMs": 2000, "revealTimeoutMs": 60000})
	s1.register(lobby, alice)
	s1.register(lobby, bob)
	s1.commit(lobby, alice, "1alice") // were the deadline applied, alice would win alone
	before := s1.lobbyGame(lobby)
	if before.Stage != "moves" || before.DeadlineMs == nil {
		t.Fatalf("game before the outage: %+v", before)
	}
	oldDeadline := *before.DeadlineMs

	s1.kill()
	killedAt := time.Now()
	// Down until well past the deadline and the threshold.
	time.Sleep(max(time.Until(time.UnixMilli(oldDeadline)), threshold*time.Millisecond) + 500*time.Millisecond)

	down := time.Since(killedAt).Milliseconds() // before the new process starts: at most the gap
	s2 := startServer(t, "rpsd#2", env)
	outage := time.Since(killedAt).Milliseconds()

	evs := s2.events(lobby, 0, 0)
	var shifts []event
	for _, e := range evs {
		if e.Type == "clock_shifted" {
			shifts = append(shifts, e)
		}
		if e.Type == "game_finished" || e.Type == "moves_closed" {
			t.Errorf("the outage closed the moves stage: %v", eventTypes(evs))
		}
	}
	if len(shifts) != 1 {
		t.Fatalf("%d clock_shifted events, want 1: %v", len(shifts), eventTypes(evs))
	}
	var shifted struct {
		GapMs int64 `json:"gapMs"`
	}
	if err := json.Unmarshal(shifts[0].Data, &shifted); err != nil {
		t.Fatal(err)
	}
	// The gap runs from the last heartbeat (a second before the kill, more on a loaded machine)
	// to the new process's recovery: at least the time down, at most the outage plus a few heartbeats.
	t.Logf("down for %d ms, ready after %d ms, clock shifted by %d ms", down, outage, shifted.GapMs)
	if maxGap := outage + 5000; shifted.GapMs < down || shifted.GapMs > maxGap {
		t.Errorf("clock_shifted gapMs = %d, want between %d and %d", shifted.GapMs, down, maxGap)
	}

	after := s2.lobbyGame(lobby)
	if after.ID != before.ID || after.Stage != "moves" || after.Players != 2 || after.Remaining != 2 || after.Committed != 1 {
		t.Fatalf("game after the outage: %+v, want the same game in moves with both players", after)
	}
	if after.DeadlineMs == nil || *after.DeadlineMs != oldDeadline+shifted.GapMs {
		t.Errorf("deadline after the outage = %v, want %d + %d", after.DeadlineMs, oldDeadline, shifted.GapMs)
	}

	// And the game simply goes on.
	s2.commit(lobby, bob, "4bob")
	if g := s2.lobbyGame(lobby); g.Stage != "reveal" || g.Remaining != 2 {
		t.Errorf("after bob's commit: %+v, want reveal with both players", g)
	}
	s2.ledgerOK()
	if code := s2.terminate(); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
}

// TestCleanShutdown sends SIGTERM to an rpsd on its private cluster: it exits 0 promptly, ends
// open event streams and long polls, and stops the postmaster it ran.
func TestCleanShutdown(t *testing.T) {
	t.Parallel()
	dir := privateDir(t)
	s := startServer(t, "rpsd", map[string]string{
		"RPSD_DATA_DIR":       dir,
		"RPSD_ADMIN_TOKEN":    adminToken,
		"RPSD_MIN_TIMEOUT_MS": "200",
	})
	cluster := guardCluster(t, dir)
	pid := postmasterPID(dir)
	if pid <= 0 || !processAlive(pid) {
		t.Fatalf("no live postmaster in %s", dir)
	}
	lobby := s.createLobby("shutdown", map[string]any{"betSize": 10, "playersCountLimit": 2})
	servesAsNoSuperuser(t, cluster)

	// An SSE stream that has delivered the lobby's first event.
	resp, err := http.Get(s.URL + "/v1/lobbies/" + lobby + "/events/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %s, Content-Type %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	lines := make(chan string)
	streamEnded := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		streamEnded <- sc.Err()
	}()
	for got := false; !got; {
		select {
		case l := <-lines:
			got = strings.HasPrefix(l, "event: lobby_created")
		case <-time.After(5 * time.Second):
			t.Fatal("no lobby_created event on the stream within 5 s")
		}
	}
	go func() { // keep draining
		for range lines {
		}
	}()

	// A long poll waiting for an event that will not come.
	last := s.events(lobby, 0, 0)
	poll := make(chan int, 1)
	go func() {
		client := &http.Client{Timeout: 30 * time.Second}
		r, err := client.Get(s.URL + "/v1/lobbies/" + lobby + "/events?wait=25&after=" + strconv.FormatInt(last[len(last)-1].Seq, 10))
		if err != nil {
			poll <- -1
			return
		}
		r.Body.Close()
		poll <- r.StatusCode
	}()
	time.Sleep(200 * time.Millisecond) // let the poll reach the server

	start := time.Now()
	code := s.terminate()
	took := time.Since(start)
	if code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
	if took > 5*time.Second {
		t.Errorf("shutdown took %v", took)
	}
	select {
	case <-streamEnded: //nolint:errcheck // how the stream ended is not the point: that it ended is
	case <-time.After(2 * time.Second):
		t.Error("the event stream was still open 2 s after rpsd exited")
	}
	select {
	case status := <-poll:
		if status != http.StatusOK {
			t.Errorf("the long poll in flight at shutdown ended with %d, want 200", status)
		}
	case <-time.After(2 * time.Second):
		t.Error("the long poll was still open 2 s after rpsd exited")
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "postmaster.pid")); !os.IsNotExist(err) {
		t.Errorf("postmaster.pid still there after a clean exit (stat: %v)", err)
	}
	if !exitsSoon(pid) {
		t.Errorf("the postmaster (pid %d) still runs 5 s after a clean exit", pid)
	}
	t.Logf("SIGTERM to exit: %v", took)
}

// TestHelpAndCommands covers --help, migrate, admin token, healthcheck and bad commands.
func TestHelpAndCommands(t *testing.T) {
	t.Parallel()

	help := runRPSD(t, nil, "--help")
	if help.code != 0 {
		t.Errorf("rpsd --help exit code %d, want 0", help.code)
	}
	for _, name := range settingNames {
		if !strings.Contains(help.stdout+help.stderr, name) {
			t.Errorf("rpsd --help does not list %s:\n%s%s", name, help.stdout, help.stderr)
		}
	}

	// A fresh, empty database: migrate creates the schema.
	cluster := pgtest.Cluster(t)
	ctx := context.Background()
	if err := cluster.CreateDatabase(ctx, "rpsd_commands", ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cluster.DropDatabase(context.Background(), "rpsd_commands"); err != nil {
			t.Error(err)
		}
	})
	dbURL := cluster.URL("rpsd_commands")

	for _, args := range [][]string{{"frobnicate"}, {"admin"}, {"admin", "tokens"}, {"migrate", "now"}, {"serve", "extra"}} {
		res := runRPSD(t, map[string]string{"DATABASE_URL": dbURL}, args...)
		if res.code == 0 || !strings.Contains(res.stderr, "usage: rpsd") {
			t.Errorf("rpsd %v: exit code %d, stderr:\n%s\nwant a non-zero exit with the usage", args, res.code, res.stderr)
		}
	}

	// Bad settings and an unreachable database end the start with a message, not a hang.
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"DATABASE_URL": dbURL, "RPSD_MIN_TIMEOUT_MS": "soon"}, "RPSD_MIN_TIMEOUT_MS"},
		{map[string]string{"DATABASE_URL": dbURL, "RPSD_MIN_TIMEOUT_MS": "0"}, "RPSD_MIN_TIMEOUT_MS"},
		{map[string]string{"DATABASE_URL": dbURL, "RPSD_OUTAGE_THRESHOLD_MS": "-1"}, "RPSD_OUTAGE_THRESHOLD_MS"},
		{map[string]string{"DATABASE_URL": dbURL, "RPSD_OUTAGE_THRESHOLD_MS": "300"}, "RPSD_OUTAGE_THRESHOLD_MS"},
		{map[string]string{"DATABASE_URL": dbURL, "RPSD_STREAM_WRITE_TIMEOUT_MS": "0"}, "RPSD_STREAM_WRITE_TIMEOUT_MS"},
		{map[string]string{"DATABASE_URL": dbURL, "RPSD_ADMIN_TOKEN": "short-admin-token"}, "RPSD_ADMIN_TOKEN"},
		{map[string]string{"DATABASE_URL": dbURL, "RPSD_TRUSTED_PROXIES": "10.0.0.0"}, "RPSD_TRUSTED_PROXIES"},
		{map[string]string{"DATABASE_URL": "postgres://postgres@" + freeAddr(t) + "/none?sslmode=disable"}, "connect"},
	} {
		res := runRPSD(t, c.env, "migrate")
		if res.code == 0 || !strings.Contains(res.stderr, c.want) {
			t.Errorf("rpsd migrate with %v: exit code %d, stderr:\n%s\nwant a non-zero exit naming %s", c.env, res.code, res.stderr, c.want)
		}
	}

	if res := runRPSD(t, map[string]string{"DATABASE_URL": dbURL}, "migrate"); res.code != 0 {
		t.Fatalf("rpsd migrate: exit code %d:\n%s", res.code, res.stderr)
	}
	if res := runRPSD(t, map[string]string{"DATABASE_URL": dbURL}, "migrate"); res.code != 0 {
		t.Errorf("rpsd migrate again: exit code %d:\n%s", res.code, res.stderr)
	}

	// Without RPSD_ADMIN_TOKEN the first start creates the admin and prints its token once.
	env := map[string]string{"DATABASE_URL": dbURL, "RPSD_MIN_TIMEOUT_MS": "200"}
	s1 := startServer(t, "rpsd#1", env)
	printed := regexp.MustCompile(`(?m)^admin token: (\S+)$`).FindStringSubmatch(s1.stdout.String())
	if printed == nil {
		t.Fatalf("the first start printed no admin token; stdout:\n%s", s1.stdout.String())
	}
	first := printed[1]
	ledger := func(s *server, token string) int {
		code, _ := s.call("GET", "/v1/admin/ledger", token, nil, nil)
		return code
	}
	if code := ledger(s1, first); code != http.StatusOK {
		t.Errorf("the printed admin token: GET /v1/admin/ledger = %d, want 200", code)
	}

	if res := runRPSD(t, map[string]string{"RPSD_ADDR": s1.addr}, "healthcheck"); res.code != 0 {
		t.Errorf("rpsd healthcheck against a ready server: exit code %d:\n%s", res.code, res.stderr)
	}
	if res := runRPSD(t, map[string]string{"RPSD_ADDR": freeAddr(t)}, "healthcheck"); res.code == 0 {
		t.Error("rpsd healthcheck against a closed port: exit code 0")
	}

	rotated := runRPSD(t, map[string]string{"DATABASE_URL": dbURL}, "admin", "token")
	if rotated.code != 0 {
		t.Fatalf("rpsd admin token: exit code %d:\n%s", rotated.code, rotated.stderr)
	}
	second := strings.TrimSpace(rotated.stdout)
	if !regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`).MatchString(second) || second == first {
		t.Fatalf("rpsd admin token printed %q, want a new token alone on stdout", rotated.stdout)
	}
	// The running server has never seen the new token, so it asks the database.
	if code := ledger(s1, second); code != http.StatusOK {
		t.Errorf("the rotated token on the running server: %d, want 200", code)
	}
	if code := s1.terminate(); code != 0 {
		t.Errorf("rpsd#1 exit code %d, want 0", code)
	}

	// A fresh start (no token cache): the old token is revoked, the new one works, and nothing
	// is printed since the admin exists.
	s2 := startServer(t, "rpsd#2", env)
	if code := ledger(s2, first); code != http.StatusUnauthorized {
		t.Errorf("the revoked admin token: %d, want 401", code)
	}
	if code := ledger(s2, second); code != http.StatusOK {
		t.Errorf("the rotated admin token: %d, want 200", code)
	}
	if strings.Contains(s2.stdout.String(), "admin token") {
		t.Errorf("the second start printed a token again:\n%s", s2.stdout.String())
	}
	if code := s2.terminate(); code != 0 {
		t.Errorf("rpsd#2 exit code %d, want 0", code)
	}

	// RPSD_ADMIN_TOKEN only sets a new admin's token: it does not undo a rotation at every
	// start, and says so loudly.
	env["RPSD_ADMIN_TOKEN"] = adminToken
	s3 := startServer(t, "rpsd#3", env)
	if code := ledger(s3, adminToken); code != http.StatusUnauthorized {
		t.Errorf("RPSD_ADMIN_TOKEN over a rotated admin token: %d, want 401", code)
	}
	if code := ledger(s3, second); code != http.StatusOK {
		t.Errorf("the rotated admin token with RPSD_ADMIN_TOKEN set: %d, want 200", code)
	}
	if !strings.Contains(s3.stderr.String(), "RPSD_ADMIN_TOKEN IS IGNORED") {
		t.Errorf("RPSD_ADMIN_TOKEN ignored without a warning:\n%s", s3.stderr.String())
	}
	if code := s3.terminate(); code != 0 {
		t.Errorf("rpsd#3 exit code %d, want 0", code)
	}
}

// servesAsNoSuperuser checks, as the private cluster's superuser, that every connection rpsd holds
// to its database is of a role that is not a superuser.
func servesAsNoSuperuser(t *testing.T, c *pgcluster.Cluster) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), c.URL("rps"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(t.Context(), `SELECT a.usename::text, r.rolsuper FROM pg_stat_activity a JOIN pg_roles r ON r.oid = a.usesysid
		WHERE a.datname = 'rps' AND a.backend_type = 'client backend' AND a.pid <> pg_backend_pid()`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var role string
		var super bool
		if err := rows.Scan(&role, &super); err != nil {
			t.Fatal(err)
		}
		n++
		if super || role != "rps" {
			t.Errorf("rpsd holds a connection as %s (superuser: %v), want the rps role, no superuser", role, super)
		}
	}
	if rows.Err() != nil || n == 0 {
		t.Fatalf("rpsd's connections: %d found (%v)", n, rows.Err())
	}
}
