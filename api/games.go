package api

// Games: a lobby's games, and a game's summary, players and round transcripts.

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/commitreveal/rps/tournament"
)

func (h *handlers) GetGame(ctx context.Context, req GetGameRequestObject) (GetGameResponseObject, error) {
	g, err := h.s.store.Game(ctx, tournament.GameID(req.GameId.String()))
	if err != nil {
		return nil, readErr(err, "game")
	}
	return GetGame200JSONResponse(gameSummaryView(g)), nil
}

func (h *handlers) ListLobbyGames(ctx context.Context, req ListLobbyGamesRequestObject) (ListLobbyGamesResponseObject, error) {
	before, err := int64Cursor(req.Params.After, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	limit := pageSize(req.Params.Limit)
	games, err := h.s.store.LobbyGames(ctx, tournament.LobbyID(req.LobbyId.String()), before, limit+1)
	if err != nil {
		return nil, readErr(err, "lobby")
	}
	var page GameSummaryPage
	games, page.Next = nextPage(games, limit, func(g tournament.Game) string { return strconv.Itoa(g.Number) })
	page.Games = make([]GameSummary, len(games))
	for i, g := range games {
		page.Games[i] = gameSummaryView(g)
	}
	return ListLobbyGames200JSONResponse(page), nil
}

func (h *handlers) ListGamePlayers(ctx context.Context, req ListGamePlayersRequestObject) (ListGamePlayersResponseObject, error) {
	id := tournament.GameID(req.GameId.String())
	g, err := h.s.store.Game(ctx, id)
	if err != nil {
		return nil, readErr(err, "game")
	}
	after, err := int64Cursor(req.Params.After, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	limit := pageSize(req.Params.Limit)
	players, err := h.s.store.GamePlayers(ctx, id, int(after), limit+1)
	if err != nil {
		return nil, err
	}
	page := GamePlayerPage{Players: []GamePlayer{}}
	for i, p := range players {
		if i == limit {
			page.Next = int64CursorOf(int64(players[limit-1].Order))
			break
		}
		page.Players = append(page.Players, gamePlayerView(g, p))
	}
	return ListGamePlayers200JSONResponse(page), nil
}

func (h *handlers) GetRound(ctx context.Context, req GetRoundRequestObject) (GetRoundResponseObject, error) {
	id := tournament.GameID(req.GameId.String())
	g, err := h.s.store.Game(ctx, id)
	if err != nil {
		return nil, readErr(err, "game")
	}
	round := int(req.Round)
	if round > g.Round {
		return nil, notFound(fmt.Sprintf("round %d of this game", round))
	}
	after, err := int64Cursor(req.Params.After, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	limit := pageSize(req.Params.Limit)
	players, err := h.s.store.RoundPlayers(ctx, id, round, int(after), limit+1)
	if err != nil {
		return nil, err
	}
	result, err := h.s.store.RoundResult(ctx, g, round)
	if err != nil {
		return nil, err
	}
	// The salt of the round's moves_closed digest, as the event that made the commitments public
	// revealed it: round_resolved's, or the end event's for the last round of a game that ended
	// before the round resolved.
	var salt string
	if result != nil {
		salt = result.Salt
	} else if round == g.Round && !g.Stage.Open() {
		if salt, err = h.s.store.EndSalt(ctx, g.ID); err != nil {
			return nil, err
		}
	}
	return GetRound200JSONResponse(roundTranscriptView(g, round, result, salt, players, limit)), nil
}
