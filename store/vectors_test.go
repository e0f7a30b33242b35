package store

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/commitreveal/rps/tournament"
)

var update = flag.Bool("update", false, "rewrite testdata/events.json")

// eventVectors is the file other implementations (the Android client) check their hash chain
// and digest code against.
type eventVectors struct {
	Comment string         `json:"comment"`
	Events  []vectorEvent  `json:"events"`
	Digests []vectorDigest `json:"digests"`
}

type vectorEvent struct {
	Seq       int64           `json:"seq"`
	Type      string          `json:"type"`
	LobbyID   string          `json:"lobbyId"`
	GameID    *string         `json:"gameId"`
	At        string          `json:"at"`
	Data      json.RawMessage `json:"data"`
	PrevHash  string          `json:"prevHash"`
	Hash      string          `json:"hash"`
	Canonical string          `json:"canonical"`
}

type vectorDigest struct {
	Values []vectorValue `json:"values"`
	// Salt is the salt of a salted digest (moves_closed's), absent for an unsalted one.
	Salt   string `json:"salt,omitempty"`
	Digest string `json:"digest"`
}

type vectorValue struct {
	Player string `json:"player"`
	Value  string `json:"value"`
}

// TestEventVectors seals a fixed log and checks it against testdata/events.json (rewritten with
// -update): the canonical form, the chain and the stage digests, including strings that RFC 8785
// escapes differently from Go's encoder defaults.
func TestEventVectors(t *testing.T) {
	t.Parallel()
	const lobby = "5a1f0c1e-8d4b-4c55-9a43-2f1d0e7b6c11"
	const game = "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"
	const alice = "2b9c7e4a-3f61-4d2a-9c0e-8a5b1d7f3e20"
	const bob = "0c1d2e3f-4a5b-4c6d-8e7f-901a2b3c4d5e"
	cfg := tournament.DefaultConfig()
	// Fixed values, not whatever the defaults are today: the vectors must never change.
	cfg.BetSize, cfg.PlayersCountLimit, cfg.MaxRounds = 100, 2, 0
	at := int64(1_735_732_800_000) // 2025-01-01T12:00:00.000Z
	log := []tournament.Event{
		{Type: tournament.EventLobbyCreated, LobbyID: lobby, At: at, Data: &tournament.LobbyCreatedData{Name: "Friday <night> & \"friends\" \u2028 ü", Config: cfg}},
		{Type: tournament.EventGameOpened, LobbyID: lobby, GameID: game, At: at, Data: &tournament.GameOpenedData{Number: 1, Config: cfg, RulesetHash: "9cd1769e88ab48e63c79c483a6314ce34f9c117cf4d67aa400ef1d84db64f63a"}},
		{Type: tournament.EventPlayerRegistered, LobbyID: lobby, GameID: game, At: at + 1, Data: &tournament.PlayerRegisteredData{Player: alice, Order: 1, Players: 1, Pot: 100, Deadline: at + 60_001}},
		{Type: tournament.EventGameStopped, LobbyID: lobby, GameID: game, At: at + 2, Data: &tournament.GameStoppedData{Reason: "tab\there, emoji 🎲", Stage: tournament.StageRegistration, Amount: 100, Players: 1, Share: 100}},
	}
	var got eventVectors
	got.Comment = "Events sealed by tournament.Seal: hash = blake2b-256(prevHash || canonical), canonical = RFC 8785 JSON of {seq,type,lobbyId,gameId,at,data}. Digests: blake2b-256 of the canonical JSON array of {player,value} sorted bytewise by player; salted (moves_closed's): blake2b-256(salt || array), salt the 32 bytes whose hex is given."
	var prev tournament.LoggedEvent
	for _, e := range log {
		le, err := tournament.Seal(prev, e)
		if err != nil {
			t.Fatal(err)
		}
		v := vectorEvent{
			Seq: le.Seq, Type: string(le.Type), LobbyID: string(le.LobbyID), At: tournament.FormatTime(le.At),
			Data: le.Data, PrevHash: hex.EncodeToString(le.PrevHash[:]), Hash: hex.EncodeToString(le.Hash[:]),
		}
		if le.GameID != "" {
			id := string(le.GameID)
			v.GameID = &id
		}
		canonical, err := tournament.Canonical(v.canonicalObject())
		if err != nil {
			t.Fatal(err)
		}
		v.Canonical = string(canonical)
		got.Events = append(got.Events, v)
		prev = le
	}
	commitments := []vectorValue{{bob, "b34c1092cdce02200b7eaa684af4563d0644b46aa2ac115dec287bd62ca268de"}, {alice, "cb86442693864466112de9876585a7f068c7c0acfc4aae60b312a4ef297f44ae"}}
	const salt = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	for _, c := range []struct {
		values []vectorValue
		salt   string
	}{
		{values: []vectorValue{}},
		{values: commitments},
		{values: []vectorValue{{bob, "4pass12"}, {alice, "0pass12"}}},
		{values: commitments, salt: salt},
	} {
		d := tournament.NewDigester()
		if c.salt != "" {
			s, err := tournament.ParseSalt(c.salt)
			if err != nil {
				t.Fatal(err)
			}
			d = tournament.NewSaltedDigester(s)
		}
		sorted := append([]vectorValue(nil), c.values...)
		if len(sorted) == 2 && sorted[0].Player > sorted[1].Player {
			sorted[0], sorted[1] = sorted[1], sorted[0]
		}
		for _, v := range sorted {
			if err := d.Add(tournament.AccountID(v.Player), v.Value); err != nil {
				t.Fatal(err)
			}
		}
		sum, _ := d.Sum()
		got.Digests = append(got.Digests, vectorDigest{Values: sorted, Salt: c.salt, Digest: sum})
	}

	out, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, '\n')
	const path = "testdata/events.json"
	if *update {
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./store -run TestEventVectors -update)", err)
	}
	if !bytes.Equal(want, out) {
		t.Fatalf("%s is stale: the hash chain or digest changed (run with -update only if that is intended)", path)
	}
}

// canonicalObject is the object whose canonical form the chain hashes.
func (v vectorEvent) canonicalObject() any {
	return struct {
		Seq     int64           `json:"seq"`
		Type    string          `json:"type"`
		LobbyID string          `json:"lobbyId"`
		GameID  *string         `json:"gameId"`
		At      string          `json:"at"`
		Data    json.RawMessage `json:"data"`
	}{v.Seq, v.Type, v.LobbyID, v.GameID, v.At, v.Data}
}
