package api_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apiclient"
)

// TestReviewKeysPerAccountAreBounded: every key an account ever had is listed, unpaged, by the
// anonymous GET /v1/accounts/{id}/keys (and read by every key change and every verifier). A key
// costs a player one signed request, so without a bound one account grows that answer without
// end (tens of thousands of keys an hour at the default rate): the server refuses a key past
// the bound, retired keys included, and the refusal changes nothing.
func TestReviewKeysPerAccountAreBounded(t *testing.T) {
	e, _ := logEnv(t)
	c := keyClient{t: t, e: e}
	signer := apiclient.NewPlayerKey()
	var alice api.AccountCreated
	c.signUp("alice", signer).Want(t, http.StatusCreated).Decode(t, &alice)
	a := alice.Account.Id.String()
	const tries = 80
	refused := 0
	for i := range tries {
		k := apiclient.NewPlayerKey()
		r := c.addKey(alice.Token, a, k, signer, fmt.Sprintf("add-%d", i))
		if r.Status == http.StatusConflict {
			r.WantProblem(t, http.StatusConflict, "key_limit")
			refused = i + 2 // the sign-up's key and the i keys before
			break
		}
		r.Want(t, http.StatusCreated)
		// A key added and retired at once still counts: it is listed for ever.
		c.retireKey(alice.Token, a, k.ID(), signer, fmt.Sprintf("retire-%d", i)).Want(t, http.StatusOK)
	}
	if refused == 0 {
		t.Fatalf("%d keys bound to one account, none refused", tries+1)
	}
	if got := len(c.keys(a).Keys); got != refused-1 {
		t.Fatalf("%d keys listed after the refusal, want %d", got, refused-1)
	}
	t.Logf("refused the key after %d", refused-1)
}
