package api_test

import (
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apiclient"
	"github.com/commitreveal/rps/internal/apitest"
	"github.com/commitreveal/rps/logpublish"
	"github.com/commitreveal/rps/tournament"
)

// TestAdminActionsAreSigned: an admin with a key signs every admin action; the signature binds
// the account or lobby acted on and the request's body, and the audit log keeps it, verifying
// over the message rebuilt from the entry. With admin keys required, an admin without a key is
// told to bind one.
func TestAdminActionsAreSigned(t *testing.T) {
	e := apitest.Start(t, apitest.WithLog(logpublish.Config{Origin: testOrigin}))
	alice, bob := e.NewPlayer("alice", 0), e.NewPlayer("bob", 0)
	admin := e.BindAdminKey()

	credit := map[string]any{"amount": 500, "memo": "deposit"}
	request := []byte(`{"amount":500,"memo":"deposit"}`)
	path := "/v1/admin/accounts/" + alice.ID + "/credits"
	signed := e.Signed(admin, apitest.Act{Action: "credit", Payload: tournament.ActionPayload{Account: alice.ID, Request: request}})

	e.Do("POST", path, e.Admin, credit, "Idempotency-Key", uuid.NewString()).WantProblem(t, http.StatusUnauthorized, api.ProblemCodeSignatureRequired)
	e.Do("POST", "/v1/admin/accounts/"+bob.ID+"/credits", e.Admin, credit, signed...).WantProblem(t, http.StatusUnauthorized, api.ProblemCodeBadSignature)
	e.Do("POST", path, e.Admin, map[string]any{"amount": 5000, "memo": "deposit"}, signed...).WantProblem(t, http.StatusUnauthorized, api.ProblemCodeBadSignature)
	e.Do("POST", path, e.Admin, credit, replace(signed, "Idempotency-Key", uuid.NewString())...).WantProblem(t, http.StatusUnauthorized, api.ProblemCodeBadSignature)
	if b := e.Balance(alice.Token); b != 0 {
		t.Fatalf("refused credits moved money: balance %d", b)
	}
	e.Do("POST", path, e.Admin, credit, signed...).Want(t, http.StatusOK)
	if b := e.Balance(alice.Token); b != 500 {
		t.Fatalf("signed credit: balance %d, want 500", b)
	}

	// A lobby action binds its lobby: closing one lobby with a signature made for another fails.
	l1, l2 := createLobbySigned(t, e, admin), createLobbySigned(t, e, admin)
	closeOne := e.Signed(admin, apitest.Act{Action: "close_lobby", Lobby: l1})
	e.Do("POST", "/v1/lobbies/"+l2+"/close", e.Admin, nil, closeOne...).WantProblem(t, http.StatusUnauthorized, api.ProblemCodeBadSignature)
	e.Do("POST", "/v1/lobbies/"+l1+"/close", e.Admin, nil, closeOne...).Want(t, http.StatusOK)

	// The audit log keeps each signature, which verifies over the message rebuilt from the entry.
	var page api.AuditPage
	e.Do("GET", "/v1/admin/audit", e.Admin, nil).Want(t, http.StatusOK).Decode(t, &page)
	verified := 0
	for _, entry := range page.Entries {
		raw, _ := json.Marshal(entry.Detail)
		var d struct {
			Request json.RawMessage        `json:"request"`
			Auth    *tournament.ActionAuth `json:"auth"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		if d.Auth == nil {
			t.Errorf("audit entry %s (%s) has no signature", entry.Action, entry.Target)
			continue
		}
		m := tournament.ActionMessage{Origin: testOrigin, Action: d.Auth.Action, Player: tournament.AccountID(admin.ID), IdempotencyKey: d.Auth.IdempotencyKey,
			KeyID: d.Auth.KeyID, SignedAt: d.Auth.SignedAt}
		switch entry.Action {
		case "credit":
			m.Payload = tournament.ActionPayload{Account: entry.Target, Request: request}
		case "create_lobby":
			m.Payload.Request = d.Request
		case "close_lobby":
			m.LobbyID, m.Payload.Request = tournament.LobbyID(entry.Target), []byte("null")
		}
		sig, _ := hex.DecodeString(d.Auth.Signature)
		if !m.Verify(publicKey(t, admin), sig) {
			t.Errorf("audit entry %s (%s): the signature does not verify", entry.Action, entry.Target)
		}
		verified++
	}
	if verified != 4 {
		t.Fatalf("%d signed audit entries verified, want 4 (a credit, two lobbies, a close)", verified)
	}
}

// createLobbySigned has admin create a lobby, signed over the body as sent (RFC 8785), and returns
// its id.
func createLobbySigned(t *testing.T, e *apitest.Env, admin apitest.Player) string {
	t.Helper()
	body := []byte(`{"config":{"betSize":10,"playersCountLimit":2},"name":"signed lobby"}`)
	var l api.Lobby
	e.Do("POST", "/v1/lobbies", e.Admin, json.RawMessage(body),
		e.Signed(admin, apitest.Act{Action: "create_lobby", Payload: tournament.ActionPayload{Request: body}})...).
		Want(t, http.StatusCreated).Decode(t, &l)
	return l.Id.String()
}

// TestAdminKeysRequired: with RequireAdminKeys, an admin that never bound a key cannot act.
func TestAdminKeysRequired(t *testing.T) {
	e := apitest.Start(t, apitest.WithLog(logpublish.Config{Origin: testOrigin}), apitest.WithConfig(func(c *api.Config) { c.RequireAdminKeys = true }))
	p := e.NewPlayer("carol", 0)
	e.Do("POST", "/v1/admin/accounts/"+p.ID+"/credits", e.Admin, map[string]any{"amount": 5}, "Idempotency-Key", uuid.NewString()).
		WantProblem(t, http.StatusForbidden, api.ProblemCodeKeyRequired)
}

// TestAdminActsRecordTheirSignatureInTheLog: the events an admin's signed action writes (a lobby
// created, its next config, a stop, the close; a player's keys recovered) record the signature
// with the admin and the request as signed, inside what the event's hash covers, and it verifies
// over the message rebuilt from the event alone (tournament.AdminAuth.Message), as rpsverify
// rebuilds it. The stop the rules make when the lobby closes records none.
func TestAdminActsRecordTheirSignatureInTheLog(t *testing.T) {
	e := apitest.Start(t, apitest.WithLog(logpublish.Config{Origin: testOrigin}))
	player := e.NewPlayer("dora", 0)
	admin := e.BindAdminKey()

	lobby := createLobbySigned(t, e, admin)
	next := []byte(`{"betSize":20,"playersCountLimit":3}`)
	e.Do("PUT", "/v1/lobbies/"+lobby+"/next-config", e.Admin, json.RawMessage(next),
		e.AdminSigned(admin, tournament.ActionSetNextConfig, lobby, "", next)...).Want(t, http.StatusOK)
	stop := []byte(`{"reason":"maintenance"}`)
	// A signed stop names the game it stops: one that names none, or another, is refused.
	unbound := e.Signed(admin, apitest.Act{Action: tournament.ActionStop, Lobby: lobby, Payload: tournament.ActionPayload{Request: stop}})
	e.Do("POST", "/v1/lobbies/"+lobby+"/stop", e.Admin, json.RawMessage(stop), unbound...).
		WantProblem(t, http.StatusUnauthorized, api.ProblemCodeBadSignature)
	stale := e.Signed(admin, apitest.Act{Action: tournament.ActionStop, Lobby: lobby, Game: uuid.NewString(), Payload: tournament.ActionPayload{Request: stop}})
	e.Do("POST", "/v1/lobbies/"+lobby+"/stop", e.Admin, json.RawMessage(stop), stale...).
		WantProblem(t, http.StatusConflict, api.ProblemCodeStaleSignature)
	e.Do("POST", "/v1/lobbies/"+lobby+"/stop", e.Admin, json.RawMessage(stop),
		e.AdminSigned(admin, tournament.ActionStop, lobby, "", stop)...).Want(t, http.StatusOK)
	// A close takes no body: a signed one with a body is refused, whatever the body.
	for _, body := range []string{`[1,2]`, `"x"`, `{}`} {
		e.Do("POST", "/v1/lobbies/"+lobby+"/close", e.Admin, json.RawMessage(body),
			e.AdminSigned(admin, tournament.ActionCloseLobby, lobby, "", []byte(body))...).WantProblem(t, http.StatusBadRequest, api.ProblemCodeValidationFailed)
	}
	e.Do("POST", "/v1/lobbies/"+lobby+"/close", e.Admin, nil,
		e.AdminSigned(admin, tournament.ActionCloseLobby, lobby, "", nil)...).Want(t, http.StatusOK)
	recovery := []byte(`{"publicKey":"` + apiclient.NewPlayerKey().PublicKey() + `","reason":"lost phone"}`)
	e.Do("POST", "/v1/admin/accounts/"+player.ID+"/keys", e.Admin, json.RawMessage(recovery),
		e.AdminSigned(admin, tournament.ActionRecoverKeys, "", player.ID, recovery)...).Want(t, http.StatusCreated)

	verify := func(what string, data []byte, lobby tournament.LobbyID, account tournament.AccountID) tournament.ActionName {
		t.Helper()
		var d struct {
			Auth *tournament.AdminAuth `json:"auth"`
		}
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatal(err)
		}
		if d.Auth == nil {
			return ""
		}
		sig, _ := hex.DecodeString(d.Auth.Signature)
		if d.Auth.Admin != tournament.AccountID(admin.ID) || !d.Auth.Message(testOrigin, lobby, account).Verify(publicKey(t, admin), sig) {
			t.Errorf("%s: the recorded signature does not verify: %s", what, data)
		}
		if id, err := d.Auth.CreatedLobby(); d.Auth.Action == tournament.ActionCreateLobby && (err != nil || id != lobby) {
			t.Errorf("the signed creation made lobby %s, not the one its signature derives, %s (%v)", lobby, id, err)
		}
		return d.Auth.Action
	}
	events, err := e.Store.Events(t.Context(), tournament.LobbyID(lobby), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var signed []string
	for _, ev := range events {
		if a := verify(string(ev.Type), ev.Data, tournament.LobbyID(lobby), ""); a != "" {
			signed = append(signed, string(ev.Type)+":"+string(a))
		}
	}
	want := []string{"lobby_created:create_lobby", "next_config_changed:set_next_config", "game_stopped:stop", "lobby_closed:close_lobby"}
	if !slices.Equal(signed, want) {
		t.Errorf("signed admin events %v, want %v (the close's own stop unsigned)", signed, want)
	}
	var keys api.AccountKeys
	e.Do("GET", "/v1/accounts/"+player.ID+"/keys", "", nil).Want(t, http.StatusOK).Decode(t, &keys)
	last := keys.Events[len(keys.Events)-1]
	data, _ := json.Marshal(last.Data)
	if a := verify("keys_recovered", data, "", tournament.AccountID(player.ID)); last.Type != "keys_recovered" || a != tournament.ActionRecoverKeys {
		t.Errorf("the recovery's key event %s records %q, want recover_keys: %s", last.Type, a, data)
	}
}
