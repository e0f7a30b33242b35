package api_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apitest"
)

// BenchmarkFanOut measures what one event costs the process when a lobby's followers are woken by
// it: one lobby, streams followers reading an event stream and polls followers long-polling, as
// the mixed load's players do; each action (an admin's next-config change, one event) waits until
// every follower has received its event, so each event is fanned out alone. It reports the
// process's CPU (user + system, rusage) per action, which holds rpsd and the in-process clients
// (PostgreSQL runs apart): the fan-out's share is the difference with the run without followers.
//
//	go test -run '^$' -bench FanOut -benchtime 400x ./api/
func BenchmarkFanOut(b *testing.B) {
	for _, c := range []struct{ streams, polls int }{{0, 0}, {10, 0}, {0, 10}, {10, 10}} {
		b.Run(fmt.Sprintf("streams=%d,polls=%d", c.streams, c.polls), func(b *testing.B) {
			benchmarkFanOut(b, c.streams, c.polls)
		})
	}
}

func benchmarkFanOut(b *testing.B, streams, polls int) {
	e := apitest.Start(b, apitest.WithConfig(func(c *api.Config) { c.MaxStreamsPerClient = 4 * (streams + polls) }))
	lobby := e.CreateLobby(map[string]any{"betSize": 0, "playersCountLimit": 10}).Id.String()
	head := e.Events(lobby, 0).Next
	follower := e.NewPlayer("follower", 0)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	seen := make([]atomic.Int64, streams+polls)
	progress := make(chan struct{}, 1)
	saw := func(i int, seq int64) {
		seen[i].Store(seq)
		select {
		case progress <- struct{}{}:
		default:
		}
	}
	for i := range streams {
		req, err := e.NewRequest(ctx, http.MethodGet, fmt.Sprintf("/v1/lobbies/%s/events/stream?after=%d", lobby, head), follower.Token, nil)
		if err != nil {
			b.Fatal(err)
		}
		res, err := e.Client.Do(req)
		if err != nil || res.StatusCode != http.StatusOK {
			b.Fatalf("stream: %v %v", res, err)
		}
		wg.Go(func() { followStream(res.Body, func(seq int64) { saw(i, seq) }) })
	}
	for i := range polls {
		wg.Go(func() { longPoll(ctx, e, follower.Token, lobby, head, func(seq int64) { saw(streams+i, seq) }) })
	}

	act := func(n int) {
		e.Do(http.MethodPut, "/v1/lobbies/"+lobby+"/next-config", e.Admin, map[string]any{"betSize": n % 1000, "playersCountLimit": 10}).Want(b, http.StatusOK)
		head++
		for i := 0; i < len(seen); {
			if seen[i].Load() >= head {
				i++
				continue
			}
			<-progress
		}
	}
	// Warm up: every follower is connected and has had an event.
	act(0)

	b.ReportAllocs()
	before := processCPU()
	n := 0
	for b.Loop() {
		n++
		act(n)
	}
	b.ReportMetric(float64(processCPU()-before)/1e3/float64(n), "cpu-µs/action")
}

// followStream reads an event stream, telling each event's id.
func followStream(body io.ReadCloser, saw func(int64)) {
	defer body.Close()
	r := bufio.NewReader(body)
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return
		}
		if id, ok := bytes.CutPrefix(line, []byte("id: ")); ok {
			if seq, err := strconv.ParseInt(string(bytes.TrimSpace(id)), 10, 64); err == nil {
				saw(seq)
			}
		}
	}
}

// longPoll long-polls a lobby's events from after, telling each page's next.
func longPoll(ctx context.Context, e *apitest.Env, token, lobby string, after int64, saw func(int64)) {
	for ctx.Err() == nil {
		r, err := e.Request(ctx, http.MethodGet, fmt.Sprintf("/v1/lobbies/%s/events?after=%d&wait=20", lobby, after), token, nil)
		if err != nil || r.Status != http.StatusOK {
			return
		}
		i := bytes.LastIndex(r.Body, []byte(`"next":`))
		if i < 0 {
			return
		}
		next, err := strconv.ParseInt(string(bytes.TrimRight(r.Body[i+len(`"next":`):], "}\n")), 10, 64)
		if err != nil {
			return
		}
		after = next
		saw(next)
	}
}

// processCPU is the CPU time the process has used, in nanoseconds.
func processCPU() int64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return u.Utime.Nano() + u.Stime.Nano()
}
