package api

// Quick join: a registration in the best game that fits.

import (
	"context"
	"errors"
	"net/http"

	"github.com/commitreveal/rps/tournament"
)

// matchAttempts bounds the games a quick join tries when the best ones fill while it joins.
const matchAttempts = 5

// errNoMatch is a quick join that found no game to join. It is not a refusal of the game, so it
// is not stored under an Idempotency-Key: a retry may find a game that opened since.
var errNoMatch = newProblem(http.StatusConflict, ProblemCodeNoMatch, "no joinable game with this bet and ruleset")

// QuickJoin registers the caller in the best of the games that fit, trying the next one when a
// game filled, started or took the caller in since it was chosen. Each try is a registration by
// id under the request's Idempotency-Key, locking its lobby first; a skipped try rolls back and
// stores nothing, so the key keeps the one outcome that counts, which a retry replays.
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
	candidates, err := h.s.store.MatchCandidates(ctx, who.ID, req.Body.BetSize, ruleset, matchAttempts)
	if err != nil {
		return nil, err
	}
	join := mutation{action: "quick_join", caller: who, key: req.Params.IdempotencyKey, body: req.Body, status: http.StatusCreated}
	for _, id := range candidates {
		join.lobby = id
		join.run = func(ctx context.Context, tx tournament.Tx, now int64) (any, error) {
			err := h.s.service.Register(ctx, tx, now, actorOf(who), id)
			if refusal, ok := tournament.IsRefusal(err); ok && skipped(ProblemCode(refusal.Code)) {
				return nil, asProblem(err) // not a refusal any more: rolled back, not stored
			}
			if err != nil {
				return nil, err
			}
			return lobbyAfter(ctx, tx, now, id, who)
		}
		out, err := h.mutate(ctx, join)
		var p *problemError
		if errors.As(err, &p) && skipped(p.code) {
			continue
		}
		return out, err
	}
	// Nothing fitted; a retry whose first request joined a game (now left out) is replayed here.
	join.lobby = ""
	join.run = func(context.Context, tournament.Tx, int64) (any, error) { return nil, errNoMatch }
	return h.mutate(ctx, join)
}

// skipped tells the refusals after which a quick join tries the next game.
func skipped(code ProblemCode) bool {
	return code == ProblemCodeWrongStage || code == ProblemCodeLobbyFull || code == ProblemCodeAlreadyRegistered
}
