package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apitest"
)

// TestStreamLatencyResumeAndChain: the first event after an action arrives within a second; a
// dropped stream resumes from Last-Event-ID with no gap and no duplicate; comment lines are
// ignored; the streamed events form a hash chain a client can verify on its own.
func TestStreamLatencyResumeAndChain(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	p, q := e.NewPlayer("p", 100), e.NewPlayer("q", 100)
	l := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 2})
	lobby := l.Id.String()

	s := e.OpenStream(lobby, "", "")
	if s.Status != http.StatusOK || s.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %v %s", s.Status, s.Header, s.Raw())
	}
	// The backlog: lobby_created, game_opened.
	backlog := s.Until(t, 2, 5*time.Second)
	if len(backlog) != 2 || backlog[0].Event != "lobby_created" || backlog[1].Event != "game_opened" {
		t.Fatalf("backlog: %+v", backlog)
	}
	if s.Comments() < 1 {
		t.Errorf("no comment line seen (the stream's greeting)")
	}

	// Latency of the live stream, measured over a few actions.
	var streamed []apitest.Message
	streamed = append(streamed, backlog...)
	measure := func(what string, act func()) {
		t.Helper()
		start := time.Now()
		act()
		ev := s.Next(t, 3*time.Second)
		if lag := ev.Received.Sub(start); lag > time.Second {
			t.Errorf("%s: the first event (%s) arrived %v after the action, want within 1s", what, ev.Event, lag)
		} else {
			t.Logf("%s: %s arrived %v after the action started", what, ev.Event, lag)
		}
		streamed = append(streamed, ev)
	}
	measure("register p", func() { e.Register(lobby, p).Want(t, http.StatusCreated) })
	measure("register q", func() { e.Register(lobby, q).Want(t, http.StatusCreated) })
	// q's registration started round 1: round_started follows player_registered.
	streamed = append(streamed, s.Next(t, 3*time.Second))
	seq, _ := strconv.ParseInt(streamed[len(streamed)-1].ID, 10, 64)

	// Drop the stream, act while nobody listens, resume from the last id received.
	s.Close()
	e.Commit(lobby, p, "0p-rock").Want(t, http.StatusOK)
	e.Commit(lobby, q, "2q-scissors").Want(t, http.StatusOK)
	resumed := e.OpenStream(lobby, "", "after=1", "Last-Event-ID", strconv.FormatInt(seq, 10))
	if resumed.Status != http.StatusOK {
		t.Fatalf("resume: %d %s", resumed.Status, resumed.Raw())
	}
	last := e.Events(lobby, 0).Next
	streamed = append(streamed, resumed.Until(t, last, 5*time.Second)...)
	// And live after the resumption.
	measure2 := func(what string, act func()) {
		t.Helper()
		start := time.Now()
		act()
		ev := resumed.Next(t, 3*time.Second)
		if lag := ev.Received.Sub(start); lag > time.Second {
			t.Errorf("%s: the first event arrived %v after the action, want within 1s", what, lag)
		}
		streamed = append(streamed, ev)
	}
	measure2("reveal p", func() { e.Reveal(lobby, p, "0p-rock").Want(t, http.StatusOK) })
	e.Reveal(lobby, q, "2q-scissors").Want(t, http.StatusOK)
	last = e.Events(lobby, 0).Next
	streamed = append(streamed, resumed.Until(t, last, 5*time.Second)...)

	// No gap, no duplicate: the streamed ids are 1..last, and the chain verifies.
	evs := apitest.DecodeSSE(t, streamed)
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("streamed seq %d at position %d: a gap or a duplicate (%s)", ev.Seq, i, apitest.EventTypes(evs))
		}
	}
	apitest.VerifyChain(t, evs, 1, "")
	// Each batch is followed by the log's signed head, which the chain just read must hold.
	heads := resumed.Heads()
	if len(heads) == 0 || heads[len(heads)-1].Seq != last || heads[len(heads)-1].Hash != evs[len(evs)-1].Hash {
		t.Errorf("stream heads %+v, want the last one at seq %d with the chain's hash", heads, last)
	}
	// What the stream carried is exactly what the log serves.
	if polled := e.AllEvents(lobby); apitest.JSONOf(polled) != apitest.JSONOf(evs) {
		t.Fatalf("stream and log differ:\n%s\n%s", apitest.JSONOf(evs), apitest.JSONOf(polled))
	}
	if evs[len(evs)-1].Type != "game_opened" || evs[len(evs)-2].Type != "game_finished" {
		t.Fatalf("the stream ends with %s", apitest.EventTypes(evs[len(evs)-3:]))
	}
}

// TestStreamResumeSources: Last-Event-ID wins over ?after=; ?after= alone works; a resume at the
// end of the log waits for new events.
func TestStreamResumeSources(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	lobby := e.CreateLobby(map[string]any{"betSize": 0, "playersCountLimit": 3}).Id.String()
	for i := range 3 {
		e.Do("PUT", "/v1/lobbies/"+lobby+"/next-config", e.Admin, map[string]any{"betSize": i, "playersCountLimit": 3}).Want(t, http.StatusOK)
	}
	// The log: lobby_created, game_opened, 3 x next_config_changed.
	for _, c := range []struct {
		query, lastID string
		first         int64
	}{
		{"", "", 1},
		{"after=2", "", 3},
		{"after=1", "3", 4},
		{"after=4", "0", 1},
	} {
		var hdr []string
		if c.lastID != "" {
			hdr = []string{"Last-Event-ID", c.lastID}
		}
		s := e.OpenStream(lobby, "", c.query, hdr...)
		got := apitest.DecodeSSE(t, s.Until(t, 5, 5*time.Second))
		if got[0].Seq != c.first || int64(len(got)) != 5-c.first+1 {
			t.Errorf("query %q Last-Event-ID %q: streamed %s, want from %d", c.query, c.lastID, apitest.EventTypes(got), c.first)
		}
		s.Close()
	}
	// At the end of the log, the stream waits and then delivers the next event.
	s := e.OpenStream(lobby, "", "", "Last-Event-ID", "5")
	select {
	case ev := <-s.Messages:
		t.Fatalf("an event past the end of the log: %+v", ev)
	case <-time.After(100 * time.Millisecond):
	}
	e.Do("POST", "/v1/lobbies/"+lobby+"/close", e.Admin, nil).Want(t, http.StatusOK)
	if ev := s.Next(t, 2*time.Second); ev.ID != "6" || ev.Event != "lobby_closed" {
		t.Fatalf("after close: %+v", ev)
	}
	apitest.VerifyChain(t, e.AllEvents(lobby), 1, "")
}

// TestStreamLimitsAndShutdown: streams per client are bounded (429 with Retry-After) and end when
// the server shuts down.
func TestStreamLimitsAndShutdown(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t, apitest.WithConfig(func(c *api.Config) { c.MaxStreamsPerClient = 2 }))
	lobby := e.CreateLobby(map[string]any{"betSize": 0, "playersCountLimit": 2}).Id.String()
	p := e.NewPlayer("p", 0)
	a, b := e.OpenStream(lobby, p.Token, ""), e.OpenStream(lobby, p.Token, "")
	if a.Status != 200 || b.Status != 200 {
		t.Fatalf("streams: %d %d", a.Status, b.Status)
	}
	c := e.OpenStream(lobby, p.Token, "")
	if c.Status != http.StatusTooManyRequests || c.Header.Get("Retry-After") == "" {
		t.Fatalf("third stream: %d %v %s", c.Status, c.Header, c.Raw())
	}
	// Another client is not limited by p's streams.
	if d := e.OpenStream(lobby, e.Admin, ""); d.Status != 200 {
		t.Fatalf("admin stream: %d", d.Status)
	}
	// A closed stream frees its slot.
	a.Close()
	deadline := time.Now().Add(2 * time.Second)
	for {
		s := e.OpenStream(lobby, p.Token, "")
		if s.Status == 200 {
			break
		}
		s.Close()
		if time.Now().After(deadline) {
			t.Fatalf("a closed stream's slot was not freed: %d", s.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Shutdown ends the open streams.
	e.Server.Shutdown()
	select {
	case <-b.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("a stream outlived the server's Shutdown")
	}
}

// TestStreamSnapshotAndOneEvent: with follow=false the stream sends the events after its start
// and the head naming the last of them, then ends (also when there is no event to send, with the
// log's head); one event read by seq is the very JSON of its page.
func TestStreamSnapshotAndOneEvent(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	p := e.NewPlayer("p", 100)
	l := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 3})
	lobby := l.Id.String()
	e.Register(lobby, p).Want(t, http.StatusCreated)
	events := e.AllEvents(lobby)
	if len(events) != 3 {
		t.Fatalf("%d events, want lobby_created, game_opened, player_registered", len(events))
	}

	for _, c := range []struct {
		name, query string
		headers     []string
		from        int // the events expected are events[from:]
	}{
		{"whole log", "follow=false", nil, 0},
		{"after the query's seq", "follow=false&after=1", nil, 1},
		{"after Last-Event-ID", "follow=false&after=0", []string{"Last-Event-ID", "2"}, 2},
		{"nothing left", "follow=false&after=3", nil, 3},
	} {
		s := e.OpenStream(lobby, "", c.query, c.headers...)
		var got, want []string
		for m := range s.Messages {
			got = append(got, m.ID+" "+m.Event)
		}
		<-s.Done()
		for _, ev := range events[c.from:] {
			want = append(want, strconv.FormatInt(ev.Seq, 10)+" "+ev.Type)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: streamed %v, want %v", c.name, got, want)
		}
		if heads := s.Heads(); len(heads) != 1 || heads[0].Seq != 3 || heads[0].Hash != events[2].Hash {
			t.Errorf("%s: heads %+v, want one naming event 3", c.name, heads)
		}
	}

	page := e.Do("GET", "/v1/lobbies/"+lobby+"/events?after=1&limit=1", "", nil)
	one := e.Do("GET", "/v1/lobbies/"+lobby+"/events/2", "", nil)
	one.Want(t, http.StatusOK)
	var p1 struct {
		Events []json.RawMessage `json:"events"`
	}
	if err := json.Unmarshal(page.Body, &p1); err != nil || len(p1.Events) != 1 {
		t.Fatalf("page: %v %s", err, page.Body)
	}
	if !bytes.Equal(bytes.TrimSpace(one.Body), p1.Events[0]) {
		t.Errorf("event 2 alone:\n%s\nin its page:\n%s", one.Body, p1.Events[0])
	}
	e.Do("GET", "/v1/lobbies/"+lobby+"/events/4", "", nil).Want(t, http.StatusNotFound)
}
