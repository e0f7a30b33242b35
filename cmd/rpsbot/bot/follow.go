package bot

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/commitreveal/rps/internal/apiclient"
)

// Follow is how a runner's bots learn what happens in their lobby.
type Follow string

const (
	// FollowLobby: one long poll per lobby, shared by its bots (a big lobby's many players
	// cannot each hold a request open from one machine).
	FollowLobby Follow = "lobby"
	// FollowPoll: each bot long-polls the lobby's events itself, as a generated client does (it
	// reads a response to its end, so it cannot hold a stream).
	FollowPoll Follow = "poll"
	// FollowStream: each bot holds a server-sent event stream of the lobby, as the Android app
	// does, reconnecting with Last-Event-ID when it ends.
	FollowStream Follow = "stream"
)

// ParseFollow checks a Follow named on a command line.
func ParseFollow(s string) (Follow, error) {
	switch f := Follow(s); f {
	case FollowLobby, FollowPoll, FollowStream:
		return f, nil
	}
	return "", fmt.Errorf("unknown way to follow a lobby %q: lobby, poll or stream", s)
}

// delivery is what a follower read: events in order, and the server's clock (ms) when its
// request was waiting from (a long poll sent, a stream opened) and when the events arrived.
type delivery struct {
	events     []apiclient.Event
	sent, seen int64
}

// follow starts the followers of the lobby from the runner's cursor, as r.o.Follow says, and
// returns the function that stops them and waits until they have. Every follower reads the
// whole log: Run applies each event once, from whichever follower brings it first (the bots of
// a lobby share one view of it), so the server serves every follower as it would serve as many
// players' phones.
func (r *Runner) follow(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	r.mu.Lock()
	after := r.next
	r.mu.Unlock()
	start := func(f func() error) {
		wg.Go(func() {
			if err := f(); err != nil && ctx.Err() == nil {
				r.failed <- err // buffered for every follower
			}
		})
	}
	switch r.o.Follow {
	case FollowStream:
		for _, s := range r.o.Seats {
			start(func() error { return r.stream(ctx, r.clientOf(s), s.Token, after) })
		}
	case FollowPoll:
		for _, s := range r.o.Seats {
			start(func() error { return r.longPoll(ctx, r.clientOf(s), func(int64) string { return s.Token }, after) })
		}
	default:
		start(func() error { return r.longPoll(ctx, r.o.Client, r.pollToken, after) })
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// serverNow is the server's clock in ms, by the offset syncClock measured.
func (r *Runner) serverNow() int64 { return time.Now().UnixMilli() + r.offsetMs }

// deliver hands what a follower read to Run; false when the run is over.
func (r *Runner) deliver(ctx context.Context, d delivery) bool {
	select {
	case r.feed <- d:
		return true
	case <-ctx.Done():
		return false
	}
}

// longPoll follows the lobby by long polls, each with the token token(after) gives.
func (r *Runner) longPoll(ctx context.Context, c *Client, token func(after int64) string, after int64) error {
	for {
		sent := r.serverNow()
		page, err := c.Events(ctx, token(after), r.o.Lobby, after, r.o.Wait, 1000)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("lobby %s: %w", r.o.Lobby, err)
		}
		if len(page.Events) > 0 && !r.deliver(ctx, delivery{events: page.Events, sent: sent, seen: r.serverNow()}) {
			return nil
		}
		after = max(after, page.Next)
	}
}

// stream follows the lobby by an event stream.
func (r *Runner) stream(ctx context.Context, c *Client, token string, after int64) error {
	return c.FollowStream(ctx, token, r.o.Lobby, after, func(d StreamDelivery) {
		r.deliver(ctx, delivery{events: []apiclient.Event{d.Event}, sent: d.Opened.UnixMilli() + r.offsetMs, seen: r.serverNow()})
	})
}

// take applies the events of a delivery that the runner has not seen yet. Called with mu held.
func (r *Runner) take(d delivery) {
	for _, e := range d.events {
		if e.Seq <= r.next {
			continue // another follower brought it first
		}
		r.apply(e, true, d.sent, d.seen)
		r.next = e.Seq
	}
}
