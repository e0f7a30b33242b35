package api_test

import (
	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apitest"

	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"
)

// serveLimited serves the API through NewHTTPServer and a listener capped per address, as rpsd
// does, and returns its address.
func serveLimited(t *testing.T, e *apitest.Env, limits api.HTTPLimits) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := api.NewHTTPServer(e.Server.Handler(), limits)
	go func() { _ = srv.Serve(api.LimitConnsPerAddress(l, limits)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().String()
}

// closedWithin reports whether the server closes conn within d.
func closedWithin(conn net.Conn, d time.Duration) bool {
	_ = conn.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, conn)
	return err == nil // EOF: the server closed it; a timeout is an error
}

// TestSlowBodyIsCutOff: a client that sends its headers and then trickles its body is cut off
// by the read timeout instead of holding the connection forever.
func TestSlowBodyIsCutOff(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	limits := api.DefaultHTTPLimits()
	limits.ReadTimeout = 300 * time.Millisecond
	addr := serveLimited(t, e, limits)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	_, _ = io.WriteString(conn, "POST /v1/accounts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	if !closedWithin(conn, 5*time.Second) {
		t.Fatal("a connection with a stalled body is still open")
	}
}

// TestHeaderSizeLimited: headers past MaxHeaderBytes are refused with 431.
func TestHeaderSizeLimited(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	addr := serveLimited(t, e, api.DefaultHTTPLimits())
	req, _ := http.NewRequest("GET", "http://"+addr+"/healthz", nil)
	req.Header.Set("X-Big", strings.Repeat("b", 2*api.DefaultHTTPLimits().MaxHeaderBytes))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("status %d, want 431", res.StatusCode)
	}
}

// TestConnectionsPerAddressCapped: one address holds at most MaxConnsPerAddress connections;
// the next is closed at once, and a closed one frees its place.
func TestConnectionsPerAddressCapped(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	limits := api.DefaultHTTPLimits()
	limits.MaxConnsPerAddress = 3
	addr := serveLimited(t, e, limits)
	var open []net.Conn
	for range limits.MaxConnsPerAddress {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Close() }()
		open = append(open, c)
	}
	// Each of these is served: the server holds them open.
	for _, c := range open {
		_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("a connection within the cap: %v", err)
		}
		res.Body.Close()
	}
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = extra.Close() }()
	if !closedWithin(extra, 5*time.Second) {
		t.Fatal("a connection past the cap is kept open")
	}
	_ = open[0].Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			res.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a closed connection does not free its place: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTrustedProxies: behind a trusted proxy each client has its own address bucket (from
// X-Forwarded-For); from anyone else the header is ignored.
func TestTrustedProxies(t *testing.T) {
	t.Parallel()
	for _, trusted := range []bool{true, false} {
		e := apitest.Start(t, apitest.WithConfig(func(c *api.Config) {
			c.IPLimit = api.RateLimit{Rate: 0.001, Burst: 2}
			if trusted {
				c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
			}
		}))
		for _, client := range []string{"203.0.113.1", "203.0.113.2"} {
			for range 2 {
				r := e.Do("GET", "/v1/rulesets", "", nil, "X-Forwarded-For", "198.51.100.9, "+client)
				if !trusted && client == "203.0.113.2" {
					checkLimited(t, r)
				} else {
					r.Want(t, http.StatusOK)
				}
			}
		}
		if trusted {
			checkLimited(t, e.Do("GET", "/v1/rulesets", "", nil, "X-Forwarded-For", "203.0.113.1"))
		}
	}
}

// TestIPv6ClientsKeyedBySlash64: one client usually holds a whole IPv6 /64, so the per-address
// limits count an IPv6 client by its /64 (other addresses of the block share its bucket; another
// /64 has its own); an IPv4 client stays one address, and an IPv4-mapped IPv6 address is that
// IPv4 address.
func TestIPv6ClientsKeyedBySlash64(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t, apitest.WithConfig(func(c *api.Config) {
		c.IPLimit = api.RateLimit{Rate: 0.001, Burst: 2}
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	}))
	from := func(client string) apitest.Response {
		return e.Do("GET", "/v1/rulesets", "", nil, "X-Forwarded-For", client)
	}
	from("2001:db8:1:2::1").Want(t, http.StatusOK)
	from("2001:db8:1:2:ffff:ffff:ffff:fffe").Want(t, http.StatusOK)
	checkLimited(t, from("2001:db8:1:2::99"))
	from("2001:db8:1:3::1").Want(t, http.StatusOK) // the next /64
	from("203.0.113.1").Want(t, http.StatusOK)
	from("::ffff:203.0.113.1").Want(t, http.StatusOK)
	checkLimited(t, from("203.0.113.1"))
	from("203.0.113.2").Want(t, http.StatusOK) // the next IPv4 address
}

// TestUnreadAnswersAreCutOff: a client that pipelines GETs and never reads their answers is
// disconnected once a write waits past the write timeout (issue 29: 90 such GETs held a handler
// and megabytes of socket buffer for as long as the client liked).
func TestUnreadAnswersAreCutOff(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	limits := api.DefaultHTTPLimits()
	limits.WriteTimeout = 300 * time.Millisecond
	addr := serveLimited(t, e, limits)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	// Keep asking for the 200 KB spec without reading: the server's writes fill the socket's
	// buffers and then wait. Once the server gives up and closes the connection, a write of ours
	// fails (the peer resets it).
	start := time.Now()
	for time.Since(start) < 10*time.Second {
		_ = conn.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
		_, err := io.WriteString(conn, "GET /openapi.yaml HTTP/1.1\r\nHost: x\r\n\r\n")
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Logf("the connection was closed after %v: %v", time.Since(start).Round(time.Millisecond), err)
			return
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			time.Sleep(50 * time.Millisecond) // our own buffers are full too: the server is stuck
		}
	}
	t.Fatal("a connection whose answers are never read is still open after 10 s")
}

// TestWaitsOutliveTheWriteTimeout: an event stream and a long poll, which wait longer than the
// server-wide write timeout, still deliver: each of their writes has a deadline of its own.
func TestWaitsOutliveTheWriteTimeout(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	limits := api.DefaultHTTPLimits()
	limits.WriteTimeout = 200 * time.Millisecond
	limited := e.For(t)
	limited.URL = "http://" + serveLimited(t, e, limits)
	limited.Client = &http.Client{}
	l := e.CreateLobby(map[string]any{"betSize": 1, "playersCountLimit": 5})
	lobby := l.Id.String()
	var page api.EventPage
	e.Do("GET", "/v1/lobbies/"+lobby+"/events", "", nil).Want(t, http.StatusOK).Decode(t, &page)
	stream := limited.OpenStream(lobby, "", "")
	if stream.Status != http.StatusOK {
		t.Fatalf("stream: %d %s", stream.Status, stream.Raw())
	}
	stream.Until(t, page.Next, 5*time.Second)
	time.Sleep(2 * limits.WriteTimeout) // past the deadline the server set when it read the request
	e.Register(lobby, e.NewPlayer("p", 10)).Want(t, http.StatusCreated)
	stream.Until(t, page.Next+1, 5*time.Second)

	// A long poll that waits a second, five times the write timeout, for nothing.
	limited.Do("GET", fmt.Sprintf("/v1/lobbies/%s/events?wait=1&after=%d", lobby, page.Next+1), "", nil).Want(t, http.StatusOK)
}
