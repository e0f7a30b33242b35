package bot

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/commitreveal/rps/internal/apiclient"
)

// StreamDelivery is one event read from a lobby's event stream, and when its connection opened:
// the stream was waiting for events from then on.
type StreamDelivery struct {
	Event  apiclient.Event
	Opened time.Time
}

// streamIdle is how long a stream may stay silent before it counts as stalled and is reopened:
// the server sends a heartbeat about every 15 seconds while it has nothing else to send.
const streamIdle = 45 * time.Second

// FollowStream follows a lobby's log over server-sent events (GET /v1/lobbies/{id}/events/stream)
// as the Android app does, calling on for each event after `after`, in order, once each. A
// stream that ends (the server restarting, a stalled connection cut) is not an error: it
// reconnects with Last-Event-ID set to the last event delivered, so nothing is missed or
// repeated. It returns when ctx ends (nil) or after c's attempts of connections in a row that
// failed without delivering anything. The token, when given, makes the stream count against its
// account's budget of streams rather than the address's.
func (c *Client) FollowStream(ctx context.Context, token, lobby string, after int64, on func(StreamDelivery)) error {
	id, err := uuidOf(lobby)
	if err != nil {
		return err
	}
	backoff := 50 * time.Millisecond
	for failures := 0; ; {
		delivered, err := c.streamOnce(ctx, token, id, &after, on)
		if ctx.Err() != nil {
			return nil
		}
		switch {
		case delivered || err == nil:
			failures, backoff = 0, 50*time.Millisecond
		default:
			failures++
			if failures >= c.attempts {
				return fmt.Errorf("%s: lobby %s: %w", OpStream, lobby, err)
			}
		}
		// A stream that ended without news, or failed, is reopened after a pause, so that a
		// server refusing streams is not hammered.
		if !delivered {
			if err := sleep(ctx, backoff); err != nil {
				return nil
			}
			backoff = min(2*backoff, 5*time.Second)
		}
	}
}

// streamOnce opens one stream after *after and reads it to its end, advancing *after with each
// event delivered. The connection's opening is counted in Stats as OpStream.
func (c *Client) streamOnce(ctx context.Context, token string, lobby apiclient.LobbyId, after *int64, on func(StreamDelivery)) (delivered bool, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	params := &apiclient.StreamEventsParams{}
	if *after > 0 {
		params.LastEventID = after
	}
	start := time.Now()
	resp, err := c.api.StreamEvents(ctx, lobby, params, apiclient.Bearer(token),
		func(_ context.Context, req *http.Request) error {
			req.Header.Set("Accept", "text/event-stream")
			return nil
		})
	if err != nil {
		if ctx.Err() == nil {
			c.stats.record(OpStream, time.Since(start), 0, codeNetwork)
		}
		return false, err
	}
	defer resp.Body.Close()
	opened := time.Now()
	if resp.StatusCode != http.StatusOK {
		r, perr := apiclient.ParseStreamEventsResponse(resp)
		if perr != nil {
			c.stats.record(OpStream, opened.Sub(start), resp.StatusCode, fmt.Sprintf("http_%d", resp.StatusCode))
			return false, fmt.Errorf("%s: HTTP %d: %w", OpStream, resp.StatusCode, perr)
		}
		problem := apiclient.ProblemOf(r)
		c.stats.record(OpStream, opened.Sub(start), problem.Status, problem.Code)
		return false, problem
	}
	c.stats.record(OpStream, opened.Sub(start), resp.StatusCode, "")

	// A silent connection (no heartbeat either) is cut, and the loop above reopens it.
	stalled := errors.New("event stream silent for " + streamIdle.String())
	watchdog := time.AfterFunc(streamIdle, func() { cancel(stalled) })
	defer watchdog.Stop()
	messages := newSSEReader(resp.Body)
	for {
		m, err := messages.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return delivered, nil // the server ended the stream
			}
			if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
				err = cause
			}
			return delivered, fmt.Errorf("%s: %w", OpStream, err)
		}
		watchdog.Reset(streamIdle)
		if m.event == "" || m.event == "head" {
			continue // a heartbeat, or the signed head that follows each batch of events
		}
		var e apiclient.Event
		if err := json.Unmarshal([]byte(m.data), &e); err != nil {
			return delivered, fmt.Errorf("%s: event %q: %w", OpStream, m.id, err)
		}
		if e.Seq <= *after {
			continue
		}
		on(StreamDelivery{Event: e, Opened: opened})
		*after, delivered = e.Seq, true
	}
}

// sseMessage is one message of an event stream: the fields read up to the blank line that ends
// it. Comments (lines starting with ':') are no fields, so a heartbeat is an empty message.
type sseMessage struct {
	id, event, data string
}

// sseReader reads the messages of a text/event-stream body as the WHATWG HTML standard's
// "event stream interpretation" does for the fields this server sends: `id`, `event` and `data`
// (several data lines join with "\n"), one optional space after the colon, lines ended by LF or
// CR LF; other fields (`retry`) are skipped.
type sseReader struct {
	r *bufio.Reader
}

func newSSEReader(r io.Reader) *sseReader { return &sseReader{r: bufio.NewReaderSize(r, 64<<10)} }

// next returns the next message, or io.EOF when the body ended (a message cut short by the end
// is dropped, as the standard says).
func (s *sseReader) next() (sseMessage, error) {
	var m sseMessage
	var data []string
	seen := false
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				return sseMessage{}, io.EOF
			}
			return sseMessage{}, err
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if line == "" {
			if !seen {
				continue
			}
			m.data = strings.Join(data, "\n")
			return m, nil
		}
		if strings.HasPrefix(line, ":") {
			// A comment: a heartbeat is a message with no fields, which resets the stall watch.
			seen = true
			continue
		}
		seen = true
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			m.id = value
		case "event":
			m.event = value
		case "data":
			data = append(data, value)
		}
	}
}
