// Package memstore keeps the tournament's state in memory. It is the reference model of
// tournament.Tx: the unit tests run the core on it, and the Postgres store must behave exactly
// like it (a model-based test compares the two).
package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/tournament"
)

// Store holds every lobby, game, player, move, account, ledger entry and event in memory. One
// transaction runs at a time.
type Store struct {
	mu       sync.Mutex
	accounts map[tournament.AccountID]*tournament.Account
	lobbies  map[tournament.LobbyID]*tournament.Lobby
	games    map[tournament.GameID]*tournament.Game
	players  map[tournament.GameID]map[tournament.AccountID]*tournament.Player
	// leaves counts each account's leaves of each game.
	leaves   map[playerKey]int
	moves    map[moveKey]*tournament.RoundMove
	rulesets map[string]*engine.Ruleset
	events   map[tournament.LobbyID][]tournament.LoggedEvent
	entries  []entry
	// keys are the players' keys by id: their account and whether they are retired.
	keys map[string]memKey
}

// memKey is a player's key.
type memKey struct {
	account tournament.AccountID
	retired bool
}

type playerKey struct {
	game    tournament.GameID
	account tournament.AccountID
}

type moveKey struct {
	game    tournament.GameID
	round   int
	account tournament.AccountID
}

// entry is one side of a posting.
type entry struct {
	account tournament.LedgerAccount
	amount  int64
}

// New returns an empty store.
func New() *Store {
	return &Store{
		accounts: map[tournament.AccountID]*tournament.Account{},
		lobbies:  map[tournament.LobbyID]*tournament.Lobby{},
		games:    map[tournament.GameID]*tournament.Game{},
		players:  map[tournament.GameID]map[tournament.AccountID]*tournament.Player{},
		leaves:   map[playerKey]int{},
		moves:    map[moveKey]*tournament.RoundMove{},
		rulesets: map[string]*engine.Ruleset{},
		events:   map[tournament.LobbyID][]tournament.LoggedEvent{},
		keys:     map[string]memKey{},
	}
}

// Do runs fn as one transaction: it commits when fn returns nil or a refusal, and otherwise
// undoes every change fn made.
func (s *Store) Do(ctx context.Context, fn func(tx tournament.Tx) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	tx := &memTx{s: s}
	err := fn(tx)
	if _, refused := tournament.IsRefusal(err); err != nil && !refused {
		for i := len(tx.undo) - 1; i >= 0; i-- {
			tx.undo[i]()
		}
	}
	return err
}

// CreateAccount creates an account and credits it balance from the treasury.
func (s *Store) CreateAccount(ctx context.Context, id tournament.AccountID, name string, role tournament.Role, balance int64) error {
	return s.Do(ctx, func(t tournament.Tx) error {
		tx := t.(*memTx)
		if _, ok := s.accounts[id]; ok {
			return fmt.Errorf("account %s already exists", id)
		}
		s.accounts[id] = &tournament.Account{ID: id, Name: name, Role: role}
		tx.undo = append(tx.undo, func() { delete(s.accounts, id) })
		if balance == 0 {
			return nil
		}
		return tx.Transfer(ctx, tournament.Posting{From: tournament.Treasury, To: tournament.PlayerAccount(id), Amount: balance, Kind: tournament.PostingCredit})
	})
}

// AddKey binds a key (by its id) to an account.
func (s *Store) AddKey(account tournament.AccountID, keyID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[keyID] = memKey{account: account}
}

// RetireKey retires a key.
func (s *Store) RetireKey(keyID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k, ok := s.keys[keyID]; ok {
		k.retired = true
		s.keys[keyID] = k
	}
}

// Balance returns an account's balance.
func (s *Store) Balance(ctx context.Context, id tournament.AccountID) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.accounts[id]
	if !ok {
		return 0, tournament.ErrNotFound
	}
	return a.Balance, nil
}

// Lobby returns a lobby.
func (s *Store) Lobby(ctx context.Context, id tournament.LobbyID) (tournament.Lobby, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.lobbies[id]
	if !ok {
		return tournament.Lobby{}, tournament.ErrNotFound
	}
	return l.Clone(), nil
}

// Game returns a game's header.
func (s *Store) Game(ctx context.Context, id tournament.GameID) (tournament.Game, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.games[id]
	if !ok {
		return tournament.Game{}, tournament.ErrNotFound
	}
	return *g, nil
}

// Players returns a game's players in registration order.
func (s *Store) Players(ctx context.Context, game tournament.GameID) ([]tournament.Player, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sortedPlayers(game), nil
}

// Moves returns a round's moves in bytewise order of account id.
func (s *Store) Moves(ctx context.Context, game tournament.GameID, round int) ([]tournament.RoundMove, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.roundMoves(game, round), nil
}

// Events returns a lobby's log.
func (s *Store) Events(ctx context.Context, lobby tournament.LobbyID) ([]tournament.LoggedEvent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events[lobby]), nil
}

// Ledger sums the ledger and checks its invariants.
func (s *Store) Ledger(ctx context.Context) (tournament.LedgerReport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sums := map[tournament.LedgerAccount]int64{}
	var r tournament.LedgerReport
	for _, e := range s.entries {
		sums[e.account] += e.amount
		r.EntriesSum += e.amount
	}
	r.Treasury = sums[tournament.Treasury]
	r.EntriesSumToZero = r.EntriesSum == 0
	r.BalancesMatchEntries, r.NoNegativeBalance, r.ClosedEscrowsZero = true, true, true
	for id, a := range s.accounts {
		r.PlayerBalances += a.Balance
		if a.Balance != sums[tournament.PlayerAccount(id)] {
			r.BalancesMatchEntries = false
		}
		if a.Role == tournament.RolePlayer && a.Balance < 0 {
			r.NoNegativeBalance = false
		}
	}
	for id, g := range s.games {
		r.Escrows += g.Escrow
		if g.Escrow != sums[tournament.EscrowAccount(id)] {
			r.BalancesMatchEntries = false
		}
		if !g.Stage.Open() && g.Escrow != 0 {
			r.ClosedEscrowsZero = false
		}
	}
	return r, nil
}

func (s *Store) sortedPlayers(game tournament.GameID) []tournament.Player {
	out := make([]tournament.Player, 0, len(s.players[game]))
	for _, p := range s.players[game] {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b tournament.Player) int { return cmp.Compare(a.Order, b.Order) })
	return out
}

func (s *Store) roundMoves(game tournament.GameID, round int) []tournament.RoundMove {
	var out []tournament.RoundMove
	for k, m := range s.moves {
		if k.game == game && k.round == round {
			out = append(out, *m)
		}
	}
	slices.SortFunc(out, func(a, b tournament.RoundMove) int { return cmp.Compare(a.AccountID, b.AccountID) })
	return out
}
