package tournament

import (
	"context"
	"errors"
	"fmt"

	"github.com/commitreveal/rps/engine"
)

// Operation is one action on the game as data: the API builds one from a request, and the store
// runs it in its lobby's transaction (in a batch with the lobby's other actions in flight) and
// keeps its Result under the request's idempotency key. Every operation of this package is a
// value type; tests may add their own.
type Operation interface {
	// Lobby is the lobby the operation acts on, locked for it; "" for an operation on no
	// existing lobby (creating one, moving money).
	Lobby() LobbyID
	// Apply runs the operation for actor at now through tx. A refusal is Result.Refusal, never
	// the error, which is a failure of the store (the transaction then rolls back).
	Apply(ctx context.Context, s *Service, tx Tx, now int64, actor Actor) (Result, error)
}

// Result is what an operation did: its refusal, or the state after it. It is everything an
// answer is rendered from, the first time and when it is replayed, so it holds the state as it
// was right after the operation (not as later operations of the same batch left it).
type Result struct {
	// Refusal is the core's refusal (nil: the operation was done). A refusal commits (see Error).
	Refusal *Error
	// At is the instant the operation ran at (Unix milliseconds).
	At int64
	// Expired reports that deadlines that had passed were applied before the action.
	Expired bool
	// Lobby and Game are the lobby acted on and its current game, after the operation (zero for
	// operations on no lobby, and for a refusal).
	Lobby Lobby
	Game  Game
	// Player and Move are the acting player's registration in Game and move in its current round,
	// when there are (players only).
	Player *Player
	Move   *RoundMove
	// Account is the account an operation on money acted on, after it.
	Account *Account
}

// Refused returns the Result of a refused operation, or err when it is not a refusal.
func refused(now int64, err error) (Result, error) {
	if r, ok := IsRefusal(err); ok {
		return Result{Refusal: r, At: now}, nil
	}
	return Result{}, err
}

// lobbyResult runs a lobby action and returns the lobby, its game and the actor's own rows after
// it (a refusal as Result.Refusal; expiries applied before a refused action still commit).
func (s *Service) lobbyResult(ctx context.Context, tx Tx, now int64, actor Actor, lobby LobbyID, action func(o *op) error) (Result, error) {
	o, err := s.apply(ctx, tx, now, lobby, action)
	if err != nil {
		return refused(now, err)
	}
	return o.result(actor, now)
}

// result is the Result of the operation o ran for actor.
func (o *op) result(actor Actor, now int64) (Result, error) {
	r := Result{At: now, Expired: o.expired, Lobby: o.lobby.Clone(), Game: o.game}
	if actor.Role != RolePlayer || o.game.ID == "" {
		return r, nil
	}
	p, err := o.player(actor.ID)
	if errors.Is(err, ErrNotFound) {
		return r, nil
	} else if err != nil {
		return Result{}, err
	}
	r.Player = &p
	if o.game.Round == 0 {
		return r, nil
	}
	m, err := o.tx.RoundMove(o.ctx, o.game.ID, o.game.Round, actor.ID)
	if errors.Is(err, ErrNotFound) {
		return r, nil
	} else if err != nil {
		return Result{}, fmt.Errorf("read move: %w", err)
	}
	r.Move = &m
	return r, nil
}

// Register joins the lobby's current game (see Service.Register). Signed is the player's
// signature (nil: unsigned; see checkSigner), as are those of the operations below.
type Register struct {
	LobbyID LobbyID
	Signed  *Signed
}

func (a Register) Lobby() LobbyID { return a.LobbyID }

func (a Register) Apply(ctx context.Context, s *Service, tx Tx, now int64, actor Actor) (Result, error) {
	return s.lobbyResult(ctx, tx, now, actor, a.LobbyID, func(o *op) error { return o.register(now, actor, a.Signed) })
}

// Join is a registration made on the player's behalf by a quick join, which tries lobbies in
// turn: a game that is no longer joinable (started, full, joined already, or left too often) is a tentative
// refusal, which a quick join passes over and which is not kept under its idempotency key. So is
// a game without the quick join's bet and ruleset: the lobbies were chosen by their games of a
// moment ago, and a lobby may have opened its next game, of another config, since.
type Join struct {
	LobbyID LobbyID
	// BetSize and Ruleset are what the quick join asked for (and its player signed); Ruleset ""
	// is any.
	BetSize int64
	Ruleset string
	Signed  *Signed
}

func (a Join) Lobby() LobbyID { return a.LobbyID }

func (a Join) Apply(ctx context.Context, s *Service, tx Tx, now int64, actor Actor) (Result, error) {
	r, err := s.lobbyResult(ctx, tx, now, actor, a.LobbyID, func(o *op) error {
		if c := o.game.Config; c.BetSize != a.BetSize || (a.Ruleset != "" && c.Ruleset != a.Ruleset) {
			return refuse(CodeWrongStage, "the lobby's game is now one of bet %d and ruleset %s, not the quick join's", c.BetSize, c.Ruleset)
		}
		return o.register(now, actor, a.Signed)
	})
	if r.Refusal != nil && notJoinable[r.Refusal.Code] {
		tentative := *r.Refusal
		tentative.tentative = true
		r.Refusal = &tentative
	}
	return r, err
}

// notJoinable are the refusals of a registration in a game that is no longer joinable (for this
// account).
var notJoinable = map[Code]bool{CodeWrongStage: true, CodeLobbyFull: true, CodeAlreadyRegistered: true, CodeRejoinLimit: true}

// Leave withdraws from the lobby's game during registration (see Service.Leave).
type Leave struct {
	LobbyID LobbyID
	Signed  *Signed
}

func (a Leave) Lobby() LobbyID { return a.LobbyID }

func (a Leave) Apply(ctx context.Context, s *Service, tx Tx, now int64, actor Actor) (Result, error) {
	return s.lobbyResult(ctx, tx, now, actor, a.LobbyID, func(o *op) error { return o.leave(now, actor, a.Signed) })
}

// Commit records a commitment in the current round (see Service.Commit).
type Commit struct {
	LobbyID    LobbyID
	Commitment engine.Commitment
	Signed     *Signed
}

func (a Commit) Lobby() LobbyID { return a.LobbyID }

func (a Commit) Apply(ctx context.Context, s *Service, tx Tx, now int64, actor Actor) (Result, error) {
	return s.lobbyResult(ctx, tx, now, actor, a.LobbyID, func(o *op) error { return o.commit(now, actor, a.Commitment, a.Signed) })
}

// Reveal opens the actor's commitment (see Service.Reveal).
type Reveal struct {
	LobbyID LobbyID
	Reveal  string
	Signed  *Signed
}

func (a Reveal) Lobby() LobbyID { return a.LobbyID }

func (a Reveal) Apply(ctx context.Context, s *Service, tx Tx, now int64, actor Actor) (Result, error) {
	if err := engine.CheckRevealSize(a.Reveal); err != nil {
		return refused(now, invalid("reveal", err.Error()))
	}
	return s.lobbyResult(ctx, tx, now, actor, a.LobbyID, func(o *op) error { return o.reveal(now, actor, a.Reveal, a.Signed) })
}

// Stop ends the lobby's current game (see Service.Stop).
type Stop struct {
	LobbyID LobbyID
	Reason  string
	// Auth is the admin's signature, recorded in game_stopped (nil: unsigned).
	Auth *AdminAuth
}

func (a Stop) Lobby() LobbyID { return a.LobbyID }

func (a Stop) SignedBy(auth *AdminAuth) Operation { a.Auth = auth; return a }

func (a Stop) Apply(ctx context.Context, s *Service, tx Tx, now int64, actor Actor) (Result, error) {
	return s.lobbyResult(ctx, tx, now, actor, a.LobbyID, func(o *op) error { return o.stopByAdmin(now, actor, a.Reason, a.Auth) })
}

// CloseLobby closes the lobby (see Service.CloseLobby).
type CloseLobby struct {
	LobbyID LobbyID
	// Auth is the admin's signature, recorded in lobby_closed (nil: unsigned).
	Auth *AdminAuth
}

func (a CloseLobby) Lobby() LobbyID { return a.LobbyID }

func (a CloseLobby) SignedBy(auth *AdminAuth) Operation { a.Auth = auth; return a }

func (a CloseLobby) Apply(ctx context.Context, s *Service, tx Tx, now int64, actor Actor) (Result, error) {
	return s.lobbyResult(ctx, tx, now, actor, a.LobbyID, func(o *op) error { return o.close(now, actor, a.Auth) })
}

// ChangeNextConfig sets the config of the lobby's next game (see Service.ChangeNextConfig).
type ChangeNextConfig struct {
	LobbyID LobbyID
	Config  Config
	// Auth is the admin's signature, recorded in next_config_changed (nil: unsigned).
	Auth *AdminAuth
}

func (a ChangeNextConfig) Lobby() LobbyID { return a.LobbyID }

func (a ChangeNextConfig) SignedBy(auth *AdminAuth) Operation { a.Auth = auth; return a }

func (a ChangeNextConfig) Apply(ctx context.Context, s *Service, tx Tx, now int64, actor Actor) (Result, error) {
	return s.lobbyResult(ctx, tx, now, actor, a.LobbyID, func(o *op) error { return o.changeNextConfig(now, actor, a.Config, a.Auth) })
}

// Expire applies the deadlines of the lobby's game that have passed (see Service.Expire): the
// clock worker's operation. Result.Expired reports whether there were any.
type Expire struct{ LobbyID LobbyID }

func (a Expire) Lobby() LobbyID { return a.LobbyID }

func (a Expire) Apply(ctx context.Context, s *Service, tx Tx, now int64, actor Actor) (Result, error) {
	return s.lobbyResult(ctx, tx, now, actor, a.LobbyID, func(*op) error { return nil })
}

// CreateLobby creates a lobby with its first game (see Service.CreateLobby).
type CreateLobby struct {
	Name   string
	Config Config
	// Auth is the admin's signature, recorded in lobby_created (nil: unsigned).
	Auth *AdminAuth
}

func (a CreateLobby) Lobby() LobbyID { return "" }

func (a CreateLobby) SignedBy(auth *AdminAuth) Operation { a.Auth = auth; return a }

func (a CreateLobby) Apply(ctx context.Context, s *Service, tx Tx, now int64, actor Actor) (Result, error) {
	o, err := s.createLobby(ctx, tx, now, actor, a.Name, a.Config, a.Auth)
	if err != nil {
		return refused(now, err)
	}
	return o.result(actor, now)
}

// Credit moves money from the treasury to a player (see Service.Credit).
type Credit struct {
	Account AccountID
	Amount  int64
	Note    MoneyNote
}

func (a Credit) Lobby() LobbyID { return "" }

func (a Credit) Apply(ctx context.Context, s *Service, tx Tx, now int64, actor Actor) (Result, error) {
	return accountResult(s.Credit(ctx, tx, now, actor, a.Account, a.Amount, a.Note))(now)
}

func (a Credit) SignedBy(auth *AdminAuth) Operation { a.Note.Auth = auth; return a }

// Debit moves money from a player to the treasury (see Service.Debit).
type Debit struct {
	Account AccountID
	Amount  int64
	Note    MoneyNote
}

func (a Debit) Lobby() LobbyID { return "" }

func (a Debit) Apply(ctx context.Context, s *Service, tx Tx, now int64, actor Actor) (Result, error) {
	return accountResult(s.Debit(ctx, tx, now, actor, a.Account, a.Amount, a.Note))(now)
}

func (a Debit) SignedBy(auth *AdminAuth) Operation { a.Note.Auth = auth; return a }

func accountResult(a Account, err error) func(now int64) (Result, error) {
	return func(now int64) (Result, error) {
		if err != nil {
			return refused(now, err)
		}
		return Result{At: now, Account: &a}, nil
	}
}
