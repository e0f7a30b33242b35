package store

import (
	"context"
	"crypto/ed25519"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commitreveal/rps/tournament"
)

// TestReviewRetireThenActInOneBatch: a player retires a key (a lost phone) and, in the same
// committer's transaction, an action signed by that key arrives (whoever holds the phone). The
// batch read every call's key state before any call ran, so the action went on the state from
// before the retirement and was taken, signed by a key the account no longer had. A key change
// in a batch must leave the actions after it to read the keys as it left them.
func TestReviewRetireThenActInOneBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, lobby := batchLobby(t, nil, 60_000)
	p, lost, kept := phoneLost(t, s)
	game := lobbyGame(t, s, lobby)

	var retired, registered tournament.Code
	var retireErr, registerErr error
	runAsBatch(t, s, lobby,
		func() {
			retired, retireErr = answerCode(s.RetireKey(ctx, p.ID, lost.id, kept.sig("retire"), keyIdem(p.ID, "/me/keys/"+lost.id, "retire"), RequestRef{}))
		},
		func() {
			registered, registerErr = answerCode(registerSignedBy(s, p, lost, lobby, game))
		})
	if retireErr != nil || retired != "" {
		t.Fatalf("retire: %s %v", retired, retireErr)
	}
	if registerErr != nil || registered != tournament.CodeBadSignature {
		t.Fatalf("a registration signed by the key just retired, in the same transaction: %q (%v), want bad_signature", registered, registerErr)
	}
	if a, err := s.Account(ctx, p.ID); err != nil || a.Balance != 100 {
		t.Fatalf("balance %d (%v), want 100 untouched", a.Balance, err)
	}
}

// TestReviewKeyEventsGoForward: a key change takes its instant when its transaction begins, and
// the account's lock after; two changes of one account on two replicas (or committers) can then
// append the later event with the earlier instant. Verifiers read "the key the account had then"
// from these instants and fail a key log that goes back in time, so the server never writes one.
func TestReviewKeyEventsGoForward(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var clock atomic.Int64
	base := time.Now().UnixMilli()
	clock.Store(base + 10_000)
	s := newStore(t, Options{Now: clock.Load})
	p := player(t, s, "two-replicas", 0)
	first, second := newTestKey(t), newTestKey(t)
	sig := func(k testKey, idem string) tournament.KeySignature {
		s := k.sig(idem)
		s.SignedAt = base
		return s
	}
	// The first change, on the replica whose transaction began later, takes the lock first.
	a, err := s.AddKey(ctx, p.ID, SignedKey{PublicKey: first.pub, Signature: sig(first, "first")}, keyIdem(p.ID, "/me/keys", "first"), RequestRef{})
	if code := keyRefusal(t, a, err); code != "" {
		t.Fatal(code)
	}
	// The second began before it, and appends after it.
	clock.Store(base)
	a, err = s.AddKey(ctx, p.ID, SignedKey{PublicKey: second.pub, Signature: sig(first, "second")}, keyIdem(p.ID, "/me/keys", "second"), RequestRef{})
	if code := keyRefusal(t, a, err); code != "" {
		t.Fatal(code)
	}
	kl := checkKeyLog(t, s, p.ID)
	if len(kl.Events) != 2 || kl.Events[1].At < kl.Events[0].At {
		t.Fatalf("key events at %s then %s: the log goes back in time", tournament.FormatTime(kl.Events[0].At), tournament.FormatTime(kl.Events[1].At))
	}
}

// phoneLost is a player with 100 and two keys, lost (its first, on the phone it lost) and kept
// (added by lost, on the phone it still has).
func phoneLost(t *testing.T, s *Store) (p tournament.Actor, lost, kept testKey) {
	t.Helper()
	p = player(t, s, "phone-lost", 100)
	lost, kept = newTestKey(t), newTestKey(t)
	for _, k := range []struct {
		key, signer testKey
		idem        string
	}{{lost, lost, "first"}, {kept, lost, "second"}} {
		a, err := s.AddKey(context.Background(), p.ID, SignedKey{PublicKey: k.key.pub, Signature: k.signer.sig(k.idem)},
			keyIdem(p.ID, "/me/keys", k.idem), RequestRef{})
		if code := keyRefusal(t, a, err); code != "" {
			t.Fatalf("add key %s: %s", k.idem, code)
		}
	}
	return p, lost, kept
}

// registerSignedBy registers p in the lobby's game, signed by key k (the store checks the key, not
// the signature's bytes: the API verifies those).
func registerSignedBy(s *Store, p tournament.Actor, k testKey, lobby tournament.LobbyID, game tournament.GameID) (Answer, error) {
	signed := &tournament.Signed{Action: tournament.ActionRegister, KeyID: k.id, SignedAt: time.Now().UnixMilli(), IdempotencyKey: "reg",
		Signature: ed25519.Sign(k.priv, []byte("reg")), GameID: game}
	return s.Act(context.Background(), Action{Actor: p, Key: keyIdem(p.ID, "/lobbies/players", "reg"),
		Op: tournament.Register{LobbyID: lobby, Signed: signed}, SignerKey: k.id})
}
