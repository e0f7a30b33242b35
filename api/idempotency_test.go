package api_test

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"testing"

	"golang.org/x/crypto/blake2b"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apitest"
	"github.com/commitreveal/rps/tournament"
)

// bets counts a player's bet entries.
func bets(t *testing.T, e *apitest.Env, token string) int {
	t.Helper()
	var page api.LedgerPage
	e.Do("GET", "/v1/me/ledger", token, nil).Want(t, http.StatusOK).Decode(t, &page)
	n := 0
	for _, en := range page.Entries {
		if en.Kind == "bet" {
			n++
		}
	}
	return n
}

func TestIdempotentRetryChargesOnce(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	p := e.NewPlayer("p", 100)
	lobby := e.CreateLobby(map[string]any{"betSize": 30, "playersCountLimit": 4}).Id.String()
	path := "/v1/lobbies/" + lobby + "/players"
	// A retry resends the request as it was, its signature with it.
	signed := e.Signed(p, apitest.Act{Action: tournament.ActionRegister, Lobby: lobby, Game: e.Lobby(lobby, "").Game.Id.String(),
		Payload: tournament.ActionPayload{Bet: 30}, Key: "reg-1"})
	first := e.Do("POST", path, p.Token, nil, signed...).Want(t, http.StatusCreated)
	if first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("a first request is not a replay: %v", first.Header)
	}
	retry := e.Do("POST", path, p.Token, nil, signed...).Want(t, http.StatusCreated)
	if !bytes.Equal(first.Body, retry.Body) {
		t.Fatalf("the retry's body differs:\n%s\n%s", first.Body, retry.Body)
	}
	if retry.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the retry lacks Idempotent-Replayed: true: %v", retry.Header)
	}
	if got := e.Balance(p.Token); got != 70 {
		t.Fatalf("balance %d after a register and its retry, want 70 (charged once)", got)
	}
	if n := bets(t, e, p.Token); n != 1 {
		t.Fatalf("%d bet entries, want 1", n)
	}
	// Without the key, the same request is a new one: refused, already registered.
	e.Register(lobby, p).WantProblem(t, http.StatusConflict, "already_registered")
	// The key is the caller's: another player's identical key is another request.
	q := e.NewPlayer("q", 100)
	act := e.Current(lobby, q, tournament.ActionRegister)
	act.Key = "reg-1"
	e.Do("POST", path, q.Token, nil, e.Signed(q, act)...).Want(t, http.StatusCreated)
	if e.Balance(q.Token) != 70 {
		t.Fatal("q was not charged for its own registration")
	}
	if rep := e.Ledger(); !rep.Ok || rep.Escrows != 60 {
		t.Fatalf("ledger: %+v", rep)
	}
}

// (Unsigned players on a server whose keys are optional: the idempotency layer's rule, which a
// signature does not change; a signed request's replays are TestSignedActionsCannotBeMoved's.)
func TestIdempotencyConflict(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t, apitest.WithOptionalKeys())
	p, q := e.NewUnsignedPlayer("p", 100), e.NewUnsignedPlayer("q", 100)
	lobby := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 2}).Id.String()
	e.Register(lobby, p).Want(t, http.StatusCreated)
	e.Register(lobby, q).Want(t, http.StatusCreated)
	path := "/v1/lobbies/" + lobby + "/commitments"
	one := map[string]any{"commitment": apitest.CommitmentOf("0first-password")}
	two := map[string]any{"commitment": apitest.CommitmentOf("1second-password")}
	before := e.Do("POST", path, p.Token, one, "Idempotency-Key", "commit-1").Want(t, http.StatusOK)
	e.Do("POST", path, p.Token, two, "Idempotency-Key", "commit-1").WantProblem(t, http.StatusConflict, "idempotency_conflict")
	// The first outcome is still what the key replays, and the commitment is the first one.
	again := e.Do("POST", path, p.Token, one, "Idempotency-Key", "commit-1").Want(t, http.StatusOK)
	if !bytes.Equal(before.Body, again.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay after a conflict:\n%s\n%s", before.Body, again.Body)
	}
	if you := e.Lobby(lobby, p.Token).Game.You; you == nil || you.Commitment == nil || *you.Commitment != one["commitment"] {
		t.Fatalf("commitment after the conflict: %s", apitest.JSONOf(you))
	}
	// The same key on another lobby is another request too (the path is part of it).
	other := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 2}).Id.String()
	e.Do("POST", "/v1/lobbies/"+other+"/commitments", p.Token, one, "Idempotency-Key", "commit-1").
		WantProblem(t, http.StatusConflict, "idempotency_conflict")
}

func TestIdempotencyConcurrentDuplicates(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	p := e.NewPlayer("p", 100)
	lobby := e.CreateLobby(map[string]any{"betSize": 25, "playersCountLimit": 4}).Id.String()
	const n = 8
	var wg sync.WaitGroup
	results := make([]apitest.Response, n)
	errs := make([]error, n)
	start := make(chan struct{})
	act := e.Current(lobby, p, tournament.ActionRegister)
	act.Key = "concurrent"
	signed := e.Signed(p, act)
	for i := range n {
		wg.Go(func() {
			<-start
			results[i], errs[i] = e.Request(context.Background(), "POST", "/v1/lobbies/"+lobby+"/players", p.Token, nil, signed...)
		})
	}
	close(start)
	wg.Wait()
	replayed := 0
	for i, r := range results {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		apitest.CheckResponse(t, r, false)
		if r.Status != http.StatusCreated || !bytes.Equal(r.Body, results[0].Body) {
			t.Fatalf("request %d: %d %s; want the same 201 as the first: %s", i, r.Status, r.Body, results[0].Body)
		}
		if r.Header.Get("Idempotent-Replayed") == "true" {
			replayed++
		}
	}
	if replayed != n-1 {
		t.Errorf("%d of %d duplicates replayed, want %d", replayed, n, n-1)
	}
	if got, bets := e.Balance(p.Token), bets(t, e, p.Token); got != 75 || bets != 1 {
		t.Fatalf("balance %d with %d bets after %d concurrent duplicates, want 75 and 1", got, bets, n)
	}
	if rep := e.Ledger(); !rep.Ok || rep.Escrows != 25 {
		t.Fatalf("ledger: %+v", rep)
	}

	// Concurrent credits with one key by the admin: one deposit.
	q := e.NewPlayer("q", 0)
	for i := range n {
		wg.Go(func() {
			results[i], errs[i] = e.Request(context.Background(), "POST", "/v1/admin/accounts/"+q.ID+"/credits", e.Admin, map[string]any{"amount": 5}, "Idempotency-Key", "deposit")
		})
	}
	wg.Wait()
	for i, r := range results {
		if errs[i] != nil || r.Status != http.StatusOK {
			t.Fatalf("credit %d: %v %d %s", i, errs[i], r.Status, r.Body)
		}
	}
	if got := e.Balance(q.Token); got != 5 {
		t.Fatalf("balance %d after %d concurrent credits with one key, want 5", got, n)
	}
}

func TestIdempotentRefusalIsReplayed(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	p, q, r := e.NewPlayer("p", 100), e.NewPlayer("q", 100), e.NewPlayer("r", 100)
	lobby := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 2, "startWhenFull": false}).Id.String()
	e.Register(lobby, p).Want(t, http.StatusCreated)
	e.Register(lobby, q).Want(t, http.StatusCreated)
	path := "/v1/lobbies/" + lobby + "/players"
	act := e.Current(lobby, r, tournament.ActionRegister)
	act.Key = "join"
	signed := e.Signed(r, act)
	full := e.Do("POST", path, r.Token, nil, signed...)
	full.WantProblem(t, http.StatusConflict, "lobby_full")
	// Room opens up, but the key replays its stored refusal.
	e.Leave(lobby, q).Want(t, http.StatusOK)
	again := e.Do("POST", path, r.Token, nil, signed...)
	again.WantProblem(t, http.StatusConflict, "lobby_full")
	if !bytes.Equal(full.Body, again.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the refusal was not replayed as it was:\n%s\n%s (%v)", full.Body, again.Body, again.Header)
	}
	if e.Balance(r.Token) != 100 {
		t.Fatal("a replayed refusal charged the player")
	}
	// A new key is a new request.
	e.Register(lobby, r).Want(t, http.StatusCreated)
}

// TestValidationFailureNotStored: validation failures are not stored under the key, so the
// request can be fixed and retried with the same key - both for the spec validator's failures and
// for the core's (a config outside the server's limits).
func TestValidationFailureNotStored(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	p, q := e.NewPlayer("p", 100), e.NewPlayer("q", 100)
	lobby := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 2}).Id.String()
	e.Register(lobby, p).Want(t, http.StatusCreated)
	e.Register(lobby, q).Want(t, http.StatusCreated)
	path := "/v1/lobbies/" + lobby + "/commitments"
	e.Do("POST", path, p.Token, map[string]any{"commitment": "not-hex"}, "Idempotency-Key", "k").WantProblem(t, http.StatusBadRequest, "validation_failed")
	e.Do("POST", path, p.Token, `{"commitment":`, "Idempotency-Key", "k").WantProblem(t, http.StatusBadRequest, "validation_failed")
	act := e.Current(lobby, p, tournament.ActionCommit)
	act.Key, act.Payload.Commitment = "k", apitest.CommitmentOf("0pass12")
	ok := e.Do("POST", path, p.Token, map[string]any{"commitment": act.Payload.Commitment}, e.Signed(p, act)...).Want(t, http.StatusOK)
	if ok.Header.Get("Idempotent-Replayed") != "" {
		t.Fatal("the fixed request was replayed")
	}
	// An authentication failure is not stored either.
	e.Do("POST", path, "wrong-token", map[string]any{"commitment": apitest.CommitmentOf("0pass12")}, "Idempotency-Key", "k2").WantProblem(t, http.StatusUnauthorized, "unauthorized")
	act = e.Current(lobby, q, tournament.ActionCommit)
	act.Key, act.Payload.Commitment = "k2", apitest.CommitmentOf("2pass12")
	e.Do("POST", path, q.Token, map[string]any{"commitment": act.Payload.Commitment}, e.Signed(q, act)...).Want(t, http.StatusOK)

	t.Run("core validation", func(t *testing.T) {
		// The config is valid for the spec, but below the server's minimum timeout (100 ms here):
		// the core refuses it with 400 validation_failed, which must not be stored either.
		e := e.For(t)
		bad := map[string]any{"name": "x", "config": map[string]any{"betSize": 1, "playersCountLimit": 2, "moveTimeoutMs": 50}}
		e.Do("POST", "/v1/lobbies", e.Admin, bad, "Idempotency-Key", "lobby-k").WantProblem(t, http.StatusBadRequest, "validation_failed")
		good := map[string]any{"name": "x", "config": map[string]any{"betSize": 1, "playersCountLimit": 2, "moveTimeoutMs": 500}}
		r := e.Do("POST", "/v1/lobbies", e.Admin, good, "Idempotency-Key", "lobby-k")
		if r.Status != http.StatusCreated {
			t.Errorf("BUG: a core validation failure (400 config.moveTimeoutMs) was stored under the Idempotency-Key: "+
				"the fixed request with the same key got %d %s; want 201", r.Status, r.Body)
		}
	})
}

// TestStoredResponseReplayed: a key stored by an rpsd from before keys kept results (its row holds
// the HTTP answer itself) is replayed over HTTP byte for byte, with its status, for its 24 hours;
// the request is not run again.
func TestStoredResponseReplayed(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	p := e.NewPlayer("p", 100)
	lobby := e.CreateLobby(map[string]any{"betSize": 30, "playersCountLimit": 4}).Id.String()
	path := "/v1/lobbies/" + lobby + "/players"
	// The request's hash as the API computes it: the path and the canonical body (none: null).
	hash := blake2b.Sum256([]byte(path + "\nnull"))
	stored := []byte(`{"answer":"as an older rpsd rendered it"}`)
	_, err := e.Pool.Exec(t.Context(), `INSERT INTO idempotency_keys (account_id, method, route, key, request_hash, status, response, created_at)
		VALUES ($1, 'POST', '/v1/lobbies/{lobbyId}/players', 'old-key', $2, 201, $3,
			floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint - 3600000)`, p.ID, hash[:], stored)
	if err != nil {
		t.Fatal(err)
	}
	r := e.Do("POST", path, p.Token, nil, "Idempotency-Key", "old-key").Want(t, http.StatusCreated)
	if !bytes.Equal(r.Body, stored) || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay of a stored response: %s (%v), want %s", r.Body, r.Header, stored)
	}
	if e.Balance(p.Token) != 100 {
		t.Fatal("the replayed request was run again")
	}
}
