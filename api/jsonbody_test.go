package api_test

import (
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apitest"
)

// nested is a body of depth arrays, each inside the one before: "[[[...]]]".
func nested(depth int) string { return strings.Repeat("[", depth) + strings.Repeat("]", depth) }

// TestDeepBodyMemory: decoding a deeply nested body allocates a small multiple of its size. The
// decoder copied the path at every level, so 4,000 levels (8 KB) took 64 MB and 30,000 (60 KB,
// within the body limit) took 7 GB.
func TestDeepBodyMemory(t *testing.T) {
	body := []byte(nested(4000))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := api.ParseJSONBody(body)
	runtime.ReadMemStats(&after)
	if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(64*len(body)); got > limit {
		t.Fatalf("decoding a %d-byte body allocated %d bytes, want at most %d", len(body), got, limit)
	}
	if err == nil {
		t.Fatal("a body nested 4,000 deep is accepted")
	}
}

// TestBodyDepth: a body may nest up to the bound; past it, it is refused with 400 naming where.
func TestBodyDepth(t *testing.T) {
	if _, err := api.ParseJSONBody([]byte(nested(32))); err != nil {
		t.Fatalf("a body nested 32 deep is refused: %v", err)
	}
	_, err := api.ParseJSONBody([]byte(`{"a":[{"b":` + nested(40) + `}]}`))
	if err == nil || !strings.HasPrefix(err.Error(), "a.0.b.0.0.") || !strings.Contains(err.Error(), "more than 32 deep") {
		t.Fatalf("error %v, want one naming a.0.b.0.0... and the bound", err)
	}
}

// TestHostileDeepBody: the body of issue 29 (60 KB of '[' then ']') and deeper ones, to the route
// that needs no token, are refused at once with a 4xx: 400 when they fit the body limit, 413 past
// it; under another media type too (the request validator refuses it before any reader).
func TestHostileDeepBody(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	for _, tc := range []struct {
		name   string
		body   string
		status int
		// contentType replaces application/json: no other reader takes the body.
		contentType string
	}{
		{"30,000 deep", nested(30000), http.StatusBadRequest, ""},
		{"32,000 deep", nested(32000), http.StatusBadRequest, ""},
		{"60,000 opened, never closed", strings.Repeat("[", 60000), http.StatusBadRequest, ""},
		{"60,000 objects opened", strings.Repeat(`{"a":`, 12000), http.StatusBadRequest, ""},
		{"40,000 deep", nested(40000), http.StatusRequestEntityTooLarge, ""},
		{"30,000 deep as text/plain", nested(30000), http.StatusBadRequest, "text/plain"},
		{"30,000 deep as application/merge-patch+json", nested(30000), http.StatusBadRequest, "application/merge-patch+json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var headers []string
			if tc.contentType != "" {
				headers = []string{"Content-Type", tc.contentType}
			}
			res := e.Do(http.MethodPost, "/v1/accounts", "", tc.body, headers...)
			if res.Status != tc.status {
				t.Fatalf("status %d, want %d; body %.300s", res.Status, tc.status, res.Body)
			}
			if tc.status == http.StatusBadRequest && tc.contentType == "" {
				if prob := res.Problem(t); prob.Code != "validation_failed" {
					t.Fatalf("code %s, want validation_failed", prob.Code)
				}
			}
		})
	}
}

// TestNumberOutOfRange: a number no float64 holds is refused naming its field and why (it was
// "cannot convert json.Number to float64", the validator's words).
func TestNumberOutOfRange(t *testing.T) {
	for _, n := range []string{"1e400", "-1e400", strings.Repeat("9", 400)} {
		_, err := api.ParseJSONBody([]byte(`{"config":{"betSize":` + n + `}}`))
		if err == nil || !strings.HasPrefix(err.Error(), "config.betSize") || !strings.Contains(err.Error(), "too large") {
			t.Errorf("%.20s: %v, want config.betSize refused as too large", n, err)
		}
	}
	if _, err := api.ParseJSONBody([]byte(`{"amount":1e300,"small":1e-400}`)); err != nil {
		t.Errorf("numbers a float64 holds (or rounds to zero) are refused: %v", err)
	}
}
