package store

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/commitreveal/rps/tournament"
)

// testKey is a player's key pair in a test.
type testKey struct {
	pub  ed25519.PublicKey
	priv ed25519.PrivateKey
	id   string
}

func newTestKey(t *testing.T) testKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return testKey{pub: pub, priv: priv, id: tournament.KeyID(pub)}
}

// sig is a signature by k as a request carries it, made now (the store does not verify its bytes:
// the API does, before the store checks that k may sign the change and that it is fresh).
func (k testKey) sig(idem string) tournament.KeySignature {
	return tournament.KeySignature{KeyID: k.id, SignedAt: time.Now().UnixMilli(), Signature: ed25519.Sign(k.priv, []byte(idem)), IdempotencyKey: idem}
}

func keyIdem(account tournament.AccountID, route, key string) *IdempotencyKey {
	hash := sha256.Sum256([]byte(route + key))
	return &IdempotencyKey{AccountID: account, Method: "POST", Route: route, Key: key, RequestHash: hash[:]}
}

// keyRefusal is the refusal code of a key change's answer (or of its error).
func keyRefusal(t *testing.T, a Answer, err error) tournament.Code {
	t.Helper()
	code, err := answerCode(a, err)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// answerCode is the refusal code of a key change's answer, or its error when it failed.
func answerCode(a Answer, err error) (tournament.Code, error) {
	switch code := refusalCode(err); {
	case code != "":
		return code, nil
	case err != nil:
		return "", err
	case a.Result.Refusal != nil:
		return a.Result.Refusal.Code, nil
	}
	return "", nil
}

// checkKeyLog checks an account's key log as a verifier would: every hash recomputes, every
// event links to the one before, and the keys' state agrees with the account's counters.
func checkKeyLog(t *testing.T, s *Store, account tournament.AccountID) KeyLog {
	t.Helper()
	ctx := context.Background()
	kl, err := s.KeyLog(ctx, account, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var prev [32]byte
	for i, e := range kl.Events {
		if e.Seq != int64(i+1) || e.PrevHash != prev {
			t.Fatalf("key event %d: seq %d, prevHash %x after %x", i+1, e.Seq, e.PrevHash, prev)
		}
		if h, err := tournament.KeyEventHash(e.KeyEvent); err != nil || h != e.Hash {
			t.Fatalf("key event %d: hash %x recomputes as %x (%v)", e.Seq, e.Hash, h, err)
		}
		prev = e.Hash
	}
	if n := len(kl.Events); n > 0 && (kl.HeadSeq != int64(n) || kl.HeadHash != prev) {
		t.Fatalf("head %d %x, log ends at %d %x", kl.HeadSeq, kl.HeadHash, n, prev)
	}
	var active, seq int64
	if err := s.pool.QueryRow(ctx, `SELECT active_keys, key_seq FROM accounts WHERE id = $1`, account).Scan(&active, &seq); err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, k := range kl.Keys {
		if k.RetiredSeq == 0 {
			want++
		}
	}
	if active != want || seq != kl.HeadSeq {
		t.Fatalf("account: active_keys %d, key_seq %d; keys: %d active, log of %d", active, seq, want, kl.HeadSeq)
	}
	return kl
}

func eventData[T any](t *testing.T, e LoggedKeyEvent) T {
	t.Helper()
	var d T
	if err := json.Unmarshal(e.Data, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestKeysBindAddRetireAndRecover: an account born with a key adds a second one signed by the
// first, not one signed by a stranger's key; retires the first, not its last; a recovery by the
// operator retires every key and adds one, marked as the operator's; and the key log's chain
// holds every change. An account that never had a key binds its first one signed by that key.
func TestKeysBindAddRetireAndRecover(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, Options{})
	adm := admin(t, s)
	first, second, stranger, recovered := newTestKey(t), newTestKey(t), newTestKey(t), newTestKey(t)

	a, _, err := s.CreateAccountWithKey(ctx, "alice", SignedKey{PublicKey: first.pub, Signature: first.sig("")})
	if err != nil {
		t.Fatal(err)
	}
	other := player(t, s, "bob", 0)
	if _, err := s.AddKey(ctx, other.ID, SignedKey{PublicKey: stranger.pub, Signature: stranger.sig("s1")}, keyIdem(other.ID, "/me/keys", "s1"), RequestRef{}); err != nil {
		t.Fatal(err)
	}

	add := func(k SignedKey, idem string) tournament.Code {
		answer, err := s.AddKey(ctx, a.ID, k, keyIdem(a.ID, "/me/keys", idem), RequestRef{})
		return keyRefusal(t, answer, err)
	}
	if code := add(SignedKey{PublicKey: second.pub, Signature: stranger.sig("a1")}, "a1"); code != tournament.CodeBadSignature {
		t.Fatalf("a key signed by another account's key: %q, want bad_signature", code)
	}
	if code := add(SignedKey{PublicKey: second.pub, Signature: second.sig("a2")}, "a2"); code != tournament.CodeBadSignature {
		t.Fatalf("a second key signed by itself: %q, want bad_signature", code)
	}
	if code := add(SignedKey{PublicKey: stranger.pub, Signature: first.sig("a3")}, "a3"); code != tournament.CodeKeyTaken {
		t.Fatalf("another account's key: %q, want key_taken", code)
	}
	if code := add(SignedKey{PublicKey: second.pub, Signature: first.sig("a4")}, "a4"); code != "" {
		t.Fatalf("a second key signed by the first: %q", code)
	}
	// A retry under the same idempotency key is replayed, not a second event.
	if answer, err := s.AddKey(ctx, a.ID, SignedKey{PublicKey: second.pub, Signature: first.sig("a4")}, keyIdem(a.ID, "/me/keys", "a4"), RequestRef{}); err != nil || !answer.Replayed {
		t.Fatalf("a retry: %+v, %v", answer, err)
	}

	retire := func(keyID string, by testKey, idem string) tournament.Code {
		answer, err := s.RetireKey(ctx, a.ID, keyID, by.sig(idem), keyIdem(a.ID, "/me/keys/x", idem), RequestRef{})
		return keyRefusal(t, answer, err)
	}
	if code := retire(first.id, stranger, "r1"); code != tournament.CodeBadSignature {
		t.Fatalf("a retirement signed by a stranger: %q", code)
	}
	if code := retire(first.id, second, "r2"); code != "" {
		t.Fatalf("retire the first key with the second: %q", code)
	}
	if code := retire(second.id, second, "r3"); code != tournament.CodeLastKey {
		t.Fatalf("retire the last key: %q, want last_key", code)
	}
	if code := retire(first.id, second, "r4"); code != tournament.CodeNotFound {
		t.Fatalf("retire a retired key: %q, want not_found", code)
	}
	if k, err := s.PlayerKey(ctx, first.id); err != nil || k.AccountID != a.ID || k.RetiredAt == 0 || !k.PublicKey.Equal(first.pub) {
		t.Fatalf("the retired first key: %+v, %v", k, err)
	}

	answer, err := s.RecoverKeys(ctx, adm.ID, a.ID, recovered.pub, "lost phone, id checked", keyIdem(adm.ID, "/admin/keys", "rec"), RequestRef{},
		&Audit{Action: "recover_keys", Target: string(a.ID), Status: 201})
	if code := keyRefusal(t, answer, err); code != "" {
		t.Fatalf("recovery: %q", code)
	}
	kl := checkKeyLog(t, s, a.ID)
	var types []tournament.KeyEventType
	for _, e := range kl.Events {
		types = append(types, e.Type)
	}
	if want := []tournament.KeyEventType{tournament.KeyAdded, tournament.KeyAdded, tournament.KeyRetired, tournament.KeysRecovered}; !slices.Equal(types, want) {
		t.Fatalf("key log %v, want %v", types, want)
	}
	if d := eventData[tournament.KeyAddedData](t, kl.Events[0]); d.Via != tournament.ViaSignUp || d.Signer != first.id || d.Name != "alice" || d.IdempotencyKey != nil {
		t.Fatalf("sign-up's event: %+v", d)
	}
	if d := eventData[tournament.KeyAddedData](t, kl.Events[1]); d.Via != tournament.ViaAddKey || d.Signer != first.id || d.KeyID != second.id || *d.IdempotencyKey != "a4" {
		t.Fatalf("second key's event: %+v", d)
	}
	rec := eventData[tournament.KeysRecoveredData](t, kl.Events[3])
	if rec.KeyID != recovered.id || rec.Admin != adm.ID || !slices.Equal(rec.Retired, []string{second.id}) || rec.Reason != "lost phone, id checked" {
		t.Fatalf("recovery's event: %+v", rec)
	}
	for _, k := range kl.Keys {
		if active := k.RetiredSeq == 0; active != (k.KeyID == recovered.id) || k.Recovery != (k.KeyID == recovered.id) {
			t.Fatalf("after the recovery, key %+v", k)
		}
	}
	if entries, err := s.Audit(ctx, 0, 10); err != nil || len(entries) == 0 || entries[0].Action != "recover_keys" || entries[0].Target != string(a.ID) {
		t.Fatalf("audit: %+v, %v", entries, err)
	}

	// An account without a key binds its first one signed by that key only.
	carol := player(t, s, "carol", 0)
	k := newTestKey(t)
	if a, err := s.AddKey(ctx, carol.ID, SignedKey{PublicKey: k.pub, Signature: first.sig("c1")}, keyIdem(carol.ID, "/me/keys", "c1"), RequestRef{}); keyRefusal(t, a, err) != tournament.CodeBadSignature {
		t.Fatal("a first key signed by another key was bound")
	}
	if a, err := s.AddKey(ctx, carol.ID, SignedKey{PublicKey: k.pub, Signature: k.sig("c2")}, keyIdem(carol.ID, "/me/keys", "c2"), RequestRef{}); keyRefusal(t, a, err) != "" {
		t.Fatal("a self-signed first key was refused")
	}
	checkKeyLog(t, s, carol.ID)
	checkKeyLog(t, s, other.ID)
}

// TestSignUpWithATakenKeyMakesNoAccount: a sign-up whose key is bound to another account is
// refused and leaves no account behind (a refusal otherwise commits its transaction), nor one
// signed by another key.
func TestSignUpWithATakenKeyMakesNoAccount(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, Options{})
	k, other := newTestKey(t), newTestKey(t)
	if _, _, err := s.CreateAccountWithKey(ctx, "first", SignedKey{PublicKey: k.pub, Signature: k.sig("")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateAccountWithKey(ctx, "second", SignedKey{PublicKey: k.pub, Signature: k.sig("")}); refusalCode(err) != tournament.CodeKeyTaken {
		t.Fatalf("a sign-up with a bound key: %v", err)
	}
	if _, _, err := s.CreateAccountWithKey(ctx, "third", SignedKey{PublicKey: other.pub, Signature: k.sig("")}); refusalCode(err) != tournament.CodeBadSignature {
		t.Fatalf("a sign-up signed by another key: %v", err)
	}
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM accounts WHERE name IN ('second', 'third')`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d refused accounts were made (%v)", n, err)
	}
}

// TestConcurrentKeyChangesKeepTheChain: key changes of one account sent at once (its devices)
// each lock the account, so its key log stays one chain and active_keys the count of its keys;
// one public key bound by two accounts at once goes to one of them, the other is refused.
func TestConcurrentKeyChangesKeepTheChain(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, Options{})
	first := newTestKey(t)
	a, _, err := s.CreateAccountWithKey(ctx, "many", SignedKey{PublicKey: first.pub, Signature: first.sig("")})
	if err != nil {
		t.Fatal(err)
	}
	b := player(t, s, "other", 0)
	shared := newTestKey(t)
	const n = 8
	type outcome struct {
		code tournament.Code
		err  error
	}
	outcomes := make(chan outcome, n+2)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			k := newTestKey(t)
			idem := fmt.Sprint("k", i)
			code, err := answerCode(s.AddKey(ctx, a.ID, SignedKey{PublicKey: k.pub, Signature: first.sig(idem)}, keyIdem(a.ID, "/me/keys", idem), RequestRef{}))
			outcomes <- outcome{code, err}
		})
	}
	for _, who := range []tournament.AccountID{a.ID, b.ID} {
		wg.Go(func() {
			signer := first
			if who == b.ID {
				signer = shared // b has no key yet: its first key signs itself
			}
			code, err := answerCode(s.AddKey(ctx, who, SignedKey{PublicKey: shared.pub, Signature: signer.sig("shared")}, keyIdem(who, "/me/keys", "shared"), RequestRef{}))
			outcomes <- outcome{code, err}
		})
	}
	wg.Wait()
	close(outcomes)
	taken := 0
	for o := range outcomes {
		switch c := o.code; {
		case o.err != nil:
			t.Errorf("failed: %v", o.err)
		case c == "":
		case c == tournament.CodeKeyTaken:
			taken++
		default:
			t.Errorf("refused: %s", c)
		}
	}
	if taken != 1 {
		t.Fatalf("the shared key was refused %d times, want once", taken)
	}
	kl := checkKeyLog(t, s, a.ID)
	kb := checkKeyLog(t, s, b.ID)
	if got := len(kl.Keys) + len(kb.Keys); got != 1+n+1 {
		t.Fatalf("%d keys bound, want %d", got, n+2)
	}
}

// TestRefusedRecoveryChangesNothing: a recovery whose new key is bound already (to another
// account, or to this one) is refused before anything changes: the account's keys stay active.
// (The keys were retired before the new key was checked, and a refusal commits.)
func TestRefusedRecoveryChangesNothing(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, Options{})
	adm := admin(t, s)
	mine, theirs := newTestKey(t), newTestKey(t)
	a, _, err := s.CreateAccountWithKey(ctx, "victim", SignedKey{PublicKey: mine.pub, Signature: mine.sig("")})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateAccountWithKey(ctx, "holder", SignedKey{PublicKey: theirs.pub, Signature: theirs.sig("")}); err != nil {
		t.Fatal(err)
	}
	for i, k := range []testKey{theirs, mine} {
		answer, err := s.RecoverKeys(ctx, adm.ID, a.ID, k.pub, "lost phone", keyIdem(adm.ID, "/admin/keys", fmt.Sprint("rec", i)), RequestRef{}, nil)
		if code := keyRefusal(t, answer, err); code != tournament.CodeKeyTaken {
			t.Fatalf("a recovery with a bound key: %q, want key_taken", code)
		}
	}
	kl := checkKeyLog(t, s, a.ID)
	if len(kl.Events) != 1 || len(kl.Keys) != 1 || kl.Keys[0].RetiredSeq != 0 {
		t.Fatalf("after refused recoveries: %+v", kl)
	}
}
