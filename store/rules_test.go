package store

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/tournament"
)

// TestRulesInSQL holds the rules the store's SQL says (rules.go) to their one definition in
// package tournament: each SQL form is evaluated by Postgres over the same cases as the Go one,
// and the queries that find rows by them can use the partial indexes written for them.
func TestRulesInSQL(t *testing.T) {
	t.Parallel()
	pool := newStore(t, Options{}).pool
	ctx := context.Background()

	t.Run("stages", func(t *testing.T) {
		all := append(append([]tournament.Stage(nil), tournament.OpenStages...), tournament.EndedStages...)
		for _, s := range []tournament.Stage{tournament.StageRegistration, tournament.StageMoves, tournament.StageReveal,
			tournament.StageFinished, tournament.StageStopped} {
			n := 0
			for _, in := range all {
				if in == s {
					n++
				}
			}
			if n != 1 {
				t.Errorf("stage %s is in %d of OpenStages and EndedStages, want exactly one", s, n)
			}
		}
		stages := make([]string, len(all))
		for i, s := range all {
			stages[i] = string(s)
		}
		rows, err := pool.Query(ctx, `SELECT g.stage, `+openSQL+`, `+endedSQL+` FROM unnest($1::text[]) AS g (stage)`, stages)
		if err != nil {
			t.Fatal(err)
		}
		var stage tournament.Stage
		var open, ended bool
		_, err = pgx.ForEachRow(rows, []any{&stage, &open, &ended}, func() error {
			if open != stage.Open() || ended == stage.Open() {
				t.Errorf("stage %s: SQL open %v, ended %v; Open() %v", stage, open, ended, stage.Open())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})

	t.Run("due", func(t *testing.T) {
		var deadlines, nows []int64
		for _, d := range []int64{0, 1_000, 1_001} {
			for _, now := range []int64{0, 999, 1_000, 1_001, 1_002} {
				deadlines, nows = append(deadlines, d), append(nows, now)
			}
		}
		rows, err := pool.Query(ctx, `SELECT g.deadline, g.now, `+dueSQL("g.now")+`
			FROM unnest($1::bigint[], $2::bigint[]) AS g (deadline, now)`, deadlines, nows)
		if err != nil {
			t.Fatal(err)
		}
		var deadline, now int64
		var due bool
		_, err = pgx.ForEachRow(rows, []any{&deadline, &now, &due}, func() error {
			if due != tournament.Due(deadline, now) {
				t.Errorf("deadline %d at %d: SQL due %v, Due %v", deadline, now, due, tournament.Due(deadline, now))
			}
			if want := now >= tournament.DueAt(deadline); deadline != 0 && due != want {
				t.Errorf("deadline %d at %d: due %v, but DueAt is %d", deadline, now, due, tournament.DueAt(deadline))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})

	t.Run("joinable", func(t *testing.T) {
		var games []tournament.Game
		for _, s := range append(append([]tournament.Stage(nil), tournament.OpenStages...), tournament.EndedStages...) {
			for _, players := range []int{0, 1, 2, 3} {
				g := tournament.Game{Stage: s, Players: players, Config: tournament.DefaultConfig()}
				g.Config.PlayersCountLimit = 2
				games = append(games, g)
			}
		}
		stages, players, configs := make([]string, len(games)), make([]int32, len(games)), make([]tournament.Config, len(games))
		for i, g := range games {
			stages[i], players[i], configs[i] = string(g.Stage), int32(g.Players), g.Config
		}
		rows, err := pool.Query(ctx, `SELECT `+joinableSQL+` FROM unnest($1::text[], $2::int[], $3::jsonb[]) AS g (stage, players, config)`,
			stages, players, configs)
		if err != nil {
			t.Fatal(err)
		}
		joinable, err := pgx.CollectRows(rows, pgx.RowTo[bool])
		if err != nil {
			t.Fatal(err)
		}
		for i, g := range games {
			if joinable[i] != g.Joinable() {
				t.Errorf("%s with %d of %d players: SQL joinable %v, Joinable %v", g.Stage, g.Players, g.Config.PlayersCountLimit, joinable[i], g.Joinable())
			}
		}
	})

	t.Run("indexes", func(t *testing.T) {
		for _, c := range []struct{ index, query string }{
			{"games_open_deadline", `SELECT min(g.deadline) FROM games g WHERE ` + openDeadlineSQL},
			{"games_open_deadline", `SELECT g.id FROM games g WHERE ` + openSQL + ` AND ` + dueSQL("1000") + ` ORDER BY g.deadline`},
			{"games_unsettled", `SELECT g.id FROM games g WHERE NOT g.settled AND ` + endedSQL + ` ORDER BY g.ended_at`},
		} {
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var plan strings.Builder
			if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
				t.Fatal(err)
			}
			rows, err := tx.Query(ctx, `EXPLAIN `+c.query)
			if err != nil {
				t.Fatal(err)
			}
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			_ = tx.Rollback(ctx)
			for _, l := range lines {
				plan.WriteString(l + "\n")
			}
			if !strings.Contains(plan.String(), c.index) {
				t.Errorf("%s does not use %s:\n%s", c.query, c.index, plan.String())
			}
		}
	})
}

// TestEliminateIsKeeps holds eliminateStatement (the elimination in SQL) to tournament.Keep.Keeps
// (the same rule in Go, by which a batch applies it to the registrations it holds): for each kind
// of keep, over a round with a player of each kind of move, the same players stay in.
func TestEliminateIsKeeps(t *testing.T) {
	t.Parallel()
	pool := newStore(t, Options{}).pool
	ctx := context.Background()
	const game, round = tournament.GameID("00000000-0000-4000-8000-00000000e11e"), 3
	// The players' moves in the round (moved false: none), by account.
	moves := map[tournament.AccountID]struct {
		m     tournament.RoundMove
		moved bool
	}{
		"00000000-0000-4000-8000-0000000000a1": {},
		"00000000-0000-4000-8000-0000000000a2": {tournament.RoundMove{}, true},
		"00000000-0000-4000-8000-0000000000a3": {tournament.RoundMove{Revealed: true, Move: 0, Reveal: "0a"}, true},
		"00000000-0000-4000-8000-0000000000a4": {tournament.RoundMove{Revealed: true, Move: 1, Reveal: "1a"}, true},
		"00000000-0000-4000-8000-0000000000a5": {tournament.RoundMove{Revealed: true, Move: 2, Reveal: "2a"}, true},
	}
	for _, keep := range []tournament.Keep{{Kind: tournament.KeepCommitted}, {Kind: tournament.KeepRevealed},
		{Kind: tournament.KeepMoves, Moves: engine.MoveSet(1<<0 | 1<<2)}, // moves 0 and 2
	} {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ord := 0
		for account, mv := range moves {
			ord++
			if _, err := tx.Exec(ctx, `INSERT INTO game_players (game_id, account_id, ord, registered_at, active, eliminated_round)
				VALUES ($1, $2, $3, 0, true, 0)`, game, account, ord); err != nil {
				t.Fatal(err)
			}
			if !mv.moved {
				continue
			}
			var reveal []byte
			if mv.m.Revealed {
				reveal = []byte(mv.m.Reveal)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO round_moves (game_id, round, account_id, commitment, committed_at,
					revealed, reveal, move, revealed_at)
				VALUES ($1, $2, $3, decode(repeat('00', 32), 'hex'), 0, $4, $5, CASE WHEN $4 THEN $6::smallint END, CASE WHEN $4 THEN 0 END)`,
				game, round, account, mv.m.Revealed, reveal, int16(mv.m.Move)); err != nil {
				t.Fatal(err)
			}
		}
		sql, args, err := eliminateStatement(game, round, keep)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
		rows, err := tx.Query(ctx, `SELECT account_id::text, active FROM game_players WHERE game_id = $1`, game)
		if err != nil {
			t.Fatal(err)
		}
		var account tournament.AccountID
		var active bool
		_, err = pgx.ForEachRow(rows, []any{&account, &active}, func() error {
			if mv := moves[account]; active != keep.Keeps(mv.m, mv.moved) {
				t.Errorf("keep %+v: %s (move %+v, moved %v) active %v in SQL, kept %v in Go", keep, account, mv.m, mv.moved,
					active, keep.Keeps(mv.m, mv.moved))
			}
			return nil
		})
		_ = tx.Rollback(ctx)
		if err != nil {
			t.Fatal(err)
		}
	}
}
