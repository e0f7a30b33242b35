// Package tournamenttest is the scenario and property suite that every implementation of
// tournament.Tx runs: the in-memory reference model here, the Postgres store in package store.
package tournamenttest

import (
	"context"

	"github.com/commitreveal/rps/tournament"
)

// Backend is an implementation of the core's persistence under test, with the few extra
// operations a test needs to set up accounts and look at the result.
type Backend interface {
	// Do runs fn in one transaction. The transaction commits when fn returns nil or a refusal
	// (expiries applied before a refused action are kept) and rolls back otherwise; Do returns
	// fn's error.
	Do(ctx context.Context, fn func(tx tournament.Tx) error) error
	// CreateAccount creates an account and credits it balance from the treasury.
	CreateAccount(ctx context.Context, id tournament.AccountID, name string, role tournament.Role, balance int64) error
	// Balance returns an account's balance.
	Balance(ctx context.Context, id tournament.AccountID) (int64, error)
	// Lobby returns a lobby without locking it.
	Lobby(ctx context.Context, id tournament.LobbyID) (tournament.Lobby, error)
	// Game returns a game's header.
	Game(ctx context.Context, id tournament.GameID) (tournament.Game, error)
	// Players returns a game's players in registration order.
	Players(ctx context.Context, game tournament.GameID) ([]tournament.Player, error)
	// Moves returns a round's moves in bytewise order of account id.
	Moves(ctx context.Context, game tournament.GameID, round int) ([]tournament.RoundMove, error)
	// Events returns a lobby's whole log in order.
	Events(ctx context.Context, lobby tournament.LobbyID) ([]tournament.LoggedEvent, error)
	// Ledger sums the ledger and checks its invariants.
	Ledger(ctx context.Context) (tournament.LedgerReport, error)
}
