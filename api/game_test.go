package api_test

import (
	"fmt"
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apitest"

	"github.com/commitreveal/rps/tournament"
)

// TestFullGame plays a 4-player classic RPSLS game to a winner over HTTP in two rounds and checks
// balances, the lobby along the way, the transcript, the event log and the ledger.
func TestFullGame(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	const bet, funds = 100, 1000
	a, b, c, d := e.NewPlayer("alice", funds), e.NewPlayer("bob", funds), e.NewPlayer("carol", funds), e.NewPlayer("dave", funds)
	l := e.CreateLobby(map[string]any{"betSize": bet, "playersCountLimit": 4})
	lobby, game := l.Id.String(), l.Game.Id.String()
	if l.Game.Stage != "registration" || l.Game.Players != 0 || l.Game.Deadline != nil {
		t.Fatalf("new game: %+v", *l.Game)
	}

	for i, p := range []apitest.Player{a, b, c, d} {
		var after api.Lobby
		e.Register(lobby, p).Want(t, http.StatusCreated).Decode(t, &after)
		if int(after.Game.Players) != i+1 || after.Game.Pot != int64(bet*(i+1)) || after.Game.You == nil || !after.Game.You.Registered {
			t.Fatalf("after registration %d: %+v", i+1, *after.Game)
		}
		if got := e.Balance(p.Token); got != funds-bet {
			t.Fatalf("%s balance %d after registering, want %d", p.Name, got, funds-bet)
		}
	}
	if g := e.Lobby(lobby, "").Game; g.Stage != "moves" || g.Round != 1 || g.Deadline == nil || g.DeadlineMs == nil {
		t.Fatalf("full game did not start round 1: %+v", *g)
	}

	// Round 1: rock, rock, scissors, scissors: rock beats every other weapon present.
	round1 := map[apitest.Player]string{a: "0alice-r1-pw", b: "0bob-r1-pw", c: "2carol-r1-pw", d: "2dave-r1-pw"}
	for i, p := range []apitest.Player{a, b, c, d} {
		var after api.Lobby
		e.Commit(lobby, p, round1[p]).Want(t, http.StatusOK).Decode(t, &after)
		you := after.Game.You
		if i < 3 && (after.Game.Stage != "moves" || int(after.Game.Committed) != i+1) {
			t.Fatalf("after commit %d: %+v", i+1, *after.Game)
		}
		if i < 3 && (you == nil || !you.Committed || you.Commitment == nil || *you.Commitment != apitest.CommitmentOf(round1[p])) {
			t.Fatalf("commit %d: the owner does not see its own commitment: %+v", i+1, you)
		}
	}
	if g := e.Lobby(lobby, "").Game; g.Stage != "reveal" || g.Round != 1 {
		t.Fatalf("all committed but no reveal stage: %+v", *g)
	}
	for i, p := range []apitest.Player{a, b, c, d} {
		var after api.Lobby
		e.Reveal(lobby, p, round1[p]).Want(t, http.StatusOK).Decode(t, &after)
		if i < 3 && (after.Game.Stage != "reveal" || int(after.Game.Revealed) != i+1 || after.Game.You == nil || after.Game.You.Move == nil) {
			t.Fatalf("after reveal %d: %+v", i+1, *after.Game)
		}
	}
	g := e.Lobby(lobby, "").Game
	if g.Stage != "moves" || g.Round != 2 || g.Remaining != 2 || g.Players != 4 || g.Committed != 0 {
		t.Fatalf("after round 1: %+v", *g)
	}
	// The losers are out: their commitments are refused.
	e.Commit(lobby, c, "1carol-late").WantProblem(t, http.StatusConflict, "not_in_game")

	// Round 2: paper beats rock.
	round2 := map[apitest.Player]string{a: "1alice-r2-pw", b: "0bob-r2-pw"}
	e.Commit(lobby, a, round2[a]).Want(t, http.StatusOK)
	e.Commit(lobby, b, round2[b]).Want(t, http.StatusOK)
	e.Reveal(lobby, b, round2[b]).Want(t, http.StatusOK)
	var end api.Lobby
	e.Reveal(lobby, a, round2[a]).Want(t, http.StatusOK).Decode(t, &end)
	// The lobby goes on with its next game.
	if end.Game == nil || end.Game.Id.String() == game || end.Game.Stage != "registration" || end.Game.Number != 2 {
		t.Fatalf("after the win the lobby should open game 2: %+v", end.Game)
	}

	wantBalances := map[apitest.Player]int64{a: funds - bet + 4*bet, b: funds - bet, c: funds - bet, d: funds - bet}
	for p, want := range wantBalances {
		if got := e.Balance(p.Token); got != want {
			t.Errorf("%s: balance %d, want %d", p.Name, got, want)
		}
	}

	// Transcript: the summary.
	var sum api.GameSummary
	e.Do("GET", "/v1/games/"+game, "", nil).Want(t, http.StatusOK).Decode(t, &sum)
	if sum.Stage != "finished" || sum.Winner == nil || sum.Winner.String() != a.ID || sum.Payout != 4*bet || sum.Pot != 0 ||
		sum.Round != 2 || sum.Players != 4 || sum.EndedAt == nil || sum.LobbyId.String() != lobby || sum.Number != 1 {
		t.Errorf("game summary: %+v", sum)
	}
	// The players, in registration order.
	var players api.GamePlayerPage
	e.Do("GET", "/v1/games/"+game+"/players", "", nil).Want(t, http.StatusOK).Decode(t, &players)
	wantStatus := map[string]string{a.ID: "winner", b.ID: "eliminated", c.ID: "eliminated", d.ID: "eliminated"}
	wantOut := map[string]int32{b.ID: 2, c.ID: 1, d.ID: 1}
	if len(players.Players) != 4 || players.Next != nil {
		t.Fatalf("players: %+v", players)
	}
	for i, p := range players.Players {
		id := p.AccountId.String()
		if p.Order != int32(i+1) || string(p.Status) != wantStatus[id] || id != []apitest.Player{a, b, c, d}[i].ID {
			t.Errorf("player %d: %+v", i, p)
		}
		if out, ok := wantOut[id]; ok && (p.EliminatedInRound == nil || *p.EliminatedInRound != out) {
			t.Errorf("player %s eliminated in %v, want %d", p.Name, p.EliminatedInRound, out)
		}
	}
	// A page of one has a cursor to the next.
	var page api.GamePlayerPage
	e.Do("GET", "/v1/games/"+game+"/players?limit=1", "", nil).Want(t, http.StatusOK).Decode(t, &page)
	if len(page.Players) != 1 || page.Next == nil {
		t.Fatalf("first page of 1: %+v", page)
	}
	e.Do("GET", "/v1/games/"+game+"/players?limit=3&after="+*page.Next, "", nil).Want(t, http.StatusOK).Decode(t, &page)
	if len(page.Players) != 3 || page.Players[0].AccountId.String() != b.ID {
		t.Fatalf("second page: %+v", page)
	}

	// The rounds: everything public, counts per move, the sealed values as played.
	checkRound := func(n int, order []apitest.Player, moves map[apitest.Player]string, present int32, survivors int32, counts []int32) {
		t.Helper()
		var r api.RoundTranscript
		e.Do("GET", fmt.Sprintf("/v1/games/%s/rounds/%d", game, n), "", nil).Want(t, http.StatusOK).Decode(t, &r)
		if r.Stage != "closed" || r.Present == nil || *r.Present != present || fmt.Sprint(r.Counts) != fmt.Sprint(counts) || len(r.Moves) != len(moves) {
			t.Fatalf("round %d: %s", n, apitest.JSONOf(r))
		}
		// RoundTranscript.remaining is how many players survived the round (the round_resolved
		// event's remaining; its survivors is a mask of moves).
		if r.Remaining == nil || *r.Remaining != survivors {
			t.Errorf("round %d: remaining %v, want %d players", n, apitest.JSONOf(r.Remaining), survivors)
		}
		byID := map[string]string{}
		for p, rev := range moves {
			byID[p.ID] = rev
		}
		for i, m := range r.Moves {
			rev := byID[m.AccountId.String()]
			if !m.Committed || !m.Revealed || m.Commitment == nil || *m.Commitment != apitest.CommitmentOf(rev) ||
				m.Reveal == nil || *m.Reveal != rev || m.Move == nil || *m.Move != int32(rev[0]-'0') {
				t.Errorf("round %d move %s, want reveal %q", n, apitest.JSONOf(m), rev)
			}
			// The spec: "its players' moves ... paged by an opaque cursor in registration order".
			if m.AccountId.String() != order[i].ID {
				t.Errorf("round %d: move %d is %s's, want %s's (registration order)", n, i, m.AccountId, order[i].Name)
			}
		}
	}
	checkRound(1, []apitest.Player{a, b, c, d}, round1, 1<<0|1<<2, 2, []int32{2, 0, 2, 0, 0})
	checkRound(2, []apitest.Player{a, b}, round2, 1<<0|1<<1, 1, []int32{1, 1, 0, 0, 0})
	e.Do("GET", "/v1/games/"+game+"/rounds/3", "", nil).WantProblem(t, http.StatusNotFound, "not_found")

	// The log: a verifiable chain whose digests match the transcript.
	evs := e.AllEvents(lobby)
	apitest.VerifyChain(t, evs, 1, "")
	digests, salts := map[string]string{}, map[string]string{}
	for _, ev := range evs {
		data := apitest.EventData(t, ev)
		switch ev.Type {
		case "moves_closed", "round_resolved":
			digests[fmt.Sprintf("%s/%v", ev.Type, data["round"])] = fmt.Sprint(data["digest"])
			if ev.Type == "round_resolved" {
				salts[fmt.Sprint(data["round"])] = fmt.Sprint(data["salt"])
			}
		case "game_finished":
			if data["winner"] != a.ID || data["amount"] != float64(4*bet) {
				t.Errorf("game_finished: %s", ev.Data)
			}
		}
	}
	for n, moves := range map[int]map[apitest.Player]string{1: round1, 2: round2} {
		salt, err := tournament.ParseSalt(salts[fmt.Sprint(n)])
		if err != nil {
			t.Errorf("round %d: round_resolved reveals no salt: %v", n, err)
		}
		commits := digestOf(tournament.NewSaltedDigester(salt), moves, apitest.CommitmentOf)
		reveals := digestOf(tournament.NewDigester(), moves, func(s string) string { return s })
		if got := digests[fmt.Sprintf("moves_closed/%d", n)]; got != commits {
			t.Errorf("round %d: moves_closed digest %s, transcript gives %s", n, got, commits)
		}
		if got := digests[fmt.Sprintf("round_resolved/%d", n)]; got != reveals {
			t.Errorf("round %d: round_resolved digest %s, transcript gives %s", n, got, reveals)
		}
	}

	// The ledger balances, and each player's own entries add up to its balance.
	rep := e.Ledger()
	if !rep.Ok || rep.Escrows != 0 || rep.PlayerBalances != 4*funds || rep.Treasury != -4*funds || rep.EntriesSum != 0 {
		t.Errorf("ledger report: %+v", rep)
	}
	var mine api.LedgerPage
	e.Do("GET", "/v1/me/ledger", a.Token, nil).Want(t, http.StatusOK).Decode(t, &mine)
	var total int64
	var kinds []string
	for _, en := range mine.Entries {
		total += en.Amount
		kinds = append(kinds, string(en.Kind))
	}
	if total != wantBalances[a] || fmt.Sprint(kinds) != "[credit bet payout]" {
		t.Errorf("alice's ledger %v sums to %d, want %d", kinds, total, wantBalances[a])
	}
}

// digestOf computes a stage's digest with d as DESIGN defines it, from the transcript's values.
func digestOf(d *tournament.Digester, moves map[apitest.Player]string, value func(string) string) string {
	ids := make([]string, 0, len(moves))
	byID := map[string]string{}
	for p, rev := range moves {
		ids = append(ids, p.ID)
		byID[p.ID] = value(rev)
	}
	sort.Strings(ids)
	for _, id := range ids {
		_ = d.Add(tournament.AccountID(id), byID[id])
	}
	sum, _ := d.Sum()
	return sum
}

// The Gear scenarios that involve time run with the clock worker and timeouts of a few hundred
// milliseconds; they wait on the event log (long poll), never for a fixed time.

const stageTimeout = 250 // ms

// timedLobby creates a lobby with short stage timeouts; extra overrides config fields.
func timedLobby(e *apitest.Env, limit int, extra ...any) api.Lobby {
	cfg := map[string]any{
		"betSize": 10, "playersCountLimit": limit,
		"entryTimeoutMs": stageTimeout, "moveTimeoutMs": stageTimeout, "revealTimeoutMs": stageTimeout,
	}
	for i := 0; i+1 < len(extra); i += 2 {
		cfg[extra[i].(string)] = extra[i+1]
	}
	return e.CreateLobby(cfg)
}

func TestEntryTimeoutExtendsThenStarts(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t, apitest.WithClock())
	p1, p2 := e.NewPlayer("p1", 100), e.NewPlayer("p2", 100)
	l := timedLobby(e, 4)
	lobby := l.Id.String()
	e.Register(lobby, p1).Want(t, http.StatusCreated)
	start := time.Now()
	ext, _ := e.WaitEvent(lobby, 0, 5*time.Second, apitest.OfType("stage_extended"))
	if data := apitest.EventData(t, ext); data["stage"] != "registration" {
		t.Fatalf("extension of %s", ext.Data)
	}
	if g := e.Lobby(lobby, "").Game; g.Stage != "registration" || g.Extensions < 1 || g.Players != 1 {
		t.Fatalf("after the entry timeout with one player: %+v", *g)
	}
	e.Register(lobby, p2).Want(t, http.StatusCreated)
	started, _ := e.WaitEvent(lobby, ext.Seq, 5*time.Second, apitest.OfType("round_started"))
	if data := apitest.EventData(t, started); data["round"] != float64(1) || data["players"] != float64(2) {
		t.Fatalf("round_started: %s", started.Data)
	}
	if g := e.Lobby(lobby, "").Game; g.Stage != "moves" || g.Round != 1 || g.Players != 2 {
		t.Fatalf("after the entry timeout with two players: %+v", *g)
	}
	t.Logf("extended and started in %v", time.Since(start))
}

func TestMoveTimeoutWithOneMoverWins(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t, apitest.WithClock())
	p1, p2 := e.NewPlayer("p1", 100), e.NewPlayer("p2", 100)
	l := timedLobby(e, 2)
	lobby, game := l.Id.String(), l.Game.Id.String()
	e.Register(lobby, p1).Want(t, http.StatusCreated)
	e.Register(lobby, p2).Want(t, http.StatusCreated)
	e.CommitIn(lobby, game, 1, p1, "3lonely").Want(t, http.StatusOK) // (no read first: the stage is short)
	fin, seen := e.WaitEvent(lobby, 0, 5*time.Second, apitest.OfType("game_finished"))
	if data := apitest.EventData(t, fin); data["winner"] != p1.ID || data["amount"] != float64(20) {
		t.Fatalf("game_finished: %s (log %s)", fin.Data, apitest.EventTypes(seen))
	}
	if b1, b2 := e.Balance(p1.Token), e.Balance(p2.Token); b1 != 110 || b2 != 90 {
		t.Fatalf("balances %d, %d; want 110, 90", b1, b2)
	}
	var sum api.GameSummary
	e.Do("GET", "/v1/games/"+game, "", nil).Want(t, http.StatusOK).Decode(t, &sum)
	if sum.Stage != "finished" || sum.Winner == nil || sum.Winner.String() != p1.ID {
		t.Fatalf("summary: %+v", sum)
	}
	if !e.Ledger().Ok {
		t.Fatal("ledger invariants broken")
	}
}

func TestMoveTimeoutTwoOfThreeReveal(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t, apitest.WithClock())
	p1, p2, p3 := e.NewPlayer("p1", 100), e.NewPlayer("p2", 100), e.NewPlayer("p3", 100)
	// A reveal window long enough to reveal in: that stage ends when both have revealed. The
	// third registration starts the game, however long the first two took (with the short entry
	// window, a loaded machine started it with the first two and refused the third).
	l := timedLobby(e, 3, "revealTimeoutMs", 10_000, "entryTimeoutMs", 10_000, "startWhenFull", true)
	lobby, game := l.Id.String(), l.Game.Id.String()
	for _, p := range []apitest.Player{p1, p2, p3} {
		e.Register(lobby, p).Want(t, http.StatusCreated)
	}
	// Signed for round 1 of the game without reading the lobby first: the moves stage is short.
	e.CommitIn(lobby, game, 1, p1, "0rock-p1").Want(t, http.StatusOK)
	e.CommitIn(lobby, game, 1, p2, "2scissors-p2").Want(t, http.StatusOK)
	closed, _ := e.WaitEvent(lobby, 0, 5*time.Second, apitest.OfType("moves_closed"))
	if data := apitest.EventData(t, closed); data["committed"] != float64(2) || data["eliminated"] != float64(1) {
		t.Fatalf("moves_closed: %s", closed.Data)
	}
	// The third player is out; the reveal stage is the two committers'.
	e.Reveal(lobby, p3, "1whatever").WantProblem(t, http.StatusConflict, "not_in_game")
	r1 := e.Reveal(lobby, p1, "0rock-p1")
	r2 := e.Reveal(lobby, p2, "2scissors-p2")
	if r1.Status != http.StatusOK || r2.Status != http.StatusOK {
		t.Fatalf("reveals: %d %s / %d %s", r1.Status, r1.Body, r2.Status, r2.Body)
	}
	fin, seen := e.WaitEvent(lobby, closed.Seq, 5*time.Second, apitest.OfType("game_finished"))
	if data := apitest.EventData(t, fin); data["winner"] != p1.ID || data["amount"] != float64(30) {
		t.Fatalf("game_finished: %s (log %s)", fin.Data, apitest.EventTypes(seen))
	}
	var players api.GamePlayerPage
	e.Do("GET", "/v1/games/"+game+"/players", "", nil).Want(t, http.StatusOK).Decode(t, &players)
	status := map[string]string{}
	for _, p := range players.Players {
		status[p.AccountId.String()] = string(p.Status)
	}
	if status[p1.ID] != "winner" || status[p2.ID] != "eliminated" || status[p3.ID] != "eliminated" {
		t.Fatalf("players: %v", status)
	}
	var r api.RoundTranscript
	e.Do("GET", "/v1/games/"+game+"/rounds/1", "", nil).Want(t, http.StatusOK).Decode(t, &r)
	if r.Present == nil || *r.Present != 1<<0|1<<2 {
		t.Fatalf("round 1: %s", apitest.JSONOf(r))
	}
	// The spec: the round's moves are those of "the players in the round when it started", and
	// RoundMove.committed says whether each committed; p3, who did not, belongs in the list.
	committed := map[string]bool{}
	for _, m := range r.Moves {
		committed[m.AccountId.String()] = m.Committed
	}
	if len(r.Moves) != 3 || !committed[p1.ID] || !committed[p2.ID] || committed[p3.ID] {
		t.Errorf("round 1 lists %d moves %s; want the 3 players of the round, p3 with committed=false", len(r.Moves), apitest.JSONOf(r.Moves))
	}
}

func TestRevealTimeoutWithOneRevealerWins(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t, apitest.WithClock())
	p1, p2 := e.NewPlayer("p1", 100), e.NewPlayer("p2", 100)
	// A long moves window (both commit at once), a short reveal window.
	l := timedLobby(e, 2, "moveTimeoutMs", 10_000, "revealTimeoutMs", 400)
	lobby := l.Id.String()
	e.Register(lobby, p1).Want(t, http.StatusCreated)
	e.Register(lobby, p2).Want(t, http.StatusCreated)
	e.Commit(lobby, p1, "2scissors").Want(t, http.StatusOK)
	e.Commit(lobby, p2, "0rock").Want(t, http.StatusOK)
	// p2's rock would beat p1's scissors, but only p1 reveals.
	e.Reveal(lobby, p1, "2scissors").Want(t, http.StatusOK)
	fin, seen := e.WaitEvent(lobby, 0, 5*time.Second, apitest.OfType("game_finished"))
	if data := apitest.EventData(t, fin); data["winner"] != p1.ID || data["amount"] != float64(20) {
		t.Fatalf("game_finished: %s (log %s)", fin.Data, apitest.EventTypes(seen))
	}
	if b1, b2 := e.Balance(p1.Token), e.Balance(p2.Token); b1 != 110 || b2 != 90 {
		t.Fatalf("balances %d, %d; want 110, 90", b1, b2)
	}
	// Too late for p2, whose reveal names the game and round that ended.
	late := apitest.Act{Action: tournament.ActionReveal, Lobby: lobby, Game: l.Game.Id.String(), Round: 1,
		Payload: tournament.ActionPayload{Reveal: "0rock"}}
	e.Do("POST", "/v1/lobbies/"+lobby+"/reveals", p2.Token, map[string]any{"reveal": "0rock"}, e.Signed(p2, late)...).
		WantProblem(t, http.StatusConflict, "stale_signature")
	if !e.Ledger().Ok {
		t.Fatal("ledger invariants broken")
	}
}

func TestEmptyMovesStageExtends(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t, apitest.WithClock())
	p1, p2 := e.NewPlayer("p1", 100), e.NewPlayer("p2", 100)
	l := timedLobby(e, 2)
	lobby := l.Id.String()
	e.Register(lobby, p1).Want(t, http.StatusCreated)
	e.Register(lobby, p2).Want(t, http.StatusCreated)
	ext, _ := e.WaitEvent(lobby, 0, 5*time.Second, apitest.OfType("stage_extended"))
	if data := apitest.EventData(t, ext); data["stage"] != "moves" || data["round"] != float64(1) {
		t.Fatalf("stage_extended: %s", ext.Data)
	}
	// Still playable after the extension (no read first: the stage is short).
	e.CommitIn(lobby, l.Game.Id.String(), 1, p1, "1paper").Want(t, http.StatusOK)
	fin, _ := e.WaitEvent(lobby, ext.Seq, 5*time.Second, apitest.OfType("game_finished"))
	if data := apitest.EventData(t, fin); data["winner"] != p1.ID {
		t.Fatalf("game_finished: %s", fin.Data)
	}
}
