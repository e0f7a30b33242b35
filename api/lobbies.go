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
	return h.act(ctx, action{
		name: "create_lobby", caller: who, key: req.Params.IdempotencyKey, body: req.Body,
		adminSignature: adminSignatureOf(req.Params.RpsKeyId, req.Params.RpsSignedAt, req.Params.RpsSignature),
		op:             tournament.CreateLobby{Name: req.Body.Name, Config: configInput(req.Body.Config)},
		status:         http.StatusCreated, view: lobbyResult(who),
		// The config's fields sit under "config" in this request.
		field: func(f string) string {
			if f == "name" {
				return f
			}
			return "config." + f
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
	views, err := h.s.store.ListLobbies(ctx, filter, after, limit+1, playerID(who))
	if err != nil {
		return nil, err
	}
	var page LobbyPage
	views, page.Next = nextPage(views, limit, func(v store.LobbyView) string { return v.Cursor().String() })
	page.Lobbies = []Lobby{}
	for _, v := range views {
		page.Lobbies = append(page.Lobbies, lobbyView(v.Lobby, v.Game, who, v.Caller, v.Now))
	}
	return ListLobbies200JSONResponse(page), nil
}

func (h *handlers) GetLobby(ctx context.Context, req GetLobbyRequestObject) (GetLobbyResponseObject, error) {
	who, _, err := optionalCaller(ctx)
	if err != nil {
		return nil, err
	}
	v, err := h.s.store.LobbyAs(ctx, tournament.LobbyID(req.LobbyId.String()), playerID(who))
	if err != nil {
		return nil, readErr(err, "lobby")
	}
	view := lobbyView(v.Lobby, v.Game, who, v.Caller, v.Now)
	// The head of the log as of the state shown.
	head, err := h.s.currentHead(ctx, v.Lobby.ID, &tournament.LoggedEvent{Seq: v.HeadSeq, Hash: v.HeadHash})
	if err != nil {
		return nil, err
	}
	view.Head = &head
	if err := h.s.lobbyLog(ctx, &view, v.Logged, req.Params.LogProof != nil && *req.Params.LogProof); err != nil {
		return nil, err
	}
	return GetLobby200JSONResponse(view), nil
}

// playerID is the caller's account id when the caller is a player: only players have a part
// in a game to read.
func playerID(who tournament.Account) tournament.AccountID {
	if who.Role != tournament.RolePlayer {
		return ""
	}
	return who.ID
}

func (h *handlers) SetNextConfig(ctx context.Context, req SetNextConfigRequestObject) (SetNextConfigResponseObject, error) {
	id := tournament.LobbyID(req.LobbyId.String())
	p := req.Params
	return h.adminLobbyAction(ctx, "set_next_config", p.IdempotencyKey, req.Body, signatureHeaders{p.RpsKeyId, p.RpsSignedAt, p.RpsSignature, p.RpsGameId, nil},
		tournament.ChangeNextConfig{LobbyID: id, Config: configInput(*req.Body)})
}

func (h *handlers) CloseLobby(ctx context.Context, req CloseLobbyRequestObject) (CloseLobbyResponseObject, error) {
	id := tournament.LobbyID(req.LobbyId.String())
	p := req.Params
	return h.adminLobbyAction(ctx, "close_lobby", p.IdempotencyKey, nil, adminSignatureOf(p.RpsKeyId, p.RpsSignedAt, p.RpsSignature),
		tournament.CloseLobby{LobbyID: id})
}

func (h *handlers) StopGame(ctx context.Context, req StopGameRequestObject) (StopGameResponseObject, error) {
	id := tournament.LobbyID(req.LobbyId.String())
	p := req.Params
	return h.adminLobbyAction(ctx, "stop", p.IdempotencyKey, req.Body, signatureHeaders{p.RpsKeyId, p.RpsSignedAt, p.RpsSignature, p.RpsGameId, nil},
		tournament.Stop{LobbyID: id, Reason: req.Body.Reason})
}
