package tournament

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"github.com/google/uuid"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

var updateSigned = flag.Bool("update", false, "rewrite testdata/signed_actions.json")

type signedVector struct {
	Action    ActionName      `json:"action"`
	Message   string          `json:"message"`
	Fields    json.RawMessage `json:"fields"`
	Signature string          `json:"signature"`
	// CreatedLobby is the id of the lobby a signed create_lobby makes (AdminAuth.CreatedLobby).
	CreatedLobby LobbyID `json:"createdLobby,omitempty"`
}

type signedVectors struct {
	Comment    string         `json:"comment"`
	Seed       string         `json:"seed"`
	PublicKey  string         `json:"publicKey"`
	KeyID      string         `json:"keyId"`
	Vectors    []signedVector `json:"vectors"`
	SealedHash struct {
		Signature string `json:"signature"`
		Sealed    string `json:"sealed"`
	} `json:"sealedSignature"`
}

func vectorMessages(keyID string) []ActionMessage {
	base := ActionMessage{Origin: vectorOrigin, Player: vectorPlayer, KeyID: keyID, SignedAt: vectorAt}
	with := func(f func(m *ActionMessage)) ActionMessage {
		m := base
		f(&m)
		return m
	}
	return []ActionMessage{
		with(func(m *ActionMessage) {
			m.Action, m.Player = ActionSignUp, ""
			m.Payload = ActionPayload{Name: "Ålice \"A\"", PublicKey: "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"}
		}),
		with(func(m *ActionMessage) {
			m.Action, m.IdempotencyKey = ActionAddKey, "add-key-1"
			m.Payload = ActionPayload{PublicKey: "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c"}
		}),
		with(func(m *ActionMessage) {
			m.Action, m.IdempotencyKey = ActionRetireKey, "retire-1"
			m.Payload = ActionPayload{KeyID: "0123456789abcdef"}
		}),
		with(func(m *ActionMessage) {
			m.Action, m.LobbyID, m.GameID, m.IdempotencyKey = ActionRegister, vectorLobby, vectorGame, "register-1"
			m.Payload = ActionPayload{Bet: 100}
		}),
		with(func(m *ActionMessage) {
			m.Action, m.LobbyID, m.GameID, m.IdempotencyKey = ActionLeave, vectorLobby, vectorGame, "leave-1"
		}),
		with(func(m *ActionMessage) {
			m.Action, m.LobbyID, m.GameID, m.Round, m.IdempotencyKey = ActionCommit, vectorLobby, vectorGame, 1, "commit-1"
			m.Payload = ActionPayload{Commitment: "cb86442693864466112de9876585a7f068c7c0acfc4aae60b312a4ef297f44ae"}
		}),
		with(func(m *ActionMessage) {
			m.Action, m.LobbyID, m.GameID, m.Round, m.IdempotencyKey = ActionReveal, vectorLobby, vectorGame, 1, "reveal-1"
			m.Payload = ActionPayload{Reveal: "0pass12 \u2028\"\\"}
		}),
		with(func(m *ActionMessage) {
			m.Action, m.IdempotencyKey = ActionQuickJoin, "join-1"
			m.Payload = ActionPayload{BetSize: 100, Ruleset: "rpsls"}
		}),
		with(func(m *ActionMessage) {
			m.Action, m.IdempotencyKey = ActionQuickJoin, "join-2"
			m.Payload = ActionPayload{BetSize: 250}
		}),
	}
}

// messageFields is the message as the JSON object its bytes hold, built with encoding/json: the
// hand-built Bytes must be its RFC 8785 form.
func messageFields(t *testing.T, m ActionMessage) []byte {
	t.Helper()
	nullable := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	var payload map[string]any
	switch m.Action {
	case ActionSignUp:
		payload = map[string]any{"name": m.Payload.Name, "publicKey": m.Payload.PublicKey}
	case ActionAddKey:
		payload = map[string]any{"publicKey": m.Payload.PublicKey}
	case ActionRetireKey:
		payload = map[string]any{"keyId": m.Payload.KeyID}
	case ActionRegister:
		payload = map[string]any{"bet": m.Payload.Bet}
	case ActionLeave:
		payload = map[string]any{}
	case ActionCommit:
		payload = map[string]any{"commitment": m.Payload.Commitment}
	case ActionReveal:
		payload = map[string]any{"reveal": m.Payload.Reveal}
	case ActionQuickJoin:
		payload = map[string]any{"betSize": m.Payload.BetSize, "ruleset": nullable(m.Payload.Ruleset)}
	default:
		var request any
		if m.Payload.Request != nil {
			if err := json.Unmarshal(m.Payload.Request, &request); err != nil {
				t.Fatal(err)
			}
		}
		payload = map[string]any{"account": nullable(m.Payload.Account), "request": request}
	}
	var round any
	if m.Round != 0 {
		round = m.Round
	}
	raw, err := json.Marshal(map[string]any{
		"action": m.Action, "gameId": nullable(string(m.GameID)), "idempotencyKey": nullable(m.IdempotencyKey),
		"keyId": m.KeyID, "lobbyId": nullable(string(m.LobbyID)), "origin": m.Origin, "payload": payload,
		"player": nullable(string(m.Player)), "round": round, "signedAt": m.SignedAt,
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := jcs.Transform(raw)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSignedActionVectors pins the signed message of every player action to RFC 8785 (built
// with encoding/json and jcs) and to testdata/signed_actions.json, which the other languages'
// clients check themselves against; and the admins' actions to testdata/signed_admin_actions.json.
func TestSignedActionVectors(t *testing.T) {
	checkSignedVectors(t, signedVectorFile("signed_actions.json"), vectorMessages, 5)
	checkSignedVectors(t, signedVectorFile("signed_admin_actions.json"), adminVectorMessages, -1)
}

func adminVectorMessages(keyID string) []ActionMessage {
	const admin = AccountID("1a2b3c4d-5e6f-4a0b-8c1d-2e3f4a5b6c7d")
	return []ActionMessage{
		{Origin: vectorOrigin, Action: "credit", Player: admin, KeyID: keyID, SignedAt: vectorAt, IdempotencyKey: "credit-1",
			Payload: ActionPayload{Account: string(vectorPlayer), Request: []byte(`{"amount":1000,"memo":"deposit #7"}`)}},
		{Origin: vectorOrigin, Action: "create_lobby", Player: admin, KeyID: keyID, SignedAt: vectorAt, IdempotencyKey: "lobby-1",
			Payload: ActionPayload{Request: []byte(`{"config":{"betSize":100,"playersCountLimit":2},"name":"Friday"}`)}},
		{Origin: vectorOrigin, Action: "close_lobby", Player: admin, LobbyID: vectorLobby, KeyID: keyID, SignedAt: vectorAt, IdempotencyKey: "close-1"},
		{Origin: vectorOrigin, Action: "debit", Player: admin, KeyID: keyID, SignedAt: vectorAt, IdempotencyKey: "debit-1",
			Payload: ActionPayload{Account: string(vectorPlayer), Request: []byte(`{"amount":250}`)}},
		// A stop and a next config name the lobby's current game.
		{Origin: vectorOrigin, Action: "stop", Player: admin, LobbyID: vectorLobby, GameID: vectorGame, KeyID: keyID, SignedAt: vectorAt,
			IdempotencyKey: "stop-1", Payload: ActionPayload{Request: []byte(`{"reason":"table closed early"}`)}},
		{Origin: vectorOrigin, Action: "set_next_config", Player: admin, LobbyID: vectorLobby, GameID: vectorGame, KeyID: keyID, SignedAt: vectorAt,
			IdempotencyKey: "next-1", Payload: ActionPayload{Request: []byte(`{"betSize":50,"playersCountLimit":4,"ruleset":"rps"}`)}},
	}
}

// TestAdminAuthMessage: the message an event's AdminAuth stands for, rebuilt from the event's
// lobby (or the account whose key log holds it), is the one the admin signed, as the vectors
// show it: a lobby's creation names no lobby, though its event is in the lobby it made.
func TestAdminAuthMessage(t *testing.T) {
	for _, m := range adminVectorMessages("7849ac3049680be1") {
		a := &AdminAuth{Action: m.Action, Admin: m.Player, GameID: m.GameID, IdempotencyKey: m.IdempotencyKey, KeyID: m.KeyID,
			Request: m.Payload.Request, SignedAt: m.SignedAt}
		lobby := m.LobbyID
		if m.Action == ActionCreateLobby {
			lobby = vectorLobby
		}
		want, err := m.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		got, err := a.Message(vectorOrigin, lobby, AccountID(m.Payload.Account)).Bytes()
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %s (%v), want %s", m.Action, got, err, want)
		}
	}
}

// signedVectorFile is a file of signed messages that TestSignedActionVectors generates.
func signedVectorFile(name string) vectorFile {
	return vectorFile{name: name, test: "TestSignedActionVectors", flag: "-update", update: updateSigned, changed: "the signed message"}
}

// checkSignedVectors builds the vectors of messages and compares them with file; sealedFrom is
// the index of the vector whose signature the file also shows sealed (-1: none).
func checkSignedVectors(t *testing.T, file vectorFile, messages func(keyID string) []ActionMessage, sealedFrom int) {
	t.Helper()
	key, pub := seedKey(t, rfc8032Seed1)
	v := signedVectors{
		Comment: "Signed actions: message = UTF-8 of \"rps-action-v1\\n\" + RFC 8785 JSON of fields; " +
			"signature = Ed25519(seed's key, message); keyId = first 16 hex of blake2b-256(publicKey). " +
			"sealedSignature = blake2b-256 of the 64 signature bytes. Generated by tournament's TestSignedActionVectors.",
		Seed: rfc8032Seed1, PublicKey: hex.EncodeToString(pub), KeyID: KeyID(pub),
	}
	for _, m := range messages(v.KeyID) {
		msg, err := m.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		fields := messageFields(t, m)
		if want := append([]byte(actionDomain), fields...); !bytes.Equal(msg, want) {
			t.Fatalf("%s: Bytes\n%s\nRFC 8785\n%s", m.Action, msg, want)
		}
		sig, err := m.Sign(key)
		if err != nil {
			t.Fatal(err)
		}
		if !m.Verify(pub, sig) {
			t.Fatalf("%s: own signature does not verify", m.Action)
		}
		vector := signedVector{Action: m.Action, Message: string(msg), Fields: fields, Signature: hex.EncodeToString(sig)}
		if m.Action == ActionCreateLobby {
			if vector.CreatedLobby, err = (&AdminAuth{Signature: vector.Signature}).CreatedLobby(); err != nil {
				t.Fatal(err)
			}
		}
		v.Vectors = append(v.Vectors, vector)
	}
	if sealedFrom >= 0 {
		sealed := SealSignature(mustHex(t, v.Vectors[sealedFrom].Signature))
		v.SealedHash.Signature, v.SealedHash.Sealed = v.Vectors[sealedFrom].Signature, hex.EncodeToString(sealed[:])
	}
	file.check(t, v)
}

// TestSignatureBindsEveryMember: a signature of one message verifies for no message that differs
// in any member (another lobby, game, round, payload, idempotency key, player, origin, instant or
// action).
func TestSignatureBindsEveryMember(t *testing.T) {
	key, pub := seedKey(t, rfc8032Seed1)
	m := vectorMessages(KeyID(pub))[5] // commit
	sig, err := m.Sign(key)
	if err != nil {
		t.Fatal(err)
	}
	changes := map[string]func(m *ActionMessage){
		"lobby": func(m *ActionMessage) { m.LobbyID = "1b8e7c6d-5a4f-4e3d-9c2b-1a0f9e8d7c6b" },
		"game":  func(m *ActionMessage) { m.GameID = "8d6c5b4a-3f2e-4d1c-8b0a-9f8e7d6c5b4a" },
		"round": func(m *ActionMessage) { m.Round = 2 },
		"payload": func(m *ActionMessage) {
			m.Payload.Commitment = "9ce58f3df7e4b407e7d421d2e310e69613ff26164c27d446f76ce0060ce93380"
		},
		"key":        func(m *ActionMessage) { m.IdempotencyKey = "commit-2" },
		"player":     func(m *ActionMessage) { m.Player = "7f1c2a9e-3b7d-4c5e-8f10-2a3b4c5d6e7f" },
		"origin":     func(m *ActionMessage) { m.Origin = "rps.other.example/log" },
		"signedAt":   func(m *ActionMessage) { m.SignedAt++ },
		"action":     func(m *ActionMessage) { m.Action = ActionReveal; m.Payload.Reveal = m.Payload.Commitment },
		"signer key": func(m *ActionMessage) { m.KeyID = "0000000000000000" },
	}
	for name, change := range changes {
		other := m
		change(&other)
		if other.Verify(pub, sig) {
			t.Errorf("a commit's signature verifies with another %s", name)
		}
	}
	if !m.Verify(pub, sig) {
		t.Fatal("the signature does not verify its own message")
	}
}

func TestCheckSignedAt(t *testing.T) {
	const now = int64(1795000000000)
	for _, c := range []struct {
		at int64
		ok bool
	}{
		{now, true}, {now - SignatureMaxAge, true}, {now - SignatureMaxAge - 1, false},
		{now + SignatureMaxSkew, true}, {now + SignatureMaxSkew + 1, false},
	} {
		if err := CheckSignedAt(c.at, now); (err == nil) != c.ok {
			t.Errorf("signed %d ms from now: err %v", c.at-now, err)
		}
	}
}

// TestCreatedLobby: a signed creation's lobby id is a version 8 UUID of its signature's hash, the
// same for the same signature (other languages' verifiers can pin this value) and another for
// another signature.
func TestCreatedLobby(t *testing.T) {
	sig := strings.Repeat("01", 64)
	id, err := (&AdminAuth{Signature: sig}).CreatedLobby()
	if err != nil {
		t.Fatal(err)
	}
	u, err := uuid.Parse(string(id))
	if err != nil || u.Version() != 8 || u.Variant() != uuid.RFC4122 || id != "6d529377-b5dc-8297-8d50-545d173aec51" {
		t.Errorf("lobby %s (%v): version %d, variant %v", id, err, u.Version(), u.Variant())
	}
	other, _ := (&AdminAuth{Signature: strings.Repeat("02", 64)}).CreatedLobby()
	if other == id {
		t.Error("two signatures, one lobby")
	}
	if _, err := (&AdminAuth{Signature: "zz"}).CreatedLobby(); err == nil {
		t.Error("a signature that is not hex made a lobby id")
	}
}
