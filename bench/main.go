// Command bench measures rpsd against its own PostgreSQL and writes bench/RESULTS.md.
//
//	go run ./bench [--out bench/RESULTS.md] [--clients 8] [--big-clients 256] [--big 0] [--budget 17m]
//
// It starts a private PostgreSQL cluster (internal/pgcluster) and an rpsd built from this tree,
// then measures, in one run: (1) pgbench TPC-B-like, -N and -S with the same client count, the
// baseline of "one transaction per request" on this machine; (2) mixed register/commit/reveal
// load over many lobbies, played through the HTTP API by the bots of cmd/rpsbot, as a ratio to
// pgbench's TPC-B tps, with 8 actions in flight as pgbench keeps 8 clients, twice: its players
// following their lobbies by event stream as the Android app does (the headline), then
// long-polling as generated clients do; (3) one big lobby with weighted resolution, played with
// 256 actions in flight over as many connections, its phases and latency; (4) the stage-change
// lag under load; (5) the engine's Go benchmarks; and, for the mixed load and the big lobby, the
// server's CPU per action (rpsd and PostgreSQL apart) against PostgreSQL's per TPC-B
// transaction, rpsd's split by part of its work (from its CPU profile), where PostgreSQL's time
// went by class of statement (pg_stat_statements per action), the statements and the actions
// per transaction (rpsd's /metrics, scraped before and after each run). It reports and never
// fails on a missed goal. Every process it starts is stopped by PID at the end, on failure too.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/commitreveal/rps/cmd/rpsbot/bot"
	"github.com/commitreveal/rps/internal/pgcluster"
)

type options struct {
	out          string
	clients      int
	bigClients   int
	pgbenchTime  time.Duration
	loadTime     time.Duration
	lobbies      int
	players      int
	timeoutMs    int64
	big          int
	budget       time.Duration
	baselineTime time.Duration
	profileOut   string
}

func main() {
	var o options
	flag.StringVar(&o.out, "out", "bench/RESULTS.md", "report file")
	flag.IntVar(&o.clients, "clients", 8, "pgbench clients = the bots' actions in flight in the mixed load")
	flag.IntVar(&o.bigClients, "big-clients", 256, "the bots' actions in flight in the big lobby, each on a connection of its own (a big lobby's many phones)")
	flag.DurationVar(&o.pgbenchTime, "pgbench-time", 20*time.Second, "duration of the pgbench TPC-B run (the -N and -S runs take half as long)")
	flag.DurationVar(&o.loadTime, "load-time", 20*time.Second, "duration of each of the two runs of the mixed load (streams, then long polls)")
	flag.IntVar(&o.lobbies, "lobbies", 40, "lobbies of the mixed load")
	flag.IntVar(&o.players, "players", 10, "players per lobby of the mixed load")
	flag.Int64Var(&o.timeoutMs, "timeout-ms", 2000, "stage timeouts of the mixed load: long enough for every bot to act, so stages end by deadline only when a bot skips (RPSD_MIN_TIMEOUT_MS is 100)")
	flag.IntVar(&o.big, "big", 100_000, "players of the big lobby (0: the largest that fits the budget)")
	flag.DurationVar(&o.budget, "budget", 17*time.Minute, "the whole run's time budget (the big lobby's 100,000 players bind their keys through the API first: 4-5 minutes)")
	flag.DurationVar(&o.baselineTime, "baseline-time", 12*time.Second, "duration of the 10-player latency baseline")
	flag.StringVar(&o.profileOut, "profile-out", "", "also keep rpsd's CPU profiles, for go tool pprof: the mixed load's with streams in this file, with long polls in FILE.poll, the big lobby's in FILE.big")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// report collects the figures written to RESULTS.md.
type report struct {
	started time.Time
	machine []string
	fsync   string
	pgbench []pgbenchResult
	// mixed is the mixed load with the players following their lobbies by event stream, as the
	// Android app does (the headline); polled the same load with every player long-polling, as a
	// generated client does.
	mixed, polled mixedResult
	baseline      bot.Report
	big           bigResult
	// load is the load average when the run began and ended.
	load [2]string
	// tpcbCPU is PostgreSQL's CPU time per pgbench TPC-B transaction.
	tpcbCPU             time.Duration
	engine, stageChange []string
	// crypto is tournament's BenchmarkActionVerify and BenchmarkHeadSign: the CPU of checking one
	// player's signature, and of signing a lobby's head.
	crypto                    []string
	notes                     []string
	clients, lobbies, players int
}

// mixedResult is one run of the mixed load.
type mixedResult struct {
	follow bot.Follow
	stats  bot.Report
	err    error
	// ratio is the actions per second to pgbench's TPC-B tps.
	ratio float64
	// cpu is rpsd's and PostgreSQL's CPU time over the measured window, perAction per action;
	// costRatio is perAction's sum to a TPC-B transaction's.
	cpu, perAction cpuSample
	costRatio      float64
	// statements are the statements that took the most database time; classes where PostgreSQL's
	// time went, per action.
	statements []string
	classes    []statementClass
	// profile is rpsd's CPU profile over the middle of the run: its top, and its split.
	profile profileResult
	// writes are the transactions that committed actions and the actions they carried.
	writes   writeFigures
	clockLag string
	// bindPerKey is the time its accounts took to bind their keys, per account.
	bindPerKey time.Duration
	notes      []string
}

type pgbenchResult struct {
	mode         string
	tps          float64
	latencyMs    float64
	transactions int64
}

type bigResult struct {
	size            int
	sizing          string
	register, total time.Duration
	rounds          []bot.RoundResult
	outcome         string
	stats           bot.Report
	err             error
	// statements are the big lobby's slowest statements by their longest call.
	statements []string
	// clients is the actions in flight; cpu the CPU per action (rpsd and PostgreSQL) and
	// costRatio its ratio to a TPC-B transaction's; classes where PostgreSQL's time went.
	clients   int
	cpu       cpuSample
	costRatio float64
	classes   []statementClass
	// profile is rpsd's CPU profile during the big lobby; writes the transactions that committed
	// its actions and the actions they carried.
	profile profileResult
	writes  writeFigures
}

func run(ctx context.Context, o options) (err error) {
	start := time.Now()
	deadline := start.Add(o.budget)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	rep := &report{started: start, clients: o.clients, lobbies: o.lobbies, players: o.players}
	rep.machine = machine(ctx)
	rep.load[0] = loadAverage()

	work, err := os.MkdirTemp("", "rps-bench-")
	if err != nil {
		return fmt.Errorf("work dir: %w", err)
	}
	defer os.RemoveAll(work)
	// The postgres OS user must enter the cluster's directory (as root it runs as that user).
	if err := os.Chmod(work, 0o755); err != nil {
		return fmt.Errorf("work dir: %w", err)
	}
	step := func(name string) { fmt.Printf("[%5.1fs] %s\n", time.Since(start).Seconds(), name) }

	step("starting PostgreSQL")
	cluster, err := pgcluster.Start(ctx, pgcluster.Options{Dir: filepath.Join(work, "pg"), Settings: map[string]string{
		"max_connections":          "200",
		"shared_buffers":           "256MB",
		"shared_preload_libraries": "pg_stat_statements",
	}})
	if err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	defer func() {
		if serr := cluster.Stop(); serr != nil {
			err = errors.Join(err, serr)
		}
	}()
	for _, db := range []string{"rps", "pgbench"} {
		if err := cluster.EnsureDatabase(ctx, db); err != nil {
			return err
		}
	}
	bin, err := pgcluster.FindBinaries()
	if err != nil {
		return err
	}
	rep.fsync = fsyncRate(ctx, bin, work)

	// (1) pgbench.
	step("pgbench: init scale 10")
	pgURL := cluster.URL("pgbench")
	if out, err := exec.CommandContext(ctx, filepath.Join(bin, "pgbench"), "-i", "-s", "10", "-q", pgURL).CombinedOutput(); err != nil {
		return fmt.Errorf("pgbench -i: %w: %s", err, out)
	}
	meter, err := newCPUMeter(ctx, pgURL, 0)
	if err != nil {
		return err
	}
	for i, mode := range []struct{ name, flag string }{{"TPC-B-like", ""}, {"simple update (-N)", "-N"}, {"select only (-S)", "-S"}} {
		step("pgbench " + mode.name)
		d := o.pgbenchTime
		if i > 0 {
			d /= 2
		}
		before := meter.sample()
		r, err := pgbench(ctx, filepath.Join(bin, "pgbench"), pgURL, o.clients, d, mode.flag)
		if err != nil {
			return err
		}
		if i == 0 && r.transactions > 0 {
			rep.tpcbCPU = meter.sample().since(before).pg / time.Duration(r.transactions)
		}
		r.mode = mode.name
		rep.pgbench = append(rep.pgbench, r)
	}

	// rpsd, on the same cluster, with the pool size of its default and no rate limits: the bench
	// measures how much play the service takes, not how it throttles one address.
	step("building and starting rpsd")
	rpsd := filepath.Join(work, "rpsd")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", rpsd, "./cmd/rpsd").CombinedOutput(); err != nil {
		return fmt.Errorf("build rpsd: %w: %s", err, out)
	}
	if err := withConn(ctx, cluster.URL("rps"), func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
		return err
	}); err != nil {
		return fmt.Errorf("pg_stat_statements: %w", err)
	}
	admin := randomHex(16)
	server, err := startServer(ctx, rpsd, work, cluster.URL("rps"), admin)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, server.stop()) }()
	dbURL := cluster.URL("rps")
	meter.rpsd = server.cmd.Process.Pid

	// (2) and (4): the mixed load over many lobbies, its players following their lobbies by event
	// stream, then the same load with them long-polling.
	mix := mixedEnv{o: o, server: server, meter: meter, dbURL: dbURL, admin: admin, rpsd: rpsd, work: work,
		tpcb: rep.pgbench[0].tps, tpcbCPU: rep.tpcbCPU, step: step}
	if rep.mixed, err = mix.run(ctx, bot.FollowStream, "streamer", o.profileOut); err != nil {
		return err
	}
	rep.notes = append(rep.notes, rep.mixed.notes...)
	polledProfile := ""
	if o.profileOut != "" {
		polledProfile = o.profileOut + ".poll"
	}
	if rep.polled, err = mix.run(ctx, bot.FollowPoll, "poller", polledProfile); err != nil {
		return err
	}
	rep.notes = append(rep.notes, rep.polled.notes...)

	// (3) the 10-player baseline, then the big lobby, sized to what is left of the budget.
	step("10-player latency baseline")
	small, _, err := createAccounts(ctx, dbURL, server.url, "small", 10, 1_000_000)
	if err != nil {
		return err
	}
	rep.baseline, err = playGames(ctx, server.url, admin, small, o.clients, o.baselineTime)
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	engineReserve := 75 * time.Second
	left := time.Until(deadline) - engineReserve - 30*time.Second
	rep.big.size, rep.big.sizing = bigSize(o.big, rep.mixed.stats.Actions.PerSec, rep.mixed.bindPerKey, left)
	step(fmt.Sprintf("big lobby: %d players (%s)", rep.big.size, rep.big.sizing))
	bigAccounts, _, err := createAccounts(ctx, dbURL, server.url, "big", rep.big.size, 1_000_000)
	if err != nil {
		return err
	}
	// The game gets what the binding of its players' keys left.
	left = time.Until(deadline) - engineReserve - 30*time.Second
	if err := resetStatements(ctx, dbURL); err != nil {
		return err
	}
	bigCtx, cancelBig := context.WithTimeout(ctx, max(left, time.Minute))
	rep.big.clients = o.bigClients
	bigStart := time.Now()
	bigProfiled := make(chan profileResult, 1)
	go func() {
		keep := ""
		if o.profileOut != "" {
			keep = o.profileOut + ".big"
		}
		select {
		case <-time.After(10 * time.Second): // into the registrations, at full load
			bigProfiled <- cpuProfile(bigCtx, server.debugAddr, rpsd, work, 15*time.Second, keep)
		case <-bigCtx.Done():
			bigProfiled <- profileResult{}
		}
	}()
	metricsBefore, metricsErr := scrapeMetrics(server.metricsURL)
	before := meter.sample()
	rep.big = playBig(bigCtx, server.url, admin, bigAccounts, o.bigClients, rep.big)
	bigCPU := meter.sample().since(before)
	rep.big.writes = writesOf(metricsSince(server.metricsURL, metricsBefore, metricsErr))
	rep.big.profile = <-bigProfiled
	cancelBig()
	rep.notes = append(rep.notes, logNote(ctx, dbURL, "the big lobby", bigStart))
	if n := time.Duration(rep.big.stats.Actions.Count); n > 0 && rep.tpcbCPU > 0 {
		rep.big.cpu = cpuSample{pg: bigCPU.pg / n, rpsd: bigCPU.rpsd / n}
		rep.big.costRatio = float64(rep.big.cpu.pg+rep.big.cpu.rpsd) / float64(rep.tpcbCPU)
	}
	rep.big.statements, err = topStatements(ctx, dbURL, "max_exec_time")
	if err != nil {
		rep.notes = append(rep.notes, "pg_stat_statements of the big lobby: "+err.Error())
	}
	bigClasses, err := statementClasses(ctx, dbURL)
	if err != nil {
		rep.notes = append(rep.notes, "pg_stat_statements of the big lobby by class: "+err.Error())
	}
	rep.big.classes = perAction(bigClasses, rep.big.stats.Actions.Count)

	// (5) the engine's benchmarks, and the stage-change transactions of a 100,000-player round.
	step("engine benchmarks")
	rep.engine = goBenchmarks(ctx, "-bench", ".", "-benchtime", "300ms", "-benchmem", "./engine")
	step("the cost of verifying a player's signature and of signing a head")
	rep.crypto = goBenchmarks(ctx, "-bench", "ActionVerify|HeadSign", "-benchtime", "300ms", "-benchmem", "./tournament")
	step("stage-change transactions at 100,000 players")
	rep.stageChange = goBenchmarks(ctx, "-bench", "StageChange", "-benchtime", "1x", "./store")

	rep.load[1] = loadAverage()
	step("writing " + o.out)
	if err := os.WriteFile(o.out, []byte(rep.markdown()), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	step("done")
	return nil
}

// machine describes the host: CPUs, memory, date and commit.
func machine(ctx context.Context) []string {
	mem := "unknown"
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if m := regexp.MustCompile(`MemTotal:\s+(\d+) kB`).FindSubmatch(b); m != nil {
			kb, _ := strconv.ParseFloat(string(m[1]), 64)
			mem = fmt.Sprintf("%.1f GiB", kb/1024/1024)
		}
	}
	commit := "unknown"
	if out, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output(); err == nil {
		commit = strings.TrimSpace(string(out))
	}
	if out, err := exec.CommandContext(ctx, "git", "status", "--porcelain").Output(); err == nil && len(out) > 0 {
		commit += " (with uncommitted changes)"
	}
	cpu := "unknown"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if m := regexp.MustCompile(`model name\s*:\s*(.+)`).FindSubmatch(b); m != nil {
			cpu = string(m[1])
		}
	}
	pg := "unknown"
	if bin, err := pgcluster.FindBinaries(); err == nil {
		if out, err := exec.CommandContext(ctx, filepath.Join(bin, "postgres"), "--version").Output(); err == nil {
			pg = strings.TrimSpace(string(out))
		}
	}
	return []string{
		fmt.Sprintf("CPUs (nproc): %d (%s)", runtime.NumCPU(), cpu),
		"memory: " + mem,
		"date: " + time.Now().UTC().Format(time.RFC3339),
		"commit: " + commit,
		"PostgreSQL: " + pg + ", Go: " + runtime.Version(),
	}
}

// fsyncRate runs pg_test_fsync briefly in the work directory and returns its fdatasync line.
func fsyncRate(ctx context.Context, bin, dir string) string {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(bin, "pg_test_fsync"), "-s", "1", "-f", filepath.Join(dir, "fsync.test")).Output()
	if err != nil {
		return "pg_test_fsync failed: " + err.Error()
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "fdatasync") && strings.Contains(line, "ops/sec") {
			return strings.Join(strings.Fields(line), " ")
		}
	}
	return "no fdatasync figure in pg_test_fsync's output"
}

var (
	tpsRE          = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)
	latencyRE      = regexp.MustCompile(`latency average = ([0-9.]+) ms`)
	transactionsRE = regexp.MustCompile(`number of transactions actually processed: ([0-9]+)`)
)

func pgbench(ctx context.Context, pgbenchBin, url string, clients int, d time.Duration, mode string) (pgbenchResult, error) {
	args := []string{"-c", strconv.Itoa(clients), "-j", strconv.Itoa(min(clients, runtime.NumCPU())), "-T", strconv.Itoa(int(d.Seconds()))}
	if mode != "" {
		args = append(args, mode)
	}
	out, err := exec.CommandContext(ctx, pgbenchBin, append(args, url)...).CombinedOutput()
	if err != nil {
		return pgbenchResult{}, fmt.Errorf("pgbench %s: %w: %s", mode, err, out)
	}
	var r pgbenchResult
	if m := tpsRE.FindSubmatch(out); m != nil {
		r.tps, _ = strconv.ParseFloat(string(m[1]), 64)
	}
	if m := latencyRE.FindSubmatch(out); m != nil {
		r.latencyMs, _ = strconv.ParseFloat(string(m[1]), 64)
	}
	if m := transactionsRE.FindSubmatch(out); m != nil {
		r.transactions, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	if r.tps == 0 {
		return r, fmt.Errorf("pgbench %s: no tps in its output: %s", mode, out)
	}
	return r, nil
}

// server is a running rpsd.
type server struct {
	cmd *exec.Cmd
	url string
	// metricsURL is the separate listener of /metrics.
	metricsURL string
	debugAddr  string
	done       chan error
}

func startServer(ctx context.Context, bin, dir, dbURL, admin string) (*server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	metricsAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	debugAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "rpsd.log"))
	if err != nil {
		return nil, err
	}
	// Not CommandContext: the server is stopped by stop(), gracefully, whatever ctx does.
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "RPSD_ADDR="+addr, "RPSD_METRICS_ADDR="+metricsAddr, "RPSD_ADMIN_TOKEN="+admin, "RPSD_MIN_TIMEOUT_MS=100",
		"RPSD_DB_MAX_CONNS="+strconv.Itoa(rpsdPoolSize), "RPSD_ACCOUNT_RATE=0", "RPSD_IP_RATE=0", "RPSD_SIGNUP_RATE=0",
		// Every bot connects from 127.0.0.1: the big lobby's 256 connections are as many phones.
		"RPSD_MAX_CONNS_PER_ADDR=0",
		"RPSD_DEBUG_ADDR="+debugAddr)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start rpsd: %w", err)
	}
	s := &server{cmd: cmd, url: "http://" + addr, metricsURL: "http://" + metricsAddr, debugAddr: debugAddr, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait(); _ = logf.Close() }()
	for wait := time.Now().Add(60 * time.Second); ; {
		resp, err := http.Get(s.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		select {
		case err := <-s.done:
			s.done <- err
			tail, _ := os.ReadFile(filepath.Join(dir, "rpsd.log"))
			return nil, fmt.Errorf("rpsd exited: %w: %s", err, lastLines(string(tail), 20))
		case <-ctx.Done():
			return nil, errors.Join(ctx.Err(), s.stop())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(wait) {
			return nil, errors.Join(errors.New("rpsd not ready after 60s"), s.stop())
		}
	}
}

// freeAddr returns a loopback address with a port free now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

// stop sends SIGTERM to the server's PID and waits; SIGKILL after 15 seconds.
func (s *server) stop() error {
	select {
	case err := <-s.done:
		s.done <- err
		return nil
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done: //nolint:errcheck // the exit status of a server told to stop is not news
		return nil
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done //nolint:errcheck // killed: its exit status says nothing new
		return errors.New("rpsd did not stop on SIGTERM within 15s and was killed")
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

func withConn(ctx context.Context, url string, f func(*pgx.Conn) error) error {
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer c.Close(context.WithoutCancel(ctx))
	return f(c)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// createAccounts creates n funded player accounts directly in the database, as the issue allows
// (the figures measure play, not sign-up, which the server limits to 0.5/s per address): each
// with a known token (only its sha256 is stored, as the server does) and a credit posting from
// the treasury, so that the ledger's invariants hold. Each account then binds its first key
// through the API (bindKeys), since a player signs every action.
func createAccounts(ctx context.Context, dbURL, server, prefix string, n int, fund int64) ([]bot.Account, time.Duration, error) {
	secret := randomHex(16)
	var accounts []bot.Account
	err := withConn(ctx, dbURL, func(c *pgx.Conn) error {
		now := time.Now().UnixMilli()
		tx, err := c.Begin(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(ctx) }() // a no-op after the commit
		_, err = tx.Exec(ctx, `
			WITH a AS (
				INSERT INTO accounts (id, name, name_key, role, token_hash, balance, created_at)
				SELECT gen_random_uuid(), $1 || '-' || i, $1 || '-' || i, 'player', sha256(convert_to($2 || i, 'UTF8')), $3, $4
				FROM generate_series(1, $5) AS i
				RETURNING id
			), p AS MATERIALIZED (SELECT id, nextval('ledger_posting_seq') AS posting FROM a)
			INSERT INTO ledger_entries (posting_id, account_kind, player_id, amount, kind, at)
			SELECT posting, 'player', id, $3, 'credit', $4 FROM p
			UNION ALL
			SELECT posting, 'treasury', NULL, -$3::bigint, 'credit', $4 FROM p`,
			prefix, secret, fund, now, n)
		if err != nil {
			return fmt.Errorf("insert accounts: %w", err)
		}
		rows, err := tx.Query(ctx, `SELECT id::text, name FROM accounts WHERE name LIKE $1 || '-%' ORDER BY created_at, name`, prefix)
		if err != nil {
			return err
		}
		for rows.Next() {
			var a bot.Account
			if err := rows.Scan(&a.ID, &a.Name); err != nil {
				return err
			}
			i := strings.TrimPrefix(a.Name, prefix+"-")
			a.Token = secret + i
			accounts = append(accounts, a)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
	if err != nil {
		return nil, 0, fmt.Errorf("create %d %s accounts: %w", n, prefix, err)
	}
	return bindKeys(ctx, server, accounts)
}

// bindKeys gives each account its first key, made here and signed by itself (POST /v1/me/keys),
// 128 at a time: what a player's device does once, before its first action. It returns the
// accounts with their keys and the time it took per key.
func bindKeys(ctx context.Context, server string, accounts []bot.Account) ([]bot.Account, time.Duration, error) {
	const conc = 128
	client, err := bot.NewClient(server, bot.ClientOptions{Conns: conc})
	if err != nil {
		return nil, 0, err
	}
	start := time.Now()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	next := make(chan int)
	for range conc {
		wg.Go(func() {
			for i := range next {
				a, err := client.BindKey(ctx, accounts[i])
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("bind a key to %s: %w", accounts[i].Name, err)
				}
				accounts[i] = a
				mu.Unlock()
			}
		})
	}
	for i := range accounts {
		next <- i
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, 0, firstErr
	}
	took := time.Since(start)
	fmt.Printf("  %d keys bound in %s\n", len(accounts), took.Round(time.Millisecond))
	return accounts, took / time.Duration(max(len(accounts), 1)), nil
}

func resetStatements(ctx context.Context, dbURL string) error {
	return withConn(ctx, dbURL, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, "SELECT pg_stat_statements_reset()")
		return err
	})
}

// topStatements lists the statements that took the most database time since the last reset, or,
// by their longest call, the set-based statements of the big lobby's stage changes: column is
// pg_stat_statements' total_exec_time or max_exec_time, shown with the calls and the mean.
func topStatements(ctx context.Context, dbURL, column string) ([]string, error) {
	var out []string
	err := withConn(ctx, dbURL, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT calls, round(`+column+`::numeric, 1), round(mean_exec_time::numeric, 3),
				regexp_replace(left(query, 130), '\s+', ' ', 'g')
			FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
			ORDER BY `+column+` DESC LIMIT 12`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var calls int64
			var figure, mean float64
			var query string
			if err := rows.Scan(&calls, &figure, &mean, &query); err != nil {
				return err
			}
			out = append(out, fmt.Sprintf("| %d | %.1f | %.3f | `%s` |", calls, figure, mean, strings.ReplaceAll(query, "|", "\\|")))
		}
		return rows.Err()
	})
	return out, err
}

// statementClass is PostgreSQL's work of one class of statement, in all or per action of a load.
type statementClass struct {
	name string
	// calls and micros are the calls and the execution time (pg_stat_statements' total_exec_time,
	// without parsing, planning, the protocol or the commit's WAL flush).
	calls, micros float64
}

// perAction divides the classes' work by the actions of the load (none if there were none).
func perAction(classes []statementClass, actions int) []statementClass {
	if actions == 0 {
		return nil
	}
	out := make([]statementClass, len(classes))
	for i, c := range classes {
		out[i] = statementClass{name: c.name, calls: c.calls / float64(actions), micros: c.micros / float64(actions)}
	}
	return out
}

// statementClasses is pg_stat_statements since the last reset, by class of statement.
func statementClasses(ctx context.Context, dbURL string) ([]statementClass, error) {
	byName := map[string]*statementClass{}
	err := withConn(ctx, dbURL, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT regexp_replace(query, '\s+', ' ', 'g'), calls, total_exec_time
			FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var query string
			var calls int64
			var total float64
			if err := rows.Scan(&query, &calls, &total); err != nil {
				return err
			}
			name := classOf(query)
			if byName[name] == nil {
				byName[name] = &statementClass{name: name}
			}
			byName[name].calls += float64(calls)
			byName[name].micros += total * 1000
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	var out []statementClass
	for _, c := range statementClassOrder {
		if sc := byName[c.name]; sc != nil {
			out = append(out, *sc)
		}
	}
	return out, nil
}

// statementClassOrder names the classes of statements, each by a pattern of its text, in the
// order of an action's path; a statement takes the first class it matches.
var statementClassOrder = []struct {
	name string
	re   *regexp.Regexp
}{
	{"BEGIN, COMMIT (and the batch's plan mode)", regexp.MustCompile(`^(BEGIN|COMMIT|ROLLBACK|SELECT set_config\()`)},
	{"a batch's lobby lock", regexp.MustCompile(`FROM lobbies WHERE id = \$1 FOR UPDATE`)},
	{"a batch's account locks (an action's signer against a key change)", regexp.MustCompile(`^SELECT (1|\$2) FROM accounts WHERE id = (ANY\(\$1::uuid\[\]\) ORDER BY id|\$1) FOR (KEY SHARE|UPDATE)$`)},
	{"a batch's game read (with the rounds it may close)", regexp.MustCompile(`(?s)^SELECT id::text, lobby_id::text, number, config.* FROM unnest\(\$1::uuid\[\], \$2::int\[\]\) AS x \(lobby, calls\)`)},
	{"a batch's call reads (instant, stored result, actor's account, registration, move)", regexp.MustCompile(`AS c \(actor, key_account`)},
	{"a batch's held writes (events, moves, registrations, postings, game and lobby rows, results, audit; notifications)", regexp.MustCompile(`^WITH (new_games|games|lobby_rows|heads|players|moves|reveals|postings|events|results|audits) AS`)},
	{"a batch's stage changes (eliminate, count, seal, split, winner)", regexp.MustCompile(`^(UPDATE game_players p SET active = false|SELECT move, count|SELECT account_id::text, (encode|reveal)|WITH shares AS|SELECT account_id::text FROM game_players WHERE game_id = \$1 AND active ORDER BY ord)`)},
	{"standings (settling ended games)", regexp.MustCompile(`^WITH claim AS`)},
	{"clock worker (next deadline, due lobbies)", regexp.MustCompile(`^SELECT (min\(g\.deadline\)|l\.id::text, g\.deadline)`)},
	{"heartbeat (the outage rule)", regexp.MustCompile(`heartbeat`)},
	{"the clients' reads (lobbies, events, heads, accounts, transcripts)", regexp.MustCompile(`^(SELECT|WITH)`)},
	{"other", regexp.MustCompile(``)},
}

func classOf(query string) string {
	for _, c := range statementClassOrder {
		if c.re.MatchString(query) {
			return c.name
		}
	}
	return "other"
}

// playGames plays 10-player games one after another in a single lobby for d, to measure the
// per-action latency of a small lobby.
func playGames(ctx context.Context, url, admin string, accounts []bot.Account, conc int, d time.Duration) (bot.Report, error) {
	client, err := bot.NewClient(url, bot.ClientOptions{Conns: conc})
	if err != nil {
		return bot.Report{}, err
	}
	pool := bot.NewPool(conc)
	defer pool.Close()
	lobby, err := client.CreateLobby(ctx, admin, "bench 10 players", bot.GameSettings{Bet: 10, TimeoutMs: 60_000, Resolution: "weighted", MaxRounds: 20}.Input(len(accounts)))
	if err != nil {
		return bot.Report{}, err
	}
	seats, err := bot.NewSeats(accounts, "random", 1, nil)
	if err != nil {
		return bot.Report{}, err
	}
	client.Stats().Reset()
	quit, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	r := bot.NewRunner(bot.RunnerOptions{Client: client, Pool: pool, Lobby: lobby.Id.String(), Seats: seats,
		Admin: admin, StopOnQuit: true, Grace: time.Second, Logf: logf})
	err = r.Run(ctx, quit)
	return client.Stats().Report(), err
}

func logf(format string, args ...any) { fmt.Printf("warning: "+format+"\n", args...) }

// bigSize picks the big lobby's size: the flag's, or 100,000 if the play fits in the time left,
// else the largest that does. A game of n players takes about 3.5n actions (n registrations,
// then a commit and a reveal per player and round, with about a fifth of the players surviving
// each weighted round). One lobby runs its actions one at a time under its row lock, which
// measured at about 0.65 of the mixed load's rate over many lobbies; a further 20% is margin.
// Each player's account binds its key first (bindPerKey each, as the mixed load's did).
func bigSize(flagSize int, mixedRate float64, bindPerKey, left time.Duration) (int, string) {
	if flagSize > 0 {
		return flagSize, "--big (100,000 by default)"
	}
	const actionsPerPlayer = 3.5
	rate := mixedRate * 0.65
	perPlayer := actionsPerPlayer/max(rate, 1) + bindPerKey.Seconds()
	fits := int(left.Seconds() * 0.8 / perPlayer)
	if fits >= 100_000 {
		return 100_000, "the default; it fits the budget"
	}
	n := max(fits/1000*1000, 100)
	return n, fmt.Sprintf("the largest that fits the %s left at an expected %.0f actions/s in one lobby and %.0f keys bound a second "+
		"(100,000 would take about %.0f s)", left.Round(time.Second), rate, 1/max(bindPerKey.Seconds(), 1e-6), 100_000*perPlayer)
}

// playBig plays one weighted game of len(accounts) players and records its phases.
func playBig(ctx context.Context, url, admin string, accounts []bot.Account, conc int, res bigResult) bigResult {
	client, err := bot.NewClient(url, bot.ClientOptions{Conns: conc})
	if err != nil {
		res.err = err
		return res
	}
	pool := bot.NewPool(conc)
	defer pool.Close()
	// Windows long enough for every player to act, so that stages end by action, not expiry.
	lobby, err := client.CreateLobby(ctx, admin, "bench big lobby", bot.GameSettings{Bet: 1, TimeoutMs: 30 * 60_000, Resolution: "weighted", MaxRounds: 50}.Input(len(accounts)))
	if err != nil {
		res.err = err
		return res
	}
	seats, err := bot.NewSeats(accounts, "random", 7, nil)
	if err != nil {
		res.err = err
		return res
	}
	client.Stats().Reset()
	r := bot.NewRunner(bot.RunnerOptions{Client: client, Pool: pool, Lobby: lobby.Id.String(), Seats: seats, Games: 1,
		Admin: admin, StopOnQuit: true, Logf: logf,
		OnRound: func(rr bot.RoundResult) {
			res.rounds = append(res.rounds, rr)
			fmt.Printf("  round %d: %d revealed, %d left (commit %s, reveal %s)\n", rr.Round, rr.Revealed, rr.Remaining,
				rr.Commit.Round(time.Millisecond), rr.Reveal.Round(time.Millisecond))
		},
		OnGame: func(g bot.GameResult) { res.register, res.total, res.outcome = g.Registration, g.Total, g.Outcome },
	})
	// The game gets the whole context; quitting at its end stops the game (bets split) if late.
	quit, cancel := context.WithTimeout(ctx, time.Until(deadlineOf(ctx))-20*time.Second)
	defer cancel()
	res.err = r.Run(context.WithoutCancel(ctx), quit)
	res.stats = client.Stats().Report()
	return res
}

func deadlineOf(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(time.Hour)
}

// goBenchmarks runs Go benchmarks (go test -run '^$' and args) and returns their result lines.
func goBenchmarks(ctx context.Context, args ...string) []string {
	cmd := exec.CommandContext(ctx, "go", append([]string{"test", "-run", "^$"}, args...)...)
	out, err := cmd.CombinedOutput()
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "Benchmark") || strings.HasPrefix(sc.Text(), "cpu:") {
			lines = append(lines, sc.Text())
		}
	}
	if err != nil {
		lines = append(lines, "go test -bench failed: "+err.Error()+": "+lastLines(string(out), 5))
	}
	return lines
}
