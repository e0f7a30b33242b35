package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
	"github.com/commitreveal/rps/translog"
)

// Event pages.
const (
	defaultEventPage = 100
	maxEventPage     = 1000
	// heartbeatEvery keeps idle streams (and the proxies in between) from timing out.
	heartbeatEvery = 15 * time.Second
	// DefaultStreamWriteTimeout is how long a write of an event stream or a long poll's answer may
	// wait for the client to take its bytes (see Config.StreamWriteTimeout). A client that reads
	// never waits: the kernel's buffers take what is written. Only one that stopped reading for
	// long enough to fill them (hundreds of KB) does.
	DefaultStreamWriteTimeout = 10 * time.Second
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
	withProof := req.Params.LogProof != nil && *req.Params.LogProof
	var shared *lobbyFanOut
	if wait > 0 {
		var unfollow func()
		shared, unfollow = h.s.fanOut.follow(lobby)
		defer unfollow()
	}
	events, readTo, err := h.s.eventsAfter(ctx, lobby, after, limit, wait)
	if errors.Is(err, errTooManyWaits) {
		return nil, rateLimited(int(heartbeatEvery.Seconds()))
	}
	if err != nil {
		return nil, err
	}
	if wait > 0 && !withProof && len(events) > 0 {
		// The followers woken by an event share its page.
		head, err := h.s.currentHead(ctx, lobby, &events[len(events)-1])
		if err != nil {
			return nil, err
		}
		body, err := shared.pollPage(after, events, head)
		if err != nil {
			return nil, err
		}
		return longPollAnswer{body: body, s: h.s, ctx: ctx}, nil
	}
	page := EventPage{Events: make([]Event, 0, len(events)), Next: after}
	for _, e := range events {
		page.Events = append(page.Events, eventView(e))
		page.Next = e.Seq
	}
	if len(events) > 0 {
		page.Head, err = h.s.currentHead(ctx, lobby, &events[len(events)-1])
	} else {
		page.Head, err = h.s.signer.head(ctx, lobby, readTo.seq, readTo.hash)
	}
	if err != nil {
		return nil, err
	}
	if err := h.s.pageLog(ctx, lobby, &page, events, wait > 0, withProof); err != nil {
		return nil, err
	}
	if wait > 0 {
		// As the generated response encodes it.
		var body bytes.Buffer
		if err := json.NewEncoder(&body).Encode(page); err != nil {
			return nil, fmt.Errorf("encode page: %w", err)
		}
		return longPollAnswer{body: body.Bytes(), s: h.s, ctx: ctx}, nil
	}
	return ListEvents200JSONResponse(page), nil
}

// longPollAnswer is a long poll's page (its JSON), written under the stream write timeout: a
// client that holds a long poll and does not read its answer is disconnected, like a stalled
// event stream.
type longPollAnswer struct {
	body []byte
	s    *Server
	ctx  context.Context
}

func (a longPollAnswer) VisitListEventsResponse(w http.ResponseWriter) error {
	out := streamOutput{w: w, rc: http.NewResponseController(w), timeout: a.s.streamWriteTimeout}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if _, err := (pacedWriter{w, &out}).Write(a.body); err != nil {
		// The status is sent; the connection is closed, and the client polls again.
		a.s.log.InfoContext(a.ctx, "long poll answer not taken; client disconnected", "err", err, "requestId", requestID(a.ctx))
	}
	return nil
}

// GetEvent serves one event of a lobby's log, the JSON of a page's event, declared as a
// TypedEvent.
func (h *handlers) GetEvent(ctx context.Context, req GetEventRequestObject) (GetEventResponseObject, error) {
	lobby := tournament.LobbyID(req.LobbyId.String())
	events, err := h.s.store.Events(ctx, lobby, req.Seq-1, 1)
	if err != nil {
		return nil, err
	}
	if len(events) == 0 || events[0].Seq != req.Seq {
		if _, _, err := h.s.store.Head(ctx, lobby); err != nil {
			return nil, readErr(err, "lobby")
		}
		return nil, newProblem(http.StatusNotFound, ProblemCodeNotFound, fmt.Sprintf("the lobby's log has no event %d", req.Seq))
	}
	raw, err := json.Marshal(eventView(events[0]))
	if err != nil {
		return nil, fmt.Errorf("encode event: %w", err)
	}
	var typed TypedEvent
	if err := typed.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("encode event: %w", err)
	}
	return GetEvent200JSONResponse(typed), nil
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
// when there is none yet (a long poll, counted against the caller's budget of waits). When it
// finds none, it returns the log's position it read up to instead (see readToHead). An unknown
// lobby is not_found. A lobby's log begins with its creation, so a read that found events needs
// no other check that the lobby exists (the profile of a long-polling load showed that check on
// every poll). A long poll that the notifications say is at the lobby's head (the usual case: a
// follower asking for what comes after the page it just got) reads nothing before it waits: a
// notification names an existing lobby, and the one for the next event wakes it. The profile
// showed three reads of the log and one of the lobby per poll before). A long poll is handed the
// events the notifications brought (see store.NotifiedEvents), so a poll at the head reads
// nothing until it ends.
func (s *Server) eventsAfter(ctx context.Context, lobby tournament.LobbyID, after int64, limit int, wait time.Duration) ([]tournament.LoggedEvent, logPosition, error) {
	if wait <= 0 {
		events, err := s.store.Events(ctx, lobby, after, limit)
		if err != nil || len(events) > 0 {
			return events, logPosition{}, err
		}
		return s.readToHead(ctx, lobby, after, limit)
	}
	if s.store.MayHaveEventsAfter(lobby, after) {
		events, err := s.store.NotifiedEvents(ctx, lobby, after, limit)
		if err != nil || len(events) > 0 {
			return events, logPosition{}, err
		}
		if _, _, err := s.store.Head(ctx, lobby); err != nil {
			return nil, logPosition{}, readErr(err, "lobby")
		}
	}
	client := waitingClient(ctx)
	if !s.streams.acquire(client) {
		return nil, logPosition{}, errTooManyWaits
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
			events, err := s.store.NotifiedEvents(ctx, lobby, after, limit)
			if err != nil || len(events) > 0 {
				return events, logPosition{}, err
			}
		}
		// Wait for news of an event after ours: a wake-up for an event this poll is already past
		// costs no read.
		for news := false; !news; {
			select {
			case <-woken:
				news = s.store.MayHaveEventsAfter(lobby, after)
			case <-timeout.C:
				return s.readToHead(ctx, lobby, after, limit)
			case <-ctx.Done():
				return nil, logPosition{}, ctx.Err()
			case <-s.shutdown:
				return s.readToHead(ctx, lobby, after, limit)
			}
		}
	}
}

// logPosition is how far a read of a lobby's log went: the seq and hash of the last event it
// saw (0 for an empty log).
type logPosition struct {
	seq  int64
	hash [32]byte
}

// readToHead ends a read that found no event after `after`, or a long poll that waited for one in
// vain: it reads the lobby's head and, when the head is past after, the log after it (a long
// poll's notifications can lag behind the log, and an event can land in between). So an answer
// without events names the head it read, at or before after: nothing new up to there.
func (s *Server) readToHead(ctx context.Context, lobby tournament.LobbyID, after int64, limit int) ([]tournament.LoggedEvent, logPosition, error) {
	seq, hash, err := s.store.Head(ctx, lobby)
	if err != nil {
		return nil, logPosition{}, readErr(err, "lobby")
	}
	if seq > after {
		events, err := s.store.Events(ctx, lobby, after, limit)
		if err != nil || len(events) > 0 {
			return events, logPosition{}, err
		}
	}
	return nil, logPosition{seq: seq, hash: hash}, nil
}

// StreamEvents is served by streamEvents, mounted by hand in routes; this method only satisfies
// the generated interface.
func (h *handlers) StreamEvents(ctx context.Context, _ StreamEventsRequestObject) (StreamEventsResponseObject, error) {
	return nil, fmt.Errorf("the event stream is served by its own handler")
}

// streamEvents serves a lobby's log live as server-sent events: each event as `id: seq`,
// `event: type` and `data: <Event JSON>`, flushed as it is written; a comment line as heartbeat;
// resumption after Last-Event-ID (or the `after` query parameter); with follow=false it ends
// after the events up to the head and that head. The request was validated
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

	woken, cancel := s.store.Subscribe(lobby)
	defer cancel()
	shared, unfollow := s.fanOut.follow(lobby)
	defer unfollow()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	out := &streamOutput{w: w, rc: http.NewResponseController(w), timeout: s.streamWriteTimeout}
	w.WriteHeader(http.StatusOK)
	if !out.send(ctx, s, fmt.Sprint(": stream of lobby ", lobby, "\n\n")) {
		return
	}
	if r.URL.Query().Get("follow") == "false" {
		s.sendSnapshot(ctx, out, lobby, after)
		return
	}

	heartbeat := time.NewTicker(heartbeatEvery)
	defer heartbeat.Stop()
	// The stream catches up (with the log's leaves) until a batch is not full; past it, it sends
	// events as they commit, before the log has them.
	catchingUp := true
	for news := true; ; {
		if news {
			var full, ok bool
			if after, full, ok = s.sendEvents(ctx, out, shared, lobby, after, catchingUp); !ok {
				return
			}
			if full {
				continue
			}
			catchingUp = false
		}
		select {
		case <-woken:
			// A wake-up for an event the stream has already sent costs no read.
			news = s.store.MayHaveEventsAfter(lobby, after)
		case <-heartbeat.C:
			news = false
			if !out.send(ctx, s, ": heartbeat\n\n") {
				return
			}
		case <-ctx.Done():
			return
		case <-s.shutdown:
			return
		}
	}
}

// streamOutput writes an event stream, each write and each flush under the stream write timeout:
// a client that does not take its bytes within it (it stopped reading, and the buffers in between
// are full) fails the write, which ends the stream and closes the connection (reset, see
// ResetStalledConns), freeing the client's stream slot, the goroutine and the buffers. The client
// resumes with Last-Event-ID.
type streamOutput struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

// extendDeadline gives the next write its time. A writer that cannot take deadlines (net/http's
// all can) writes without one.
func (o *streamOutput) extendDeadline() {
	_ = o.rc.SetWriteDeadline(time.Now().Add(o.timeout))
}

// pacedChunk is how much of an answer is written under one stream write timeout. A long poll's
// page holds up to 1,000 events (about 500 KB), far more than a slow link carries in one timeout
// (10 s by default): written at once, it was cut midway for any client slower than about
// 400 kbit/s, which then asked for the same page again, forever. In chunks, a client that takes
// 16 KB per timeout (1.6 KB/s by default) gets the whole page, and one that stops reading is
// still disconnected one timeout later.
const pacedChunk = 16 << 10

// pacedWriter writes an answer in pacedChunk pieces, each under a deadline of its own.
type pacedWriter struct {
	http.ResponseWriter
	out *streamOutput
}

func (p pacedWriter) Write(b []byte) (int, error) {
	written := 0
	for written < len(b) {
		p.out.extendDeadline()
		n, err := p.ResponseWriter.Write(b[written:min(len(b), written+pacedChunk)])
		written += n
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

func (p pacedWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }

// write writes text; false means the stream must end (the error is logged).
func (o *streamOutput) write(ctx context.Context, s *Server, text string) bool {
	o.extendDeadline()
	if _, err := io.WriteString(o.w, text); err != nil {
		s.streamFailed(ctx, err)
		return false
	}
	return true
}

// writeBytes writes b in pacedChunk pieces, each under a deadline of its own; false means the
// stream must end.
func (o *streamOutput) writeBytes(ctx context.Context, s *Server, b []byte) bool {
	if _, err := (pacedWriter{o.w, o}).Write(b); err != nil {
		s.streamFailed(ctx, err)
		return false
	}
	return true
}

// flush sends what was written; false means the stream must end. It follows a write, whose
// deadline (set just before) it shares: setting a deadline is a call into the runtime's timers
// on every follower's every event (2.2% of rpsd's CPU in the mixed load, twice per event).
func (o *streamOutput) flush(ctx context.Context, s *Server) bool {
	if err := o.rc.Flush(); err != nil {
		s.streamFailed(ctx, err)
		return false
	}
	return true
}

// send writes text and flushes it.
func (o *streamOutput) send(ctx context.Context, s *Server, text string) bool {
	return o.write(ctx, s, text) && o.flush(ctx, s)
}

// streamFailed logs why a stream ended on a write: a client that did not take its bytes in time
// (or that went away).
func (s *Server) streamFailed(ctx context.Context, err error) {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		s.log.InfoContext(ctx, "event stream not read; client disconnected", "timeout", s.streamWriteTimeout, "requestId", requestID(ctx))
		return
	}
	s.log.DebugContext(ctx, "event stream write failed", "err", err, "requestId", requestID(ctx))
}

// writeHead sends the lobby's signed head as stored now, for a snapshot that had no event to send;
// false ends the stream.
func (s *Server) writeHead(ctx context.Context, out *streamOutput, lobby tournament.LobbyID) bool {
	head, err := s.currentHead(ctx, lobby, nil)
	if err != nil {
		s.headFailed(ctx, lobby, err)
		return false
	}
	data, err := json.Marshal(head)
	if err != nil {
		return false
	}
	return out.writeBytes(ctx, s, headFrame(data))
}

// headFailed logs a head a stream could not sign.
func (s *Server) headFailed(ctx context.Context, lobby tournament.LobbyID, err error) {
	if ctx.Err() == nil {
		// A client that hangs up meanwhile is no error of the server's.
		s.log.ErrorContext(ctx, "event stream head failed", "lobby", lobby, "err", err)
	}
}

// sendEvents writes the events after a seq to an event stream, one page of them followed by the
// signed head, and returns the new position, whether the page was full (more may follow) and
// whether the stream goes on. With leaves (a stream catching up on events already in the log),
// each event the log has carries its leafIndex, as in a page read without waiting, and the
// stream's bytes are its own; events sent as they commit come before the log has them (looking
// would cost every follower a read per event), and their bytes are shared by every stream of the
// lobby at the same position (see fanOut).
func (s *Server) sendEvents(ctx context.Context, out *streamOutput, shared *lobbyFanOut, lobby tournament.LobbyID, after int64, leaves bool) (int64, bool, bool) {
	// A stream catching up (or a snapshot, which then ends) reads the log itself: the events
	// notified so far may stop short of one that committed before the request, whose
	// notification is still on its way (a snapshot then missed it, under load).
	read := s.store.NotifiedEvents
	if leaves {
		read = s.store.Events
	}
	events, err := read(ctx, lobby, after, maxEventPage)
	var ranges []translog.Range
	if err == nil && leaves && len(events) > 0 {
		ranges, err = s.store.LogRanges(ctx, lobby, events[0].Seq, events[len(events)-1].Seq)
	}
	if err != nil {
		// The status is already sent; ending the stream lets the client resume.
		s.log.WarnContext(ctx, "event stream read failed", "lobby", lobby, "err", err)
		return after, false, false
	}
	if len(events) == 0 {
		return after, false, true
	}
	last := events[len(events)-1].Seq
	head, err := s.currentHead(ctx, lobby, &events[len(events)-1])
	if err != nil {
		s.headFailed(ctx, lobby, err)
		return after, false, false
	}
	var batch []byte
	if leaves {
		batch, err = encodeBatch(batchKey{after: after, last: last, head: head}, events, func(e *tournament.LoggedEvent) (encodedEvent, error) {
			return encodeEvent(e, ranges)
		})
	} else {
		batch, err = shared.streamBatch(after, events, head)
	}
	if err != nil {
		s.log.ErrorContext(ctx, "event stream encode failed", "lobby", lobby, "after", after, "err", err)
		return after, false, false
	}
	if !out.writeBytes(ctx, s, batch) || !out.flush(ctx, s) {
		return after, false, false
	}
	return last, len(events) == maxEventPage, true
}

// setLeaf gives an event's view its leaf in the transparency log when ranges (the lobby's log
// ranges around it) hold the event.
func setLeaf(view *Event, ranges []translog.Range) {
	if index, ok := store.LeafOf(ranges, view.Seq); ok {
		view.LeafIndex = &index
	}
}

// sendSnapshot writes the events after a seq up to the log's head, each page followed by its
// head, and the current head when there was no event to send: the whole of a follow=false stream.
func (s *Server) sendSnapshot(ctx context.Context, out *streamOutput, lobby tournament.LobbyID, after int64) {
	sent := false
	for {
		// With leaves, the stream's bytes are its own: it shares nothing.
		next, full, ok := s.sendEvents(ctx, out, nil, lobby, after, true)
		if !ok {
			return
		}
		sent = sent || next != after
		after = next
		if !full {
			break
		}
	}
	if !sent && s.writeHead(ctx, out, lobby) {
		out.flush(ctx, s)
	}
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
