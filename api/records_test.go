package api_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apitest"
)

// pages follows a paged list from its first page to its last, limit items at a time, and returns
// every item; path may have a query already.
func pages[P any, T any](t testing.TB, e *apitest.Env, path, token string, limit int, items func(P) []T, next func(P) *string) []T {
	t.Helper()
	var out []T
	after := ""
	for range 1000 {
		q := url.Values{"limit": {strconv.Itoa(limit)}}
		if after != "" {
			q.Set("after", after)
		}
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		var page P
		e.Do("GET", path+sep+q.Encode(), token, nil).Want(t, http.StatusOK).Decode(t, &page)
		got := items(page)
		if len(got) > limit {
			t.Fatalf("%s: %d items on a page of %d", path, len(got), limit)
		}
		out = append(out, got...)
		n := next(page)
		if n == nil {
			return out
		}
		if len(got) != limit {
			t.Fatalf("%s: a page of %d items before the last, want %d", path, len(got), limit)
		}
		after = *n
	}
	t.Fatalf("%s: paging does not end", path)
	return nil
}

// myGames reads every game of a player, limit at a time.
func myGames(t testing.TB, e *apitest.Env, p apitest.Player, limit int) []api.GameRecord {
	t.Helper()
	return pages(t, e, "/v1/me/games", p.Token, limit,
		func(p api.GameRecordPage) []api.GameRecord { return p.Games }, func(p api.GameRecordPage) *string { return p.Next })
}

// standings reads a whole leaderboard, limit at a time.
func standings(t testing.TB, e *apitest.Env, query string, limit int) []api.Standing {
	t.Helper()
	return pages(t, e, "/v1/leaderboard?"+query, "", limit,
		func(p api.Leaderboard) []api.Standing { return p.Standings }, func(p api.Leaderboard) *string { return p.Next })
}

// TestMyGamesProfilesAndStandings plays a game to a winner, a game stopped mid-round, a
// registration stopped with refunds and leaves one game open, then checks each player's games
// (every page size), the public profiles and the standings against what happened.
func TestMyGamesProfilesAndStandings(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	a, b, c, d := e.NewPlayer("alice", 1000), e.NewPlayer("bob", 1000), e.NewPlayer("carol", 1000), e.NewPlayer("dave", 1000)

	// Game A: alice beats bob (rock against scissors).
	la := e.CreateLobby(map[string]any{"betSize": 100, "playersCountLimit": 2, "startWhenFull": true})
	e.Register(la.Id.String(), a).Want(t, http.StatusCreated)
	e.Register(la.Id.String(), b).Want(t, http.StatusCreated)
	e.Commit(la.Id.String(), a, "0a").Want(t, http.StatusOK)
	e.Commit(la.Id.String(), b, "2b").Want(t, http.StatusOK)
	e.Reveal(la.Id.String(), a, "0a").Want(t, http.StatusOK)
	e.Reveal(la.Id.String(), b, "2b").Want(t, http.StatusOK)

	// Game B: carol goes out in round 1; the admin stops round 2 while only alice has committed:
	// alice and bob share the escrow of 150 (75 each).
	lb := e.CreateLobby(map[string]any{"betSize": 50, "playersCountLimit": 3, "startWhenFull": true})
	for _, p := range []apitest.Player{a, b, c} {
		e.Register(lb.Id.String(), p).Want(t, http.StatusCreated)
	}
	round1 := map[apitest.Player]string{a: "0a1", b: "0b1", c: "2c1"}
	for _, p := range []apitest.Player{a, b, c} {
		e.Commit(lb.Id.String(), p, round1[p]).Want(t, http.StatusOK)
	}
	for _, p := range []apitest.Player{a, b, c} {
		e.Reveal(lb.Id.String(), p, round1[p]).Want(t, http.StatusOK)
	}
	const sealed = "1alice-round-2"
	e.Commit(lb.Id.String(), a, sealed).Want(t, http.StatusOK)
	// While alice's commitment is sealed, nobody else's view of the game shows it.
	for _, r := range []apitest.Response{
		e.Do("GET", "/v1/me/games", b.Token, nil),
		e.Do("GET", "/v1/admin/accounts?query=alice", e.Admin, nil),
		e.Do("GET", "/v1/accounts/"+a.ID, b.Token, nil),
		e.Do("GET", "/v1/accounts/"+a.ID+"/games", "", nil),
	} {
		if bytes.Contains(r.Body, []byte(apitest.CommitmentOf(sealed))) {
			t.Fatalf("%s leaks a sealed commitment: %s", r.Req, r.Body)
		}
	}
	e.Do("POST", "/v1/lobbies/"+lb.Id.String()+"/stop", e.Admin, map[string]any{"reason": "mid-round"}).Want(t, http.StatusOK)

	// Game C: dave's registration is stopped and refunded. Game D: alice is registered, open.
	lc := e.CreateLobby(map[string]any{"betSize": 30, "playersCountLimit": 2})
	e.Register(lc.Id.String(), d).Want(t, http.StatusCreated)
	e.Do("POST", "/v1/lobbies/"+lc.Id.String()+"/stop", e.Admin, map[string]any{"reason": "no takers"}).Want(t, http.StatusOK)
	ld := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 2})
	e.Register(ld.Id.String(), a).Want(t, http.StatusCreated)

	// alice's games, newest first, whatever the page size.
	for _, limit := range []int{1, 2, 3, 4, 100} {
		games := myGames(t, e, a, limit)
		if len(games) != 3 {
			t.Fatalf("limit %d: alice has %d games, want 3: %s", limit, len(games), apitest.JSONOf(games))
		}
		open, stopped, won := games[0], games[1], games[2]
		if open.LobbyId != ld.Id || open.Ending != api.GameEndingPlaying || open.Stage != "registration" || open.Net != -10 ||
			open.Stake != 10 || open.EndedAt != nil || open.Winner != nil || open.EliminatedRound != nil {
			t.Fatalf("open game: %s", apitest.JSONOf(open))
		}
		if stopped.LobbyId != lb.Id || stopped.Ending != api.GameEndingShare || stopped.Stage != "stopped" || stopped.Net != 25 ||
			stopped.Stake != 50 || stopped.EndedAt == nil || stopped.Winner != nil {
			t.Fatalf("game stopped mid-round: %s", apitest.JSONOf(stopped))
		}
		if won.LobbyId != la.Id || won.GameId != la.Game.Id || won.Ending != api.GameEndingWon || won.Net != 100 ||
			won.Winner == nil || won.WinnerName == nil || *won.WinnerName != "alice" || won.LobbyName != la.Name || won.GameNumber != 1 {
			t.Fatalf("won game: %s", apitest.JSONOf(won))
		}
	}
	if games := myGames(t, e, c, 100); len(games) != 1 || games[0].Ending != api.GameEndingEliminated ||
		games[0].EliminatedRound == nil || *games[0].EliminatedRound != 1 || games[0].Net != -50 {
		t.Fatalf("carol's games: %s", apitest.JSONOf(games))
	}
	if games := myGames(t, e, b, 100); len(games) != 2 || games[0].Ending != api.GameEndingShare || games[0].Net != 25 ||
		games[1].Ending != api.GameEndingEliminated || *games[1].EliminatedRound != 1 || games[1].Net != -100 || *games[1].WinnerName != "alice" {
		t.Fatalf("bob's games: %s", apitest.JSONOf(games))
	}
	if games := myGames(t, e, d, 100); len(games) != 1 || games[0].Ending != api.GameEndingRefunded || games[0].Net != 0 {
		t.Fatalf("dave's games: %s", apitest.JSONOf(games))
	}
	var none api.GameRecordPage
	e.Do("GET", "/v1/me/games", e.Admin, nil).Want(t, http.StatusOK).Decode(t, &none)
	if len(none.Games) != 0 || none.Next != nil {
		t.Fatalf("the admin has games: %s", apitest.JSONOf(none))
	}

	// Anyone reads an account's games, the very records the account reads as its own.
	for _, p := range []apitest.Player{a, b, c, d} {
		for _, limit := range []int{1, 100} {
			public := pages(t, e, "/v1/accounts/"+p.ID+"/games", "", limit,
				func(p api.GameRecordPage) []api.GameRecord { return p.Games }, func(p api.GameRecordPage) *string { return p.Next })
			if own := myGames(t, e, p, 100); apitest.JSONOf(public) != apitest.JSONOf(own) {
				t.Fatalf("limit %d: %s's public games %s, own %s", limit, p.Name, apitest.JSONOf(public), apitest.JSONOf(own))
			}
		}
	}
	var admins api.Account
	e.Do("GET", "/v1/me", e.Admin, nil).Want(t, http.StatusOK).Decode(t, &admins)
	e.Do("GET", "/v1/accounts/"+admins.Id.String()+"/games", "", nil).Want(t, http.StatusOK).Decode(t, &none)
	if len(none.Games) != 0 || none.Next != nil {
		t.Fatalf("the admin's public games: %s", apitest.JSONOf(none))
	}
	e.Do("GET", "/v1/accounts/00000000-0000-4000-8000-000000000000/games", "", nil).WantProblem(t, http.StatusNotFound, "not_found")
	e.Do("GET", "/v1/accounts/"+a.ID+"/games?after=x", "", nil).WantProblem(t, http.StatusBadRequest, "validation_failed")

	// Profiles: settled games only (dave's refund is not a game played); the balance only for
	// the account itself.
	profile := func(id, token string) api.AccountProfile {
		var p api.AccountProfile
		e.Do("GET", "/v1/accounts/"+id, token, nil).Want(t, http.StatusOK).Decode(t, &p)
		return p
	}
	if p := profile(a.ID, ""); p.Name != "alice" || p.GamesPlayed != 2 || p.GamesWon != 1 || p.Net != 125 || p.Balance != nil {
		t.Fatalf("alice's public profile: %s", apitest.JSONOf(p))
	}
	if p := profile(a.ID, b.Token); p.Balance != nil {
		t.Fatalf("bob sees alice's balance: %s", apitest.JSONOf(p))
	}
	if p := profile(a.ID, a.Token); p.Balance == nil || *p.Balance != 1000+100+25-10 {
		t.Fatalf("alice's own profile: %s", apitest.JSONOf(p))
	}
	if p := profile(d.ID, ""); p.GamesPlayed != 0 || p.GamesWon != 0 || p.Net != 0 {
		t.Fatalf("dave's profile: %s", apitest.JSONOf(p))
	}

	// Standings: by wins (ties by net, then id), by net (ties by wins, then id), any page size.
	for _, limit := range []int{1, 2, 100} {
		for query, want := range map[string][]string{
			"by=wins":           {"alice", "carol", "bob"},
			"by=net":            {"alice", "carol", "bob"},
			"by=wins&period=7d": {"alice", "carol", "bob"},
			"by=net&period=30d": {"alice", "carol", "bob"},
		} {
			got := standings(t, e, query, limit)
			if len(got) != len(want) {
				t.Fatalf("%s limit %d: %s", query, limit, apitest.JSONOf(got))
			}
			for i, s := range got {
				if s.Name != want[i] || int(s.Position) != i+1 {
					t.Fatalf("%s limit %d: place %d is %s, want %s: %s", query, limit, i+1, s.Name, want[i], apitest.JSONOf(got))
				}
			}
			if got[0].Wins != 1 || got[0].Net != 125 || got[0].Games != 2 || got[2].Net != -75 || got[1].Net != -50 {
				t.Fatalf("%s: totals %s", query, apitest.JSONOf(got))
			}
		}
	}
	var board api.Leaderboard
	e.Do("GET", "/v1/leaderboard", "", nil).Want(t, http.StatusOK).Decode(t, &board)
	if board.By != api.LeaderboardByWins || board.Period != api.LeaderboardPeriodAll || len(board.Standings) != 3 || board.Next != nil {
		t.Fatalf("default leaderboard: %s", apitest.JSONOf(board))
	}

	// The totals agree with the ledger.
	if r := e.Ledger(); !r.Invariants.EntriesSumToZero || !r.Invariants.BalancesMatchEntries {
		t.Fatalf("ledger: %s", apitest.JSONOf(r))
	}
}

// TestLobbyFiltersAndQuickJoin checks the lobby list's filters and order (joinable first), and
// that a quick join picks the game closest to starting, skips what does not fit, keeps the money
// and idempotency rules of a registration, and says so when nothing fits.
func TestLobbyFiltersAndQuickJoin(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	p, q, r, s := e.NewPlayer("p", 1000), e.NewPlayer("q", 1000), e.NewPlayer("r", 1000), e.NewPlayer("s", 1000)
	cheap := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 2})
	started := e.CreateLobby(map[string]any{"betSize": 100, "playersCountLimit": 2, "startWhenFull": true})
	e.Register(started.Id.String(), r).Want(t, http.StatusCreated)
	e.Register(started.Id.String(), s).Want(t, http.StatusCreated)
	threeWay := e.CreateLobby(map[string]any{"betSize": 100, "playersCountLimit": 3, "ruleset": "rps"})
	almost := e.CreateLobby(map[string]any{"betSize": 100, "playersCountLimit": 3, "startWhenFull": true})
	e.Register(almost.Id.String(), r).Want(t, http.StatusCreated)
	e.Register(almost.Id.String(), s).Want(t, http.StatusCreated)

	list := func(query string, limit int) []string {
		lobbies := pages(t, e, "/v1/lobbies?"+query, "", limit,
			func(p api.LobbyPage) []api.Lobby { return p.Lobbies }, func(p api.LobbyPage) *string { return p.Next })
		var names []string
		for _, l := range lobbies {
			names = append(names, l.Id.String())
		}
		return names
	}
	id := func(l api.Lobby) string { return l.Id.String() }
	for _, limit := range []int{1, 2, 100} {
		for query, want := range map[string][]string{
			"":                        {id(cheap), id(threeWay), id(almost), id(started)},
			"open=true":               {id(cheap), id(threeWay), id(almost)},
			"open=false":              {id(started)},
			"stage=moves":             {id(started)},
			"minBet=50&maxBet=100":    {id(threeWay), id(almost), id(started)},
			"maxBet=10":               {id(cheap)},
			"ruleset=rps":             {id(threeWay)},
			"ruleset=rpsls&open=true": {id(cheap), id(almost)},
			"minBet=101":              nil,
		} {
			if got := list(query, limit); apitest.JSONOf(got) != apitest.JSONOf(want) {
				t.Fatalf("lobbies?%s (limit %d): %v, want %v", query, limit, got, want)
			}
		}
	}

	// p joins the game with one place left, which fills and starts it; with the same key, a retry
	// is the same answer and costs nothing more.
	var joined api.Lobby
	signed := e.Signed(p, apitest.QuickJoinAct(100, "", "quick-1")) // a retry resends the request as it was
	first := e.Do("POST", "/v1/matchmaking", p.Token, map[string]any{"betSize": 100}, signed...).Want(t, http.StatusCreated)
	first.Decode(t, &joined)
	if joined.Id != almost.Id || joined.Game.Stage != "moves" || joined.Game.You == nil || !joined.Game.You.Registered {
		t.Fatalf("quick join picked %s: %s", joined.Name, apitest.JSONOf(joined.Game))
	}
	retry := e.Do("POST", "/v1/matchmaking", p.Token, map[string]any{"betSize": 100}, signed...).Want(t, http.StatusCreated)
	if retry.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(retry.Body, first.Body) {
		t.Fatalf("retry not replayed: %s", retry.Body)
	}
	if got := e.Balance(p.Token); got != 900 {
		t.Fatalf("p's balance %d after a quick join and its retry, want 900", got)
	}
	// q, with the ruleset named, gets the rps game; asking again, q is skipped from its own game.
	e.QuickJoin(q, 100, "rps", "").Want(t, http.StatusCreated).Decode(t, &joined)
	if joined.Id != threeWay.Id {
		t.Fatalf("quick join with a ruleset picked %s", joined.Name)
	}
	e.QuickJoin(q, 100, "", "").WantProblem(t, http.StatusConflict, "no_match")
	e.QuickJoin(q, 100, "rpsls", "").WantProblem(t, http.StatusConflict, "no_match")
	// p joins the other 100 game (the started one is not joinable).
	e.QuickJoin(p, 100, "", "").Want(t, http.StatusCreated).Decode(t, &joined)
	if joined.Id != threeWay.Id || joined.Game.Players != 2 {
		t.Fatalf("second quick join: %s", apitest.JSONOf(joined))
	}
	// A retry of a quick join into the only game with that bet (which now leaves the caller out)
	// is still the first answer.
	z := e.NewPlayer("z", 100)
	signed = e.Signed(z, apitest.QuickJoinAct(10, "", "z-1"))
	joinCheap := e.Do("POST", "/v1/matchmaking", z.Token, map[string]any{"betSize": 10}, signed...).Want(t, http.StatusCreated)
	again := e.Do("POST", "/v1/matchmaking", z.Token, map[string]any{"betSize": 10}, signed...).Want(t, http.StatusCreated)
	if again.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.Body, joinCheap.Body) || e.Balance(z.Token) != 90 {
		t.Fatalf("retry of the only game's quick join: %s", again.Body)
	}
	e.QuickJoin(z, 10, "", "").WantProblem(t, http.StatusConflict, "no_match")
	if r := e.Ledger(); !r.Invariants.EntriesSumToZero || !r.Invariants.BalancesMatchEntries {
		t.Fatalf("ledger: %s", apitest.JSONOf(r))
	}
}

// TestAdminAccountTools finds accounts by name prefix and id, disables one (its requests are
// refused at once, on another replica too, and its money stays accounted for), enables it again,
// and reads every admin action back from the audit log.
func TestAdminAccountTools(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	alice, alfred, bob := e.NewPlayer("Alice", 500), e.NewPlayer("alfred", 500), e.NewPlayer("bob", 500)
	e.NewPlayer("100%_al", 0) // LIKE's wildcards in a query match only themselves
	l := e.CreateLobby(map[string]any{"betSize": 100, "playersCountLimit": 3})
	lobby := l.Id.String()
	e.Register(lobby, alice).Want(t, http.StatusCreated)

	search := func(query string, limit int) []api.AdminAccount {
		return pages(t, e, "/v1/admin/accounts?query="+url.QueryEscape(query), e.Admin, limit,
			func(p api.AdminAccountPage) []api.AdminAccount { return p.Accounts }, func(p api.AdminAccountPage) *string { return p.Next })
	}
	names := func(accounts []api.AdminAccount) []string {
		var out []string
		for _, a := range accounts {
			out = append(out, a.Account.Name)
		}
		return out
	}
	for _, limit := range []int{1, 2, 100} {
		if got := names(search("AL", limit)); apitest.JSONOf(got) != `["alfred","Alice"]` {
			t.Fatalf("search AL (limit %d): %v", limit, got)
		}
		if got := names(search("", limit)); len(got) != 5 { // four players and the admin
			t.Fatalf("search all (limit %d): %v", limit, got)
		}
	}
	if got := names(search("100%", 10)); apitest.JSONOf(got) != `["100%_al"]` {
		t.Fatalf("search with a wildcard: %v", got)
	}
	if got := names(search("1_0", 10)); got != nil {
		t.Fatalf("_ matched any character: %v", got)
	}
	found := search(alice.ID, 10)
	if len(found) != 1 || found[0].Account.Balance != 400 || found[0].Account.Status != api.AccountStatusActive ||
		len(found[0].RecentGames) != 1 || found[0].RecentGames[0].Ending != api.GameEndingPlaying {
		t.Fatalf("search by id: %s", apitest.JSONOf(found))
	}

	// A second replica over the same database has alice's token cached.
	other, err := api.NewServer(api.Config{Store: e.Store, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(other.Handler())
	t.Cleanup(ts.Close)
	replica := e.For(t)
	replica.URL, replica.Client = ts.URL, ts.Client()
	replica.Do("GET", "/v1/me", alice.Token, nil).Want(t, http.StatusOK)

	var disabled api.Account
	e.Do("POST", "/v1/admin/accounts/"+alice.ID+"/disable", e.Admin, map[string]any{"reason": "chargeback"}).
		Want(t, http.StatusOK).Decode(t, &disabled)
	if disabled.Status != api.AccountStatusDisabled || disabled.DisabledAt == nil || disabled.Balance != 400 {
		t.Fatalf("disabled account: %s", apitest.JSONOf(disabled))
	}
	e.Do("GET", "/v1/me", alice.Token, nil).WantProblem(t, http.StatusForbidden, "account_disabled")
	e.Do("DELETE", "/v1/lobbies/"+lobby+"/players/me", alice.Token, nil).WantProblem(t, http.StatusForbidden, "account_disabled")
	e.Do("GET", "/v1/me/games", alice.Token, nil).WantProblem(t, http.StatusForbidden, "account_disabled")
	// The other replica still trusts its cached token for a few seconds, but every action reads
	// the account's status in its own transaction.
	replica.Do("POST", "/v1/matchmaking", alice.Token, map[string]any{"betSize": 100}).WantProblem(t, http.StatusForbidden, "account_disabled")
	replica.Do("POST", "/v1/me/token", alice.Token, nil).WantProblem(t, http.StatusForbidden, "account_disabled")

	// Her bet stays in the game and comes back when the game is stopped; her balance is hers.
	e.Register(lobby, alfred).Want(t, http.StatusCreated)
	e.Do("POST", "/v1/lobbies/"+lobby+"/stop", e.Admin, map[string]any{"reason": "closing"}).Want(t, http.StatusOK)
	if a := search(alice.ID, 10)[0]; a.Account.Balance != 500 || a.Account.Status != api.AccountStatusDisabled ||
		a.RecentGames[0].Ending != api.GameEndingRefunded {
		t.Fatalf("disabled account after the stop: %s", apitest.JSONOf(a))
	}
	e.Do("POST", "/v1/admin/accounts/"+alice.ID+"/credits", e.Admin, map[string]any{"amount": 5}).Want(t, http.StatusOK)
	if r := e.Ledger(); !r.Invariants.EntriesSumToZero || !r.Invariants.BalancesMatchEntries {
		t.Fatalf("ledger: %s", apitest.JSONOf(r))
	}

	var enabled api.Account
	e.Do("POST", "/v1/admin/accounts/"+alice.ID+"/enable", e.Admin, nil).Want(t, http.StatusOK).Decode(t, &enabled)
	if enabled.Status != api.AccountStatusActive || enabled.DisabledAt != nil || enabled.Balance != 505 {
		t.Fatalf("enabled account: %s", apitest.JSONOf(enabled))
	}
	e.Register(e.Lobby(lobby, "").Id.String(), alice).Want(t, http.StatusCreated)
	replica.QuickJoin(bob, 100, "", "").Want(t, http.StatusCreated)

	// The audit log has every admin action, newest first, a refusal too; a player cannot read it.
	e.Do("POST", "/v1/lobbies/"+lobby+"/close", e.Admin, nil).Want(t, http.StatusOK)
	e.Do("POST", "/v1/admin/accounts/"+bob.ID+"/debits", e.Admin, map[string]any{"amount": 100_000}).
		WantProblem(t, http.StatusConflict, "insufficient_funds")
	for _, limit := range []int{1, 3, 100} {
		entries := pages(t, e, "/v1/admin/audit", e.Admin, limit,
			func(p api.AuditPage) []api.AuditEntry { return p.Entries }, func(p api.AuditPage) *string { return p.Next })
		var actions []string
		for _, en := range entries {
			actions = append(actions, en.Action)
		}
		want := []string{"debit", "close_lobby", "enable_account", "credit", "stop", "disable_account",
			"create_lobby", "credit", "credit", "credit"}
		if apitest.JSONOf(actions) != apitest.JSONOf(want) {
			t.Fatalf("audit (limit %d): %v, want %v", limit, actions, want)
		}
		if d := entries[5]; d.Target != alice.ID || apitest.JSONOf(d.Detail) != `{"request":{"reason":"chargeback"},"status":200}` {
			t.Fatalf("audit of the disabling: %s", apitest.JSONOf(d))
		}
		if d := entries[0]; d.Target != bob.ID || d.Detail["status"] != float64(409) {
			t.Fatalf("audit of the refused debit: %s", apitest.JSONOf(d))
		}
	}
	e.Do("GET", "/v1/admin/audit", bob.Token, nil).WantProblem(t, http.StatusForbidden, "forbidden")
}

// TestQuickJoinRace sends more quick joins at once than there are places: each game fills
// exactly, every player pays at most once, and the ones left over are told no game fits.
func TestQuickJoinRace(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	for range 2 {
		e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 3, "startWhenFull": true})
	}
	var players []apitest.Player
	for i := range 8 {
		players = append(players, e.NewPlayer("racer"+strconv.Itoa(i), 10))
	}
	statuses := make([]int, len(players))
	var wg sync.WaitGroup
	for i, p := range players {
		signed := e.Signed(p, apitest.QuickJoinAct(10, "", ""))
		wg.Go(func() {
			r, err := e.Request(t.Context(), "POST", "/v1/matchmaking", p.Token, map[string]any{"betSize": 10}, signed...)
			if err != nil {
				t.Error(err)
				return
			}
			statuses[i] = r.Status
		})
	}
	wg.Wait()
	joined := 0
	for i, status := range statuses {
		switch status {
		case http.StatusCreated:
			joined++
		case http.StatusConflict:
			if e.Balance(players[i].Token) != 10 {
				t.Errorf("racer %d was refused but paid", i)
			}
		default:
			t.Errorf("racer %d: status %d", i, status)
		}
	}
	if joined != 6 {
		t.Fatalf("%d quick joins succeeded, want 6 (two games of 3): %v", joined, statuses)
	}
	var page api.LobbyPage
	e.Do("GET", "/v1/lobbies?stage=moves", "", nil).Want(t, http.StatusOK).Decode(t, &page)
	if len(page.Lobbies) != 2 || page.Lobbies[0].Game.Players != 3 || page.Lobbies[1].Game.Players != 3 {
		t.Fatalf("games after the race: %s", apitest.JSONOf(page))
	}
	if r := e.Ledger(); !r.Ok || r.Escrows != 60 {
		t.Fatalf("ledger: %s", apitest.JSONOf(r))
	}
}

// TestLobbyGames plays two games of a lobby to their winners and checks its games read newest
// first, the open one first, at every page size, each as GET /v1/games/{id} shows it.
func TestLobbyGames(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	a, b := e.NewPlayer("alice", 1000), e.NewPlayer("bob", 1000)
	l := e.CreateLobby(map[string]any{"betSize": 100, "playersCountLimit": 2, "startWhenFull": true})
	lobby := l.Id.String()
	for range 2 {
		e.Register(lobby, a).Want(t, http.StatusCreated)
		e.Register(lobby, b).Want(t, http.StatusCreated)
		e.Commit(lobby, a, "0a").Want(t, http.StatusOK)
		e.Commit(lobby, b, "2b").Want(t, http.StatusOK)
		e.Reveal(lobby, a, "0a").Want(t, http.StatusOK)
		e.Reveal(lobby, b, "2b").Want(t, http.StatusOK)
	}
	for _, limit := range []int{1, 2, 100} {
		games := pages(t, e, "/v1/lobbies/"+lobby+"/games", "", limit,
			func(p api.GameSummaryPage) []api.GameSummary { return p.Games }, func(p api.GameSummaryPage) *string { return p.Next })
		if len(games) != 3 {
			t.Fatalf("limit %d: %d games, want 3: %s", limit, len(games), apitest.JSONOf(games))
		}
		for i, g := range games {
			var one api.GameSummary
			e.Do("GET", "/v1/games/"+g.Id.String(), "", nil).Want(t, http.StatusOK).Decode(t, &one)
			if int(g.Number) != 3-i || apitest.JSONOf(g) != apitest.JSONOf(one) {
				t.Fatalf("limit %d: game %d is %s, want number %d as GET /v1/games/{id} shows it: %s", limit, i, apitest.JSONOf(g), 3-i, apitest.JSONOf(one))
			}
		}
		if games[0].Stage != "registration" || games[1].Winner == nil || games[1].Winner.String() != a.ID || games[2].Payout != 200 {
			t.Fatalf("limit %d: %s", limit, apitest.JSONOf(games))
		}
	}
	e.Do("GET", "/v1/lobbies/"+apitest.RandomID()+"/games", "", nil).WantProblem(t, http.StatusNotFound, "not_found")
}
