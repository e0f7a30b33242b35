package api_test

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apitest"
	"github.com/commitreveal/rps/tournament"
)

// TestSealing: while a stage is open, no caller but the owner finds any trace of a commitment or
// a reveal in any response body (every read endpoint, the responses to the other players' own
// actions, the event log and the live stream); the owner sees its own in game.you; once the stage
// closes the values appear in the transcript.
func TestSealing(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	a, b, c := e.NewPlayer("alice", 100), e.NewPlayer("bob", 100), e.NewPlayer("carol", 100)
	l := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 3, "moveTimeoutMs": 60_000, "revealTimeoutMs": 60_000})
	lobby, game := l.Id.String(), l.Game.Id.String()
	for _, p := range []apitest.Player{a, b, c} {
		e.Register(lobby, p).Want(t, http.StatusCreated)
	}
	// Streams opened before anything is sealed, as three kinds of observers.
	streams := map[string]*apitest.Stream{
		"anonymous": e.OpenStream(lobby, "", ""),
		"admin":     e.OpenStream(lobby, e.Admin, ""),
		"carol":     e.OpenStream(lobby, c.Token, ""),
	}
	for who, s := range streams {
		if s.Status != http.StatusOK {
			t.Fatalf("%s stream: %d %s", who, s.Status, s.Raw())
		}
	}

	// Passwords long and distinctive, so that finding them anywhere means a leak.
	revA, revB, revC := "0alice-sealed-password-7f3a9c", "2bob-sealed-password-51e0d2", "3carol-sealed-password-c4b18e"
	sealedValues := func(reveals ...string) []string {
		var out []string
		for _, r := range reveals {
			c := apitest.CommitmentOf(r)
			out = append(out, c, strings.ToUpper(c), r, r[1:])
		}
		return out
	}
	// bodies collects every response an observer gets; scan fails if one holds a sealed value.
	type observed struct {
		what string
		body []byte
	}
	var bodies []observed
	see := func(what string, r apitest.Response) apitest.Response {
		t.Helper()
		bodies = append(bodies, observed{what, r.Body})
		return r
	}
	// readAll reads every endpoint as the caller of token (who names it).
	readAll := func(who, token string) {
		t.Helper()
		for _, path := range []string{
			"/v1/lobbies/" + lobby,
			"/v1/lobbies",
			"/v1/lobbies/" + lobby + "/events?limit=1000",
			"/v1/games/" + game,
			"/v1/games/" + game + "/players",
			"/v1/games/" + game + "/rounds/1",
		} {
			see(who+" GET "+path, e.Do("GET", path, token, nil).Want(t, http.StatusOK))
		}
		if token != "" {
			see(who+" GET /v1/me", e.Do("GET", "/v1/me", token, nil).Want(t, http.StatusOK))
			see(who+" GET /v1/me/ledger", e.Do("GET", "/v1/me/ledger", token, nil).Want(t, http.StatusOK))
		}
		if token == e.Admin {
			see("admin GET /v1/admin/ledger", e.Do("GET", "/v1/admin/ledger", token, nil).Want(t, http.StatusOK))
		}
		// A fresh stream read to the end of the log, too.
		last := e.Events(lobby, 0)
		s := e.OpenStream(lobby, token, "")
		s.Until(t, last.Next, 5*time.Second)
		s.Close()
		bodies = append(bodies, observed{who + " fresh stream", s.Raw()})
	}
	scan := func(stage string, sealed []string) {
		t.Helper()
		for _, o := range bodies {
			for _, v := range sealed {
				if bytes.Contains(o.body, []byte(v)) {
					t.Errorf("%s: %s leaks the sealed value %q: %s", stage, o.what, v, o.body)
				}
			}
		}
		bodies = nil
	}
	seesOwn := func(p apitest.Player, rev string, revealed bool) {
		t.Helper()
		you := e.Lobby(lobby, p.Token).Game.You
		if you == nil || !you.Committed || you.Commitment == nil || *you.Commitment != apitest.CommitmentOf(rev) {
			t.Errorf("%s does not see its own commitment in game.you: %s", p.Name, apitest.JSONOf(you))
		}
		if revealed && (you == nil || !you.Revealed || you.Move == nil || *you.Move != int32(rev[0]-'0')) {
			t.Errorf("%s does not see its own move in game.you: %s", p.Name, apitest.JSONOf(you))
		}
	}

	// ---- moves open: alice and bob have committed, carol not yet.
	see("alice's commit response", e.Commit(lobby, a, revA).Want(t, http.StatusOK))
	bodies = nil // alice's own response may show her own commitment; bob's must not show hers.
	see("bob's commit response", e.Commit(lobby, b, revB).Want(t, http.StatusOK))
	for _, r := range bodies {
		if bytes.Contains(r.body, []byte(apitest.CommitmentOf(revA))) {
			t.Errorf("bob's commit response leaks alice's commitment: %s", r.body)
		}
	}
	bodies = nil
	seesOwn(a, revA, false)
	seesOwn(b, revB, false)
	var rnd api.RoundTranscript
	e.Do("GET", "/v1/games/"+game+"/rounds/1", "", nil).Want(t, http.StatusOK).Decode(t, &rnd)
	committed := 0
	for _, m := range rnd.Moves {
		if m.Committed {
			committed++
		}
	}
	if rnd.Stage != "moves" || len(rnd.Moves) != 3 || committed != 2 {
		t.Fatalf("round 1 during moves: the round's players and who committed are public: %s", apitest.JSONOf(rnd))
	}
	readAll("anonymous", "")
	readAll("admin", e.Admin)
	readAll("carol", c.Token)
	scan("moves open, as others", sealedValues(revA, revB))
	readAll("alice", a.Token)
	scan("moves open, as alice", sealedValues(revB))
	readAll("bob", b.Token)
	scan("moves open, as bob", sealedValues(revA))

	// ---- carol commits: moves close; reveals open. The commitments stay sealed until the round
	// resolves (a weak password could otherwise be guessed from its commitment while the others
	// still decide whether to reveal); moves_closed binds them with its digest.
	see("carol's commit response", e.Commit(lobby, c, revC).Want(t, http.StatusOK))
	scan("carol's commit", sealedValues(revA, revB))
	e.Do("GET", "/v1/games/"+game+"/rounds/1", "", nil).Want(t, http.StatusOK).Decode(t, &rnd)
	if rnd.Stage != "reveal" {
		t.Fatalf("round 1 after every commit: %s", apitest.JSONOf(rnd))
	}
	for _, m := range rnd.Moves {
		if !m.Committed || m.Commitment != nil || m.Reveal != nil || m.Move != nil {
			t.Errorf("reveal stage: who committed is public, commitments and reveals sealed; got %s", apitest.JSONOf(m))
		}
	}
	readAll("anonymous", "")
	readAll("admin", e.Admin)
	scan("reveal open, before any reveal, as others", sealedValues(revA, revB, revC))
	readAll("carol", c.Token)
	scan("reveal open, before any reveal, as carol", sealedValues(revA, revB))
	seesOwn(c, revC, false)

	// alice reveals; bob and carol have not.
	see("alice's reveal response", e.Reveal(lobby, a, revA).Want(t, http.StatusOK))
	bodies = nil
	seesOwn(a, revA, true)
	failed := see("bob's failed reveal response", e.Reveal(lobby, b, "1bob-wrong"))
	failed.WantProblem(t, http.StatusUnprocessableEntity, "commitment_mismatch")
	readAll("anonymous", "")
	readAll("admin", e.Admin)
	scan("reveal open, as others", sealedValues(revA, revB, revC))
	readAll("bob", b.Token)
	scan("reveal open, as bob", sealedValues(revA, revC))
	readAll("carol", c.Token)
	scan("reveal open, as carol", sealedValues(revA, revB))
	revealOnly := sealedValues(revA, revB, revC)
	// alice's move itself (rock) must not show either: no "move":0 for her anywhere but her own view.
	for _, token := range []string{"", e.Admin, b.Token} {
		var l api.Lobby
		e.Do("GET", "/v1/lobbies/"+lobby, token, nil).Want(t, http.StatusOK).Decode(t, &l)
		if token == b.Token && (l.Game.You == nil || l.Game.You.Move != nil) {
			t.Errorf("bob's view shows a move before he revealed: %s", apitest.JSONOf(l.Game.You))
		}
		if token != b.Token && l.Game.You != nil {
			t.Errorf("game.you for a non-player caller: %s", apitest.JSONOf(l.Game.You))
		}
	}

	// The live streams saw everything so far: no sealed value in them either.
	last := e.Events(lobby, 0).Next
	for who, s := range streams {
		s.Until(t, last, 5*time.Second)
		bodies = append(bodies, observed{who + " live stream", s.Raw()})
	}
	scan("live streams during reveal", revealOnly)
	for who, s := range streams {
		bodies = append(bodies, observed{who + " live stream", s.Raw()})
	}
	scan("live streams during moves and reveal", []string{revB, revC, revB[1:], revC[1:]})

	// ---- everyone reveals: the round resolves and the reveals become public.
	e.Reveal(lobby, b, revB).Want(t, http.StatusOK)
	e.Reveal(lobby, c, revC).Want(t, http.StatusOK)
	e.Do("GET", "/v1/games/"+game+"/rounds/1", "", nil).Want(t, http.StatusOK).Decode(t, &rnd)
	if rnd.Stage != "closed" || len(rnd.Moves) != 3 {
		t.Fatalf("round 1 after every reveal: %s", apitest.JSONOf(rnd))
	}
	want := map[string]string{a.ID: revA, b.ID: revB, c.ID: revC}
	resolved, _ := e.WaitEvent(lobby, 0, 5*time.Second, apitest.OfType("round_resolved"))
	salt, err := tournament.ParseSalt(fmt.Sprint(apitest.EventData(t, resolved)["salt"]))
	if err != nil || rnd.Salt == nil || *rnd.Salt != salt.String() {
		t.Fatalf("the round is over: round_resolved's salt %v (%v), the transcript's %v", apitest.EventData(t, resolved)["salt"], err, rnd.Salt)
	}
	d := tournament.NewSaltedDigester(salt)
	slices.SortFunc(rnd.Moves, func(x, y api.RoundMove) int { return strings.Compare(x.AccountId.String(), y.AccountId.String()) })
	for _, m := range rnd.Moves {
		rev := want[m.AccountId.String()]
		if m.Commitment == nil || *m.Commitment != apitest.CommitmentOf(rev) || m.Reveal == nil || *m.Reveal != rev {
			t.Fatalf("closed round: %s, want reveal %q", apitest.JSONOf(m), rev)
		}
		if err := d.Add(tournament.AccountID(m.AccountId.String()), *m.Commitment); err != nil {
			t.Fatal(err)
		}
	}
	// The commitments served now are the ones moves_closed bound while they were sealed, with the
	// salt revealed now.
	closed, _ := e.WaitEvent(lobby, 0, 5*time.Second, apitest.OfType("moves_closed"))
	if sum, _ := d.Sum(); apitest.EventData(t, closed)["digest"] != sum {
		t.Errorf("moves_closed digest %v, the transcript's commitments hash to %s", apitest.EventData(t, closed)["digest"], sum)
	}
}
