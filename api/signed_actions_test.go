package api_test

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apitest"
	"github.com/commitreveal/rps/logpublish"
	"github.com/commitreveal/rps/tournament"
)

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
	alice, bob := e.NewPlayer("alice", 100), e.NewPlayer("bob", 100)
	cfg := map[string]any{"betSize": 10, "playersCountLimit": 2, "entryTimeoutMs": 60000, "moveTimeoutMs": 60000, "revealTimeoutMs": 60000}
	l1, l2 := e.CreateLobby(cfg), e.CreateLobby(cfg)
	lobby, game := l1.Id.String(), l1.Game.Id.String()
	lobby2, game2 := l2.Id.String(), l2.Game.Id.String()

	register := apitest.Act{Action: tournament.ActionRegister, Lobby: lobby, Game: game, Payload: tournament.ActionPayload{Bet: 10}, Key: uuid.NewString()}
	signed := e.Signed(alice, register)
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
		{"another player's key", path, replace(signed, "Rps-Key-Id", bob.Key.ID()), http.StatusUnauthorized, api.ProblemCodeBadSignature},
		{"no idempotency key", path, signed[2:], http.StatusUnauthorized, api.ProblemCodeBadSignature},
		{"a key id alone", path, []string{"Idempotency-Key", register.Key, "Rps-Key-Id", alice.Key.ID()}, http.StatusUnauthorized, api.ProblemCodeBadSignature},
	}
	for _, r := range refusals {
		e.Do("POST", r.path, alice.Token, nil, r.headers...).WantProblem(t, r.status, r.code)
	}
	// Bob's token with Alice's signature: the key is not his.
	e.Do("POST", path, bob.Token, nil, signed...).WantProblem(t, http.StatusUnauthorized, api.ProblemCodeBadSignature)
	expired := apitest.Act{Action: tournament.ActionRegister, Lobby: lobby, Game: game, Payload: tournament.ActionPayload{Bet: 10}, Key: uuid.NewString(),
		At: time.Now().Add(-24 * time.Hour)}
	e.Do("POST", path, alice.Token, nil, e.Signed(alice, expired)...).
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
	stale := apitest.Act{Action: tournament.ActionRegister, Lobby: lobby, Game: game2, Payload: tournament.ActionPayload{Bet: 10}, Key: uuid.NewString()}
	e.Do("POST", path, bob.Token, nil, e.Signed(bob, stale)...).WantProblem(t, http.StatusConflict, api.ProblemCodeStaleSignature)
	e.Do("POST", path, bob.Token, nil, e.Signed(bob, apitest.Act{Action: tournament.ActionRegister, Lobby: lobby, Game: game,
		Payload: tournament.ActionPayload{Bet: 10}, Key: uuid.NewString()})...).Want(t, http.StatusCreated)

	// Round 1: commits signed for the round, moved onto another round or payload, refused.
	reveals := map[string]string{alice.ID: "0alice-secret-password", bob.ID: "2bob-secret-password"}
	commits := map[string]apitest.Act{}
	for _, p := range []apitest.Player{alice, bob} {
		c := apitest.Act{Action: tournament.ActionCommit, Lobby: lobby, Game: game, Round: 1,
			Payload: tournament.ActionPayload{Commitment: apitest.CommitmentOf(reveals[p.ID])}, Key: uuid.NewString()}
		commits[p.ID] = c
		h := e.Signed(p, c)
		cpath := "/v1/lobbies/" + lobby + "/commitments"
		e.Do("POST", cpath, p.Token, map[string]any{"commitment": apitest.CommitmentOf("1other")}, h...).
			WantProblem(t, http.StatusUnauthorized, api.ProblemCodeBadSignature)
		e.Do("POST", cpath, p.Token, map[string]any{"commitment": c.Payload.Commitment}, replace(h, "Rps-Round", "2")...).
			WantProblem(t, http.StatusUnauthorized, api.ProblemCodeBadSignature)
		e.Do("POST", cpath, p.Token, map[string]any{"commitment": c.Payload.Commitment}, h...).Want(t, http.StatusOK)
	}
	sigs := map[string][]byte{}
	for _, p := range []apitest.Player{alice, bob} {
		r := apitest.Act{Action: tournament.ActionReveal, Lobby: lobby, Game: game, Round: 1,
			Payload: tournament.ActionPayload{Reveal: reveals[p.ID]}, Key: uuid.NewString()}
		h := e.Signed(p, r)
		sig, _ := hex.DecodeString(h[7])
		sigs[p.ID] = sig
		e.Do("POST", "/v1/lobbies/"+lobby+"/reveals", p.Token, map[string]any{"reveal": reveals[p.ID]}, h...).Want(t, http.StatusOK)
	}

	// Retired: Alice's key no longer signs anything.
	if _, err := e.Pool.Exec(t.Context(), `WITH k AS (UPDATE account_keys SET retired_seq = added_seq + 1, retired_at = added_at WHERE key_id = $1)
		UPDATE accounts SET active_keys = 0 WHERE id = $2`, alice.Key.ID(), alice.ID); err != nil {
		t.Fatal(err)
	}
	next := e.Lobby(lobby, "")
	e.Do("POST", path, alice.Token, nil, e.Signed(alice, apitest.Act{Action: tournament.ActionRegister, Lobby: lobby,
		Game: next.Game.Id.String(), Payload: tournament.ActionPayload{Bet: 10}, Key: uuid.NewString()})...).
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
		if !m.Verify(publicKey(t, p), sig) {
			t.Errorf("event %d (%s by %s): the signature does not verify over the message rebuilt from the log", ev.Seq, d.Auth.Action, p.Name)
		}
		checked++
	}
	if checked != 6 {
		t.Fatalf("%d signed events, want 6 (2 registrations, 2 commits, 2 reveals)", checked)
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// publicKey is the public half of p's key.
func publicKey(t *testing.T, p apitest.Player) ed25519.PublicKey {
	t.Helper()
	return mustHex(t, p.Key.PublicKey())
}
