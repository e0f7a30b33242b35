// Command rpsd is the tournament server: it serves the HTTP API and runs the stage clock.
//
//	rpsd [serve]       migrate, then serve the API and run the clock (the default)
//	rpsd migrate       apply the database migrations and exit
//	rpsd admin token   print a fresh token for the bootstrap admin, revoking the old one
//	rpsd key rotate    retire the key that signs chain heads and checkpoints and make a new one (old ones stay
//	                   published), the old key signing the log's hand-over to it
//	rpsd healthcheck   exit 0 when the server at RPSD_ADDR is ready (for container health checks)
//	rpsd restore [T]   rebuild the private cluster from RPSD_BACKUP_REPO: to the end of the WAL, or to the
//	                   RFC 3339 time T (README, "Backups and restores")
//
// Without DATABASE_URL it runs a private PostgreSQL cluster from the machine's binaries under
// RPSD_DATA_DIR. Run `rpsd --help` for every setting.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/clock"
	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/internal/pgcluster"
	"github.com/commitreveal/rps/internal/publishedlog"
	"github.com/commitreveal/rps/logpublish"
	"github.com/commitreveal/rps/migrations"
	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
	"github.com/commitreveal/rps/translog"
)

// settings are read from the environment; --help lists them.
type settings struct {
	databaseURL  string
	addr         string
	adminToken   string
	minTimeoutMs int64
	// requireKeys refuses every unsigned player action (RPSD_PLAYER_KEYS=required).
	requireKeys bool
	// requireAdminKeys refuses every unsigned admin action (RPSD_ADMIN_KEYS=required).
	requireAdminKeys bool
	dataDir          string
	outage           time.Duration
	maxConns         int32
	committers       int
	accountRate      float64
	ipRate           float64
	signupRate       float64
	debugAddr        string
	metricsAddr      string
	http             api.HTTPLimits
	maxWaits         int
	streamWrite      time.Duration
	logOrigin        string
	witnesses        []logpublish.Witness
	logPeriod        time.Duration
	backup           pgcluster.Backup
	backupPeriod     time.Duration
	markFile         string
}

var settingDocs = []struct{ name, def, doc string }{
	{"DATABASE_URL", "", "PostgreSQL URL; without it rpsd runs a private cluster under RPSD_DATA_DIR"},
	{"RPSD_ADDR", ":8080", "address the HTTP API listens on"},
	{"RPSD_ADMIN_TOKEN", "", "token of the bootstrap admin when the first start creates it (at least 32 characters); ignored, with a warning, once the admin exists; without it a token is generated and printed once"},
	{"RPSD_MIN_TIMEOUT_MS", strconv.Itoa(tournament.DefaultMinTimeoutMs), "shortest stage timeout a game config may set (tests lower it)"},
	{"RPSD_PLAYER_KEYS", "required", "required: every player action (register, leave, commit, reveal, quick join) must be signed by a key of the player's (a money game: an unsigned action is one the operator could have made in the player's name); optional: an account without a key may act unsigned (an account with a key must always sign)"},
	{"RPSD_ADMIN_KEYS", "optional", "required: every admin action (credits, debits, lobbies, configs, stops, tokens, disabling, key recoveries) must be signed by a key of the admin's, bound with POST /v1/me/keys; optional: an admin without a key may act unsigned (an admin with a key must always sign)"},
	{"RPSD_DATA_DIR", "./.rpsd", "folder of the private PostgreSQL cluster"},
	{"RPSD_OUTAGE_THRESHOLD_MS", "5000", "a gap without any replica's heartbeat longer than this (every replica down, or the database out of every replica's reach) shifts every open deadline by the gap; at least 1000"},
	{"RPSD_DB_MAX_CONNS", "16", "database connections in the pool (a pool_max_conns in DATABASE_URL wins)"},
	{"RPSD_COMMITTERS", strconv.Itoa(store.DefaultCommitters), "transactions of players' and admins' actions that may run at once, each for its own share of the lobbies; the actions that arrive meanwhile share the next one (fewer: more actions per transaction, less database work per action; more: a long stage change holds back fewer lobbies); at most RPSD_DB_MAX_CONNS - 1"},
	{"RPSD_ACCOUNT_RATE", "50", "requests per second an account may make on average, bursts of twice that (0: no limit)"},
	{"RPSD_IP_RATE", "20", "requests per second an address may make without a valid token (0: no limit)"},
	{"RPSD_SIGNUP_RATE", "0.5", "accounts per second an address may create, bursts of 10 (0: no limit)"},
	{"RPSD_DEBUG_ADDR", "", "address of a separate listener serving Go's profiler (/debug/pprof/); keep it private"},
	{"RPSD_TRUSTED_PROXIES", "", "comma-separated CIDRs of reverse proxies whose X-Forwarded-For names the client (for per-address limits); from anyone else the header is ignored"},
	{"RPSD_MAX_CONNS_PER_ADDR", "64", "open connections one address may hold (trusted proxies exempt; 0: no cap)"},
	{"RPSD_MAX_WAITS_PER_CLIENT", "8", "event streams and long polls one account or address may hold open at once"},
	{"RPSD_STREAM_WRITE_TIMEOUT_MS", strconv.Itoa(int(api.DefaultStreamWriteTimeout.Milliseconds())), "how long a write to an event stream or a long poll's answer may wait for the client to take its bytes; past it the client is disconnected (it resumes with Last-Event-ID)"},
	{"RPSD_METRICS_ADDR", "", "address of a separate listener serving Prometheus metrics (/metrics); unset: metrics are not served"},
	{"RPSD_LOG_ORIGIN", "", "origin of the transparency log, a schema-less URL such as rps.example.com/log (where /log/ is served); fixed when the log is created; unset: rps.invalid/<key id> for a new log"},
	{"RPSD_LOG_WITNESSES", "", "witnesses that cosign the log's checkpoints: comma-separated entries of a URL and its verifier key separated by a space"},
	{"RPSD_LOG_PERIOD_MS", "1000", "time between two integrations of new events into the transparency log"},
	{"RPSD_LOG_MARK_FILE", "", "file that keeps the newest checkpoint this server published, outside the database (rpsd refuses a database whose log is behind it); unset: published-checkpoint in RPSD_DATA_DIR with the private cluster, none with DATABASE_URL"},
	{"RPSD_BACKUP_REPO", "", "private cluster only: pgBackRest repository (a folder, best on another disk) receiving every WAL segment and the backups; unset: no backups"},
	{"RPSD_BACKUP_SYNC", "0", "1: every commit is streamed into RPSD_BACKUP_REPO (pg_receivewal --synchronous) before it is acknowledged, so losing the database's disks loses nothing acknowledged"},
	{"RPSD_BACKUP_PERIOD_MS", "86400000", "time between two backups of the private cluster (incremental; full when the newest full one is a week old)"},
}

// minAdminTokenLength is the shortest RPSD_ADMIN_TOKEN accepted: the admin can move any money.
const minAdminTokenLength = 32

// minOutageThresholdMs is the shortest RPSD_OUTAGE_THRESHOLD_MS accepted.
const minOutageThresholdMs = 1000

func usage() {
	out := flag.CommandLine.Output()
	fmt.Fprintf(out, "usage: rpsd [serve | migrate | admin token | key rotate | healthcheck | restore [time]]\n\nsettings (environment variables):\n")
	for _, s := range settingDocs {
		def := s.def
		if def == "" {
			def = "unset"
		}
		fmt.Fprintf(out, "  %-26s %s (default: %s)\n", s.name, s.doc, def)
	}
}

// gcPercent is the garbage collector's target when GOGC is not set: the heap may grow to five
// times what is live between collections, instead of Go's two. In the bench's mixed load the
// collector and runtime took 177 µs of rpsd's CPU per action at Go's default, 80 at 400.
const gcPercent = 400

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
	flag.Usage = usage
	flag.Parse()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	slog.SetDefault(log)
	if err := run(flag.Args(), log); err != nil {
		log.Error("rpsd failed", "err", err)
		os.Exit(1)
	}
}

func loadSettings() (settings, error) {
	env := func(name string) string {
		if v, ok := os.LookupEnv(name); ok {
			return v
		}
		for _, s := range settingDocs {
			if s.name == name {
				return s.def
			}
		}
		return ""
	}
	s := settings{
		databaseURL: env("DATABASE_URL"), addr: env("RPSD_ADDR"), adminToken: env("RPSD_ADMIN_TOKEN"),
		dataDir: env("RPSD_DATA_DIR"), debugAddr: env("RPSD_DEBUG_ADDR"), metricsAddr: env("RPSD_METRICS_ADDR"),
	}
	if n := len(s.adminToken); n > 0 && n < minAdminTokenLength {
		return s, fmt.Errorf("RPSD_ADMIN_TOKEN must be at least %d characters, got %d", minAdminTokenLength, n)
	}
	var err error
	if s.requireKeys, err = required(env, "RPSD_PLAYER_KEYS"); err != nil {
		return s, err
	}
	if s.requireAdminKeys, err = required(env, "RPSD_ADMIN_KEYS"); err != nil {
		return s, err
	}
	if s.minTimeoutMs, err = strconv.ParseInt(env("RPSD_MIN_TIMEOUT_MS"), 10, 64); err != nil || s.minTimeoutMs <= 0 {
		return s, fmt.Errorf("RPSD_MIN_TIMEOUT_MS must be a positive number of milliseconds")
	}
	outage, err := strconv.ParseInt(env("RPSD_OUTAGE_THRESHOLD_MS"), 10, 64)
	if err != nil || outage < minOutageThresholdMs {
		// Replicas beat every quarter of it, at most every second: a shorter threshold would take
		// a hiccup of the database for an outage.
		return s, fmt.Errorf("RPSD_OUTAGE_THRESHOLD_MS must be a number of milliseconds, at least %d", minOutageThresholdMs)
	}
	s.outage = time.Duration(outage) * time.Millisecond
	maxConns, err := strconv.ParseInt(env("RPSD_DB_MAX_CONNS"), 10, 32)
	if err != nil || maxConns < 2 {
		return s, fmt.Errorf("RPSD_DB_MAX_CONNS must be a number of connections, at least 2")
	}
	s.maxConns = int32(maxConns)
	committers, err := strconv.Atoi(env("RPSD_COMMITTERS"))
	if err != nil || committers < 1 || committers >= int(maxConns) {
		return s, fmt.Errorf("RPSD_COMMITTERS must be a number of transactions, from 1 to RPSD_DB_MAX_CONNS - 1 (%d)", maxConns-1)
	}
	s.committers = committers
	for _, r := range []struct {
		name string
		dest *float64
	}{{"RPSD_ACCOUNT_RATE", &s.accountRate}, {"RPSD_IP_RATE", &s.ipRate}, {"RPSD_SIGNUP_RATE", &s.signupRate}} {
		if *r.dest, err = strconv.ParseFloat(env(r.name), 64); err != nil || *r.dest < 0 {
			return s, fmt.Errorf("%s must be a number of requests per second, 0 for no limit", r.name)
		}
	}
	s.http = api.DefaultHTTPLimits()
	for _, cidr := range strings.FieldsFunc(env("RPSD_TRUSTED_PROXIES"), func(r rune) bool { return r == ',' || r == ' ' }) {
		prefix, err := netip.ParsePrefix(cidr)
		if err != nil {
			return s, fmt.Errorf("RPSD_TRUSTED_PROXIES: %q is not a CIDR such as 10.0.0.0/8", cidr)
		}
		s.http.TrustedProxies = append(s.http.TrustedProxies, prefix.Masked())
	}
	if s.http.MaxConnsPerAddress, err = strconv.Atoi(env("RPSD_MAX_CONNS_PER_ADDR")); err != nil || s.http.MaxConnsPerAddress < 0 {
		return s, fmt.Errorf("RPSD_MAX_CONNS_PER_ADDR must be a number of connections, 0 for no cap")
	}
	if s.maxWaits, err = strconv.Atoi(env("RPSD_MAX_WAITS_PER_CLIENT")); err != nil || s.maxWaits < 1 {
		return s, fmt.Errorf("RPSD_MAX_WAITS_PER_CLIENT must be a positive number")
	}
	streamWrite, err := strconv.ParseInt(env("RPSD_STREAM_WRITE_TIMEOUT_MS"), 10, 64)
	if err != nil || streamWrite <= 0 {
		return s, fmt.Errorf("RPSD_STREAM_WRITE_TIMEOUT_MS must be a positive number of milliseconds")
	}
	s.streamWrite = time.Duration(streamWrite) * time.Millisecond
	s.logOrigin = env("RPSD_LOG_ORIGIN")
	if s.witnesses, err = logpublish.ParseWitnesses(env("RPSD_LOG_WITNESSES")); err != nil {
		return s, fmt.Errorf("RPSD_LOG_WITNESSES: %w", err)
	}
	period, err := strconv.ParseInt(env("RPSD_LOG_PERIOD_MS"), 10, 64)
	if err != nil || period < 10 || period > 60_000 {
		return s, fmt.Errorf("RPSD_LOG_PERIOD_MS must be a number of milliseconds between 10 and 60000")
	}
	s.logPeriod = time.Duration(period) * time.Millisecond
	s.markFile = env("RPSD_LOG_MARK_FILE")
	if s.markFile == "" && s.databaseURL == "" {
		s.markFile = publishedlog.DefaultPath(s.dataDir)
	}
	s.backup = pgcluster.Backup{Repo: env("RPSD_BACKUP_REPO"), Sync: env("RPSD_BACKUP_SYNC") == "1"}
	if s.backup.Sync && s.backup.Repo == "" {
		return s, fmt.Errorf("RPSD_BACKUP_SYNC=1 streams the WAL into RPSD_BACKUP_REPO: set it too")
	}
	backupPeriod, err := strconv.ParseInt(env("RPSD_BACKUP_PERIOD_MS"), 10, 64)
	if err != nil || backupPeriod < 1000 {
		return s, fmt.Errorf("RPSD_BACKUP_PERIOD_MS must be a number of milliseconds, at least 1000")
	}
	s.backupPeriod = time.Duration(backupPeriod) * time.Millisecond
	return s, nil
}

func run(args []string, log *slog.Logger) error {
	cfg, err := loadSettings()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	command := "serve"
	if len(args) > 0 {
		command = args[0]
	}
	switch {
	case command == "serve" && len(args) <= 1:
	case command == "migrate" && len(args) == 1:
	case command == "admin" && len(args) == 2 && args[1] == "token":
	case command == "key" && len(args) == 2 && args[1] == "rotate":
	case command == "healthcheck" && len(args) == 1:
		return healthcheck(ctx, cfg.addr)
	case command == "restore" && len(args) <= 2:
		return restore(ctx, cfg, args[1:], log)
	default:
		usage()
		return fmt.Errorf("unknown command %q", args)
	}

	databaseURL, cluster, err := database(ctx, cfg, log)
	if err != nil {
		return err
	}
	if cluster != nil {
		// The private cluster belongs to the serving rpsd of its folder: a serving process stops
		// it on the way out, also one it found left running by a killed predecessor; a one-off
		// command stops only a cluster it started itself, never one a running server uses.
		owner := cluster.Started()
		if command == "serve" {
			release, err := serveLock(cfg.dataDir)
			if err != nil {
				if !owner {
					return err
				}
				_ = cluster.Stop()
				return err
			}
			defer release()
			owner = true
		}
		if owner {
			defer func() {
				if err := cluster.Stop(); err != nil {
					log.Error("stop private cluster", "err", err)
				}
			}()
		}
	}
	if err := migrations.Up(ctx, databaseURL); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if command == "migrate" {
		log.Info("migrations applied")
		return nil
	}

	pool, err := openPool(ctx, databaseURL, cfg.maxConns)
	if err != nil {
		return err
	}
	defer pool.Close()
	metrics := api.NewMetrics(pool)
	service := tournament.NewService(tournament.Options{Rules: engine.Builtin(), MinTimeoutMs: cfg.minTimeoutMs, NewID: uuid.NewString, NewSalt: store.NewSalt,
		RequireKeys: cfg.requireKeys})
	st := store.New(pool, store.Options{Service: service, Logger: log, OutageThreshold: cfg.outage, Committers: cfg.committers})
	defer st.Close()
	metrics.ExportWrites(st.WriteStats)

	if command == "admin" {
		token, err := st.RotateAdminToken(ctx)
		if err != nil {
			return err
		}
		fmt.Println(token)
		return nil
	}
	if command == "key" {
		k, err := st.RotateSigningKey(ctx)
		if err != nil {
			return err
		}
		// Only the public half is ever shown.
		fmt.Printf("signing key %s (public %x)\n", k.ID, []byte(k.Public))
		// Checkpoints are signed with the new key from now on: witnesses and clients need its
		// note verifier key (README: "Key rotation").
		if logState, err := st.LogState(ctx); err == nil {
			vkey, err := translog.VerifierKey(logState.Origin, k.Public)
			if err != nil {
				return err
			}
			fmt.Printf("transparency log verifier key: %s\n", vkey)
			if k.Rotation != nil {
				// Clients that pinned the old key follow the statement; witnesses are told by their operators.
				fmt.Printf("the old key signed the hand-over (GET /v1/log lists it with the new key):\n%s", k.Rotation)
			}
			fmt.Printf("add the new key to the log's witnesses (witnessctl add-key -origin %s -key %s): until then they cosign nothing\n", logState.Origin, vkey)
		}
		return nil
	}
	// Before anything is written or backed up: a log behind what was published is never served.
	if cfg.markFile != "" {
		if err := publishedlog.Check(ctx, st, cfg.markFile); err != nil {
			return err
		}
	}
	if cluster != nil && cfg.backup.Repo != "" {
		go cluster.BackUpEvery(ctx, cfg.backupPeriod)
	}
	return serve(ctx, cfg, st, metrics, log)
}

// database returns the URL to use: DATABASE_URL, or the private cluster's, started on demand.
func database(ctx context.Context, cfg settings, log *slog.Logger) (string, *pgcluster.Cluster, error) {
	if cfg.databaseURL != "" {
		return cfg.databaseURL, nil, nil
	}
	dir, err := filepath.Abs(cfg.dataDir)
	if err != nil {
		return "", nil, fmt.Errorf("data dir: %w", err)
	}
	cluster, err := pgcluster.Start(ctx, pgcluster.Options{Dir: dir, Logger: log, Backup: cfg.backup})
	if err != nil {
		return "", nil, fmt.Errorf("private cluster in %s: %w", dir, err)
	}
	// rpsd migrates and serves as a role of its own that owns the database and is no superuser.
	url, err := cluster.EnsureApp(ctx, "rps", "rps")
	if err != nil {
		_ = cluster.Stop()
		return "", nil, err
	}
	log.Info("private cluster", "dir", dir, "port", cluster.Port(), "reused", !cluster.Started())
	return url, cluster, nil
}

// restore rebuilds the private cluster's data folder from RPSD_BACKUP_REPO (README, "Backups and
// restores"): to the end of the WAL, or to the last commit at or before the RFC 3339 time given.
func restore(ctx context.Context, cfg settings, args []string, log *slog.Logger) error {
	if cfg.databaseURL != "" || cfg.backup.Repo == "" {
		return errors.New("rpsd restore restores the private cluster: unset DATABASE_URL and set RPSD_BACKUP_REPO (the formation's: README, \"Backups and restores\")")
	}
	var target pgcluster.RestoreTarget
	if len(args) == 1 {
		t, err := time.Parse(time.RFC3339Nano, args[0])
		if err != nil {
			return fmt.Errorf("restore to %q: want an RFC 3339 time such as 2026-11-27T14:05:00Z", args[0])
		}
		target.Time = t
	}
	dir, err := filepath.Abs(cfg.dataDir)
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	return pgcluster.Restore(ctx, pgcluster.Options{Dir: dir, Logger: log, Backup: cfg.backup}, target)
}

// serveInternal serves h on addr, a listener meant for operators only (none when addr is empty),
// and returns what closes it.
func serveInternal(addr, name string, h http.Handler, log *slog.Logger) (closeIt func()) {
	if addr == "" {
		return func() {}
	}
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(name+" listener", "err", err)
		}
	}()
	return func() { _ = srv.Close() }
}

func serve(ctx context.Context, cfg settings, st *store.Store, metrics *api.Metrics, log *slog.Logger) error {
	if cfg.markFile != "" {
		go publishedlog.Keep(ctx, st, cfg.markFile, time.Second, log)
	}
	if _, err := st.Recover(ctx); err != nil {
		return fmt.Errorf("recover after outage: %w", err)
	}
	token, created, err := st.EnsureAdmin(ctx, cfg.adminToken)
	if err != nil {
		return fmt.Errorf("bootstrap admin: %w", err)
	}
	if created && cfg.adminToken == "" {
		// Printed once, on standard output, so that it stays out of the logs.
		fmt.Printf("admin token: %s\n", token)
	}
	if !created && cfg.adminToken != "" {
		if a, _, _, err := st.AccountByToken(ctx, cfg.adminToken); err != nil || a.Role != tournament.RoleAdmin {
			log.Warn("RPSD_ADMIN_TOKEN IS IGNORED: the bootstrap admin exists and its token is another one " +
				"(rotated since); it only sets the token of a new admin. Run `rpsd admin token` for a new token, " +
				"and remove RPSD_ADMIN_TOKEN")
		}
	}
	key, err := st.CurrentSigningKey(ctx)
	if err != nil {
		return err
	}
	log.Info("signing chain heads", "keyId", key.ID)
	logSeq, err := logpublish.New(ctx, logpublish.Config{
		Store: st, Origin: cfg.logOrigin, Witnesses: cfg.witnesses, Period: cfg.logPeriod,
		Logger: log, Registerer: metrics.Registry,
	})
	if err != nil {
		return fmt.Errorf("transparency log: %w", err)
	}
	if err := logSeq.CheckWitnesses(ctx); err != nil {
		return err
	}
	log.Info("transparency log", "origin", logSeq.Origin(), "witnesses", len(cfg.witnesses))
	// Key rotations made before their hand-over was signed get it now (README: "Key rotation").
	if n, err := st.SignPastRotations(ctx); err != nil {
		return err
	} else if n > 0 {
		log.Info("signed the log's hand-over of past key rotations", "count", n)
	}
	var witnesses []api.WitnessConfig
	for _, w := range cfg.witnesses {
		witnesses = append(witnesses, api.WitnessConfig{Name: w.Name(), VerifierKey: w.VerifierKey, URL: w.URL})
	}

	server, err := api.NewServer(api.Config{
		Store: st, Logger: log, Metrics: metrics,
		TokenLimit:          api.RateLimit{Rate: cfg.accountRate, Burst: max(1, int(2*cfg.accountRate))},
		IPLimit:             api.RateLimit{Rate: cfg.ipRate, Burst: max(1, int(2*cfg.ipRate))},
		AccountLimit:        api.RateLimit{Rate: cfg.signupRate, Burst: 10},
		MaxStreamsPerClient: cfg.maxWaits, StreamWriteTimeout: cfg.streamWrite, TrustedProxies: cfg.http.TrustedProxies, Witnesses: witnesses,
		RequireAdminKeys: cfg.requireAdminKeys,
	})
	if err != nil {
		return err
	}
	// net/http/pprof registers on the default mux, which only the debug listener serves.
	defer serveInternal(cfg.debugAddr, "debug", http.DefaultServeMux, log)()
	metricsMux := http.NewServeMux()
	metricsMux.Handle("GET /metrics", server.MetricsHandler())
	defer serveInternal(cfg.metricsAddr, "metrics", metricsMux, log)()
	listener, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	listener = api.LimitConnsPerAddress(api.ResetStalledConns(listener), cfg.http)
	httpServer := api.NewHTTPServer(server.Handler(), cfg.http)

	clockDone := make(chan error, 1)
	// The clock outlives the signal until in-flight requests are done.
	clockCtx, stopClock := context.WithCancel(context.WithoutCancel(ctx))
	defer stopClock()
	worker := clock.New(st, clock.Options{Logger: log, OnExpiry: metrics.ObserveExpiry})
	go func() { clockDone <- worker.Run(clockCtx) }()
	logDone := make(chan error, 1)
	go func() { logDone <- logSeq.Run(clockCtx) }()
	serveDone := make(chan error, 1)
	go func() { serveDone <- httpServer.Serve(listener) }()
	log.Info("serving", "addr", listener.Addr().String())

	select {
	case <-ctx.Done():
	case err := <-serveDone:
		return fmt.Errorf("serve: %w", err)
	case err := <-clockDone:
		_ = httpServer.Close()
		return fmt.Errorf("clock: %w", err)
	}
	log.Info("shutting down")
	server.Shutdown()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := httpServer.Shutdown(shutdownCtx); err != nil {
		log.Error("http shutdown", "err", err)
	}
	stopClock()
	if err := <-clockDone; err != nil && !errors.Is(err, context.Canceled) {
		log.Error("clock", "err", err)
	}
	if err := <-logDone; err != nil && !errors.Is(err, context.Canceled) {
		log.Error("transparency log", "err", err)
	}
	return nil
}

// healthcheck asks the server listening on addr whether it is ready.
func healthcheck(ctx context.Context, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("RPSD_ADDR: %w", err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("readyz: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("readyz: %s", resp.Status)
	}
	return nil
}

// serveLock makes sure a single rpsd serves from a data folder: it holds an advisory lock on a
// file there until release (the kernel drops it if the process dies, even by SIGKILL).
func serveLock(dataDir string) (release func(), err error) {
	path := filepath.Join(dataDir, "rpsd.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("another rpsd is already serving from %s (lock %s: %w)", dataDir, path, err)
	}
	return func() { f.Close() }, nil
}

// openPool opens the database pool with maxConns connections unless the URL sets its own.
func openPool(ctx context.Context, databaseURL string, maxConns int32) (*pgxpool.Pool, error) {
	poolConfig, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		// The parse error would echo the URL, password included.
		return nil, errors.New("DATABASE_URL does not parse as a PostgreSQL URL")
	}
	if !strings.Contains(databaseURL, "pool_max_conns=") {
		poolConfig.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, poolConfig)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	return pool, nil
}

// required reads a setting that is "required" or "optional".
func required(env func(string) string, name string) (bool, error) {
	switch env(name) {
	case "required":
		return true, nil
	case "optional":
		return false, nil
	}
	return false, fmt.Errorf("%s must be required or optional", name)
}
