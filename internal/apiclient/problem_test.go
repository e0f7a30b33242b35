package apiclient

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

func TestProblemOf(t *testing.T) {
	body := []byte(`{"type":"urn:rps:problem:rate_limited","title":"Too many requests","status":429,"code":"rate_limited","detail":"retry later","field":null}`)
	r := &CommitMoveResponse{Body: body, HTTPResponse: &http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {"2"}}}}
	err := Check(r, http.StatusOK)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Check = %v, want *Error", err)
	}
	if e.Status != 429 || e.Code != "rate_limited" || e.Detail != "retry later" || e.RetryAfter != 2*time.Second {
		t.Errorf("decoded %+v", e)
	}
	if err := Check(&CommitMoveResponse{HTTPResponse: &http.Response{StatusCode: 200}}, http.StatusOK); err != nil {
		t.Errorf("Check of the wanted status = %v", err)
	}
	// A body that is no problem (a proxy's page) still yields a code to count errors by.
	e = ProblemOf(&RegisterPlayerResponse{Body: []byte("<html>bad gateway</html>"), HTTPResponse: &http.Response{StatusCode: 502}})
	if e.Code != "http_502" || e.RetryAfter != 0 {
		t.Errorf("non-problem body: %+v", e)
	}
}

func TestNewKeyIsFresh(t *testing.T) {
	a, b := NewKey(), NewKey()
	if a == b || len(a) != 32 {
		t.Errorf("keys %q and %q", a, b)
	}
}

// The committed client must match the spec: regenerate it into a temporary file and compare.
func TestGeneratedClientIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the generator")
	}
	cfg, err := os.ReadFile("oapi-codegen.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "apiclient.gen.go")
	// The config's output line wins over -o, so the temporary config names the temporary output.
	tmpCfg := filepath.Join(dir, "oapi-codegen.yaml")
	cfg = regexp.MustCompile(`(?m)^output:.*$`).ReplaceAll(cfg, []byte("output: "+out))
	if err := os.WriteFile(tmpCfg, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if msg, err := exec.Command("go", "tool", "oapi-codegen", "-config", tmpCfg, "../../openapi.yaml").CombinedOutput(); err != nil {
		t.Fatalf("oapi-codegen: %v\n%s", err, msg)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("apiclient.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("apiclient.gen.go is stale against openapi.yaml: run go generate ./internal/apiclient")
	}
}
