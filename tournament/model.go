// Package tournament is the lobby and game state machine: Gear's rock-paper-scissors program as a
// pure, deterministic core. It performs no I/O and never reads the clock: every operation receives
// the instant it happens at and a Tx through which it reads and changes persistent state.
//
// The core never loads a whole lobby. It works on the game's header (stage, round, deadline,
// counters) and the acting player's rows, and states lobby-wide changes as effects over sets
// (Tx.Eliminate, Tx.SplitEscrow) that a store runs as one statement each.
package tournament

import (
	"slices"

	"github.com/commitreveal/rps/engine"
)

// AccountID identifies an account (a player or an admin).
type AccountID string

// LobbyID identifies a lobby.
type LobbyID string

// GameID identifies a game.
type GameID string

// Role is what an account may do.
type Role string

// Roles. Admins run lobbies and may not play; players play.
const (
	RolePlayer Role = "player"
	RoleAdmin  Role = "admin"
)

// Actor is the authenticated caller of an operation.
type Actor struct {
	ID   AccountID
	Role Role
}

// Account is the part of an account the core needs.
type Account struct {
	ID        AccountID
	Name      string
	Role      Role
	Balance   int64
	CreatedAt int64
	// DisabledAt is when an admin disabled the account (0 while it is active).
	DisabledAt int64
}

// Stage is where a game is. Registration, moves and reveal are open; finished and stopped are
// final.
type Stage string

// Stages of a game.
const (
	StageRegistration Stage = "registration"
	StageMoves        Stage = "moves"
	StageReveal       Stage = "reveal"
	StageFinished     Stage = "finished"
	StageStopped      Stage = "stopped"
)

// OpenStages are the stages of a game that can still change; EndedStages those of a game that
// has finished or stopped. Every stage is in exactly one. Where SQL must say which games are open
// or ended, the store writes it from these lists (a test holds it to them).
var (
	OpenStages  = []Stage{StageRegistration, StageMoves, StageReveal}
	EndedStages = []Stage{StageFinished, StageStopped}
)

// Open reports whether the game can still change (it has not finished or stopped).
func (s Stage) Open() bool {
	return slices.Contains(OpenStages, s)
}

// Due reports whether a stage's deadline (0: none) has passed at now: a stage expires when the
// time is strictly past its deadline. (The store's SQL says the same, held to it by a test.)
func Due(deadline, now int64) bool {
	return deadline != 0 && now > deadline
}

// DueAt is the first instant at which a deadline is due.
func DueAt(deadline int64) int64 { return deadline + 1 }

// Joinable reports whether the game takes registrations now: its registration is open and not
// full. Whether it takes a given player (not an admin, not in already, with the bet) is
// Register's decision, which refuses with wrong_stage or lobby_full exactly when the game is not
// joinable. (The store's SQL that lists joinable lobbies says the same, held to it by a test.)
func (g Game) Joinable() bool {
	return g.Stage == StageRegistration && g.Players < g.Config.PlayersCountLimit
}

// Lobby runs one game after another with its config.
type Lobby struct {
	ID   LobbyID
	Name string
	// Closed lobbies start no new game after the current one ends.
	Closed bool
	// Config is the config of the next game to be opened (and of the current one, unless an admin
	// changed it since).
	Config Config
	// NextConfig, when set, replaces Config when the current game ends.
	NextConfig *Config
	// GameID is the lobby's latest game: the current one, or the last one if the lobby is closed.
	GameID GameID
	// Games counts the games ever opened in the lobby; a game's Number is its position.
	Games     int
	CreatedAt int64
}

// Clone returns a copy of the lobby that shares nothing with it.
func (l Lobby) Clone() Lobby {
	if l.NextConfig != nil {
		c := *l.NextConfig
		l.NextConfig = &c
	}
	return l
}

// Game is a game's header: everything an action needs, of constant size whatever the lobby's size.
type Game struct {
	ID      GameID
	LobbyID LobbyID
	Number  int
	Config  Config
	// RulesetHash is the hex content hash of the ruleset the game is played under, so that editing
	// a ruleset file never changes a game in progress.
	RulesetHash string
	Stage       Stage
	// Round is 0 during registration and counts from 1 afterwards.
	Round int
	// StageStartedAt and Deadline are Unix milliseconds; both are 0 for an empty registration, which
	// has no window until its first player registers.
	StageStartedAt int64
	Deadline       int64
	// Extensions counts the consecutive extensions of the current stage.
	Extensions int
	// Joined counts registrations ever made, so registration order survives players leaving.
	Joined int
	// Players counts registered players (eliminated ones included, those who left not).
	Players int
	// Active counts players still in the game.
	Active int
	// Committed and Revealed count the current round's commitments and reveals.
	Committed int
	Revealed  int
	// Escrow holds the bets; it is zero once the game has finished or stopped.
	Escrow int64
	// Salt salts the digest that moves_closed published of the current round's commitments, and is
	// as sealed as they are: shown to nobody, and revealed (then zeroed) by the event that makes
	// them public (round_resolved, or game_finished/game_stopped when the game ends first). Zero
	// when no digest waits for its salt.
	Salt       Salt
	Winner     AccountID
	Payout     int64
	StopReason string
	CreatedAt  int64
	EndedAt    int64
}

// Player is a player's registration in a game.
type Player struct {
	GameID    GameID
	AccountID AccountID
	// Order is the registration order within the game (1, 2, ...); a split's remainder goes one
	// unit each in this order.
	Order        int
	RegisteredAt int64
	Active       bool
	// EliminatedRound is the round the player went out in (0 while active).
	EliminatedRound int
}

// RoundMove is a player's commitment and reveal in one round.
type RoundMove struct {
	GameID      GameID
	Round       int
	AccountID   AccountID
	Commitment  engine.Commitment
	CommittedAt int64
	Revealed    bool
	Reveal      string
	Move        engine.Move
	RevealedAt  int64
	// CommitSignature and RevealSignature are the player's signatures of the commit and the
	// reveal (nil: unsigned), public with the round's moves.
	CommitSignature []byte
	RevealSignature []byte
}

// KeepKind says which of a round's active players an elimination keeps.
type KeepKind string

// The players an elimination keeps.
const (
	// KeepCommitted keeps the players who committed in the round.
	KeepCommitted KeepKind = "committed"
	// KeepRevealed keeps the players who revealed in the round.
	KeepRevealed KeepKind = "revealed"
	// KeepMoves keeps the players whose revealed move is in Keep.Moves.
	KeepMoves KeepKind = "moves"
)

// Keep describes the set of active players an elimination keeps; every other active player of
// the game is out.
type Keep struct {
	Kind  KeepKind
	Moves engine.MoveSet
}

// Keeps reports whether the elimination keeps an active player whose move in the round is m
// (moved false: the player has none). This is the rule's one statement in Go; store's eliminateSQL
// says it in SQL, and a test holds the two together.
func (k Keep) Keeps(m RoundMove, moved bool) bool {
	switch k.Kind {
	case KeepCommitted:
		return moved
	case KeepRevealed:
		return moved && m.Revealed
	case KeepMoves:
		return moved && m.Revealed && k.Moves.Has(m.Move)
	}
	return true
}

// SealedValue is the move's value of a kind of sealed values, as a digest takes it: its
// commitment in lower-case hex, or its reveal string (false: it has none, unrevealed).
func (m RoundMove) SealedValue(kind Sealed) (string, bool) {
	if kind == SealedCommitments {
		return m.Commitment.String(), true
	}
	return m.Reveal, m.Revealed
}

// Sealed names the sealed values of a stage.
type Sealed string

// Sealed values: a round's commitments (hex) and its reveal strings.
const (
	SealedCommitments Sealed = "commitments"
	SealedReveals     Sealed = "reveals"
)

// LedgerKind names the kind of a ledger account.
type LedgerKind string

// Ledger account kinds.
const (
	LedgerTreasury LedgerKind = "treasury"
	LedgerPlayer   LedgerKind = "player"
	LedgerEscrow   LedgerKind = "escrow"
)

// LedgerAccount is one side of a posting: the treasury, a player's balance or a game's escrow.
type LedgerAccount struct {
	Kind LedgerKind
	// ID is the account id for a player, the game id for an escrow, empty for the treasury.
	ID string
}

// Treasury is the ledger account that funds credits and receives debits.
var Treasury = LedgerAccount{Kind: LedgerTreasury}

// PlayerAccount is the ledger account of a player's balance.
func PlayerAccount(id AccountID) LedgerAccount {
	return LedgerAccount{Kind: LedgerPlayer, ID: string(id)}
}

// EscrowAccount is the ledger account of a game's escrow.
func EscrowAccount(id GameID) LedgerAccount { return LedgerAccount{Kind: LedgerEscrow, ID: string(id)} }

// PostingKind says why money moved.
type PostingKind string

// Posting kinds.
const (
	PostingCredit PostingKind = "credit" // treasury -> player (deposit)
	PostingDebit  PostingKind = "debit"  // player -> treasury (withdrawal)
	PostingBet    PostingKind = "bet"    // player -> escrow (register)
	PostingRefund PostingKind = "refund" // escrow -> player (leave)
	PostingPayout PostingKind = "payout" // escrow -> player (win)
	PostingSplit  PostingKind = "split"  // escrow -> players (stop)
)

// Posting moves Amount from one ledger account to another: a pair of ledger entries.
type Posting struct {
	From   LedgerAccount
	To     LedgerAccount
	Amount int64
	Kind   PostingKind
	GameID GameID
	At     int64
	// Note is what a credit's or debit's entries record of the admin's request (zero for the
	// postings of a game).
	Note MoneyNote
}

// MoneyNote is what the ledger entries of a credit or debit record beside the money, so that
// the player whose balance moved sees why and who signed for it: the admin's memo ("": none)
// and the admin's signature of the request (nil: unsigned).
type MoneyNote struct {
	Memo string
	Auth *AdminAuth
}

// LedgerReport sums the whole ledger and checks its invariants.
type LedgerReport struct {
	Treasury       int64
	PlayerBalances int64
	Escrows        int64
	EntriesSum     int64
	// EntriesSumToZero: every posting is a pair of opposite entries.
	EntriesSumToZero bool
	// BalancesMatchEntries: each player balance and each game escrow equals the sum of its entries.
	BalancesMatchEntries bool
	// NoNegativeBalance: no player balance is below zero.
	NoNegativeBalance bool
	// ClosedEscrowsZero: every finished or stopped game's escrow is zero.
	ClosedEscrowsZero bool
}

// OK reports whether every invariant holds.
func (r LedgerReport) OK() bool {
	return r.EntriesSumToZero && r.BalancesMatchEntries && r.NoNegativeBalance && r.ClosedEscrowsZero
}

// SealedPublic reports whether a round's sealed values, its commitments and its reveals, may be
// shown to everyone: once the round has been resolved or the game has ended. Until then each
// player sees only their own. A commitment stays sealed through the reveal stage too: a player
// with a weak password could otherwise be brute-forced (only the digit and the password to
// guess) while the others still decide whether to reveal. The moves_closed event's digest, salted
// with Game.Salt, binds the commitments meanwhile without letting anyone test a guess of them.
func SealedPublic(g Game, round int) bool {
	return round < g.Round || !g.Stage.Open()
}
