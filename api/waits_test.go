package api_test

import (
	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apitest"
	"github.com/commitreveal/rps/tournament"

	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// waitUntil polls cond every few milliseconds for up to 5 seconds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLongPollsShareTheStreamBudget: long polls count against the same per-client budget as
// event streams; past it a long poll is refused with 429, and a finished one frees its place.
func TestLongPollsShareTheStreamBudget(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t, apitest.WithConfig(func(c *api.Config) { c.MaxStreamsPerClient = 3 }))
	p := e.NewPlayer("p", 0)
	lobby := e.CreateLobby(map[string]any{"betSize": 1, "playersCountLimit": 2}).Id.String()
	next := e.Events(lobby, 0).Next
	poll := fmt.Sprintf("/v1/lobbies/%s/events?after=%d&wait=10", lobby, next)

	stream := e.OpenStream(lobby, p.Token, "")
	defer stream.Close()
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { _, _ = e.Request(ctx, "GET", poll, p.Token, nil) })
	}
	waitUntil(t, "3 waits are open", func() bool { return api.OpenWaits(e.Server, p.ID) == 3 })
	checkLimited(t, e.Do("GET", poll, p.Token, nil))
	cancel()
	wg.Wait()
	waitUntil(t, "the polls free their places", func() bool { return api.OpenWaits(e.Server, p.ID) == 1 })
	e.Do("GET", fmt.Sprintf("/v1/lobbies/%s/events?after=%d&wait=0", lobby, next), p.Token, nil).Want(t, http.StatusOK)
}

// TestWakingWaitersCostsNoReadEach: long polls waiting at different cursors and page sizes are
// woken by a new event without a database read each: only those the event is for read, and
// they share one read.
func TestWakingWaitersCostsNoReadEach(t *testing.T) {
	t.Parallel()
	const waiters = 40
	e := apitest.Start(t, apitest.WithConfig(func(c *api.Config) { c.MaxStreamsPerClient = 2 * waiters }))
	p := e.NewPlayer("p", 0)
	lobby := e.CreateLobby(map[string]any{"betSize": 0, "playersCountLimit": 4}).Id.String()
	next := e.Events(lobby, 0).Next

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wg sync.WaitGroup
	answered := make(chan int, waiters)
	for i := range waiters {
		// Half wait at the head with page sizes of their own, half at cursors ahead of it.
		after, limit := next, 1+i
		if i%2 == 1 {
			after = next + int64(i)
		}
		wg.Go(func() {
			r, err := e.Request(ctx, "GET", fmt.Sprintf("/v1/lobbies/%s/events?after=%d&limit=%d&wait=20", lobby, after, limit), p.Token, nil)
			if err == nil && r.Status == http.StatusOK {
				answered <- i
			}
		})
	}
	waitUntil(t, "every poll waits", func() bool { return api.OpenWaits(e.Server, p.ID) == waiters })
	// Let every waiter finish the read it makes after subscribing.
	time.Sleep(100 * time.Millisecond)
	before := e.Pool.Stat().AcquireCount()
	e.Register(lobby, p).Want(t, http.StatusCreated)
	for range waiters / 2 {
		select {
		case <-answered:
		case <-time.After(5 * time.Second):
			t.Fatal("the waiters at the head were not answered")
		}
	}
	time.Sleep(100 * time.Millisecond)
	reads := e.Pool.Stat().AcquireCount() - before
	if reads > 10 {
		t.Errorf("one event cost %d database acquisitions with %d waiters", reads, waiters)
	}
	cancel()
	wg.Wait()
}

// TestLongPollAtTheKnownHeadReadsNothing: a long poll at the head the notifications report waits
// without reading the log or the lobby, and the next event still answers it, whole and in order.
func TestLongPollAtTheKnownHeadReadsNothing(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	players := []apitest.Player{e.NewPlayer("p0", 0), e.NewPlayer("p1", 0), e.NewPlayer("p2", 0), e.NewPlayer("q", 0)}
	p := players[0]
	lobby := e.CreateLobby(map[string]any{"betSize": 0, "playersCountLimit": 10}).Id.String()
	next := e.Events(lobby, 0).Next
	poll := func(after int64) <-chan apitest.Response {
		answer := make(chan apitest.Response, 1)
		go func() {
			r, err := e.Request(t.Context(), "GET", fmt.Sprintf("/v1/lobbies/%s/events?after=%d&wait=20", lobby, after), p.Token, nil)
			if err != nil {
				r.Status = 0
			}
			answer <- r
		}()
		return answer
	}
	pageOf := func(r apitest.Response) api.EventPage {
		t.Helper()
		var page api.EventPage
		r.Want(t, http.StatusOK).Decode(t, &page)
		return page
	}
	headKnown := func(head int64) bool {
		for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if !e.Store.MayHaveEventsAfter(tournament.LobbyID(lobby), head) {
				return true
			}
		}
		return false
	}
	// The first poll starts the listener, which connects in the background: register until a
	// notification makes the head known.
	first := poll(next)
	waitUntil(t, "the first poll waits", func() bool { return api.OpenWaits(e.Server, p.ID) == 1 })
	var head int64
	for i := 0; ; i++ {
		e.Register(lobby, players[i]).Want(t, http.StatusCreated)
		head = e.Events(lobby, 0).Next
		if headKnown(head) {
			break
		}
		if i == 2 {
			t.Fatal("no notification made the head known")
		}
	}
	if page := pageOf(<-first); len(page.Events) == 0 || page.Events[0].Seq != next+1 {
		t.Fatalf("first poll got %+v, want the event after %d", page.Events, next)
	}

	before := e.Pool.Stat().AcquireCount()
	second := poll(head)
	waitUntil(t, "the second poll waits", func() bool { return api.OpenWaits(e.Server, p.ID) == 1 })
	if reads := e.Pool.Stat().AcquireCount() - before; reads != 0 {
		t.Errorf("a long poll at the known head made %d database acquisitions before waiting", reads)
	}
	e.Register(lobby, players[3]).Want(t, http.StatusCreated)
	got := pageOf(<-second)
	if len(got.Events) == 0 || got.Events[0].Seq != head+1 {
		t.Fatalf("second poll got %+v, want the event after %d", got.Events, head)
	}
}

// TestUnknownTokensAreCheap: a bogus token is limited by address before the database is asked,
// and a token found unknown is remembered for a while, so that neither many bogus tokens nor one
// repeated cost a query each.
func TestUnknownTokensAreCheap(t *testing.T) {
	t.Parallel()
	const burst = 5
	e := apitest.Start(t, apitest.WithConfig(func(c *api.Config) { c.IPLimit = api.RateLimit{Rate: 0.001, Burst: burst} }))
	before := e.Pool.Stat().AcquireCount()
	limited := 0
	for i := range 50 {
		r := e.Do("GET", "/v1/me", fmt.Sprintf("bogus-token-%02d-0123456789abcdefghijklmnop", i), nil)
		if r.Status == http.StatusTooManyRequests {
			limited++
		}
	}
	if queries := e.Pool.Stat().AcquireCount() - before; queries > burst {
		t.Errorf("50 bogus tokens cost %d database acquisitions (address burst %d)", queries, burst)
	}
	if limited != 50-burst {
		t.Errorf("%d of 50 bogus tokens limited, want %d", limited, 50-burst)
	}

	e2 := apitest.Start(t)
	before = e2.Pool.Stat().AcquireCount()
	for range 20 {
		e2.Do("GET", "/v1/me", "the-same-bogus-token-0123456789abcdefghij", nil).WantProblem(t, http.StatusUnauthorized, "unauthorized")
	}
	// One lookup, or two: the store's listener, connecting in the background after the server
	// started, drops every cached token once (a change may have been missed before it listened).
	if queries := e2.Pool.Stat().AcquireCount() - before; queries > 2 {
		t.Errorf("one bogus token sent 20 times cost %d database acquisitions", queries)
	}
}

// TestFollowersShareOneSignedHead: an event that wakes a lobby's streams and long polls at once
// has its head signed once for all of them (each follower that found no head signed yet signed
// its own), and every follower gets that same head.
func TestFollowersShareOneSignedHead(t *testing.T) {
	t.Parallel()
	const streams, polls, actions = 8, 8, 24
	e := apitest.Start(t, apitest.WithConfig(func(c *api.Config) { c.MaxStreamsPerClient = 2 * (streams + polls) }))
	p := e.NewPlayer("p", 0)
	lobby := e.CreateLobby(map[string]any{"betSize": 0, "playersCountLimit": 4}).Id.String()
	head := e.Events(lobby, 0).Next

	followers := make([]*apitest.Stream, streams)
	for i := range followers {
		followers[i] = e.OpenStream(lobby, p.Token, fmt.Sprintf("after=%d", head))
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	pages := make(chan api.EventPage, polls*actions)
	for range polls {
		wg.Go(func() {
			for after := head; ctx.Err() == nil; {
				r, err := e.Request(ctx, "GET", fmt.Sprintf("/v1/lobbies/%s/events?after=%d&wait=20", lobby, after), p.Token, nil)
				var page api.EventPage
				if err != nil || r.Status != http.StatusOK || json.Unmarshal(r.Body, &page) != nil {
					return
				}
				pages <- page
				after = page.Next
			}
		})
	}
	waitUntil(t, "every follower waits", func() bool { return api.OpenWaits(e.Server, p.ID) == streams+polls })

	signedBefore := api.HeadsSigned(e.Server)
	for i := range actions {
		e.Do("PUT", "/v1/lobbies/"+lobby+"/next-config", e.Admin, map[string]any{"betSize": i, "playersCountLimit": 4}).Want(t, http.StatusOK)
		head++
		var heads []api.SignedHead
		for _, s := range followers {
			s.Until(t, head, 5*time.Second)
			waitUntil(t, "the stream's head", func() bool { return len(s.Heads()) > i })
			heads = append(heads, s.Heads()[i])
		}
		for range polls {
			select {
			case page := <-pages:
				if page.Next != head {
					t.Fatalf("a long poll got %+v, want the event %d alone", page.Events, head)
				}
				heads = append(heads, page.Head)
			case <-time.After(5 * time.Second):
				t.Fatal("a long poll was not answered")
			}
		}
		for _, h := range heads {
			if h != heads[0] || h.Seq != head {
				t.Fatalf("the followers of event %d got the heads %+v and %+v", head, heads[0], h)
			}
		}
	}
	if signed := api.HeadsSigned(e.Server) - signedBefore; signed != actions {
		t.Errorf("%d events woke %d followers each and cost %d signatures, want one each", actions, streams+polls, signed)
	}
}
