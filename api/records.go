package api

import (
	"context"

	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
)

// ---- a player's games, profiles and standings

func (h *handlers) ListMyGames(ctx context.Context, req ListMyGamesRequestObject) (ListMyGamesResponseObject, error) {
	who, err := requireAccount(ctx)
	if err != nil {
		return nil, err
	}
	after, err := cursorParam(req.Params.After, store.ParseRecordCursor)
	if err != nil {
		return nil, err
	}
	limit := pageSize(req.Params.Limit)
	recs, err := h.s.store.PlayerGames(ctx, who.ID, after, limit+1)
	if err != nil {
		return nil, err
	}
	var page GameRecordPage
	recs, page.Next = nextPage(recs, limit, func(r store.Record) string {
		return store.RecordCursor{RegisteredAt: r.Player.RegisteredAt, Game: r.Game.ID}.String()
	})
	page.Games = gameRecordsView(recs)
	return ListMyGames200JSONResponse(page), nil
}

func (h *handlers) GetAccountProfile(ctx context.Context, req GetAccountProfileRequestObject) (GetAccountProfileResponseObject, error) {
	who, _, err := optionalCaller(ctx)
	if err != nil {
		return nil, err
	}
	a, totals, err := h.s.store.Profile(ctx, tournament.AccountID(req.AccountId.String()))
	if err != nil {
		return nil, readErr(err, "account")
	}
	out := AccountProfile{
		Id: parseUUID(string(a.ID)), Name: a.Name, Role: Role(a.Role), GamesPlayed: int32(totals.Games),
		GamesWon: int32(totals.Wins), Net: totals.Net, MemberSince: millisToTime(a.CreatedAt),
	}
	if who.ID == a.ID {
		out.Balance = &a.Balance
	}
	return GetAccountProfile200JSONResponse(out), nil
}

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
