package bot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func TestSSEReaderReadsTheServersMessages(t *testing.T) {
	body := ": stream of lobby x\n\n" +
		"id: 1\nevent: game_opened\ndata: {\"seq\":1}\n\n" +
		"event: head\r\ndata: {\"seq\":1}\r\n\r\n" + // CR LF line ends
		": heartbeat\n\n" +
		"\n\n" + // blank lines between messages are no message
		"id:2\nevent:two_lines\ndata: a\ndata:  b\nretry: 10\nunknown\n\n" +
		"id: 3\nevent: cut_short\ndata: {" // the body ends inside a message: dropped
	r := newSSEReader(strings.NewReader(body))
	want := []sseMessage{
		{}, // the comment naming the lobby
		{id: "1", event: "game_opened", data: `{"seq":1}`},
		{event: "head", data: `{"seq":1}`},
		{}, // the heartbeat
		{id: "2", event: "two_lines", data: "a\n b"},
	}
	for i, w := range want {
		m, err := r.next()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if m != w {
			t.Errorf("message %d = %+v, want %+v", i, m, w)
		}
	}
	if m, err := r.next(); !errors.Is(err, io.EOF) {
		t.Errorf("after the last message: %+v, %v; want io.EOF", m, err)
	}
}

// fakeStreams serves a lobby's events 1..total as an event stream that ends after `per` events
// of each connection, recording where each connection asked to start.
type fakeStreams struct {
	total, per int
	mu         sync.Mutex
	starts     []string
	auth       []string
}

func (f *fakeStreams) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.starts = append(f.starts, r.Header.Get("Last-Event-ID"))
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.mu.Unlock()
	after, _ := strconv.Atoi(r.Header.Get("Last-Event-ID"))
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, ": stream of lobby\n\n")
	for seq := after + 1; seq <= min(after+f.per, f.total); seq++ {
		fmt.Fprintf(w, "id: %d\nevent: e\ndata: {\"seq\":%d,\"type\":\"e\",\"data\":{}}\n\n", seq, seq)
		fmt.Fprintf(w, "event: head\ndata: {\"seq\":%d}\n\n", seq)
	}
	w.(http.Flusher).Flush()
}

// A stream that ends is reopened after the last event delivered: every event arrives once, in
// order, without a gap, however often the connection ends.
func TestFollowStreamResumesAfterTheLastEvent(t *testing.T) {
	f := &fakeStreams{total: 10, per: 3}
	srv := httptest.NewServer(f)
	defer srv.Close()
	c, err := NewClient(srv.URL, ClientOptions{Attempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	const lobby = "6f1c2a4e-8d3b-4c5a-9e7f-0a1b2c3d4e5f"
	var got []int64
	err = c.FollowStream(ctx, "tok", lobby, 1, func(d StreamDelivery) {
		got = append(got, d.Event.Seq)
		if d.Opened.IsZero() {
			t.Error("a delivery without the time its stream opened")
		}
		if d.Event.Seq == int64(f.total) {
			cancel()
		}
	})
	if err != nil {
		t.Fatalf("FollowStream: %v", err)
	}
	if want := []int64{2, 3, 4, 5, 6, 7, 8, 9, 10}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events %v, want %v", got, want)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if want := []string{"1", "4", "7"}; fmt.Sprint(f.starts[:3]) != fmt.Sprint(want) {
		t.Errorf("connections started after %q, want %q", f.starts, want)
	}
	if f.auth[0] != "Bearer tok" {
		t.Errorf("Authorization %q, want the bot's token", f.auth[0])
	}
	if n := c.Stats().Report().Op(OpStream).Count; n < 3 {
		t.Errorf("%d stream connections counted, want at least 3", n)
	}
}

// A server that refuses the stream is tried again with a pause, and given up after the
// client's attempts in a row, with the refusal's code.
func TestFollowStreamGivesUpOnRefusals(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"type":"about:blank","title":"Too Many Requests","status":429,"code":"rate_limited","detail":"too many"}`)
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL, ClientOptions{Attempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	err = c.FollowStream(t.Context(), "", "6f1c2a4e-8d3b-4c5a-9e7f-0a1b2c3d4e5f", 0, func(StreamDelivery) { t.Error("an event from a refused stream") })
	if CodeOf(err) != "rate_limited" || calls.Load() != 3 {
		t.Errorf("after %d calls: %v; want rate_limited after 3", calls.Load(), err)
	}
}
