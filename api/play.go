package api

// Play: registering, leaving, committing and revealing in a lobby's game.

import (
	"context"
	"net/http"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/tournament"
)

func (h *handlers) RegisterPlayer(ctx context.Context, req RegisterPlayerRequestObject) (RegisterPlayerResponseObject, error) {
	return h.lobbyMutation(ctx, "register", req.LobbyId, req.Params.IdempotencyKey, nil, http.StatusCreated, requireAccount, h.s.service.Register)
}

func (h *handlers) LeaveLobby(ctx context.Context, req LeaveLobbyRequestObject) (LeaveLobbyResponseObject, error) {
	return h.lobbyMutation(ctx, "leave", req.LobbyId, req.Params.IdempotencyKey, nil, http.StatusOK, requireAccount, h.s.service.Leave)
}

func (h *handlers) CommitMove(ctx context.Context, req CommitMoveRequestObject) (CommitMoveResponseObject, error) {
	c, err := engine.ParseCommitment(req.Body.Commitment)
	if err != nil {
		return nil, validationProblem("commitment", err.Error())
	}
	return h.lobbyMutation(ctx, "commit", req.LobbyId, req.Params.IdempotencyKey, req.Body, http.StatusOK, requireAccount,
		func(ctx context.Context, tx tournament.Tx, now int64, actor tournament.Actor, id tournament.LobbyID) error {
			return h.s.service.Commit(ctx, tx, now, actor, id, c)
		})
}

func (h *handlers) RevealMove(ctx context.Context, req RevealMoveRequestObject) (RevealMoveResponseObject, error) {
	return h.lobbyMutation(ctx, "reveal", req.LobbyId, req.Params.IdempotencyKey, req.Body, http.StatusOK, requireAccount,
		func(ctx context.Context, tx tournament.Tx, now int64, actor tournament.Actor, id tournament.LobbyID) error {
			return h.s.service.Reveal(ctx, tx, now, actor, id, req.Body.Reveal)
		})
}
