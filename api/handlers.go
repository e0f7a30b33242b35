package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/commitreveal/rps"
	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
)

// handlers implements the generated StrictServerInterface: each method translates a request into
// one store or core operation and its result into a response.
type handlers struct {
	s *Server
}

// Page sizes of paged lists.
const (
	defaultPageSize = 100
	maxPageSize     = 500
)

func pageSize(limit *int32) int {
	if limit == nil || *limit <= 0 {
		return defaultPageSize
	}
	return min(int(*limit), maxPageSize)
}

func notFound(what string) *problemError {
	return newProblem(http.StatusNotFound, ProblemCodeNotFound, what+" not found")
}

// readErr turns a read's ErrNotFound into a 404 for what was read.
func readErr(err error, what string) error {
	if errors.Is(err, tournament.ErrNotFound) {
		return notFound(what)
	}
	return err
}

// ---- operations

func (h *handlers) GetHealth(ctx context.Context, _ GetHealthRequestObject) (GetHealthResponseObject, error) {
	return GetHealth200JSONResponse{Status: Ok}, nil
}

func (h *handlers) GetReadiness(ctx context.Context, _ GetReadinessRequestObject) (GetReadinessResponseObject, error) {
	if err := h.s.store.Ready(ctx); err != nil {
		detail := err.Error()
		return GetReadiness503JSONResponse{Status: Unavailable, Detail: &detail}, nil
	}
	return GetReadiness200JSONResponse{Status: Ok}, nil
}

// GetMetrics is served by the Prometheus handler mounted in routes; this method only satisfies
// the generated interface.
func (h *handlers) GetMetrics(ctx context.Context, _ GetMetricsRequestObject) (GetMetricsResponseObject, error) {
	return nil, errors.New("metrics are served by the Prometheus handler")
}

func (h *handlers) GetOpenApiSpec(ctx context.Context, _ GetOpenApiSpecRequestObject) (GetOpenApiSpecResponseObject, error) {
	return GetOpenApiSpec200ApplicationyamlResponse{Body: bytes.NewReader(rps.OpenAPI), ContentLength: int64(len(rps.OpenAPI))}, nil
}

// ---- accounts

func (h *handlers) CreateAccount(ctx context.Context, req CreateAccountRequestObject) (CreateAccountResponseObject, error) {
	if ok, retry := h.s.signupLimits.allow(requestInfoOf(ctx).ip, time.Now()); !ok {
		return nil, rateLimited(retry)
	}
	acct, token, err := h.s.store.CreateAccount(ctx, req.Body.Name, tournament.RolePlayer)
	if err != nil {
		return nil, err
	}
	return CreateAccount201JSONResponse{Account: accountView(acct), Token: token}, nil
}

func (h *handlers) GetMe(ctx context.Context, _ GetMeRequestObject) (GetMeResponseObject, error) {
	who, err := requireAccount(ctx)
	if err != nil {
		return nil, err
	}
	acct, err := h.s.store.Account(ctx, who.ID)
	if err != nil {
		return nil, readErr(err, "account")
	}
	return GetMe200JSONResponse(accountView(acct)), nil
}

func (h *handlers) RotateToken(ctx context.Context, req RotateTokenRequestObject) (RotateTokenResponseObject, error) {
	who, err := requireAccount(ctx)
	if err != nil {
		return nil, err
	}
	key, err := idempotencyKey(ctx, mutation{caller: who, key: req.Params.IdempotencyKey})
	if err != nil {
		return nil, err
	}
	// A duplicate cannot be shown the token (it is never stored): it learns that its twin has it.
	already := newProblem(http.StatusConflict, ProblemCodeIdempotencyConflict,
		"this request already rotated the token; the new token went to its first answer and is not shown again")
	token, replay, replayed, err := h.s.store.RotateToken(ctx, who.ID, key,
		store.Outcome{Status: already.status, Body: problemBody(ctx, already)})
	if err != nil {
		return nil, readErr(err, "account")
	}
	if replayed {
		return rawResponse{status: replay.Status, body: replay.Body, replayed: true}, nil
	}
	h.s.tokens.forgetAccount(who.ID)
	return RotateToken200JSONResponse{Token: token}, nil
}

func (h *handlers) ListMyLedger(ctx context.Context, req ListMyLedgerRequestObject) (ListMyLedgerResponseObject, error) {
	who, err := requireAccount(ctx)
	if err != nil {
		return nil, err
	}
	after, err := int64Cursor(req.Params.After)
	if err != nil {
		return nil, err
	}
	limit := pageSize(req.Params.Limit)
	entries, err := h.s.store.LedgerEntries(ctx, who.ID, after, limit+1)
	if err != nil {
		return nil, err
	}
	page := LedgerPage{Entries: []LedgerEntry{}}
	for i, e := range entries {
		if i == limit {
			page.Next = int64CursorOf(entries[limit-1].ID)
			break
		}
		page.Entries = append(page.Entries, ledgerEntryView(e))
	}
	return ListMyLedger200JSONResponse(page), nil
}

func ledgerEntryView(e store.LedgerEntry) LedgerEntry {
	out := LedgerEntry{
		Id: fmt.Sprint(e.ID), At: millisToTime(e.At), Amount: e.Amount, Kind: LedgerEntryKind(e.Kind),
		Counterparty: Escrow,
	}
	if e.Kind == tournament.PostingCredit || e.Kind == tournament.PostingDebit {
		out.Counterparty = Treasury
	}
	if e.GameID != "" {
		id := parseUUID(string(e.GameID))
		out.GameId = &id
	}
	return out
}

// ---- admin

func (h *handlers) CreditAccount(ctx context.Context, req CreditAccountRequestObject) (CreditAccountResponseObject, error) {
	return h.moveMoney(ctx, "credit", req.AccountId.String(), req.Params.IdempotencyKey, req.Body, h.s.service.Credit)
}

func (h *handlers) DebitAccount(ctx context.Context, req DebitAccountRequestObject) (DebitAccountResponseObject, error) {
	return h.moveMoney(ctx, "debit", req.AccountId.String(), req.Params.IdempotencyKey, req.Body, h.s.service.Debit)
}

type moneyOp func(ctx context.Context, tx tournament.Tx, now int64, actor tournament.Actor, id tournament.AccountID, amount int64) (tournament.Account, error)

func (h *handlers) moveMoney(ctx context.Context, action, id string, key *string, body *MoneyTransferRequest, op moneyOp) (rawResponse, error) {
	who, err := requireAdmin(ctx)
	if err != nil {
		return rawResponse{}, err
	}
	return h.mutate(ctx, mutation{
		action: action, caller: who, key: key, body: body, status: http.StatusOK,
		run: func(ctx context.Context, tx tournament.Tx, now int64) (any, error) {
			acct, err := op(ctx, tx, now, actorOf(who), tournament.AccountID(id), body.Amount)
			if err != nil {
				return nil, err
			}
			return accountView(acct), nil
		},
	})
}

func (h *handlers) GetAdminLedger(ctx context.Context, _ GetAdminLedgerRequestObject) (GetAdminLedgerResponseObject, error) {
	if _, err := requireAdmin(ctx); err != nil {
		return nil, err
	}
	report, err := h.s.store.LedgerReport(ctx)
	if err != nil {
		return nil, err
	}
	return GetAdminLedger200JSONResponse(ledgerReportView(report)), nil
}

// ---- rulesets

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

// ---- lobbies

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
	limit := pageSize(req.Params.Limit)
	after := ""
	if req.Params.After != nil {
		after = *req.Params.After
	}
	views, err := h.s.store.ListLobbies(ctx, after, limit+1)
	if errors.Is(err, store.ErrBadCursor) {
		return nil, validationProblem("after", "not a cursor this server returned")
	} else if err != nil {
		return nil, err
	}
	page := LobbyPage{Lobbies: []Lobby{}}
	if len(views) > limit {
		next := string(views[limit-1].Lobby.ID)
		page.Next = &next
		views = views[:limit]
	}
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
	return GetLobby200JSONResponse(lobbyView(v.Lobby, v.Game, yours[v.Game.ID], v.Now)), nil
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

// ---- play

func (h *handlers) RegisterPlayer(ctx context.Context, req RegisterPlayerRequestObject) (RegisterPlayerResponseObject, error) {
	return h.lobbyMutation(ctx, "register", req.LobbyId, req.Params.IdempotencyKey, nil, http.StatusCreated, requireAccount, h.s.service.Register)
}

func (h *handlers) LeaveLobby(ctx context.Context, req LeaveLobbyRequestObject) (LeaveLobbyResponseObject, error) {
	return h.lobbyMutation(ctx, "leave", req.LobbyId, req.Params.IdempotencyKey, nil, http.StatusOK, requireAccount, h.s.service.Leave)
}

func (h *handlers) CommitMove(ctx context.Context, req CommitMoveRequestObject) (CommitMoveResponseObject, error) {
	c, err := engine.ParseCommitment(req.Body.Commitment)
	if err != nil {
		return nil, validationProblem("commitment", err.Error())
	}
	return h.lobbyMutation(ctx, "commit", req.LobbyId, req.Params.IdempotencyKey, req.Body, http.StatusOK, requireAccount,
		func(ctx context.Context, tx tournament.Tx, now int64, actor tournament.Actor, id tournament.LobbyID) error {
			return h.s.service.Commit(ctx, tx, now, actor, id, c)
		})
}

func (h *handlers) RevealMove(ctx context.Context, req RevealMoveRequestObject) (RevealMoveResponseObject, error) {
	return h.lobbyMutation(ctx, "reveal", req.LobbyId, req.Params.IdempotencyKey, req.Body, http.StatusOK, requireAccount,
		func(ctx context.Context, tx tournament.Tx, now int64, actor tournament.Actor, id tournament.LobbyID) error {
			return h.s.service.Reveal(ctx, tx, now, actor, id, req.Body.Reveal)
		})
}

// ---- transcript

func (h *handlers) GetGame(ctx context.Context, req GetGameRequestObject) (GetGameResponseObject, error) {
	g, err := h.s.store.Game(ctx, tournament.GameID(req.GameId.String()))
	if err != nil {
		return nil, readErr(err, "game")
	}
	return GetGame200JSONResponse(gameSummaryView(g)), nil
}

func (h *handlers) ListGamePlayers(ctx context.Context, req ListGamePlayersRequestObject) (ListGamePlayersResponseObject, error) {
	id := tournament.GameID(req.GameId.String())
	g, err := h.s.store.Game(ctx, id)
	if err != nil {
		return nil, readErr(err, "game")
	}
	after, err := int64Cursor(req.Params.After)
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
	after, err := int64Cursor(req.Params.After)
	if err != nil {
		return nil, err
	}
	limit := pageSize(req.Params.Limit)
	players, err := h.s.store.RoundPlayers(ctx, id, round, int(after), limit+1)
	if err != nil {
		return nil, err
	}
	out := RoundTranscript{Round: req.Round, Stage: RoundStageClosed, Counts: []int32{}, Moves: []RoundMove{}}
	switch {
	case round == g.Round && g.Stage == tournament.StageMoves:
		out.Stage = RoundStageMoves
	case round == g.Round && g.Stage == tournament.StageReveal:
		out.Stage = RoundStageReveal
	}
	result, err := h.s.store.RoundResult(ctx, g, round)
	if err != nil {
		return nil, err
	}
	if result != nil {
		present, survivors := int32(result.Present), int32(result.Remaining)
		out.Present, out.Survivors = &present, &survivors
		for _, c := range result.Counts {
			out.Counts = append(out.Counts, int32(c))
		}
	}
	for i, p := range players {
		if i == limit {
			out.Next = int64CursorOf(int64(players[limit-1].Order))
			break
		}
		out.Moves = append(out.Moves, roundMoveView(g, round, p))
	}
	return GetRound200JSONResponse(out), nil
}

// int64Cursor reads an opaque cursor that encodes a position as a number.
func int64Cursor(after *string) (int64, error) {
	if after == nil {
		return 0, nil
	}
	n, err := strconv.ParseInt(*after, 10, 64)
	if err != nil || n < 0 {
		return 0, validationProblem("after", "not a cursor this server returned")
	}
	return n, nil
}

func int64CursorOf(n int64) *string {
	s := strconv.FormatInt(n, 10)
	return &s
}
