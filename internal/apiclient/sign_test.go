package apiclient

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/commitreveal/rps/tournament"
)

// signedVectors is tournament/testdata/signed_actions.json, the vectors every client checks.
type signedVectors struct {
	Seed      string `json:"seed"`
	PublicKey string `json:"publicKey"`
	KeyID     string `json:"keyId"`
	Vectors   []struct {
		Action string `json:"action"`
		Fields struct {
			Action         string  `json:"action"`
			GameID         *string `json:"gameId"`
			IdempotencyKey *string `json:"idempotencyKey"`
			LobbyID        *string `json:"lobbyId"`
			Origin         string  `json:"origin"`
			Player         *string `json:"player"`
			Round          *int    `json:"round"`
			SignedAt       int64   `json:"signedAt"`
			Payload        struct {
				Name       string  `json:"name"`
				PublicKey  string  `json:"publicKey"`
				KeyID      string  `json:"keyId"`
				Bet        int64   `json:"bet"`
				Commitment string  `json:"commitment"`
				Reveal     string  `json:"reveal"`
				BetSize    int64   `json:"betSize"`
				Ruleset    *string `json:"ruleset"`
			} `json:"payload"`
		} `json:"fields"`
		Signature string `json:"signature"`
	} `json:"vectors"`
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// TestPlayerKeySignsTheVectors: a key rebuilt from the vectors' seed signs every vector's fields
// into its signature, and the headers carry the key id, the instant, the signature and the
// game and round the message names.
func TestPlayerKeySignsTheVectors(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "tournament", "testdata", "signed_actions.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vs signedVectors
	if err := json.Unmarshal(raw, &vs); err != nil {
		t.Fatal(err)
	}
	seed, _ := hex.DecodeString(vs.Seed)
	k, err := PlayerKeyFromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	if k.PublicKey() != vs.PublicKey || k.ID() != vs.KeyID {
		t.Fatalf("key from seed: public %s id %s, want %s %s", k.PublicKey(), k.ID(), vs.PublicKey, vs.KeyID)
	}
	if len(vs.Vectors) < 8 {
		t.Fatalf("only %d vectors", len(vs.Vectors))
	}
	for _, v := range vs.Vectors {
		f := v.Fields
		m := tournament.ActionMessage{
			Origin: f.Origin, Action: tournament.ActionName(f.Action), Player: tournament.AccountID(str(f.Player)),
			LobbyID: tournament.LobbyID(str(f.LobbyID)), GameID: tournament.GameID(str(f.GameID)),
			IdempotencyKey: str(f.IdempotencyKey),
			Payload: tournament.ActionPayload{Name: f.Payload.Name, PublicKey: f.Payload.PublicKey, KeyID: f.Payload.KeyID,
				Bet: f.Payload.Bet, Commitment: f.Payload.Commitment, Reveal: f.Payload.Reveal, BetSize: f.Payload.BetSize,
				Ruleset: str(f.Payload.Ruleset)},
		}
		if f.Round != nil {
			m.Round = *f.Round
		}
		s, err := k.Sign(m, time.UnixMilli(f.SignedAt))
		if err != nil {
			t.Fatalf("%s: %v", v.Action, err)
		}
		if s.Value != v.Signature {
			t.Errorf("%s: signature %s, want %s", v.Action, s.Value, v.Signature)
		}
		want := []string{HeaderKeyID, vs.KeyID, HeaderSignedAt, "1795000000123", HeaderSignature, v.Signature}
		if f.GameID != nil {
			want = append(want, HeaderGameID, *f.GameID)
		}
		if f.Round != nil {
			want = append(want, HeaderRound, "1")
		}
		if got := s.Pairs(); !slices.Equal(got, want) {
			t.Errorf("%s: headers %q, want %q", v.Action, got, want)
		}
	}
}

// TestPlayerKeyFile: a key written to a file reads back as the same key, and a second write to
// the same path is refused rather than losing the first key.
func TestPlayerKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "alice.key")
	k := NewPlayerKey()
	if err := WritePlayerKey(path, k); err != nil {
		t.Fatal(err)
	}
	back, err := ReadPlayerKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.ID() != k.ID() || back.PublicKey() != k.PublicKey() {
		t.Fatalf("read back %s, wrote %s", back.ID(), k.ID())
	}
	if err := WritePlayerKey(path, NewPlayerKey()); err == nil {
		t.Fatal("a second key overwrote the first")
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v (%v), want 0600", info.Mode(), err)
	}
}
