package api

import (
	"context"
	"math"
	"net/http"

	"github.com/commitreveal/rps/tournament"
)

// The reads below exist so that anyone can re-derive a game's money and rules from public data
// (cmd/rpsverify does).

func (h *handlers) ListGamePostings(ctx context.Context, req ListGamePostingsRequestObject) (ListGamePostingsResponseObject, error) {
	id := tournament.GameID(req.GameId.String())
	if _, err := h.s.store.Game(ctx, id); err != nil {
		return nil, readErr(err, "game")
	}
	after, err := int64Cursor(req.Params.After, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	limit := pageSize(req.Params.Limit)
	postings, err := h.s.store.GamePostings(ctx, id, after, limit+1)
	if err != nil {
		return nil, err
	}
	page := GamePostingPage{Postings: []GamePosting{}}
	for i, p := range postings {
		if i == limit {
			page.Next = int64CursorOf(postings[limit-1].ID)
			break
		}
		page.Postings = append(page.Postings, GamePosting{
			Id: p.ID, Kind: PostingKind(p.Kind), Player: parseUUID(string(p.Player)), Amount: p.Amount, At: millisToTime(p.At),
		})
	}
	return ListGamePostings200JSONResponse(page), nil
}

func (h *handlers) GetRulesetByHash(ctx context.Context, req GetRulesetByHashRequestObject) (GetRulesetByHashResponseObject, error) {
	canonical, err := h.s.store.RulesetCanonical(ctx, req.RulesetHash)
	if err != nil {
		return nil, readErr(err, "ruleset")
	}
	return canonicalRuleset(canonical), nil
}

// canonicalRuleset answers with the stored bytes verbatim (the generated response would encode
// them again), so that blake2b-256 of the body is the hash asked for.
type canonicalRuleset []byte

func (c canonicalRuleset) VisitGetRulesetByHashResponse(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(c)
	return err
}
