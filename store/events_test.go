package store

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/commitreveal/rps/tournament"
)

// TestEventReadsBeginAfterTheirCallers: a read of the log answers only the callers that asked
// before it began. A fault run caught a follower's page answered by a read begun more than a
// second before the request, across a pause of the replica: the former sharing joined any read
// in flight until a notification said the log had grown, and the notifications of the newer
// events were still unread. Here the first read is held after it has read the log, an event is
// committed, and a second caller asks for the same page: it must see the event.
func TestEventReadsBeginAfterTheirCallers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hold := &holdEventRead{reached: make(chan struct{}), release: make(chan struct{})}
	s := New(tracedPool(t, hold), Options{Service: fastService()})
	t.Cleanup(s.Close)
	lobby := createLobby(t, s, admin(t, s), fastConfig(60_000))
	p := player(t, s, "p", 100)

	hold.arm()
	first := make(chan []tournament.LoggedEvent, 1)
	go func() {
		events, err := s.Events(ctx, lobby, 0, 100)
		if err != nil {
			t.Error(err)
		}
		first <- events
	}()
	select {
	case <-hold.reached:
	case <-time.After(30 * time.Second):
		t.Fatal("the first read never reached the database")
	}
	if err := register(s, p, lobby); err != nil {
		t.Fatal(err)
	}
	want, err := collect(ctx, s.pool, scanEvent, `SELECT seq, type, lobby_id::text, coalesce(game_id::text, ''),
			at, data::text, prev_hash, hash FROM events WHERE lobby_id = $1 ORDER BY seq`, lobby)
	if err != nil {
		t.Fatal(err)
	}
	second := make(chan []tournament.LoggedEvent, 1)
	go func() {
		events, err := s.Events(ctx, lobby, 0, 100)
		if err != nil {
			t.Error(err)
		}
		second <- events
	}()
	// The first read is let go only once the second caller waits on it.
	page := eventPage{lobby, 0, sharedEventPage}
	for deadline := time.Now().Add(30 * time.Second); !s.eventReads.nextWaiting(page); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the second caller never came")
		}
	}
	close(hold.release)
	if got := <-first; len(got) >= len(want) {
		t.Fatalf("the first read has %d events, begun before the registration's %d: the test held nothing", len(got), len(want))
	}
	if got := <-second; len(got) != len(want) || got[len(got)-1].Hash != want[len(want)-1].Hash {
		t.Errorf("a caller that asked after the registration committed got %d events, want %d: a read begun before it asked", len(got), len(want))
	}
}

// nextWaiting reports whether a read of page waits for the running one to end.
func (g *eventReads) nextWaiting(page eventPage) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.next[page] != nil
}

// holdEventRead holds the first read of a lobby's log after arm, once it has read its rows, until
// release is closed.
type holdEventRead struct {
	mu      sync.Mutex
	armed   bool
	reached chan struct{}
	release chan struct{}
}

// eventsQuery marks, in a traced query's context, a read of a lobby's log.
type eventsQuery struct{}

func (h *holdEventRead) arm() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.armed = true
}

func (h *holdEventRead) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if strings.Contains(data.SQL, "FROM events WHERE lobby_id = $1 AND seq > $2") {
		return context.WithValue(ctx, eventsQuery{}, true)
	}
	return ctx
}

func (h *holdEventRead) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	if ctx.Value(eventsQuery{}) == nil {
		return
	}
	h.mu.Lock()
	held := h.armed
	h.armed = false
	h.mu.Unlock()
	if held {
		close(h.reached)
		<-h.release
	}
}
