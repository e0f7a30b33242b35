package api

import (
	"net/http"
	"testing"
	"time"
)

// TestClosedLobbyRefusesNextConfig: a closed lobby starts no next game, so a next config for it
// would never apply: it is refused.
func TestClosedLobbyRefusesNextConfig(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lobby := e.createLobby(map[string]any{"betSize": 1, "playersCountLimit": 2}).Id.String()
	e.do("POST", "/v1/lobbies/"+lobby+"/close", e.Admin, nil).want(t, http.StatusOK)
	e.do("PUT", "/v1/lobbies/"+lobby+"/next-config", e.Admin, map[string]any{"betSize": 2, "playersCountLimit": 2}).
		wantProblem(t, http.StatusConflict, "wrong_stage")
	if l := e.lobby(lobby, ""); l.NextConfig != nil {
		t.Errorf("a closed lobby took a next config: %+v", l.NextConfig)
	}
}

// TestClosingEndsRegistration: closing a lobby whose game is still in registration refunds the
// bets and stops it, so that no registration stays open forever in a closed lobby.
func TestClosingEndsRegistration(t *testing.T) {
	t.Parallel()
	e := setup(t)
	p, q := e.newPlayer("p", 100), e.newPlayer("q", 100)
	lobby := e.createLobby(map[string]any{"betSize": 10, "playersCountLimit": 3}).Id.String()
	e.register(lobby, p).want(t, http.StatusCreated)
	e.do("POST", "/v1/lobbies/"+lobby+"/close", e.Admin, nil).want(t, http.StatusOK)
	if g := e.lobby(lobby, "").Game; g.Stage != "stopped" {
		t.Fatalf("the closed lobby's registration is %s, want stopped", g.Stage)
	}
	if b := e.balance(p.Token); b != 100 {
		t.Errorf("p's balance is %d after the close, want the bet back (100)", b)
	}
	e.register(lobby, q).wantProblem(t, http.StatusConflict, "wrong_stage")
	if !e.ledger().Ok {
		t.Error("ledger invariants fail")
	}
}

// TestDefaultsDoNotFreezeALobby: two free players who register and never commit would hold a
// lobby forever under Gear's rules; the default maxExtensions stops such a game.
func TestDefaultsDoNotFreezeALobby(t *testing.T) {
	t.Parallel()
	e := setup(t, withClock())
	p, q := e.newPlayer("p", 0), e.newPlayer("q", 0)
	l := e.createLobby(map[string]any{"betSize": 0, "playersCountLimit": 2, "entryTimeoutMs": 100, "moveTimeoutMs": 100, "revealTimeoutMs": 100})
	if l.Config.MaxExtensions <= 0 {
		t.Fatalf("a new lobby's default maxExtensions is %d", l.Config.MaxExtensions)
	}
	lobby := l.Id.String()
	e.register(lobby, p).want(t, http.StatusCreated)
	e.register(lobby, q).want(t, http.StatusCreated)
	ev, _ := e.waitEvent(lobby, 0, 5*time.Second, ofType("game_stopped"))
	if reason := eventData(t, ev)["reason"]; reason != "max_extensions" {
		t.Errorf("the idle game stopped for %v", reason)
	}
}
