package tournament

import (
	"bytes"
	"encoding/hex"
	"math/rand/v2"
	"testing"

	"golang.org/x/crypto/blake2b"
)

// trickyStrings exercise every branch of appendCanonicalString.
var trickyStrings = []string{
	"", "plain", `quote " and backslash \`, "\b\f\n\r\t", "\x00\x01\x1f\x7f", "<>&",
	"é ü 中文 🎲", "\u2028\u2029", "\xff\xfe", "a\xc3", "\xed\xa0\x80", "\U0010ffff",
	"2026-11-23T15:04:05.000Z", "0b8a4d2e-5f6a-4c1e-9d3b-7a2f1e0c9b84",
}

// randomStrings are random bytes (mostly invalid UTF-8) and random runes, from a fixed seed.
func randomStrings() []string {
	r := rand.New(rand.NewPCG(17, 17))
	var out []string
	for range 2000 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		out = append(out, string(b))
		runes := make([]rune, r.IntN(6))
		for i := range runes {
			runes[i] = rune(r.IntN(0x110000))
		}
		out = append(out, string(runes))
	}
	return out
}

func TestCanonicalStringMatchesCanonical(t *testing.T) {
	for _, s := range append(trickyStrings, randomStrings()...) {
		want, err := Canonical(s)
		if err != nil {
			t.Fatalf("Canonical(%q): %v", s, err)
		}
		if got := appendCanonicalString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("string %q: got %q, want %q", s, got, want)
		}
	}
}

// TestSealMatchesChainHash: the envelope Seal hashes, built by hand, is the one Canonical makes,
// so the chain's hashes are unchanged and a verifier using ChainHash agrees.
func TestSealMatchesChainHash(t *testing.T) {
	strs := append(trickyStrings, randomStrings()[:200]...)
	for i, s := range strs {
		e := Event{
			Type: EventType(s), LobbyID: LobbyID(strs[(i+1)%len(strs)]), At: int64(i) * 999_983,
			Data: &LobbyCreatedData{Name: s, Config: Config{BetSize: int64(i), PlayersCountLimit: i}},
		}
		if i%2 == 0 {
			e.GameID = GameID(strs[(i+2)%len(strs)])
		}
		prev := LoggedEvent{Seq: int64(i) * 1_000_003, Hash: [32]byte{byte(i), 1, 2}}
		le, err := Seal(prev, e)
		if err != nil {
			t.Fatalf("seal %d: %v", i, err)
		}
		want, err := ChainHash(le)
		if err != nil {
			t.Fatalf("chain hash %d: %v", i, err)
		}
		if le.Hash != want {
			t.Fatalf("event %d (%q): Seal's hash %x, ChainHash %x", i, s, le.Hash, want)
		}
	}
}

// TestSignedMessageIsCanonical: the hand-built message is headDomain and Canonical of the head.
func TestSignedMessageIsCanonical(t *testing.T) {
	for i, s := range append(trickyStrings, randomStrings()[:200]...) {
		h := Head{LobbyID: LobbyID(s), Seq: int64(i) * 7_777_777, Hash: [32]byte{byte(i), 9}, At: int64(i) * 1_234_567, KeyID: s + "k"}
		body, err := Canonical(struct {
			At      string  `json:"at"`
			Hash    string  `json:"hash"`
			KeyID   string  `json:"keyId"`
			LobbyID LobbyID `json:"lobbyId"`
			Seq     int64   `json:"seq"`
		}{FormatTime(h.At), hex.EncodeToString(h.Hash[:]), h.KeyID, h.LobbyID, h.Seq})
		if err != nil {
			t.Fatal(err)
		}
		got, err := h.SignedMessage()
		if err != nil {
			t.Fatal(err)
		}
		if want := append([]byte(headDomain), body...); !bytes.Equal(got, want) {
			t.Fatalf("head %d: got %q, want %q", i, got, want)
		}
	}
}

// TestDigesterMatchesCanonical: the digest is blake2b-256 of the canonical JSON array of
// {player, value}, as Canonical writes it; the salted one, of the salt's 32 bytes followed by it.
func TestDigesterMatchesCanonical(t *testing.T) {
	type elem struct {
		Player AccountID `json:"player"`
		Value  string    `json:"value"`
	}
	strs := append(trickyStrings, randomStrings()[:300]...)
	salt := Salt(blake2b.Sum256([]byte("salt")))
	for _, c := range []struct {
		n      int
		salted bool
	}{{0, false}, {1, false}, {2, false}, {len(strs), false}, {0, true}, {2, true}, {len(strs), true}} {
		n, d, prefix := c.n, NewDigester(), []byte(nil)
		if c.salted {
			d, prefix = NewSaltedDigester(salt), salt[:]
		}
		var elems []elem
		for i := range n {
			e := elem{AccountID(strs[i]), strs[len(strs)-1-i]}
			elems = append(elems, e)
			if err := d.Add(e.Player, e.Value); err != nil {
				t.Fatal(err)
			}
		}
		if elems == nil {
			elems = []elem{}
		}
		canonical, err := Canonical(elems)
		if err != nil {
			t.Fatal(err)
		}
		want := blake2b.Sum256(append(prefix, canonical...))
		got, count := d.Sum()
		if got != hex.EncodeToString(want[:]) || count != n {
			t.Fatalf("%d values (salted %v): digest %s (%d), want %x", n, c.salted, got, count, want)
		}
	}
}

// TestEventDataIsCanonical: the event data built by hand (canonicalData) is what Canonical
// makes, for tricky and random strings and integers up to the largest RFC 8785 writes as itself;
// a larger one falls back to Canonical.
func TestEventDataIsCanonical(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 26))
	n := func() int64 { return r.Int64N(2*maxExactInteger+1) - maxExactInteger }
	i := func() int { return int(r.Int64N(1 << 31)) }
	for k, s := range append(trickyStrings, randomStrings()[:300]...) {
		for _, d := range []EventData{
			&PlayerRegisteredData{Player: AccountID(s), Order: i(), Players: i(), Pot: n(), Deadline: n()},
			&PlayerLeftData{Player: AccountID(s), Players: i(), Pot: n()},
			&RoundStartedData{Round: i(), Players: i(), Deadline: n()},
			&MoveCommittedData{Player: AccountID(s), Round: i(), Committed: i()},
			&MovesClosedData{Round: i(), Committed: i(), Eliminated: i(), Digest: s, Deadline: n()},
			&MoveRevealedData{Player: AccountID(s), Round: i(), Revealed: i()},
			&StageExtendedData{Stage: Stage(s), Round: i(), Deadline: n()},
			&GameFinishedData{Winner: AccountID(s), Amount: n(), Round: i()},
			&GameFinishedData{Winner: AccountID(s), Amount: n(), Round: i(), Salt: s},
			&GameFinishedData{Winner: AccountID(s), Amount: maxExactInteger + int64(k) + 1},
			&PlayerRegisteredData{Player: AccountID(s), Order: i(), Auth: &ActionAuth{Action: ActionQuickJoin, IdempotencyKey: s, KeyID: s, Ruleset: s, Signature: s, SignedAt: n()}},
			&PlayerLeftData{Player: AccountID(s), Auth: &ActionAuth{Action: ActionLeave, IdempotencyKey: s, KeyID: s, Signature: s, SignedAt: n()}},
			&MoveCommittedData{Player: AccountID(s), Round: i(), Auth: &ActionAuth{Action: ActionCommit, IdempotencyKey: s, KeyID: s, SealedSignature: s, SignedAt: n()}},
			&MoveRevealedData{Player: AccountID(s), Round: i(), Auth: &ActionAuth{Action: ActionReveal, IdempotencyKey: s, KeyID: s, SealedSignature: s, SignedAt: n()}},
		} {
			want, err := Canonical(d)
			if err != nil {
				t.Fatal(err)
			}
			got, err := canonicalDataOf(d)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%T %+v: got %s (%v), want %s", d, d, got, err, want)
			}
			if _, ok := d.(canonicalData); !ok {
				t.Fatalf("%T is not built by hand", d)
			}
		}
	}
}
