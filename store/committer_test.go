package store

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/commitreveal/rps/tournament"
)

// TestLobbiesShareATransaction queues registrations in three lobbies behind an action that holds
// the committer: they run together in one transaction, each registered in its own lobby with its
// own outcome, and WriteStats counts two transactions for the four actions.
func TestLobbiesShareATransaction(t *testing.T) {
	t.Parallel()
	s, adm, first := batchLobby(t, nil, 60_000)
	cfg := fastConfig(60_000)
	cfg.PlayersCountLimit = 10
	lobbies := []tournament.LobbyID{first, createLobby(t, s, adm, cfg), createLobby(t, s, adm, cfg)}
	before := s.WriteStats()
	players := []tournament.Actor{player(t, s, "p1", 100), player(t, s, "p2", 100), player(t, s, "poor", 1)}
	results := make([]keyedResult, len(lobbies))
	var calls []func()
	for i, lobby := range lobbies {
		calls = append(calls, keyed(t, s, lobby, key(players[i], "k", "register"), &results[i], registerAction(s, players[i], lobby)))
	}
	runAsBatch(t, s, first, calls...)

	for i, r := range results[:2] {
		if r.err != nil || r.out.Status != 200 {
			t.Fatalf("registration %d: %+v", i, r)
		}
	}
	if r := results[2]; r.err != nil || r.out.Status != 409 || string(r.out.Body) != string(tournament.CodeInsufficientFunds) {
		t.Errorf("the poor player's registration: %+v, want refused %s", results[2], tournament.CodeInsufficientFunds)
	}
	if results[0].tx != results[1].tx || results[1].tx != results[2].tx {
		t.Errorf("transactions %d, %d, %d: want the three lobbies' actions in one", results[0].tx, results[1].tx, results[2].tx)
	}
	for i, lobby := range lobbies[:2] {
		v, err := s.Lobby(context.Background(), lobby)
		if err != nil {
			t.Fatal(err)
		}
		if v.Game.Players != 1 {
			t.Errorf("lobby %d has %d players, want its own registration only", i, v.Game.Players)
		}
	}
	after := s.WriteStats()
	if got := (WriteStats{after.Transactions - before.Transactions, after.Actions - before.Actions}); got != (WriteStats{2, 4}) {
		t.Errorf("write stats %+v, want 2 transactions for 4 actions", got)
	}
}

// TestCommittersKeepEachLobbysOrder runs many actions on several lobbies at once through several
// committers: every lobby's log stays gapless and in the order its actions committed, and each
// player registers once (no action lost or run twice).
func TestCommittersKeepEachLobbysOrder(t *testing.T) {
	t.Parallel()
	s := newStore(t, Options{Service: fastService(), Committers: 3})
	adm := admin(t, s)
	cfg := fastConfig(60_000)
	cfg.PlayersCountLimit = 50
	var lobbies []tournament.LobbyID
	for range 6 {
		lobbies = append(lobbies, createLobby(t, s, adm, cfg))
	}
	const perLobby = 12
	var wg sync.WaitGroup
	errs := make(chan error, len(lobbies)*perLobby)
	for i := range perLobby {
		for j, lobby := range lobbies {
			p := player(t, s, "p"+string(rune('a'+i))+string(rune('a'+j)), 100)
			wg.Go(func() {
				if err := register(s, p, lobby); err != nil {
					errs <- err
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, lobby := range lobbies {
		v, err := s.Lobby(context.Background(), lobby)
		if err != nil {
			t.Fatal(err)
		}
		if v.Game.Players != perLobby {
			t.Errorf("lobby %s: %d players, want %d", lobby, v.Game.Players, perLobby)
		}
		events, err := s.Events(context.Background(), lobby, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range events {
			if e.Seq != int64(i+1) || (i > 0 && e.PrevHash != events[i-1].Hash) {
				t.Fatalf("lobby %s: event %d is seq %d or does not chain to the one before", lobby, i, e.Seq)
			}
		}
	}
}

// TestWholeRoundStatementsPlanForTheirGame checks the plan modes of a committer's transaction:
// generic plans for its fixed statements, PostgreSQL's own choice inside withCustomPlans (the
// statements over a whole round or game), and generic plans again after it.
func TestWholeRoundStatementsPlanForTheirGame(t *testing.T) {
	t.Parallel()
	s, _, lobby := batchLobby(t, nil, 60_000)
	ctx := context.Background()
	mode := func(tx *pgTx) string {
		var m string
		if err := queryRow(ctx, tx.tx, `SELECT current_setting('plan_cache_mode')`).Scan(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	var modes []string
	err := s.RunLobby(ctx, lobby, func(tx tournament.Tx, _ int64) error {
		pt := tx.(*pgTx)
		modes = append(modes, mode(pt))
		if err := pt.withCustomPlans(func() error {
			modes = append(modes, mode(pt))
			return nil
		}); err != nil {
			return err
		}
		modes = append(modes, mode(pt))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"force_generic_plan", "auto", "force_generic_plan"}; !slices.Equal(modes, want) {
		t.Errorf("plan modes %v, want %v", modes, want)
	}

	// Statements over a round one after the other (a stage change's) set the plans aside once,
	// and generic plans come back before the next statement of another kind.
	err = s.RunLobby(ctx, lobby, func(tx tournament.Tx, _ int64) error {
		pt := tx.(*pgTx)
		before := pt.tx.pending.Len()
		for range 3 {
			if err := pt.withCustomPlans(func() error {
				pt.tx.later(`SELECT 1`)
				return nil
			}); err != nil {
				return err
			}
		}
		if queued := pt.tx.pending.Len() - before; queued != 4 {
			t.Errorf("three statements over a round queued %d statements, want 4 (one setting aside)", queued)
		}
		if m := mode(pt); m != "force_generic_plan" {
			t.Errorf("plan mode after them: %s, want force_generic_plan", m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
