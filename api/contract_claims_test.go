package api_test

// Claims of openapi.yaml's prose held to what the server does, through the HTTP API.

import (
	"net/http"
	"strings"
	"testing"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apiclient"
	"github.com/commitreveal/rps/internal/apitest"
)

// TestAuditActionsAreTheContracts: every action the audit log records is one that
// AuditEntry.action lists, the token an admin issues and a key recovery included (both
// operations say they are recorded there).
func TestAuditActionsAreTheContracts(t *testing.T) {
	e := apitest.Start(t)
	alice := e.NewPlayer("alice", 100)
	e.Do("POST", "/v1/admin/accounts/"+alice.ID+"/token", e.Admin, nil, "Idempotency-Key", apiclient.NewKey()).Want(t, http.StatusOK)
	e.Do("POST", "/v1/admin/accounts/"+alice.ID+"/keys", e.Admin,
		map[string]any{"publicKey": apiclient.NewPlayerKey().PublicKey(), "reason": "lost phone"},
		"Idempotency-Key", apiclient.NewKey()).Want(t, http.StatusCreated)

	var page api.AuditPage
	e.Do("GET", "/v1/admin/audit", e.Admin, nil).Want(t, http.StatusOK).Decode(t, &page)
	listed := contract(t).Components.Schemas["AuditEntry"].Value.Properties["action"].Value.Description
	seen := map[string]bool{}
	for _, entry := range page.Entries {
		seen[entry.Action] = true
		if !strings.Contains(listed, "`"+entry.Action+"`") {
			t.Errorf("the audit log records the action %q, which AuditEntry.action does not list", entry.Action)
		}
	}
	if !seen["issue_token"] || !seen["recover_keys"] {
		t.Errorf("the audit log's actions %v lack issue_token or recover_keys", seen)
	}
}
