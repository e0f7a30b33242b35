package tournament

// The rules of players' keys on a player's action (checkSigner), and how its event records the
// signature (ActionAuth).

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"golang.org/x/crypto/blake2b"
)

// ActionAuth is how an action's event records its player's signature (see the contract's
// ActionAuth): the members of the message that the event does not hold otherwise, and the
// signature, or its hash for a sealed value (SealSignature).
type ActionAuth struct {
	Action ActionName `json:"action"`
	// GameID is set only in the audit log, for an admin's act whose signature names a game
	// (AdminActionNamesGame); a player's event names its game itself.
	GameID          GameID `json:"gameId,omitempty"`
	IdempotencyKey  string `json:"idempotencyKey"`
	KeyID           string `json:"keyId"`
	Ruleset         string `json:"ruleset,omitempty"`
	SealedSignature string `json:"sealedSignature,omitempty"`
	Signature       string `json:"signature,omitempty"`
	SignedAt        int64  `json:"signedAt"`
}

// AdminAuth is how an admin's signature of its action is recorded (see the contract's
// AdminAuth): in the event the action wrote, inside what its hash covers (lobby_created,
// next_config_changed, lobby_closed, game_stopped, keys_recovered), so that anyone can check
// which admin key made each act of the operator in the log; and in the admins' audit log. It
// holds every member of the message the event does not: the admin, and the request's body as
// signed.
type AdminAuth struct {
	Action         ActionName `json:"action"`
	Admin          AccountID  `json:"admin"`
	IdempotencyKey string     `json:"idempotencyKey"`
	// GameID is the game a stop or a next config names (AdminActionNamesGame): the lobby's
	// current one when the admin signed, so that the signature cannot stand for another game's.
	GameID GameID `json:"gameId,omitempty"`
	KeyID  string `json:"keyId"`
	// Request is the request's body as the admin sent and signed it, in RFC 8785 form (null
	// for a request with none).
	Request   json.RawMessage `json:"request"`
	Signature string          `json:"signature"`
	SignedAt  int64           `json:"signedAt"`
}

// AdminMessage is the message an admin signs for action, taken on lobby (a lobby's creation
// signs none: it makes the lobby) or account ("": none), with the request's body in RFC 8785
// form (nil: none). The server checks an admin's request against it, and rpsverify an event's
// AdminAuth.
func AdminMessage(origin string, action ActionName, admin AccountID, lobby LobbyID, account AccountID, request []byte) ActionMessage {
	if action == ActionCreateLobby {
		lobby = ""
	}
	return ActionMessage{Origin: origin, Action: action, Player: admin, LobbyID: lobby,
		Payload: ActionPayload{Account: string(account), Request: request}}
}

// Message is the message the admin signed, for the lobby or account the action acted on; its
// signature is Signature's.
func (a *AdminAuth) Message(origin string, lobby LobbyID, account AccountID) ActionMessage {
	m := AdminMessage(origin, a.Action, a.Admin, lobby, account, a.Request)
	m.IdempotencyKey, m.KeyID, m.SignedAt, m.GameID = a.IdempotencyKey, a.KeyID, a.SignedAt, a.GameID
	return m
}

// CreatedLobby is the id of the lobby a signed create_lobby makes, derived from its signature: the
// message names no lobby (there is none yet when the admin signs), so without this the signature
// of one lobby's creation would verify on any lobby's lobby_created. It is a UUID of version 8
// (RFC 9562's custom kind) made of blake2b-256("rps-lobby-v1\n" || the 64 signature bytes).
func (a *AdminAuth) CreatedLobby() (LobbyID, error) {
	sig, err := hex.DecodeString(a.Signature)
	if err != nil {
		return "", fmt.Errorf("signature: %w", err)
	}
	sum := blake2b.Sum256(append([]byte("rps-lobby-v1\n"), sig...))
	var id uuid.UUID
	copy(id[:], sum[:16])
	id[6] = id[6]&0x0f | 0x80 // version 8
	id[8] = id[8]&0x3f | 0x80 // the RFC 9562 variant
	return LobbyID(id.String()), nil
}

// AdminActionNamesGame reports whether an admin's signature of action names the lobby's current
// game: a stop, and a next config, which the current game's end applies. Their signatures would
// otherwise hold for any game of the lobby.
func AdminActionNamesGame(action ActionName) bool {
	return action == ActionStop || action == ActionSetNextConfig
}

// checkAdminGame refuses an admin's signed act whose signature names another game than the
// lobby's current one (it was read before that game ended).
func (o *op) checkAdminGame(auth *AdminAuth) error {
	if auth != nil && AdminActionNamesGame(auth.Action) && auth.GameID != o.game.ID {
		return refuse(CodeStaleSignature, "the signature names game %s, but the lobby's current game is %s: read the lobby and sign again", auth.GameID, o.game.ID)
	}
	return nil
}

// Audited is what the admins' audit log shows of the signature: the request is beside it there.
func (a *AdminAuth) Audited() *ActionAuth {
	return &ActionAuth{Action: a.Action, GameID: a.GameID, IdempotencyKey: a.IdempotencyKey, KeyID: a.KeyID, Signature: a.Signature,
		SignedAt: a.SignedAt}
}

// AdminSignable is an admin's operation whose event (or, for a credit or debit, ledger entries)
// records the admin's signature.
type AdminSignable interface {
	Operation
	// SignedBy is the operation with its admin's signature (nil: unsigned).
	SignedBy(auth *AdminAuth) Operation
}

// auth is the record of the signature in its action's event (nil: unsigned).
func (s *Signed) auth() *ActionAuth {
	if s == nil {
		return nil
	}
	a := &ActionAuth{Action: s.Action, IdempotencyKey: s.IdempotencyKey, KeyID: s.KeyID, Ruleset: s.Ruleset, SignedAt: s.SignedAt}
	if s.Action == ActionCommit || s.Action == ActionReveal {
		sealed := SealSignature(s.Signature)
		a.SealedSignature = hex.EncodeToString(sealed[:])
	} else {
		a.Signature = hex.EncodeToString(s.Signature)
	}
	return a
}

// appendCanonical appends the auth object's RFC 8785 form.
func (a *ActionAuth) appendCanonical(b []byte) ([]byte, bool) {
	return newCanonicalObject(b).str("action", string(a.Action)).optStr("gameId", string(a.GameID)).str("idempotencyKey", a.IdempotencyKey).
		str("keyId", a.KeyID).optStr("ruleset", a.Ruleset).optStr("sealedSignature", a.SealedSignature).
		optStr("signature", a.Signature).int("signedAt", a.SignedAt).end()
}

// signature returns the signature bytes a round's move keeps (nil: unsigned).
func (s *Signed) signature() []byte {
	if s == nil {
		return nil
	}
	return s.Signature
}

// checkSigner applies the rules of players' keys to a player's action on the lobby's current
// game, before any rule of the game: a signature is fresh at the instant the action runs, names the lobby's current game (and round, when
// withRound), and its key is still one of the actor's; an unsigned action is refused from an
// account with a key, and from every account when the service requires keys. Admins, who cannot
// play, are left to the game's own refusal.
func (o *op) checkSigner(now int64, actor Actor, s *Signed, withRound bool) error {
	if actor.Role == RoleAdmin {
		return nil
	}
	if s != nil {
		if err := CheckSignedAt(s.SignedAt, now); err != nil {
			return refuse(CodeSignatureExpired, "%v", err)
		}
	}
	if s != nil && s.GameID != "" && s.GameID != o.game.ID {
		return refuse(CodeStaleSignature, "the signature names game %s, but the lobby's current game is %s: read the lobby and sign again", s.GameID, o.game.ID)
	}
	if s != nil && withRound && s.Round != o.game.Round {
		return refuse(CodeStaleSignature, "the signature names round %d, but the game is in round %d: read the lobby and sign again", s.Round, o.game.Round)
	}
	return checkKeys(o.ctx, o.tx, o.s.requireKeys, actor.ID, s)
}

// checkKeys is the rule of an account's keys for a player's action it signed (s) or not (nil).
func checkKeys(ctx context.Context, tx Tx, required bool, account AccountID, s *Signed) error {
	keyID := ""
	if s != nil {
		keyID = s.KeyID
	}
	keys, err := tx.Keys(ctx, account, keyID)
	if err != nil {
		return fmt.Errorf("read keys: %w", err)
	}
	return keys.Check(required, s != nil, keyID, "player")
}

// KeyState is what the rule of an account's keys reads: how many keys it has active, whether it
// ever had one, and whether the key that signed is one of the active ones.
type KeyState struct {
	Active       int
	Ever         bool
	SignerActive bool
}

// Check is the rule of an account's keys for one of its actions, signed by keyID or not: a key
// that signs must be one of the account's active keys; an account with an active key never acts
// unsigned; and when required, no account does (one that never had a key is told to bind one).
// role names whose actions the setting governs ("player", "admin").
func (k KeyState) Check(required, signed bool, keyID, role string) error {
	switch {
	case signed && !k.SignerActive:
		return refuse(CodeBadSignature, "key %s is not an active key of this account (retired, or never its own)", keyID)
	case !signed && k.Active > 0:
		return refuse(CodeSignatureRequired, "this account has a key, so its actions must be signed: send Rps-Key-Id, Rps-Signed-At and Rps-Signature (see SignedAction in the contract)")
	case !signed && required && k.Ever:
		return refuse(CodeSignatureRequired, "this server requires every %s action to be signed: send Rps-Key-Id, Rps-Signed-At and Rps-Signature (see SignedAction in the contract)", role)
	case !signed && required:
		return refuse(CodeKeyRequired, "this server requires every %s action to be signed, and this account has no key: make an Ed25519 key and bind it with POST /v1/me/keys, then sign each action", role)
	}
	return nil
}
