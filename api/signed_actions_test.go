package api_test

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apitest"
	"github.com/commitreveal/rps/logpublish"
	"github.com/commitreveal/rps/tournament"
)

// signer is a test player with a key bound straight in the database (the key endpoints have
// their own tests: this one is about the actions).
type signer struct {
	apitest.Player
	key ed25519.PrivateKey
	id  string
}

func bindTestKey(t *testing.T, e *apitest.Env, p apitest.Player) signer {
	t.Helper()
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	pub := key.Public().(ed25519.PublicKey)
	id := tournament.KeyID(pub)
	if _, err := e.Pool.Exec(t.Context(), `WITH k AS (
			INSERT INTO account_keys (key_id, account_id, public_key, added_seq, added_at) VALUES ($1, $2, $3, 1, 0))
		UPDATE accounts SET active_keys = active_keys + 1, key_seq = key_seq + 1 WHERE id = $2`, id, p.ID, []byte(pub)); err != nil {
		t.Fatal(err)
	}
	return signer{Player: p, key: key, id: id}
}

// signedAction is a request's action as the test signs it.
type signedAction struct {
	action  tournament.ActionName
	lobby   string
	game    string
	round   int
	payload tournament.ActionPayload
	idemKey string
}

// headers signs a with s's key now and returns the request's headers.
func (s signer) headers(t *testing.T, a signedAction) []string {
	t.Helper()
	return s.headersAt(t, a, time.Now())
}

// replace returns headers with the value of name replaced.
func replace(headers []string, name, value string) []string {
	out := append([]string(nil), headers...)
	for i := 0; i+1 < len(out); i += 2 {
		if out[i] == name {
			out[i+1] = value
		}
	}
	return out
}

// TestSignedActionsCannotBeMoved: a player's signature works for the one request it signs. Copied
// onto another lobby, game, round, payload or idempotency key, it is refused, and nothing
// changes; an account with a key cannot act unsigned, nor with a retired key. The events record
// each signature (a registration's in clear, a commit's and a reveal's hashed) and the round's
// transcript shows the sealed ones once public, each verifying over the message rebuilt from the
// log.
func TestSignedActionsCannotBeMoved(t *testing.T) {
	e := apitest.Start(t, apitest.WithLog(logpublish.Config{Origin: testOrigin}))
	alice := bindTestKey(t, e, e.NewPlayer("alice", 100))
	bob := bindTestKey(t, e, e.NewPlayer("bob", 100))
	cfg := map[string]any{"betSize": 10, "playersCountLimit": 2, "entryTimeoutMs": 60000, "moveTimeoutMs": 60000, "revealTimeoutMs": 60000}
	l1, l2 := e.CreateLobby(cfg), e.CreateLobby(cfg)
	lobby, game := l1.Id.String(), l1.Game.Id.String()
	lobby2, game2 := l2.Id.String(), l2.Game.Id.String()

	register := signedAction{action: tournament.ActionRegister, lobby: lobby, game: game, payload: tournament.ActionPayload{Bet: 10}, idemKey: uuid.NewString()}
	signed := alice.headers(t, register)
	path := "/v1/lobbies/" + lobby + "/players"
	before := len(e.AllEvents(lobby))

	refusals := []struct {
		name, path string
		headers    []string
		status     int
		code       api.ProblemCode
	}{
		{"unsigned from an account with a key", path, []string{"Idempotency-Key", uuid.NewString()}, http.StatusUnauthorized, api.ProblemCodeSignatureRequired},
		{"another lobby", "/v1/lobbies/" + lobby2 + "/players", replace(signed, "Rps-Game-Id", game2), http.StatusUnauthorized, api.ProblemCodeBadSignature},
		{"another lobby, same game header", "/v1/lobbies/" + lobby2 + "/players", signed, http.StatusUnauthorized, api.ProblemCodeBadSignature},
		{"another game", path, replace(signed, "Rps-Game-Id", game2), http.StatusUnauthorized, api.ProblemCodeBadSignature},
		{"another idempotency key", path, replace(signed, "Idempotency-Key", uuid.NewString()), http.StatusUnauthorized, api.ProblemCodeBadSignature},
		{"another instant", path, replace(signed, "Rps-Signed-At", "1"), http.StatusUnauthorized, api.ProblemCodeBadSignature},
		{"another player's key", path, replace(signed, "Rps-Key-Id", bob.id), http.StatusUnauthorized, api.ProblemCodeBadSignature},
		{"no idempotency key", path, signed[2:], http.StatusUnauthorized, api.ProblemCodeBadSignature},
		{"a key id alone", path, []string{"Idempotency-Key", register.idemKey, "Rps-Key-Id", alice.id}, http.StatusUnauthorized, api.ProblemCodeBadSignature},
	}
	for _, r := range refusals {
		e.Do("POST", r.path, alice.Token, nil, r.headers...).WantProblem(t, r.status, r.code)
	}
	// Bob's token with Alice's signature: the key is not his.
	e.Do("POST", path, bob.Token, nil, signed...).WantProblem(t, http.StatusUnauthorized, api.ProblemCodeBadSignature)
	expired := signedAction{action: tournament.ActionRegister, lobby: lobby, game: game, payload: tournament.ActionPayload{Bet: 10}, idemKey: uuid.NewString()}
	e.Do("POST", path, alice.Token, nil, alice.headersAt(t, expired, time.Now().Add(-24*time.Hour))...).
		WantProblem(t, http.StatusUnauthorized, api.ProblemCodeSignatureExpired)
	if n := len(e.AllEvents(lobby)); n != before {
		t.Fatalf("refused requests wrote %d events", n-before)
	}
	if b := e.Balance(alice.Token); b != 100 {
		t.Fatalf("refused registrations moved money: balance %d", b)
	}

	// The signed request itself, then its retry under the same key, replayed.
	e.Do("POST", path, alice.Token, nil, signed...).Want(t, http.StatusCreated)
	e.Do("POST", path, alice.Token, nil, signed...).Want(t, http.StatusCreated)
	// Signed for a game that is not the lobby's current one: stale_signature.
	stale := signedAction{action: tournament.ActionRegister, lobby: lobby, game: game2, payload: tournament.ActionPayload{Bet: 10}, idemKey: uuid.NewString()}
	e.Do("POST", path, bob.Token, nil, bob.headers(t, stale)...).WantProblem(t, http.StatusConflict, api.ProblemCodeStaleSignature)
	e.Do("POST", path, bob.Token, nil, bob.headers(t, signedAction{action: tournament.ActionRegister, lobby: lobby, game: game,
		payload: tournament.ActionPayload{Bet: 10}, idemKey: uuid.NewString()})...).Want(t, http.StatusCreated)

	// Round 1: commits signed for the round, moved onto another round or payload, refused.
	reveals := map[string]string{alice.ID: "0alice-secret-password", bob.ID: "2bob-secret-password"}
	commits := map[string]signedAction{}
	for _, p := range []signer{alice, bob} {
		c := signedAction{action: tournament.ActionCommit, lobby: lobby, game: game, round: 1,
			payload: tournament.ActionPayload{Commitment: apitest.CommitmentOf(reveals[p.ID])}, idemKey: uuid.NewString()}
		commits[p.ID] = c
		h := p.headers(t, c)
		cpath := "/v1/lobbies/" + lobby + "/commitments"
		e.Do("POST", cpath, p.Token, map[string]any{"commitment": apitest.CommitmentOf("1other")}, h...).
			WantProblem(t, http.StatusUnauthorized, api.ProblemCodeBadSignature)
		e.Do("POST", cpath, p.Token, map[string]any{"commitment": c.payload.Commitment}, replace(h, "Rps-Round", "2")...).
			WantProblem(t, http.StatusUnauthorized, api.ProblemCodeBadSignature)
		e.Do("POST", cpath, p.Token, map[string]any{"commitment": c.payload.Commitment}, h...).Want(t, http.StatusOK)
	}
	sigs := map[string][]byte{}
	for _, p := range []signer{alice, bob} {
		r := signedAction{action: tournament.ActionReveal, lobby: lobby, game: game, round: 1,
			payload: tournament.ActionPayload{Reveal: reveals[p.ID]}, idemKey: uuid.NewString()}
		h := p.headers(t, r)
		sig, _ := hex.DecodeString(h[7])
		sigs[p.ID] = sig
		e.Do("POST", "/v1/lobbies/"+lobby+"/reveals", p.Token, map[string]any{"reveal": reveals[p.ID]}, h...).Want(t, http.StatusOK)
	}

	// Retired: Alice's key no longer signs anything.
	if _, err := e.Pool.Exec(t.Context(), `WITH k AS (UPDATE account_keys SET retired_seq = 2, retired_at = 1 WHERE key_id = $1)
		UPDATE accounts SET active_keys = 0 WHERE id = $2`, alice.id, alice.ID); err != nil {
		t.Fatal(err)
	}
	next := e.Lobby(lobby, "")
	e.Do("POST", path, alice.Token, nil, alice.headers(t, signedAction{action: tournament.ActionRegister, lobby: lobby,
		game: next.Game.Id.String(), payload: tournament.ActionPayload{Bet: 10}, idemKey: uuid.NewString()})...).
		WantProblem(t, http.StatusUnauthorized, api.ProblemCodeBadSignature)

	// The log records every signature; the transcript shows the sealed ones, each verifying.
	var transcript api.RoundTranscript
	e.Do("GET", "/v1/games/"+game+"/rounds/1", "", nil).Want(t, http.StatusOK).Decode(t, &transcript)
	for _, m := range transcript.Moves {
		p := alice
		if m.AccountId.String() == bob.ID {
			p = bob
		}
		if m.RevealSignature == nil || *m.RevealSignature != hex.EncodeToString(sigs[p.ID]) || m.CommitSignature == nil {
			t.Errorf("%s's move in the transcript: commit signature %v, reveal signature %v", p.Name, m.CommitSignature, m.RevealSignature)
		}
	}
	checked := 0
	for _, ev := range e.AllEvents(lobby) {
		var d struct {
			Player string                 `json:"player"`
			Round  int                    `json:"round"`
			Auth   *tournament.ActionAuth `json:"auth"`
		}
		raw, _ := json.Marshal(ev.Data)
		if err := json.Unmarshal(raw, &d); err != nil || d.Auth == nil {
			continue
		}
		p := alice
		if d.Player == bob.ID {
			p = bob
		}
		m := tournament.ActionMessage{Origin: testOrigin, Action: d.Auth.Action, Player: tournament.AccountID(d.Player),
			LobbyID: tournament.LobbyID(lobby), GameID: tournament.GameID(game), IdempotencyKey: d.Auth.IdempotencyKey,
			KeyID: d.Auth.KeyID, SignedAt: d.Auth.SignedAt}
		var sig []byte
		switch d.Auth.Action {
		case tournament.ActionRegister:
			m.Payload.Bet = 10
			sig, _ = hex.DecodeString(d.Auth.Signature)
		case tournament.ActionCommit, tournament.ActionReveal:
			m.Round = d.Round
			for _, mv := range transcript.Moves {
				if mv.AccountId.String() != d.Player {
					continue
				}
				if d.Auth.Action == tournament.ActionCommit {
					m.Payload.Commitment, sig = *mv.Commitment, mustHex(t, *mv.CommitSignature)
				} else {
					m.Payload.Reveal, sig = *mv.Reveal, mustHex(t, *mv.RevealSignature)
				}
			}
			if sealed := tournament.SealSignature(sig); hex.EncodeToString(sealed[:]) != d.Auth.SealedSignature || d.Auth.Signature != "" {
				t.Errorf("event %d: sealed signature %q does not bind the transcript's", ev.Seq, d.Auth.SealedSignature)
			}
		}
		if !m.Verify(p.key.Public().(ed25519.PublicKey), sig) {
			t.Errorf("event %d (%s by %s): the signature does not verify over the message rebuilt from the log", ev.Seq, d.Auth.Action, p.Name)
		}
		checked++
	}
	if checked != 6 {
		t.Fatalf("%d signed events, want 6 (2 registrations, 2 commits, 2 reveals)", checked)
	}
}

// headersAt signs a with s's key as made at instant at and returns the request's headers.
func (s signer) headersAt(t *testing.T, a signedAction, at time.Time) []string {
	t.Helper()
	m := tournament.ActionMessage{Origin: testOrigin, Action: a.action, Player: tournament.AccountID(s.ID),
		LobbyID: tournament.LobbyID(a.lobby), GameID: tournament.GameID(a.game), Round: a.round, Payload: a.payload,
		IdempotencyKey: a.idemKey, KeyID: s.id, SignedAt: at.UnixMilli()}
	sig, err := m.Sign(s.key)
	if err != nil {
		t.Fatal(err)
	}
	h := []string{"Idempotency-Key", a.idemKey, "Rps-Key-Id", s.id, "Rps-Signed-At", strconv.FormatInt(m.SignedAt, 10),
		"Rps-Signature", hex.EncodeToString(sig)}
	if a.game != "" {
		h = append(h, "Rps-Game-Id", a.game)
	}
	if a.round != 0 {
		h = append(h, "Rps-Round", strconv.Itoa(a.round))
	}
	return h
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
