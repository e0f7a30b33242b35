package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/commitreveal/rps/tournament"
)

// lobbyConfigs follows what a lobby's admin acts say its games are to be, so that the operator
// cannot change a game's bet or rules, or open a game in a closed lobby, with no admin's act in
// the log (found by the second review): the first game opens with the config the lobby was
// created with; each next one with the last next config set while the game before it ran, or
// else that game's own; no game opens, and no next config is set, once the lobby has closed, and
// it closes once. A run resumed from a --state checkpoint has not read the acts before it, so
// it holds only the games after.
type lobbyConfigs struct {
	// created, last and pending are the configs of lobby_created, of the game opened last and
	// of the next_config_changed since then (nil: none read).
	created, last, pending json.RawMessage
	closed                 bool
}

// followConfigs takes the lobby-level facts of an event, before the event's own checks.
func (r *lobbyRun) followConfigs(e tournament.LoggedEvent) error {
	c := &r.configs
	var d struct {
		Config json.RawMessage `json:"config"`
	}
	switch e.Type {
	case tournament.EventLobbyCreated, tournament.EventNextConfigChanged, tournament.EventGameOpened:
		if err := json.Unmarshal(e.Data, &d); err != nil || len(d.Config) == 0 || bytes.Equal(d.Config, []byte("null")) {
			return r.fail("config of "+string(e.Type), "a config", string(e.Data))
		}
	}
	switch e.Type {
	case tournament.EventLobbyCreated:
		c.created = d.Config
	case tournament.EventNextConfigChanged:
		if c.closed {
			return r.fail("next_config_changed", "no next config once the lobby closed", "one")
		}
		c.pending = d.Config
	case tournament.EventLobbyClosed:
		if c.closed {
			return r.fail("lobby_closed", "the lobby closed once", "closed again")
		}
		c.closed = true
	case tournament.EventGameOpened:
		if c.closed {
			return r.fail("game_opened", "no game once the lobby closed", "a game")
		}
		want, from := c.created, "lobby_created's"
		if c.last != nil {
			want, from = c.last, "the previous game's"
		}
		if c.pending != nil {
			want, from = c.pending, "the next config set during the previous game"
		}
		if want != nil {
			if member, ok := sameMembers(want, d.Config); !ok {
				return r.fail("config of game_opened", fmt.Sprintf("%s config %s", from, want), fmt.Sprintf("config %s (%s differs)", d.Config, member))
			}
		}
		c.last, c.pending = d.Config, nil
	}
	return nil
}

// sameMembers reports whether every member of want has the same value in got (by RFC 8785
// form), naming the first that does not. A member got has and want lacks is not compared: a
// config written before a member existed does not name it, and a server since then writes the
// member's default.
func sameMembers(want, got json.RawMessage) (string, bool) {
	var w, g map[string]json.RawMessage
	if json.Unmarshal(want, &w) != nil || json.Unmarshal(got, &g) != nil {
		return "the whole config", false
	}
	for k, wv := range w {
		gv, ok := g[k]
		if !ok {
			return k, false
		}
		a, errA := tournament.Canonical(wv)
		b, errB := tournament.Canonical(gv)
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			return k, false
		}
	}
	return "", true
}
