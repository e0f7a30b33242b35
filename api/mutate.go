package api

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

// mutation is one state-changing request: an operation of the core run in one transaction,
// whose outcome (a success or a refusal) is stored with the request's Idempotency-Key, if it has
// one, in that same transaction.
type mutation struct {
	// action names the operation in the metrics.
	action string
	caller tournament.Account
	// lobby is the lobby the operation acts on, locked before the instant is read ("" if none).
	lobby tournament.LobbyID
	// target names what an admin's operation acts on in the audit log: the lobby, or this
	// account when it is set.
	target tournament.AccountID
	key    *string
	// body is the request body, hashed to tell a retry from a different request with the same key.
	body any
	// status is the success status.
	status int
	// run performs the operation and renders the success body (nil for an operation that the
	// store runs itself, whose result goes through outcome and respond).
	run func(ctx context.Context, tx tournament.Tx, now int64) (any, error)
}

// mutate runs a mutation and returns the response to send, replayed or fresh.
func (h *handlers) mutate(ctx context.Context, m mutation) (rawResponse, error) {
	key, err := idempotencyKey(ctx, m)
	if err != nil {
		return rawResponse{}, err
	}
	out, replayed, err := h.s.store.RunIdempotent(ctx, m.caller.ID, m.lobby, key, func(tx tournament.Tx, now int64) (store.Outcome, error) {
		result, err := m.run(ctx, tx, now)
		return m.outcome(ctx, result, err)
	})
	return h.respond(m, out, replayed, err)
}

// outcome is what the mutation's operation returned, as it is stored under the request's key
// and written to the audit log: the success body, or the problem of a refusal. Any other error
// stays an error, and rolls the operation back.
func (m mutation) outcome(ctx context.Context, result any, err error) (store.Outcome, error) {
	if _, refused := tournament.IsRefusal(err); refused {
		// A refusal commits and is an outcome too (see tournament.Error).
		p := asProblem(err)
		out := store.Outcome{Status: p.status, Body: problemBody(ctx, p), Refused: err}
		return out, m.audit(&out)
	} else if err != nil {
		return store.Outcome{}, err
	}
	body, err := json.Marshal(result)
	if err != nil {
		return store.Outcome{}, fmt.Errorf("encode response: %w", err)
	}
	out := store.Outcome{Status: m.status, Body: body}
	return out, m.audit(&out)
}

// respond turns the result of running a mutation into the response to send, and counts it.
func (h *handlers) respond(m mutation, out store.Outcome, replayed bool, err error) (rawResponse, error) {
	switch {
	case errors.Is(err, store.ErrIdempotencyConflict):
		return rawResponse{}, errKeyReused
	case err != nil:
		h.s.metrics.observeAction(m.action, err)
		return rawResponse{}, err
	}
	if !replayed {
		h.s.metrics.observeAction(m.action, out.Refused)
	}
	return rawResponse{status: out.Status, body: out.Body, replayed: replayed}, nil
}

// audit adds to an admin's outcome the entry of the audit log that records it: the request and
// the status it got, a refusal's too. Players' actions are the game's own log; an invalid
// request changes nothing, so it is not recorded.
func (m mutation) audit(out *store.Outcome) error {
	if refusal, ok := tournament.IsRefusal(out.Refused); m.caller.Role != tournament.RoleAdmin || (ok && !refusal.Replayable()) {
		return nil
	}
	detail, err := json.Marshal(struct {
		Request any `json:"request"`
		Status  int `json:"status"`
	}{m.body, out.Status})
	if err != nil {
		return fmt.Errorf("encode audit detail: %w", err)
	}
	target := string(m.lobby)
	if m.target != "" {
		target = string(m.target)
	}
	out.Audit = &store.AuditEntry{Actor: m.caller.ID, Action: m.action, Target: target, Detail: detail}
	return nil
}

// errKeyReused answers a request whose Idempotency-Key was used with another request.
var errKeyReused = newProblem(http.StatusConflict, ProblemCodeIdempotencyConflict,
	"this Idempotency-Key was used with a different request")

// idempotencyKey scopes a request's Idempotency-Key to its caller, method and route, with a hash
// of its canonical body.
func idempotencyKey(ctx context.Context, m mutation) (*store.IdempotencyKey, error) {
	if m.key == nil {
		return nil, nil
	}
	var route, method string
	if rc := chi.RouteContext(ctx); rc != nil {
		route, method = rc.RoutePattern(), rc.RouteMethod
	}
	canonical := []byte("null")
	if m.body != nil {
		var err error
		if canonical, err = tournament.Canonical(m.body); err != nil {
			return nil, fmt.Errorf("canonical body: %w", err)
		}
	}
	// The path parameters are part of the request: the same key on another lobby is another request.
	h := blake2b.Sum256(append([]byte(requestInfoOf(ctx).path+"\n"), canonical...))
	return &store.IdempotencyKey{
		AccountID: m.caller.ID, Method: method, Route: route, Key: *m.key, RequestHash: h[:],
	}, nil
}

// rawResponse is a response already rendered, fresh or replayed from the idempotency store. It
// implements the generated response interfaces of every mutating operation.
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

// lobbyAfter renders a lobby as a mutation's response, read in the mutation's transaction so
// that a replay returns exactly what the first request saw.
func lobbyAfter(ctx context.Context, tx tournament.Tx, now int64, id tournament.LobbyID, who tournament.Account) (Lobby, error) {
	l, g, err := tx.LockLobby(ctx, id)
	if err != nil {
		return Lobby{}, fmt.Errorf("read lobby: %w", err)
	}
	you, err := callerIn(ctx, tx, g, who)
	if err != nil {
		return Lobby{}, err
	}
	return lobbyView(l, g, you, now), nil
}

// callerIn reads the caller's registration and current move in a game, for players.
func callerIn(ctx context.Context, tx tournament.Tx, g tournament.Game, who tournament.Account) (*callerState, error) {
	if who.ID == "" || who.Role != tournament.RolePlayer {
		return nil, nil
	}
	you := &callerState{}
	p, err := tx.Player(ctx, g.ID, who.ID)
	if errors.Is(err, tournament.ErrNotFound) {
		return you, nil
	} else if err != nil {
		return nil, fmt.Errorf("read player: %w", err)
	}
	you.player = &p
	if g.Round == 0 {
		return you, nil
	}
	m, err := tx.RoundMove(ctx, g.ID, g.Round, who.ID)
	if errors.Is(err, tournament.ErrNotFound) {
		return you, nil
	} else if err != nil {
		return nil, fmt.Errorf("read move: %w", err)
	}
	you.move = &m
	return you, nil
}
