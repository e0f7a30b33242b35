package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/commitreveal/rps/tournament"
)

// Event pages.
const (
	defaultEventPage = 100
	maxEventPage     = 1000
	// heartbeatEvery keeps idle streams (and the proxies in between) from timing out.
	heartbeatEvery = 15 * time.Second
)

func (h *handlers) ListEvents(ctx context.Context, req ListEventsRequestObject) (ListEventsResponseObject, error) {
	lobby := tournament.LobbyID(req.LobbyId.String())
	var after int64
	if req.Params.After != nil {
		after = *req.Params.After
	}
	limit := defaultEventPage
	if req.Params.Limit != nil {
		limit = min(int(*req.Params.Limit), maxEventPage)
	}
	var wait time.Duration
	if req.Params.Wait != nil {
		wait = time.Duration(*req.Params.Wait) * time.Second
	}
	events, err := h.s.eventsAfter(ctx, lobby, after, limit, wait)
	if errors.Is(err, errTooManyWaits) {
		return nil, rateLimited(int(heartbeatEvery.Seconds()))
	}
	if err != nil {
		return nil, err
	}
	page := EventPage{Events: make([]Event, 0, len(events)), Next: after}
	for _, e := range events {
		page.Events = append(page.Events, eventView(e))
		page.Next = e.Seq
	}
	var last *tournament.LoggedEvent
	if len(events) > 0 {
		last = &events[len(events)-1]
	}
	if page.Head, err = h.s.currentHead(ctx, lobby, last); err != nil {
		return nil, err
	}
	return ListEvents200JSONResponse(page), nil
}

// errTooManyWaits: the caller holds as many long polls and streams as it may.
var errTooManyWaits = errors.New("too many long polls and event streams")

// waitingClient is who a long poll or stream counts against: the caller's account, or its address.
func waitingClient(ctx context.Context) string {
	if who, ok := caller(ctx); ok {
		return string(who.ID)
	}
	return requestInfoOf(ctx).ip
}

// eventsAfter reads the events after a sequence number, waiting up to wait for the first one
// when there is none yet (a long poll, counted against the caller's budget of waits). An unknown
// lobby is not_found. A lobby's log begins with its creation, so a read that found events needs
// no other check that the lobby exists (the profile of a long-polling load showed that check on
// every poll). A long poll that the notifications say is at the lobby's head (the usual case: a
// follower asking for what comes after the page it just got) reads nothing before it waits: a
// notification names an existing lobby, and the one for the next event wakes it. The profile
// showed three reads of the log and one of the lobby per poll before). A long poll is handed the
// events the notifications brought (see store.NotifiedEvents), so a poll at the head reads
// nothing at all.
func (s *Server) eventsAfter(ctx context.Context, lobby tournament.LobbyID, after int64, limit int, wait time.Duration) ([]tournament.LoggedEvent, error) {
	read := s.store.Events
	if wait > 0 {
		read = s.store.NotifiedEvents
	}
	if wait <= 0 || s.store.MayHaveEventsAfter(lobby, after) {
		events, err := read(ctx, lobby, after, limit)
		if err != nil || len(events) > 0 {
			return events, err
		}
		if _, _, err := s.store.Head(ctx, lobby); err != nil {
			return nil, readErr(err, "lobby")
		}
		if wait <= 0 {
			return nil, nil
		}
	}
	client := waitingClient(ctx)
	if !s.streams.acquire(client) {
		return nil, errTooManyWaits
	}
	defer s.streams.release(client)
	woken, cancel := s.store.Subscribe(lobby)
	defer cancel()
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	for {
		// Look again after subscribing: an event appended in between would otherwise be missed.
		// A notification after the subscription wakes this poll, so a head known now that is not
		// past ours means there is nothing to read yet.
		if s.store.MayHaveEventsAfter(lobby, after) {
			events, err := read(ctx, lobby, after, limit)
			if err != nil || len(events) > 0 {
				return events, err
			}
		}
		// Wait for news of an event after ours: a wake-up for an event this poll is already past
		// costs no read.
		for news := false; !news; {
			select {
			case <-woken:
				news = s.store.MayHaveEventsAfter(lobby, after)
			case <-timeout.C:
				return nil, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-s.shutdown:
				return nil, nil
			}
		}
	}
}

// StreamEvents is served by streamEvents, mounted by hand in routes; this method only satisfies
// the generated interface.
func (h *handlers) StreamEvents(ctx context.Context, _ StreamEventsRequestObject) (StreamEventsResponseObject, error) {
	return nil, fmt.Errorf("the event stream is served by its own handler")
}

// streamEvents serves a lobby's log live as server-sent events: each event as `id: seq`,
// `event: type` and `data: <Event JSON>`, flushed as it is written; a comment line as heartbeat;
// resumption after Last-Event-ID (or the `after` query parameter). The request was validated
// against the spec before it gets here.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	lobby := tournament.LobbyID(chi.URLParam(r, "lobbyId"))
	if _, err := s.store.Lobby(ctx, lobby); err != nil {
		s.writeProblem(w, r, readErr(err, "lobby"))
		return
	}
	after, err := streamStart(r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	client := waitingClient(ctx)
	if !s.streams.acquire(client) {
		s.writeProblem(w, r, rateLimited(int(heartbeatEvery.Seconds())))
		return
	}
	defer s.streams.release(client)
	flusher, ok := w.(http.Flusher)
	if !ok {
		s.writeProblem(w, r, fmt.Errorf("response writer cannot flush"))
		return
	}

	woken, cancel := s.store.Subscribe(lobby)
	defer cancel()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprint(w, ": stream of lobby ", lobby, "\n\n")
	flusher.Flush()

	heartbeat := time.NewTicker(heartbeatEvery)
	defer heartbeat.Stop()
	for news := true; ; {
		if news {
			var full, ok bool
			if after, full, ok = s.sendEvents(ctx, w, r, flusher, lobby, after); !ok {
				return
			}
			if full {
				continue
			}
		}
		select {
		case <-woken:
			// A wake-up for an event the stream has already sent costs no read.
			news = s.store.MayHaveEventsAfter(lobby, after)
		case <-heartbeat.C:
			news = false
			if _, err := fmt.Fprint(w, ": heartbeat\n\n"); err != nil {
				return
			}
			flusher.Flush()
		case <-ctx.Done():
			return
		case <-s.shutdown:
			return
		}
	}
}

// writeHead sends the stream's signed head after a batch of events; false ends the stream.
func (s *Server) writeHead(w http.ResponseWriter, r *http.Request, lobby tournament.LobbyID, last *tournament.LoggedEvent) bool {
	head, err := s.currentHead(r.Context(), lobby, last)
	if err != nil {
		s.log.ErrorContext(r.Context(), "event stream head failed", "lobby", lobby, "err", err)
		return false
	}
	data, err := json.Marshal(head)
	if err != nil {
		return false
	}
	_, err = fmt.Fprintf(w, "event: head\ndata: %s\n\n", data)
	return err == nil
}

// sendEvents writes the events after a seq to an event stream, one page of them followed by the
// signed head, and returns the new position, whether the page was full (more may follow) and
// whether the stream goes on.
func (s *Server) sendEvents(ctx context.Context, w http.ResponseWriter, r *http.Request, flusher http.Flusher, lobby tournament.LobbyID, after int64) (int64, bool, bool) {
	events, err := s.store.NotifiedEvents(ctx, lobby, after, maxEventPage)
	if err != nil {
		// The status is already sent; ending the stream lets the client resume.
		s.log.WarnContext(ctx, "event stream read failed", "lobby", lobby, "err", err)
		return after, false, false
	}
	for _, e := range events {
		data, err := json.Marshal(eventView(e))
		if err != nil {
			s.log.ErrorContext(ctx, "event stream encode failed", "lobby", lobby, "seq", e.Seq, "err", err)
			return after, false, false
		}
		if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Type, data); err != nil {
			return after, false, false
		}
		after = e.Seq
	}
	if len(events) > 0 {
		if !s.writeHead(w, r, lobby, &events[len(events)-1]) {
			return after, false, false
		}
		flusher.Flush()
	}
	return after, len(events) == maxEventPage, true
}

// streamStart is where a stream resumes: after Last-Event-ID, else after the `after` parameter.
func streamStart(r *http.Request) (int64, error) {
	for _, source := range []struct{ name, value string }{
		{"Last-Event-ID", r.Header.Get("Last-Event-ID")},
		{"after", r.URL.Query().Get("after")},
	} {
		if source.value == "" {
			continue
		}
		n, err := strconv.ParseInt(source.value, 10, 64)
		if err != nil || n < 0 {
			return 0, validationProblem(source.name, "must be a non-negative event sequence number")
		}
		return n, nil
	}
	return 0, nil
}

// streamLimits bounds the open event streams and long polls per client (account or address).
type streamLimits struct {
	max  int
	mu   sync.Mutex
	open map[string]int
}

func newStreamLimits(max int) *streamLimits {
	if max <= 0 {
		max = 8
	}
	return &streamLimits{max: max, open: map[string]int{}}
}

func (l *streamLimits) acquire(client string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[client] >= l.max {
		return false
	}
	l.open[client]++
	return true
}

func (l *streamLimits) release(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[client]--; l.open[client] <= 0 {
		delete(l.open, client)
	}
}
