package tournament

// Players' signatures: what a player's key signs for each action, byte for byte, so that an
// action in the log can be checked against the player's key by anyone, as a chain's signed
// transactions can. The server, rpsverify, the bots and the clients all build the message here
// (or, in other languages, from the vectors in testdata/signed_actions.json).

import (
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"strconv"

	"golang.org/x/crypto/blake2b"
)

// ActionName names a signed action in its message.
type ActionName string

// The signed actions. A player's own: signing up with a key, adding and retiring keys, and every
// action that spends the player's money or plays for it.
const (
	ActionSignUp    ActionName = "sign_up"
	ActionAddKey    ActionName = "add_key"
	ActionRetireKey ActionName = "retire_key"
	ActionRegister  ActionName = "register"
	ActionLeave     ActionName = "leave"
	ActionCommit    ActionName = "commit"
	ActionReveal    ActionName = "reveal"
	ActionQuickJoin ActionName = "quick_join"
)

// The admins' actions whose events record their signature (AdminAuth).
const (
	ActionCreateLobby   ActionName = "create_lobby"
	ActionSetNextConfig ActionName = "set_next_config"
	ActionCloseLobby    ActionName = "close_lobby"
	ActionStop          ActionName = "stop"
	ActionRecoverKeys   ActionName = "recover_keys"
)

// AdminActions are the admins' actions an admin's key signs (named as the audit log names them):
// every act of the operator through the API, attributable to the admin key that signed it.
var AdminActions = map[ActionName]bool{
	ActionCreateLobby: true, ActionSetNextConfig: true, ActionCloseLobby: true, ActionStop: true, "credit": true, "debit": true,
	"issue_token": true, "disable_account": true, "enable_account": true, ActionRecoverKeys: true,
}

// actionDomain separates players' signatures from anything else a key could ever sign (a
// signed head's domain is rps-signed-head-v1).
const actionDomain = "rps-action-v1\n"

// Signature freshness: a signature is accepted from SignatureMaxAge before the server's instant
// to SignatureMaxSkew after it (a phone's clock may run ahead). An idempotency key is kept
// longer than a signature is accepted (IdempotencyTTL in store, 24 hours, from the request's
// first arrival), so a signed request replayed later is either answered from its key or refused
// as expired, and never runs twice.
const (
	SignatureMaxAge  = 23 * 60 * 60 * 1000
	SignatureMaxSkew = 5 * 60 * 1000
)

// ActionMessage is what a player's signature covers. Its bytes (Bytes) are actionDomain followed by
// the RFC 8785 canonical JSON of {action, gameId, idempotencyKey, keyId, lobbyId, origin,
// payload, player, round, signedAt}: every member always present, null where the action has
// none (an empty string or a zero round here).
type ActionMessage struct {
	// Origin is the transparency log's origin (GET /v1/log): a signature for one deployment is
	// worth nothing on another.
	Origin string
	Action ActionName
	// Player is the acting account (empty for sign_up, which makes it).
	Player AccountID
	// LobbyID, GameID and Round are where the action plays (empty or 0: none).
	LobbyID LobbyID
	GameID  GameID
	Round   int
	Payload ActionPayload
	// IdempotencyKey is the request's Idempotency-Key (empty for sign_up, which takes none).
	IdempotencyKey string
	// KeyID is the signing key's id (KeyID of its public key).
	KeyID string
	// SignedAt is when the player signed, in Unix milliseconds of its own clock.
	SignedAt int64
}

// ActionPayload is what the action does. The message holds only the members of its action:
//
//	sign_up     {"name", "publicKey"}
//	add_key     {"publicKey"}
//	retire_key  {"keyId"}
//	register    {"bet"}                  the game's bet
//	leave       {}
//	commit      {"commitment"}           64 lower-case hex characters
//	reveal      {"reveal"}               the exact string revealed
//	quick_join  {"betSize", "ruleset"}   ruleset null when the request names none
//	an admin's  {"account", "request"}   the account acted on and the request's body, in RFC 8785
//	                                     form (each null when the action has none)
type ActionPayload struct {
	Name       string
	PublicKey  string
	KeyID      string
	Bet        int64
	Commitment string
	Reveal     string
	BetSize    int64
	Ruleset    string
	// Account and Request are an admin action's: the account it acts on and its request body in
	// RFC 8785 form (nil: none).
	Account string
	Request []byte
}

// appendPayload appends the payload's object for action a.
func (p ActionPayload) appendPayload(b []byte, a ActionName) ([]byte, error) {
	o := newCanonicalObject(b)
	switch a {
	case ActionSignUp:
		o.str("name", p.Name).str("publicKey", p.PublicKey)
	case ActionAddKey:
		o.str("publicKey", p.PublicKey)
	case ActionRetireKey:
		o.str("keyId", p.KeyID)
	case ActionRegister:
		o.int("bet", p.Bet)
	case ActionLeave:
	case ActionCommit:
		o.str("commitment", p.Commitment)
	case ActionReveal:
		o.str("reveal", p.Reveal)
	case ActionQuickJoin:
		o.int("betSize", p.BetSize)
		o.key("ruleset")
		o.b = appendNullableString(o.b, p.Ruleset)
	default:
		if !AdminActions[a] {
			return nil, fmt.Errorf("signed action %q: no such action", a)
		}
		o.key("account")
		o.b = appendNullableString(o.b, p.Account)
		o.key("request")
		if p.Request == nil {
			o.b = append(o.b, "null"...)
		} else {
			o.b = append(o.b, p.Request...)
		}
	}
	out, ok := o.end()
	if !ok {
		return nil, fmt.Errorf("signed action %q: a figure is not an exact JSON number", a)
	}
	return out, nil
}

func appendNullableString(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendCanonicalString(b, s)
}

// Bytes is the message a player's key signs.
func (m ActionMessage) Bytes() ([]byte, error) {
	if m.SignedAt < -maxExactInteger || m.SignedAt > maxExactInteger {
		return nil, fmt.Errorf("signed action: signedAt %d is not an exact JSON number", m.SignedAt)
	}
	// Keys in RFC 8785 order: action, gameId, idempotencyKey, keyId, lobbyId, origin, payload,
	// player, round, signedAt.
	b := make([]byte, 0, 320+len(m.Payload.Reveal)+len(m.Payload.Request))
	b = append(b, actionDomain...)
	b = append(b, `{"action":`...)
	b = appendCanonicalString(b, string(m.Action))
	b = append(b, `,"gameId":`...)
	b = appendNullableString(b, string(m.GameID))
	b = append(b, `,"idempotencyKey":`...)
	b = appendNullableString(b, m.IdempotencyKey)
	b = append(b, `,"keyId":`...)
	b = appendCanonicalString(b, m.KeyID)
	b = append(b, `,"lobbyId":`...)
	b = appendNullableString(b, string(m.LobbyID))
	b = append(b, `,"origin":`...)
	b = appendCanonicalString(b, m.Origin)
	b = append(b, `,"payload":`...)
	b, err := m.Payload.appendPayload(b, m.Action)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"player":`...)
	b = appendNullableString(b, string(m.Player))
	b = append(b, `,"round":`...)
	if m.Round == 0 {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, int64(m.Round), 10)
	}
	b = append(b, `,"signedAt":`...)
	b = strconv.AppendInt(b, m.SignedAt, 10)
	return append(b, '}'), nil
}

// Sign signs the message with the key whose id is m.KeyID.
func (m ActionMessage) Sign(key ed25519.PrivateKey) ([]byte, error) {
	msg, err := m.Bytes()
	if err != nil {
		return nil, err
	}
	return ed25519.Sign(key, msg), nil
}

// Verify reports whether sig is key's signature of the message, and key is the one m names.
func (m ActionMessage) Verify(key ed25519.PublicKey, sig []byte) bool {
	if len(key) != ed25519.PublicKeySize || len(sig) != ed25519.SignatureSize || KeyID(key) != m.KeyID {
		return false
	}
	msg, err := m.Bytes()
	return err == nil && ed25519.Verify(key, msg, sig)
}

// KeyID names a public key, a player's or the server's: the first 16 hex characters of its
// blake2b-256.
func KeyID(pub ed25519.PublicKey) string {
	sum := blake2b.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// SealSignature is what an event shows of a signature over a sealed value (a commitment or a
// reveal) until the value is public: blake2b-256 of its 64 bytes. The signature itself would
// let anyone test guesses of the sealed value against the player's key offline, as the value
// would; its hash binds it in the log without that, and the round's transcript shows the
// signature once the value is public.
func SealSignature(sig []byte) [32]byte { return blake2b.Sum256(sig) }

// CheckSignedAt refuses a signature made too long before now, or too far after it.
func CheckSignedAt(signedAt, now int64) error {
	switch {
	case signedAt < now-SignatureMaxAge:
		return fmt.Errorf("signed at %s, more than 23 hours before the server's time %s: sign the request again",
			FormatTime(signedAt), FormatTime(now))
	case signedAt > now+SignatureMaxSkew:
		return fmt.Errorf("signed at %s, more than 5 minutes after the server's time %s: check the device's clock",
			FormatTime(signedAt), FormatTime(now))
	}
	return nil
}

// Signed is a player's signature of an action as the core checks and records it. The API has
// verified the signature over the message for GameID and Round with the key KeyID names, which
// belongs to the actor; the core checks what only the lobby's state can tell: that they are the
// lobby's current game and round, and that the key is still active (see checkSigner).
type Signed struct {
	Action         ActionName
	KeyID          string
	SignedAt       int64
	IdempotencyKey string
	Signature      []byte
	// GameID and Round are the game and round the message names (register, leave: the game;
	// commit, reveal: both; quick_join: neither).
	GameID GameID
	Round  int
	// Ruleset is the ruleset a quick join asked for ("" none).
	Ruleset string
}

// KeyIDOrNone is the signing key's id, or "" for an unsigned action (nil).
func (s *Signed) KeyIDOrNone() string {
	if s == nil {
		return ""
	}
	return s.KeyID
}
