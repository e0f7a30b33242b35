// Package apitest runs the real HTTP API in process, for tests: Start serves an api.Server
// (httptest) over a fresh, migrated PostgreSQL database of the test's own (internal/pgtest) and
// returns an Env, the subject (URL, Client, Server, Store, Pool, Metrics) and the fixtures (the
// admin token; helpers that create players with a balance and lobbies, send requests and check
// that every error is a consistent problem, follow the event log, read event streams and verify
// the hash chain). A test package using it calls pgtest.Main from its TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	e := apitest.Start(t, apitest.WithClock())
//	alice := e.NewPlayer("alice", 1000)
//	l := e.CreateLobby(map[string]any{"bet": 100, "minPlayers": 2})
//	e.Register(l.Id.String(), alice).Want(t, http.StatusCreated)
//
// Players sign their actions as issue 31 asks: NewPlayer makes each one a key and binds it at
// sign-up, Register, Leave, Commit and Reveal sign what they send, and Signed gives the headers
// of a signed request that a test builds itself.
package apitest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gowebpki/jcs"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/crypto/blake2b"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/clock"
	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/internal/apiclient"
	"github.com/commitreveal/rps/internal/pgtest"
	"github.com/commitreveal/rps/logpublish"
	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
)

// options of Start.
type options struct {
	minTimeoutMs int64
	clock        bool
	config       func(*api.Config)
	wrap         func(http.Handler) http.Handler
	listener     func(net.Listener) net.Listener
	log          *logpublish.Config
	origin       string
	noLog        bool
	optionalKeys bool
}

// An Option adjusts Start.
type Option func(*options)

// WithClock runs the store's clock worker, so deadlines pass by themselves.
func WithClock() Option { return func(o *options) { o.clock = true } }

// WithLog runs the transparency log's sequencer (logpublish) with cfg (its Store is
// filled in; its Period defaults to 50 ms here), and lists its witnesses in GET /v1/log. Without
// it the log exists (players' signatures name its origin) but stays empty.
func WithLog(cfg logpublish.Config) Option {
	return func(o *options) { o.log = &cfg }
}

// WithOrigin creates the log (without WithLog: not running its sequencer) under origin rather
// than the default one, for tests that run a sequencer of their own on it.
func WithOrigin(origin string) Option { return func(o *options) { o.origin = origin } }

// WithOptionalKeys lets accounts without a key act unsigned (RPSD_PLAYER_KEYS=optional), for the
// tests of unsigned play; by default every player action must be signed, as rpsd's default is.
func WithOptionalKeys() Option { return func(o *options) { o.optionalKeys = true } }

// WithoutLog starts a server that keeps no transparency log, which rpsd never is: its log reads
// are 404, and players cannot sign (their messages name the log's origin).
func WithoutLog() Option { return func(o *options) { o.noLog = true } }

// WithMinTimeout sets the tournament's minimum stage timeout (100 ms by default here).
func WithMinTimeout(ms int64) Option { return func(o *options) { o.minTimeoutMs = ms } }

// WithConfig adjusts the api.Config before the server is built.
func WithConfig(f func(*api.Config)) Option { return func(o *options) { o.config = f } }

// WithHandler serves wrap(the server's handler) instead of the handler itself, to disturb the
// traffic (drop responses, for one) without touching the server.
func WithHandler(wrap func(http.Handler) http.Handler) Option {
	return func(o *options) { o.wrap = wrap }
}

// WithListener serves on wrap(the test server's listener), to shape its connections as rpsd's
// listener does, or as a test needs.
func WithListener(wrap func(net.Listener) net.Listener) Option {
	return func(o *options) { o.listener = wrap }
}

// Env is the subject (a real server and its store, pool and metrics) and the fixtures of one test.
type Env struct {
	t       testing.TB
	URL     string
	Pool    *pgxpool.Pool
	Store   *store.Store
	Server  *api.Server
	Metrics *api.Metrics
	// Admin is the bootstrap admin's bearer token.
	Admin string
	// Client talks to URL.
	Client *http.Client
	// Allow5xx turns off the "never a 5xx" check of Do, for the tests that provoke one.
	Allow5xx bool
	// shared is what every copy of the Env (For) shares.
	shared *envShared
}

// envShared is what an Env learns once and its copies share.
type envShared struct {
	mu sync.Mutex
	// origin is the transparency log's origin, read on first use.
	origin string
}

// Start serves a real api.Server (httptest) over a fresh, migrated database of its own and
// returns it with the bootstrap admin's token. Everything stops when the test ends.
func Start(t testing.TB, opts ...Option) *Env {
	t.Helper()
	o := options{minTimeoutMs: 100}
	for _, f := range opts {
		f(&o)
	}
	pool := pgtest.New(t)
	metrics := api.NewMetrics(pool)
	svc := tournament.NewService(tournament.Options{Rules: engine.Builtin(), MinTimeoutMs: o.minTimeoutMs, NewID: uuid.NewString, NewSalt: store.NewSalt,
		RequireKeys: !o.optionalKeys})
	st := store.New(pool, store.Options{Service: svc})
	t.Cleanup(st.Close)
	admin, _, err := st.EnsureAdmin(t.Context(), "")
	if err != nil {
		t.Fatalf("ensure admin: %v", err)
	}
	cfg := api.Config{Store: st, Metrics: metrics, Logger: slog.New(slog.DiscardHandler)}
	if o.log != nil {
		o.log.Store = st
		if o.log.Period == 0 {
			o.log.Period = 50 * time.Millisecond
		}
		seq, err := logpublish.New(t.Context(), *o.log)
		if err != nil {
			t.Fatalf("log sequencer: %v", err)
		}
		for _, w := range o.log.Witnesses {
			cfg.Witnesses = append(cfg.Witnesses, api.WitnessConfig{Name: w.Name(), VerifierKey: w.VerifierKey, URL: w.URL})
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- seq.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("log sequencer: %v", err)
			}
		})
	}
	if o.log == nil && !o.noLog {
		// The log exists, as rpsd creates it when it starts: its origin is part of every signed
		// message. Without WithLog nothing integrates events into it.
		if _, err := logpublish.New(t.Context(), logpublish.Config{Store: st, Origin: o.origin}); err != nil {
			t.Fatalf("create the log: %v", err)
		}
	}
	if o.config != nil {
		o.config(&cfg)
	}
	srv, err := api.NewServer(cfg)
	if err != nil {
		t.Fatalf("new server: %v", err)
	}
	handler := srv.Handler()
	if o.wrap != nil {
		handler = o.wrap(handler)
	}
	ts := httptest.NewUnstartedServer(handler)
	if o.listener != nil {
		ts.Listener = o.listener(ts.Listener)
	}
	ts.Start()
	t.Cleanup(func() {
		srv.Shutdown()
		ts.Close()
	})
	if o.clock {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		worker := clock.New(st, clock.Options{OnExpiry: metrics.ObserveExpiry})
		go func() { done <- worker.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("clock worker: %v", err)
			}
		})
	}
	return &Env{t: t, URL: ts.URL, Pool: pool, Store: st, Server: srv, Metrics: metrics, Admin: admin, Client: ts.Client(), shared: &envShared{}}
}

// For is e reporting to t, for a subtest.
func (e *Env) For(t testing.TB) *Env {
	c := *e
	c.t = t
	return &c
}

// Response is a response read whole.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	// Req names the request ("POST /v1/accounts"), for messages.
	Req string
}

// Decode unmarshals the body into v, failing the test when it does not parse.
func (r Response) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("%s: decode %T from %s: %v", r.Req, v, r.Body, err)
	}
}

// Want fails the test unless the status is want.
func (r Response) Want(t testing.TB, want int) Response {
	t.Helper()
	if r.Status != want {
		t.Fatalf("%s: status %d, want %d; body %s", r.Req, r.Status, want, r.Body)
	}
	return r
}

// Problem decodes a problem body.
func (r Response) Problem(t testing.TB) api.Problem {
	t.Helper()
	var p api.Problem
	r.Decode(t, &p)
	return p
}

// WantProblem fails unless the response is the problem of status and code.
func (r Response) WantProblem(t testing.TB, status int, code string) api.Problem {
	t.Helper()
	if r.Status != status {
		t.Fatalf("%s: status %d, want %d (%s); body %s", r.Req, r.Status, status, code, r.Body)
	}
	p := r.Problem(t)
	if p.Code != code {
		t.Fatalf("%s: code %q, want %q; body %s", r.Req, p.Code, code, r.Body)
	}
	return p
}

// NewRequest builds a request to the server. body is nil (no body), a []byte or string sent as
// it is, an io.Reader sent chunked, or a value sent as JSON; token ("" for none) goes in the
// Authorization header; headers are name, value pairs, set last.
func (e *Env) NewRequest(ctx context.Context, method, path, token string, body any, headers ...string) (*http.Request, error) {
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
			return nil, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.URL+path, rd)
	if err != nil {
		return nil, err
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
	return req, nil
}

// Request sends a request (see NewRequest) and reads its response whole, without touching t
// (safe in goroutines).
func (e *Env) Request(ctx context.Context, method, path, token string, body any, headers ...string) (Response, error) {
	req, err := e.NewRequest(ctx, method, path, token, body, headers...)
	if err != nil {
		return Response{}, err
	}
	res, err := e.Client.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return Response{}, err
	}
	return Response{Status: res.StatusCode, Header: res.Header, Body: raw, Req: method + " " + path}, nil
}

// Do sends a request (see Request) and checks what holds for every response: never a 5xx
// (unless allowed), and every error is an RFC 9457 problem with a consistent code.
func (e *Env) Do(method, path, token string, body any, headers ...string) Response {
	e.t.Helper()
	r, err := e.Request(e.t.Context(), method, path, token, body, headers...)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	CheckResponse(e.t, r, e.Allow5xx)
	return r
}

// CheckResponse checks the shape every response must have.
func CheckResponse(t testing.TB, r Response, allow5xx bool) {
	t.Helper()
	if r.Status >= 500 && !allow5xx {
		t.Errorf("%s: server error %d: %s", r.Req, r.Status, r.Body)
	}
	if r.Status < 400 || (r.Status == http.StatusServiceUnavailable && strings.HasPrefix(r.Req, "GET /readyz")) {
		// (readyz answers 503 with its Health document, as the spec says.)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("%s: error %d with Content-Type %q, want application/problem+json; body %s", r.Req, r.Status, ct, r.Body)
		return
	}
	var p api.Problem
	if err := json.Unmarshal(r.Body, &p); err != nil {
		t.Errorf("%s: problem body does not parse: %v: %s", r.Req, err, r.Body)
		return
	}
	if p.Code == "" || p.Title == "" || p.Type != "urn:rps:problem:"+p.Code || int(p.Status) != r.Status {
		t.Errorf("%s: inconsistent problem for status %d: %s", r.Req, r.Status, r.Body)
	}
	// A replayed outcome is the stored body, with the first request's id.
	replayed := r.Header.Get("Idempotent-Replayed") == "true"
	if p.RequestId == nil || *p.RequestId == "" || (!replayed && *p.RequestId != r.Header.Get("X-Request-Id")) {
		t.Errorf("%s: problem without the request id of X-Request-Id %q: %s", r.Req, r.Header.Get("X-Request-Id"), r.Body)
	}
}

// Player is a player account, its token and the key it signs its actions with (issue 31).
type Player struct {
	ID    string
	Name  string
	Token string
	// Key is the player's own key, bound at sign-up; the zero key for an unsigned player
	// (NewUnsignedPlayer).
	Key apiclient.PlayerKey
}

// NewPlayer signs up a player account named name, or name-2, name-3, ... when the server has an
// account of that name already (names are unique), with a key of its own made here and bound at
// sign-up (a signed sign_up), and, when funds > 0, has the admin credit it.
func (e *Env) NewPlayer(name string, funds int64) Player {
	e.t.Helper()
	return e.newPlayer(name, funds, apiclient.NewPlayerKey())
}

// NewUnsignedPlayer signs up a player without a key, as a client older than player keys does;
// only a server started WithOptionalKeys lets it play unsigned.
func (e *Env) NewUnsignedPlayer(name string, funds int64) Player {
	e.t.Helper()
	return e.newPlayer(name, funds, apiclient.PlayerKey{})
}

func (e *Env) newPlayer(name string, funds int64, key apiclient.PlayerKey) Player {
	e.t.Helper()
	var created api.AccountCreated
	for n := 1; ; n++ {
		tried := name
		if n > 1 {
			tried = fmt.Sprintf("%s-%d", name, n)
		}
		body := map[string]any{"name": tried}
		var headers []string
		if key.Valid() {
			body["publicKey"] = key.PublicKey()
			headers = e.sign(key, tournament.ActionMessage{Action: tournament.ActionSignUp,
				Payload: tournament.ActionPayload{Name: tried, PublicKey: key.PublicKey()}}, time.Time{})
		}
		r := e.Do("POST", "/v1/accounts", "", body, headers...)
		if r.Status == http.StatusConflict && r.Problem(e.t).Code == api.ProblemCodeNameTaken {
			continue
		}
		r.Want(e.t, http.StatusCreated).Decode(e.t, &created)
		break
	}
	p := Player{ID: created.Account.Id.String(), Name: created.Account.Name, Token: created.Token, Key: key}
	if funds > 0 {
		e.Do("POST", "/v1/admin/accounts/"+p.ID+"/credits", e.Admin, map[string]any{"amount": funds}).Want(e.t, http.StatusOK)
	}
	return p
}

// BindAdminKey gives the bootstrap admin a key, bound through POST /v1/me/keys (its first key,
// signed by itself), and returns the admin as a Player that signs with it. From then on every
// admin action must be signed (AdminSigned): sign players up and fund them before.
func (e *Env) BindAdminKey() Player {
	e.t.Helper()
	var me api.Account
	e.Do("GET", "/v1/me", e.Admin, nil).Want(e.t, http.StatusOK).Decode(e.t, &me)
	admin := Player{ID: me.Id.String(), Name: me.Name, Token: e.Admin, Key: apiclient.NewPlayerKey()}
	pub := admin.Key.PublicKey()
	e.Do("POST", "/v1/me/keys", e.Admin, map[string]any{"publicKey": pub},
		e.Signed(admin, Act{Action: tournament.ActionAddKey, Payload: tournament.ActionPayload{PublicKey: pub}})...).Want(e.t, http.StatusCreated)
	return admin
}

// AdminSigned returns the headers of admin's signed request for action on lobby or account
// ("": none) whose body, as sent, is body (nil: none): the Rps-* headers (with the lobby's
// current game, as read now, for a stop or a next config) and a fresh Idempotency-Key, as name,
// value pairs for Do.
func (e *Env) AdminSigned(admin Player, action tournament.ActionName, lobby, account string, body []byte) []string {
	e.t.Helper()
	var request []byte
	if body != nil {
		var err error
		if request, err = jcs.Transform(body); err != nil {
			e.t.Fatalf("canonical body: %v", err)
		}
	}
	m := tournament.AdminMessage("", action, tournament.AccountID(admin.ID), tournament.LobbyID(lobby), tournament.AccountID(account), request)
	m.IdempotencyKey = apiclient.NewKey()
	if tournament.AdminActionNamesGame(action) {
		if l := e.Lobby(lobby, admin.Token); l.Game != nil {
			m.GameID = tournament.GameID(l.Game.Id.String())
		}
	}
	return append([]string{"Idempotency-Key", m.IdempotencyKey}, e.sign(admin.Key, m, time.Time{})...)
}

// Origin is the transparency log's origin (GET /v1/log), which every signed message names.
func (e *Env) Origin() string {
	e.t.Helper()
	e.shared.mu.Lock()
	defer e.shared.mu.Unlock()
	if e.shared.origin == "" {
		var info api.LogInfo
		e.Do("GET", "/v1/log", "", nil).Want(e.t, http.StatusOK).Decode(e.t, &info)
		e.shared.origin = info.Origin
	}
	return e.shared.origin
}

// sign signs m with key at the instant at (the zero time: now), on this server's origin, and
// returns the Rps-* headers as name, value pairs.
func (e *Env) sign(key apiclient.PlayerKey, m tournament.ActionMessage, at time.Time) []string {
	e.t.Helper()
	m.Origin = e.Origin()
	if at.IsZero() {
		at = time.Now()
	}
	s, err := key.Sign(m, at)
	if err != nil {
		e.t.Fatalf("sign %s: %v", m.Action, err)
	}
	return s.Pairs()
}

// Act is a player's action as its signature names it, for Signed: where it plays (Game and
// Round as the caller read them, or chose them to test a refusal), what it does, and its
// Idempotency-Key.
type Act struct {
	Action  tournament.ActionName
	Lobby   string
	Game    string
	Round   int
	Payload tournament.ActionPayload
	// Key is the request's Idempotency-Key; Signed makes a fresh one when it is empty.
	Key string
	// At is the instant the player signs at; the zero time is now (a test of an expired
	// signature dates it in the past).
	At time.Time
}

// Signed returns the headers of p's signed request for a: the Rps-* headers and the
// Idempotency-Key the signature covers, as name, value pairs for Do and Request. An unsigned
// player (NewUnsignedPlayer) gets the Idempotency-Key alone.
func (e *Env) Signed(p Player, a Act) []string {
	e.t.Helper()
	if a.Key == "" {
		a.Key = apiclient.NewKey()
	}
	headers := []string{"Idempotency-Key", a.Key}
	if !p.Key.Valid() {
		return headers
	}
	return append(headers, e.sign(p.Key, tournament.ActionMessage{Action: a.Action, Player: tournament.AccountID(p.ID),
		LobbyID: tournament.LobbyID(a.Lobby), GameID: tournament.GameID(a.Game), Round: a.Round, Payload: a.Payload,
		IdempotencyKey: a.Key}, a.At)...)
}

// Current is the Act of action in the lobby's current game and round as p reads them now (the
// register's payload is the game's bet); the caller adds the payload of a commit or a reveal.
func (e *Env) Current(lobby string, p Player, action tournament.ActionName) Act {
	e.t.Helper()
	l := e.Lobby(lobby, p.Token)
	a := Act{Action: action, Lobby: lobby}
	if l.Game != nil {
		a.Game = l.Game.Id.String()
		switch action {
		case tournament.ActionRegister:
			a.Payload.Bet = l.Config.BetSize
		case tournament.ActionCommit, tournament.ActionReveal:
			a.Round = int(l.Game.Round)
		}
	}
	return a
}

// CreateLobby has the admin create a lobby with cfg (a GameConfigInput as a map).
func (e *Env) CreateLobby(cfg map[string]any) api.Lobby {
	e.t.Helper()
	var l api.Lobby
	e.Do("POST", "/v1/lobbies", e.Admin, map[string]any{"name": "lobby " + e.t.Name(), "config": cfg}).Want(e.t, http.StatusCreated).Decode(e.t, &l)
	if l.Game == nil {
		e.t.Fatalf("new lobby without a game: %+v", l)
	}
	return l
}

// Lobby reads a lobby as the caller of token ("" for anonymous).
func (e *Env) Lobby(id, token string) api.Lobby {
	e.t.Helper()
	var l api.Lobby
	e.Do("GET", "/v1/lobbies/"+id, token, nil).Want(e.t, http.StatusOK).Decode(e.t, &l)
	return l
}

// Balance reads a player's balance through GET /v1/me.
func (e *Env) Balance(token string) int64 {
	e.t.Helper()
	var a api.Account
	e.Do("GET", "/v1/me", token, nil).Want(e.t, http.StatusOK).Decode(e.t, &a)
	return a.Balance
}

// Ledger reads the admin's ledger report.
func (e *Env) Ledger() api.LedgerReport {
	e.t.Helper()
	var r api.LedgerReport
	e.Do("GET", "/v1/admin/ledger", e.Admin, nil).Want(e.t, http.StatusOK).Decode(e.t, &r)
	return r
}

// Register registers p in the lobby's current game, signed.
func (e *Env) Register(lobby string, p Player) Response {
	e.t.Helper()
	return e.Do("POST", "/v1/lobbies/"+lobby+"/players", p.Token, nil, e.Signed(p, e.Current(lobby, p, tournament.ActionRegister))...)
}

// Leave takes p out of the lobby's current game, signed.
func (e *Env) Leave(lobby string, p Player) Response {
	e.t.Helper()
	return e.Do("DELETE", "/v1/lobbies/"+lobby+"/players/me", p.Token, nil, e.Signed(p, e.Current(lobby, p, tournament.ActionLeave))...)
}

// Commit sends p's commitment to reveal in the lobby's current round, signed.
func (e *Env) Commit(lobby string, p Player, reveal string) Response {
	e.t.Helper()
	a := e.Current(lobby, p, tournament.ActionCommit)
	return e.CommitIn(lobby, a.Game, a.Round, p, reveal)
}

// CommitIn sends p's commitment to reveal, signed for the game and round given (no read of the
// lobby first: for a test whose stage is short).
func (e *Env) CommitIn(lobby, game string, round int, p Player, reveal string) Response {
	e.t.Helper()
	a := Act{Action: tournament.ActionCommit, Lobby: lobby, Game: game, Round: round, Payload: tournament.ActionPayload{Commitment: CommitmentOf(reveal)}}
	return e.Do("POST", "/v1/lobbies/"+lobby+"/commitments", p.Token, map[string]any{"commitment": a.Payload.Commitment}, e.Signed(p, a)...)
}

// Reveal sends p's reveal in the lobby's current round, signed.
func (e *Env) Reveal(lobby string, p Player, reveal string) Response {
	e.t.Helper()
	a := e.Current(lobby, p, tournament.ActionReveal)
	a.Payload.Reveal = reveal
	return e.Do("POST", "/v1/lobbies/"+lobby+"/reveals", p.Token, map[string]any{"reveal": reveal}, e.Signed(p, a)...)
}

// QuickJoin has p quick-join a game of betSize (and ruleset, "" for any), signed, under the
// Idempotency-Key key ("" for a fresh one).
func (e *Env) QuickJoin(p Player, betSize int64, ruleset, key string) Response {
	e.t.Helper()
	body := map[string]any{"betSize": betSize}
	if ruleset != "" {
		body["ruleset"] = ruleset
	}
	return e.Do("POST", "/v1/matchmaking", p.Token, body, e.Signed(p, QuickJoinAct(betSize, ruleset, key))...)
}

// QuickJoinAct is the Act of a quick join (see QuickJoin), for Signed.
func QuickJoinAct(betSize int64, ruleset, key string) Act {
	return Act{Action: tournament.ActionQuickJoin, Payload: tournament.ActionPayload{BetSize: betSize, Ruleset: ruleset}, Key: key}
}

// CommitmentOf is the commitment of a reveal string, in lower-case hex.
func CommitmentOf(reveal string) string { return engine.Commit(reveal).String() }

// Events reads one page of a lobby's events.
func (e *Env) Events(lobby string, after int64) api.EventPage {
	e.t.Helper()
	var page api.EventPage
	e.Do("GET", fmt.Sprintf("/v1/lobbies/%s/events?after=%d&limit=1000", lobby, after), "", nil).Want(e.t, http.StatusOK).Decode(e.t, &page)
	return page
}

// AllEvents reads a lobby's whole log.
func (e *Env) AllEvents(lobby string) []api.Event {
	e.t.Helper()
	var out []api.Event
	var after int64
	for {
		page := e.Events(lobby, after)
		if len(page.Events) == 0 {
			return out
		}
		out = append(out, page.Events...)
		after = page.Next
	}
}

// WaitEvent long-polls the events endpoint after seq `after` until an event matching match
// arrives, and returns it with every event read on the way (matching one included). No fixed
// sleeps: each poll returns as soon as an event is appended.
func (e *Env) WaitEvent(lobby string, after int64, within time.Duration, match func(api.Event) bool) (api.Event, []api.Event) {
	e.t.Helper()
	deadline := time.Now().Add(within)
	var seen []api.Event
	for time.Now().Before(deadline) {
		var page api.EventPage
		e.Do("GET", fmt.Sprintf("/v1/lobbies/%s/events?after=%d&wait=1", lobby, after), "", nil).Want(e.t, http.StatusOK).Decode(e.t, &page)
		for _, ev := range page.Events {
			seen = append(seen, ev)
			if match(ev) {
				return ev, seen
			}
		}
		after = page.Next
	}
	e.t.Fatalf("no matching event in lobby %s within %v; saw %s", lobby, within, EventTypes(seen))
	return api.Event{}, nil
}

// OfType matches events of a type.
func OfType(typ string) func(api.Event) bool {
	return func(ev api.Event) bool { return ev.Type == typ }
}

// EventTypes lists events as "seq:type ...", for messages.
func EventTypes(evs []api.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "%d:%s ", ev.Seq, ev.Type)
	}
	return b.String()
}

// EventData decodes an event's data into a map.
func EventData(t testing.TB, ev api.Event) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(ev.Data, &m); err != nil {
		t.Fatalf("event %d data %s: %v", ev.Seq, ev.Data, err)
	}
	return m
}

// VerifyChain recomputes the hash chain of a lobby's events from the served JSON alone, as a
// third party would: hash = blake2b-256(prevHash || RFC 8785 canonical {seq, type, lobbyId,
// gameId, at, data}), prevHash of seq 1 being 32 zero bytes. It also checks the chain against
// tournament.ChainHash. The events must start at seq first and be consecutive.
func VerifyChain(t testing.TB, evs []api.Event, first int64, prev string) {
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
			"data": ev.Data,
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
		le := tournament.LoggedEvent{Seq: ev.Seq, Type: tournament.EventType(ev.Type), LobbyID: tournament.LobbyID(ev.LobbyId.String()), At: at.UnixMilli(), Data: ev.Data}
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

// ---- Event streams

// Message is one message of an event stream.
type Message struct {
	ID, Event, Data string
	// Received is when the message's blank line arrived.
	Received time.Time
}

// Stream reads an event stream in the background.
type Stream struct {
	Status   int
	Header   http.Header
	Messages chan Message
	cancel   context.CancelFunc
	done     chan struct{}

	mu       sync.Mutex
	raw      bytes.Buffer
	comments int
	// heads are the signed heads the stream sent after its batches, kept apart from Messages.
	heads []api.SignedHead
	err   error
}

// OpenStream opens GET /v1/lobbies/{lobby}/events/stream; query is added to the URL. It returns
// once the response's headers have arrived. For a non-200 answer the body is in Raw.
func (e *Env) OpenStream(lobby, token, query string, headers ...string) *Stream {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	path := "/v1/lobbies/" + lobby + "/events/stream"
	if query != "" {
		path += "?" + query
	}
	req, err := e.NewRequest(ctx, http.MethodGet, path, token, nil, append([]string{"Accept", "text/event-stream"}, headers...)...)
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	res, err := e.Client.Do(req)
	if err != nil {
		cancel()
		e.t.Fatalf("open stream: %v", err)
	}
	s := &Stream{Status: res.StatusCode, Header: res.Header, Messages: make(chan Message, 1024), cancel: cancel, done: make(chan struct{})}
	e.t.Cleanup(s.Close)
	if res.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		s.raw.Write(raw)
		close(s.Messages)
		close(s.done)
		return s
	}
	go s.read(res.Body)
	return s
}

func (s *Stream) read(body io.ReadCloser) {
	defer close(s.done)
	defer close(s.Messages)
	defer body.Close()
	r := bufio.NewReader(body)
	var cur Message
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
			if cur.Event == "head" {
				var h api.SignedHead
				_ = json.Unmarshal([]byte(strings.Join(dataLines, "\n")), &h)
				s.mu.Lock()
				s.heads = append(s.heads, h)
				s.mu.Unlock()
			} else if cur.ID != "" || len(dataLines) > 0 || cur.Event != "" {
				cur.Data = strings.Join(dataLines, "\n")
				cur.Received = time.Now()
				s.Messages <- cur
			}
			cur, dataLines = Message{}, nil
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
func (s *Stream) Close() {
	s.cancel()
	<-s.done
}

// Done is closed when the stream has ended and its reader stopped.
func (s *Stream) Done() <-chan struct{} { return s.done }

// Raw is every byte received so far.
func (s *Stream) Raw() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.raw.Bytes())
}

// Heads are the signed heads received so far.
func (s *Stream) Heads() []api.SignedHead {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.heads)
}

// Comments counts the comment lines received (the greeting and heartbeats).
func (s *Stream) Comments() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.comments
}

// Next returns the next message, failing the test after within.
func (s *Stream) Next(t testing.TB, within time.Duration) Message {
	t.Helper()
	select {
	case ev, ok := <-s.Messages:
		if !ok {
			t.Fatalf("event stream ended: %v", s.err)
		}
		return ev
	case <-time.After(within):
		t.Fatalf("no event on the stream within %v", within)
	}
	return Message{}
}

// Until reads messages up to and including seq.
func (s *Stream) Until(t testing.TB, seq int64, within time.Duration) []Message {
	t.Helper()
	var out []Message
	deadline := time.Now().Add(within)
	for {
		ev := s.Next(t, time.Until(deadline))
		out = append(out, ev)
		if ev.ID == fmt.Sprint(seq) {
			return out
		}
	}
}

// DecodeSSE parses the data of stream messages as Events, checking id and event against them.
func DecodeSSE(t testing.TB, msgs []Message) []api.Event {
	t.Helper()
	out := make([]api.Event, 0, len(msgs))
	for _, m := range msgs {
		var ev api.Event
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

// RandomID is a well-formed id nobody has.
func RandomID() string { return uuid.NewString() }

// Query builds a query string.
func Query(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v.Encode()
}

// JSONOf renders v as JSON for messages.
func JSONOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}
