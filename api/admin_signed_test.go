package api_test

import (
	"encoding/hex"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/uuid"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apiclient"
	"github.com/commitreveal/rps/internal/apitest"
	"github.com/commitreveal/rps/logpublish"
	"github.com/commitreveal/rps/tournament"
)

// bindAdminKey gives the bootstrap admin a key, bound through POST /v1/me/keys (its first key,
// signed by itself), and returns the admin as a Player that signs with it.
func bindAdminKey(t *testing.T, e *apitest.Env) apitest.Player {
	t.Helper()
	var me api.Account
	e.Do("GET", "/v1/me", e.Admin, nil).Want(t, http.StatusOK).Decode(t, &me)
	admin := apitest.Player{ID: me.Id.String(), Name: me.Name, Token: e.Admin, Key: apiclient.NewPlayerKey()}
	pub := admin.Key.PublicKey()
	e.Do("POST", "/v1/me/keys", e.Admin, map[string]any{"publicKey": pub},
		e.Signed(admin, apitest.Act{Action: tournament.ActionAddKey, Payload: tournament.ActionPayload{PublicKey: pub}})...).Want(t, http.StatusCreated)
	return admin
}

// TestAdminActionsAreSigned: an admin with a key signs every admin action; the signature binds
// the account or lobby acted on and the request's body, and the audit log keeps it, verifying
// over the message rebuilt from the entry. With admin keys required, an admin without a key is
// told to bind one.
func TestAdminActionsAreSigned(t *testing.T) {
	e := apitest.Start(t, apitest.WithLog(logpublish.Config{Origin: testOrigin}))
	alice, bob := e.NewPlayer("alice", 0), e.NewPlayer("bob", 0)
	admin := bindAdminKey(t, e)

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
