package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apitest"
)

// TestLobbyReadIsOneSnapshot reads a lobby as a player, again and again, while two players play
// game after game in it: every read must show the game and the reader's own part in it as of one
// moment. Before, the caller's part was read after the game's header, in a statement of its own,
// and a read could show round 1's reveal stage with everyone still in and its reader already out
// (found by the fault tests' linearizability check, internal/faulttest).
func TestLobbyReadIsOneSnapshot(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	const games = 60
	a, b := e.NewPlayer("alice", 10*games), e.NewPlayer("bob", 10*games)
	lobby := e.CreateLobby(map[string]any{"betSize": 1, "playersCountLimit": 2}).Id.String()

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var torn []string
	reads := 0
	wg.Go(func() {
		for ctx.Err() == nil {
			r, err := e.Request(ctx, "GET", "/v1/lobbies/"+lobby, a.Token, nil)
			if err != nil || r.Status != http.StatusOK {
				continue
			}
			var l api.Lobby
			if err := json.Unmarshal(r.Body, &l); err != nil {
				continue
			}
			mu.Lock()
			reads++
			if why := tornRead(*l.Game); why != "" {
				torn = append(torn, why)
			}
			mu.Unlock()
		}
	})
	for game := range games {
		e.Register(lobby, a).Want(t, http.StatusCreated)
		e.Register(lobby, b).Want(t, http.StatusCreated)
		for round := 1; ; round++ {
			// Different moves end the game in one round; the same ones replay it.
			ra, rb := fmt.Sprintf("0a-%d-%d", game, round), fmt.Sprintf("%db-%d-%d", 1+game%2, game, round)
			if round == 1 && game%5 == 0 {
				rb = fmt.Sprintf("0b-%d-%d", game, round)
			}
			e.Commit(lobby, a, ra).Want(t, http.StatusOK)
			e.Commit(lobby, b, rb).Want(t, http.StatusOK)
			e.Reveal(lobby, a, ra).Want(t, http.StatusOK)
			var after api.Lobby
			e.Reveal(lobby, b, rb).Want(t, http.StatusOK).Decode(t, &after)
			if after.Game.Stage == "registration" {
				break
			}
		}
	}
	stop()
	wg.Wait()
	if reads < games {
		t.Fatalf("only %d reads during %d games", reads, games)
	}
	for _, why := range torn {
		t.Error(why)
	}
	t.Logf("%d reads during %d games, %d torn", reads, games, len(torn))
}

// tornRead says how a player's view of a game contradicts itself ("" when it does not).
func tornRead(g api.GameState) string {
	you := g.You
	if you == nil {
		return ""
	}
	switch {
	case you.Registered && !you.InGame && g.Remaining == g.Players:
		return fmt.Sprintf("out of game %d round %d (%s) in which all %d players are still in", g.Number, g.Round, g.Stage, g.Players)
	case you.Committed && g.Committed == 0:
		return fmt.Sprintf("committed in game %d round %d (%s), which has no commitment", g.Number, g.Round, g.Stage)
	case you.Revealed && g.Revealed == 0:
		return fmt.Sprintf("revealed in game %d round %d (%s), which has no reveal", g.Number, g.Round, g.Stage)
	case you.Registered && g.Players == 0:
		return fmt.Sprintf("registered in game %d, which has no player", g.Number)
	case !you.Registered && g.Stage != "registration" && g.Players == 2:
		return fmt.Sprintf("not registered in game %d (%s), which the reader plays", g.Number, g.Stage)
	}
	return ""
}
