package api_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apitest"
)

// TestRotatedTokenHasGrace: a rotation whose answer is lost must not lock the account out: the
// old token keeps working until the new one is first used (or a grace period ends).
func TestRotatedTokenHasGrace(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	p := e.NewPlayer("p", 0)
	var rotated api.TokenResponse
	e.Do("POST", "/v1/me/token", p.Token, nil).Want(t, http.StatusOK).Decode(t, &rotated)
	e.Do("GET", "/v1/me", p.Token, nil).Want(t, http.StatusOK)
	e.Do("GET", "/v1/me", rotated.Token, nil).Want(t, http.StatusOK)
	// The new token has been used: the old one is retired.
	e.Do("GET", "/v1/me", p.Token, nil).WantProblem(t, http.StatusUnauthorized, "unauthorized")
	e.Do("GET", "/v1/me", rotated.Token, nil).Want(t, http.StatusOK)
}

// TestAdminIssuesToken: an admin can give a player who lost their token a new one; the old one
// stops working at once, and the act is in the audit log.
func TestAdminIssuesToken(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	p, q := e.NewPlayer("p", 0), e.NewPlayer("q", 0)
	var admin api.Account
	e.Do("GET", "/v1/me", e.Admin, nil).Want(t, http.StatusOK).Decode(t, &admin)
	path := "/v1/admin/accounts/" + p.ID + "/token"
	e.Do("POST", path, q.Token, nil).WantProblem(t, http.StatusForbidden, "forbidden")
	e.Do("POST", "/v1/admin/accounts/"+apitest.RandomID()+"/token", e.Admin, nil).WantProblem(t, http.StatusNotFound, "not_found")
	e.Do("POST", "/v1/admin/accounts/"+admin.Id.String()+"/token", e.Admin, nil).WantProblem(t, http.StatusForbidden, "forbidden")

	var issued api.TokenResponse
	e.Do("POST", path, e.Admin, nil).Want(t, http.StatusOK).Decode(t, &issued)
	e.Do("GET", "/v1/me", p.Token, nil).WantProblem(t, http.StatusUnauthorized, "unauthorized")
	var me api.Account
	e.Do("GET", "/v1/me", issued.Token, nil).Want(t, http.StatusOK).Decode(t, &me)
	if me.Id.String() != p.ID {
		t.Fatalf("the issued token is %s's, want %s's", me.Id, p.ID)
	}
	var actor, action, target string
	err := e.Pool.QueryRow(t.Context(), `SELECT actor::text, action, target::text FROM admin_audit`).Scan(&actor, &action, &target)
	if err != nil {
		t.Fatalf("audit: %v", err)
	}
	if actor != admin.Id.String() || action != "issue_token" || target != p.ID {
		t.Errorf("audit row: %s %s %s", actor, action, target)
	}
}

// TestIssueTokenKeyReused: an Idempotency-Key used to issue one player a token, sent again for
// another player, is a 409 idempotency_conflict (found by schemathesis as a 500).
func TestIssueTokenKeyReused(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	p, q := e.NewPlayer("p", 0), e.NewPlayer("q", 0)
	e.Do("POST", "/v1/admin/accounts/"+p.ID+"/token", e.Admin, nil, "Idempotency-Key", "once").Want(t, http.StatusOK)
	e.Do("POST", "/v1/admin/accounts/"+q.ID+"/token", e.Admin, nil, "Idempotency-Key", "once").
		WantProblem(t, http.StatusConflict, "idempotency_conflict")
	e.Do("GET", "/v1/me", q.Token, nil).Want(t, http.StatusOK)
}

// TestGraceEndsForCachedTokens: the token a rotation replaced works for 10 minutes at most, also
// once a replica has cached it: its grace ends without a change to the account that would evict
// it, so the cache must keep it no longer than the grace (it kept it its whole 5 minutes). Here
// the grace is cut to a moment from now, without notifying replicas (no change of the account
// does when a grace ends), before the old token is used and cached.
func TestGraceEndsForCachedTokens(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	p := e.NewPlayer("p", 0)
	e.Do("POST", "/v1/me/token", p.Token, nil).Want(t, http.StatusOK)
	// Long enough that the first read below is within it on a loaded machine.
	const graceMs = 3000
	if _, err := e.Pool.Exec(t.Context(), `ALTER TABLE accounts DISABLE TRIGGER accounts_changed;
		UPDATE accounts SET previous_token_expires_at = floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint + `+
		strconv.Itoa(graceMs)+` WHERE id = '`+p.ID+`';
		ALTER TABLE accounts ENABLE TRIGGER accounts_changed`); err != nil {
		t.Fatal(err)
	}
	ends := time.Now().Add(graceMs*time.Millisecond + 10*time.Millisecond) // the grace ends before this
	e.Do("GET", "/v1/me", p.Token, nil).Want(t, http.StatusOK)             // within the grace, and now cached
	time.Sleep(time.Until(ends))
	e.Do("GET", "/v1/me", p.Token, nil).WantProblem(t, http.StatusUnauthorized, "unauthorized")
}
