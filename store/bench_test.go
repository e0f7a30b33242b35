package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/internal/pgtest"
	"github.com/commitreveal/rps/tournament"
	"github.com/jackc/pgx/v5"
)

// BenchmarkCommitLobbySize measures one commit (a whole operation: transaction, lock, checks,
// insert, event) in a round of 10 players and in one of 20,000, and reports the ratio of the two
// (metric x-time-at-10 of the large run), which should stay near 1: an action's cost must not grow
// with the lobby.
func BenchmarkCommitLobbySize(b *testing.B) {
	perCommit := map[int]float64{}
	sizes := []int{10, 20_000}
	for _, n := range sizes {
		b.Run(fmt.Sprint("players=", n), func(b *testing.B) {
			ctx := context.Background()
			s := New(pgtest.New(b), Options{Service: fastService()})
			lobby, game, players := seedMovesStage(b, s, n)
			commitment := engine.CommitMove(0, "pw")
			b.ResetTimer()
			for i := range b.N {
				// The last commit of a round would close it (work proportional to the lobby,
				// which is not what is measured): start the round over before it.
				k := i % (n - 1)
				if k == 0 && i > 0 {
					b.StopTimer()
					if _, err := s.pool.Exec(ctx, `DELETE FROM round_moves WHERE game_id = $1`, game); err != nil {
						b.Fatal(err)
					}
					if _, err := s.pool.Exec(ctx, `UPDATE games SET committed = 0 WHERE id = $1`, game); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				err := s.RunLobby(ctx, lobby, func(tx tournament.Tx, now int64) error {
					return s.service.Commit(ctx, tx, now, players[k], lobby, commitment)
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			perCommit[n] = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if small := perCommit[sizes[0]]; n != sizes[0] && small > 0 {
				b.ReportMetric(perCommit[n]/small, fmt.Sprintf("x-time-at-%d", sizes[0]))
			}
		})
	}
}

// seedMovesStage opens a free lobby and puts n players straight into round 1's moves stage with
// SQL (registering 20,000 players one by one would dominate the benchmark's run time).
func seedMovesStage(b *testing.B, s *Store, n int) (tournament.LobbyID, tournament.GameID, []tournament.Actor) {
	b.Helper()
	ctx := context.Background()
	adm, _, err := s.CreateAccount(ctx, "admin", tournament.RoleAdmin)
	if err != nil {
		b.Fatal(err)
	}
	cfg := tournament.DefaultConfig()
	cfg.PlayersCountLimit = n
	cfg.EntryTimeoutMs, cfg.MoveTimeoutMs, cfg.RevealTimeoutMs = tournament.MaxTimeoutMs, tournament.MaxTimeoutMs, tournament.MaxTimeoutMs
	var lobby tournament.LobbyID
	err = s.Run(ctx, func(tx tournament.Tx, now int64) (err error) {
		lobby, err = s.service.CreateLobby(ctx, tx, now, tournament.Actor{ID: adm.ID, Role: adm.Role}, "bench", cfg)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	v, err := s.Lobby(ctx, lobby)
	if err != nil {
		b.Fatal(err)
	}
	game := v.Game.ID
	err = s.withTx(ctx, pgx.TxOptions{}, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `WITH accounts AS (
				INSERT INTO accounts (id, name, name_key, role, created_at)
				SELECT id, 'p-' || id, 'p-' || id, 'player', 0 FROM (SELECT gen_random_uuid() AS id FROM generate_series(1, $2::int)) AS a
				RETURNING id)
			INSERT INTO game_players (game_id, account_id, ord, registered_at, active)
			SELECT $1, id, row_number() OVER (), 0, true FROM accounts`, game, n)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE games SET stage = 'moves', round = 1,
				stage_started_at = created_at, deadline = created_at + $2, joined = $3, players = $3, active = $3
			WHERE id = $1`, game, int64(tournament.MaxTimeoutMs), n)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	ids, err := collect(ctx, s.pool, pgx.RowTo[tournament.AccountID],
		`SELECT account_id::text FROM game_players WHERE game_id = $1 ORDER BY ord`, game)
	if err != nil {
		b.Fatal(err)
	}
	players := make([]tournament.Actor, len(ids))
	for i, id := range ids {
		players[i] = tournament.Actor{ID: id, Role: tournament.RolePlayer}
	}
	return lobby, game, players
}

// BenchmarkStageChange measures, in a round of 100,000 players, the two transactions that change
// its stage with set-based work proportional to the lobby: the last commit, which closes the
// moves stage (sealing every commitment), and the last reveal, which resolves the round (counting
// the moves, eliminating the losers, sealing every reveal, opening the next round). The other
// players' moves are seeded with SQL. Run it with -benchtime 1x: each iteration seeds a round.
func BenchmarkStageChange(b *testing.B) {
	const n = 100_000
	ctx := context.Background()
	var closeMoves, resolve time.Duration
	for range b.N {
		b.StopTimer()
		s := New(pgtest.New(b), Options{Service: fastService()})
		lobby, game, players := seedMovesStage(b, s, n)
		reveals := make([]string, n)
		rows := make([][]any, 0, n-1)
		for i, p := range players {
			reveals[i] = fmt.Sprintf("%d-password-%d", i%3, i)
			if i > 0 {
				c := engine.Commit(reveals[i])
				rows = append(rows, []any{game, 1, p.ID, c[:], int64(0), reveals[i], int16(i % 3)})
			}
		}
		if _, err := s.pool.Exec(ctx, `CREATE TABLE bench_moves (game_id uuid, round int, account_id uuid,
				commitment bytea, committed_at bigint, reveal text, move smallint)`); err != nil {
			b.Fatal(err)
		}
		if _, err := s.pool.CopyFrom(ctx, pgx.Identifier{"bench_moves"},
			[]string{"game_id", "round", "account_id", "commitment", "committed_at", "reveal", "move"}, pgx.CopyFromRows(rows)); err != nil {
			b.Fatal(err)
		}
		seed := func(sql string) {
			b.Helper()
			if _, err := s.pool.Exec(ctx, sql, game, n-1); err != nil {
				b.Fatal(err)
			}
			if _, err := s.pool.Exec(ctx, `ANALYZE`); err != nil {
				b.Fatal(err)
			}
		}
		seed(`WITH moves AS (INSERT INTO round_moves (game_id, round, account_id, commitment, committed_at)
				SELECT game_id, round, account_id, commitment, committed_at FROM bench_moves WHERE game_id = $1)
			UPDATE games SET committed = $2 WHERE id = $1`)
		act := func(action func(tx tournament.Tx, now int64) error) time.Duration {
			b.Helper()
			b.StartTimer()
			start := time.Now()
			if err := s.RunLobby(ctx, lobby, action); err != nil {
				b.Fatal(err)
			}
			d := time.Since(start)
			b.StopTimer()
			return d
		}
		first := players[0]
		closeMoves += act(func(tx tournament.Tx, now int64) error {
			return s.service.Commit(ctx, tx, now, first, lobby, engine.Commit(reveals[0]))
		})
		seed(`WITH moves AS (UPDATE round_moves rm SET revealed = true, reveal = convert_to(m.reveal, 'UTF8'), move = m.move, revealed_at = 0
				FROM bench_moves m WHERE rm.game_id = $1 AND rm.round = 1 AND rm.account_id = m.account_id)
			UPDATE games SET revealed = $2 WHERE id = $1`)
		resolve += act(func(tx tournament.Tx, now int64) error {
			return s.service.Reveal(ctx, tx, now, first, lobby, reveals[0])
		})
		v, err := s.Lobby(ctx, lobby)
		if err != nil {
			b.Fatal(err)
		}
		if v.Game.Round != 2 && v.Game.Stage.Open() {
			b.Fatalf("after the last reveal the game is in round %d, %s", v.Game.Round, v.Game.Stage)
		}
	}
	b.ReportMetric(float64(closeMoves.Milliseconds())/float64(b.N), "ms/close-moves")
	b.ReportMetric(float64(resolve.Milliseconds())/float64(b.N), "ms/resolve")
	b.ReportMetric(0, "ns/op")
}
