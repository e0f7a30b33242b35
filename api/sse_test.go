package api

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestStreamLatencyResumeAndChain: the first event after an action arrives within a second; a
// dropped stream resumes from Last-Event-ID with no gap and no duplicate; comment lines are
// ignored; the streamed events form a hash chain a client can verify on its own.
func TestStreamLatencyResumeAndChain(t *testing.T) {
	t.Parallel()
	e := setup(t)
	p, q := e.newPlayer("p", 100), e.newPlayer("q", 100)
	l := e.createLobby(map[string]any{"betSize": 10, "playersCountLimit": 2})
	lobby := l.Id.String()

	s := e.openStream(lobby, "", "")
	if s.Status != http.StatusOK || s.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %v %s", s.Status, s.Header, s.Raw())
	}
	// The backlog: lobby_created, game_opened.
	backlog := s.until(t, 2, 5*time.Second)
	if len(backlog) != 2 || backlog[0].Event != "lobby_created" || backlog[1].Event != "game_opened" {
		t.Fatalf("backlog: %+v", backlog)
	}
	if s.Comments() < 1 {
		t.Errorf("no comment line seen (the stream's greeting)")
	}

	// Latency of the live stream, measured over a few actions.
	var streamed []sseEvent
	streamed = append(streamed, backlog...)
	measure := func(what string, act func()) {
		t.Helper()
		start := time.Now()
		act()
		ev := s.next(t, 3*time.Second)
		if lag := ev.Received.Sub(start); lag > time.Second {
			t.Errorf("%s: the first event (%s) arrived %v after the action, want within 1s", what, ev.Event, lag)
		} else {
			t.Logf("%s: %s arrived %v after the action started", what, ev.Event, lag)
		}
		streamed = append(streamed, ev)
	}
	measure("register p", func() { e.register(lobby, p).want(t, http.StatusCreated) })
	measure("register q", func() { e.register(lobby, q).want(t, http.StatusCreated) })
	// q's registration started round 1: round_started follows player_registered.
	streamed = append(streamed, s.next(t, 3*time.Second))
	seq, _ := strconv.ParseInt(streamed[len(streamed)-1].ID, 10, 64)

	// Drop the stream, act while nobody listens, resume from the last id received.
	s.Close()
	e.commit(lobby, p, "0p-rock").want(t, http.StatusOK)
	e.commit(lobby, q, "2q-scissors").want(t, http.StatusOK)
	resumed := e.openStream(lobby, "", "after=1", "Last-Event-ID", strconv.FormatInt(seq, 10))
	if resumed.Status != http.StatusOK {
		t.Fatalf("resume: %d %s", resumed.Status, resumed.Raw())
	}
	last := e.events(lobby, 0).Next
	streamed = append(streamed, resumed.until(t, last, 5*time.Second)...)
	// And live after the resumption.
	measure2 := func(what string, act func()) {
		t.Helper()
		start := time.Now()
		act()
		ev := resumed.next(t, 3*time.Second)
		if lag := ev.Received.Sub(start); lag > time.Second {
			t.Errorf("%s: the first event arrived %v after the action, want within 1s", what, lag)
		}
		streamed = append(streamed, ev)
	}
	measure2("reveal p", func() { e.reveal(lobby, p, "0p-rock").want(t, http.StatusOK) })
	e.reveal(lobby, q, "2q-scissors").want(t, http.StatusOK)
	last = e.events(lobby, 0).Next
	streamed = append(streamed, resumed.until(t, last, 5*time.Second)...)

	// No gap, no duplicate: the streamed ids are 1..last, and the chain verifies.
	evs := decodeSSE(t, streamed)
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("streamed seq %d at position %d: a gap or a duplicate (%s)", ev.Seq, i, eventTypes(evs))
		}
	}
	verifyChain(t, evs, 1, "")
	// What the stream carried is exactly what the log serves.
	if polled := e.allEvents(lobby); jsonOf(polled) != jsonOf(evs) {
		t.Fatalf("stream and log differ:\n%s\n%s", jsonOf(evs), jsonOf(polled))
	}
	if evs[len(evs)-1].Type != "game_opened" || evs[len(evs)-2].Type != "game_finished" {
		t.Fatalf("the stream ends with %s", eventTypes(evs[len(evs)-3:]))
	}
}

// TestStreamResumeSources: Last-Event-ID wins over ?after=; ?after= alone works; a resume at the
// end of the log waits for new events.
func TestStreamResumeSources(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lobby := e.createLobby(map[string]any{"betSize": 0, "playersCountLimit": 3}).Id.String()
	for i := range 3 {
		e.do("PUT", "/v1/lobbies/"+lobby+"/next-config", e.Admin, map[string]any{"betSize": i, "playersCountLimit": 3}).want(t, http.StatusOK)
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
		s := e.openStream(lobby, "", c.query, hdr...)
		got := decodeSSE(t, s.until(t, 5, 5*time.Second))
		if got[0].Seq != c.first || int64(len(got)) != 5-c.first+1 {
			t.Errorf("query %q Last-Event-ID %q: streamed %s, want from %d", c.query, c.lastID, eventTypes(got), c.first)
		}
		s.Close()
	}
	// At the end of the log, the stream waits and then delivers the next event.
	s := e.openStream(lobby, "", "", "Last-Event-ID", "5")
	select {
	case ev := <-s.Events:
		t.Fatalf("an event past the end of the log: %+v", ev)
	case <-time.After(100 * time.Millisecond):
	}
	e.do("POST", "/v1/lobbies/"+lobby+"/close", e.Admin, nil).want(t, http.StatusOK)
	if ev := s.next(t, 2*time.Second); ev.ID != "6" || ev.Event != "lobby_closed" {
		t.Fatalf("after close: %+v", ev)
	}
	verifyChain(t, e.allEvents(lobby), 1, "")
}

// TestStreamLimitsAndShutdown: streams per client are bounded (429 with Retry-After) and end when
// the server shuts down.
func TestStreamLimitsAndShutdown(t *testing.T) {
	t.Parallel()
	e := setup(t, withConfig(func(c *Config) { c.MaxStreamsPerClient = 2 }))
	lobby := e.createLobby(map[string]any{"betSize": 0, "playersCountLimit": 2}).Id.String()
	p := e.newPlayer("p", 0)
	a, b := e.openStream(lobby, p.Token, ""), e.openStream(lobby, p.Token, "")
	if a.Status != 200 || b.Status != 200 {
		t.Fatalf("streams: %d %d", a.Status, b.Status)
	}
	c := e.openStream(lobby, p.Token, "")
	if c.Status != http.StatusTooManyRequests || c.Header.Get("Retry-After") == "" {
		t.Fatalf("third stream: %d %v %s", c.Status, c.Header, c.Raw())
	}
	// Another client is not limited by p's streams.
	if d := e.openStream(lobby, e.Admin, ""); d.Status != 200 {
		t.Fatalf("admin stream: %d", d.Status)
	}
	// A closed stream frees its slot.
	a.Close()
	deadline := time.Now().Add(2 * time.Second)
	for {
		s := e.openStream(lobby, p.Token, "")
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
	case <-b.done:
	case <-time.After(2 * time.Second):
		t.Fatal("a stream outlived the server's Shutdown")
	}
}
