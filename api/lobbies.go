package api

// Lobbies: creation, listing, reading and the admin's changes.

import (
	"context"
	"net/http"

	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
)

func (h *handlers) CreateLobby(ctx context.Context, req CreateLobbyRequestObject) (CreateLobbyResponseObject, error) {
	who, err := requireAdmin(ctx)
	if err != nil {
		return nil, err
	}
	cfg := configInput(req.Body.Config)
	return h.mutate(ctx, mutation{
		action: "create_lobby", caller: who, key: req.Params.IdempotencyKey, body: req.Body, status: http.StatusCreated,
		run: func(ctx context.Context, tx tournament.Tx, now int64) (any, error) {
			id, err := h.s.service.CreateLobby(ctx, tx, now, actorOf(who), req.Body.Name, cfg)
			if e, ok := tournament.IsRefusal(err); ok && e.Field != "" && e.Field != "name" {
				// The config's fields sit under "config" in this request.
				e.Field = "config." + e.Field
			}
			if err != nil {
				return nil, err
			}
			return lobbyAfter(ctx, tx, now, id, who)
		},
	})
}

func (h *handlers) ListLobbies(ctx context.Context, req ListLobbiesRequestObject) (ListLobbiesResponseObject, error) {
	who, _, err := optionalCaller(ctx)
	if err != nil {
		return nil, err
	}
	p := req.Params
	if p.MinBet != nil && p.MaxBet != nil && *p.MaxBet < *p.MinBet {
		return nil, validationProblem("maxBet", "must not be below minBet")
	}
	filter := store.LobbyFilter{Joinable: p.Open, MinBet: p.MinBet, MaxBet: p.MaxBet}
	if p.Stage != nil {
		filter.Stage = tournament.Stage(*p.Stage)
	}
	if p.Ruleset != nil {
		filter.Ruleset = *p.Ruleset
	}
	after, err := cursorParam(p.After, store.ParseLobbyCursor)
	if err != nil {
		return nil, err
	}
	limit := pageSize(p.Limit)
	views, err := h.s.store.ListLobbies(ctx, filter, after, limit+1)
	if err != nil {
		return nil, err
	}
	var page LobbyPage
	views, page.Next = nextPage(views, limit, func(v store.LobbyView) string { return v.Cursor().String() })
	page.Lobbies = []Lobby{}
	games := make([]tournament.Game, len(views))
	for i, v := range views {
		games[i] = v.Game
	}
	yours, err := h.callerStates(ctx, games, who)
	if err != nil {
		return nil, err
	}
	for _, v := range views {
		page.Lobbies = append(page.Lobbies, lobbyView(v.Lobby, v.Game, yours[v.Game.ID], v.Now))
	}
	return ListLobbies200JSONResponse(page), nil
}

func (h *handlers) GetLobby(ctx context.Context, req GetLobbyRequestObject) (GetLobbyResponseObject, error) {
	who, _, err := optionalCaller(ctx)
	if err != nil {
		return nil, err
	}
	v, err := h.s.store.Lobby(ctx, tournament.LobbyID(req.LobbyId.String()))
	if err != nil {
		return nil, readErr(err, "lobby")
	}
	yours, err := h.callerStates(ctx, []tournament.Game{v.Game}, who)
	if err != nil {
		return nil, err
	}
	view := lobbyView(v.Lobby, v.Game, yours[v.Game.ID], v.Now)
	head, err := h.s.currentHead(ctx, v.Lobby.ID, nil)
	if err != nil {
		return nil, err
	}
	view.Head = &head
	return GetLobby200JSONResponse(view), nil
}

// callerStates reads, in one query, a player's own part in each open game, for lobby reads
// (none for anyone else).
func (h *handlers) callerStates(ctx context.Context, games []tournament.Game, who tournament.Account) (map[tournament.GameID]*callerState, error) {
	out := map[tournament.GameID]*callerState{}
	if who.ID == "" || who.Role != tournament.RolePlayer {
		return out, nil
	}
	var open []tournament.Game
	for _, g := range games {
		if g.Stage.Open() {
			open = append(open, g)
		}
	}
	callers, err := h.s.store.Callers(ctx, who.ID, open)
	if err != nil {
		return nil, err
	}
	for _, g := range open {
		c := callers[g.ID]
		out[g.ID] = &callerState{player: c.Player, move: c.Move}
	}
	return out, nil
}

// lobbyMutation runs a core operation on a lobby and answers with the lobby after it.
// The caller checks of lobby mutations: admin operations are refused to players before any lock
// is taken; play operations leave the refusal of admins to the core.
type callerCheck func(ctx context.Context) (tournament.Account, error)

func (h *handlers) lobbyMutation(ctx context.Context, action string, lobby LobbyId, key *string, body any, status int, check callerCheck,
	op func(ctx context.Context, tx tournament.Tx, now int64, actor tournament.Actor, id tournament.LobbyID) error) (rawResponse, error) {
	who, err := check(ctx)
	if err != nil {
		return rawResponse{}, err
	}
	id := tournament.LobbyID(lobby.String())
	return h.mutate(ctx, mutation{
		action: action, caller: who, lobby: id, key: key, body: body, status: status,
		run: func(ctx context.Context, tx tournament.Tx, now int64) (any, error) {
			if err := op(ctx, tx, now, actorOf(who), id); err != nil {
				return nil, err
			}
			return lobbyAfter(ctx, tx, now, id, who)
		},
	})
}

func (h *handlers) SetNextConfig(ctx context.Context, req SetNextConfigRequestObject) (SetNextConfigResponseObject, error) {
	cfg := configInput(*req.Body)
	return h.lobbyMutation(ctx, "set_next_config", req.LobbyId, req.Params.IdempotencyKey, req.Body, http.StatusOK, requireAdmin,
		func(ctx context.Context, tx tournament.Tx, now int64, actor tournament.Actor, id tournament.LobbyID) error {
			return h.s.service.ChangeNextConfig(ctx, tx, now, actor, id, cfg)
		})
}

func (h *handlers) CloseLobby(ctx context.Context, req CloseLobbyRequestObject) (CloseLobbyResponseObject, error) {
	return h.lobbyMutation(ctx, "close_lobby", req.LobbyId, req.Params.IdempotencyKey, nil, http.StatusOK, requireAdmin, h.s.service.CloseLobby)
}

func (h *handlers) StopGame(ctx context.Context, req StopGameRequestObject) (StopGameResponseObject, error) {
	return h.lobbyMutation(ctx, "stop", req.LobbyId, req.Params.IdempotencyKey, req.Body, http.StatusOK, requireAdmin,
		func(ctx context.Context, tx tournament.Tx, now int64, actor tournament.Actor, id tournament.LobbyID) error {
			return h.s.service.Stop(ctx, tx, now, actor, id, req.Body.Reason)
		})
}
