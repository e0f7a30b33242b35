package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apitest"

	"github.com/commitreveal/rps"
)

func TestHealthMetricsAndSpec(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	for _, path := range []string{"/healthz", "/readyz"} {
		var h api.Health
		e.Do("GET", path, "", nil).Want(t, http.StatusOK).Decode(t, &h)
		if h.Status != "ok" {
			t.Errorf("%s: %+v", path, h)
		}
	}
	lobby := e.CreateLobby(map[string]any{"betSize": 1, "playersCountLimit": 2}).Id.String()
	e.Lobby(lobby, "")
	e.Do("GET", "/v1/lobbies/"+apitest.RandomID(), "", nil).Want(t, http.StatusNotFound)
	e.Do("GET", "/v1/games/"+apitest.RandomID()+"/rounds/1", "", nil).Want(t, http.StatusNotFound)

	text := metricsText(t, e)
	for _, want := range []string{
		`rps_http_requests_total{method="GET",route="/v1/lobbies/{lobbyId}",status="200"} 1`,
		`rps_http_requests_total{method="GET",route="/v1/lobbies/{lobbyId}",status="404"} 1`,
		`rps_http_requests_total{method="GET",route="/v1/games/{gameId}/rounds/{round}",status="404"} 1`,
		`rps_http_requests_total{method="POST",route="/v1/lobbies",status="201"} 1`,
		`rps_http_requests_total{method="GET",route="/healthz",status="200"} 1`,
		`rps_http_request_duration_seconds_bucket{method="GET",route="/v1/lobbies/{lobbyId}",le=`,
		`rps_actions_total{action="create_lobby",result="ok"} 1`,
		`rps_db_pool_connections`,
		`rps_clock_expiries_total`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// Routes by pattern, never by raw path: no id in any label.
	uuidRE := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	if m := uuidRE.FindString(text); m != "" {
		t.Errorf("/metrics has a raw id in a label: %s", m)
	}

	spec := e.Do("GET", "/openapi.yaml", "", nil).Want(t, http.StatusOK)
	file, err := os.ReadFile("../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(spec.Body, file) || !bytes.Equal(spec.Body, rps.OpenAPI) {
		t.Errorf("GET /openapi.yaml does not serve the repository's openapi.yaml (%d bytes, file %d)", len(spec.Body), len(file))
	}
	if ct := spec.Header.Get("Content-Type"); !strings.Contains(ct, "yaml") {
		t.Errorf("GET /openapi.yaml Content-Type %q", ct)
	}
}

// TestGeneratedCodeIsCurrent regenerates api.gen.go from openapi.yaml into a temporary file and
// compares it with the committed one.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the generator")
	}
	cfg, err := os.ReadFile("oapi-codegen.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "api.gen.go")
	// The config's output wins over -o, so the temporary config names the temporary output.
	re := regexp.MustCompile(`(?m)^output:.*$`)
	if !re.Match(cfg) {
		t.Fatalf("oapi-codegen.yaml has no output line:\n%s", cfg)
	}
	tmpCfg := filepath.Join(dir, "oapi-codegen.yaml")
	if err := os.WriteFile(tmpCfg, re.ReplaceAll(cfg, []byte("output: "+out)), 0o644); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile("api.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "tool", "oapi-codegen", "-config", tmpCfg, "-o", out, "../openapi.yaml")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("oapi-codegen: %v\n%s", err, msg)
	}
	after, err := os.ReadFile("api.gen.go")
	if err != nil || !bytes.Equal(before, after) {
		t.Fatalf("the generator wrote to the committed api.gen.go")
	}
	fresh, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, before) {
		i := 0
		for i < len(fresh) && i < len(before) && fresh[i] == before[i] {
			i++
		}
		line := bytes.Count(before[:i], []byte("\n")) + 1
		t.Errorf("api.gen.go is stale against openapi.yaml (first difference at line %d); run `go generate ./api`", line)
	}
}

// TestInternalErrorsLeakNothing: with the database gone, requests fail as problem+json 500s with
// a request id and no internals (no SQL, no driver messages).
func TestInternalErrorsLeakNothing(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	p := e.NewPlayer("p", 100)
	lobby := e.CreateLobby(map[string]any{"betSize": 1, "playersCountLimit": 2}).Id.String()
	// Cache both tokens, so that authentication needs no database.
	e.Balance(p.Token)
	e.Ledger()
	e.Pool.Close()
	e.Allow5xx = true
	for _, c := range []struct {
		method, path, token string
		body                any
	}{
		{"GET", "/v1/me", p.Token, nil},
		{"GET", "/v1/lobbies/" + lobby, "", nil},
		{"GET", "/v1/lobbies", "", nil},
		{"GET", "/v1/lobbies/" + lobby + "/events", "", nil},
		{"POST", "/v1/lobbies/" + lobby + "/players", p.Token, nil},
		{"POST", "/v1/accounts", "", map[string]any{"name": "x"}},
		{"GET", "/v1/admin/ledger", e.Admin, nil},
		{"GET", "/v1/lobbies/" + lobby + "/events/stream", "", nil},
	} {
		r := e.Do(c.method, c.path, c.token, c.body)
		p := r.WantProblem(t, http.StatusInternalServerError, "internal")
		if p.RequestId == nil || *p.RequestId == "" {
			t.Errorf("%s: no request id: %s", r.Req, r.Body)
		}
		lower := strings.ToLower(string(r.Body))
		for _, leak := range []string{"select", "insert", "pool", "closed", "pgx", "sql", "connect", "lobbies", "accounts", "tx"} {
			if strings.Contains(strings.ReplaceAll(lower, `"instance":"`+strings.ToLower(c.path)+`"`, ""), leak) {
				t.Errorf("%s: the 500 leaks %q: %s", r.Req, leak, r.Body)
			}
		}
	}
	var h api.Health
	e.Do("GET", "/readyz", "", nil).Want(t, http.StatusServiceUnavailable).Decode(t, &h)
	if h.Status != "unavailable" {
		t.Errorf("readyz with the database gone: %+v", h)
	}
	e.Do("GET", "/healthz", "", nil).Want(t, http.StatusOK)
}

// TestPanicRecovered: a panic in a handler is a logged 500 problem with a request id, and the
// server keeps serving. The panic's value (which may hold a token, a reveal or a query) is in
// neither the body nor the log: the log names its type and the request id.
func TestPanicRecovered(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	e := apitest.Start(t, apitest.WithConfig(func(c *api.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	}))
	for _, v := range []any{"secret internals: SELECT * FROM accounts", fmt.Errorf("secret token %s", "Zm9vYmFy")} {
		h := api.Observed(e.Server, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { panic(v) }))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/boom", nil))
		r := apitest.Response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes(), Req: "GET /v1/boom"}
		apitest.CheckResponse(t, r, true)
		p := r.WantProblem(t, http.StatusInternalServerError, "internal")
		for _, leak := range []string{"secret", "SELECT", "Zm9vYmFy"} {
			if bytes.Contains(r.Body, []byte(leak)) {
				t.Errorf("the panic value leaked into the body: %s", r.Body)
			}
			if bytes.Contains(logs.Bytes(), []byte(leak)) {
				t.Errorf("the panic value leaked into the log: %s", logs.Bytes())
			}
		}
		var logged bool
		for _, line := range bytes.Split(logs.Bytes(), []byte("\n")) {
			var rec struct {
				Msg, Type, RequestID string
			}
			if json.Unmarshal(line, &rec) == nil && rec.Msg == "panic" && rec.RequestID == *p.RequestId {
				logged = rec.Type == fmt.Sprintf("%T", v)
			}
		}
		if !logged {
			t.Errorf("no panic line with type %T and request id %s in the log:\n%s", v, *p.RequestId, logs.Bytes())
		}
	}
	if !strings.Contains(metricsText(t, e), `route="unmatched",status="500"`) {
		t.Errorf("the recovered panic is not counted as a 500")
	}
	e.Do("GET", "/healthz", "", nil).Want(t, http.StatusOK)
}

// syncBuffer is a bytes.Buffer that handlers on several goroutines may write to.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

func TestRateLimits(t *testing.T) {
	t.Parallel()
	const burst = 3
	e := apitest.Start(t, apitest.WithConfig(func(c *api.Config) {
		c.TokenLimit = api.RateLimit{Rate: 0.001, Burst: burst}
		c.IPLimit = api.RateLimit{Rate: 0.001, Burst: burst}
		c.AccountLimit = api.RateLimit{Rate: 0.001, Burst: 2}
	}))
	// Account creation: limited per address (2), and counted against the anonymous budget (3).
	var created api.AccountCreated
	e.Do("POST", "/v1/accounts", "", map[string]any{"name": "a"}).Want(t, http.StatusCreated).Decode(t, &created)
	e.Do("POST", "/v1/accounts", "", map[string]any{"name": "b"}).Want(t, http.StatusCreated)
	checkLimited(t, e.Do("POST", "/v1/accounts", "", map[string]any{"name": "c"}))
	// The anonymous budget of this address: 3 requests in all, 3 spent.
	checkLimited(t, e.Do("GET", "/v1/rulesets", "", nil))

	// Per token: burst requests pass, the next is 429; another token has its own bucket.
	token := created.Token
	for i := range burst {
		e.Do("GET", "/v1/me", token, nil).Want(t, http.StatusOK)
		_ = i
	}
	checkLimited(t, e.Do("GET", "/v1/me", token, nil))
	e.Do("GET", "/v1/me", e.Admin, nil).Want(t, http.StatusOK)
}

func checkLimited(t *testing.T, r apitest.Response) {
	t.Helper()
	r.WantProblem(t, http.StatusTooManyRequests, "rate_limited")
	n, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || n < 1 {
		t.Errorf("%s: Retry-After %q, want a number of seconds >= 1", r.Req, r.Header.Get("Retry-After"))
	}
}

// TestAnonymousOperationsIgnoreAuthorization: the spec says "Anonymous operations (`security:
// []`) ignore any `Authorization` header"; only the optional-auth lobby reads refuse an unknown
// token. A stale token must not break the health check, the rulesets, the event log or sign-up.
func TestAnonymousOperationsIgnoreAuthorization(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	lobby := e.CreateLobby(map[string]any{"betSize": 1, "playersCountLimit": 2})
	game := lobby.Game.Id.String()
	stale := "c3RhbGUtdG9rZW4tdGhhdC1uby1sb25nZXItZXhpc3Rz"
	for _, c := range []struct {
		method, path string
		body         any
		status       int
	}{
		{"GET", "/healthz", nil, 200},
		{"GET", "/readyz", nil, 200},
		{"GET", "/openapi.yaml", nil, 200},
		{"GET", "/v1/rulesets", nil, 200},
		{"GET", "/v1/rulesets/rpsls", nil, 200},
		{"POST", "/v1/rulesets/rpsls/grid", map[string]any{"grid": 3}, 200},
		{"GET", "/v1/lobbies/" + lobby.Id.String() + "/events", nil, 200},
		{"GET", "/v1/games/" + game, nil, 200},
		{"GET", "/v1/games/" + game + "/players", nil, 200},
		{"POST", "/v1/accounts", map[string]any{"name": "x"}, 201},
	} {
		r := e.Do(c.method, c.path, stale, c.body)
		if r.Status != c.status {
			t.Errorf("%s %s (security: [] in openapi.yaml) with an unknown bearer token: %d %s; want %d, the header ignored",
				c.method, c.path, r.Status, r.Body, c.status)
		}
	}
}

// TestClosedLobbyShowsLastGame: the spec's Lobby.game is "the lobby's latest game: the current
// one, or for a closed lobby whose last game has ended, that game (finished or stopped). Null
// only when the lobby has no game."
func TestClosedLobbyShowsLastGame(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	p := e.NewPlayer("p", 10)
	l := e.CreateLobby(map[string]any{"betSize": 1, "playersCountLimit": 2})
	lobby := l.Id.String()
	e.Register(lobby, p).Want(t, http.StatusCreated)
	// Closing ends the registration: a closed lobby's registration would never end.
	var closed api.Lobby
	e.Do("POST", "/v1/lobbies/"+lobby+"/close", e.Admin, nil).Want(t, http.StatusOK).Decode(t, &closed)
	if !closed.Closed || closed.Game == nil || closed.Game.Stage != "stopped" {
		t.Fatalf("closing stops the registration: %s", apitest.JSONOf(closed))
	}
	if e.Balance(p.Token) != 10 {
		t.Errorf("the close in registration did not refund the bet")
	}
	got := e.Lobby(lobby, "")
	if got.Game == nil || got.Game.Id != l.Game.Id || got.Game.Stage != "stopped" {
		t.Errorf("closed lobby whose last game was stopped: game %s; want that game (%s), stage stopped", apitest.JSONOf(got.Game), l.Game.Id)
	}
	// No game left to stop.
	e.Do("POST", "/v1/lobbies/"+lobby+"/stop", e.Admin, map[string]any{"reason": "again"}).WantProblem(t, http.StatusConflict, "wrong_stage")
}

// TestRotateToken: the new token works, and once it has been used the old one is refused at
// once (the token cache forgets it), for players and admins.
func TestRotateToken(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	p := e.NewPlayer("p", 0)
	for _, who := range []struct {
		name  string
		token string
	}{{"player", p.Token}, {"admin", e.Admin}} {
		e.Balance(who.token) // cached now
		var tr api.TokenResponse
		e.Do("POST", "/v1/me/token", who.token, nil).Want(t, http.StatusOK).Decode(t, &tr)
		if tr.Token == "" || tr.Token == who.token {
			t.Fatalf("%s: rotated token %q", who.name, tr.Token)
		}
		e.Do("GET", "/v1/me", tr.Token, nil).Want(t, http.StatusOK)
		e.Do("GET", "/v1/me", who.token, nil).WantProblem(t, http.StatusUnauthorized, "unauthorized")
		if who.name == "admin" {
			e.Admin = tr.Token
			e.Ledger()
		}
	}
}
