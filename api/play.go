package api

// Play: registering, leaving, committing and revealing in a lobby's game, each signed by its
// player (see signature.go).

import (
	"context"
	"net/http"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/tournament"
)

func (h *handlers) RegisterPlayer(ctx context.Context, req RegisterPlayerRequestObject) (RegisterPlayerResponseObject, error) {
	id := tournament.LobbyID(req.LobbyId.String())
	p := req.Params
	return h.playAction(ctx, "register", p.IdempotencyKey, nil, http.StatusCreated,
		signatureHeaders{p.RpsKeyId, p.RpsSignedAt, p.RpsSignature, p.RpsGameId, nil},
		tournament.ActionMessage{Action: tournament.ActionRegister, LobbyID: id}, func(s *tournament.Signed) tournament.Operation {
			return tournament.Register{LobbyID: id, Signed: s}
		})
}

func (h *handlers) LeaveLobby(ctx context.Context, req LeaveLobbyRequestObject) (LeaveLobbyResponseObject, error) {
	id := tournament.LobbyID(req.LobbyId.String())
	p := req.Params
	return h.playAction(ctx, "leave", p.IdempotencyKey, nil, http.StatusOK,
		signatureHeaders{p.RpsKeyId, p.RpsSignedAt, p.RpsSignature, p.RpsGameId, nil},
		tournament.ActionMessage{Action: tournament.ActionLeave, LobbyID: id}, func(s *tournament.Signed) tournament.Operation {
			return tournament.Leave{LobbyID: id, Signed: s}
		})
}

func (h *handlers) CommitMove(ctx context.Context, req CommitMoveRequestObject) (CommitMoveResponseObject, error) {
	c, err := engine.ParseCommitment(req.Body.Commitment)
	if err != nil {
		return nil, validationProblem("commitment", err.Error())
	}
	id := tournament.LobbyID(req.LobbyId.String())
	p := req.Params
	return h.playAction(ctx, "commit", p.IdempotencyKey, req.Body, http.StatusOK,
		signatureHeaders{p.RpsKeyId, p.RpsSignedAt, p.RpsSignature, p.RpsGameId, p.RpsRound},
		tournament.ActionMessage{Action: tournament.ActionCommit, LobbyID: id, Payload: tournament.ActionPayload{Commitment: req.Body.Commitment}},
		func(s *tournament.Signed) tournament.Operation {
			return tournament.Commit{LobbyID: id, Commitment: c, Signed: s}
		})
}

func (h *handlers) RevealMove(ctx context.Context, req RevealMoveRequestObject) (RevealMoveResponseObject, error) {
	// The one check of the reveal's size that a request meets: refused here, before it costs a
	// transaction or a signature check, and in bytes (the spec's maxLength counts characters, and
	// the server is generated without it: see oapi-codegen-overlay.yaml).
	if err := engine.CheckRevealSize(req.Body.Reveal); err != nil {
		return nil, validationProblem("reveal", err.Error())
	}
	id := tournament.LobbyID(req.LobbyId.String())
	p := req.Params
	return h.playAction(ctx, "reveal", p.IdempotencyKey, req.Body, http.StatusOK,
		signatureHeaders{p.RpsKeyId, p.RpsSignedAt, p.RpsSignature, p.RpsGameId, p.RpsRound},
		tournament.ActionMessage{Action: tournament.ActionReveal, LobbyID: id, Payload: tournament.ActionPayload{Reveal: req.Body.Reveal}},
		func(s *tournament.Signed) tournament.Operation {
			return tournament.Reveal{LobbyID: id, Reveal: req.Body.Reveal, Signed: s}
		})
}

// playAction runs a player's action on a lobby, with its signature (see signature.go), and
// answers with the lobby after it. m is the signed message as the request states it.
func (h *handlers) playAction(ctx context.Context, name string, key *string, body any, status int, headers signatureHeaders,
	m tournament.ActionMessage, op func(*tournament.Signed) tournament.Operation) (rawResponse, error) {
	who, err := requireAccount(ctx)
	if err != nil {
		return rawResponse{}, err
	}
	if key != nil {
		m.IdempotencyKey = *key
	}
	signed, err := h.signedAction(ctx, who, headers, m)
	if err != nil {
		return rawResponse{}, err
	}
	return h.act(ctx, action{name: name, caller: who, key: key, body: body, op: op(signed), signed: signed,
		status: status, view: lobbyResult(who)})
}
