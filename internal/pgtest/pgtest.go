// Package pgtest owns PostgreSQL for the Go tests of one test process: a
// throwaway cluster, started on first use from the machine's binaries, a
// template database migrated once, and a fresh clone of it per test.
//
// A package whose tests use it calls Main from TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// and each test takes its own database with New or NewURL, so tests may run
// in parallel.
package pgtest

import (
	"context"
	"fmt"
	"log"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commitreveal/rps/internal/pgcluster"
	"github.com/commitreveal/rps/migrations"
	"github.com/jackc/pgx/v5/pgxpool"
)

const templateDB = "rps_template"

// settings for the throwaway cluster. fsync and its companions are off
// because a crash only loses a test run; never use them for data that
// matters. Parallel tests each hold a pool, hence the many connections.
var settings = map[string]string{
	"fsync":              "off",
	"synchronous_commit": "off",
	"full_page_writes":   "off",
	"max_connections":    "300",
	"shared_buffers":     "32MB",
}

var (
	inMain atomic.Bool  // Main is running the tests
	dbSeq  atomic.Int64 // numbers the per-test databases

	mu       sync.Mutex
	cluster  *pgcluster.Cluster
	dir      string
	startErr error // a failed start is not retried by every test
	template bool  // templateDB exists and is migrated
	tmplErr  error
)

// Main runs the tests of m and then stops the cluster, if a test started
// one, removes its directory and exits with the tests' status. A watchdog
// process stops and removes the cluster too if the test process dies
// first (SIGINT, SIGTERM, a panic, a test timeout, SIGKILL).
func Main(m *testing.M) {
	inMain.Store(true)
	code := m.Run()
	inMain.Store(false)
	mu.Lock()
	if cluster != nil {
		if err := cluster.Stop(); err != nil {
			log.Printf("pgtest: %v", err)
			code = max(code, 1)
		}
	}
	if dir != "" {
		if err := os.RemoveAll(dir); err != nil {
			log.Printf("pgtest: remove cluster dir: %v", err)
		}
	}
	mu.Unlock()
	os.Exit(code)
}

// Cluster returns the process's cluster, starting it on first use. It
// fails the test if the PostgreSQL binaries are missing.
func Cluster(t testing.TB) *pgcluster.Cluster {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	c, err := startLocked()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func startLocked() (*pgcluster.Cluster, error) {
	if !inMain.Load() {
		// Without Main nobody would stop the cluster.
		return nil, fmt.Errorf("pgtest: call pgtest.Main from TestMain")
	}
	if cluster != nil || startErr != nil {
		return cluster, startErr
	}
	start := time.Now()
	cluster, startErr = startCluster()
	if startErr == nil && testing.Verbose() {
		log.Printf("pgtest: cluster started on port %d in %v", cluster.Port(), time.Since(start).Round(time.Millisecond))
	}
	return cluster, startErr
}

func startCluster() (*pgcluster.Cluster, error) {
	if _, err := pgcluster.FindBinaries(); err != nil {
		return nil, err
	}
	// Under /tmp, not in t.TempDir: as root the cluster runs as the postgres
	// user, which cannot enter a 0700 parent of the test's temp dirs.
	d, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: cluster dir: %w", err)
	}
	dir = d
	if err := os.Chmod(d, 0o755); err != nil {
		return nil, fmt.Errorf("pgtest: cluster dir: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := pgcluster.Start(ctx, pgcluster.Options{Dir: d, Settings: settings})
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	if err := c.StopAtExit(true); err != nil {
		return c, fmt.Errorf("pgtest: %w", err)
	}
	return c, nil
}

// migratedTemplate returns the cluster, with templateDB created and
// migrated once per process.
func migratedTemplate() (*pgcluster.Cluster, error) {
	mu.Lock()
	defer mu.Unlock()
	c, err := startLocked()
	if err != nil || template || tmplErr != nil {
		return c, err
	}
	tmplErr = func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		start := time.Now()
		if err := c.CreateDatabase(ctx, templateDB, ""); err != nil {
			return fmt.Errorf("pgtest: %w", err)
		}
		if err := migrations.Up(ctx, c.URL(templateDB)); err != nil {
			return fmt.Errorf("pgtest: migrate template: %w", err)
		}
		if testing.Verbose() {
			log.Printf("pgtest: template database migrated in %v", time.Since(start).Round(time.Millisecond))
		}
		return nil
	}()
	template = tmplErr == nil
	return c, tmplErr
}

// NewURL creates a database for the test, a clone of the migrated
// template, and returns its URL. The database is dropped when the test
// ends, disconnecting whatever still uses it (such as a server the test
// started).
func NewURL(t testing.TB) string {
	t.Helper()
	c, err := migratedTemplate()
	if err != nil {
		t.Fatal(err)
	}
	name := "t_" + strconv.FormatInt(dbSeq.Add(1), 10)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.CreateDatabase(ctx, name, templateDB); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.DropDatabase(ctx, name); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return c.URL(name)
}

// New creates a database for the test like NewURL and returns a pool
// connected to it, closed when the test ends.
func New(t testing.TB) *pgxpool.Pool {
	t.Helper()
	url := NewURL(t)
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatalf("pgtest: open pool: %v", err)
	}
	// Registered after NewURL's cleanup, so it runs before the drop.
	t.Cleanup(pool.Close)
	return pool
}
