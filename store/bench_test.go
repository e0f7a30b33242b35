package store

import (
	"context"
	"fmt"
	"testing"

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
				INSERT INTO accounts (id, name, role, created_at)
				SELECT gen_random_uuid(), 'p' || i, 'player', 0 FROM generate_series(1, $2::int) AS i
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
