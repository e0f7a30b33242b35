package store

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/commitreveal/rps/internal/pgtest"
	"github.com/commitreveal/rps/tournament"
	"github.com/jackc/pgx/v5"
)

// TestPeriodStandings settles games on different days of an injected clock and checks that the
// standings of the last 7 and 30 days count exactly the games of their days as the days pass,
// while the all-time standings keep them all, and that settling a game twice counts it once.
func TestPeriodStandings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const day = 86_400_000
	var clock atomic.Int64
	clock.Store(20_000 * day)
	s, playAndStop := standingsLobby(t, &clock)
	games := func(period Period) []int {
		t.Helper()
		rows, next, err := s.Leaderboard(ctx, RankByWins, period, nil, 10)
		if err != nil || next != nil {
			t.Fatalf("leaderboard: %v, next %v", err, next)
		}
		var out []int
		for _, r := range rows {
			out = append(out, r.Games)
		}
		return out
	}
	check := func(when string, all, month, week []int) {
		t.Helper()
		for _, c := range []struct {
			period Period
			want   []int
		}{{PeriodAll, all}, {Period30d, month}, {Period7d, week}} {
			if got := games(c.period); fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("%s: games per account over %d days: %v, want %v", when, c.period, got, c.want)
			}
		}
	}

	playAndStop(false)
	check("day 0", []int{1, 1}, []int{1, 1}, []int{1, 1})
	clock.Add(6 * day)
	check("day 6", []int{1, 1}, []int{1, 1}, []int{1, 1})
	clock.Add(day)
	check("day 7", []int{1, 1}, []int{1, 1}, nil)
	playAndStop(false)
	check("day 7, a second game", []int{2, 2}, []int{2, 2}, []int{1, 1})
	clock.Add(23 * day)
	check("day 30", []int{2, 2}, []int{1, 1}, nil)
	clock.Add(100 * day)
	check("day 130", []int{2, 2}, nil, nil)

	// Settling an ended game again changes nothing.
	ended, err := collect(ctx, s.pool, func(r pgx.CollectableRow) (tournament.Game, error) { return scanGame(r) },
		`SELECT `+gameColumns+` FROM games WHERE stage = 'stopped' ORDER BY number LIMIT 1`)
	if err != nil || len(ended) != 1 {
		t.Fatal(ended, err)
	}
	if err := s.settleGame(ctx, ended[0].ID); err != nil {
		t.Fatal(err)
	}
	check("after a second settle", []int{2, 2}, nil, nil)
}

// standingsLobby returns a store on clock with two funded players and a lobby of two whose
// games start when full, and playAndStop, which fills the lobby's game (round 1 starts) and stops
// it: both players share. With crash, the stop commits without the settling that follows it, as
// when the replica stops right after the commit.
func standingsLobby(t *testing.T, clock *atomic.Int64) (*Store, func(crash bool)) {
	t.Helper()
	ctx := context.Background()
	s := New(pgtest.New(t), Options{Service: fastService(), Now: clock.Load})
	admin, _, err := s.CreateAccount(ctx, "admin", tournament.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	boss := tournament.Actor{ID: admin.ID, Role: admin.Role}
	var players []tournament.Actor
	for _, name := range []string{"ann", "ben"} {
		a, _, err := s.CreateAccount(ctx, name, tournament.RolePlayer)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Run(ctx, func(tx tournament.Tx, now int64) error {
			_, err := s.service.Credit(ctx, tx, now, boss, a.ID, 1000, tournament.MoneyNote{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		players = append(players, tournament.Actor{ID: a.ID, Role: a.Role})
	}
	cfg := tournament.DefaultConfig()
	cfg.BetSize, cfg.PlayersCountLimit, cfg.StartWhenFull = 10, 2, true
	var lobby tournament.LobbyID
	if err := s.Run(ctx, func(tx tournament.Tx, now int64) (err error) {
		lobby, err = s.service.CreateLobby(ctx, tx, now, boss, "periods", cfg)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// playAndStop fills the lobby's game (round 1 starts) and stops it: both players share.
	playAndStop := func(crash bool) {
		t.Helper()
		for _, p := range players {
			if err := s.RunLobby(ctx, lobby, func(tx tournament.Tx, now int64) error {
				return s.service.Register(ctx, tx, now, p, lobby)
			}); err != nil {
				t.Fatal(err)
			}
		}
		stop := func(tx tournament.Tx, now int64) error { return s.service.Stop(ctx, tx, now, boss, lobby, "test") }
		var err error
		if crash {
			_, err = s.runTx(ctx, func(t *pgTx) error { return stop(t, clock.Load()) })
		} else {
			err = s.RunLobby(ctx, lobby, stop)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return s, playAndStop
}

// TestSettlingAfterACrash: a game whose replica stopped between the end of the game and its
// settling is not counted yet; the sweep and any number of concurrent settles then count it
// exactly once, in every table of the standings.
func TestSettlingAfterACrash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var clock atomic.Int64
	clock.Store(20_000 * 86_400_000)
	s, playAndStop := standingsLobby(t, &clock)
	playAndStop(true)
	counts := func() (settled bool, rows [3]int, games [3]int) {
		t.Helper()
		err := s.pool.QueryRow(ctx, `SELECT (SELECT bool_and(settled) FROM games WHERE stage = 'stopped'),
				(SELECT count(*) FROM account_totals), (SELECT count(*) FROM account_days), (SELECT count(*) FROM account_period_totals),
				(SELECT coalesce(sum(games), 0) FROM account_totals), (SELECT coalesce(sum(games), 0) FROM account_days),
				(SELECT coalesce(sum(games), 0) FROM account_period_totals)`).
			Scan(&settled, &rows[0], &rows[1], &rows[2], &games[0], &games[1], &games[2])
		if err != nil {
			t.Fatal(err)
		}
		return settled, rows, games
	}
	if settled, rows, _ := counts(); settled || rows != [3]int{} {
		t.Fatalf("after the crash: settled %v, rows %v; want the game unsettled and nothing counted", settled, rows)
	}
	var game tournament.GameID
	if err := s.pool.QueryRow(ctx, `SELECT id::text FROM games WHERE stage = 'stopped'`).Scan(&game); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			var err error
			if i%2 == 0 {
				err = s.SettleEnded(ctx)
			} else {
				err = s.settleGame(ctx, game)
			}
			if err != nil {
				t.Errorf("settle %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	// Two players, once each: overall, on the day, and in both periods.
	want := [3]int{2, 2, 4}
	if settled, rows, games := counts(); !settled || rows != want || games != want {
		t.Fatalf("after the sweeps: settled %v, rows %v, games %v; want settled, %v and %v", settled, rows, games, want, want)
	}
	if err := s.SettleEnded(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, games := counts(); games != want {
		t.Fatalf("after another sweep: games %v, want %v", games, want)
	}
}
