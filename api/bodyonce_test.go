package api

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/go-chi/chi/v5"
	"github.com/oapi-codegen/runtime"

	"github.com/commitreveal/rps/tournament"
)

// TestBodyParsedOnce: the strict server binds the value the validator decoded (the body is parsed
// once), into the same typed body as decoding the bytes again did before, so that an idempotency
// key's request hash is byte for byte the one a key stored by an older rpsd holds.
func TestBodyParsedOnce(t *testing.T) {
	spec, validate := validator(t)
	lobby, account := "/v1/lobbies/7d2c1b0a-9f8e-4d6c-9b4a-3f2e1d0c9b8a", "/v1/admin/accounts/7d2c1b0a-9f8e-4d6c-9b4a-3f2e1d0c9b8a"
	type body struct {
		method, path, json string
		typed              func() any
	}
	var bodies []body
	add := func(method, path string, typed func() any, jsons ...string) {
		for _, j := range jsons {
			bodies = append(bodies, body{method, path, j, typed})
		}
	}
	add("POST", lobby+"/reveals", func() any { return &RevealRequest{} },
		`{"reveal":"0pass12"}`,
		` { "reveal" : "0p\u00e9\ud83c\udfb2\"\\\/\b\f\n\r\t" } `,
		`{"reveal":"4 中文 🎲 <>& `+"\u2028\u2029"+`"}`,
		`{"reveal":"0`+strings.Repeat("x", 1023)+`"}`)
	add("POST", lobby+"/commitments", func() any { return &CommitRequest{} },
		`{"commitment":"cb86442693864466112de9876585a7f068c7c0acfc4aae60b312a4ef297f44ae"}`)
	configs := []string{
		`{"betSize":100,"playersCountLimit":4}`,
		`{"playersCountLimit":2,"betSize":0,"ruleset":null,"moveTimeoutMs":null,"startWhenFull":false}`,
		`{"betSize":4503599627370495,"playersCountLimit":2,"entryTimeoutMs":5000,"moveTimeoutMs":600000,"revealTimeoutMs":604800000,` +
			`"ruleset":"rps","resolution":"weighted","startWhenFull":true,"maxExtensions":0,"maxRounds":7}`,
		`{"betSize":1E2,"playersCountLimit":4}`,
		`{"betSize":100.0,"playersCountLimit":4}`,
		`{"betSize":-0,"playersCountLimit":4}`,
	}
	for _, c := range configs {
		add("POST", "/v1/lobbies", func() any { return &CreateLobbyRequest{} }, `{"name":"Lobby \"one\"","config":`+c+`}`)
		add("PUT", lobby+"/next-config", func() any { return &GameConfigInput{} }, c)
	}
	add("POST", lobby+"/stop", func() any { return &StopGameRequest{} }, `{"reason":"maintenance <soon> & \"later\" \u00e9"}`)
	for _, path := range []string{account + "/credits", account + "/debits"} {
		add("POST", path, func() any { return &MoneyTransferRequest{} },
			`{"amount":100}`, `{"memo":"refund é","amount":1}`)
	}
	add("POST", account+"/disable", func() any { return &DisableAccountRequest{} }, `{"reason":"spam"}`)
	add("POST", "/v1/matchmaking", func() any { return &MatchmakingRequest{} }, `{"betSize":10}`, `{"betSize":10,"ruleset":"rpsls"}`)

	admin := tournament.Account{ID: "00000000-0000-0000-0000-000000000001", Role: tournament.RoleAdmin}
	routes := newSpecRoutes(spec)
	for _, b := range bodies {
		// Today: the bytes are decoded again into the typed body.
		before, beforeErr := boundBefore(t, routes, b.method, b.path, b.json, b.typed())
		// Now: through the validator as the server runs it, and the strict server's binding.
		var after any
		var afterErr error
		var bound bool
		pattern, _ := matchRoute(routes, b.method, b.path)
		r := chi.NewRouter()
		r.Group(func(r chi.Router) { // as the server routes: the validator runs once chi matched the route
			r.Use(validate)
			r.MethodFunc(b.method, pattern, func(w http.ResponseWriter, req *http.Request) {
				_, bound = req.Body.(interface{ ValidatedValue() any })
				after = b.typed()
				afterErr = runtime.BindJSONBody(req, after)
			})
		})
		req := httptest.NewRequestWithContext(context.WithValue(t.Context(), callerKey{}, admin), b.method, b.path, strings.NewReader(b.json))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		if after == nil {
			afterErr = errRefused
		}
		if (beforeErr == nil) != (afterErr == nil) {
			t.Errorf("%s %s %s: before: %v, now: %v (%d %s)", b.method, b.path, b.json, beforeErr, afterErr, w.Code, w.Body)
			continue
		}
		if beforeErr != nil {
			t.Logf("%s %s %s: refused before and now: %v", b.method, b.path, b.json, beforeErr)
			continue
		}
		if !bound {
			t.Errorf("%s %s %s: the handler's body does not carry the validated value: the strict server decodes the bytes again", b.method, b.path, b.json)
		}
		want, err := canonicalBody(before)
		if err != nil {
			t.Fatal(err)
		}
		got, err := canonicalBody(after)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s %s %s: canonical body %s, before %s", b.method, b.path, b.json, got, want)
		}
	}
}

// validator is the server's spec and its request validator, as NewServer sets them up.
func validator(tb testing.TB) (*openapi3.T, func(http.Handler) http.Handler) {
	spec, err := GetSwagger()
	if err != nil {
		tb.Fatal(err)
	}
	spec.Servers = nil
	s := &Server{log: slog.New(slog.DiscardHandler)}
	return spec, s.validateRequests(spec)
}

// errRefused stands for a request the validator refused before the handler.
var errRefused = &bodyError{field: "body", detail: "refused by the validator"}

// boundBefore is the typed body as rpsd bound it before the body was parsed once: the validator
// (checking the security requirements with a function that accepts everyone, keeping no value),
// then encoding/json decoding the bytes the validator left (with any defaults it wrote in).
func boundBefore(t *testing.T, routes specRoutes, method, path, body string, typed any) (any, error) {
	t.Helper()
	pattern, _ := matchRoute(routes, method, path)
	spec := routes[method+" "+pattern].Spec
	item := spec.Paths.Value(pattern)
	route := &routers.Route{Spec: spec, Path: pattern, PathItem: item, Method: method, Operation: item.GetOperation(method)}
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	_, params := matchRoute(routes, method, path)
	err := openapi3filter.ValidateRequest(t.Context(), &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	})
	if err != nil {
		return nil, err
	}
	return typed, runtime.BindJSONBody(req, typed)
}

// matchRoute is the spec's path template that path matches for method, and its parameters.
func matchRoute(routes specRoutes, method, path string) (string, map[string]string) {
	for key := range routes {
		m, pattern, _ := strings.Cut(key, " ")
		if m != method {
			continue
		}
		rc := chi.NewRouteContext()
		r := chi.NewRouter()
		r.MethodFunc(method, pattern, func(http.ResponseWriter, *http.Request) {})
		if r.Match(rc, method, path) {
			params := map[string]string{}
			for i, k := range rc.URLParams.Keys {
				params[k] = rc.URLParams.Values[i]
			}
			return pattern, params
		}
	}
	return "", nil
}

// BenchmarkRevealDecode is the api's work on a reveal's request before the store: chi's routing,
// the validator (with its one parse of the body), the strict server's binding and the
// idempotency key's request hash.
func BenchmarkRevealDecode(b *testing.B) {
	_, validate := validator(b)
	r := chi.NewRouter()
	r.Group(func(r chi.Router) {
		r.Use(validate)
		r.Post("/v1/lobbies/{lobbyId}/reveals", func(w http.ResponseWriter, req *http.Request) {
			var body RevealRequest
			if err := runtime.BindJSONBody(req, &body); err != nil {
				b.Fatal(err)
			}
			key := "k"
			if _, err := idempotencyKey(req.Context(), "00000000-0000-0000-0000-000000000002", &key, &body); err != nil {
				b.Fatal(err)
			}
		})
	})
	const body = `{"reveal":"0p-round-17-password"}`
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/v1/lobbies/7d2c1b0a-9f8e-4d6c-9b4a-3f2e1d0c9b8a/reveals", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		r.ServeHTTP(httptest.NewRecorder(), req)
	}
}
