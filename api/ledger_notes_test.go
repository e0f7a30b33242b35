package api_test

import (
	"encoding/hex"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apiclient"
	"github.com/commitreveal/rps/internal/apitest"
	"github.com/commitreveal/rps/logpublish"
	"github.com/commitreveal/rps/tournament"
)

// TestTheLedgerShowsTheAdminsMemoAndSignature: a player's ledger shows, on a credit or debit,
// the admin's memo and, when the admin signed, the admin's signature, which the player checks
// over the message it rebuilds from the entry alone (and the admin's public key); a game's
// entries show neither.
func TestTheLedgerShowsTheAdminsMemoAndSignature(t *testing.T) {
	e := apitest.Start(t, apitest.WithLog(logpublish.Config{Origin: testOrigin}))
	alice, bob := e.NewPlayer("alice", 0), e.NewPlayer("bob", 10)
	l := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 3})
	e.Register(l.Id.String(), bob).Want(t, http.StatusCreated)

	credits := "/v1/admin/accounts/" + alice.ID + "/credits"
	e.Do("POST", credits, e.Admin, map[string]any{"amount": 100, "memo": "  welcome bonus "}, "Idempotency-Key", apiclient.NewKey()).Want(t, http.StatusOK)
	admin := e.BindAdminKey()
	credit := []byte(`{"memo":"prize, table 4","amount":500}`)
	e.Do("POST", credits, e.Admin, json.RawMessage(credit), e.AdminSigned(admin, "credit", "", alice.ID, credit)...).Want(t, http.StatusOK)
	debit := []byte(`{"amount":200}`)
	e.Do("POST", "/v1/admin/accounts/"+alice.ID+"/debits", e.Admin, json.RawMessage(debit),
		e.AdminSigned(admin, "debit", "", alice.ID, debit)...).Want(t, http.StatusOK)

	var page api.LedgerPage
	e.Do("GET", "/v1/me/ledger", alice.Token, nil).Want(t, http.StatusOK).Decode(t, &page)
	if len(page.Entries) != 3 {
		t.Fatalf("alice's ledger: %+v", page.Entries)
	}
	unsigned, signed, debited := page.Entries[0], page.Entries[1], page.Entries[2]
	if unsigned.Memo == nil || *unsigned.Memo != "welcome bonus" || unsigned.Auth != nil {
		t.Errorf("the unsigned credit: memo %v, auth %+v; want its memo trimmed and no signature", unsigned.Memo, unsigned.Auth)
	}
	if signed.Memo == nil || *signed.Memo != "prize, table 4" || debited.Memo != nil {
		t.Errorf("memos %v and %v; want the signed credit's and none", signed.Memo, debited.Memo)
	}
	for _, c := range []struct {
		entry  api.LedgerEntry
		action tournament.ActionName
		amount int64
	}{{signed, "credit", 500}, {debited, "debit", -200}} {
		a := c.entry.Auth
		if a == nil {
			t.Fatalf("the %s of %d has no signature", c.action, c.amount)
		}
		if c.entry.Amount != c.amount || tournament.ActionName(a.Action) != c.action || a.Admin.String() != admin.ID {
			t.Errorf("%s entry %+v with signature %+v", c.action, c.entry, a)
		}
		// The player rebuilds the message from the entry and its own account, as AdminAuth says.
		body, _ := json.Marshal(a.Request)
		request, err := jcs.Transform(body)
		if err != nil {
			t.Fatal(err)
		}
		m := tournament.AdminMessage(testOrigin, c.action, tournament.AccountID(a.Admin.String()), "", tournament.AccountID(alice.ID), request)
		m.IdempotencyKey, m.KeyID, m.SignedAt = a.IdempotencyKey, a.KeyId, a.SignedAt
		sig, _ := hex.DecodeString(a.Signature)
		if !m.Verify(publicKey(t, admin), sig) {
			t.Errorf("the %s's signature does not verify over %s", c.action, request)
		}
		var asked struct{ Amount int64 }
		if err := json.Unmarshal(request, &asked); err != nil || asked.Amount != abs(c.amount) {
			t.Errorf("the %s's signed request %s does not ask for its entry's amount %d", c.action, request, c.amount)
		}
	}

	// A game's entries record nothing of an admin.
	var bobs api.LedgerPage
	e.Do("GET", "/v1/me/ledger", bob.Token, nil).Want(t, http.StatusOK).Decode(t, &bobs)
	for _, entry := range bobs.Entries {
		if entry.Kind == api.LedgerEntryKindBet && (entry.Memo != nil || entry.Auth != nil) {
			t.Errorf("bob's bet %+v records an admin's memo or signature", entry)
		}
	}
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}
