package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/go-chi/chi/v5"
)

// MaxBodyBytes caps every request body.
const MaxBodyBytes = 64 << 10

type requestInfoKey struct{}

// requestInfo is what handlers below the generated layer need of the request itself: its id and
// path (named by problem responses) and the caller's address block, an IPv4 address or an IPv6
// /64 (clientAddr), which the per-address limits count as one client.
type requestInfo struct {
	id   string
	path string
	ip   string
}

func requestInfoOf(ctx context.Context) requestInfo {
	info, _ := ctx.Value(requestInfoKey{}).(requestInfo)
	return info
}

func requestID(ctx context.Context) string { return requestInfoOf(ctx).id }

// withRequestID gives every request an id, in its context, its log lines and the X-Request-Id
// header.
func (s *Server) withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b [12]byte
		_, _ = rand.Read(b[:])
		id := hex.EncodeToString(b[:])
		w.Header().Set("X-Request-Id", id)
		ctx := context.WithValue(r.Context(), requestInfoKey{}, requestInfo{id: id, path: r.URL.Path, ip: clientAddr(r, s.trustedProxies)})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// statusRecorder remembers the status a handler wrote, for logs and metrics. It passes Flush
// through so that the event stream still flushes.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// answerBegun reports whether the answer's status has been sent (as far as observe saw).
func answerBegun(w http.ResponseWriter) bool {
	for {
		switch t := w.(type) {
		case *statusRecorder:
			return t.status != 0
		case interface{ Unwrap() http.ResponseWriter }:
			w = t.Unwrap()
		default:
			return false
		}
	}
}

// observe logs every request and records it in the metrics, by route pattern (never by raw path,
// which would grow the metric without bound), and turns a panic into a logged 500.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				// The value may hold anything the handler had: a token, a reveal, a query. The log
				// gets its type and where it happened (the stack shows no string's contents).
				s.log.ErrorContext(r.Context(), "panic", "type", fmt.Sprintf("%T", v),
					"requestId", requestID(r.Context()), "stack", string(debug.Stack()))
				if rec.status == 0 {
					s.writeProblem(rec, r, errPanicked)
				}
			}
			route := "unmatched"
			if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
				route = rc.RoutePattern()
			}
			status := rec.status
			if status == 0 {
				status = http.StatusOK
			}
			elapsed := time.Since(start)
			s.metrics.observeRequest(r.Method, route, status, elapsed)
			level := slog.LevelInfo
			if status == statusClientClosedRequest {
				level = slog.LevelDebug
			}
			s.log.LogAttrs(r.Context(), level, "request",
				slog.String("requestId", requestID(r.Context())), slog.String("method", logged(r.Method)),
				slog.String("route", route), slog.Int("status", status), slog.Duration("elapsed", elapsed))
		}()
		next.ServeHTTP(rec, r)
	})
}

// errPanicked answers a request whose handler panicked; the panic is logged apart, without its
// value.
var errPanicked = errors.New("the handler panicked")

// limitBody refuses bodies over MaxBodyBytes with 413 before any handler reads them.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > MaxBodyBytes {
			s.writeProblem(w, r, errBodyTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		next.ServeHTTP(w, r)
	})
}

// isBodyTooLarge reports whether err comes from reading a body past MaxBodyBytes.
func isBodyTooLarge(err error) bool {
	var tooLarge *http.MaxBytesError
	return errors.As(err, &tooLarge)
}
