package api

// Play: registering, leaving, committing and revealing in a lobby's game.

import (
	"context"
	"net/http"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/tournament"
)

func (h *handlers) RegisterPlayer(ctx context.Context, req RegisterPlayerRequestObject) (RegisterPlayerResponseObject, error) {
	id := tournament.LobbyID(req.LobbyId.String())
	return h.lobbyAction(ctx, "register", req.Params.IdempotencyKey, nil, http.StatusCreated, requireAccount, tournament.Register{LobbyID: id})
}

func (h *handlers) LeaveLobby(ctx context.Context, req LeaveLobbyRequestObject) (LeaveLobbyResponseObject, error) {
	id := tournament.LobbyID(req.LobbyId.String())
	return h.lobbyAction(ctx, "leave", req.Params.IdempotencyKey, nil, http.StatusOK, requireAccount, tournament.Leave{LobbyID: id})
}

func (h *handlers) CommitMove(ctx context.Context, req CommitMoveRequestObject) (CommitMoveResponseObject, error) {
	c, err := engine.ParseCommitment(req.Body.Commitment)
	if err != nil {
		return nil, validationProblem("commitment", err.Error())
	}
	id := tournament.LobbyID(req.LobbyId.String())
	return h.lobbyAction(ctx, "commit", req.Params.IdempotencyKey, req.Body, http.StatusOK, requireAccount,
		tournament.Commit{LobbyID: id, Commitment: c})
}

func (h *handlers) RevealMove(ctx context.Context, req RevealMoveRequestObject) (RevealMoveResponseObject, error) {
	// The one check of the reveal's size that a request meets: refused here, before it costs a
	// transaction, and in bytes (the spec's maxLength counts characters, and the server is
	// generated without it: see oapi-codegen-overlay.yaml).
	if err := engine.CheckRevealSize(req.Body.Reveal); err != nil {
		return nil, validationProblem("reveal", err.Error())
	}
	id := tournament.LobbyID(req.LobbyId.String())
	return h.lobbyAction(ctx, "reveal", req.Params.IdempotencyKey, req.Body, http.StatusOK, requireAccount,
		tournament.Reveal{LobbyID: id, Reveal: req.Body.Reveal})
}
