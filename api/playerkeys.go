package api

// Players' keys (issue 31): binding a key at sign-up or later, retiring one, the operator's
// recovery, and every account's keys and key log. A player's key change is signed by a key the
// player holds (see keySignature); the store checks, under the account's lock, that the key may
// sign it and keeps the change in the account's key log, whose events are leaves of the
// transparency log.

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"net/http"

	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
	"github.com/commitreveal/rps/translog"
)

// keyLogPage is how many key events a page of an account's key log holds.
const keyLogPage = 100

// parsePublicKey reads a public key as the contract writes it: 64 lower-case hex characters.
func parsePublicKey(field, s string) (ed25519.PublicKey, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != ed25519.PublicKeySize || hex.EncodeToString(b) != s {
		return nil, validationProblem(field, "an Ed25519 public key is 64 lower-case hex characters (32 bytes)")
	}
	return b, nil
}

// errKeySignatureRequired answers an unsigned key change.
var errKeySignatureRequired = newProblem(http.StatusUnauthorized, ProblemCodeSignatureRequired,
	"a key change is signed by a key the account holds (an account's first key by itself): send Rps-Key-Id, Rps-Signed-At and Rps-Signature (see SignedAction)")

// keySignature verifies the signature of a key change: m is its message without the signature's
// own fields (origin, key, instant). An unsigned change is refused; a signed one other than a
// sign-up needs an Idempotency-Key (idem), which its message binds, so that it cannot be replayed
// under another. The key that signed is newKey itself when the request names it (a sign-up, or an
// account's first key, which the store checks is the first), else a key of account. Whether that
// key may sign (it is active, or the account has none yet) and whether the signature is fresh are
// the store's to check, at the change's instant under the account's lock.
func (h *handlers) keySignature(ctx context.Context, account tournament.AccountID, headers signatureHeaders, idem *string,
	m tournament.ActionMessage, newKey ed25519.PublicKey) (tournament.KeySignature, error) {
	sig, err := headers.parse()
	switch {
	case err != nil:
		return tournament.KeySignature{}, err
	case sig == nil:
		return tournament.KeySignature{}, errKeySignatureRequired
	case m.Action != tournament.ActionSignUp && idem == nil:
		return tournament.KeySignature{}, incompleteSignature(
			"a key change needs an Idempotency-Key: the signature binds it, so that the change cannot be replayed under another")
	case idem != nil:
		m.IdempotencyKey = *idem
	}
	key := newKey
	if newKey == nil || sig.keyID != tournament.KeyID(newKey) {
		if account == "" {
			return tournament.KeySignature{}, newProblem(http.StatusUnauthorized, ProblemCodeBadSignature,
				fmt.Sprintf("a sign-up is signed by the key it binds (Rps-Key-Id %s), not by key %s", tournament.KeyID(newKey), sig.keyID))
		}
		k, err := h.s.signatures.playerKey(ctx, sig.keyID)
		if err != nil {
			return tournament.KeySignature{}, err
		}
		if k.AccountID != account {
			return tournament.KeySignature{}, newProblem(http.StatusUnauthorized, ProblemCodeBadSignature, fmt.Sprintf("key %s is not a key of this account", sig.keyID))
		}
		key = k.PublicKey
	}
	m.Player = account
	if _, err := h.s.signatures.verify(ctx, sig, m, key); err != nil {
		return tournament.KeySignature{}, err
	}
	return tournament.KeySignature{KeyID: sig.keyID, SignedAt: sig.signedAt, Signature: sig.signature, IdempotencyKey: m.IdempotencyKey}, nil
}

// signedKeyChange verifies the signature of a player's key change (keySignature) and returns it
// with the request's idempotency key scoped to the request.
func (h *handlers) signedKeyChange(ctx context.Context, who tournament.Account, idem *string, body any, headers signatureHeaders,
	m tournament.ActionMessage, newKey ed25519.PublicKey) (tournament.KeySignature, *store.IdempotencyKey, error) {
	sig, err := h.keySignature(ctx, who.ID, headers, idem, m, newKey)
	if err != nil {
		return sig, nil, err
	}
	key, err := idempotencyKey(ctx, who.ID, idem, body)
	return sig, key, err
}

// signUpWithKey creates an account born with the key of the request, which signs it.
func (h *handlers) signUpWithKey(ctx context.Context, req CreateAccountRequestObject) (CreateAccountResponseObject, error) {
	pub, err := parsePublicKey("publicKey", *req.Body.PublicKey)
	if err != nil {
		return nil, err
	}
	headers := signatureHeaders{KeyID: req.Params.RpsKeyId, SignedAt: req.Params.RpsSignedAt, Signature: req.Params.RpsSignature}
	sig, err := h.keySignature(ctx, "", headers, nil, tournament.ActionMessage{Action: tournament.ActionSignUp,
		Payload: tournament.ActionPayload{Name: req.Body.Name, PublicKey: *req.Body.PublicKey}}, pub)
	if err != nil {
		return nil, err
	}
	acct, token, err := h.s.store.CreateAccountWithKey(ctx, req.Body.Name, store.SignedKey{PublicKey: pub, Signature: sig})
	if err != nil {
		return nil, err
	}
	return CreateAccount201JSONResponse{Account: accountView(acct), Token: token}, nil
}

func (h *handlers) AddKey(ctx context.Context, req AddKeyRequestObject) (AddKeyResponseObject, error) {
	who, err := requireAccount(ctx)
	if err != nil {
		return nil, err
	}
	pub, err := parsePublicKey("publicKey", req.Body.PublicKey)
	if err != nil {
		return nil, err
	}
	p := req.Params
	sig, idem, err := h.signedKeyChange(ctx, who, p.IdempotencyKey, req.Body,
		signatureHeaders{KeyID: p.RpsKeyId, SignedAt: p.RpsSignedAt, Signature: p.RpsSignature},
		tournament.ActionMessage{Action: tournament.ActionAddKey, Payload: tournament.ActionPayload{PublicKey: req.Body.PublicKey}}, pub)
	if err != nil {
		return nil, err
	}
	answer, err := h.s.store.AddKey(ctx, who.ID, store.SignedKey{PublicKey: pub, Signature: sig}, idem, requestRef(ctx))
	return h.keysAnswer(ctx, action{name: "add_key", caller: who, status: http.StatusCreated}, who.ID, answer, err)
}

func (h *handlers) RetireKey(ctx context.Context, req RetireKeyRequestObject) (RetireKeyResponseObject, error) {
	who, err := requireAccount(ctx)
	if err != nil {
		return nil, err
	}
	p := req.Params
	sig, idem, err := h.signedKeyChange(ctx, who, p.IdempotencyKey, nil,
		signatureHeaders{KeyID: p.RpsKeyId, SignedAt: p.RpsSignedAt, Signature: p.RpsSignature},
		tournament.ActionMessage{Action: tournament.ActionRetireKey, Payload: tournament.ActionPayload{KeyID: req.KeyId}}, nil)
	if err != nil {
		return nil, err
	}
	answer, err := h.s.store.RetireKey(ctx, who.ID, req.KeyId, sig, idem, requestRef(ctx))
	return h.keysAnswer(ctx, action{name: "retire_key", caller: who, status: http.StatusOK}, who.ID, answer, err)
}

func (h *handlers) RecoverKeys(ctx context.Context, req RecoverKeysRequestObject) (RecoverKeysResponseObject, error) {
	who, err := requireAdmin(ctx)
	if err != nil {
		return nil, err
	}
	pub, err := parsePublicKey("publicKey", req.Body.PublicKey)
	if err != nil {
		return nil, err
	}
	// The reason is shown to everyone in the key log: free text under the one rule for it.
	reason, err := tournament.Text("reason", req.Body.Reason, tournament.MaxStopReasonLength)
	if err != nil {
		return nil, err
	}
	account := tournament.AccountID(req.AccountId.String())
	p := req.Params
	a := action{name: "recover_keys", caller: who, target: account, key: p.IdempotencyKey, body: req.Body, status: http.StatusCreated,
		adminSignature: adminSignatureOf(p.RpsKeyId, p.RpsSignedAt, p.RpsSignature)}
	idem, err := idempotencyKey(ctx, who.ID, req.Params.IdempotencyKey, req.Body)
	if err != nil {
		return nil, err
	}
	audit, err := h.audit(ctx, a)
	if err != nil {
		return nil, err
	}
	if idem == nil {
		// (A signed recovery without one is refused by its signature's check, above.)
		return nil, validationProblem("Idempotency-Key", "a key recovery needs an Idempotency-Key, so that its retry cannot act twice")
	}
	answer, err := h.s.store.RecoverKeys(ctx, who.ID, account, pub, reason, idem, requestRef(ctx), audit)
	return h.keysAnswer(ctx, a, account, answer, err)
}

// keysAnswer renders the answer to a key change: the account's keys and key log after it, or
// the refusal, fresh or replayed.
func (h *handlers) keysAnswer(ctx context.Context, a action, account tournament.AccountID, answer store.Answer, err error) (rawResponse, error) {
	if err == nil && answer.Result.Refusal == nil && answer.Stored == nil {
		view, err := h.accountKeys(ctx, account, 0)
		if err != nil {
			return rawResponse{}, err
		}
		a.view = func(tournament.Result) any { return view }
	}
	return h.respond(a, answer, readErr(err, "account"))
}

func (h *handlers) ListAccountKeys(ctx context.Context, req ListAccountKeysRequestObject) (ListAccountKeysResponseObject, error) {
	var after int64
	if req.Params.After != nil {
		after = *req.Params.After
	}
	view, err := h.accountKeys(ctx, tournament.AccountID(req.AccountId.String()), after)
	if err != nil {
		return nil, err
	}
	return ListAccountKeys200JSONResponse(view), nil
}

// accountKeys reads an account's keys and the page of its key log after seq after.
func (h *handlers) accountKeys(ctx context.Context, account tournament.AccountID, after int64) (AccountKeys, error) {
	kl, err := h.s.store.KeyLog(ctx, account, after, keyLogPage)
	if err != nil {
		return AccountKeys{}, readErr(err, "account")
	}
	out := AccountKeys{AccountId: parseUUID(string(account)), Keys: make([]AccountKey, 0, len(kl.Keys)), Events: make([]KeyEvent, 0, len(kl.Events))}
	for _, k := range kl.Keys {
		v := AccountKey{KeyId: k.KeyID, PublicKey: hex.EncodeToString(k.PublicKey), AddedAt: millisToTime(k.AddedAt), AddedSeq: k.AddedSeq,
			RetiredAt: optionalTime(k.RetiredAt), Recovery: k.Recovery}
		if k.RetiredSeq != 0 {
			v.RetiredSeq = &k.RetiredSeq
		}
		out.Keys = append(out.Keys, v)
	}
	for _, e := range kl.Events {
		v := KeyEvent{Seq: e.Seq, Type: string(e.Type), AccountId: out.AccountId, At: tournament.FormatTime(e.At), Data: e.Data,
			PrevHash: hex.EncodeToString(e.PrevHash[:]), Hash: hex.EncodeToString(e.Hash[:])}
		if e.Logged {
			v.LeafIndex = &e.LeafIndex
		}
		out.Events = append(out.Events, v)
	}
	if kl.HeadSeq > 0 {
		out.Head = &KeyLogHead{Seq: kl.HeadSeq, Hash: hex.EncodeToString(kl.HeadHash[:])}
	}
	return out, nil
}

func (r rawResponse) VisitAddKeyResponse(w http.ResponseWriter) error      { return r.visit(w) }
func (r rawResponse) VisitRetireKeyResponse(w http.ResponseWriter) error   { return r.visit(w) }
func (r rawResponse) VisitRecoverKeysResponse(w http.ResponseWriter) error { return r.visit(w) }

// keyEventProof proves key event seq of an account's key log in the latest published checkpoint,
// or says why not.
func (s *Server) keyEventProof(ctx context.Context, account tournament.AccountID, seq int64) (LogProof, error) {
	c, err := s.publishedCheckpoint(ctx)
	if err != nil {
		return LogProof{}, err
	}
	hash, err := s.store.KeyEventHash(ctx, account, seq)
	if err != nil {
		return LogProof{}, readErr(err, "key event")
	}
	ranges, err := s.store.KeyLogRanges(ctx, account, seq, seq)
	if err != nil {
		return LogProof{}, err
	}
	index, ok := store.LeafOf(ranges, seq)
	if !ok || index >= c.Size {
		return LogProof{}, errNotLogged(fmt.Sprintf("key event %d of account %s is not in the latest published checkpoint (size %d) yet", seq, account, c.Size))
	}
	return s.leafProof(ctx, c, translog.Leaf{Account: string(account), Seq: seq, Hash: hash}, index)
}
