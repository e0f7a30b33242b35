package store

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/internal/pgcluster"
	"github.com/commitreveal/rps/migrations"
	"github.com/commitreveal/rps/tournament"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// BenchmarkHeldWrites measures what PostgreSQL spends per action on transactions of 1, 4 and 32
// mixed actions (registrations, commits and reveals of 10-player lobbies, each with its
// idempotency record; every 30th action of a lobby ends a game), each action on its own lobby,
// through the committer's own path (commitBatch): backend CPU per action (pg-µs/action, from
// /proc/<pid>/schedstat of the store's connections) and, from pg_stat_statements, the held-writes
// statement's planning and execution time per action (writes-µs/action) and its calls per
// action. The tables are of a realistic size (a 100,000-player round, 100,000 events and
// idempotency records) so that a plan scanning one would show.
//
// The cluster is its own, with pg_stat_statements loaded: go test -run '^$' -bench HeldWrites
// -benchtime 2000x ./store (b.N counts actions).
func BenchmarkHeldWrites(b *testing.B) {
	w := newMixedWorld(b, statsCluster(b), 32)
	for _, size := range []int{1, 4, 32} {
		b.Run(fmt.Sprint("batch=", size), func(b *testing.B) { w.bench(b, size) })
	}
}

// statsCluster starts a cluster of the benchmark's own, with pg_stat_statements, stopped when it
// ends.
func statsCluster(b *testing.B) *pgcluster.Cluster {
	b.Helper()
	if _, err := pgcluster.FindBinaries(); err != nil {
		b.Skip(err)
	}
	dir, err := os.MkdirTemp("", "heldwrites-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := pgcluster.Start(ctx, pgcluster.Options{Dir: filepath.Join(dir, "pg"), Settings: map[string]string{
		"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off",
		"shared_preload_libraries":          "pg_stat_statements",
		"pg_stat_statements.track_planning": "on",
		"pg_stat_statements.max":            "1000",
	}})
	if err != nil {
		b.Fatal(err)
	}
	if err := c.StopAtExit(true); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Stop() })
	return c
}

// mixedWorld is a store over a database of its own with lobbies of 10 players, each lobby's
// actions cycling through its games: 10 registrations (the last starts round 1), 10 commits, 10
// reveals (the last resolves the round: player 1's rock beats the others' scissors, and wins).
type mixedWorld struct {
	s       *Store
	url     string
	lobbies []tournament.LobbyID
	players [][]tournament.Actor
	step    []int
	next    int // the lobby of the next action
	keys    int
	// backends are the pids of the store's connections.
	mu       sync.Mutex
	backends []uint32
}

const mixedPlayers = 10

func newMixedWorld(b *testing.B, c *pgcluster.Cluster, lobbies int) *mixedWorld {
	b.Helper()
	ctx := context.Background()
	name := "mixed"
	if err := c.CreateDatabase(ctx, name, ""); err != nil {
		b.Fatal(err)
	}
	url := c.URL(name)
	if err := migrations.Up(ctx, url); err != nil {
		b.Fatal(err)
	}
	if err := execURL(ctx, url, `CREATE EXTENSION pg_stat_statements`); err != nil {
		b.Fatal(err)
	}
	w := &mixedWorld{url: url}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		b.Fatal(err)
	}
	cfg.AfterConnect = func(_ context.Context, conn *pgx.Conn) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.backends = append(w.backends, conn.PgConn().PID())
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	w.s = New(pool, Options{Service: fastService(), Now: func() int64 { return time.Now().UnixMilli() }})

	adm := tournament.Actor{Role: tournament.RoleAdmin}
	game := tournament.DefaultConfig()
	game.PlayersCountLimit, game.StartWhenFull, game.BetSize = mixedPlayers, true, 10
	game.EntryTimeoutMs, game.MoveTimeoutMs, game.RevealTimeoutMs = tournament.MaxTimeoutMs, tournament.MaxTimeoutMs, tournament.MaxTimeoutMs
	for l := range lobbies {
		var lobby tournament.LobbyID
		err := w.s.Run(ctx, func(tx tournament.Tx, now int64) (err error) {
			lobby, err = w.s.service.CreateLobby(ctx, tx, now, adm, "mixed", game)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		var actors []tournament.Actor
		for p := range mixedPlayers {
			a, _, err := w.s.CreateAccount(ctx, fmt.Sprintf("mixed-%d-%d", l, p), tournament.RolePlayer)
			if err != nil {
				b.Fatal(err)
			}
			err = w.s.Run(ctx, func(tx tournament.Tx, now int64) error {
				_, err := w.s.service.Credit(ctx, tx, now, adm, a.ID, 1_000_000_000, tournament.MoneyNote{})
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
			actors = append(actors, tournament.Actor{ID: a.ID, Role: a.Role})
		}
		w.lobbies, w.players = append(w.lobbies, lobby), append(w.players, actors)
	}
	w.step = make([]int, lobbies)
	seedRealisticTables(b, w.s, 100_000)
	return w
}

// mixedAction is an action of the benchmark with its idempotency key.
type mixedAction struct {
	actor tournament.Actor
	op    tournament.Operation
	key   *IdempotencyKey
}

// action returns the next action on the next lobby.
func (w *mixedWorld) action() mixedAction {
	l := w.next
	w.next = (w.next + 1) % len(w.lobbies)
	i := w.step[l] % (3 * mixedPlayers)
	w.step[l]++
	p := i % mixedPlayers
	actor, lobby := w.players[l][p], w.lobbies[l]
	reveal := "2scissors-" + strconv.Itoa(p)
	if p == 0 {
		reveal = "0rock"
	}
	var op tournament.Operation
	route := "/v1/lobbies/{id}/"
	switch i / mixedPlayers {
	case 0:
		op, route = tournament.Register{LobbyID: lobby}, route+"register"
	case 1:
		op, route = tournament.Commit{LobbyID: lobby, Commitment: engine.Commit(reveal)}, route+"commit"
	default:
		op, route = tournament.Reveal{LobbyID: lobby, Reveal: reveal}, route+"reveal"
	}
	w.keys++
	hash := sha256.Sum256([]byte(strconv.Itoa(w.keys)))
	key := &IdempotencyKey{AccountID: actor.ID, Method: "POST", Route: route, Key: "bench-" + strconv.Itoa(w.keys), RequestHash: hash[:]}
	return mixedAction{actor: actor, op: op, key: key}
}

// bench runs b.N actions in transactions of size actions each.
func (w *mixedWorld) bench(b *testing.B, size int) {
	ctx := context.Background()
	if _, err := w.s.pool.Exec(ctx, `SELECT pg_stat_statements_reset()`); err != nil {
		b.Fatal(err)
	}
	var cpu time.Duration
	actions := 0
	b.ResetTimer()
	for actions < b.N {
		before := w.backendCPU(b)
		ended, err := w.runBatch(ctx, size)
		cpu += w.backendCPU(b) - before
		if err != nil {
			b.Fatal(err)
		}
		actions += size
		b.StopTimer()
		w.s.settleGames(ctx, ended)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(cpu.Microseconds())/float64(actions), "pg-µs/action")
	var calls int64
	var plan, exec float64
	err := w.s.pool.QueryRow(ctx, `SELECT coalesce(sum(calls), 0), coalesce(sum(total_plan_time), 0), coalesce(sum(total_exec_time), 0)
		FROM pg_stat_statements WHERE query ~ '^WITH (new_games|games|lobby_rows|heads|players|moves|reveals|postings|events|results|audits) AS'
			AND dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&calls, &plan, &exec)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(1000*(plan+exec)/float64(actions), "writes-µs/action")
	b.ReportMetric(1000*plan/float64(actions), "writes-plan-µs/action")
	b.ReportMetric(float64(calls)/float64(actions), "writes-calls/action")
}

// runBatch runs the next size actions in one transaction, by the committer's own path (the
// lobbies' locks, their games, the actors' accounts and rows read in one round trip, then each
// action, the held writes and the COMMIT), and returns the games they ended.
func (w *mixedWorld) runBatch(ctx context.Context, size int) ([]tournament.GameID, error) {
	calls := make([]*call, size)
	for i := range calls {
		a := w.action()
		calls[i] = &call{ctx: ctx, lobby: a.op.Lobby(), actor: a.actor, key: a.key,
			apply: func(t *pgTx, now int64) (tournament.Result, error) {
				return a.op.Apply(ctx, w.s.service, t, now, a.actor)
			}}
	}
	split, ended := w.s.commitBatch(calls)
	if split {
		return nil, fmt.Errorf("a batch of %d failed as a whole", size)
	}
	for _, c := range calls {
		if c.err != nil {
			return nil, c.err
		}
		if r := c.answer.Result.Refusal; r != nil {
			return nil, fmt.Errorf("refused: %w", r)
		}
	}
	return ended, nil
}

// backendCPU is the CPU time the store's connections' backends have used.
func execURL(ctx context.Context, url, sql string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

func (w *mixedWorld) backendCPU(b *testing.B) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var total time.Duration
	for _, pid := range w.backends {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
		if err != nil {
			continue // a connection closed
		}
		ns, err := strconv.ParseInt(strings.Fields(string(data))[0], 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		total += time.Duration(ns)
	}
	return total
}
