package console

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandlerServesPagesAndAssetsWithPolicy(t *testing.T) {
	h := Handler()
	for path, want := range map[string]string{
		"/":          `src="/assets/js/main.js"`,
		"/admin":     `src="/assets/js/main.js"`,
		"/standings": `src="/assets/js/main.js"`,
		"/accounts/2b9c7e4a-3f61-4d2a-9c0e-8a5b1d7f3e20": `src="/assets/js/main.js"`,
		"/lobbies/5a1f0c1e-8d4b-4c55-9a43-2f1d0e7b6c11":  `src="/assets/js/main.js"`,
		"/assets/js/api.js":                              "sessionStorage",
		"/assets/js/verify.js":                           "verifyLog",
		// go:embed skips names starting with "_" unless asked: blake2.js imports these.
		"/assets/vendor/noble-hashes/_blake.js":       "BSIGMA",
		"/assets/vendor/noble-hashes/_u64.js":         "add3L",
		"/assets/vendor/canonicalize/canonicalize.js": "export default function canonicalize",
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		body, _ := io.ReadAll(rec.Body)
		if rec.Code != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d, body without %q", path, rec.Code, want)
		}
		csp := rec.Header().Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
	}
}

func TestHandlerRefusesOtherPaths(t *testing.T) {
	for _, path := range []string{"/nothing", "/lobbies/x/y", "/accounts/x/y", "/assets/missing.js"} {
		rec := httptest.NewRecorder()
		Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, rec.Code)
		}
	}
}
