// Package api serves the HTTP API of openapi.yaml: generated routing and types (api.gen.go),
// request validation against the embedded spec, handlers that translate HTTP into one store or
// tournament operation and back, authentication, rate limits, idempotency, problem responses,
// metrics and the live event stream. It is the only package that speaks HTTP.
package api

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/commitreveal/rps/console"
	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/store"
)

// Config configures a Server.
type Config struct {
	Store *store.Store
	// Rules are the rulesets served by /v1/rulesets (engine.Builtin() if nil).
	Rules *engine.Registry
	// Logger receives request logs (slog.Default() if nil).
	Logger *slog.Logger
	// Metrics are exported by MetricsHandler (new ones if nil).
	Metrics *Metrics
	// TokenLimit and IPLimit rate-limit authenticated callers by account and anonymous callers by
	// address; AccountLimit limits account creation by address. Zero rates disable a limit.
	TokenLimit, IPLimit, AccountLimit RateLimit
	// MaxStreamsPerClient bounds the open event streams of one account or address (default 8).
	MaxStreamsPerClient int
	// StreamWriteTimeout bounds each write of an event stream or a long poll's answer: a client
	// that does not take its bytes within it is disconnected (DefaultStreamWriteTimeout if zero).
	StreamWriteTimeout time.Duration
	// TrustedProxies are the proxies whose X-Forwarded-For names the client's address (for the
	// per-address limits); from any other peer the header is ignored.
	TrustedProxies []netip.Prefix
	// Witnesses are the transparency log's witnesses, listed by GET /v1/log.
	Witnesses []WitnessConfig
	// RequireAdminKeys refuses every unsigned admin action (an admin with a key must sign
	// whatever this says).
	RequireAdminKeys bool
}

// Server is the HTTP API. Handler serves it; Shutdown ends its event streams.
type Server struct {
	store        *store.Store
	rules        *engine.Registry
	log          *slog.Logger
	metrics      *Metrics
	tokens       tokenCache
	tokenLimits  *limiters
	ipLimits     *limiters
	lookupLimits *limiters
	signupLimits *limiters
	streams      *streamLimits
	// streamWriteTimeout bounds each write of an event stream or a long poll's answer.
	streamWriteTimeout time.Duration
	trustedProxies     []netip.Prefix
	signer             *signer
	// signatures checks players' signatures of their actions.
	signatures *signatures
	// requireAdminKeys refuses every unsigned admin action (see adminAuth).
	requireAdminKeys bool
	witnesses        []WitnessConfig
	// shutdown is closed to end every open event stream.
	shutdown     chan struct{}
	shutdownOnce sync.Once
	handler      http.Handler

	// fanOut shares the bytes sent to the followers of a lobby.
	fanOut fanOut
}

// The generated interface is implemented by handlers; this fails to compile when they drift.
var _ StrictServerInterface = (*handlers)(nil)

// NewServer builds the API with its routes.
func NewServer(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("api: a store is required")
	}
	s := &Server{
		store:              cfg.Store,
		rules:              cfg.Rules,
		log:                cfg.Logger,
		metrics:            cfg.Metrics,
		tokenLimits:        newLimiters(cfg.TokenLimit),
		ipLimits:           newLimiters(cfg.IPLimit),
		lookupLimits:       newLimiters(cfg.IPLimit),
		signupLimits:       newLimiters(cfg.AccountLimit),
		streams:            newStreamLimits(cfg.MaxStreamsPerClient),
		streamWriteTimeout: cfg.StreamWriteTimeout,
		trustedProxies:     cfg.TrustedProxies,
		signer:             &signer{store: cfg.Store},
		signatures:         &signatures{store: cfg.Store},
		requireAdminKeys:   cfg.RequireAdminKeys,
		witnesses:          cfg.Witnesses,
		shutdown:           make(chan struct{}),
	}
	if s.rules == nil {
		s.rules = engine.Builtin()
	}
	if s.streamWriteTimeout <= 0 {
		s.streamWriteTimeout = DefaultStreamWriteTimeout
	}
	// A token rotated or revoked through any replica is refused by this one at once.
	s.store.WatchAccounts(s.tokens.forgetAccount)
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.metrics == nil {
		s.metrics = NewMetrics(nil)
	}
	spec, err := GetSwagger()
	if err != nil {
		return nil, fmt.Errorf("load embedded spec: %w", err)
	}
	// The spec's servers entry is relative; validate paths without matching hosts.
	spec.Servers = nil
	s.handler = s.routes(spec)
	return s, nil
}

// Handler returns the API's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// MetricsHandler serves the Prometheus exposition. It is not part of the API: serve it on a
// listener of its own that only the monitoring can reach (RPSD_METRICS_ADDR), so that nobody can
// read it, or make scraping it expensive, from the public side.
func (s *Server) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(s.metrics.Registry, promhttp.HandlerOpts{})
}

// Shutdown ends every open event stream so that an http.Server's Shutdown does not wait for them.
func (s *Server) Shutdown() {
	s.shutdownOnce.Do(func() { close(s.shutdown) })
}

// routes wires every route: the operations generated from the spec, and the one served by hand
// (the event stream, which the strict server cannot flush). Every request, an unknown route or
// method included, is authenticated and counted against its caller's rate limit, except the
// health probes (see authenticate).
func (s *Server) routes(spec *openapi3.T) http.Handler {
	r := chi.NewRouter()
	r.Use(s.withRequestID, s.observe, s.limitBody, s.authenticate)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.writeProblem(w, r, newProblem(http.StatusNotFound, ProblemCodeNotFound, "no such route"))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		s.methodNotAllowed(w, req, r)
	})

	h := &handlers{s: s}
	strict := NewStrictHandlerWithOptions(h, nil, StrictHTTPServerOptions{
		RequestErrorHandlerFunc: func(w http.ResponseWriter, r *http.Request, err error) {
			if isBodyTooLarge(err) {
				s.writeProblem(w, r, errBodyTooLarge)
				return
			}
			s.writeProblem(w, r, bodyProblem(err))
		},
		ResponseErrorHandlerFunc: s.writeProblem,
	})
	r.Group(func(r chi.Router) {
		r.Use(s.validateRequests(spec))
		HandlerWithOptions(strict, ChiServerOptions{
			BaseRouter: r,
			ErrorHandlerFunc: func(w http.ResponseWriter, r *http.Request, err error) {
				s.writeProblem(w, r, parameterProblem(err))
			},
		})
		r.Get("/v1/lobbies/{lobbyId}/events/stream", s.streamEvents)
	})
	// The transparency log's C2SP resources, a protocol of their own outside the contract.
	for _, path := range logPaths {
		r.Get(path, s.serveLog)
	}
	// The web console, a client of the API like any other (package console).
	web := console.Handler()
	for _, path := range console.Paths {
		r.Method(http.MethodGet, path, web)
	}
	return r
}

// routeMethods are the methods the API's routes use, the candidates of an Allow header.
var routeMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete}

// methodNotAllowed answers 405 with the Allow header RFC 9110 asks for: the methods the path
// has.
func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request, routes chi.Routes) {
	var allowed []string
	for _, m := range routeMethods {
		if routes.Match(chi.NewRouteContext(), m, r.URL.Path) {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) == 0 {
		// chi answers 405 for a method it does not know on any path, even one with no route.
		s.writeProblem(w, r, newProblem(http.StatusNotFound, ProblemCodeNotFound, "no such route"))
		return
	}
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	s.writeProblem(w, r, newProblem(http.StatusMethodNotAllowed, ProblemCodeMethodNotAllowed, "this method is not allowed here"))
}

var errBodyTooLarge = newProblem(http.StatusRequestEntityTooLarge, ProblemCodePayloadTooLarge, fmt.Sprintf("request bodies are limited to %d bytes", MaxBodyBytes))

// validationFailed shapes the request validator's errors as problems naming the offending field.
func (s *Server) validationFailed(w http.ResponseWriter, r *http.Request, err error) {
	if isBodyTooLarge(err) {
		s.writeProblem(w, r, errBodyTooLarge)
		return
	}
	s.writeProblem(w, r, requestProblem(err))
}

// requestProblem finds the first offending field in a validation error.
func requestProblem(err error) *problemError {
	var multi openapi3.MultiError
	if errors.As(err, &multi) && len(multi) > 0 {
		err = multi[0]
	}
	var body *bodyError
	if errors.As(err, &body) {
		return validationProblem(body.field, body.detail)
	}
	var reqErr *openapi3filter.RequestError
	if !errors.As(err, &reqErr) {
		return validationProblem("", firstLine(err.Error()))
	}
	field := "body"
	if reqErr.Parameter != nil {
		field = reqErr.Parameter.Name
	}
	var schemaErr *openapi3.SchemaError
	if errors.As(reqErr.Err, &schemaErr) {
		if path := schemaErr.JSONPointer(); len(path) > 0 {
			if reqErr.Parameter == nil {
				field = strings.Join(path, ".")
			}
		} else if reqErr.Parameter == nil {
			field = missingProperty(schemaErr)
		}
		return validationProblem(field, firstLine(schemaErr.Reason))
	}
	detail := reqErr.Reason
	if detail == "" && reqErr.Err != nil {
		detail = reqErr.Err.Error()
	}
	return validationProblem(field, firstLine(detail))
}

// missingProperty names the property a "required" or "additionalProperties" failure is about,
// which kin-openapi reports in the reason rather than the pointer.
func missingProperty(e *openapi3.SchemaError) string {
	if _, after, ok := strings.Cut(e.Reason, "property \""); ok {
		if name, _, ok := strings.Cut(after, "\""); ok {
			return name
		}
	}
	return "body"
}

// parameterProblem shapes the generated router's parameter binding errors.
func parameterProblem(err error) *problemError {
	var invalid *InvalidParamFormatError
	if errors.As(err, &invalid) {
		return validationProblem(invalid.ParamName, firstLine(invalid.Error()))
	}
	var required *RequiredParamError
	if errors.As(err, &required) {
		return validationProblem(required.ParamName, firstLine(required.Error()))
	}
	var repeated *TooManyValuesForParamError
	if errors.As(err, &repeated) {
		return validationProblem(repeated.ParamName, firstLine(repeated.Error()))
	}
	return validationProblem("", firstLine(err.Error()))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
