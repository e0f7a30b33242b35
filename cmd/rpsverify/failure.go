package main

import (
	"fmt"
	"strings"
)

// Failure is the first item of a lobby that does not verify: where it is (lobby, event, game,
// round), what was checked, what the public data implies and what the server shows.
type Failure struct {
	Lobby    string `json:"lobby"`
	Seq      int64  `json:"seq,omitempty"`
	Game     string `json:"game,omitempty"`
	Round    int    `json:"round,omitempty"`
	Item     string `json:"item"`
	Expected string `json:"expected"`
	Found    string `json:"found"`
}

func (f *Failure) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "lobby %s", f.Lobby)
	if f.Seq != 0 {
		fmt.Fprintf(&b, " event %d", f.Seq)
	}
	if f.Game != "" {
		fmt.Fprintf(&b, " game %s", f.Game)
	}
	if f.Round != 0 {
		fmt.Fprintf(&b, " round %d", f.Round)
	}
	fmt.Fprintf(&b, ": %s: expected %s, found %s", f.Item, f.Expected, f.Found)
	return b.String()
}
