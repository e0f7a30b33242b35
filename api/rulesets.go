package api

// Rulesets: the weapon grids and their analysis.

import (
	"context"

	"github.com/commitreveal/rps/engine"
)

func (h *handlers) ListRulesets(ctx context.Context, _ ListRulesetsRequestObject) (ListRulesetsResponseObject, error) {
	out := RulesetList{Rulesets: []RulesetSummary{}}
	for _, rs := range h.s.rules.All() {
		out.Rulesets = append(out.Rulesets, RulesetSummary{Id: rs.ID(), Name: rs.Name(), Hash: rs.HashHex(), Weapons: int32(len(rs.Weapons()))})
	}
	return ListRulesets200JSONResponse(out), nil
}

func (h *handlers) GetRuleset(ctx context.Context, req GetRulesetRequestObject) (GetRulesetResponseObject, error) {
	rs, ok := h.s.rules.Get(req.RulesetId)
	if !ok {
		return nil, notFound("ruleset")
	}
	return GetRuleset200JSONResponse(rulesetView(rs)), nil
}

func (h *handlers) AnalyzeGrid(ctx context.Context, req AnalyzeGridRequestObject) (AnalyzeGridResponseObject, error) {
	rs, ok := h.s.rules.Get(req.RulesetId)
	if !ok {
		return nil, notFound("ruleset")
	}
	grid := engine.Grid(req.Body.Grid)
	a := rs.AnalyzeGrid(grid)
	return AnalyzeGrid200JSONResponse{
		Grid: req.Body.Grid, Matches: placementsView(a.Matches), Candidates: movesOf(a.Candidates), ValidTiles: int32(a.ValidTiles),
	}, nil
}
