package main

// Unit tests of the signature checks over hand-built key logs and actions, signed with the key of
// tournament/testdata/signed_actions.json; forgery_test.go runs them against a real server.

import (
	"cmp"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/commitreveal/rps/internal/apiclient"
	"github.com/commitreveal/rps/tournament"
)

// vectors is tournament/testdata/signed_actions.json.
type vectors struct {
	Seed      string `json:"seed"`
	PublicKey string `json:"publicKey"`
	KeyID     string `json:"keyId"`
	Vectors   []struct {
		Action tournament.ActionName `json:"action"`
		Fields struct {
			GameID         *string `json:"gameId"`
			IdempotencyKey *string `json:"idempotencyKey"`
			LobbyID        *string `json:"lobbyId"`
			Origin         string  `json:"origin"`
			Payload        struct {
				Bet        int64   `json:"bet"`
				BetSize    int64   `json:"betSize"`
				Ruleset    *string `json:"ruleset"`
				Commitment string  `json:"commitment"`
				Reveal     string  `json:"reveal"`
			} `json:"payload"`
			Player   *string `json:"player"`
			Round    *int    `json:"round"`
			SignedAt int64   `json:"signedAt"`
		} `json:"fields"`
		Signature string `json:"signature"`
	} `json:"vectors"`
}

func loadVectors(t *testing.T) vectors {
	t.Helper()
	data, err := os.ReadFile("../../tournament/testdata/signed_actions.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// TestActionMessagesMatchTheVectors: the message rpsverify rebuilds from a log's action (lobby,
// game, round, player, auth and the payload the log implies) is the one each vector signed.
func TestActionMessagesMatchTheVectors(t *testing.T) {
	v := loadVectors(t)
	pub, _ := hex.DecodeString(v.PublicKey)
	key := &keySpan{id: v.KeyID, pub: pub}
	types := map[tournament.ActionName]tournament.EventType{
		tournament.ActionRegister: tournament.EventPlayerRegistered, tournament.ActionQuickJoin: tournament.EventPlayerRegistered,
		tournament.ActionLeave: tournament.EventPlayerLeft, tournament.ActionCommit: tournament.EventMoveCommitted,
		tournament.ActionReveal: tournament.EventMoveRevealed,
	}
	checked := 0
	for _, vec := range v.Vectors {
		typ, ok := types[vec.Action]
		if !ok {
			continue
		}
		f := vec.Fields
		a := signedAction{lobby: deref(f.LobbyID), game: deref(f.GameID), player: deref(f.Player), round: deref(f.Round), typ: typ,
			bet: f.Payload.Bet + f.Payload.BetSize,
			auth: &tournament.ActionAuth{Action: vec.Action, IdempotencyKey: deref(f.IdempotencyKey), KeyID: v.KeyID, SignedAt: f.SignedAt,
				Signature: vec.Signature, Ruleset: deref(f.Payload.Ruleset)}}
		if vec.Action == tournament.ActionQuickJoin {
			// The event names the lobby the server chose; the message does not.
			a.lobby, a.game = "0b8e7c6d-5a4f-4e3d-9c2b-1a0f9e8d7c6b", "7d6c5b4a-3f2e-4d1c-8b0a-9f8e7d6c5b4a"
		}
		value := f.Payload.Commitment + f.Payload.Reveal
		var sig *string
		if a.sealed() {
			raw, _ := hex.DecodeString(vec.Signature)
			sealed := tournament.SealSignature(raw)
			a.auth.Signature, a.auth.SealedSignature, sig = "", hex.EncodeToString(sealed[:]), &vec.Signature
		}
		if failure := checkSignature(f.Origin, key, a, value, sig); failure != nil {
			t.Errorf("%s: %s", vec.Action, failure)
		}
		checked++
	}
	if checked != 6 {
		t.Errorf("checked %d vectors, want 6", checked)
	}
}

// keys are test keys: the vectors' and others from fixed seeds.
func testKey(seed byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed([]byte(strings.Repeat(string(rune('a'+seed)), 32)))
}

const (
	testAccount = "6f1c2a9e-3b7d-4c5e-8f10-2a3b4c5d6e7f"
	testStart   = int64(1_795_000_000_000)
)

// keyLogBuilder writes a key log as the server does (tournament.SealKeyEvent), signing with the
// keys given, and serves it as GET /v1/accounts/{id}/keys does.
type keyLogBuilder struct {
	t *testing.T
	// account is the account whose key log it is ("": testAccount).
	account string
	events  []apiclient.KeyEvent
	prev    tournament.KeyEvent
}

func pubHex(k ed25519.PrivateKey) string { return hex.EncodeToString(k.Public().(ed25519.PublicKey)) }
func idOf(k ed25519.PrivateKey) string   { return tournament.KeyID(k.Public().(ed25519.PublicKey)) }

// keyEventAt is the instant of the nth key event: a minute apart.
func keyEventAt(seq int) int64 { return testStart + int64(seq)*60_000 }

func (b *keyLogBuilder) append(d tournament.KeyEventData) {
	b.t.Helper()
	account := cmp.Or(b.account, testAccount)
	e, err := tournament.SealKeyEvent(b.prev, tournament.AccountID(account), keyEventAt(len(b.events)+1), d)
	if err != nil {
		b.t.Fatal(err)
	}
	b.prev = e
	b.events = append(b.events, apiclient.KeyEvent{Seq: e.Seq, Type: string(e.Type), AccountId: uuidOf(account), At: tournament.FormatTime(e.At),
		Data: e.Data, PrevHash: hex.EncodeToString(e.PrevHash[:]), Hash: hex.EncodeToString(e.Hash[:])})
}

// signKeyChange signs a key change with signer, a second before its event.
func (b *keyLogBuilder) signKeyChange(signer ed25519.PrivateKey, m tournament.ActionMessage) tournament.KeySignature {
	b.t.Helper()
	m.Origin, m.KeyID, m.SignedAt = logOrigin, idOf(signer), keyEventAt(len(b.events)+1)-1000
	sig, err := m.Sign(signer)
	if err != nil {
		b.t.Fatal(err)
	}
	return tournament.KeySignature{KeyID: m.KeyID, SignedAt: m.SignedAt, Signature: sig, IdempotencyKey: m.IdempotencyKey}
}

func (b *keyLogBuilder) signUp(k ed25519.PrivateKey, name string) {
	sig := b.signKeyChange(k, tournament.ActionMessage{Action: tournament.ActionSignUp,
		Payload: tournament.ActionPayload{Name: name, PublicKey: pubHex(k)}})
	b.append(tournament.NewKeyAdded(k.Public().(ed25519.PublicKey), tournament.ViaSignUp, name, sig))
}

// addKey adds k signed by signer (the data naming added, k unless given).
func (b *keyLogBuilder) addKey(signer, k ed25519.PrivateKey, idem string, added ...ed25519.PrivateKey) {
	sig := b.signKeyChange(signer, tournament.ActionMessage{Action: tournament.ActionAddKey, Player: testAccount, IdempotencyKey: idem,
		Payload: tournament.ActionPayload{PublicKey: pubHex(k)}})
	if len(added) > 0 {
		k = added[0]
	}
	b.append(tournament.NewKeyAdded(k.Public().(ed25519.PublicKey), tournament.ViaAddKey, "", sig))
}

func (b *keyLogBuilder) retire(signer, k ed25519.PrivateKey, idem string) {
	sig := b.signKeyChange(signer, tournament.ActionMessage{Action: tournament.ActionRetireKey, Player: testAccount, IdempotencyKey: idem,
		Payload: tournament.ActionPayload{KeyID: idOf(k)}})
	b.append(tournament.NewKeyRetired(idOf(k), sig))
}

func (b *keyLogBuilder) recover(k ed25519.PrivateKey, retired ...ed25519.PrivateKey) {
	ids := []string{}
	for _, r := range retired {
		ids = append(ids, idOf(r))
	}
	b.append(&tournament.KeysRecoveredData{KeyID: idOf(k), PublicKey: pubHex(k), Retired: ids, Admin: "00000000-0000-4000-8000-000000000001",
		Reason: "lost phone"})
}

// listing is a key as the server lists it (retired 0: active).
type listing struct {
	key            ed25519.PrivateKey
	added, retired int64
	recovery       bool
}

// listed is the server's list of keys.
func listed(ls ...listing) []apiclient.AccountKey {
	var out []apiclient.AccountKey
	for _, l := range ls {
		s := apiclient.AccountKey{KeyId: idOf(l.key), PublicKey: pubHex(l.key), AddedSeq: l.added, Recovery: l.recovery}
		if l.retired != 0 {
			s.RetiredSeq = &l.retired
		}
		out = append(out, s)
	}
	return out
}

// TestKeyLogReplay: a key log of a sign-up, a second device's key, a retirement and a recovery
// replays; each key is the account's exactly while the log says; the recovery is reported.
func TestKeyLogReplay(t *testing.T) {
	a, b2, c := testKey(0), testKey(1), testKey(2)
	b := &keyLogBuilder{t: t}
	b.signUp(a, "Ålice \"A\"")
	b.addKey(a, b2, "add-1")
	b.retire(b2, a, "retire-1")
	b.recover(c, b2)
	keys := listed(listing{a, 1, 3, false}, listing{b2, 2, 4, false}, listing{c, 4, 0, true})
	l := replayKeyLog(testAccount, logOrigin, b.events, keys)
	if !l.res.OK || l.res.Events != 4 || l.res.Keys != 3 || len(l.res.Recoveries) != 1 || l.res.Recoveries[0].KeyID != idOf(c) {
		t.Fatalf("replay: %+v (failure %v)", l.res, l.res.Failure)
	}
	for _, c := range []struct {
		key  ed25519.PrivateKey
		at   int64
		want bool
	}{
		{a, keyEventAt(1) - 1, false}, {a, keyEventAt(1), true}, {a, keyEventAt(3), true}, {a, keyEventAt(3) + 1, false},
		{b2, keyEventAt(2) + 1, true}, {b2, keyEventAt(4) + 1, false}, {c, keyEventAt(4) + 1, true},
	} {
		if got := l.keyAt(idOf(c.key), c.at) != nil; got != c.want {
			t.Errorf("key %s at %s: active %t, want %t", idOf(c.key), tournament.FormatTime(c.at), got, c.want)
		}
	}
	if l.hadKeyAt(keyEventAt(1)-1) || !l.hadKeyAt(keyEventAt(5)) {
		t.Error("hadKeyAt")
	}
}

// TestKeyLogFailures: each way a key log can lie is named by its key event.
func TestKeyLogFailures(t *testing.T) {
	a, b2, stranger := testKey(0), testKey(1), testKey(3)
	cases := []struct {
		name  string
		build func(b *keyLogBuilder) []apiclient.AccountKey
		seq   int64
		item  string
	}{
		{"a key added by a stranger's key", func(b *keyLogBuilder) []apiclient.AccountKey {
			b.signUp(a, "a")
			b.addKey(stranger, b2, "add-1")
			return nil
		}, 2, "signer of key " + idOf(b2)},
		{"a key added with another key's signature", func(b *keyLogBuilder) []apiclient.AccountKey {
			b.signUp(a, "a")
			b.addKey(a, b2, "add-1", stranger)
			return nil
		}, 2, "signature of add_key"},
		{"a key added by a retired key", func(b *keyLogBuilder) []apiclient.AccountKey {
			b.signUp(a, "a")
			b.addKey(a, b2, "add-1")
			b.retire(b2, a, "retire-1")
			b.addKey(a, stranger, "add-2")
			return nil
		}, 4, "signer of key " + idOf(stranger)},
		{"a first key signed by another", func(b *keyLogBuilder) []apiclient.AccountKey {
			b.addKey(stranger, a, "add-1")
			return nil
		}, 1, "signer of key " + idOf(a)},
		{"a recovery that keeps a key", func(b *keyLogBuilder) []apiclient.AccountKey {
			b.signUp(a, "a")
			b.addKey(a, b2, "add-1")
			b.recover(stranger, a)
			return nil
		}, 3, "keys retired by the recovery"},
		{"an event's data edited", func(b *keyLogBuilder) []apiclient.AccountKey {
			b.signUp(a, "a")
			b.events[0].Data = json.RawMessage(strings.Replace(string(b.events[0].Data), `"name":"a"`, `"name":"b"`, 1))
			return nil
		}, 1, "key event hash"},
		{"a key listed that no key event added", func(b *keyLogBuilder) []apiclient.AccountKey {
			b.signUp(a, "a")
			return listed(listing{key: a, added: 1}, listing{key: stranger, added: 1})
		}, 1, "key " + idOf(stranger)},
		{"a key of the log not listed", func(b *keyLogBuilder) []apiclient.AccountKey {
			b.signUp(a, "a")
			b.addKey(a, b2, "add-1")
			return listed(listing{key: a, added: 1})
		}, 2, "key " + idOf(b2)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &keyLogBuilder{t: t}
			keys := c.build(b)
			l := replayKeyLog(testAccount, logOrigin, b.events, keys)
			f := l.res.Failure
			if l.res.OK || f == nil || f.Account != testAccount || f.Seq != c.seq || f.Item != c.item {
				t.Fatalf("failure %v, want key event %d: %s", f, c.seq, c.item)
			}
			t.Log(f)
		})
	}
}

// signAction signs an action as the player's device does, a second before its event.
func signAction(t *testing.T, k ed25519.PrivateKey, a signedAction, value string) signedAction {
	t.Helper()
	a.auth.KeyID, a.auth.SignedAt = idOf(k), a.at-1000
	sig, err := a.message(logOrigin, value).Sign(k)
	if err != nil {
		t.Fatal(err)
	}
	if a.sealed() {
		sealed := tournament.SealSignature(sig)
		a.auth.SealedSignature = hex.EncodeToString(sealed[:])
	}
	a.auth.Signature = hex.EncodeToString(sig)
	return a
}

// check runs both steps of an action's check; sig is the transcript's signature of a sealed one.
func check(l *keyLog, a signedAction, value string) *Failure {
	k, f := checkKey(l, a)
	if f != nil || k == nil {
		return f
	}
	var sig *string
	if a.sealed() {
		s := a.auth.Signature
		sig, a.auth.Signature = &s, ""
	}
	return checkSignature(logOrigin, k, a, value, sig)
}

// TestActionSignatures: an action verifies under the key its player had then, and a signature
// copied onto another lobby, game, round, payload or idempotency key, made by a retired or a
// stranger's key, or missing while the player had a key, does not.
func TestActionSignatures(t *testing.T) {
	a, b2, stranger := testKey(0), testKey(1), testKey(3)
	b := &keyLogBuilder{t: t}
	b.signUp(a, "a")
	b.addKey(a, b2, "add-1")
	b.retire(b2, a, "retire-1")
	l := replayKeyLog(testAccount, logOrigin, b.events, listed(listing{key: a, added: 1, retired: 3}, listing{key: b2, added: 2}))
	if l.res.Failure != nil {
		t.Fatal(l.res.Failure)
	}
	const commitment = "cb86442693864466112de9876585a7f068c7c0acfc4aae60b312a4ef297f44ae"
	register := func() signedAction {
		return signedAction{lobby: "0b8e7c6d-5a4f-4e3d-9c2b-1a0f9e8d7c6b", game: "7d6c5b4a-3f2e-4d1c-8b0a-9f8e7d6c5b4a", player: testAccount,
			seq: 3, at: keyEventAt(2) + 5000, typ: tournament.EventPlayerRegistered, bet: 100,
			auth: &tournament.ActionAuth{Action: tournament.ActionRegister, IdempotencyKey: "reg-1"}}
	}
	commit := func() signedAction {
		c := register()
		c.typ, c.round, c.auth.Action, c.auth.IdempotencyKey = tournament.EventMoveCommitted, 2, tournament.ActionCommit, "commit-1"
		return c
	}
	if f := check(l, signAction(t, a, register(), ""), ""); f != nil {
		t.Fatalf("a register signed by the player's key: %v", f)
	}
	if f := check(l, signAction(t, a, commit(), commitment), commitment); f != nil {
		t.Fatalf("a commit signed by the player's key: %v", f)
	}
	unsigned := register()
	unsigned.auth = nil
	if k, f := checkKey(l, unsigned); k != nil || f == nil || f.Item != "signature" {
		t.Errorf("an unsigned action by a player with a key: %v", f)
	}
	// Before the sign-up that bound the account's first key, the account did not exist: an
	// unsigned action then is the operator's, in a lobby it dated back.
	unsigned.at = keyEventAt(1) - 1
	if k, f := checkKey(l, unsigned); k != nil || f == nil || f.Item != "signature" {
		t.Errorf("an unsigned action before the player's sign-up: %v", f)
	}
	// An account made before keys were (its first key added later) could act unsigned until then.
	older := &keyLogBuilder{t: t}
	older.addKey(a, a, "first")
	if l := replayKeyLog(testAccount, logOrigin, older.events, listed(listing{key: a, added: 1})); l.res.Failure != nil {
		t.Fatal(l.res.Failure)
	} else if k, f := checkKey(l, unsigned); k != nil || f != nil {
		t.Errorf("an unsigned action before the first key of an account made without one: %v", f)
	}
	cases := []struct {
		name   string
		action func() signedAction
		value  string
		item   string
	}{
		{"another lobby", func() signedAction {
			x := signAction(t, a, register(), "")
			x.lobby = "1b8e7c6d-5a4f-4e3d-9c2b-1a0f9e8d7c6b"
			return x
		}, "", "signature"},
		{"another game", func() signedAction {
			x := signAction(t, a, register(), "")
			x.game = "8d6c5b4a-3f2e-4d1c-8b0a-9f8e7d6c5b4a"
			return x
		}, "", "signature"},
		{"another round", func() signedAction {
			x := signAction(t, a, commit(), commitment)
			x.round = 3
			return x
		}, commitment, "signature"},
		{"another payload", func() signedAction { return signAction(t, a, commit(), commitment) }, strings.Repeat("0", 64), "signature"},
		{"another bet", func() signedAction {
			x := signAction(t, a, register(), "")
			x.bet = 1000
			return x
		}, "", "signature"},
		{"another idempotency key", func() signedAction {
			x := signAction(t, a, register(), "")
			x.auth.IdempotencyKey = "reg-2"
			return x
		}, "", "signature"},
		{"another action", func() signedAction {
			x := signAction(t, a, register(), "")
			x.typ = tournament.EventPlayerLeft
			return x
		}, "", "signed action"},
		{"a stranger's key", func() signedAction { return signAction(t, stranger, register(), "") }, "", "signing key"},
		{"a key retired before", func() signedAction {
			x := register()
			x.at = keyEventAt(3) + 5000
			return signAction(t, a, x, "")
		}, "", "signing key"},
		{"a key not added yet", func() signedAction {
			x := register()
			x.at = keyEventAt(2) - 5000
			return signAction(t, b2, x, "")
		}, "", "signing key"},
		{"a signature too old for the event", func() signedAction {
			x := signAction(t, a, register(), "")
			x.auth.SignedAt = x.at - tournament.SignatureMaxAge - 1
			return x
		}, "", "signedAt"},
		{"a sealed signature of another signature", func() signedAction {
			x := signAction(t, a, commit(), commitment)
			other := signAction(t, a, register(), "")
			x.auth.Signature = other.auth.Signature
			return x
		}, commitment, "sealed signature"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := check(l, c.action(), c.value)
			if f == nil || f.Item != c.item || f.Lobby == "" || f.Seq != 3 || f.Player != testAccount {
				t.Fatalf("failure %v, want %s", f, c.item)
			}
			t.Log(f)
		})
	}

	s := &signatures{seen: map[replayKey]Failure{}}
	first := signAction(t, a, register(), "")
	if f := s.replayed(first); f != nil {
		t.Fatal(f)
	}
	again := first
	again.lobby, again.seq = "1b8e7c6d-5a4f-4e3d-9c2b-1a0f9e8d7c6b", 9
	if f := s.replayed(again); f == nil || f.Item != "replay" || f.Seq != 9 || !strings.Contains(f.Found, "event 3") {
		t.Fatalf("a signed request seen twice: %v", f)
	}
}

// TestQuickJoinReplayedAcrossRuns: a quick join's signature names no game, so the operator can
// register the player again with it in another game while it is fresh. A run that resumed from
// its --state file after the first game did not read the first event again, and took the second
// as the player's. The state keeps the quick joins of the last two days.
func TestQuickJoinReplayedAcrossRuns(t *testing.T) {
	now := time.Now()
	join := signedAction{lobby: "0b8e7c6d-5a4f-4e3d-9c2b-1a0f9e8d7c6b", game: "7d6c5b4a-3f2e-4d1c-8b0a-9f8e7d6c5b4a", player: testAccount,
		seq: 3, at: now.Add(-time.Hour).UnixMilli(), typ: tournament.EventPlayerRegistered, bet: 100,
		auth: &tournament.ActionAuth{Action: tournament.ActionQuickJoin, IdempotencyKey: "join-1"}}
	first := &signatures{seen: map[replayKey]Failure{}}
	if f := first.replayed(join); f != nil {
		t.Fatal(f)
	}
	// Through the state file, as the next run reads it.
	path := filepath.Join(t.TempDir(), "state.json")
	st := &state{Lobbies: map[string]*Checkpoint{}, QuickJoins: first.keptQuickJoins(now)}
	if err := st.save(path); err != nil {
		t.Fatal(err)
	}
	loaded, err := loadState(path)
	if err != nil {
		t.Fatal(err)
	}
	next := &signatures{seen: map[replayKey]Failure{}}
	next.remember(loaded.QuickJoins)
	if f := next.replayed(join); f != nil {
		t.Fatalf("the first quick join, read again in its own game: %v", f)
	}
	again := join
	again.lobby, again.game, again.seq, again.at = "1b8e7c6d-5a4f-4e3d-9c2b-1a0f9e8d7c6b", "8d6c5b4a-3f2e-4d1c-8b0a-9f8e7d6c5b4a", 7, now.UnixMilli()
	if f := next.replayed(again); f == nil || f.Item != "replay" || !strings.Contains(f.Found, "event 3") {
		t.Fatalf("the quick join replayed in another game, a run later: %v", f)
	}
	// Two days on, the signature is long stale (the server refuses it): the state lets it go.
	if kept := next.keptQuickJoins(now.Add(quickJoinMemory + 2*time.Hour)); len(kept) != 0 {
		t.Fatalf("kept %v two days on", kept)
	}
}

// BenchmarkCheckSignature is rpsverify's cost of one signed action: the message rebuilt and its
// Ed25519 signature verified under the key the player had then.
func BenchmarkCheckSignature(b *testing.B) {
	t := &testing.T{}
	k := testKey(0)
	kb := &keyLogBuilder{t: t}
	kb.signUp(k, "a")
	l := replayKeyLog(testAccount, logOrigin, kb.events, listed(listing{key: k, added: 1}))
	a := signAction(t, k, signedAction{lobby: "0b8e7c6d-5a4f-4e3d-9c2b-1a0f9e8d7c6b", game: "7d6c5b4a-3f2e-4d1c-8b0a-9f8e7d6c5b4a",
		player: testAccount, seq: 3, at: keyEventAt(1) + 5000, typ: tournament.EventPlayerRegistered, bet: 100,
		auth: &tournament.ActionAuth{Action: tournament.ActionRegister, IdempotencyKey: "reg-1"}}, "")
	for b.Loop() {
		if f := check(l, a, ""); f != nil {
			b.Fatal(f)
		}
	}
}

func mustParseTime(t *testing.T, s string) int64 {
	t.Helper()
	at, err := parseTime(s)
	if err != nil {
		t.Fatal(err)
	}
	return at
}
