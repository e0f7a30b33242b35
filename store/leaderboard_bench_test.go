package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/commitreveal/rps/internal/pgtest"
	"github.com/commitreveal/rps/tournament"
	"github.com/jackc/pgx/v5"
)

// BenchmarkStandings settles a 100,000-player game (an admin stop in the moves stage, so every
// player gets a share of the escrow) and reports what keeping the totals adds to the settling
// transaction (metrics settle-ms, the settle statement alone, and stop-ms, the whole stop with
// it); then, with 100,000 accounts in the all-time and period totals, it reads standings pages:
// the first page and one 50,000 places down, for each order and period.
//
//	go test -run '^$' -bench BenchmarkStandings -benchtime 20x ./store
func BenchmarkStandings(b *testing.B) {
	const players, bet = 100_000, 10
	ctx := context.Background()
	s := New(pgtest.New(b), Options{Service: fastService()})
	lobby, game, _ := seedMovesStage(b, s, players)
	// Every player has bet (a credit, then the bet into the escrow), as registering would have.
	err := s.withTx(ctx, pgx.TxOptions{}, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `WITH p AS (
				SELECT account_id, nextval('ledger_posting_seq') AS credit, nextval('ledger_posting_seq') AS bet
				FROM game_players WHERE game_id = $1)
			INSERT INTO ledger_entries (posting_id, account_kind, player_id, escrow_id, amount, kind, game_id, at)
			SELECT credit, 'treasury', NULL::uuid, NULL::uuid, -$2::bigint, 'credit', NULL::uuid, 0 FROM p
			UNION ALL SELECT credit, 'player', account_id, NULL, $2, 'credit', NULL, 0 FROM p
			UNION ALL SELECT bet, 'player', account_id, NULL, -$2::bigint, 'bet', $1, 0 FROM p
			UNION ALL SELECT bet, 'escrow', NULL, $1, $2, 'bet', $1, 0 FROM p`, game, bet)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE games SET escrow = $2 * players, config = jsonb_set(config, '{betSize}', to_jsonb($2::bigint))
			WHERE id = $1`, game, bet)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	admin, _, err := s.CreateAccount(ctx, "stopper", tournament.RoleAdmin)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	err = s.RunLobby(ctx, lobby, func(tx tournament.Tx, now int64) error {
		return s.service.Stop(ctx, tx, now, tournament.Actor{ID: admin.ID, Role: admin.Role}, lobby, "bench")
	})
	if err != nil {
		b.Fatal(err)
	}
	stop := time.Since(start)
	ended, err := s.Game(ctx, game)
	if err != nil {
		b.Fatal(err)
	}
	// The settle statement alone, on the same rows: undone, then run again.
	undo := func() {
		err := s.withTx(ctx, pgx.TxOptions{}, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE games SET settled = false WHERE id = $1`, game)
			if err == nil {
				_, err = tx.Exec(ctx, `TRUNCATE account_totals, account_days`)
			}
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	undo()
	start = time.Now()
	if err := s.settleGame(ctx, ended.ID); err != nil {
		b.Fatal(err)
	}
	settle := time.Since(start)
	var counted int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM account_totals WHERE games = 1 AND net = 0`).Scan(&counted); err != nil || counted != players {
		b.Fatalf("settled %d accounts (%v), want %d", counted, err, players)
	}

	// Varied results, so that the orders are not all ties: 10 games each, up to 3 won, a net of
	// -100,000..100,000, all time and over both periods.
	for _, table := range []string{"account_totals", "account_period_totals"} {
		if _, err := s.pool.Exec(ctx, `UPDATE `+table+` SET games = 10, wins = abs(hashtext(account_id::text)) % 4,
				net = hashtext(account_id::text || games) % 100000`); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	b.Logf("settling %d players: stop %v (settle statement alone %v)", players, stop, settle)

	for _, by := range []RankBy{RankByWins, RankByNet} {
		for _, period := range []Period{PeriodAll, Period30d, Period7d} {
			// The cursor 50,000 places down.
			var deep *StandingCursor
			after := (*StandingCursor)(nil)
			for place := 0; place < 50_000; place += 500 {
				_, next, err := s.Leaderboard(ctx, by, period, after, 500)
				if err != nil {
					b.Fatal(err)
				}
				if next == nil {
					break
				}
				after, deep = next, next
			}
			for _, page := range []struct {
				name  string
				after *StandingCursor
			}{{"first", nil}, {"deep", deep}} {
				b.Run(fmt.Sprintf("by=%s/period=%dd/page=%s", by, period, page.name), func(b *testing.B) {
					for b.Loop() {
						rows, _, err := s.Leaderboard(ctx, by, period, page.after, 100)
						if err != nil || len(rows) == 0 {
							b.Fatal(rows, err)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/page")
					b.ReportMetric(float64(settle.Milliseconds()), "settle-ms")
					b.ReportMetric(float64(stop.Milliseconds()), "stop-ms")
				})
			}
		}
	}
}
