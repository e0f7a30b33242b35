package tournament

// Players' key logs: each account's keys change only by an event of its own hash chain, built
// by the rule of the lobbies' chains (chainHashOf over an RFC 8785 envelope), and each event is a
// leaf of the transparency log, so that a player (or anyone) can see every key its account ever
// had and who added it: the player, by a signature of a key it had, or the operator.

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// KeyEventType names a change of an account's keys.
type KeyEventType string

// Key event types.
const (
	// KeyAdded: a key the player added, signed by a key it had (or, for an account's first key,
	// by the new key itself).
	KeyAdded KeyEventType = "key_added"
	// KeyRetired: a key the player retired, signed by one of its active keys.
	KeyRetired KeyEventType = "key_retired"
	// KeysRecovered: the operator's recovery for a player who lost every key: every active key
	// retired and a new one added, on an admin's word, with no signature of the player.
	KeysRecovered KeyEventType = "keys_recovered"
)

// Refusals of key changes.
const (
	// CodeLastKey refuses to retire an account's last active key: after the first key, a key can
	// only come from an existing key or a recovery, so an account without one could not act.
	CodeLastKey Code = "last_key"
	// CodeKeyTaken refuses a public key that is bound already (a key belongs to one account,
	// once).
	CodeKeyTaken Code = "key_taken"
	// CodeKeyLimit refuses a player's key past MaxAccountKeys.
	CodeKeyLimit Code = "key_limit"
)

// MaxAccountKeys bounds the keys an account may have over its life, retired ones included: all of
// them are listed, unpaged, with its key log, and a key costs a player one signed request. A new
// device a month for five years fits; an account past it has the operator's recovery left.
const MaxAccountKeys = 64

// How a player's key was added (KeyAddedData.Via).
const (
	ViaSignUp = "sign_up"
	ViaAddKey = "add_key"
)

// KeyEvent is an event of an account's key log.
type KeyEvent struct {
	Seq       int64
	Type      KeyEventType
	AccountID AccountID
	At        int64
	// Data is the canonical JSON of the event's data.
	Data     json.RawMessage
	PrevHash [32]byte
	Hash     [32]byte
}

// KeyEventData is the data of a key event.
type KeyEventData interface {
	KeyEventType() KeyEventType
}

// KeyAddedData is a key_added event's data: the key, how it came (sign_up or add_key) and the
// player's signature that added it, as signed.
type KeyAddedData struct {
	KeyID     string `json:"keyId"`
	PublicKey string `json:"publicKey"`
	Via       string `json:"via"`
	// Signer is the key id that signed (the new key itself for an account's first key).
	Signer    string `json:"signer"`
	SignedAt  int64  `json:"signedAt"`
	Signature string `json:"signature"`
	// IdempotencyKey is the request's (null for sign_up, which takes none).
	IdempotencyKey *string `json:"idempotencyKey"`
	// Name is the sign-up's name as signed (sign_up only).
	Name string `json:"name,omitempty"`
}

// KeyRetiredData is a key_retired event's data.
type KeyRetiredData struct {
	KeyID          string  `json:"keyId"`
	Signer         string  `json:"signer"`
	SignedAt       int64   `json:"signedAt"`
	Signature      string  `json:"signature"`
	IdempotencyKey *string `json:"idempotencyKey"`
}

// KeysRecoveredData is a keys_recovered event's data: the key the operator added, the keys it
// retired, the admin who did it and why, and the admin's signature of it (nil: unsigned).
type KeysRecoveredData struct {
	Auth      *AdminAuth `json:"auth,omitempty"`
	KeyID     string     `json:"keyId"`
	PublicKey string     `json:"publicKey"`
	Retired   []string   `json:"retired"`
	Admin     AccountID  `json:"admin"`
	Reason    string     `json:"reason"`
}

func (*KeyAddedData) KeyEventType() KeyEventType      { return KeyAdded }
func (*KeyRetiredData) KeyEventType() KeyEventType    { return KeyRetired }
func (*KeysRecoveredData) KeyEventType() KeyEventType { return KeysRecovered }

// KeySignature is a player's signature of a key change, as its request carried it.
type KeySignature struct {
	KeyID     string
	SignedAt  int64
	Signature []byte
	// IdempotencyKey is the request's ("" for sign_up).
	IdempotencyKey string
}

// CheckFresh refuses a key change signed outside the window CheckSignedAt allows at now.
func (s KeySignature) CheckFresh(now int64) error {
	if err := CheckSignedAt(s.SignedAt, now); err != nil {
		return &Error{Code: CodeSignatureExpired, Message: err.Error()}
	}
	return nil
}

// nullable is s as a JSON string, or null when empty.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// NewKeyAdded is the data of a key_added event for pub, added via (ViaSignUp, with the name as
// signed, or ViaAddKey) under sig.
func NewKeyAdded(pub ed25519.PublicKey, via, name string, sig KeySignature) *KeyAddedData {
	return &KeyAddedData{
		KeyID: KeyID(pub), PublicKey: hex.EncodeToString(pub), Via: via, Signer: sig.KeyID, SignedAt: sig.SignedAt,
		Signature: hex.EncodeToString(sig.Signature), IdempotencyKey: nullable(sig.IdempotencyKey), Name: name,
	}
}

// NewKeyRetired is the data of a key_retired event for keyID under sig.
func NewKeyRetired(keyID string, sig KeySignature) *KeyRetiredData {
	return &KeyRetiredData{KeyID: keyID, Signer: sig.KeyID, SignedAt: sig.SignedAt,
		Signature: hex.EncodeToString(sig.Signature), IdempotencyKey: nullable(sig.IdempotencyKey)}
}

// CheckKeySigner refuses a key change signed by a key the account may not sign it with: an
// account that never had a key (seq 0) adds its first one signed by that key itself (proof
// that the player holds it); any other change is signed by one of the account's active keys.
func CheckKeySigner(seq int64, active []string, newKey, signer string) error {
	if seq == 0 {
		if newKey == "" || signer != newKey {
			return refuse(CodeBadSignature, "this account has no key yet: its first key signs its own addition (Rps-Key-Id %s), not key %s", newKey, signer)
		}
		return nil
	}
	for _, k := range active {
		if k == signer {
			return nil
		}
	}
	return refuse(CodeBadSignature, "key %s is not an active key of this account: sign with one of its keys", signer)
}

// CheckKeyCount refuses a player's key past MaxAccountKeys, for an account that had keys keys.
func CheckKeyCount(keys int) error {
	if keys >= MaxAccountKeys {
		return refuse(CodeKeyLimit, "this account has had %d keys, the most one may: reuse a device's key (a recovery by the operator is still possible)", keys)
	}
	return nil
}

// CheckRetire refuses to retire a key that is not one of the account's active keys, or the
// last of them.
func CheckRetire(active []string, keyID string) error {
	found := false
	for _, k := range active {
		found = found || k == keyID
	}
	switch {
	case !found:
		return refuse(CodeNotFound, "key %s is not an active key of this account", keyID)
	case len(active) == 1:
		return refuse(CodeLastKey, "key %s is the account's last active key: add the new key first (POST /v1/me/keys), then retire this one", keyID)
	}
	return nil
}

// keyEnvelope is the object whose RFC 8785 form is hashed into an account's key chain.
type keyEnvelope struct {
	AccountID AccountID       `json:"accountId"`
	At        string          `json:"at"`
	Data      json.RawMessage `json:"data"`
	Seq       int64           `json:"seq"`
	Type      KeyEventType    `json:"type"`
}

// SealKeyEvent gives a key change its place in its account's key log: the sequence number after
// prev's and hash = blake2b-256(prevHash || RFC 8785 of {accountId, at, data, seq, type}), as
// Seal does for a lobby's events. For seq 1, prev is the zero KeyEvent.
func SealKeyEvent(prev KeyEvent, account AccountID, at int64, d KeyEventData) (KeyEvent, error) {
	data, err := Canonical(d)
	if err != nil {
		return KeyEvent{}, fmt.Errorf("key event %s data: %w", d.KeyEventType(), err)
	}
	e := KeyEvent{Seq: prev.Seq + 1, Type: d.KeyEventType(), AccountID: account, At: at, Data: data, PrevHash: prev.Hash}
	if prev.Seq == 0 {
		e.PrevHash = [32]byte{}
	}
	e.Hash, err = KeyEventHash(e)
	return e, err
}

// KeyEventHash recomputes a key event's hash from its PrevHash and content; a verifier compares
// it with the stored Hash and with the next event's PrevHash.
func KeyEventHash(e KeyEvent) ([32]byte, error) {
	canonical, err := Canonical(keyEnvelope{AccountID: e.AccountID, At: FormatTime(e.At), Data: e.Data, Seq: e.Seq, Type: e.Type})
	if err != nil {
		return [32]byte{}, fmt.Errorf("key event %d: %w", e.Seq, err)
	}
	return chainHashOf(e.PrevHash, canonical), nil
}
