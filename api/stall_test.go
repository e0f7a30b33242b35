package api_test

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apitest"
)

// smallSendBuffers gives the server's connections a small kernel send buffer (autotuned, one took
// 2.8 MB of a client that stopped reading), so a few dozen KB of events fill what lies between
// the server and a client that does not read.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tcp, ok := c.(*net.TCPConn); ok {
		_ = tcp.SetWriteBuffer(8 << 10)
	}
	return c, err
}

// dialNotReading connects to the server with a small receive buffer (set before connecting, so
// the window it offers stays small) for a client that will never read.
func dialNotReading(t *testing.T, serverURL string) net.Conn {
	t.Helper()
	u, err := url.Parse(serverURL)
	if err != nil {
		t.Fatal(err)
	}
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var sockErr error
		err := c.Control(func(fd uintptr) {
			sockErr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10)
		})
		return errors.Join(err, sockErr)
	}}
	conn, err := d.DialContext(t.Context(), "tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// TestStalledStreamIsDropped: a client opens an event stream of a lobby with a backlog larger
// than the socket buffers between it and the server, and never reads. The server's write blocks;
// within the stream write timeout the server drops the client (resetting the connection, so
// the kernel frees what it still held for it) and its stream slot is free again; the client can
// then resume with Last-Event-ID.
func TestStalledStreamIsDropped(t *testing.T) {
	t.Parallel()
	const timeout = 500 * time.Millisecond
	e := apitest.Start(t,
		apitest.WithConfig(func(c *api.Config) { c.MaxStreamsPerClient, c.StreamWriteTimeout = 1, timeout }),
		apitest.WithListener(func(l net.Listener) net.Listener { return api.ResetStalledConns(smallSendBuffers{l}) }))
	p := e.NewPlayer("p", 0)
	lobby := e.CreateLobby(map[string]any{"betSize": 1, "playersCountLimit": 2}).Id.String()
	// A backlog of about 100 KB: each change of the next game's config is an event of ~600 bytes.
	for i := range 150 {
		e.Do("PUT", "/v1/lobbies/"+lobby+"/next-config", e.Admin, map[string]any{"betSize": i + 1, "playersCountLimit": 2}).
			Want(t, http.StatusOK)
	}

	conn := dialNotReading(t, e.URL)
	opened := time.Now()
	if _, err := fmt.Fprintf(conn, "GET /v1/lobbies/%s/events/stream HTTP/1.1\r\nHost: rpsd\r\n"+
		"Authorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n", lobby, p.Token); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the stream is open", func() bool { return api.OpenWaits(e.Server, p.ID) == 1 })
	for api.OpenWaits(e.Server, p.ID) != 0 {
		if time.Since(opened) > timeout+3*time.Second {
			t.Fatalf("the server still holds the stream of a client that has not read for %v (write timeout %v)",
				time.Since(opened).Round(time.Millisecond), timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
	dropped := time.Since(opened)
	t.Logf("a client that stopped reading was dropped %v after it opened the stream (write timeout %v)", dropped.Round(time.Millisecond), timeout)
	if dropped < timeout {
		t.Errorf("dropped after %v, before the write timeout of %v", dropped, timeout)
	}

	// The connection was reset: what was still on its way to the client is gone.
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(conn)
	var err error
	for err == nil {
		_, err = r.Discard(1 << 10)
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("reading the dropped connection ends with %v, want a reset", err)
	}

	// The slot is free, and the client resumes where it wants.
	s := e.OpenStream(lobby, p.Token, "", "Last-Event-ID", "100")
	if s.Status != http.StatusOK {
		t.Fatalf("resume: %d %s", s.Status, s.Raw())
	}
	if first := s.Next(t, 5*time.Second); first.ID != strconv.Itoa(101) {
		t.Errorf("resumed at event %s, want 101", first.ID)
	}
}

// TestStalledLongPollIsDropped: a long poll's answer is written under the same timeout: a client
// that asked for a large page and does not read it is disconnected.
func TestStalledLongPollIsDropped(t *testing.T) {
	t.Parallel()
	const timeout = 500 * time.Millisecond
	e := apitest.Start(t,
		apitest.WithConfig(func(c *api.Config) { c.StreamWriteTimeout = timeout }),
		apitest.WithListener(func(l net.Listener) net.Listener { return api.ResetStalledConns(smallSendBuffers{l}) }))
	lobby := e.CreateLobby(map[string]any{"betSize": 1, "playersCountLimit": 2}).Id.String()
	for i := range 150 {
		e.Do("PUT", "/v1/lobbies/"+lobby+"/next-config", e.Admin, map[string]any{"betSize": i + 1, "playersCountLimit": 2}).
			Want(t, http.StatusOK)
	}
	conn := dialNotReading(t, e.URL)
	asked := time.Now()
	// A page of ~100 KB of JSON, answered at once.
	if _, err := fmt.Fprintf(conn, "GET /v1/lobbies/%s/events?after=0&limit=1000&wait=30 HTTP/1.1\r\nHost: rpsd\r\n\r\n", lobby); err != nil {
		t.Fatal(err)
	}
	time.Sleep(timeout + time.Second) // the client does not read meanwhile
	_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	r := bufio.NewReader(conn)
	var err error
	for err == nil {
		_, err = r.Discard(1 << 10)
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("a long poll whose client did not read its answer for %v: reading ends with %v, want a reset (write timeout %v)",
			time.Since(asked).Round(time.Millisecond), err, timeout)
	}
}
