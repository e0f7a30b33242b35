package main

// An attacker's review of the signature checks (issue 31): the dishonest operator rewrites a
// log with what it holds (players' old signatures, a recovery) and tries to pass rpsverify.

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/commitreveal/rps/internal/apiclient"
	"github.com/commitreveal/rps/tournament"
)

const (
	reviewLobby = "0b8e7c6d-5a4f-4e3d-9c2b-1a0f9e8d7c6b"
	reviewGame  = "7d6c5b4a-3f2e-4d1c-8b0a-9f8e7d6c5b4a"
)

// reviewRun is a lobby run at a game of config, over key log l of testAccount, as rpsverify's
// replay reaches an action event.
func reviewRun(l *keyLog, config apiclient.GameConfig) *lobbyRun {
	sigs := &signatures{origin: logOrigin, logs: map[string]*keyLog{testAccount: l}, seen: map[replayKey]Failure{}}
	return &lobbyRun{v: &verifier{sigs: sigs}, ctx: context.Background(), id: reviewLobby, res: &LobbyResult{Lobby: reviewLobby},
		game: &gameState{id: reviewGame, config: config}}
}

// actionEvent is the event of a signed action a, as the lobby's log holds it.
func actionEvent(t *testing.T, a signedAction) tournament.LoggedEvent {
	t.Helper()
	data, err := json.Marshal(map[string]any{"player": a.player, "auth": a.auth})
	if err != nil {
		t.Fatal(err)
	}
	return tournament.LoggedEvent{Seq: a.seq, Type: a.typ, LobbyID: tournament.LobbyID(a.lobby), GameID: tournament.GameID(a.game), At: a.at, Data: data}
}

// TestReviewQuickJoinMovedToAnotherRuleset: a quick join names no lobby, so the operator chooses
// the game; but the player signed the ruleset it would play, and a game of another ruleset is not
// the one the player agreed to pay for. rpsverify rebuilt the message from auth.ruleset alone,
// never comparing it with the game's ruleset, so the operator could spend a player's quick join
// on any game of the same bet.
func TestReviewQuickJoinMovedToAnotherRuleset(t *testing.T) {
	a := testKey(0)
	b := &keyLogBuilder{t: t}
	b.signUp(a, "a")
	l := replayKeyLog(testAccount, logOrigin, b.events, listed(listing{key: a, added: 1}))
	if l.res.Failure != nil {
		t.Fatal(l.res.Failure)
	}
	join := signAction(t, a, signedAction{lobby: reviewLobby, game: reviewGame, player: testAccount, seq: 3, at: keyEventAt(1) + 5000,
		typ: tournament.EventPlayerRegistered, bet: 100,
		auth: &tournament.ActionAuth{Action: tournament.ActionQuickJoin, IdempotencyKey: "qj-1", Ruleset: "rpsls"}}, "")

	fair := reviewRun(l, apiclient.GameConfig{BetSize: 100, Ruleset: "rpsls"})
	if err := fair.action(actionEvent(t, join), testAccount, 0); err != nil {
		t.Fatal(err)
	}
	if rep := fair.res.Signatures; rep.Checked != 1 || len(rep.Failures) != 0 {
		t.Fatalf("a quick join into a game of the ruleset it named: %+v", rep)
	}

	moved := reviewRun(l, apiclient.GameConfig{BetSize: 100, Ruleset: "classic"})
	if err := moved.action(actionEvent(t, join), testAccount, 0); err != nil {
		t.Fatal(err)
	}
	rep := moved.res.Signatures
	if rep.Checked != 0 || len(rep.Failures) != 1 || rep.Failures[0].Item != "quick join's ruleset" || rep.Failures[0].Seq != 3 {
		t.Fatalf("a quick join signed for rpsls registered in a classic game: %+v", rep)
	}
	t.Log(&rep.Failures[0])
}

// TestReviewKeyFromARecoveryKeyIsTheOperators: after a recovery the operator holds the key it
// installed; with it, it signs an add_key of a second key and retires the first, so that the
// account's only key looks like one the player added. Every action signed by that key is the
// player's only on the operator's word, as an action by the recovery's own key is, and must be
// counted as such.
func TestReviewKeyFromARecoveryKeyIsTheOperators(t *testing.T) {
	a, operator, second := testKey(0), testKey(1), testKey(2)
	b := &keyLogBuilder{t: t}
	b.signUp(a, "a")
	b.recover(operator, a)
	b.addKey(operator, second, "add-1")
	b.retire(second, operator, "retire-1")
	l := replayKeyLog(testAccount, logOrigin, b.events, listed(listing{key: a, added: 1, retired: 2},
		listing{key: operator, added: 2, retired: 4, recovery: true}, listing{key: second, added: 3}))
	if l.res.Failure != nil {
		t.Fatal(l.res.Failure)
	}
	register := signAction(t, second, signedAction{lobby: reviewLobby, game: reviewGame, player: testAccount, seq: 3,
		at: keyEventAt(4) + 5000, typ: tournament.EventPlayerRegistered, bet: 100,
		auth: &tournament.ActionAuth{Action: tournament.ActionRegister, IdempotencyKey: "reg-1"}}, "")
	r := reviewRun(l, apiclient.GameConfig{BetSize: 100})
	if err := r.action(actionEvent(t, register), testAccount, 0); err != nil {
		t.Fatal(err)
	}
	if rep := r.res.Signatures; rep.Checked != 1 || rep.ByRecoveredKey != 1 {
		t.Fatalf("a register signed by a key that the recovery's key added: %+v, want it counted as by a key from a recovery", rep)
	}
}

// TestReviewKeyEventsGoForward: a key log's events are in time order, as a lobby's are. Out of
// order, the operator dates a recovery, made after a player's actions, before them (or a key's
// retirement after its last use), and the instants rpsverify checks actions against mean
// nothing.
func TestReviewKeyEventsGoForward(t *testing.T) {
	a, operator := testKey(0), testKey(1)
	b := &keyLogBuilder{t: t}
	b.signUp(a, "a")
	b.addKey(a, testKey(2), "add-1")
	// The recovery, key event 3, dated between the first two.
	e, err := tournament.SealKeyEvent(b.prev, testAccount,
		keyEventAt(1)+1, &tournament.KeysRecoveredData{KeyID: idOf(operator), PublicKey: pubHex(operator),
			Retired: []string{idOf(a), idOf(testKey(2))}, Admin: "00000000-0000-4000-8000-000000000001", Reason: "lost phone"})
	if err != nil {
		t.Fatal(err)
	}
	b.events = append(b.events, apiKeyEvent(e))
	l := replayKeyLog(testAccount, logOrigin, b.events, listed(listing{key: a, added: 1, retired: 3},
		listing{key: testKey(2), added: 2, retired: 3}, listing{key: operator, added: 3, recovery: true}))
	if f := l.res.Failure; l.res.OK || f == nil || f.Seq != 3 || f.Item != "key event at" {
		t.Fatalf("a key event dated before the one it follows: failure %v", f)
	}
}

// TestReviewSignUpCopiedToAnotherAccount: a sign-up's message names no account (the account does
// not exist yet), so its key_added event verifies in any account's key log. The operator copies
// a player's sign-up into an account of its own: the player's key, bound to two accounts, which
// the contract forbids. rpsverify reads the key log of every player it meets and must say so.
func TestReviewSignUpCopiedToAnotherAccount(t *testing.T) {
	a := testKey(0)
	b := &keyLogBuilder{t: t}
	b.signUp(a, "a")
	const other = "7a2d3b8c-4c5e-4d6f-9a01-3b4c5d6e7f80"
	e := tournament.KeyEvent{Seq: 1, Type: tournament.KeyAdded, AccountID: other, At: mustParseTime(t, b.events[0].At), Data: b.events[0].Data}
	var err error
	if e.Hash, err = tournament.KeyEventHash(e); err != nil {
		t.Fatal(err)
	}
	logs := map[string]apiclient.AccountKeys{
		testAccount: {AccountId: uuidOf(testAccount), Events: b.events, Keys: listed(listing{key: a, added: 1}),
			Head: &apiclient.KeyLogHead{Seq: 1, Hash: b.events[0].Hash}},
		other: {AccountId: uuidOf(other), Events: []apiclient.KeyEvent{apiKeyEvent(e)}, Keys: listed(listing{key: a, added: 1}),
			Head: &apiclient.KeyLogHead{Seq: 1, Hash: hex.EncodeToString(e.Hash[:])}},
	}
	c := keyLogServer(t, func(r *http.Request) *apiclient.AccountKeys {
		page, ok := logs[strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v1/accounts/"), "/keys")]
		if !ok {
			return nil
		}
		if r.URL.Query().Get("after") != "0" {
			page.Events = nil
		}
		return &page
	})
	s := &signatures{c: c, origin: logOrigin, logs: map[string]*keyLog{}, seen: map[replayKey]Failure{}}
	for _, acct := range []string{testAccount, other} {
		if _, err := s.keyLog(context.Background(), acct); err != nil {
			t.Fatal(err)
		}
	}
	failed := 0
	for _, acct := range s.accounts() {
		if acct.Failure != nil || !acct.OK {
			failed++
			t.Log(acct.Failure)
		}
	}
	if failed != 1 {
		t.Fatalf("key %s bound to two accounts: %d accounts failed, want 1", idOf(a), failed)
	}
}

// apiKeyEvent is a key event as GET /v1/accounts/{id}/keys serves it.
func apiKeyEvent(e tournament.KeyEvent) apiclient.KeyEvent {
	return apiclient.KeyEvent{Seq: e.Seq, Type: string(e.Type), AccountId: uuidOf(string(e.AccountID)), At: tournament.FormatTime(e.At),
		Data: e.Data, PrevHash: hex.EncodeToString(e.PrevHash[:]), Hash: hex.EncodeToString(e.Hash[:])}
}

// TestReviewLobbyEventsGoForward: whether a player had a key when it acted is read from the
// instants of its lobby's events, which the operator writes. An event dated before the one it
// follows is how the operator would append, now, an unsigned registration dated before the
// player bound its key ("no key then"): a lobby's log goes forward in time.
func TestReviewLobbyEventsGoForward(t *testing.T) {
	r := &lobbyRun{v: &verifier{sigs: &signatures{}}, ctx: context.Background(), id: reviewLobby, res: &LobbyResult{Lobby: reviewLobby}}
	var prev [32]byte
	for i, at := range []int64{testStart, testStart + 1000, testStart + 1000, testStart - 60_000} {
		e := tournament.LoggedEvent{Seq: int64(i + 1), Type: tournament.EventLobbyCreated, LobbyID: reviewLobby, At: at,
			Data: json.RawMessage(`{"config":{}}`), PrevHash: prev}
		hash, err := tournament.ChainHash(e)
		if err != nil {
			t.Fatal(err)
		}
		err = r.event(apiclient.Event{Seq: e.Seq, Type: string(e.Type), LobbyId: uuidOf(reviewLobby), At: tournament.FormatTime(at),
			Data: e.Data, PrevHash: hex.EncodeToString(prev[:]), Hash: hex.EncodeToString(hash[:])})
		prev = hash
		if i < 3 && err != nil {
			t.Fatalf("event %d, in time order: %v", e.Seq, err)
		}
		if i == 3 {
			var f *Failure
			if !errors.As(err, &f) || f.Seq != 4 || f.Item != "at" {
				t.Fatalf("an event dated before the one it follows: %v", err)
			}
			t.Log(f)
		}
	}
}
