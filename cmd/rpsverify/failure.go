package main

import (
	"fmt"
	"strings"
)

// Failure is an item that does not verify: where it is (a lobby's event, game, round and
// player, or an account's key event), what was checked, what the public data implies and what
// the server shows.
type Failure struct {
	Lobby string `json:"lobby,omitempty"`
	// Account is set for a key event of the account's key log (Seq is then the key event's).
	Account  string `json:"account,omitempty"`
	Seq      int64  `json:"seq,omitempty"`
	Game     string `json:"game,omitempty"`
	Round    int    `json:"round,omitempty"`
	Player   string `json:"player,omitempty"`
	Item     string `json:"item"`
	Expected string `json:"expected"`
	Found    string `json:"found"`
}

func (f *Failure) Error() string {
	var b strings.Builder
	if f.Lobby != "" {
		fmt.Fprintf(&b, "lobby %s", f.Lobby)
		if f.Seq != 0 {
			fmt.Fprintf(&b, " event %d", f.Seq)
		}
	} else {
		fmt.Fprintf(&b, "account %s", f.Account)
		if f.Seq != 0 {
			fmt.Fprintf(&b, " key event %d", f.Seq)
		}
	}
	if f.Game != "" {
		fmt.Fprintf(&b, " game %s", f.Game)
	}
	if f.Round != 0 {
		fmt.Fprintf(&b, " round %d", f.Round)
	}
	if f.Player != "" {
		fmt.Fprintf(&b, " player %s", f.Player)
	}
	fmt.Fprintf(&b, ": %s: expected %s, found %s", f.Item, f.Expected, f.Found)
	return b.String()
}
