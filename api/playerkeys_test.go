package api_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apiclient"
	"github.com/commitreveal/rps/internal/apitest"
	"github.com/commitreveal/rps/tournament"
)

// keyClient signs key changes for tests, as a player's device does: over the message of
// SignedAction, with the log's origin.
type keyClient struct {
	t *testing.T
	e *apitest.Env
}

// signed returns the headers of a request signed by k over m (origin and key filled in), with
// m's idempotency key as its Idempotency-Key.
func (c keyClient) signed(k apiclient.PlayerKey, m tournament.ActionMessage, at time.Time) []string {
	c.t.Helper()
	m.Origin = testOrigin
	sig, err := k.Sign(m, at)
	if err != nil {
		c.t.Fatal(err)
	}
	h := sig.Pairs()
	if m.IdempotencyKey != "" {
		h = append(h, "Idempotency-Key", m.IdempotencyKey)
	}
	return h
}

// signUp creates an account born with k.
func (c keyClient) signUp(name string, k apiclient.PlayerKey) apitest.Response {
	c.t.Helper()
	m := tournament.ActionMessage{Action: tournament.ActionSignUp, Payload: tournament.ActionPayload{Name: name, PublicKey: k.PublicKey()}}
	return c.e.Do("POST", "/v1/accounts", "", map[string]any{"name": name, "publicKey": k.PublicKey()}, c.signed(k, m, time.Now())...)
}

// addKey binds k to the account of token, signed by signer.
func (c keyClient) addKey(token string, account string, k, signer apiclient.PlayerKey, idem string) apitest.Response {
	c.t.Helper()
	m := tournament.ActionMessage{Action: tournament.ActionAddKey, Player: tournament.AccountID(account), IdempotencyKey: idem,
		Payload: tournament.ActionPayload{PublicKey: k.PublicKey()}}
	return c.e.Do("POST", "/v1/me/keys", token, map[string]any{"publicKey": k.PublicKey()}, c.signed(signer, m, time.Now())...)
}

// retireKey retires keyID of the account of token, signed by signer.
func (c keyClient) retireKey(token, account, keyID string, signer apiclient.PlayerKey, idem string) apitest.Response {
	c.t.Helper()
	m := tournament.ActionMessage{Action: tournament.ActionRetireKey, Player: tournament.AccountID(account), IdempotencyKey: idem,
		Payload: tournament.ActionPayload{KeyID: keyID}}
	return c.e.Do("DELETE", "/v1/me/keys/"+keyID, token, nil, c.signed(signer, m, time.Now())...)
}

// keys reads an account's keys and key log, and checks the log's chain as README says a
// client does: every hash recomputes and links to the one before.
func (c keyClient) keys(account string) api.AccountKeys {
	c.t.Helper()
	var out api.AccountKeys
	c.e.Do("GET", "/v1/accounts/"+account+"/keys", "", nil).Want(c.t, http.StatusOK).Decode(c.t, &out)
	var prev [32]byte
	for i, ev := range out.Events {
		e := tournament.KeyEvent{Seq: ev.Seq, Type: tournament.KeyEventType(ev.Type), AccountID: tournament.AccountID(account),
			At: parseLogTime(c.t, ev.At), Data: ev.Data, PrevHash: prev}
		if tournament.FormatTime(e.At) != ev.At {
			c.t.Fatalf("key event %d of %s: at %q is not in the log's format, as hashed", i+1, account, ev.At)
		}
		h, err := tournament.KeyEventHash(e)
		if err != nil || fmt.Sprintf("%x", h) != ev.Hash || ev.PrevHash != fmt.Sprintf("%x", prev) || ev.Seq != int64(i+1) {
			c.t.Fatalf("key event %d of %s does not chain: %+v (%v)", i+1, account, ev, err)
		}
		prev = h
	}
	return out
}

// TestPlayerKeysOverHTTP: an account born with a key adds a second one signed by the first,
// retires the first (not its last key), and an admin's recovery replaces every key, marked as the
// operator's; every refused change (a stranger's key, a copied signature, an unknown key, a
// key bound elsewhere, bad input) is a clear 4xx and leaves the key log as it was; every key
// event is a leaf of the log, proven in its checkpoint.
func TestPlayerKeysOverHTTP(t *testing.T) {
	e, policy := logEnv(t)
	c := keyClient{t: t, e: e}
	k1, k2, k3, bobKey, recovered := apiclient.NewPlayerKey(), apiclient.NewPlayerKey(), apiclient.NewPlayerKey(), apiclient.NewPlayerKey(), apiclient.NewPlayerKey()

	var alice, bob api.AccountCreated
	c.signUp("alice", k1).Want(t, http.StatusCreated).Decode(t, &alice)
	c.signUp("bob", bobKey).Want(t, http.StatusCreated).Decode(t, &bob)
	a := alice.Account.Id.String()

	// A sign-up signed by another key than the one it binds, unsigned, or with a bound key makes
	// no account.
	m := tournament.ActionMessage{Action: tournament.ActionSignUp, Payload: tournament.ActionPayload{Name: "mallory", PublicKey: k3.PublicKey()}}
	e.Do("POST", "/v1/accounts", "", map[string]any{"name": "mallory", "publicKey": k3.PublicKey()}, c.signed(k1, m, time.Now())...).
		WantProblem(t, http.StatusUnauthorized, api.ProblemCodeBadSignature)
	e.Do("POST", "/v1/accounts", "", map[string]any{"name": "mallory", "publicKey": k3.PublicKey()}).
		WantProblem(t, http.StatusUnauthorized, api.ProblemCodeSignatureRequired)
	c.signUp("carol", bobKey).WantProblem(t, http.StatusConflict, "key_taken")
	var n int
	if err := e.Pool.QueryRow(t.Context(), `SELECT count(*) FROM accounts WHERE name IN ('mallory', 'carol')`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("refused sign-ups made %d accounts (%v)", n, err)
	}

	c.addKey(alice.Token, a, k2, k1, "add-k2").Want(t, http.StatusCreated)
	// Each refusal changes nothing.
	c.addKey(alice.Token, a, k3, bobKey, "add-k3").WantProblem(t, http.StatusUnauthorized, api.ProblemCodeBadSignature)
	c.addKey(alice.Token, a, bobKey, k1, "add-bob").WantProblem(t, http.StatusConflict, "key_taken")
	c.addKey(alice.Token, a, k2, k1, "add-k2-again").WantProblem(t, http.StatusConflict, "key_taken")
	c.addKey(alice.Token, a, k3, apiclient.NewPlayerKey(), "add-k3").WantProblem(t, http.StatusUnauthorized, api.ProblemCodeBadSignature)
	old := tournament.ActionMessage{Action: tournament.ActionAddKey, Player: tournament.AccountID(a), IdempotencyKey: "old",
		Payload: tournament.ActionPayload{PublicKey: k3.PublicKey()}}
	e.Do("POST", "/v1/me/keys", alice.Token, map[string]any{"publicKey": k3.PublicKey()}, c.signed(k1, old, time.Now().Add(-24*time.Hour))...).
		WantProblem(t, http.StatusUnauthorized, api.ProblemCodeSignatureExpired)

	// A signature is bound to its idempotency key and payload: copied onto another request, it
	// does not verify.
	h := c.signed(k1, tournament.ActionMessage{Action: tournament.ActionAddKey, Player: tournament.AccountID(a), IdempotencyKey: "add-k3-once",
		Payload: tournament.ActionPayload{PublicKey: k3.PublicKey()}}, time.Now())
	unkeyed := h[:len(h)-2]
	e.Do("POST", "/v1/me/keys", alice.Token, map[string]any{"publicKey": k3.PublicKey()}, append(unkeyed, "Idempotency-Key", "another-key")...).
		WantProblem(t, http.StatusUnauthorized, api.ProblemCodeBadSignature)
	e.Do("POST", "/v1/me/keys", alice.Token, map[string]any{"publicKey": recovered.PublicKey()}, h...).
		WantProblem(t, http.StatusUnauthorized, api.ProblemCodeBadSignature)
	if p := e.Do("POST", "/v1/me/keys", alice.Token, map[string]any{"publicKey": k3.PublicKey()}, unkeyed...).
		WantProblem(t, http.StatusUnauthorized, api.ProblemCodeBadSignature); p.Detail == nil || !strings.Contains(*p.Detail, "Idempotency-Key") {
		t.Fatalf("a key change without an Idempotency-Key: %v does not say it lacks one", p.Detail)
	}
	for _, bad := range []string{"zz", k3.PublicKey()[:62], k3.PublicKey() + "00", "D" + k3.PublicKey()[1:]} {
		e.Do("POST", "/v1/me/keys", alice.Token, map[string]any{"publicKey": bad}, h...).WantProblem(t, http.StatusBadRequest, api.ProblemCodeValidationFailed)
	}
	if kl := c.keys(a); len(kl.Events) != 2 || kl.Head == nil || kl.Head.Seq != 2 || len(kl.Keys) != 2 {
		t.Fatalf("after the refusals, the key log: %+v", kl)
	}

	c.retireKey(alice.Token, a, k1.ID(), k2, "retire-k1").Want(t, http.StatusOK)
	c.retireKey(alice.Token, a, k2.ID(), k2, "retire-k2").WantProblem(t, http.StatusConflict, "last_key")
	c.retireKey(alice.Token, a, k2.ID(), k1, "retire-k2-by-k1").WantProblem(t, http.StatusUnauthorized, api.ProblemCodeBadSignature)

	// The operator's recovery: every key retired, the new one added, marked as the operator's.
	e.Do("POST", "/v1/admin/accounts/"+a+"/keys", alice.Token, map[string]any{"publicKey": k3.PublicKey(), "reason": "me"}, "Idempotency-Key", "rec-0").
		Want(t, http.StatusForbidden)
	e.Do("POST", "/v1/admin/accounts/"+a+"/keys", e.Admin, map[string]any{"publicKey": recovered.PublicKey(), "reason": "lost phone"}, "Idempotency-Key", "rec-1").
		Want(t, http.StatusCreated)
	kl := c.keys(a)
	if last := kl.Events[len(kl.Events)-1]; last.Type != "keys_recovered" || len(kl.Keys) != 3 || len(kl.Events) != 4 {
		t.Fatalf("after the recovery: %+v", kl)
	}
	for _, k := range kl.Keys {
		if active := k.RetiredAt == nil; active != (k.KeyId == recovered.ID()) || k.Recovery != (k.KeyId == recovered.ID()) {
			t.Fatalf("after the recovery, key %+v", k)
		}
	}

	// Every key event is a leaf "key <account> <seq> <hash>" of the log, proven in its checkpoint.
	deadline := time.Now().Add(10 * time.Second)
	for _, ev := range kl.Events {
		var p api.LogProof
		for {
			r := e.Do("GET", fmt.Sprintf("/v1/log/inclusion?accountId=%s&seq=%d", a, ev.Seq), "", nil)
			if r.Status == http.StatusOK {
				r.Decode(t, &p)
				break
			}
			if r.Status != http.StatusConflict || time.Now().After(deadline) {
				t.Fatalf("inclusion of key event %d: %d %s", ev.Seq, r.Status, r.Body)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if p.AccountId == nil || p.AccountId.String() != a || p.LobbyId != nil || p.Hash != ev.Hash {
			t.Fatalf("key event %d's proof: %+v", ev.Seq, p)
		}
		cp, _, err := torchwood.VerifyCheckpoint([]byte(p.Checkpoint), policy)
		if err != nil {
			t.Fatal(err)
		}
		proof := make(tlog.RecordProof, len(p.Proof))
		for i, s := range p.Proof {
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				t.Fatal(err)
			}
			copy(proof[i][:], b)
		}
		leaf := []byte(fmt.Sprintf("key %s %d %s\n", a, ev.Seq, ev.Hash))
		if err := tlog.CheckRecord(proof, cp.N, cp.Hash, p.LeafIndex, tlog.RecordHash(leaf)); err != nil {
			t.Fatalf("key event %d at leaf %d: %v", ev.Seq, p.LeafIndex, err)
		}
	}
	e.Do("GET", "/v1/log/inclusion?seq=1", "", nil).WantProblem(t, http.StatusBadRequest, api.ProblemCodeValidationFailed)
}

// TestFirstKeyIsSelfSigned: an account made without a key binds its first one with its bearer
// token, signed by that key itself, not by any other.
func TestFirstKeyIsSelfSigned(t *testing.T) {
	e, _ := logEnv(t)
	c := keyClient{t: t, e: e}
	// Made here, not by e.NewPlayer, which may give its players keys.
	var made api.AccountCreated
	e.Do("POST", "/v1/accounts", "", map[string]any{"name": "keyless"}).Want(t, http.StatusCreated).Decode(t, &made)
	p := apitest.Player{ID: made.Account.Id.String(), Name: made.Account.Name, Token: made.Token}
	k, other := apiclient.NewPlayerKey(), apiclient.NewPlayerKey()
	var o api.AccountCreated
	c.signUp("other", other).Want(t, http.StatusCreated).Decode(t, &o)
	c.addKey(p.Token, p.ID, k, other, "first-by-other").WantProblem(t, http.StatusUnauthorized, api.ProblemCodeBadSignature)
	c.addKey(p.Token, p.ID, k, k, "first").Want(t, http.StatusCreated)
	if kl := c.keys(p.ID); len(kl.Keys) != 1 || kl.Keys[0].KeyId != k.ID() {
		t.Fatalf("keys: %+v", kl)
	}
	second := apiclient.NewPlayerKey()
	c.addKey(p.Token, p.ID, second, second, "second-self").WantProblem(t, http.StatusUnauthorized, api.ProblemCodeBadSignature)
}

// parseLogTime reads an instant in the log's time format.
func parseLogTime(t *testing.T, s string) int64 {
	t.Helper()
	at, err := time.Parse("2006-01-02T15:04:05.000Z07:00", s)
	if err != nil {
		t.Fatal(err)
	}
	return at.UnixMilli()
}
