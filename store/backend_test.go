package store

import (
	"context"
	"math"
	"testing"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/internal/pgtest"
	"github.com/commitreveal/rps/tournament"
	"github.com/commitreveal/rps/tournament/tournamenttest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// backend adapts a Store to tournamenttest.Backend: the shared suite drives the core with its
// own clock and ids, so Do hands fn the transaction and ignores the store's instant.
type backend struct{ s *Store }

var _ tournamenttest.Backend = backend{}

func (b backend) Do(ctx context.Context, fn func(tx tournament.Tx) error) error {
	return b.s.Run(ctx, func(tx tournament.Tx, _ int64) error { return fn(tx) })
}

func (b backend) CreateAccount(ctx context.Context, id tournament.AccountID, name string, role tournament.Role, balance int64) error {
	return b.s.run(ctx, func(t *pgTx) error {
		a, err := t.insertAccount(ctx, tournament.Account{ID: id, Name: name, Role: role}, nil)
		if err != nil || balance == 0 {
			return err
		}
		// Straight through the Tx, like the model: Credit refuses admins, the suite may fund them.
		return t.Transfer(ctx, tournament.Posting{
			From: tournament.Treasury, To: tournament.PlayerAccount(id), Amount: balance, Kind: tournament.PostingCredit, At: a.CreatedAt,
		})
	})
}

func (b backend) Balance(ctx context.Context, id tournament.AccountID) (int64, error) {
	a, err := b.s.Account(ctx, id)
	return a.Balance, err
}

func (b backend) Lobby(ctx context.Context, id tournament.LobbyID) (tournament.Lobby, error) {
	v, err := b.s.Lobby(ctx, id)
	return v.Lobby, err
}

// Game reads the header as the core sees it, its salt included (which no read of the API loads).
func (b backend) Game(ctx context.Context, id tournament.GameID) (tournament.Game, error) {
	var salt []byte
	g, err := scanGame(queryRow(ctx, b.s.pool, `SELECT `+gameColumns+`, moves_salt FROM games WHERE id = $1`, id), &salt)
	copy(g.Salt[:], salt)
	return g, err
}

func (b backend) Players(ctx context.Context, game tournament.GameID) ([]tournament.Player, error) {
	return b.s.Players(ctx, game, 0, math.MaxInt32)
}

func (b backend) Moves(ctx context.Context, game tournament.GameID, round int) ([]tournament.RoundMove, error) {
	return b.s.Moves(ctx, game, round, "", math.MaxInt32)
}

func (b backend) Events(ctx context.Context, lobby tournament.LobbyID) ([]tournament.LoggedEvent, error) {
	return b.s.Events(ctx, lobby, 0, math.MaxInt32)
}

func (b backend) Ledger(ctx context.Context) (tournament.LedgerReport, error) {
	return b.s.LedgerReport(ctx)
}

// newService is the suite's service: its ids and minimum timeout.
func newService() *tournament.Service {
	return tournament.NewService(tournament.Options{
		Rules: engine.Builtin(), MinTimeoutMs: tournamenttest.Timeout, NewID: tournamenttest.NewID, NewSalt: tournamenttest.NewSalt,
	})
}

// newStore returns a store on a fresh database whose ledger invariants and references are
// checked when the test ends.
func newStore(t *testing.T, opts Options) *Store {
	t.Helper()
	if opts.Service == nil {
		opts.Service = newService()
	}
	s := New(pgtest.New(t), opts)
	t.Cleanup(func() { checkLedger(t, s); checkReferences(t, s); checkRows(t, s) })
	return s
}

func checkLedger(t *testing.T, s *Store) {
	t.Helper()
	r, err := s.LedgerReport(context.Background())
	if err != nil {
		t.Errorf("ledger report: %v", err)
		return
	}
	if !r.OK() {
		t.Errorf("ledger invariants fail: %+v", r)
	}
}

func TestSuite(t *testing.T) {
	t.Parallel()
	tournamenttest.Run(t, func(t *testing.T) tournamenttest.Backend {
		return backend{newStore(t, Options{})}
	})
}
