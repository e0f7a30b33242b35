package api_test

import (
	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apitest"
	"github.com/commitreveal/rps/tournament"

	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestClosedLobbyRefusesNextConfig: a closed lobby starts no next game, so a next config for it
// would never apply: it is refused.
func TestClosedLobbyRefusesNextConfig(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	lobby := e.CreateLobby(map[string]any{"betSize": 1, "playersCountLimit": 2}).Id.String()
	e.Do("POST", "/v1/lobbies/"+lobby+"/close", e.Admin, nil).Want(t, http.StatusOK)
	e.Do("PUT", "/v1/lobbies/"+lobby+"/next-config", e.Admin, map[string]any{"betSize": 2, "playersCountLimit": 2}).
		WantProblem(t, http.StatusConflict, "wrong_stage")
	if l := e.Lobby(lobby, ""); l.NextConfig != nil {
		t.Errorf("a closed lobby took a next config: %+v", l.NextConfig)
	}
}

// TestClosingEndsRegistration: closing a lobby whose game is still in registration refunds the
// bets and stops it, so that no registration stays open forever in a closed lobby.
func TestClosingEndsRegistration(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	p, q := e.NewPlayer("p", 100), e.NewPlayer("q", 100)
	lobby := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 3}).Id.String()
	e.Register(lobby, p).Want(t, http.StatusCreated)
	e.Do("POST", "/v1/lobbies/"+lobby+"/close", e.Admin, nil).Want(t, http.StatusOK)
	if g := e.Lobby(lobby, "").Game; g.Stage != "stopped" {
		t.Fatalf("the closed lobby's registration is %s, want stopped", g.Stage)
	}
	if b := e.Balance(p.Token); b != 100 {
		t.Errorf("p's balance is %d after the close, want the bet back (100)", b)
	}
	e.Register(lobby, q).WantProblem(t, http.StatusConflict, "wrong_stage")
	if !e.Ledger().Ok {
		t.Error("ledger invariants fail")
	}
}

// TestDefaultsDoNotFreezeALobby: two free players who register and never commit would hold a
// lobby forever under Gear's rules; the default maxExtensions stops such a game.
func TestDefaultsDoNotFreezeALobby(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t, apitest.WithClock())
	p, q := e.NewPlayer("p", 0), e.NewPlayer("q", 0)
	l := e.CreateLobby(map[string]any{"betSize": 0, "playersCountLimit": 2, "entryTimeoutMs": 100, "moveTimeoutMs": 100, "revealTimeoutMs": 100})
	if l.Config.MaxExtensions <= 0 {
		t.Fatalf("a new lobby's default maxExtensions is %d", l.Config.MaxExtensions)
	}
	lobby := l.Id.String()
	e.Register(lobby, p).Want(t, http.StatusCreated)
	e.Register(lobby, q).Want(t, http.StatusCreated)
	ev, _ := e.WaitEvent(lobby, 0, 5*time.Second, apitest.OfType("game_stopped"))
	if reason := apitest.EventData(t, ev)["reason"]; reason != "max_extensions" {
		t.Errorf("the idle game stopped for %v", reason)
	}
}

// TestMoneyBoundedBelowJSONPrecision: no balance may pass 2^53-1 (what every JSON client reads
// exactly), and a payout cannot be refused, so the money in play as a whole is bounded: a credit
// that would take it past 2^53-1 is refused with money_limit, even if the credited balance alone
// stays below (a win could otherwise carry another balance past it).
func TestMoneyBoundedBelowJSONPrecision(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	p, q := e.NewPlayer("p", 0), e.NewPlayer("q", 0)
	const maxSafe = 1<<53 - 1
	e.Do("POST", "/v1/admin/accounts/"+p.ID+"/credits", e.Admin, map[string]any{"amount": maxSafe - 5}).Want(t, http.StatusOK)
	e.Do("POST", "/v1/admin/accounts/"+q.ID+"/credits", e.Admin, map[string]any{"amount": 10}).
		WantProblem(t, http.StatusConflict, "money_limit")
	e.Do("POST", "/v1/admin/accounts/"+q.ID+"/credits", e.Admin, map[string]any{"amount": 5}).Want(t, http.StatusOK)
	// Money that left through a debit may come back.
	e.Do("POST", "/v1/admin/accounts/"+p.ID+"/debits", e.Admin, map[string]any{"amount": 100}).Want(t, http.StatusOK)
	e.Do("POST", "/v1/admin/accounts/"+q.ID+"/credits", e.Admin, map[string]any{"amount": 100}).Want(t, http.StatusOK)
}

// TestDefaultsEndColludersGame: issue 21's attack over the API. A lobby created with only a bet
// and a limit of 4 gets the default maxRounds; three colluders play Rock, Paper and Scissors every
// round, so classic replays every round whatever the fourth player does, and the game ends at that
// bound, split, every bet back.
func TestDefaultsEndColludersGame(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	ps := []apitest.Player{e.NewPlayer("rock", 100), e.NewPlayer("paper", 100), e.NewPlayer("scissors", 100), e.NewPlayer("honest", 100)}
	l := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 4})
	if l.Config.MaxRounds != tournament.DefaultMaxRounds {
		t.Fatalf("a new lobby's default maxRounds is %d", l.Config.MaxRounds)
	}
	lobby, game := l.Id.String(), l.Game.Id.String()
	for _, p := range ps {
		e.Register(lobby, p).Want(t, http.StatusCreated)
	}
	honest := []string{"0", "1", "2", "3", "4"}
	for round := 1; ; round++ {
		if g := e.Lobby(lobby, "").Game; g.Id.String() != game {
			break
		} else if round > int(l.Config.MaxRounds) {
			t.Fatalf("round %d of a default game is open (%s)", round, g.Stage)
		}
		moves := []string{"0", "1", "2", honest[round%len(honest)]}
		for i, p := range ps {
			e.Commit(lobby, p, fmt.Sprintf("%s-round-%d-secret", moves[i], round)).Want(t, http.StatusOK)
		}
		for i, p := range ps {
			e.Reveal(lobby, p, fmt.Sprintf("%s-round-%d-secret", moves[i], round)).Want(t, http.StatusOK)
		}
	}
	var g api.GameSummary
	e.Do("GET", "/v1/games/"+game, "", nil).Want(t, http.StatusOK).Decode(t, &g)
	if g.Stage != "stopped" || g.StopReason == nil || *g.StopReason != "max_rounds" || g.Round != l.Config.MaxRounds {
		t.Errorf("the colluders' game ended as %s after round %d (reason %v)", g.Stage, g.Round, apitest.JSONOf(g.StopReason))
	}
	for _, p := range ps {
		if b := e.Balance(p.Token); b != 100 {
			t.Errorf("%s has %d after the split, want 100", p.Name, b)
		}
	}
}

// TestRegisterLeaveCyclesBounded: every register/leave cycle writes events and ledger postings
// for good, so an account may leave one game at most tournament.MaxLeavesPerGame times; its next
// registration in that game is 409 rejoin_limit and changes nothing. The leaves are counted as
// the migration that added the count counts those already in the log.
func TestRegisterLeaveCyclesBounded(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	p, q := e.NewPlayer("p", 100), e.NewPlayer("q", 100)
	lobby := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 3}).Id.String()
	for range tournament.MaxLeavesPerGame {
		e.Register(lobby, p).Want(t, http.StatusCreated)
		e.Leave(lobby, p).Want(t, http.StatusOK)
	}
	events := e.Events(lobby, 0).Next
	e.Register(lobby, p).WantProblem(t, http.StatusConflict, "rejoin_limit")
	e.QuickJoin(p, 10, "", "").WantProblem(t, http.StatusConflict, "no_match")
	if after := e.Events(lobby, 0).Next; after != events || e.Balance(p.Token) != 100 {
		t.Errorf("the refused registration changed something: %d events (was %d), balance %d", after, events, e.Balance(p.Token))
	}
	e.Register(lobby, q).Want(t, http.StatusCreated)
	// The migration's count from the log's player_left events is the count kept.
	migration, err := os.ReadFile("../migrations/0009_game_leaves.up.sql")
	if err != nil {
		t.Fatal(err)
	}
	_, backfill, _ := strings.Cut(string(migration), "INSERT INTO game_leaves")
	var kept, recounted string
	read := `SELECT string_agg(game_id || ' ' || account_id || ' ' || leaves, ',' ORDER BY game_id, account_id) FROM game_leaves`
	if err := e.Pool.QueryRow(t.Context(), read).Scan(&kept); err != nil {
		t.Fatal(err)
	}
	tx, err := e.Pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(t.Context()) }()
	if _, err := tx.Exec(t.Context(), "DELETE FROM game_leaves; INSERT INTO game_leaves"+backfill); err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(t.Context(), read).Scan(&recounted); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%d", tournament.MaxLeavesPerGame); kept != recounted || !strings.HasSuffix(kept, " "+want) {
		t.Errorf("leaves kept %q, recounted from the log %q", kept, recounted)
	}
}

// TestAccountNamesAreUnique: players tell opponents apart by name (in the app and the console),
// so two accounts may not have names that are one under the PRECIS Nickname profile's comparison
// (case, width, spaces): the second is 409 name_taken, the bootstrap admin's name included. A
// name is kept in the profile's form.
func TestAccountNamesAreUnique(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	var created api.AccountCreated
	e.Do("POST", "/v1/accounts", "", map[string]any{"name": "  Alice  Liddell "}).Want(t, http.StatusCreated).Decode(t, &created)
	if created.Account.Name != "Alice Liddell" {
		t.Errorf("stored name %q, want %q", created.Account.Name, "Alice Liddell")
	}
	for _, same := range []string{"Alice Liddell", "alice liddell", "ALICE LIDDELL", "ａｌｉｃｅ　ｌｉｄｄｅｌｌ", "alice\u00a0liddell", "Admin"} {
		e.Do("POST", "/v1/accounts", "", map[string]any{"name": same}).WantProblem(t, http.StatusConflict, "name_taken")
	}
	e.Do("POST", "/v1/accounts", "", map[string]any{"name": "ａｌｉｃｅ"}).Want(t, http.StatusCreated).Decode(t, &created)
	if created.Account.Name != "alice" {
		t.Errorf("stored name %q, want the profile's form %q", created.Account.Name, "alice")
	}
	var page api.AdminAccountPage
	e.Do("GET", "/v1/admin/accounts?query=alice", e.Admin, nil).Want(t, http.StatusOK).Decode(t, &page)
	if len(page.Accounts) != 2 {
		t.Errorf("%d accounts named like alice, want 2: %s", len(page.Accounts), apitest.JSONOf(page))
	}
}
