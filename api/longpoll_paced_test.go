package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// deadlineRecorder is a ResponseWriter that takes write deadlines (as net/http's does, through
// http.ResponseController) and records the most bytes written under any one deadline.
type deadlineRecorder struct {
	header                   http.Header
	total, sinceDeadline, mx int
}

func (d *deadlineRecorder) Header() http.Header { return d.header }
func (d *deadlineRecorder) WriteHeader(int)     {}
func (d *deadlineRecorder) Write(b []byte) (int, error) {
	d.total += len(b)
	d.sinceDeadline += len(b)
	d.mx = max(d.mx, d.sinceDeadline)
	return len(b), nil
}
func (d *deadlineRecorder) SetWriteDeadline(time.Time) error { d.sinceDeadline = 0; return nil }

// TestLongPollAnswerIsPaced: a long poll's full page (1,000 events of about 500 bytes) is written
// under many deadlines, at most pacedChunk bytes under each, so that a slow client that keeps
// taking bytes gets all of it; written at once under one stream write timeout, a client slower
// than about 400 kbit/s had its answer cut, and asked for the same page again, forever.
func TestLongPollAnswerIsPaced(t *testing.T) {
	page := EventPage{Events: make([]Event, 1000)}
	for i := range page.Events {
		page.Events[i] = Event{At: "2025-01-01T12:00:00.001Z", Type: "move_committed", Hash: strings.Repeat("a", 64), PrevHash: strings.Repeat("b", 64),
			Data: json.RawMessage(`{"commitment":"` + strings.Repeat("c", 64) + `","player":"2b9c7e4a-3f61-4d2a-9c0e-8a5b1d7f3e20","round":1}`)}
	}
	body, err := json.Marshal(page)
	if err != nil {
		t.Fatal(err)
	}
	rec := &deadlineRecorder{header: http.Header{}}
	answer := longPollAnswer{body: body, s: &Server{streamWriteTimeout: time.Second}, ctx: context.Background()}
	if err := answer.VisitListEventsResponse(rec); err != nil {
		t.Fatal(err)
	}
	if rec.total < 300_000 || rec.mx > pacedChunk {
		t.Fatalf("an answer of %d bytes wrote %d under one deadline, want at most %d", rec.total, rec.mx, pacedChunk)
	}
}
