package clock_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/commitreveal/rps/clock"
	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/internal/pgtest"
	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
	"github.com/commitreveal/rps/tournament/tournamenttest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// clockSQL is the database's clock in Unix milliseconds, as the store reads it.
const clockSQL = `floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint`

var (
	fastService = tournamenttest.FastService
	fastConfig  = tournamenttest.FastConfig
)

// openPool opens a pool on url, closed when the test ends.
func openPool(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// newStore returns a store on pool whose ledger is checked when the test ends.
func newStore(t *testing.T, pool *pgxpool.Pool, opts store.Options) *store.Store {
	t.Helper()
	if opts.Service == nil {
		opts.Service = fastService()
	}
	s := store.New(pool, opts)
	t.Cleanup(s.Close)
	t.Cleanup(func() {
		if r, err := s.LedgerReport(context.Background()); err != nil || !r.OK() {
			t.Errorf("ledger: %+v (%v)", r, err)
		}
	})
	return s
}

// act runs an operation through the store's entry point and returns its result, a refusal as
// the error.
func act(s *store.Store, a tournament.Actor, op tournament.Operation) (tournament.Result, error) {
	answer, err := s.Act(context.Background(), store.Action{Actor: a, Op: op})
	if err != nil {
		return tournament.Result{}, err
	}
	if r := answer.Result.Refusal; r != nil {
		return answer.Result, r
	}
	return answer.Result, nil
}

func admin(t *testing.T, s *store.Store) tournament.Actor {
	t.Helper()
	a, _, err := s.CreateAccount(context.Background(), "admin", tournament.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	return tournament.Actor{ID: a.ID, Role: a.Role}
}

// player creates a player account that adm credits with funds.
func player(t *testing.T, s *store.Store, adm tournament.Actor, name string, funds int64) tournament.Actor {
	t.Helper()
	a, _, err := s.CreateAccount(context.Background(), name, tournament.RolePlayer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := act(s, adm, tournament.Credit{Account: a.ID, Amount: funds}); err != nil {
		t.Fatal(err)
	}
	return tournament.Actor{ID: a.ID, Role: a.Role}
}

func createLobby(t *testing.T, s *store.Store, adm tournament.Actor, cfg tournament.Config) tournament.LobbyID {
	t.Helper()
	r, err := act(s, adm, tournament.CreateLobby{Name: "lobby", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return r.Lobby.ID
}

func register(s *store.Store, a tournament.Actor, lobby tournament.LobbyID) error {
	_, err := act(s, a, tournament.Register{LobbyID: lobby})
	return err
}

// startWorkers runs a clock worker per store until the test ends.
func startWorkers(t *testing.T, stores ...*store.Store) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, s := range stores {
		wg.Go(func() {
			if err := clock.New(s, clock.Options{}).Run(ctx); err != nil {
				t.Errorf("clock: %v", err)
			}
		})
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// reads is the shared suite's view of a store, for its verification: reads only.
type reads struct{ s *store.Store }

var _ tournamenttest.Backend = reads{}

var errReadOnly = errors.New("the clock tests verify through reads only")

func (b reads) Do(context.Context, func(tournament.Tx) error) error { return errReadOnly }

func (b reads) CreateAccount(context.Context, tournament.AccountID, string, tournament.Role, int64) error {
	return errReadOnly
}

func (b reads) Balance(ctx context.Context, id tournament.AccountID) (int64, error) {
	a, err := b.s.Account(ctx, id)
	return a.Balance, err
}

func (b reads) Lobby(ctx context.Context, id tournament.LobbyID) (tournament.Lobby, error) {
	v, err := b.s.Lobby(ctx, id)
	return v.Lobby, err
}

func (b reads) Game(ctx context.Context, id tournament.GameID) (tournament.Game, error) {
	return b.s.Game(ctx, id)
}

func (b reads) Players(ctx context.Context, game tournament.GameID) ([]tournament.Player, error) {
	gps, err := b.s.GamePlayers(ctx, game, 0, math.MaxInt32)
	players := make([]tournament.Player, len(gps))
	for i, p := range gps {
		players[i] = p.Player
	}
	return players, err
}

func (b reads) Moves(ctx context.Context, game tournament.GameID, round int) ([]tournament.RoundMove, error) {
	rps, err := b.s.RoundPlayers(ctx, game, round, 0, math.MaxInt32)
	var moves []tournament.RoundMove
	for _, p := range rps {
		if p.Move != nil {
			moves = append(moves, *p.Move)
		}
	}
	slices.SortFunc(moves, func(a, b tournament.RoundMove) int { return strings.Compare(string(a.AccountID), string(b.AccountID)) })
	return moves, err
}

func (b reads) Events(ctx context.Context, lobby tournament.LobbyID) ([]tournament.LoggedEvent, error) {
	return b.s.Events(ctx, lobby, 0, math.MaxInt32)
}

func (b reads) Ledger(ctx context.Context) (tournament.LedgerReport, error) {
	return b.s.LedgerReport(ctx)
}

// TestClockRace runs three clock workers, each with its own pool, on one database through
// hundreds of deadlines while a driver keeps registering players: every stage change must happen
// exactly once and every log must stay gap-free with its chain intact.
func TestClockRace(t *testing.T) {
	t.Parallel()
	const lobbies, games = 25, 6 // two deadlines per game: 300 in all
	url := pgtest.NewURL(t)
	svc := fastService()
	var stores []*store.Store
	for range 3 {
		stores = append(stores, newStore(t, openPool(t, url), store.Options{Service: svc}))
	}
	s := stores[0]
	ctx := context.Background()
	adm := admin(t, s)
	type lobby struct {
		id      tournament.LobbyID
		players [2]tournament.Actor
	}
	var ls []lobby
	cfg := fastConfig(5)
	cfg.EntryTimeoutMs = 60_000 // the driver's second registration starts the game, never the clock
	for i := range lobbies {
		l := lobby{id: createLobby(t, s, adm, cfg)}
		for k := range l.players {
			l.players[k] = player(t, s, adm, fmt.Sprintf("p%d-%d", i, k), 1000)
		}
		ls = append(ls, l)
	}
	startWorkers(t, stores...)

	// The driver fills every empty registration until each lobby has played its games; the clock
	// workers do everything else (moves expire empty, extend once, then stop the game).
	deadline := time.Now().Add(30 * time.Second)
	for done := 0; done < len(ls); {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d lobbies played %d games in 30 s", done, len(ls), games)
		}
		done = 0
		for _, l := range ls {
			v, err := s.Lobby(ctx, l.id)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case v.Lobby.Games > games:
				done++
			case v.Game.Stage == tournament.StageRegistration && v.Game.Players == 0:
				for _, p := range l.players {
					if err := register(stores[1], p, l.id); err != nil {
						t.Fatalf("register: %v", err)
					}
				}
			}
		}
		time.Sleep(2 * time.Millisecond)
	}

	b := reads{s}
	for _, l := range ls {
		tournamenttest.VerifyLobby(t, ctx, b, l.id)
		es, err := b.Events(ctx, l.id)
		if err != nil {
			t.Fatal(err)
		}
		counts := map[tournament.GameID]map[tournament.EventType]int{}
		for _, e := range es {
			if counts[e.GameID] == nil {
				counts[e.GameID] = map[tournament.EventType]int{}
			}
			counts[e.GameID][e.Type]++
		}
		for g, c := range counts {
			game, err := b.Game(ctx, g)
			if g == "" || err != nil || game.Stage.Open() {
				continue
			}
			for _, typ := range []tournament.EventType{tournament.EventRoundStarted, tournament.EventStageExtended, tournament.EventGameStopped} {
				if c[typ] != 1 {
					t.Errorf("lobby %s game %d: %d %s events, want 1", l.id, game.Number, c[typ], typ)
				}
			}
		}
	}
}

// TestClockActsPromptly checks that a worker wakes for a deadline itself, rather than at the end of
// its idleWait (a minute) or on some later event: the deadline must be applied within
// promptnessBound. How promptly, in milliseconds, is the benchmark's figure (stage-change lag), not
// this test's: a tighter bound here would fail on a loaded machine without anything being wrong.
// It does not run in parallel, so that other tests' load blurs the logged figure less.
func TestClockActsPromptly(t *testing.T) {
	const promptnessBound = 2 * time.Second // far below idleWait, far above any scheduling delay
	url := pgtest.NewURL(t)
	s := newStore(t, openPool(t, url), store.Options{})
	ctx := context.Background()
	adm := admin(t, s)
	lobby := createLobby(t, s, adm, fastConfig(300))
	listener, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(ctx)
	if _, err := listener.Exec(ctx, "LISTEN "+store.EventsChannel); err != nil {
		t.Fatal(err)
	}
	startWorkers(t, s)
	for i := range 2 {
		if err := register(s, player(t, s, adm, fmt.Sprint("p", i), 100), lobby); err != nil {
			t.Fatal(err)
		}
	}
	v, err := s.Lobby(ctx, lobby)
	if err != nil {
		t.Fatal(err)
	}
	if v.Game.Stage != tournament.StageMoves {
		t.Fatalf("stage %s, want moves", v.Game.Stage)
	}
	for {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := listener.WaitForNotification(wctx)
		cancel()
		if err != nil {
			t.Fatalf("no event within 5 s: %v", err)
		}
		var late int64
		var extensions int
		err = listener.QueryRow(ctx, `SELECT `+clockSQL+` - $2, extensions
			FROM games WHERE id = $1`, v.Game.ID, v.Game.Deadline).Scan(&late, &extensions)
		if err != nil {
			t.Fatal(err)
		}
		if extensions == 0 {
			continue // the registrations' own notifications
		}
		t.Logf("deadline applied %d ms after it passed", late)
		if late > promptnessBound.Milliseconds() {
			t.Errorf("deadline applied %d ms late, want at most %v", late, promptnessBound)
		}
		return
	}
}

// TestClockSurvivesLostConnection cuts the clock worker's listening connection, as a database
// restart or a network failure would, and checks that the worker reconnects and still applies the
// next deadline.
func TestClockSurvivesLostConnection(t *testing.T) {
	pool := pgtest.New(t)
	s := newStore(t, pool, store.Options{})
	ctx := context.Background()
	startWorkers(t, s)
	// Wait for the worker to listen, then cut its connection.
	var cut int
	for range 100 {
		err := pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND query = $1`, "LISTEN "+store.ClockChannel).Scan(&cut)
		if err != nil {
			t.Fatal(err)
		}
		if cut > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if cut == 0 {
		t.Fatal("the clock worker never listened")
	}
	adm := admin(t, s)
	lobby := createLobby(t, s, adm, fastConfig(200))
	for i := range 2 {
		if err := register(s, player(t, s, adm, fmt.Sprint("p", i), 100), lobby); err != nil {
			t.Fatal(err)
		}
	}
	// Nobody commits: the worker must extend the moves stage once, then stop the game.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		v, err := s.Lobby(ctx, lobby)
		if err != nil {
			t.Fatal(err)
		}
		if v.Lobby.Games > 1 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("after its connection was cut, the clock worker applied no deadline within 10 s")
}

// TestWorkersShiftOnceAfterAnOutage: the database was unreachable from every replica, which
// stayed up, for longer than the outage threshold (the newest heartbeat of any replica is a
// minute old) and open moves stages fell due meanwhile. When it is back, the clock workers of
// both replicas shift the clock once, with one clock_shifted per lobby, and expire nothing that
// fell due during the outage. (store's TestDatabaseOutageShiftsBeforeExpiring has an action find
// the outage first.)
func TestWorkersShiftOnceAfterAnOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewURL(t)
	var replicas [2]*store.Store
	for i := range replicas {
		replicas[i] = newStore(t, openPool(t, url), store.Options{OutageThreshold: time.Second})
	}
	s := replicas[0]
	adm := admin(t, s)
	var lobbies []tournament.LobbyID
	for _, name := range []string{"one", "two"} {
		lobby := createLobby(t, s, adm, fastConfig(60_000))
		first, second := player(t, s, adm, name+"-1", 100), player(t, s, adm, name+"-2", 100)
		for _, p := range []tournament.Actor{first, second} {
			if err := register(s, p, lobby); err != nil {
				t.Fatal(err)
			}
		}
		// Were the deadline applied, the first player would win alone.
		if _, err := act(s, first, tournament.Commit{LobbyID: lobby, Commitment: engine.Commit("1" + name)}); err != nil {
			t.Fatal(err)
		}
		lobbies = append(lobbies, lobby)
	}
	if _, err := s.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	// The outage: the newest heartbeat a minute old, the moves stages due 30 s ago.
	pool := openPool(t, url)
	if _, err := pool.Exec(ctx, `UPDATE heartbeats SET beat_at = `+clockSQL+` - 60000`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE games
		SET stage_started_at = stage_started_at - (deadline - (`+clockSQL+` - 30000)), deadline = `+clockSQL+` - 30000
		WHERE stage = 'moves'`); err != nil {
		t.Fatal(err)
	}
	shifts := func(lobby tournament.LobbyID) ([]int64, []tournament.EventType) {
		events, err := s.Events(ctx, lobby, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		gaps, types, err := tournamenttest.ClockShifts(events)
		if err != nil {
			t.Fatal(err)
		}
		return gaps, types
	}

	startWorkers(t, replicas[0], replicas[1])
	deadline := time.Now().Add(10 * time.Second)
	for gaps, _ := shifts(lobbies[0]); len(gaps) < 1; gaps, _ = shifts(lobbies[0]) {
		if time.Now().After(deadline) {
			_, types := shifts(lobbies[0])
			t.Fatalf("no clock_shifted within 10 s; events %v", types)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(time.Second) // both workers beat several times meanwhile
	for _, lobby := range lobbies {
		if gaps, types := shifts(lobby); len(gaps) != 1 || gaps[0] < 60_000 || gaps[0] > 70_000 {
			t.Errorf("lobby %s: clock_shifted gaps %v, want one of about 60000 ms; events %v", lobby, gaps, types)
		}
		if v, err := s.Lobby(ctx, lobby); err != nil || v.Game.Stage != tournament.StageMoves || v.Lobby.Games != 1 {
			t.Errorf("lobby %s: %+v (%v), want its first game still in moves", lobby, v.Game, err)
		}
	}
}

// TestSettlingDoesNotWaitForPruning: while pruning is held up (here by a lock on the checkpoints; in
// production by the first pass after an upgrade through months of them), a game left unsettled is
// settled all the same. (Both ran one after the other in one loop: settling waited for pruning.)
func TestSettlingDoesNotWaitForPruning(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.New(t)
	s := newStore(t, pool, store.Options{})
	adm := admin(t, s)
	lobby := createLobby(t, s, adm, fastConfig(60_000))
	for _, name := range []string{"p1", "p2"} {
		if err := register(s, player(t, s, adm, name, 100), lobby); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := act(s, adm, tournament.Stop{LobbyID: lobby, Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	// As a replica that stopped between the game's end and its settling leaves it.
	if _, err := pool.Exec(ctx, `UPDATE games SET settled = false WHERE stage = 'stopped'`); err != nil {
		t.Fatal(err)
	}
	hold, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hold.Rollback(ctx) }()
	if _, err := hold.Exec(ctx, `LOCK TABLE log_checkpoints IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = clock.New(s, clock.Options{}).Run(wctx) }()
	defer func() { _ = hold.Rollback(ctx); cancel(); <-done }()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var settled bool
		if err := pool.QueryRow(ctx, `SELECT settled FROM games WHERE stage = 'stopped'`).Scan(&settled); err != nil {
			t.Fatal(err)
		}
		if settled {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the ended game was not settled while pruning waited")
		}
	}
}
