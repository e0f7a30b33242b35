package store

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/tournament"
	"github.com/commitreveal/rps/tournament/memstore"
	"github.com/commitreveal/rps/tournament/tournamenttest"
)

// modelCheck numbers the checks of TestModel, so their ids never collide in the shared database.
var modelCheck atomic.Int64

// twin is one backend with its own service, whose ids follow the same sequence as its twin's.
type twin struct {
	name string
	b    tournamenttest.Backend
	svc  *tournament.Service
}

func newTwin(name string, b tournamenttest.Backend, check int64) twin {
	var n int64
	newID := func() string { n++; return fmt.Sprintf("00000000-0000-4000-a%03d-%012d", check%1000, n) }
	return twin{name, b, tournament.NewService(tournament.Options{
		Rules: engine.Builtin(), MinTimeoutMs: tournamenttest.Timeout, NewID: newID, NewSalt: tournamenttest.NewSalt,
	})}
}

// TestModel applies random operation sequences to the in-memory model and to Postgres, with the
// same ids and clock, and requires the same outcome of every operation and the same state: the
// lobby, every game's header, players and moves, the event log (hashes included) and balances.
func TestModel(t *testing.T) {
	t.Parallel()
	pg := backend{newStore(t, Options{})}
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		check := modelCheck.Add(1)
		twins := []twin{newTwin("memstore", memstore.New(), check), newTwin("postgres", pg, check)}
		now := tournamenttest.Start
		// do runs op on both backends and requires the same outcome.
		do := func(what string, op func(tw twin, tx tournament.Tx) error) error {
			var errs [2]error
			for i, tw := range twins {
				errs[i] = tw.b.Do(ctx, func(tx tournament.Tx) error { return op(tw, tx) })
			}
			for i, err := range errs {
				if _, refused := tournament.IsRefusal(err); err != nil && !refused {
					rt.Fatalf("%s on %s: %v", what, twins[i].name, err)
				}
			}
			if refusalCode(errs[0]) != refusalCode(errs[1]) {
				rt.Fatalf("%s: %s says %v, %s says %v", what, twins[0].name, errs[0], twins[1].name, errs[1])
			}
			return errs[0]
		}

		var accounts []tournament.Actor
		for i, role := range []tournament.Role{tournament.RoleAdmin, tournament.RolePlayer, tournament.RolePlayer,
			tournament.RolePlayer, tournament.RolePlayer} {
			a := tournament.Actor{ID: tournament.AccountID(fmt.Sprintf("00000000-0000-4000-b%03d-%012d", check%1000, i)), Role: role}
			funds := rapid.Int64Range(0, 3000).Draw(rt, "funds")
			if role == tournament.RolePlayer {
				funds += 1000 // mostly enough to play, so that games get going
			}
			for _, tw := range twins {
				// Names are unique in a store, and every check makes accounts in the same one.
				if err := tw.b.CreateAccount(ctx, a.ID, fmt.Sprintf("a%d-%d", i, check), role, funds); err != nil {
					rt.Fatalf("create account on %s: %v", tw.name, err)
				}
			}
			accounts = append(accounts, a)
		}
		adm := accounts[0]
		var lobby tournament.LobbyID
		cfg := modelConfig(rt, "config")
		_ = do("create lobby", func(tw twin, tx tournament.Tx) (err error) { // both twins agree: checked by do
			lobby, err = tw.svc.CreateLobby(ctx, tx, now, adm, "model", cfg)
			return err
		})

		reveals := map[tournament.AccountID]string{}
		for range rapid.IntRange(1, 40).Draw(rt, "steps") {
			// Mostly players: rapid favours the first element, the admin.
			a := rapid.SampledFrom(accounts[1:]).Draw(rt, "actor")
			if rapid.IntRange(0, 19).Draw(rt, "asAdmin") == 0 {
				a = adm
			}
			// Mostly the move the stage calls for, so that games get played to the end; a stop or
			// a leave is rare.
			op := rapid.IntRange(0, 19).Draw(rt, "op")
			if op >= 14 && op < 19 && rapid.Bool().Draw(rt, "natural") {
				v, err := twins[0].b.Lobby(ctx, lobby)
				if err != nil {
					rt.Fatalf("lobby: %v", err)
				}
				g, err := twins[0].b.Game(ctx, v.GameID)
				if err != nil {
					rt.Fatalf("game: %v", err)
				}
				op = map[tournament.Stage]int{tournament.StageRegistration: 0, tournament.StageMoves: 6, tournament.StageReveal: 10}[g.Stage]
			}
			switch {
			case op < 5:
				_ = do("register", func(tw twin, tx tournament.Tx) error { return tw.svc.Register(ctx, tx, now, a, lobby) })
			case op < 6:
				_ = do("leave", func(tw twin, tx tournament.Tx) error { return tw.svc.Leave(ctx, tx, now, a, lobby) })
			case op < 10:
				reveal := rapid.SampledFrom([]string{"0", "1", "2", "3", "4", "9"}).Draw(rt, "digit") + "pw"
				err := do("commit", func(tw twin, tx tournament.Tx) error {
					return tw.svc.Commit(ctx, tx, now, a, lobby, engine.Commit(reveal))
				})
				if err == nil {
					reveals[a.ID] = reveal
				}
			case op < 14:
				reveal := reveals[a.ID]
				if rapid.IntRange(0, 4).Draw(rt, "wrong") == 0 {
					reveal = "1wrong"
				}
				_ = do("reveal", func(tw twin, tx tournament.Tx) error { return tw.svc.Reveal(ctx, tx, now, a, lobby, reveal) })
			case op < 15:
				_ = do("stop", func(tw twin, tx tournament.Tx) error { return tw.svc.Stop(ctx, tx, now, adm, lobby, "model") })
			case op < 16:
				cfg := modelConfig(rt, "next")
				_ = do("next config", func(tw twin, tx tournament.Tx) error {
					return tw.svc.ChangeNextConfig(ctx, tx, now, adm, lobby, cfg)
				})
			case op < 19:
				// A jump past a whole timeout first: rapid favours the first element.
				now += rapid.SampledFrom([]int64{tournamenttest.Timeout + 1, 1, tournamenttest.Timeout / 2, 3 * tournamenttest.Timeout}).Draw(rt, "advance")
				_ = do("expire", func(tw twin, tx tournament.Tx) error {
					_, err := tw.svc.Expire(ctx, tx, now, lobby)
					return err
				})
			default:
				gap := rapid.Int64Range(1, 2*tournamenttest.Timeout).Draw(rt, "gap")
				_ = do("shift", func(tw twin, tx tournament.Tx) error { return tw.svc.ShiftClock(ctx, tx, now, gap) })
			}
			now += rapid.Int64Range(0, 100).Draw(rt, "tick")
		}
		compareTwins(rt, twins, lobby, accounts)
	})
}

func modelConfig(rt *rapid.T, label string) tournament.Config {
	c := tournament.DefaultConfig()
	c.BetSize = rapid.SampledFrom([]int64{0, 100, 333}).Draw(rt, label+".bet")
	c.PlayersCountLimit = rapid.IntRange(2, 4).Draw(rt, label+".limit")
	c.EntryTimeoutMs, c.MoveTimeoutMs, c.RevealTimeoutMs = tournamenttest.Timeout, tournamenttest.Timeout, 2*tournamenttest.Timeout
	c.Ruleset = rapid.SampledFrom([]string{"rps", "rpsls"}).Draw(rt, label+".ruleset")
	c.Resolution = rapid.SampledFrom([]engine.Resolution{engine.Classic, engine.Weighted}).Draw(rt, label+".resolution")
	c.StartWhenFull = rapid.Bool().Draw(rt, label+".startWhenFull")
	c.MaxExtensions = rapid.IntRange(0, 2).Draw(rt, label+".maxExtensions")
	c.MaxRounds = rapid.IntRange(0, 3).Draw(rt, label+".maxRounds")
	return c
}

// compareTwins requires both backends to hold the same lobby, games, players, moves, events and
// balances.
func compareTwins(rt *rapid.T, twins []twin, lobby tournament.LobbyID, accounts []tournament.Actor) {
	ctx := context.Background()
	same := func(what string, get func(b tournamenttest.Backend) (any, error)) {
		var vals [2]any
		for i, tw := range twins {
			v, err := get(tw.b)
			if err != nil {
				rt.Fatalf("%s on %s: %v", what, tw.name, err)
			}
			if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice && rv.Len() == 0 {
				v = nil // an empty result is the same whether a backend says nil or []
			}
			vals[i] = v
		}
		if !reflect.DeepEqual(vals[0], vals[1]) {
			rt.Fatalf("%s differs:\n%s: %+v\n%s: %+v", what, twins[0].name, vals[0], twins[1].name, vals[1])
		}
	}
	same("lobby", func(b tournamenttest.Backend) (any, error) { return b.Lobby(ctx, lobby) })
	var logs [2][]tournament.LoggedEvent
	for i, tw := range twins {
		es, err := tw.b.Events(ctx, lobby)
		if err != nil {
			rt.Fatalf("events on %s: %v", tw.name, err)
		}
		logs[i] = es
	}
	for i := range max(len(logs[0]), len(logs[1])) {
		if i >= len(logs[0]) || i >= len(logs[1]) || !reflect.DeepEqual(logs[0][i], logs[1][i]) {
			rt.Fatalf("event %d differs:\n%s: %s\n%s: %s", i+1, twins[0].name, eventAt(logs[0], i), twins[1].name, eventAt(logs[1], i))
		}
	}
	for _, a := range accounts {
		same("balance of "+string(a.ID), func(b tournamenttest.Backend) (any, error) { return b.Balance(ctx, a.ID) })
	}
	for _, e := range logs[0] {
		if e.Type != tournament.EventGameOpened {
			continue
		}
		id := e.GameID
		same("game", func(b tournamenttest.Backend) (any, error) { return b.Game(ctx, id) })
		same("players", func(b tournamenttest.Backend) (any, error) { return b.Players(ctx, id) })
		g, err := twins[0].b.Game(ctx, id)
		if err != nil {
			rt.Fatalf("game: %v", err)
		}
		for r := 1; r <= g.Round; r++ {
			same(fmt.Sprint("moves of round ", r), func(b tournamenttest.Backend) (any, error) { return b.Moves(ctx, id, r) })
		}
	}
}

func eventAt(es []tournament.LoggedEvent, i int) string {
	if i >= len(es) {
		return "none"
	}
	e := es[i]
	return fmt.Sprintf("%d %s game %q at %d %s hash %x", e.Seq, e.Type, e.GameID, e.At, e.Data, e.Hash)
}
