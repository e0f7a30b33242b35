package api

// The tests of this package run the API in process (httptest) over a real, migrated Postgres
// database per test (internal/pgtest). This file holds the harness: setup, which returns the
// subject (the server's URL, its store, pool and metrics) and a fixtures bundle (the admin token
// and helpers that create players and lobbies and send requests), plus helpers shared by the
// other files (event waits, the SSE client, chain verification).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gowebpki/jcs"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/crypto/blake2b"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/internal/pgtest"
	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// options of setup.
type options struct {
	minTimeoutMs int64
	clock        bool
	config       func(*Config)
}

type option func(*options)

// withClock runs the store's clock worker, so deadlines pass by themselves.
func withClock() option { return func(o *options) { o.clock = true } }

// withMinTimeout sets the tournament's minimum stage timeout (100 ms by default here).
func withMinTimeout(ms int64) option { return func(o *options) { o.minTimeoutMs = ms } }

// withConfig adjusts the api.Config before the server is built.
func withConfig(f func(*Config)) option { return func(o *options) { o.config = f } }

// env is the subject and the fixtures of one test.
type env struct {
	t       *testing.T
	URL     string
	Pool    *pgxpool.Pool
	Store   *store.Store
	Server  *Server
	Metrics *Metrics
	// Admin is the bootstrap admin's bearer token.
	Admin  string
	client *http.Client
	// allow5xx turns off the "never a 5xx" check of do, for the tests that provoke one.
	allow5xx bool
}

// setup starts the API over a fresh database.
func setup(t *testing.T, opts ...option) *env {
	t.Helper()
	o := options{minTimeoutMs: 100}
	for _, f := range opts {
		f(&o)
	}
	pool := pgtest.New(t)
	metrics := NewMetrics(pool)
	svc := tournament.NewService(tournament.Options{Rules: engine.Builtin(), MinTimeoutMs: o.minTimeoutMs, NewID: uuid.NewString})
	st := store.New(pool, store.Options{Service: svc, OnExpiry: metrics.ObserveExpiry})
	t.Cleanup(st.Close)
	admin, _, err := st.EnsureAdmin(t.Context(), "")
	if err != nil {
		t.Fatalf("ensure admin: %v", err)
	}
	cfg := Config{Store: st, Metrics: metrics, Logger: slog.New(slog.DiscardHandler)}
	if o.config != nil {
		o.config(&cfg)
	}
	srv, err := NewServer(cfg)
	if err != nil {
		t.Fatalf("new server: %v", err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		srv.Shutdown()
		ts.Close()
	})
	if o.clock {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- st.RunClock(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("clock worker: %v", err)
			}
		})
	}
	return &env{t: t, URL: ts.URL, Pool: pool, Store: st, Server: srv, Metrics: metrics, Admin: admin, client: ts.Client()}
}

// resp is a response read whole.
type resp struct {
	Status int
	Header http.Header
	Body   []byte
	// req names the request, for messages.
	req string
}

// decode unmarshals the body into v, failing the test when it does not parse.
func (r resp) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("%s: decode %T from %s: %v", r.req, v, r.Body, err)
	}
}

// want fails the test unless the status is want.
func (r resp) want(t testing.TB, want int) resp {
	t.Helper()
	if r.Status != want {
		t.Fatalf("%s: status %d, want %d; body %s", r.req, r.Status, want, r.Body)
	}
	return r
}

// problem decodes a problem body.
func (r resp) problem(t testing.TB) Problem {
	t.Helper()
	var p Problem
	r.decode(t, &p)
	return p
}

// wantProblem fails unless the response is the problem of status and code.
func (r resp) wantProblem(t testing.TB, status int, code string) Problem {
	t.Helper()
	if r.Status != status {
		t.Fatalf("%s: status %d, want %d (%s); body %s", r.req, r.Status, status, code, r.Body)
	}
	p := r.problem(t)
	if string(p.Code) != code {
		t.Fatalf("%s: code %q, want %q; body %s", r.req, p.Code, code, r.Body)
	}
	return p
}

// request sends a request without touching t (safe in goroutines). body is nil (no body), a
// []byte or string sent as it is, or a value sent as JSON; headers are name, value pairs.
func (e *env) request(ctx context.Context, method, path, token string, body any, headers ...string) (resp, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = strings.NewReader(b)
	case io.Reader:
		rd = b // sent chunked, without a Content-Length
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			return resp{}, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.URL+path, rd)
	if err != nil {
		return resp{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := e.client.Do(req)
	if err != nil {
		return resp{}, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return resp{}, err
	}
	return resp{Status: res.StatusCode, Header: res.Header, Body: raw, req: method + " " + path}, nil
}

// do sends a request (see request) and checks what holds for every response: never a 5xx
// (unless allowed), and every error is an RFC 9457 problem with a consistent code.
func (e *env) do(method, path, token string, body any, headers ...string) resp {
	e.t.Helper()
	r, err := e.request(e.t.Context(), method, path, token, body, headers...)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	checkResponse(e.t, r, e.allow5xx)
	return r
}

// checkResponse checks the shape every response must have.
func checkResponse(t testing.TB, r resp, allow5xx bool) {
	t.Helper()
	if r.Status >= 500 && !allow5xx {
		t.Errorf("%s: server error %d: %s", r.req, r.Status, r.Body)
	}
	if r.Status < 400 || (r.Status == http.StatusServiceUnavailable && strings.HasPrefix(r.req, "GET /readyz")) {
		// (readyz answers 503 with its Health document, as the spec says.)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("%s: error %d with Content-Type %q, want application/problem+json; body %s", r.req, r.Status, ct, r.Body)
		return
	}
	var p Problem
	if err := json.Unmarshal(r.Body, &p); err != nil {
		t.Errorf("%s: problem body does not parse: %v: %s", r.req, err, r.Body)
		return
	}
	if p.Code == "" || p.Title == "" || p.Type != "urn:rps:problem:"+string(p.Code) || int(p.Status) != r.Status {
		t.Errorf("%s: inconsistent problem for status %d: %s", r.req, r.Status, r.Body)
	}
	// A replayed outcome is the stored body, with the first request's id.
	replayed := r.Header.Get("Idempotent-Replayed") == "true"
	if p.RequestId == nil || *p.RequestId == "" || (!replayed && *p.RequestId != r.Header.Get("X-Request-Id")) {
		t.Errorf("%s: problem without the request id of X-Request-Id %q: %s", r.req, r.Header.Get("X-Request-Id"), r.Body)
	}
}

// player is a player account and its token.
type player struct {
	ID    string
	Name  string
	Token string
}

// newPlayer creates a player account and, when funds > 0, has the admin credit it.
func (e *env) newPlayer(name string, funds int64) player {
	e.t.Helper()
	var created AccountCreated
	e.do("POST", "/v1/accounts", "", map[string]any{"name": name}).want(e.t, http.StatusCreated).decode(e.t, &created)
	p := player{ID: created.Account.Id.String(), Name: name, Token: created.Token}
	if funds > 0 {
		e.do("POST", "/v1/admin/accounts/"+p.ID+"/credits", e.Admin, map[string]any{"amount": funds}).want(e.t, http.StatusOK)
	}
	return p
}

// createLobby has the admin create a lobby with cfg (a GameConfigInput as a map).
func (e *env) createLobby(cfg map[string]any) Lobby {
	e.t.Helper()
	var l Lobby
	e.do("POST", "/v1/lobbies", e.Admin, map[string]any{"name": "lobby " + e.t.Name(), "config": cfg}).want(e.t, http.StatusCreated).decode(e.t, &l)
	if l.Game == nil {
		e.t.Fatalf("new lobby without a game: %+v", l)
	}
	return l
}

// lobby reads a lobby as the caller of token ("" for anonymous).
func (e *env) lobby(id, token string) Lobby {
	e.t.Helper()
	var l Lobby
	e.do("GET", "/v1/lobbies/"+id, token, nil).want(e.t, http.StatusOK).decode(e.t, &l)
	return l
}

// balance reads a player's balance through GET /v1/me.
func (e *env) balance(token string) int64 {
	e.t.Helper()
	var a Account
	e.do("GET", "/v1/me", token, nil).want(e.t, http.StatusOK).decode(e.t, &a)
	return a.Balance
}

// ledger reads the admin's ledger report.
func (e *env) ledger() LedgerReport {
	e.t.Helper()
	var r LedgerReport
	e.do("GET", "/v1/admin/ledger", e.Admin, nil).want(e.t, http.StatusOK).decode(e.t, &r)
	return r
}

func (e *env) register(lobby string, p player) resp {
	e.t.Helper()
	return e.do("POST", "/v1/lobbies/"+lobby+"/players", p.Token, nil)
}

func (e *env) commit(lobby string, p player, reveal string) resp {
	e.t.Helper()
	return e.do("POST", "/v1/lobbies/"+lobby+"/commitments", p.Token, map[string]any{"commitment": commitmentOf(reveal)})
}

func (e *env) reveal(lobby string, p player, reveal string) resp {
	e.t.Helper()
	return e.do("POST", "/v1/lobbies/"+lobby+"/reveals", p.Token, map[string]any{"reveal": reveal})
}

// commitmentOf is the commitment of a reveal string, in lower-case hex.
func commitmentOf(reveal string) string { return engine.Commit(reveal).String() }

// events reads one page of a lobby's events.
func (e *env) events(lobby string, after int64) EventPage {
	e.t.Helper()
	var page EventPage
	e.do("GET", fmt.Sprintf("/v1/lobbies/%s/events?after=%d&limit=1000", lobby, after), "", nil).want(e.t, http.StatusOK).decode(e.t, &page)
	return page
}

// allEvents reads a lobby's whole log.
func (e *env) allEvents(lobby string) []Event {
	e.t.Helper()
	var out []Event
	var after int64
	for {
		page := e.events(lobby, after)
		if len(page.Events) == 0 {
			return out
		}
		out = append(out, page.Events...)
		after = page.Next
	}
}

// waitEvent long-polls the events endpoint after seq `after` until an event matching match
// arrives, and returns it with every event read on the way (matching one included). No fixed
// sleeps: each poll returns as soon as an event is appended.
func (e *env) waitEvent(lobby string, after int64, within time.Duration, match func(Event) bool) (Event, []Event) {
	e.t.Helper()
	deadline := time.Now().Add(within)
	var seen []Event
	for time.Now().Before(deadline) {
		var page EventPage
		e.do("GET", fmt.Sprintf("/v1/lobbies/%s/events?after=%d&wait=1", lobby, after), "", nil).want(e.t, http.StatusOK).decode(e.t, &page)
		for _, ev := range page.Events {
			seen = append(seen, ev)
			if match(ev) {
				return ev, seen
			}
		}
		after = page.Next
	}
	e.t.Fatalf("no matching event in lobby %s within %v; saw %s", lobby, within, eventTypes(seen))
	return Event{}, nil
}

// ofType matches events of a type.
func ofType(typ string) func(Event) bool { return func(ev Event) bool { return ev.Type == typ } }

func eventTypes(evs []Event) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "%d:%s ", ev.Seq, ev.Type)
	}
	return b.String()
}

// eventData decodes an event's data into a map.
func eventData(t testing.TB, ev Event) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(ev.Data, &m); err != nil {
		t.Fatalf("event %d data %s: %v", ev.Seq, ev.Data, err)
	}
	return m
}

// verifyChain recomputes the hash chain of a lobby's events from the served JSON alone, as a
// third party would: hash = blake2b-256(prevHash || RFC 8785 canonical {seq, type, lobbyId,
// gameId, at, data}), prevHash of seq 1 being 32 zero bytes. It also checks the chain against
// tournament.ChainHash. The events must start at seq first and be consecutive.
func verifyChain(t testing.TB, evs []Event, first int64, prev string) {
	t.Helper()
	if prev == "" {
		prev = strings.Repeat("0", 64)
	}
	for i, ev := range evs {
		if ev.Seq != first+int64(i) {
			t.Fatalf("event %d has seq %d, want %d (gap or duplicate)", i, ev.Seq, first+int64(i))
		}
		if ev.PrevHash != prev {
			t.Fatalf("event %d: prevHash %s, want the previous hash %s", ev.Seq, ev.PrevHash, prev)
		}
		var gameID any
		if ev.GameId != nil {
			gameID = ev.GameId.String()
		}
		obj, err := json.Marshal(map[string]any{
			"seq": ev.Seq, "type": ev.Type, "lobbyId": ev.LobbyId.String(), "gameId": gameID, "at": ev.At,
			"data": json.RawMessage(ev.Data),
		})
		if err != nil {
			t.Fatal(err)
		}
		canonical, err := jcs.Transform(obj)
		if err != nil {
			t.Fatalf("event %d: canonicalize: %v", ev.Seq, err)
		}
		prevBytes, err := hex.DecodeString(ev.PrevHash)
		if err != nil || len(prevBytes) != 32 {
			t.Fatalf("event %d: prevHash %q is not 32 bytes of hex", ev.Seq, ev.PrevHash)
		}
		sum := blake2b.Sum256(append(prevBytes, canonical...))
		if got := hex.EncodeToString(sum[:]); got != ev.Hash {
			t.Fatalf("event %d (%s): recomputed hash %s, served %s; canonical %s", ev.Seq, ev.Type, got, ev.Hash, canonical)
		}
		// The core's own function agrees.
		at, err := time.Parse("2006-01-02T15:04:05.000Z07:00", ev.At)
		if err != nil {
			t.Fatalf("event %d: at %q: %v", ev.Seq, ev.At, err)
		}
		le := tournament.LoggedEvent{Seq: ev.Seq, Type: tournament.EventType(ev.Type), LobbyID: tournament.LobbyID(ev.LobbyId.String()), At: at.UnixMilli(), Data: json.RawMessage(ev.Data)}
		if ev.GameId != nil {
			le.GameID = tournament.GameID(ev.GameId.String())
		}
		copy(le.PrevHash[:], prevBytes)
		h, err := tournament.ChainHash(le)
		if err != nil || hex.EncodeToString(h[:]) != ev.Hash {
			t.Fatalf("event %d: tournament.ChainHash %x (err %v), served %s", ev.Seq, h, err, ev.Hash)
		}
		prev = ev.Hash
	}
}

// ---- SSE client

// sseEvent is one message of an event stream.
type sseEvent struct {
	ID, Event, Data string
	// Received is when the message's blank line arrived.
	Received time.Time
}

// sseStream reads an event stream in the background.
type sseStream struct {
	Status int
	Header http.Header
	Events chan sseEvent
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	raw      bytes.Buffer
	comments int
	err      error
}

// openStream opens GET /v1/lobbies/{lobby}/events/stream; query is added to the URL. It returns
// once the response's headers have arrived. For a non-200 answer the body is in Raw.
func (e *env) openStream(lobby, token, query string, headers ...string) *sseStream {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	u := e.URL + "/v1/lobbies/" + lobby + "/events/stream"
	if query != "" {
		u += "?" + query
	}
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := e.client.Do(req)
	if err != nil {
		cancel()
		e.t.Fatalf("open stream: %v", err)
	}
	s := &sseStream{Status: res.StatusCode, Header: res.Header, Events: make(chan sseEvent, 1024), cancel: cancel, done: make(chan struct{})}
	e.t.Cleanup(s.Close)
	if res.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		s.raw.Write(raw)
		close(s.Events)
		close(s.done)
		return s
	}
	go s.read(res.Body)
	return s
}

func (s *sseStream) read(body io.ReadCloser) {
	defer close(s.done)
	defer close(s.Events)
	defer body.Close()
	r := bufio.NewReader(body)
	var cur sseEvent
	var dataLines []string
	for {
		line, err := r.ReadString('\n')
		s.mu.Lock()
		s.raw.WriteString(line)
		s.mu.Unlock()
		if err != nil {
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
			return
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		switch {
		case line == "":
			if cur.ID != "" || len(dataLines) > 0 || cur.Event != "" {
				cur.Data = strings.Join(dataLines, "\n")
				cur.Received = time.Now()
				s.Events <- cur
			}
			cur, dataLines = sseEvent{}, nil
		case strings.HasPrefix(line, ":"):
			// A comment (the greeting or a heartbeat): ignored, only counted.
			s.mu.Lock()
			s.comments++
			s.mu.Unlock()
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				cur.ID = value
			case "event":
				cur.Event = value
			case "data":
				dataLines = append(dataLines, value)
			}
		}
	}
}

// Close drops the connection and waits for the reader.
func (s *sseStream) Close() {
	s.cancel()
	<-s.done
}

// Raw is every byte received so far.
func (s *sseStream) Raw() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.raw.Bytes())
}

func (s *sseStream) Comments() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.comments
}

// next returns the next message, failing the test after within.
func (s *sseStream) next(t testing.TB, within time.Duration) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-s.Events:
		if !ok {
			t.Fatalf("event stream ended: %v", s.err)
		}
		return ev
	case <-time.After(within):
		t.Fatalf("no event on the stream within %v", within)
	}
	return sseEvent{}
}

// until reads messages up to and including seq.
func (s *sseStream) until(t testing.TB, seq int64, within time.Duration) []sseEvent {
	t.Helper()
	var out []sseEvent
	deadline := time.Now().Add(within)
	for {
		ev := s.next(t, time.Until(deadline))
		out = append(out, ev)
		if ev.ID == fmt.Sprint(seq) {
			return out
		}
	}
}

// decodeSSE parses the data of stream messages as Events, checking id and event against them.
func decodeSSE(t testing.TB, msgs []sseEvent) []Event {
	t.Helper()
	out := make([]Event, 0, len(msgs))
	for _, m := range msgs {
		var ev Event
		if err := json.Unmarshal([]byte(m.Data), &ev); err != nil {
			t.Fatalf("stream data %q: %v", m.Data, err)
		}
		if m.ID != fmt.Sprint(ev.Seq) || m.Event != ev.Type {
			t.Fatalf("stream message id %q event %q, but its data is seq %d type %s", m.ID, m.Event, ev.Seq, ev.Type)
		}
		out = append(out, ev)
	}
	return out
}

// randomID is a well-formed id nobody has.
func randomID() string { return uuid.NewString() }

// query builds a query string.
func query(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v.Encode()
}

// jsonOf renders v as JSON for messages.
func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}
