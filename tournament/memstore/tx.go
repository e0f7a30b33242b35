package memstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/tournament"
)

// memTx is a transaction on the store, whose lock the enclosing Do holds. Every change records
// how to undo it.
type memTx struct {
	s    *Store
	undo []func()
}

var _ tournament.Tx = (*memTx)(nil)

// restore records the current value of *p so that a rollback puts it back.
func restore[T any](tx *memTx, p *T) {
	old := *p
	tx.undo = append(tx.undo, func() { *p = old })
}

func (tx *memTx) LockLobby(ctx context.Context, id tournament.LobbyID) (tournament.Lobby, tournament.Game, error) {
	l, ok := tx.s.lobbies[id]
	if !ok {
		return tournament.Lobby{}, tournament.Game{}, tournament.ErrNotFound
	}
	g, ok := tx.s.games[l.GameID]
	if !ok {
		return tournament.Lobby{}, tournament.Game{}, fmt.Errorf("lobby %s: game %s missing", id, l.GameID)
	}
	return l.Clone(), *g, nil
}

func (tx *memTx) InsertLobby(ctx context.Context, l tournament.Lobby) error {
	if _, ok := tx.s.lobbies[l.ID]; ok {
		return fmt.Errorf("lobby %s already exists", l.ID)
	}
	l = l.Clone()
	tx.s.lobbies[l.ID] = &l
	tx.undo = append(tx.undo, func() { delete(tx.s.lobbies, l.ID) })
	return nil
}

func (tx *memTx) UpdateLobby(ctx context.Context, l tournament.Lobby) error {
	p, ok := tx.s.lobbies[l.ID]
	if !ok {
		return tournament.ErrNotFound
	}
	restore(tx, p)
	*p = l.Clone()
	return nil
}

func (tx *memTx) InsertGame(ctx context.Context, g tournament.Game) error {
	if _, ok := tx.s.games[g.ID]; ok {
		return fmt.Errorf("game %s already exists", g.ID)
	}
	tx.s.games[g.ID] = &g
	tx.undo = append(tx.undo, func() { delete(tx.s.games, g.ID) })
	return nil
}

func (tx *memTx) UpdateGame(ctx context.Context, g tournament.Game) error {
	p, ok := tx.s.games[g.ID]
	if !ok {
		return tournament.ErrNotFound
	}
	restore(tx, p)
	*p = g
	return nil
}

func (tx *memTx) Account(ctx context.Context, id tournament.AccountID) (tournament.Account, error) {
	a, ok := tx.s.accounts[id]
	if !ok {
		return tournament.Account{}, tournament.ErrNotFound
	}
	return *a, nil
}

func (tx *memTx) Keys(ctx context.Context, account tournament.AccountID, keyID string) (tournament.KeyState, error) {
	var st tournament.KeyState
	for id, k := range tx.s.keys {
		if k.account != account {
			continue
		}
		st.Ever = true
		if !k.retired {
			st.Active++
			st.SignerActive = st.SignerActive || id == keyID
		}
	}
	return st, nil
}

func (tx *memTx) SaveRuleset(ctx context.Context, rs *engine.Ruleset) error {
	h := rs.HashHex()
	if _, ok := tx.s.rulesets[h]; ok {
		return nil
	}
	tx.s.rulesets[h] = rs
	tx.undo = append(tx.undo, func() { delete(tx.s.rulesets, h) })
	return nil
}

func (tx *memTx) Ruleset(ctx context.Context, hash string) (*engine.Ruleset, error) {
	rs, ok := tx.s.rulesets[hash]
	if !ok {
		return nil, tournament.ErrNotFound
	}
	return rs, nil
}

func (tx *memTx) Player(ctx context.Context, game tournament.GameID, account tournament.AccountID) (tournament.Player, error) {
	p, ok := tx.s.players[game][account]
	if !ok {
		return tournament.Player{}, tournament.ErrNotFound
	}
	return *p, nil
}

func (tx *memTx) InsertPlayer(ctx context.Context, p tournament.Player) error {
	byAccount := tx.s.players[p.GameID]
	if byAccount == nil {
		byAccount = map[tournament.AccountID]*tournament.Player{}
		tx.s.players[p.GameID] = byAccount
	}
	if _, ok := byAccount[p.AccountID]; ok {
		return fmt.Errorf("player %s already in game %s", p.AccountID, p.GameID)
	}
	byAccount[p.AccountID] = &p
	tx.undo = append(tx.undo, func() { delete(byAccount, p.AccountID) })
	return nil
}

func (tx *memTx) DeletePlayer(ctx context.Context, game tournament.GameID, account tournament.AccountID) error {
	byAccount := tx.s.players[game]
	p, ok := byAccount[account]
	if !ok {
		return tournament.ErrNotFound
	}
	delete(byAccount, account)
	tx.undo = append(tx.undo, func() { byAccount[account] = p })
	return nil
}

func (tx *memTx) Leaves(ctx context.Context, game tournament.GameID, account tournament.AccountID) (int, error) {
	return tx.s.leaves[playerKey{game, account}], nil
}

func (tx *memTx) CountLeave(ctx context.Context, game tournament.GameID, account tournament.AccountID) error {
	k := playerKey{game, account}
	n := tx.s.leaves[k]
	tx.s.leaves[k] = n + 1
	tx.undo = append(tx.undo, func() { tx.s.leaves[k] = n })
	return nil
}

func (tx *memTx) RoundMove(ctx context.Context, game tournament.GameID, round int, account tournament.AccountID) (tournament.RoundMove, error) {
	m, ok := tx.s.moves[moveKey{game, round, account}]
	if !ok {
		return tournament.RoundMove{}, tournament.ErrNotFound
	}
	return *m, nil
}

func (tx *memTx) InsertMove(ctx context.Context, m tournament.RoundMove) error {
	k := moveKey{m.GameID, m.Round, m.AccountID}
	if _, ok := tx.s.moves[k]; ok {
		return fmt.Errorf("move of %s in round %d already exists", m.AccountID, m.Round)
	}
	tx.s.moves[k] = &m
	tx.undo = append(tx.undo, func() { delete(tx.s.moves, k) })
	return nil
}

func (tx *memTx) UpdateMove(ctx context.Context, m tournament.RoundMove) error {
	p, ok := tx.s.moves[moveKey{m.GameID, m.Round, m.AccountID}]
	if !ok {
		return tournament.ErrNotFound
	}
	restore(tx, p)
	*p = m
	return nil
}

func (tx *memTx) Eliminate(ctx context.Context, game tournament.GameID, round int, keep tournament.Keep) error {
	for id, p := range tx.s.players[game] {
		if !p.Active || tx.keeps(game, round, id, keep) {
			continue
		}
		restore(tx, p)
		p.Active = false
		p.EliminatedRound = round
	}
	return nil
}

func (tx *memTx) keeps(game tournament.GameID, round int, id tournament.AccountID, keep tournament.Keep) bool {
	m, ok := tx.s.moves[moveKey{game, round, id}]
	if !ok {
		return keep.Keeps(tournament.RoundMove{}, false)
	}
	return keep.Keeps(*m, true)
}

func (tx *memTx) FirstActive(ctx context.Context, game tournament.GameID) (tournament.AccountID, error) {
	for _, p := range tx.s.sortedPlayers(game) {
		if p.Active {
			return p.AccountID, nil
		}
	}
	return "", tournament.ErrNotFound
}

func (tx *memTx) RevealCounts(ctx context.Context, game tournament.GameID, round int) (engine.Counts, error) {
	var c engine.Counts
	for k, m := range tx.s.moves {
		if k.game == game && k.round == round && m.Revealed {
			c[m.Move]++
		}
	}
	return c, nil
}

func (tx *memTx) SealedValues(ctx context.Context, game tournament.GameID, round int, kind tournament.Sealed, fn func(tournament.AccountID, string) error) error {
	for _, m := range tx.s.roundMoves(game, round) {
		value, ok := m.SealedValue(kind)
		if !ok {
			continue
		}
		if err := fn(m.AccountID, value); err != nil {
			return err
		}
	}
	return nil
}

func (tx *memTx) Transfer(ctx context.Context, p tournament.Posting) error {
	for _, side := range []struct {
		account tournament.LedgerAccount
		amount  int64
	}{{p.From, -p.Amount}, {p.To, p.Amount}} {
		if side.account.Kind == tournament.LedgerPlayer {
			a, ok := tx.s.accounts[tournament.AccountID(side.account.ID)]
			if !ok {
				return fmt.Errorf("transfer: account %s: %w", side.account.ID, tournament.ErrNotFound)
			}
			if a.Role == tournament.RolePlayer && a.Balance+side.amount < 0 {
				return fmt.Errorf("transfer: balance of %s would be negative", a.ID)
			}
			restore(tx, a)
			a.Balance += side.amount
		}
		tx.appendEntry(side.account, side.amount)
	}
	return nil
}

func (tx *memTx) appendEntry(account tournament.LedgerAccount, amount int64) {
	n := len(tx.s.entries)
	tx.s.entries = append(tx.s.entries, entry{account: account, amount: amount})
	tx.undo = append(tx.undo, func() { tx.s.entries = tx.s.entries[:n] })
}

func (tx *memTx) SplitEscrow(ctx context.Context, game tournament.GameID, share int64, remainder int, kind tournament.PostingKind, at int64) error {
	paid := 0
	for _, p := range tx.s.sortedPlayers(game) {
		if !p.Active {
			continue
		}
		amount := share
		if paid < remainder {
			amount++
		}
		paid++
		if amount == 0 {
			continue
		}
		err := tx.Transfer(ctx, tournament.Posting{
			From: tournament.EscrowAccount(game), To: tournament.PlayerAccount(p.AccountID),
			Amount: amount, Kind: kind, GameID: game, At: at,
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (tx *memTx) Append(ctx context.Context, e tournament.Event) error {
	log := tx.s.events[e.LobbyID]
	var prev tournament.LoggedEvent
	if len(log) > 0 {
		prev = log[len(log)-1]
	}
	le, err := tournament.Seal(prev, e)
	if err != nil {
		return err
	}
	tx.s.events[e.LobbyID] = append(log, le)
	tx.undo = append(tx.undo, func() { tx.s.events[e.LobbyID] = log })
	return nil
}

func (tx *memTx) ShiftDeadlines(ctx context.Context, gap int64) ([]tournament.LobbyID, error) {
	var moved []tournament.LobbyID
	for _, g := range tx.s.games {
		if !g.Stage.Open() || g.Deadline == 0 {
			continue
		}
		restore(tx, g)
		g.StageStartedAt += gap
		g.Deadline += gap
		moved = append(moved, g.LobbyID)
	}
	slices.Sort(moved)
	return moved, nil
}

// MoneyInPlay is what the treasury gave out and did not take back. The model runs one
// transaction at a time, so it needs no lock.
func (tx *memTx) MoneyInPlay(ctx context.Context) (int64, error) {
	var treasury int64
	for _, e := range tx.s.entries {
		if e.account == tournament.Treasury {
			treasury += e.amount
		}
	}
	return -treasury, nil
}
