package main

// Issue 31's Done-when for rpsverify: a dishonest operator writes an action straight into the
// database in a player's name, re-hashes the chain and rebuilds the transparency log over it, and
// rpsverify names that event; a key the operator slips into an account, behind the key log's
// back or by a recovery, is named too.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/internal/apiclient"
	"github.com/commitreveal/rps/internal/apitest"
	"github.com/commitreveal/rps/logpublish"
	"github.com/commitreveal/rps/tournament"
)

// signingPlayer is a player whose device holds its key, as the app's.
type signingPlayer struct {
	player
	key apiclient.PlayerKey
}

// newSigningServer is a server with the transparency log on: a signed message names its origin.
func newSigningServer(t *testing.T) *server {
	return &server{Env: apitest.Start(t, apitest.WithClock(), apitest.WithLog(logpublish.Config{Origin: logOrigin})), t: t}
}

// signUp makes an account born with a key of its own, and credits it.
func (s *server) signUp(funds int64) signingPlayer {
	s.t.Helper()
	key := apiclient.NewPlayerKey()
	name := "signer-" + uuid.NewString()[:8]
	sig, err := key.Sign(tournament.ActionMessage{Origin: logOrigin, Action: tournament.ActionSignUp,
		Payload: tournament.ActionPayload{Name: name, PublicKey: key.PublicKey()}}, time.Now())
	if err != nil {
		s.t.Fatal(err)
	}
	var created struct {
		Account struct {
			ID string `json:"id"`
		} `json:"account"`
		Token string `json:"token"`
	}
	s.Do("POST", "/v1/accounts", "", map[string]any{"name": name, "publicKey": key.PublicKey()}, sig.Pairs()...).
		Want(s.t, http.StatusCreated).Decode(s.t, &created)
	s.do("POST", "/v1/admin/accounts/"+created.Account.ID+"/credits", s.Admin, map[string]any{"amount": funds}, http.StatusOK)
	return signingPlayer{player: player{ID: created.Account.ID, Name: name, Token: created.Token}, key: key}
}

// signed sends a player's action signed by key over m (its action, lobby and payload; the rest is
// filled in here), with the game and round of the lobby's current game when m names them.
func (s *server) signed(p signingPlayer, key apiclient.PlayerKey, method, path string, body any, m tournament.ActionMessage) {
	s.t.Helper()
	m.Origin, m.Player, m.IdempotencyKey = logOrigin, tournament.AccountID(p.ID), uuid.NewString()
	if m.LobbyID != "" {
		var l struct {
			Game struct {
				ID    string `json:"id"`
				Round int    `json:"round"`
			} `json:"game"`
		}
		s.Do("GET", "/v1/lobbies/"+string(m.LobbyID), "", nil).Want(s.t, http.StatusOK).Decode(s.t, &l)
		m.GameID = tournament.GameID(l.Game.ID)
		if m.Action == tournament.ActionCommit || m.Action == tournament.ActionReveal {
			m.Round = l.Game.Round
		}
	}
	sig, err := key.Sign(m, time.Now())
	if err != nil {
		s.t.Fatal(err)
	}
	if r := s.Do(method, path, p.Token, body, append(sig.Pairs(), "Idempotency-Key", m.IdempotencyKey)...); r.Status/100 != 2 {
		s.t.Fatalf("%s: status %d: %s", r.Req, r.Status, r.Body)
	}
}

// signedGame plays a signed game of two in a new lobby: Rock beats Scissors.
func (s *server) signedGame(ps []signingPlayer) string {
	s.t.Helper()
	lobby := s.lobby(map[string]any{"betSize": 100, "playersCountLimit": 2, "ruleset": "rpsls", "resolution": "classic"})
	l := tournament.LobbyID(lobby)
	for _, p := range ps {
		s.signed(p, p.key, "POST", "/v1/lobbies/"+lobby+"/players", nil,
			tournament.ActionMessage{Action: tournament.ActionRegister, LobbyID: l, Payload: tournament.ActionPayload{Bet: 100}})
	}
	moves := []string{"0", "2"}
	for i, p := range ps {
		c := engine.Commit(revealOf(p.player, moves[i])).String()
		s.signed(p, p.key, "POST", "/v1/lobbies/"+lobby+"/commitments", map[string]any{"commitment": c},
			tournament.ActionMessage{Action: tournament.ActionCommit, LobbyID: l, Payload: tournament.ActionPayload{Commitment: c}})
	}
	for i, p := range ps {
		r := revealOf(p.player, moves[i])
		s.signed(p, p.key, "POST", "/v1/lobbies/"+lobby+"/reveals", map[string]any{"reveal": r},
			tournament.ActionMessage{Action: tournament.ActionReveal, LobbyID: l, Payload: tournament.ActionPayload{Reveal: r}})
	}
	s.waitFor(lobby, "game_finished", 1)
	return lobby
}

// rebuildLog has the operator rebuild the transparency log from the database, over whatever it
// rewrote (as TestASplitViewIsCaught does), and waits for its checkpoint.
func (s *server) rebuildLog() {
	s.t.Helper()
	s.resetLog()
	s.waitPublished()
}

// authOf is an action event's record of its signature.
func authOf(t *testing.T, e tournament.LoggedEvent) map[string]any {
	var d map[string]any
	if err := json.Unmarshal(e.Data, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestVerifierNamesAnActionNotSignedByItsPlayer: two players with keys play a signed game, which
// verifies with every action checked; then the operator writes an action in a player's name
// straight into the database (a reveal without its signature; a reveal's signature in the
// transcript replaced; a registration signed by the operator's own key), re-hashes the chain and
// rebuilds the log: rpsverify names that event, its game, round and player, and exits 1.
func TestVerifierNamesAnActionNotSignedByItsPlayer(t *testing.T) {
	s := newSigningServer(t)
	operatorKey := apiclient.NewPlayerKey()
	cases := []struct {
		name string
		// forge rewrites the lobby's log and returns the failure the verifier must report.
		forge func(lobby, game string, ps []signingPlayer) Failure
	}{
		{"a reveal without its signature", func(lobby, game string, ps []signingPlayer) Failure {
			var seq int64
			s.rewriteLog(lobby, func(es []tournament.LoggedEvent) []tournament.LoggedEvent {
				i := seqOf(es, tournament.EventMoveRevealed, 2)
				d := authOf(t, es[i])
				delete(d, "auth")
				es[i].Data, _ = tournament.Canonical(d)
				seq = es[i].Seq
				return es
			})
			return Failure{Seq: seq, Game: game, Round: 1, Player: ps[1].ID, Item: "signature", Found: "no signature"}
		}},
		{"a reveal's signature swapped in the transcript", func(lobby, game string, ps []signingPlayer) Failure {
			s.exec(`UPDATE round_moves SET reveal_signature = commit_signature WHERE game_id = $1 AND account_id = $2`, game, ps[1].ID)
			es, err := s.Store.Events(t.Context(), tournament.LobbyID(lobby), 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			return Failure{Seq: es[seqOf(es, tournament.EventMoveRevealed, 2)].Seq, Game: game, Round: 1, Player: ps[1].ID, Item: "sealed signature"}
		}},
		{"a second registration signed by the operator's key", func(lobby, game string, ps []signingPlayer) Failure {
			var seq int64
			var next string
			s.rewriteLog(lobby, func(es []tournament.LoggedEvent) []tournament.LoggedEvent {
				// The lobby's next game opened when the first finished: the operator registers
				// the loser in it, signing the player's message with a key of its own.
				opened := es[len(es)-1]
				if opened.Type != tournament.EventGameOpened {
					t.Fatalf("the log ends with %s, not the next game_opened", opened.Type)
				}
				next = string(opened.GameID)
				m := tournament.ActionMessage{Origin: logOrigin, Action: tournament.ActionRegister, Player: tournament.AccountID(ps[1].ID),
					LobbyID: tournament.LobbyID(lobby), GameID: opened.GameID, Payload: tournament.ActionPayload{Bet: 100},
					IdempotencyKey: uuid.NewString()}
				sig, _ := operatorKey.Sign(m, time.UnixMilli(opened.At))
				d := tournament.PlayerRegisteredData{Player: tournament.AccountID(ps[1].ID), Order: 1, Players: 1, Pot: 100,
					Auth: &tournament.ActionAuth{Action: m.Action, IdempotencyKey: m.IdempotencyKey, KeyID: sig.KeyID, SignedAt: sig.SignedAt,
						Signature: sig.Value}}
				data, _ := tournament.Canonical(d)
				e := tournament.LoggedEvent{Type: tournament.EventPlayerRegistered, LobbyID: opened.LobbyID, GameID: opened.GameID,
					At: opened.At + 1, Data: data}
				seq = opened.Seq + 1
				return append(es, e)
			})
			return Failure{Seq: seq, Game: next, Player: ps[1].ID, Item: "signing key"}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ps := []signingPlayer{s.signUp(1000), s.signUp(1000)}
			lobby := s.signedGame(ps)
			s.waitPublished()
			code, out, rep := s.verify("--lobby", lobby, "--require-signatures", "--json")
			if code != exitOK || rep.Lobbies[0].Signatures.Checked != 6 || len(rep.Accounts) != 2 {
				t.Fatalf("the signed game: exit %d\n%s", code, out)
			}
			want := c.forge(lobby, s.firstGame(lobby), ps)
			s.rebuildLog()
			code, out, rep = s.verify("--lobby", lobby, "--json")
			if code != exitFailed || len(rep.Lobbies) != 1 || rep.Lobbies[0].OK || rep.Log == nil || !rep.Log.OK {
				t.Fatalf("after the forgery: exit %d, want %d, with the rebuilt log verifying\n%s", code, exitFailed, out)
			}
			fs := rep.Lobbies[0].Signatures.Failures
			if rep.Lobbies[0].Failure != nil || len(fs) != 1 {
				t.Fatalf("failures %+v, want one naming the forged event", rep.Lobbies[0])
			}
			got := fs[0]
			if got.Lobby != lobby || got.Seq != want.Seq || got.Game != want.Game || got.Round != want.Round || got.Player != want.Player ||
				got.Item != want.Item || (want.Found != "" && got.Found != want.Found) {
				t.Errorf("failure %+v, want %+v", got, want)
			}
			_, text, _ := s.verify("--lobby", lobby)
			if !strings.Contains(text, fmt.Sprintf("NOT SIGNED BY THE PLAYER: lobby %s event %d", lobby, want.Seq)) {
				t.Errorf("the report does not name the event:\n%s", text)
			}
			t.Logf("%s", text)
		})
	}
}

// TestVerifierNamesKeysTheOperatorAdded: a key the operator writes straight into an account's
// keys, with no key event, is named as a key not in the key log (and an action signed by it as
// not the player's); a key it installs by a recovery, which the key log records, is reported as
// a recovery by the operator, and the actions signed by it are counted as such.
func TestVerifierNamesKeysTheOperatorAdded(t *testing.T) {
	s := newSigningServer(t)
	ps := []signingPlayer{s.signUp(1000), s.signUp(1000)}
	s.signedGame(ps)

	// Behind the log's back: a key in account_keys that no key event added.
	sneaked := apiclient.NewPlayerKey()
	s.exec(`INSERT INTO account_keys (key_id, account_id, public_key, added_seq, added_at) VALUES ($1, $2, decode($3, 'hex'), 1, $4)`,
		sneaked.ID(), ps[0].ID, sneaked.PublicKey(), time.Now().UnixMilli())
	s.exec(`UPDATE accounts SET active_keys = active_keys + 1 WHERE id = $1`, ps[0].ID)
	// By a recovery: the log says so.
	recovered := apiclient.NewPlayerKey()
	s.Do("POST", "/v1/admin/accounts/"+ps[1].ID+"/keys", s.Admin, map[string]any{"publicKey": recovered.PublicKey(), "reason": "lost phone"},
		"Idempotency-Key", apiclient.NewKey()).Want(t, http.StatusCreated)

	lobby := s.lobby(map[string]any{"betSize": 100, "playersCountLimit": 2})
	l := tournament.LobbyID(lobby)
	s.signed(ps[0], sneaked, "POST", "/v1/lobbies/"+lobby+"/players", nil,
		tournament.ActionMessage{Action: tournament.ActionRegister, LobbyID: l, Payload: tournament.ActionPayload{Bet: 100}})
	s.signed(ps[1], recovered, "POST", "/v1/lobbies/"+lobby+"/players", nil,
		tournament.ActionMessage{Action: tournament.ActionRegister, LobbyID: l, Payload: tournament.ActionPayload{Bet: 100}})
	s.waitPublished()

	code, out, rep := s.verify("--json")
	if code != exitFailed {
		t.Fatalf("exit %d, want %d\n%s", code, exitFailed, out)
	}
	accounts := map[string]AccountResult{}
	for _, a := range rep.Accounts {
		accounts[a.Account] = a
	}
	if a := accounts[ps[0].ID]; a.OK || a.Failure == nil || a.Failure.Item != "key "+sneaked.ID() || a.Failure.Expected != "a key the key log added" {
		t.Errorf("the key added behind the log's back: %+v", a)
	}
	if a := accounts[ps[1].ID]; !a.OK || len(a.Recoveries) != 1 || a.Recoveries[0].KeyID != recovered.ID() || a.Recoveries[0].Reason != "lost phone" ||
		a.Log == nil || a.Log.Seq != 2 {
		t.Errorf("the recovery: %+v", a)
	}
	var sigs SignatureReport
	for _, res := range rep.Lobbies {
		if res.Lobby == lobby {
			sigs = res.Signatures
		}
	}
	if len(sigs.Failures) != 1 || sigs.Failures[0].Player != ps[0].ID || sigs.Failures[0].Item != "signing key" ||
		sigs.Checked != 1 || sigs.ByRecoveredKey != 1 {
		t.Errorf("the new lobby's signatures: %+v", sigs)
	}
	_, text, _ := s.verify()
	for _, want := range []string{"RECOVERY BY THE OPERATOR", "key " + sneaked.ID() + ": expected a key the key log added"} {
		if !strings.Contains(text, want) {
			t.Errorf("the report lacks %q:\n%s", want, text)
		}
	}
	t.Logf("%s", text)
}

// TestVerifierChecksSealedSignaturesOnceTheRoundIsOver: a commit's and a reveal's signatures are
// sealed in the log (only their hash is there) until the round is over; the verifier counts them
// as pending meanwhile and checks them against the transcript then. Quick joins (one naming a
// ruleset, one not) and a leave are signed actions too.
func TestVerifierChecksSealedSignaturesOnceTheRoundIsOver(t *testing.T) {
	s := newSigningServer(t)
	ps := []signingPlayer{s.signUp(1000), s.signUp(1000), s.signUp(1000)}
	lobby := s.lobby(map[string]any{"betSize": 100, "playersCountLimit": 2, "ruleset": "rpsls", "resolution": "classic"})
	l := tournament.LobbyID(lobby)
	for i, ruleset := range []string{"rpsls", ""} {
		body := map[string]any{"betSize": 100}
		if ruleset != "" {
			body["ruleset"] = ruleset
		}
		s.signed(ps[i], ps[i].key, "POST", "/v1/matchmaking", body,
			tournament.ActionMessage{Action: tournament.ActionQuickJoin, Payload: tournament.ActionPayload{BetSize: 100, Ruleset: ruleset}})
	}
	summary := func(checked, pending int) {
		t.Helper()
		code, out, rep := s.verify("--lobby", lobby, "--require-signatures", "--json")
		if code != exitOK {
			t.Fatalf("exit %d\n%s", code, out)
		}
		if got := rep.Lobbies[0].Signatures; got.Checked != checked || got.SealedPending != pending || got.Unsigned != 0 || len(got.Failures) != 0 {
			t.Fatalf("signatures %+v, want %d checked and %d pending", got, checked, pending)
		}
	}
	moves := []string{"0", "2"}
	for i := range 2 {
		c := engine.Commit(revealOf(ps[i].player, moves[i])).String()
		s.signed(ps[i], ps[i].key, "POST", "/v1/lobbies/"+lobby+"/commitments", map[string]any{"commitment": c},
			tournament.ActionMessage{Action: tournament.ActionCommit, LobbyID: l, Payload: tournament.ActionPayload{Commitment: c}})
	}
	summary(2, 2)
	reveal := func(i int) {
		r := revealOf(ps[i].player, moves[i])
		s.signed(ps[i], ps[i].key, "POST", "/v1/lobbies/"+lobby+"/reveals", map[string]any{"reveal": r},
			tournament.ActionMessage{Action: tournament.ActionReveal, LobbyID: l, Payload: tournament.ActionPayload{Reveal: r}})
	}
	reveal(0)
	summary(2, 3)
	reveal(1)
	s.waitFor(lobby, "game_finished", 1)
	summary(6, 0)

	// In the next game, a registration and a leave, both signed.
	s.signed(ps[2], ps[2].key, "POST", "/v1/lobbies/"+lobby+"/players", nil,
		tournament.ActionMessage{Action: tournament.ActionRegister, LobbyID: l, Payload: tournament.ActionPayload{Bet: 100}})
	s.signed(ps[2], ps[2].key, "DELETE", "/v1/lobbies/"+lobby+"/players/me", nil,
		tournament.ActionMessage{Action: tournament.ActionLeave, LobbyID: l})
	summary(8, 0)
}
