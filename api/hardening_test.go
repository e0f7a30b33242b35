package api_test

import (
	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apitest"

	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// metricsText scrapes the server's metrics handler (served apart from the API).
func metricsText(t testing.TB, e *apitest.Env) string {
	t.Helper()
	rec := httptest.NewRecorder()
	e.Server.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("metrics: status %d", rec.Code)
	}
	return rec.Body.String()
}

// TestMetricsLabelsBounded: invented methods are counted as OTHER, never by their name, so that
// a client cannot grow the exposition without bound; and the API does not serve /metrics (it has
// a listener of its own).
func TestMetricsLabelsBounded(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	for i := range 20 {
		method := "INVENT" + strings.Repeat("X", i*50)
		e.Do(method, "/v1/lobbies", "", nil).Want(t, http.StatusMethodNotAllowed)
		e.Do(method, "/v1/nothing-here", "", nil).Want(t, http.StatusNotFound)
	}
	text := metricsText(t, e)
	if strings.Contains(text, "INVENT") {
		t.Errorf("an invented method is a label value")
	}
	if !strings.Contains(text, `rps_http_requests_total{method="OTHER",route="unmatched",status="405"} 20`) {
		t.Errorf("the invented methods are not counted as OTHER:\n%s", grepLines(text, "rps_http_requests_total"))
	}
	e.Do("GET", "/metrics", "", nil).Want(t, http.StatusNotFound)
}

// TestEveryPathRateLimited: 404s and 405s draw on the caller's budget like any request, while
// the health probes are never limited (a probe answered 429 gets a pod restarted).
func TestEveryPathRateLimited(t *testing.T) {
	t.Parallel()
	const burst = 3
	e := apitest.Start(t, apitest.WithConfig(func(c *api.Config) {
		c.IPLimit = api.RateLimit{Rate: 0.001, Burst: burst}
	}))
	for range burst {
		e.Do("BREW", "/v1/lobbies", "", nil).Want(t, http.StatusMethodNotAllowed)
	}
	checkLimited(t, e.Do("BREW", "/v1/lobbies", "", nil))
	checkLimited(t, e.Do("GET", "/v1/nothing-here", "", nil))
	for range 10 {
		e.Do("GET", "/healthz", "", nil).Want(t, http.StatusOK)
		e.Do("GET", "/readyz", "", nil).Want(t, http.StatusOK)
	}
}

// TestMethodNotAllowedHasAllow: a 405 names the methods the route has (RFC 9110 15.5.6).
func TestMethodNotAllowedHasAllow(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	lobby := e.CreateLobby(map[string]any{"betSize": 1, "playersCountLimit": 2}).Id.String()
	for path, want := range map[string]string{
		"/v1/lobbies":                             "GET, POST",
		"/healthz":                                "GET",
		"/v1/lobbies/" + lobby + "/next-config":   "PUT",
		"/v1/lobbies/" + lobby + "/events/stream": "GET",
	} {
		r := e.Do("PATCH", path, "", nil).Want(t, http.StatusMethodNotAllowed)
		if got := r.Header.Get("Allow"); got != want {
			t.Errorf("PATCH %s: Allow %q, want %q", path, got, want)
		}
	}
}

// TestClientGoneIsNotServerError: a client hanging up on a long poll is counted as 499, not 500.
func TestClientGoneIsNotServerError(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	lobby := e.CreateLobby(map[string]any{"betSize": 1, "playersCountLimit": 2}).Id.String()
	events := e.Events(lobby, 0)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	r, err := e.Request(ctx, "GET", "/v1/lobbies/"+lobby+"/events?"+apitest.Query("after", apitest.JSONOf(events.Next), "wait", "10"), "", nil)
	if err == nil {
		t.Fatalf("the long poll answered before the client hung up: %d %s", r.Status, r.Body)
	}
	const want = `rps_http_requests_total{method="GET",route="/v1/lobbies/{lobbyId}/events",status="499"} 1`
	deadline := time.Now().Add(5 * time.Second)
	for {
		text := metricsText(t, e)
		if strings.Contains(text, `route="/v1/lobbies/{lobbyId}/events",status="500"`) {
			t.Fatalf("a hang-up is counted as a 500:\n%s", grepLines(text, "rps_http_requests_total"))
		}
		if strings.Contains(text, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no 499 counted:\n%s", grepLines(text, "rps_http_requests_total"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func grepLines(text, prefix string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
