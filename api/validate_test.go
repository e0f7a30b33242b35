package api

import (
	"net/http"
	"slices"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/commitreveal/rps/console"
)

// TestEveryRouteIsAnOperation: the request validator finds each request's operation by the route
// chi matched, so every route but the console's and the log's C2SP resources must be an
// operation of the spec, and every operation a route.
func TestEveryRouteIsAnOperation(t *testing.T) {
	spec, err := GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	spec.Servers = nil
	operations := newSpecRoutes(spec)
	routed := map[string]bool{}
	mux, ok := (&Server{}).routes(spec).(chi.Routes)
	if !ok {
		t.Fatal("routes is not a chi router")
	}
	err = chi.Walk(mux, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if method == http.MethodGet && (slices.Contains(console.Paths, route) || slices.Contains(logPaths, route)) {
			return nil
		}
		routed[method+" "+route] = true
		if operations[method+" "+route] == nil {
			t.Errorf("route %s %s is not an operation of the spec", method, route)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for op := range operations {
		if !routed[op] {
			t.Errorf("operation %s has no route", op)
		}
	}
}
