package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apitest"
)

// TestRevealSizeCheckedOnce: a reveal over 1024 bytes is refused by one rule, in bytes, with one
// wording, whether it is over 1024 characters too or only in bytes, and before it reaches the
// store: it costs no transaction. (Before, the validator refused 1025 characters with words of its
// own, and 1024 two-byte characters went on to the core, which refused them in a transaction.)
func TestRevealSizeCheckedOnce(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	p, q := e.NewPlayer("p", 100), e.NewPlayer("q", 100)
	lobby := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 2}).Id.String()
	e.Register(lobby, p).Want(t, http.StatusCreated)
	e.Register(lobby, q).Want(t, http.StatusCreated)
	e.Commit(lobby, p, "0p-pw").Want(t, http.StatusOK)
	e.Commit(lobby, q, "1q-pw").Want(t, http.StatusOK)

	for name, reveal := range map[string]string{
		"1025 characters":             "0" + strings.Repeat("x", 1024),
		"1024 characters, 2047 bytes": "0" + strings.Repeat("é", 1023),
	} {
		before := e.Store.WriteStats()
		prob := e.Reveal(lobby, p, reveal).WantProblem(t, http.StatusBadRequest, "validation_failed")
		if prob.Field == nil || *prob.Field != "reveal" || prob.Detail == nil || !strings.Contains(*prob.Detail, "longer than 1024 bytes") {
			t.Errorf("%s: field %v, detail %v; want the reveal named and refused as longer than 1024 bytes", name, deref(prob.Field), deref(prob.Detail))
		}
		if after := e.Store.WriteStats(); after != before {
			t.Errorf("%s: the refused reveal reached the store: write stats %+v -> %+v", name, before, after)
		}
	}
	// The spec's pattern for a reveal refuses U+0000, as the body decoder does in every string:
	// the server is generated without the pattern, and the decoder refuses it.
	if prob := e.Reveal(lobby, p, "0p\x00pw").WantProblem(t, http.StatusBadRequest, "validation_failed"); deref(prob.Field) != "reveal" {
		t.Errorf("a reveal holding U+0000 refused naming %s", deref(prob.Field))
	}
	e.Reveal(lobby, p, "0p-pw").Want(t, http.StatusOK)
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestCallerViewOneRule: an action's answer shows the caller's own status (game.you) as a read
// of the lobby right after it does, for a player, a player the action eliminated, a player who
// left (a stranger to the game), an admin, and the player whose reveal ended a closed lobby's
// last game (the answer showed its status in the ended game, which a read never shows).
func TestCallerViewOneRule(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	a, b, c, d, s := e.NewPlayer("a", 100), e.NewPlayer("b", 100), e.NewPlayer("c", 100), e.NewPlayer("d", 100), e.NewPlayer("s", 100)
	lobby := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 4}).Id.String()
	agree := func(name, token string, answer apitest.Response) {
		t.Helper()
		var acted api.Lobby
		answer.Want(t, http.StatusOK).Decode(t, &acted)
		read := e.Lobby(lobby, token)
		if acted.Game.Id != read.Game.Id || acted.Game.Stage != read.Game.Stage {
			t.Fatalf("%s: the answer shows game %s in %s, the read game %s in %s", name, acted.Game.Id, acted.Game.Stage, read.Game.Id, read.Game.Stage)
		}
		if got, want := apitest.JSONOf(acted.Game.You), apitest.JSONOf(read.Game.You); got != want {
			t.Errorf("%s: the answer shows you %s, a read of the lobby %s", name, got, want)
		}
	}
	for _, p := range []apitest.Player{a, b, s} {
		e.Register(lobby, p).Want(t, http.StatusCreated)
	}
	agree("a player who left", s.Token, e.Leave(lobby, s))
	e.Register(lobby, c).Want(t, http.StatusCreated)
	e.Register(lobby, d).Want(t, http.StatusCreated)
	agree("an admin", e.Admin, e.Do("POST", "/v1/lobbies/"+lobby+"/close", e.Admin, nil))
	if you := e.Lobby(lobby, "").Game.You; you != nil {
		t.Errorf("an anonymous read shows you %+v", *you)
	}

	// Round 1: rock, rock, scissors, scissors; carol's reveal resolves it and puts her out.
	round1 := map[apitest.Player]string{a: "0a-1", b: "0b-1", c: "2c-1", d: "2d-1"}
	for _, p := range []apitest.Player{a, b, c, d} {
		agree("a player committing", p.Token, e.Commit(lobby, p, round1[p]))
	}
	for _, p := range []apitest.Player{a, b, d} {
		agree("a player revealing", p.Token, e.Reveal(lobby, p, round1[p]))
	}
	agree("a player eliminated by its own reveal", c.Token, e.Reveal(lobby, c, round1[c]))

	// Round 2: paper beats rock; alice's reveal ends the closed lobby's last game.
	e.Commit(lobby, a, "1a-2").Want(t, http.StatusOK)
	e.Commit(lobby, b, "0b-2").Want(t, http.StatusOK)
	e.Reveal(lobby, b, "0b-2").Want(t, http.StatusOK)
	agree("the winner, whose reveal ended the closed lobby's last game", a.Token, e.Reveal(lobby, a, "1a-2"))
}

// TestCommitmentFormCheckedOnce: a commitment not of 64 lower-case hex characters is refused by
// one check, engine.ParseCommitment's, which says what is wrong (before, the validator's pattern
// refused it first, quoting its regular expression).
func TestCommitmentFormCheckedOnce(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	p, q := e.NewPlayer("p", 100), e.NewPlayer("q", 100)
	lobby := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 2}).Id.String()
	e.Register(lobby, p).Want(t, http.StatusCreated)
	e.Register(lobby, q).Want(t, http.StatusCreated)
	good := apitest.CommitmentOf("0p-pw")
	for name, c := range map[string]string{
		"63 hex digits":  good[:63],
		"upper-case hex": strings.ToUpper(good),
		"non-hex":        "zz" + good[2:],
	} {
		before := e.Store.WriteStats()
		prob := e.Do("POST", "/v1/lobbies/"+lobby+"/commitments", p.Token, map[string]any{"commitment": c}).
			WantProblem(t, http.StatusBadRequest, "validation_failed")
		if prob.Field == nil || *prob.Field != "commitment" || prob.Detail == nil || !strings.Contains(*prob.Detail, "64 lower-case hex characters") {
			t.Errorf("%s: field %v, detail %v; want the commitment named and refused as not 64 lower-case hex characters", name, deref(prob.Field), deref(prob.Detail))
		}
		if after := e.Store.WriteStats(); after != before {
			t.Errorf("%s: the refused commitment reached the store: write stats %+v -> %+v", name, before, after)
		}
	}
	e.Commit(lobby, p, "0p-pw").Want(t, http.StatusOK)
}
