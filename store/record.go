package store

// The result an idempotency key keeps: a tournament.Result with the request it answered, in a
// format of its own, versioned (resultVersion), so that a change of the domain types cannot make
// a stored result unreadable during its IdempotencyTTL. Keys stored before results were kept hold
// the HTTP answer instead (format 1, see StoredResponse).

import (
	"encoding/json"
	"fmt"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/tournament"
)

// resultVersion is the format of the results stored from now on.
const resultVersion = 2

type resultRecord struct {
	Request RequestRef   `json:"request"`
	Result  storedResult `json:"result"`
}

type storedResult struct {
	Refusal *storedRefusal `json:"refusal,omitempty"`
	At      int64          `json:"at"`
	Expired bool           `json:"expired,omitempty"`
	Lobby   *storedLobby   `json:"lobby,omitempty"`
	Game    *storedGame    `json:"game,omitempty"`
	Player  *storedPlayer  `json:"player,omitempty"`
	Move    *storedMove    `json:"move,omitempty"`
	Account *storedAccount `json:"account,omitempty"`
}

type storedRefusal struct {
	Code    tournament.Code `json:"code"`
	Field   string          `json:"field,omitempty"`
	Message string          `json:"message"`
}

type storedLobby struct {
	ID         tournament.LobbyID `json:"id"`
	Name       string             `json:"name"`
	Closed     bool               `json:"closed"`
	Config     tournament.Config  `json:"config"`
	NextConfig *tournament.Config `json:"nextConfig,omitempty"`
	GameID     tournament.GameID  `json:"gameId"`
	Games      int                `json:"games"`
	CreatedAt  int64              `json:"createdAt"`
}

type storedGame struct {
	ID             tournament.GameID    `json:"id"`
	LobbyID        tournament.LobbyID   `json:"lobbyId"`
	Number         int                  `json:"number"`
	Config         tournament.Config    `json:"config"`
	RulesetHash    string               `json:"rulesetHash"`
	Stage          tournament.Stage     `json:"stage"`
	Round          int                  `json:"round"`
	StageStartedAt int64                `json:"stageStartedAt"`
	Deadline       int64                `json:"deadline"`
	Extensions     int                  `json:"extensions"`
	Joined         int                  `json:"joined"`
	Players        int                  `json:"players"`
	Active         int                  `json:"active"`
	Committed      int                  `json:"committed"`
	Revealed       int                  `json:"revealed"`
	Escrow         int64                `json:"escrow"`
	Winner         tournament.AccountID `json:"winner"`
	Payout         int64                `json:"payout"`
	StopReason     string               `json:"stopReason"`
	CreatedAt      int64                `json:"createdAt"`
	EndedAt        int64                `json:"endedAt"`
}

type storedPlayer struct {
	GameID          tournament.GameID    `json:"gameId"`
	AccountID       tournament.AccountID `json:"accountId"`
	Order           int                  `json:"order"`
	RegisteredAt    int64                `json:"registeredAt"`
	Active          bool                 `json:"active"`
	EliminatedRound int                  `json:"eliminatedRound"`
}

type storedMove struct {
	GameID      tournament.GameID    `json:"gameId"`
	Round       int                  `json:"round"`
	AccountID   tournament.AccountID `json:"accountId"`
	Commitment  engine.Commitment    `json:"commitment"`
	CommittedAt int64                `json:"committedAt"`
	Revealed    bool                 `json:"revealed"`
	// Reveal is kept as bytes: a reveal's password may be any bytes, which a JSON string
	// would not keep.
	Reveal     []byte      `json:"reveal,omitempty"`
	Move       engine.Move `json:"move"`
	RevealedAt int64       `json:"revealedAt"`
}

type storedAccount struct {
	ID         tournament.AccountID `json:"id"`
	Name       string               `json:"name"`
	Role       tournament.Role      `json:"role"`
	Balance    int64                `json:"balance"`
	CreatedAt  int64                `json:"createdAt"`
	DisabledAt int64                `json:"disabledAt"`
}

// encodeResult is the stored form of a result and the request it answered.
func encodeResult(request RequestRef, r tournament.Result) ([]byte, error) {
	f := storedResult{At: r.At, Expired: r.Expired}
	if e := r.Refusal; e != nil {
		f.Refusal = &storedRefusal{Code: e.Code, Field: e.Field, Message: e.Message}
	}
	if l := r.Lobby; l.ID != "" {
		f.Lobby = &storedLobby{ID: l.ID, Name: l.Name, Closed: l.Closed, Config: l.Config, NextConfig: l.NextConfig,
			GameID: l.GameID, Games: l.Games, CreatedAt: l.CreatedAt}
	}
	if g := r.Game; g.ID != "" {
		f.Game = &storedGame{ID: g.ID, LobbyID: g.LobbyID, Number: g.Number, Config: g.Config, RulesetHash: g.RulesetHash,
			Stage: g.Stage, Round: g.Round, StageStartedAt: g.StageStartedAt, Deadline: g.Deadline, Extensions: g.Extensions,
			Joined: g.Joined, Players: g.Players, Active: g.Active, Committed: g.Committed, Revealed: g.Revealed,
			Escrow: g.Escrow, Winner: g.Winner, Payout: g.Payout, StopReason: g.StopReason, CreatedAt: g.CreatedAt, EndedAt: g.EndedAt}
	}
	if p := r.Player; p != nil {
		f.Player = &storedPlayer{GameID: p.GameID, AccountID: p.AccountID, Order: p.Order, RegisteredAt: p.RegisteredAt,
			Active: p.Active, EliminatedRound: p.EliminatedRound}
	}
	if m := r.Move; m != nil {
		f.Move = &storedMove{GameID: m.GameID, Round: m.Round, AccountID: m.AccountID, Commitment: m.Commitment,
			CommittedAt: m.CommittedAt, Revealed: m.Revealed, Move: m.Move, RevealedAt: m.RevealedAt}
		if m.Revealed {
			f.Move.Reveal = []byte(m.Reveal)
		}
	}
	if a := r.Account; a != nil {
		f.Account = &storedAccount{ID: a.ID, Name: a.Name, Role: a.Role, Balance: a.Balance, CreatedAt: a.CreatedAt, DisabledAt: a.DisabledAt}
	}
	out, err := json.Marshal(resultRecord{Request: request, Result: f})
	if err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	return out, nil
}

// decodeResult reads a result stored in format version.
func decodeResult(version int, data []byte) (RequestRef, tournament.Result, error) {
	if version != resultVersion {
		return RequestRef{}, tournament.Result{}, fmt.Errorf("stored result: unknown format %d", version)
	}
	var rec resultRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return RequestRef{}, tournament.Result{}, fmt.Errorf("decode stored result: %w", err)
	}
	f := rec.Result
	r := tournament.Result{At: f.At, Expired: f.Expired}
	if e := f.Refusal; e != nil {
		r.Refusal = &tournament.Error{Code: e.Code, Field: e.Field, Message: e.Message}
	}
	if l := f.Lobby; l != nil {
		r.Lobby = tournament.Lobby{ID: l.ID, Name: l.Name, Closed: l.Closed, Config: l.Config, NextConfig: l.NextConfig,
			GameID: l.GameID, Games: l.Games, CreatedAt: l.CreatedAt}
	}
	if g := f.Game; g != nil {
		r.Game = tournament.Game{ID: g.ID, LobbyID: g.LobbyID, Number: g.Number, Config: g.Config, RulesetHash: g.RulesetHash,
			Stage: g.Stage, Round: g.Round, StageStartedAt: g.StageStartedAt, Deadline: g.Deadline, Extensions: g.Extensions,
			Joined: g.Joined, Players: g.Players, Active: g.Active, Committed: g.Committed, Revealed: g.Revealed,
			Escrow: g.Escrow, Winner: g.Winner, Payout: g.Payout, StopReason: g.StopReason, CreatedAt: g.CreatedAt, EndedAt: g.EndedAt}
	}
	if p := f.Player; p != nil {
		r.Player = &tournament.Player{GameID: p.GameID, AccountID: p.AccountID, Order: p.Order, RegisteredAt: p.RegisteredAt,
			Active: p.Active, EliminatedRound: p.EliminatedRound}
	}
	if m := f.Move; m != nil {
		r.Move = &tournament.RoundMove{GameID: m.GameID, Round: m.Round, AccountID: m.AccountID, Commitment: m.Commitment,
			CommittedAt: m.CommittedAt, Revealed: m.Revealed, Reveal: string(m.Reveal), Move: m.Move, RevealedAt: m.RevealedAt}
	}
	if a := f.Account; a != nil {
		r.Account = &tournament.Account{ID: a.ID, Name: a.Name, Role: a.Role, Balance: a.Balance, CreatedAt: a.CreatedAt, DisabledAt: a.DisabledAt}
	}
	return rec.Request, r, nil
}
