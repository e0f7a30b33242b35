package api_test

import (
	"github.com/commitreveal/rps/internal/apitest"

	"net/http"
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
