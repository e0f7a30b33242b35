package api

import (
	"context"
	"net/http"

	"github.com/commitreveal/rps/tournament"
)

// matchAttempts bounds the lobbies a quick join tries when the best ones fill while it joins.
const matchAttempts = 5

// errNoMatch is a quick join that found no game to join. It is not a refusal of the game, so it
// is not stored under an Idempotency-Key: a retry may find a game that opened since.
var errNoMatch = newProblem(http.StatusConflict, ProblemCodeNoMatch, "no joinable game with this bet and ruleset")

func (h *handlers) QuickJoin(ctx context.Context, req QuickJoinRequestObject) (QuickJoinResponseObject, error) {
	who, err := requireAccount(ctx)
	if err != nil {
		return nil, err
	}
	ruleset := ""
	if req.Body.Ruleset != nil {
		ruleset = *req.Body.Ruleset
		if _, ok := h.s.rules.Get(ruleset); !ok {
			return nil, validationProblem("ruleset", "unknown ruleset")
		}
	}
	return h.mutate(ctx, mutation{
		action: "quick_join", caller: who, key: req.Params.IdempotencyKey, body: req.Body, status: http.StatusCreated,
		run: func(ctx context.Context, tx tournament.Tx, _ int64) (any, error) {
			candidates, err := h.s.store.MatchCandidates(ctx, tx, who.ID, req.Body.BetSize, ruleset, matchAttempts)
			if err != nil {
				return nil, err
			}
			for _, id := range candidates {
				// Each lobby's registration acts at an instant read after its lock.
				now, err := h.s.store.LockAt(ctx, tx, id)
				if err != nil {
					return nil, err
				}
				err = h.s.service.Register(ctx, tx, now, actorOf(who), id)
				if refusal, ok := tournament.IsRefusal(err); ok {
					switch refusal.Code {
					case tournament.CodeWrongStage, tournament.CodeLobbyFull, tournament.CodeAlreadyRegistered:
						// The game filled, started or took the caller in since it was chosen: try the next.
						continue
					}
				}
				if err != nil {
					return nil, err
				}
				return lobbyAfter(ctx, tx, now, id, who)
			}
			return nil, errNoMatch
		},
	})
}
