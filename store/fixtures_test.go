package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/commitreveal/rps/internal/pgtest"
	"github.com/commitreveal/rps/tournament"
	"github.com/commitreveal/rps/tournament/tournamenttest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// fastService allows stage timeouts of a few milliseconds, for tests on the real clock.
var fastService = tournamenttest.FastService

// fastConfig is a two-player game with timeouts of ms that stops after one empty extension.
var fastConfig = tournamenttest.FastConfig

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

// tracedPool opens a pool on a fresh database whose connections report their statements to
// tracer, closed when the test ends.
func tracedPool(t *testing.T, tracer pgx.QueryTracer) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// player creates a player account with funds.
func player(t *testing.T, s *Store, name string, funds int64) tournament.Actor {
	t.Helper()
	ctx := context.Background()
	a, _, err := s.CreateAccount(ctx, name, tournament.RolePlayer)
	if err != nil {
		t.Fatal(err)
	}
	if funds > 0 {
		err := s.Run(ctx, func(tx tournament.Tx, now int64) error {
			_, err := s.service.Credit(ctx, tx, now, tournament.Actor{Role: tournament.RoleAdmin}, a.ID, funds, tournament.MoneyNote{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return tournament.Actor{ID: a.ID, Role: a.Role}
}

func admin(t *testing.T, s *Store) tournament.Actor {
	t.Helper()
	a, _, err := s.CreateAccount(context.Background(), "admin", tournament.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	return tournament.Actor{ID: a.ID, Role: a.Role}
}

func createLobby(t *testing.T, s *Store, adm tournament.Actor, cfg tournament.Config) tournament.LobbyID {
	t.Helper()
	var id tournament.LobbyID
	err := s.Run(context.Background(), func(tx tournament.Tx, now int64) (err error) {
		id, err = s.service.CreateLobby(context.Background(), tx, now, adm, "lobby", cfg)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func register(s *Store, a tournament.Actor, lobby tournament.LobbyID) error {
	ctx := context.Background()
	return s.RunLobby(ctx, lobby, func(tx tournament.Tx, now int64) error { return s.service.Register(ctx, tx, now, a, lobby) })
}

// TestRecover checks the outage rule: after a gap longer than the threshold every open deadline
// moves by the gap, once, with one event per lobby; a restart within the threshold moves nothing.
func TestRecover(t *testing.T) {
	t.Parallel()
	now := tournamenttest.Start
	s := newStore(t, Options{Service: newService(), Now: func() int64 { return now }, OutageThreshold: 10 * time.Second})
	ctx := context.Background()
	cfg := fastConfig(tournamenttest.Timeout)
	adm := admin(t, s)
	lobby := createLobby(t, s, adm, cfg)
	idle := createLobby(t, s, adm, cfg) // empty registration: no deadline, no event
	for i := range 2 {
		if err := register(s, player(t, s, fmt.Sprint("p", i), 100), lobby); err != nil {
			t.Fatal(err)
		}
	}
	before, err := s.Lobby(ctx, lobby)
	if err != nil {
		t.Fatal(err)
	}
	if gap, err := s.Recover(ctx); err != nil || gap != 0 {
		t.Fatalf("first start: gap %d, %v; want 0", gap, err)
	}
	now += 5000 // a restart within the threshold
	if gap, err := s.Recover(ctx); err != nil || gap != 0 {
		t.Fatalf("restart: gap %d, %v; want 0", gap, err)
	}
	now += 60_000 // an outage
	gap, err := s.Recover(ctx)
	if err != nil || gap != 60_000 {
		t.Fatalf("after outage: gap %d, %v; want 60000", gap, err)
	}
	after, err := s.Lobby(ctx, lobby)
	if err != nil {
		t.Fatal(err)
	}
	if after.Game.Deadline != before.Game.Deadline+gap || after.Game.StageStartedAt != before.Game.StageStartedAt+gap {
		t.Errorf("deadline %d started %d, want %d and %d", after.Game.Deadline, after.Game.StageStartedAt,
			before.Game.Deadline+gap, before.Game.StageStartedAt+gap)
	}
	if gap, err := s.Recover(ctx); err != nil || gap != 0 {
		t.Fatalf("second replica: gap %d, %v; want 0", gap, err)
	}
	for _, c := range []struct {
		lobby tournament.LobbyID
		want  int
	}{{lobby, 1}, {idle, 0}} {
		es, err := s.Events(ctx, c.lobby, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range es {
			if e.Type == tournament.EventClockShifted {
				n++
			}
		}
		if n != c.want {
			t.Errorf("lobby %s: %d clock_shifted events, want %d", c.lobby, n, c.want)
		}
		tournamenttest.VerifyLobby(t, ctx, backend{s}, c.lobby)
	}
}

// TestConcurrentRegistrations sends 50 registrations at once into a game of 10 that starts when
// full: exactly 10 get in, the others are refused, and no money is lost.
func TestConcurrentRegistrations(t *testing.T) {
	t.Parallel()
	s := newStore(t, Options{Service: fastService()})
	ctx := context.Background()
	cfg := fastConfig(60_000)
	cfg.PlayersCountLimit = 10
	lobby := createLobby(t, s, admin(t, s), cfg)
	const n, funds = 50, 100
	var players []tournament.Actor
	for i := range n {
		players = append(players, player(t, s, fmt.Sprint("p", i), funds))
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, p := range players {
		wg.Go(func() {
			<-start
			errs[i] = register(s, p, lobby)
		})
	}
	close(start)
	wg.Wait()

	in := 0
	for i, err := range errs {
		switch refusalCode(err) {
		case "":
			if err != nil {
				t.Fatalf("register p%d: %v", i, err)
			}
			in++
		case tournament.CodeLobbyFull, tournament.CodeWrongStage:
		default:
			t.Errorf("register p%d: %v", i, err)
		}
	}
	v, err := s.Lobby(ctx, lobby)
	if err != nil {
		t.Fatal(err)
	}
	if in != 10 || v.Game.Players != 10 || v.Game.Stage != tournament.StageMoves {
		t.Errorf("%d registered, game has %d players in %s; want 10 in moves", in, v.Game.Players, v.Game.Stage)
	}
	var total int64
	for _, p := range players {
		a, err := s.Account(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		total += a.Balance
	}
	if total+v.Game.Escrow != n*funds || v.Game.Escrow != 10*cfg.BetSize {
		t.Errorf("balances %d + escrow %d, want %d in all with an escrow of %d", total, v.Game.Escrow, n*funds, 10*cfg.BetSize)
	}
	tournamenttest.VerifyLobby(t, ctx, backend{s}, lobby)
}
