package tournament

import (
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"strconv"
)

// Head is a point of a lobby's log as the server signs it: event Seq has Hash, which commits to
// every event before it. Two validly signed heads that do not lie on one chain prove the log was rewritten.
type Head struct {
	LobbyID LobbyID
	Seq     int64
	Hash    [32]byte
	// At is when the head was signed, in Unix milliseconds.
	At    int64
	KeyID string
}

// headDomain separates head signatures from anything else the key could ever sign.
const headDomain = "rps-signed-head-v1\n"

// SignedMessage is what a head's signature covers: headDomain followed by the RFC 8785 canonical
// JSON of {at, hash, keyId, lobbyId, seq}, with at as FormatTime renders it and hash in
// lower-case hex.
func (h Head) SignedMessage() ([]byte, error) {
	if h.Seq < -maxExactInteger || h.Seq > maxExactInteger {
		return nil, fmt.Errorf("head of lobby %s: seq %d is not an exact JSON number", h.LobbyID, h.Seq)
	}
	// Built by hand (see canonical.go), keys in RFC 8785 order: at, hash, keyId, lobbyId, seq.
	b := make([]byte, 0, 192)
	b = append(b, headDomain...)
	b = append(b, `{"at":`...)
	b = appendCanonicalString(b, FormatTime(h.At))
	b = append(b, `,"hash":"`...)
	b = hex.AppendEncode(b, h.Hash[:])
	b = append(b, `","keyId":`...)
	b = appendCanonicalString(b, h.KeyID)
	b = append(b, `,"lobbyId":`...)
	b = appendCanonicalString(b, string(h.LobbyID))
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, h.Seq, 10)
	return append(b, '}'), nil
}

// Sign signs the head with the private key whose id is h.KeyID.
func (h Head) Sign(key ed25519.PrivateKey) ([]byte, error) {
	msg, err := h.SignedMessage()
	if err != nil {
		return nil, err
	}
	return ed25519.Sign(key, msg), nil
}

// Verify reports whether sig is key's signature of the head.
func (h Head) Verify(key ed25519.PublicKey, sig []byte) bool {
	msg, err := h.SignedMessage()
	return err == nil && len(key) == ed25519.PublicKeySize && ed25519.Verify(key, msg, sig)
}
