package api

// The standings.

import (
	"context"

	"github.com/commitreveal/rps/store"
)

func (h *handlers) GetLeaderboard(ctx context.Context, req GetLeaderboardRequestObject) (GetLeaderboardResponseObject, error) {
	if _, _, err := optionalCaller(ctx); err != nil {
		return nil, err
	}
	out := Leaderboard{By: LeaderboardByWins, Period: LeaderboardPeriodAll, Standings: []Standing{}}
	if req.Params.By != nil {
		out.By = LeaderboardBy(*req.Params.By)
	}
	if req.Params.Period != nil {
		out.Period = LeaderboardPeriod(*req.Params.Period)
	}
	period := map[LeaderboardPeriod]store.Period{
		LeaderboardPeriodAll: store.PeriodAll, LeaderboardPeriodN30d: store.Period30d, LeaderboardPeriodN7d: store.Period7d,
	}[out.Period]
	after, err := cursorParam(req.Params.After, store.ParseStandingCursor)
	if err != nil {
		return nil, err
	}
	standings, next, err := h.s.store.Leaderboard(ctx, store.RankBy(out.By), period, after, pageSize(req.Params.Limit))
	if err != nil {
		return nil, err
	}
	if next != nil {
		s := next.String()
		out.Next = &s
	}
	for _, s := range standings {
		out.Standings = append(out.Standings, Standing{
			Position: int32(s.Position), AccountId: parseUUID(string(s.AccountID)), Name: s.Name,
			Games: int32(s.Games), Wins: int32(s.Wins), Net: s.Net,
		})
	}
	return GetLeaderboard200JSONResponse(out), nil
}
