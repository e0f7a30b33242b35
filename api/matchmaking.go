package api

// Quick join: a registration in the best game that fits.

import (
	"context"
	"net/http"

	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
)

// matchAttempts bounds the games a quick join tries when the best ones fill while it joins.
const matchAttempts = 5

// errNoMatch is a quick join that found no game to join. It is not a refusal of the game, so it
// is not stored under an Idempotency-Key: a retry may find a game that opened since.
var errNoMatch = newProblem(http.StatusConflict, ProblemCodeNoMatch, "no joinable game with this bet and ruleset")

// QuickJoin registers the caller in the best of the games that fit, trying the next one when a
// game filled, started or took the caller in since it was chosen. Each try is a registration by
// id under the request's Idempotency-Key (tournament.Join); a try passed over stores nothing, so
// the key keeps the one answer that counts, which a retry replays.
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
	m := tournament.ActionMessage{Action: tournament.ActionQuickJoin,
		Payload: tournament.ActionPayload{BetSize: req.Body.BetSize, Ruleset: ruleset}}
	if k := req.Params.IdempotencyKey; k != nil {
		m.IdempotencyKey = *k
	}
	p := req.Params
	signed, err := h.signedAction(ctx, who, signatureHeaders{p.RpsKeyId, p.RpsSignedAt, p.RpsSignature, nil, nil}, m)
	if err != nil {
		return nil, err
	}
	candidates, err := h.s.store.MatchCandidates(ctx, who.ID, req.Body.BetSize, ruleset, matchAttempts)
	if err != nil {
		return nil, err
	}
	join := action{name: "quick_join", caller: who, key: req.Params.IdempotencyKey, body: req.Body,
		status: http.StatusCreated, view: lobbyResult(who)}
	key, err := idempotencyKey(ctx, who.ID, join.key, join.body)
	if err != nil {
		return nil, err
	}
	for _, id := range candidates {
		answer, err := h.s.store.Act(ctx, store.Action{Actor: actorOf(who), Key: key, Request: requestRef(ctx),
			Op: tournament.Join{LobbyID: id, BetSize: req.Body.BetSize, Ruleset: ruleset, Signed: signed}, SignerKey: signed.KeyIDOrNone()})
		if r := answer.Result.Refusal; err == nil && r != nil && r.Tentative() {
			continue // the game filled, started or took the caller in since it was chosen
		}
		return h.respond(join, answer, err)
	}
	// Nothing fitted; a retry whose first request joined a game (now left out) is replayed here,
	// and a disabled account is told so.
	answer, found, err := h.s.store.Replay(ctx, who.ID, key)
	if err != nil || found {
		return h.respond(join, answer, err)
	}
	h.s.metrics.observeAction(join.name, errNoMatch)
	return nil, errNoMatch
}
