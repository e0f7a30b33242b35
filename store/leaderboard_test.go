package store

import (
	"context"
	"fmt"
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
			_, err := s.service.Credit(ctx, tx, now, boss, a.ID, 1000)
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
	playAndStop := func() {
		t.Helper()
		for _, p := range players {
			if err := s.RunLobby(ctx, lobby, func(tx tournament.Tx, now int64) error {
				return s.service.Register(ctx, tx, now, p, lobby)
			}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.RunLobby(ctx, lobby, func(tx tournament.Tx, now int64) error {
			return s.service.Stop(ctx, tx, now, boss, lobby, "test")
		}); err != nil {
			t.Fatal(err)
		}
	}
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

	playAndStop()
	check("day 0", []int{1, 1}, []int{1, 1}, []int{1, 1})
	clock.Add(6 * day)
	check("day 6", []int{1, 1}, []int{1, 1}, []int{1, 1})
	clock.Add(day)
	check("day 7", []int{1, 1}, []int{1, 1}, nil)
	playAndStop()
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
	if err := s.run(ctx, func(tx *pgTx) error { tx.settle(ended[0]); return nil }); err != nil {
		t.Fatal(err)
	}
	check("after a second settle", []int{2, 2}, nil, nil)
}
