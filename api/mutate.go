package api

// State-changing requests: a handler builds an action (a tournament operation with the request's
// idempotency key), the store runs it and commits (store.Act), and the answer is rendered here,
// after the commit, from the operation's result: the same code renders a fresh answer and a
// replay of the result stored under the key.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"
	"golang.org/x/crypto/blake2b"

	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
)

// action is one state-changing request.
type action struct {
	// name names the action in the metrics and the audit log.
	name   string
	caller tournament.Account
	// target names what an admin's action acts on in the audit log: the lobby, or this account
	// when it is set.
	target tournament.AccountID
	key    *string
	// body is the request body, hashed to tell a retry from a different request with the same
	// key, and recorded in the audit log.
	body any
	op   tournament.Operation
	// signed is the player's signature of the action (nil: none).
	signed *tournament.Signed
	// adminSignature is the signature headers of an admin's action (see adminAuth).
	adminSignature signatureHeaders
	// status is the success status, and view renders the success body from the result.
	status int
	view   func(tournament.Result) any
	// field, when set, names a refused input as the request names it.
	field func(string) string
}

// act runs an action and returns its answer, fresh or replayed.
func (h *handlers) act(ctx context.Context, a action) (rawResponse, error) {
	key, err := idempotencyKey(ctx, a.caller.ID, a.key, a.body)
	if err != nil {
		return rawResponse{}, err
	}
	audit, err := h.audit(ctx, a)
	if err != nil {
		return rawResponse{}, err
	}
	if op, ok := a.op.(tournament.AdminSignable); ok && audit != nil && audit.Auth != nil {
		// The action's event records the admin's signature, for anyone reading the log to check.
		a.op = op.SignedBy(audit.Auth)
	}
	answer, err := h.s.store.Act(ctx, store.Action{
		Actor: actorOf(a.caller), Key: key, Request: requestRef(ctx), Op: a.op, Audit: audit, SignerKey: a.signed.KeyIDOrNone(),
	})
	return h.respond(a, answer, err)
}

// adminLobbyAction runs an admin's operation on a lobby, signed with sig (see adminAuth), and
// answers with the lobby after it. A player is refused before anything runs.
func (h *handlers) adminLobbyAction(ctx context.Context, name string, key *string, body any, sig signatureHeaders,
	op tournament.Operation) (rawResponse, error) {
	who, err := requireAdmin(ctx)
	if err != nil {
		return rawResponse{}, err
	}
	return h.act(ctx, action{name: name, caller: who, key: key, body: body, op: op, adminSignature: sig,
		status: http.StatusOK, view: lobbyResult(who)})
}

// adminSignatureOf is the signature headers of an admin's request.
func adminSignatureOf(keyID *string, signedAt *int64, signature *string) signatureHeaders {
	return signatureHeaders{KeyID: keyID, SignedAt: signedAt, Signature: signature}
}

// respond renders the answer to an action after its commit, and counts it.
func (h *handlers) respond(a action, answer store.Answer, err error) (rawResponse, error) {
	switch {
	case errors.Is(err, store.ErrIdempotencyConflict):
		return rawResponse{}, errKeyReused
	case err != nil:
		h.s.metrics.observeAction(a.name, err)
		return rawResponse{}, err
	}
	refusal := answer.Result.Refusal
	if !answer.Replayed {
		var refused error
		if refusal != nil {
			refused = refusal
		}
		h.s.metrics.observeAction(a.name, refused)
	}
	if s := answer.Stored; s != nil {
		return rawResponse{status: s.Status, body: s.Body, replayed: true}, nil
	}
	if refusal != nil {
		return a.refusal(answer, refusal), nil
	}
	body, err := json.Marshal(a.view(answer.Result))
	if err != nil {
		return rawResponse{}, fmt.Errorf("encode response: %w", err)
	}
	return rawResponse{status: a.status, body: body, replayed: answer.Replayed}, nil
}

// refusal renders a refusal as its problem, naming the request it answered.
func (a action) refusal(answer store.Answer, refusal *tournament.Error) rawResponse {
	if a.field != nil && refusal.Field != "" {
		renamed := *refusal
		renamed.Field = a.field(refusal.Field)
		refusal = &renamed
	}
	p := asProblem(refusal)
	return rawResponse{status: p.status, body: renderProblem(p, answer.Request), replayed: answer.Replayed}
}

// audit is the audit log's entry for an admin's action, with the admin's signature of it (see
// adminAuth). Players' actions are the game's own log, so they have none.
func (h *handlers) audit(ctx context.Context, a action) (*store.Audit, error) {
	entry, err := a.auditEntry()
	if err != nil || entry == nil {
		return entry, err
	}
	if entry.Auth, err = h.adminAuth(ctx, a); err != nil {
		return nil, err
	}
	if entry.Auth != nil {
		// The request as signed, so that the signature can be checked against the entry.
		entry.Request = entry.Auth.Request
	}
	return entry, nil
}

// auditEntry is the audit log's entry for an admin's action: the request and the status of its
// answer (nil for a player's).
func (a action) auditEntry() (*store.Audit, error) {
	if a.caller.Role != tournament.RoleAdmin {
		return nil, nil
	}
	request, err := json.Marshal(a.body)
	if err != nil {
		return nil, fmt.Errorf("encode audit request: %w", err)
	}
	target := string(a.target)
	if target == "" && a.op != nil {
		target = string(a.op.Lobby())
	}
	return &store.Audit{Action: a.name, Target: target, Request: request, Status: a.status, Refused: refusalStatus}, nil
}

// requestRef is how an answer names its request.
func requestRef(ctx context.Context) store.RequestRef {
	info := requestInfoOf(ctx)
	return store.RequestRef{ID: info.id, Path: info.path}
}

// errKeyReused answers a request whose Idempotency-Key was used with another request.
var errKeyReused = newProblem(http.StatusConflict, ProblemCodeIdempotencyConflict,
	"this Idempotency-Key was used with a different request")

// idempotencyKey scopes a request's Idempotency-Key (nil: none) to its caller, method and route,
// with a hash of its canonical body.
func idempotencyKey(ctx context.Context, caller tournament.AccountID, key *string, body any) (*store.IdempotencyKey, error) {
	if key == nil {
		return nil, nil
	}
	var route, method string
	if rc := chi.RouteContext(ctx); rc != nil {
		route, method = rc.RoutePattern(), rc.RouteMethod
	}
	canonical, err := canonicalBody(body)
	if err != nil {
		return nil, fmt.Errorf("canonical body: %w", err)
	}
	// The path parameters are part of the request: the same key on another lobby is another request.
	h := blake2b.Sum256(append([]byte(requestInfoOf(ctx).path+"\n"), canonical...))
	return &store.IdempotencyKey{
		AccountID: caller, Method: method, Route: route, Key: *key, RequestHash: h[:],
	}, nil
}

// canonicalBody is the RFC 8785 form of a request body (nil: null), built by hand for the bodies
// of the actions a game is made of (a test holds them to tournament.Canonical): encoding and
// then parsing JSON again for every commit and reveal showed in rpsd's profile.
func canonicalBody(body any) ([]byte, error) {
	switch b := body.(type) {
	case nil:
		return []byte("null"), nil
	case *CommitRequest:
		return append(tournament.AppendJSONString([]byte(`{"commitment":`), b.Commitment), '}'), nil
	case *RevealRequest:
		return append(tournament.AppendJSONString([]byte(`{"reveal":`), b.Reveal), '}'), nil
	}
	return tournament.Canonical(body)
}

// rawResponse is a response already rendered, fresh or replayed. It implements the generated
// response interfaces of every mutating operation.
type rawResponse struct {
	status   int
	body     []byte
	replayed bool
}

func (r rawResponse) visit(w http.ResponseWriter) error {
	contentType := "application/json"
	if r.status >= 400 {
		contentType = "application/problem+json"
	}
	w.Header().Set("Content-Type", contentType)
	if r.replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(r.status)
	_, err := w.Write(r.body)
	return err
}

func (r rawResponse) VisitCreateLobbyResponse(w http.ResponseWriter) error    { return r.visit(w) }
func (r rawResponse) VisitCloseLobbyResponse(w http.ResponseWriter) error     { return r.visit(w) }
func (r rawResponse) VisitSetNextConfigResponse(w http.ResponseWriter) error  { return r.visit(w) }
func (r rawResponse) VisitStopGameResponse(w http.ResponseWriter) error       { return r.visit(w) }
func (r rawResponse) VisitRegisterPlayerResponse(w http.ResponseWriter) error { return r.visit(w) }
func (r rawResponse) VisitLeaveLobbyResponse(w http.ResponseWriter) error     { return r.visit(w) }
func (r rawResponse) VisitCommitMoveResponse(w http.ResponseWriter) error     { return r.visit(w) }
func (r rawResponse) VisitRevealMoveResponse(w http.ResponseWriter) error     { return r.visit(w) }
func (r rawResponse) VisitCreditAccountResponse(w http.ResponseWriter) error  { return r.visit(w) }
func (r rawResponse) VisitDebitAccountResponse(w http.ResponseWriter) error   { return r.visit(w) }
func (r rawResponse) VisitRotateTokenResponse(w http.ResponseWriter) error    { return r.visit(w) }
func (r rawResponse) VisitEnableAccountResponse(w http.ResponseWriter) error  { return r.visit(w) }
func (r rawResponse) VisitDisableAccountResponse(w http.ResponseWriter) error { return r.visit(w) }
func (r rawResponse) VisitQuickJoinResponse(w http.ResponseWriter) error      { return r.visit(w) }
func (r rawResponse) VisitIssueTokenResponse(w http.ResponseWriter) error     { return r.visit(w) }

// lobbyResult renders the lobby after a lobby action, as the caller sees it (as a read of the
// lobby would show it then).
func lobbyResult(who tournament.Account) func(tournament.Result) any {
	return func(r tournament.Result) any {
		return lobbyView(r.Lobby, r.Game, who, store.Caller{Player: r.Player, Move: r.Move}, r.At)
	}
}

// accountResult renders the account a money or account action acted on.
func accountResult(r tournament.Result) any { return accountView(*r.Account) }
