package api

// Players' signatures of their actions (see SignedAction in the contract): the Rps-* headers
// parsed, the signing key looked up, the signed message rebuilt from the request and verified,
// before the action reaches its lobby's committer. What only the lobby's state can tell (that the
// game and round signed for are the current ones, that the key is still active, that an
// unsigned action is allowed, and that the signature is fresh at the instant the action runs) is
// the core's to decide (tournament.Signed).

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	openapi_types "github.com/oapi-codegen/runtime/types"

	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
)

// signatureHeaders are a request's Rps-* headers as the generated parameters carry them (nil:
// absent).
type signatureHeaders struct {
	KeyID     *string
	SignedAt  *int64
	Signature *string
	GameID    *openapi_types.UUID
	Round     *int32
}

// requestSignature is a parsed signature: who signed, when, and for which game and round.
type requestSignature struct {
	keyID     string
	signedAt  int64
	signature []byte
	gameID    tournament.GameID
	round     int
}

// incompleteSignature answers a signature that lacks a part (a header, or the Idempotency-Key it
// binds): a credential that cannot be checked, so 401 bad_signature, whose detail says what is
// missing.
func incompleteSignature(detail string) *problemError {
	return newProblem(http.StatusUnauthorized, ProblemCodeBadSignature, detail)
}

// parse checks the headers' shapes; a request without any of them is unsigned (nil). The
// contract's patterns are checked by the validator before a handler runs; these checks keep the
// rule where it is used.
func (h signatureHeaders) parse() (*requestSignature, error) {
	if h.KeyID == nil && h.SignedAt == nil && h.Signature == nil {
		if h.GameID != nil || h.Round != nil {
			return nil, incompleteSignature("Rps-Game-Id and Rps-Round name what a signature covers; send them with Rps-Key-Id, Rps-Signed-At and Rps-Signature")
		}
		return nil, nil
	}
	switch {
	case h.KeyID == nil:
		return nil, incompleteSignature("a signed request names its key in Rps-Key-Id")
	case h.SignedAt == nil:
		return nil, incompleteSignature("a signed request says when it was signed in Rps-Signed-At (Unix milliseconds)")
	case h.Signature == nil:
		return nil, incompleteSignature("a signed request carries its signature in Rps-Signature")
	}
	sig, err := hex.DecodeString(*h.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize || hex.EncodeToString(sig) != *h.Signature {
		return nil, validationProblem("Rps-Signature", "the signature is 128 lower-case hex characters (64 bytes)")
	}
	if !validKeyID(*h.KeyID) {
		return nil, validationProblem("Rps-Key-Id", "a key id is 16 lower-case hex characters")
	}
	s := &requestSignature{keyID: *h.KeyID, signedAt: *h.SignedAt, signature: sig}
	if h.GameID != nil {
		s.gameID = tournament.GameID(h.GameID.String())
	}
	if h.Round != nil {
		s.round = int(*h.Round)
	}
	return s, nil
}

func validKeyID(id string) bool {
	if len(id) != 16 {
		return false
	}
	for _, c := range id {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// verify checks the signature over m, which holds the request's action, lobby, payload, player
// and idempotency key: the rest (the origin, the key, the instant, the game and the round) comes
// from the signature and the server. A signature that does not verify is bad_signature, quoting
// the message the server rebuilt, so that a client can compare it with its own.
func (s *signatures) verify(ctx context.Context, sig *requestSignature, m tournament.ActionMessage, key ed25519.PublicKey) (tournament.ActionMessage, error) {
	origin, err := s.origin(ctx)
	if err != nil {
		return m, err
	}
	m.Origin, m.KeyID, m.SignedAt, m.GameID, m.Round = origin, sig.keyID, sig.signedAt, sig.gameID, sig.round
	if !m.Verify(key, sig.signature) {
		msg, err := m.Bytes()
		if err != nil {
			return m, validationProblem("Rps-Signed-At", err.Error())
		}
		return m, newProblem(http.StatusUnauthorized, ProblemCodeBadSignature,
			fmt.Sprintf("the signature does not verify with key %s over the message this request stands for: %q", sig.keyID, msg))
	}
	return m, nil
}

// signedAction verifies a player's signature of a lobby action or a quick join (nil: the request
// is unsigned, which the core allows or refuses) and returns it as the core records it. m holds
// the action, lobby, payload and idempotency key.
func (h *handlers) signedAction(ctx context.Context, caller tournament.Account, headers signatureHeaders, m tournament.ActionMessage) (*tournament.Signed, error) {
	sig, err := headers.parse()
	if err != nil || sig == nil {
		return nil, err
	}
	if m.IdempotencyKey == "" {
		return nil, incompleteSignature("a signed action needs an Idempotency-Key: the signature binds it, so that the action cannot be replayed under another")
	}
	if m.LobbyID != "" && sig.gameID == "" {
		return nil, incompleteSignature("a signed action in a lobby names the game it was signed for in Rps-Game-Id (the lobby's current game.id)")
	}
	if (m.Action == tournament.ActionCommit || m.Action == tournament.ActionReveal) && sig.round == 0 {
		return nil, incompleteSignature("a signed commit or reveal names the round it was signed for in Rps-Round")
	}
	if m.Action == tournament.ActionRegister {
		// The message binds the bet the player agreed to pay: the bet of the game it names.
		if m.Payload.Bet, err = h.s.signatures.gameBet(ctx, sig.gameID); err != nil {
			return nil, err
		}
	}
	key, err := h.s.signatures.playerKey(ctx, sig.keyID)
	if err != nil {
		return nil, err
	}
	if key.AccountID != caller.ID {
		return nil, newProblem(http.StatusUnauthorized, ProblemCodeBadSignature, fmt.Sprintf("key %s is not a key of this account", sig.keyID))
	}
	m.Player = caller.ID
	if m, err = h.s.signatures.verify(ctx, sig, m, key.PublicKey); err != nil {
		return nil, err
	}
	return &tournament.Signed{Action: m.Action, KeyID: m.KeyID, SignedAt: m.SignedAt, IdempotencyKey: m.IdempotencyKey,
		Signature: sig.signature, GameID: m.GameID, Round: m.Round, Ruleset: m.Payload.Ruleset}, nil
}

// adminAuth checks an admin's signature of its action and returns it as the action's event and
// the audit log record it (nil: unsigned). The message (tournament.AdminMessage) names the lobby
// acted on, and its payload is the account acted on and the request's body in RFC 8785 form. An
// admin with a key must sign, and with requireAdminKeys every admin must
// (tournament.KeyState.Check); the key's state is read for each action (admins' actions are
// few), so a retired key stops signing at once.
func (h *handlers) adminAuth(ctx context.Context, a action) (*tournament.AdminAuth, error) {
	sig, err := a.adminSignature.parse()
	if err != nil {
		return nil, err
	}
	keyID := ""
	if sig != nil {
		keyID = sig.keyID
	}
	keys, err := h.s.store.KeyState(ctx, a.caller.ID, keyID)
	if err != nil {
		return nil, err
	}
	if err := keys.Check(h.s.requireAdminKeys, sig != nil, keyID, "admin"); err != nil || sig == nil {
		return nil, err
	}
	if a.key == nil {
		return nil, incompleteSignature("a signed action needs an Idempotency-Key: the signature binds it, so that the action cannot be replayed under another")
	}
	action := tournament.ActionName(a.name)
	if tournament.AdminActionNamesGame(action) && sig.gameID == "" {
		return nil, incompleteSignature("a signed " + a.name + " names the lobby's current game, so that it cannot stand for another game's: send Rps-Game-Id with the game.id a read of the lobby shows, as the message's gameId")
	}
	if err := tournament.CheckSignedAt(sig.signedAt, time.Now().UnixMilli()); err != nil {
		return nil, newProblem(http.StatusUnauthorized, ProblemCodeSignatureExpired, err.Error())
	}
	request, _ := ctx.Value(sentBodyKey{}).([]byte)
	if request == nil {
		request = []byte("null")
	}
	if a.body == nil && string(request) != "null" {
		// The signature and the log would record a body the operation never reads.
		return nil, validationProblem("", "this operation takes no request body: send none, and sign null as the payload's request")
	}
	var lobby tournament.LobbyID
	if a.op != nil {
		lobby = a.op.Lobby()
	}
	m := tournament.AdminMessage("", action, a.caller.ID, lobby, a.target, request)
	m.IdempotencyKey = *a.key
	key, err := h.s.signatures.playerKey(ctx, sig.keyID)
	if err != nil {
		return nil, err
	}
	if m, err = h.s.signatures.verify(ctx, sig, m, key.PublicKey); err != nil {
		return nil, err
	}
	return &tournament.AdminAuth{Action: m.Action, Admin: a.caller.ID, IdempotencyKey: m.IdempotencyKey, GameID: m.GameID, KeyID: m.KeyID,
		Request: request, Signature: hex.EncodeToString(sig.signature), SignedAt: m.SignedAt}, nil
}

// sentBodyKey keys an admin request's body as sent, in RFC 8785 form, in its context.
type sentBodyKey struct{}

// signatures holds what checking signatures reads from the store and keeps: the log's origin,
// which never changes once the log exists, players' public keys by id, which never change either
// (whether a key is still active is read with each action's batch: tournament.Tx.Keys), and
// games' bets by id (a game's config never changes once it is open).
type signatures struct {
	store *store.Store

	mu         sync.Mutex
	originSeen string
	keys       immutableCache[string, store.PlayerKey]
	bets       immutableCache[tournament.GameID, int64]
}

// immutableCache keeps values that never change once they exist, read from the store on a miss.
// It holds at most maxCachedEntries: past it, it starts over.
type immutableCache[K comparable, V any] struct {
	mu     sync.Mutex
	values map[K]V
}

const maxCachedEntries = 1 << 16

// get returns the value of key, from memory or from read, which answers a miss (its error is
// returned as it is, and nothing is kept).
func (c *immutableCache[K, V]) get(key K, read func() (V, error)) (V, error) {
	c.mu.Lock()
	v, ok := c.values[key]
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := read()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if c.values == nil || len(c.values) >= maxCachedEntries {
		c.values = make(map[K]V)
	}
	c.values[key] = v
	c.mu.Unlock()
	return v, nil
}

// errNoOrigin answers a signed request before the transparency log exists (rpsd creates it when
// it starts): its origin is part of every signed message.
var errNoOrigin = &problemError{status: http.StatusServiceUnavailable, code: ProblemCodeUnavailable, retryAfter: 1,
	detail: "the server's transparency log does not exist yet, and its origin is part of every signed message; retry shortly"}

func (s *signatures) origin(ctx context.Context) (string, error) {
	s.mu.Lock()
	origin := s.originSeen
	s.mu.Unlock()
	if origin != "" {
		return origin, nil
	}
	st, err := s.store.LogState(ctx)
	if errors.Is(err, tournament.ErrNotFound) {
		return "", errNoOrigin
	}
	if err != nil {
		return "", fmt.Errorf("log origin: %w", err)
	}
	s.mu.Lock()
	s.originSeen = st.Origin
	s.mu.Unlock()
	return st.Origin, nil
}

// playerKey returns the key with id keyID, from memory or the store; an unknown key is
// bad_signature.
func (s *signatures) playerKey(ctx context.Context, keyID string) (store.PlayerKey, error) {
	return s.keys.get(keyID, func() (store.PlayerKey, error) {
		k, err := s.store.PlayerKey(ctx, keyID)
		if errors.Is(err, tournament.ErrNotFound) {
			return k, newProblem(http.StatusUnauthorized, ProblemCodeBadSignature, fmt.Sprintf("no account has a key with id %s", keyID))
		}
		if err != nil {
			return k, fmt.Errorf("player key %s: %w", keyID, err)
		}
		// Kept whatever its state: the account and the public key of an id never change.
		k.RetiredAt = 0
		return k, nil
	})
}

// gameBet returns the bet of the game with id game, from memory or the store; no such game is
// stale_signature (the signature names a game this lobby does not have).
func (s *signatures) gameBet(ctx context.Context, game tournament.GameID) (int64, error) {
	return s.bets.get(game, func() (int64, error) {
		g, err := s.store.Game(ctx, game)
		if errors.Is(err, tournament.ErrNotFound) {
			return 0, newProblem(http.StatusConflict, ProblemCodeStaleSignature, fmt.Sprintf("the signature names game %s, which does not exist", game))
		}
		if err != nil {
			return 0, fmt.Errorf("game %s: %w", game, err)
		}
		return g.Config.BetSize, nil
	})
}
