package memstore

import (
	"maps"

	"github.com/commitreveal/rps/tournament"
)

// Clone returns an independent copy of the store: a change to one never shows in the other.
//
// With forgetPast the copy keeps only what a later operation can read: each lobby's latest game
// (its header, players, leaves and moves), the last event of each lobby's log (the next one chains on
// it) and the ledger summed per ledger account. Every Tx method, Ledger and MoneyInPlay behave on
// it as on the original; Events returns only the kept last event, and Game, Players and Moves
// know only the latest games. A linearizability checker that copies the store at every step of
// a long history (internal/faulttest) then pays for the live state, not for the history.
func (s *Store) Clone(forgetPast bool) *Store {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := New()
	for id, a := range s.accounts {
		copied := *a
		c.accounts[id] = &copied
	}
	maps.Copy(c.keys, s.keys)
	for id, l := range s.lobbies {
		copied := l.Clone()
		c.lobbies[id] = &copied
	}
	keep := func(game tournament.GameID) bool {
		if !forgetPast {
			return true
		}
		g, ok := s.games[game]
		if !ok {
			return false
		}
		l, ok := s.lobbies[g.LobbyID]
		return ok && l.GameID == game
	}
	for id, g := range s.games {
		if keep(id) {
			copied := *g
			c.games[id] = &copied
		}
	}
	for game, byAccount := range s.players {
		if !keep(game) {
			continue
		}
		copied := make(map[tournament.AccountID]*tournament.Player, len(byAccount))
		for id, p := range byAccount {
			player := *p
			copied[id] = &player
		}
		c.players[game] = copied
	}
	for k, n := range s.leaves {
		if keep(k.game) {
			c.leaves[k] = n
		}
	}
	for k, m := range s.moves {
		if keep(k.game) {
			move := *m
			c.moves[k] = &move
		}
	}
	maps.Copy(c.rulesets, s.rulesets) // rulesets never change once recorded
	for id, log := range s.events {
		if forgetPast && len(log) > 1 {
			log = log[len(log)-1:]
		}
		// Appending to the copy must never write into the original's array.
		c.events[id] = append([]tournament.LoggedEvent(nil), log...)
	}
	if !forgetPast {
		c.entries = append([]entry(nil), s.entries...)
		return c
	}
	sums := map[tournament.LedgerAccount]int64{}
	var order []tournament.LedgerAccount
	for _, e := range s.entries {
		if _, seen := sums[e.account]; !seen {
			order = append(order, e.account)
		}
		sums[e.account] += e.amount
	}
	for _, account := range order {
		if sums[account] != 0 {
			c.entries = append(c.entries, entry{account: account, amount: sums[account]})
		}
	}
	return c
}
