package api

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// HTTPLimits bound what one client can hold of the server's connections.
type HTTPLimits struct {
	// ReadHeaderTimeout and ReadTimeout bound reading a request's headers and the whole request.
	ReadHeaderTimeout, ReadTimeout time.Duration
	// WriteTimeout bounds every answer, from the end of its request's headers: a client that
	// pipelines requests and never reads their answers is disconnected once the socket's buffers
	// are full and a write waits past it. Event streams and long polls, which wait longer than
	// it, give each of their writes a deadline of its own instead (Config.StreamWriteTimeout).
	WriteTimeout time.Duration
	// IdleTimeout closes a kept-alive connection that sends no next request.
	IdleTimeout time.Duration
	// MaxHeaderBytes caps a request's headers (431 past it).
	MaxHeaderBytes int
	// MaxConnsPerAddress caps the open connections of one remote address (0: no cap). Trusted
	// proxies are exempt: their clients are limited by the proxy's X-Forwarded-For instead.
	MaxConnsPerAddress int
	TrustedProxies     []netip.Prefix
}

// DefaultHTTPLimits are rpsd's limits: a request body is at most MaxBodyBytes, so 30 seconds to
// read a whole request is generous; the largest answer (the 200 KB spec) takes a minute only on a
// link of 30 kbit/s.
func DefaultHTTPLimits() HTTPLimits {
	return HTTPLimits{
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: time.Minute,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 16 << 10, MaxConnsPerAddress: 64,
	}
}

// NewHTTPServer returns an http.Server for h with limits applied.
func NewHTTPServer(h http.Handler, limits HTTPLimits) *http.Server {
	return &http.Server{
		Handler: h, ReadHeaderTimeout: limits.ReadHeaderTimeout, ReadTimeout: limits.ReadTimeout,
		WriteTimeout: limits.WriteTimeout, IdleTimeout: limits.IdleTimeout, MaxHeaderBytes: limits.MaxHeaderBytes,
	}
}

// LimitConnsPerAddress wraps l so that one remote address holds at most limits.MaxConnsPerAddress
// connections: a connection past the cap is closed as soon as it is accepted.
func LimitConnsPerAddress(l net.Listener, limits HTTPLimits) net.Listener {
	if limits.MaxConnsPerAddress <= 0 {
		return l
	}
	return &capListener{Listener: l, limits: limits, open: map[netip.Prefix]int{}}
}

type capListener struct {
	net.Listener
	limits HTTPLimits
	mu     sync.Mutex
	open   map[netip.Prefix]int
}

func (l *capListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := remoteAddr(conn.RemoteAddr().String())
		if !addr.IsValid() || trusts(l.limits.TrustedProxies, addr) {
			return conn, nil
		}
		client := clientBlock(addr)
		l.mu.Lock()
		full := l.open[client] >= l.limits.MaxConnsPerAddress
		if !full {
			l.open[client]++
		}
		l.mu.Unlock()
		if full {
			_ = conn.Close()
			continue
		}
		return &cappedConn{Conn: conn, release: func() { l.release(client) }}, nil
	}
}

func (l *capListener) release(client netip.Prefix) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[client]--; l.open[client] <= 0 {
		delete(l.open, client)
	}
}

// clientBlock is what the per-address limits count as one client: an IPv4 address, or the /64
// of an IPv6 one. One subscriber usually holds a whole IPv6 /64 (it is the smallest block a
// network hands out, RFC 6177), so counting each address of it apart would give one client 2^64
// buckets.
func clientBlock(a netip.Addr) netip.Prefix {
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}

// cappedConn gives its place back once, when closed.
type cappedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *cappedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

// remoteAddr parses a host:port (or a bare host) into an address; invalid when it is neither.
func remoteAddr(hostport string) netip.Addr {
	if ap, err := netip.ParseAddrPort(hostport); err == nil {
		return ap.Addr().Unmap()
	}
	a, _ := netip.ParseAddr(strings.Trim(hostport, "[]"))
	return a.Unmap()
}

func trusts(proxies []netip.Prefix, a netip.Addr) bool {
	for _, p := range proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// clientAddr names the client a request comes from for the per-address limits: the block (see
// clientBlock) of the connection's address, or, when the connection comes from a trusted proxy,
// of the last address of X-Forwarded-For that is not itself a trusted proxy (the ones before it
// could be forged by the client).
func clientAddr(r *http.Request, trusted []netip.Prefix) string {
	addr := remoteAddr(r.RemoteAddr)
	if !addr.IsValid() {
		return r.RemoteAddr
	}
	if trusts(trusted, addr) {
		hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
		for i := len(hops) - 1; i >= 0; i-- {
			hop := remoteAddr(strings.TrimSpace(hops[i]))
			if !hop.IsValid() {
				break
			}
			addr = hop
			if !trusts(trusted, hop) {
				break
			}
		}
	}
	return clientBlock(addr).String()
}

// ResetStalledConns wraps l so that a connection closed after a write timed out (a client that
// stopped taking its bytes, see Config.StreamWriteTimeout) is reset rather than closed in order:
// the kernel then drops at once what it still held for that client (megabytes of send buffer),
// instead of trying to deliver it to a client that does not read.
func ResetStalledConns(l net.Listener) net.Listener { return stallListener{l} }

type stallListener struct{ net.Listener }

func (l stallListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &stallConn{Conn: c}, nil
}

// stallConn remembers a write that timed out, and then closes with a reset.
type stallConn struct {
	net.Conn
	stalled atomic.Bool
}

func (c *stallConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		c.stalled.Store(true)
	}
	return n, err
}

func (c *stallConn) Close() error {
	if tcp, ok := c.Conn.(*net.TCPConn); ok && c.stalled.Load() {
		_ = tcp.SetLinger(0)
	}
	return c.Conn.Close()
}
