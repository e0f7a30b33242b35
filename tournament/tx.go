package tournament

import (
	"context"

	"github.com/commitreveal/rps/engine"
)

// Tx is what the core needs from persistence, inside one transaction. A store implements it over
// Postgres; package memstore implements it in memory as the reference model. Both run the suite in
// package tournamenttest.
//
// Reads of single rows return ErrNotFound when the row does not exist. No method's cost may grow
// with the lobby's size except the set effects (Eliminate, SplitEscrow, SealedValues,
// RevealCounts), which run only when a stage changes.
type Tx interface {
	// LockLobby locks the lobby for the rest of the transaction, so a lobby's operations run one
	// at a time, and returns it with its latest game.
	LockLobby(ctx context.Context, id LobbyID) (Lobby, Game, error)
	// InsertLobby stores a new lobby (its ID is set by the caller).
	InsertLobby(ctx context.Context, l Lobby) error
	// UpdateLobby stores a changed lobby.
	UpdateLobby(ctx context.Context, l Lobby) error
	// InsertGame stores a new game.
	InsertGame(ctx context.Context, g Game) error
	// UpdateGame stores a changed game header.
	UpdateGame(ctx context.Context, g Game) error

	// Account returns an account with its balance.
	Account(ctx context.Context, id AccountID) (Account, error)
	// Keys returns the state of an account's keys, with whether keyID ("": none) is one of its
	// active ones.
	Keys(ctx context.Context, account AccountID, keyID string) (KeyState, error)
	// SaveRuleset records a ruleset under its content hash (a no-op if already recorded).
	SaveRuleset(ctx context.Context, rs *engine.Ruleset) error
	// Ruleset returns the ruleset recorded under a content hash.
	Ruleset(ctx context.Context, hash string) (*engine.Ruleset, error)

	// Player returns a player's registration in a game.
	Player(ctx context.Context, game GameID, account AccountID) (Player, error)
	// InsertPlayer registers a player.
	InsertPlayer(ctx context.Context, p Player) error
	// DeletePlayer removes a registration (a player leaving during registration).
	DeletePlayer(ctx context.Context, game GameID, account AccountID) error
	// Leaves returns how many times the account has left the game (0 if it never did).
	Leaves(ctx context.Context, game GameID, account AccountID) (int, error)
	// CountLeave adds one to the account's leaves of the game.
	CountLeave(ctx context.Context, game GameID, account AccountID) error

	// RoundMove returns a player's commitment (and reveal) in a round.
	RoundMove(ctx context.Context, game GameID, round int, account AccountID) (RoundMove, error)
	// InsertMove stores a commitment.
	InsertMove(ctx context.Context, m RoundMove) error
	// UpdateMove stores a reveal.
	UpdateMove(ctx context.Context, m RoundMove) error

	// Eliminate puts out, in the given round, every active player of the game that keep does not
	// keep.
	Eliminate(ctx context.Context, game GameID, round int, keep Keep) error
	// FirstActive returns the active player of the game with the lowest registration order.
	FirstActive(ctx context.Context, game GameID) (AccountID, error)
	// RevealCounts counts a round's reveals per move.
	RevealCounts(ctx context.Context, game GameID, round int) (engine.Counts, error)
	// SealedValues calls fn for each player who acted in the round's stage, in bytewise order of
	// account id, with the sealed value: the commitment in lower-case hex, or the reveal string.
	SealedValues(ctx context.Context, game GameID, round int, kind Sealed, fn func(player AccountID, value string) error) error

	// MoneyInPlay is the sum of every player balance and game escrow: all the money credits put
	// in and debits did not take out. It holds concurrent credits back until this transaction
	// ends, so that two of them cannot both pass a bound on it.
	MoneyInPlay(ctx context.Context) (int64, error)
	// Transfer records a posting (a pair of ledger entries) and applies it to player balances;
	// escrow balances live in the game header, which the caller updates.
	Transfer(ctx context.Context, p Posting) error
	// SplitEscrow pays share to every active player of the game, plus one unit more to each of the
	// first remainder of them in registration order, as postings of the given kind (a split, or a
	// refund of every bet) from its escrow.
	SplitEscrow(ctx context.Context, game GameID, share int64, remainder int, kind PostingKind, at int64) error

	// Append adds an event to its lobby's log, giving it the next sequence number and chaining its
	// hash.
	Append(ctx context.Context, e Event) error
	// ShiftDeadlines moves every open stage (its start and deadline) of every game later by gap
	// milliseconds and returns the lobbies whose games moved.
	ShiftDeadlines(ctx context.Context, gap int64) ([]LobbyID, error)
}
