package bot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/internal/apiclient"
	"github.com/commitreveal/rps/tournament"
	"github.com/commitreveal/rps/tournament/memstore"
)

// fakeServer serves the part of the public API the bots use, over the real game rules
// (tournament.Service on the in-memory reference store), so that the bots are tested against
// the true state machine without Postgres. It runs its own clock worker, keeps idempotency keys
// like the real server, and can drop responses to exercise the bots' retries.
type fakeServer struct {
	t     *testing.T
	svc   *tournament.Service
	store *memstore.Store
	srv   *httptest.Server
	admin string

	mu      sync.Mutex
	tokens  map[string]tournament.Account
	lobbies []tournament.LobbyID
	keys    map[string]storedResponse
	changed chan struct{} // closed and replaced after every change, for long polls

	// dropEvery > 0 drops the response of every dropEvery-th mutating request after applying it,
	// as a network failure after the server committed would.
	dropEvery int64
	mutations atomic.Int64
	dropped   atomic.Int64
}

type storedResponse struct {
	status int
	body   []byte
}

const fakeAdminToken = "fake-admin-token"

func newFakeServer(t *testing.T) *fakeServer {
	t.Helper()
	f := &fakeServer{
		t:       t,
		svc:     tournament.NewService(tournament.Options{Rules: engine.Builtin(), MinTimeoutMs: 10, NewID: uuid.NewString}),
		store:   memstore.New(),
		admin:   fakeAdminToken,
		tokens:  map[string]tournament.Account{},
		keys:    map[string]storedResponse{},
		changed: make(chan struct{}),
	}
	adminID := tournament.AccountID(uuid.NewString())
	if err := f.store.CreateAccount(context.Background(), adminID, "admin", tournament.RoleAdmin, 0); err != nil {
		t.Fatal(err)
	}
	f.tokens[fakeAdminToken] = tournament.Account{ID: adminID, Name: "admin", Role: tournament.RoleAdmin}

	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/accounts", f.createAccount)
	mux.HandleFunc("POST /v1/admin/accounts/{id}/credits", f.mutate(f.credit))
	mux.HandleFunc("GET /v1/admin/ledger", f.ledger)
	mux.HandleFunc("GET /v1/me", f.me)
	mux.HandleFunc("POST /v1/lobbies", f.mutate(f.createLobby))
	mux.HandleFunc("GET /v1/lobbies/{id}", f.getLobby)
	mux.HandleFunc("POST /v1/lobbies/{id}/close", f.mutate(f.lobbyAction(func(ctx context.Context, tx tournament.Tx, now int64, a tournament.Actor, l tournament.LobbyID, _ []byte) error {
		return f.svc.CloseLobby(ctx, tx, now, a, l)
	})))
	mux.HandleFunc("POST /v1/lobbies/{id}/stop", f.mutate(f.lobbyAction(func(ctx context.Context, tx tournament.Tx, now int64, a tournament.Actor, l tournament.LobbyID, body []byte) error {
		var req apiclient.StopGameRequest
		_ = json.Unmarshal(body, &req)
		return f.svc.Stop(ctx, tx, now, a, l, req.Reason)
	})))
	mux.HandleFunc("POST /v1/lobbies/{id}/players", f.mutate(f.lobbyAction(func(ctx context.Context, tx tournament.Tx, now int64, a tournament.Actor, l tournament.LobbyID, _ []byte) error {
		return f.svc.Register(ctx, tx, now, a, l)
	})))
	mux.HandleFunc("DELETE /v1/lobbies/{id}/players/me", f.mutate(f.lobbyAction(func(ctx context.Context, tx tournament.Tx, now int64, a tournament.Actor, l tournament.LobbyID, _ []byte) error {
		return f.svc.Leave(ctx, tx, now, a, l)
	})))
	mux.HandleFunc("POST /v1/lobbies/{id}/commitments", f.mutate(f.lobbyAction(func(ctx context.Context, tx tournament.Tx, now int64, a tournament.Actor, l tournament.LobbyID, body []byte) error {
		var req apiclient.CommitRequest
		_ = json.Unmarshal(body, &req)
		c, err := engine.ParseCommitment(req.Commitment)
		if err != nil {
			return &tournament.Error{Code: tournament.CodeValidationFailed, Field: "commitment", Message: err.Error()}
		}
		return f.svc.Commit(ctx, tx, now, a, l, c)
	})))
	mux.HandleFunc("POST /v1/lobbies/{id}/reveals", f.mutate(f.lobbyAction(func(ctx context.Context, tx tournament.Tx, now int64, a tournament.Actor, l tournament.LobbyID, body []byte) error {
		var req apiclient.RevealRequest
		_ = json.Unmarshal(body, &req)
		return f.svc.Reveal(ctx, tx, now, a, l, req.Reveal)
	})))
	mux.HandleFunc("GET /v1/lobbies/{id}/events", f.events)
	mux.HandleFunc("GET /v1/games/{id}", f.game)
	mux.HandleFunc("GET /v1/games/{id}/players", f.players)
	mux.HandleFunc("GET /v1/games/{id}/rounds/{round}", f.roundTranscript)
	f.srv = httptest.NewServer(mux)

	ctx, cancel := context.WithCancel(context.Background())
	var clock sync.WaitGroup
	clock.Go(func() { f.runClock(ctx) })
	t.Cleanup(func() {
		cancel()
		clock.Wait()
		f.srv.Close()
	})
	return f
}

func now() int64 { return time.Now().UnixMilli() }

// do runs fn as one transaction and wakes the long polls.
func (f *fakeServer) do(fn func(tx tournament.Tx) error) error {
	err := f.store.Do(context.Background(), fn)
	f.mu.Lock()
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
	return err
}

// runClock is the clock worker: it applies every lobby's due expiries every few milliseconds.
func (f *fakeServer) runClock(ctx context.Context) {
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f.mu.Lock()
		lobbies := append([]tournament.LobbyID(nil), f.lobbies...)
		f.mu.Unlock()
		for _, l := range lobbies {
			var changed bool
			err := f.store.Do(ctx, func(tx tournament.Tx) error {
				var err error
				changed, err = f.svc.Expire(ctx, tx, now(), l)
				return err
			})
			if err != nil {
				f.t.Errorf("clock: %v", err)
				return
			}
			if changed {
				_ = f.do(func(tournament.Tx) error { return nil })
			}
		}
	}
}

func (f *fakeServer) caller(r *http.Request) (tournament.Account, bool) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return tournament.Account{}, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.tokens[token]
	return a, ok
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

var statusOf = map[tournament.Code]int{
	tournament.CodeNotFound: 404, tournament.CodeForbidden: 403, tournament.CodeValidationFailed: 400,
	tournament.CodeCommitmentMismatch: 422, tournament.CodeInvalidMove: 422,
}

// problem renders an error as the API does and returns its status and body.
func problem(err error) (int, []byte) {
	code, status := "internal", 500
	if e, ok := tournament.IsRefusal(err); ok {
		code, status = string(e.Code), 409
		if s, ok := statusOf[e.Code]; ok {
			status = s
		}
	}
	detail := err.Error()
	body, _ := json.Marshal(apiclient.Problem{Type: "urn:rps:problem:" + code, Title: code, Status: int32(status),
		Code: apiclient.ProblemCode(code), Detail: &detail})
	return status, body
}

// handler is a mutating operation: it returns the status and body to send.
type handler func(r *http.Request, a tournament.Account, body []byte) (int, []byte)

// mutate authenticates, applies the Idempotency-Key (replaying stored outcomes, storing all but
// 400 and 5xx) and drops responses when told to.
func (f *fakeServer) mutate(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a, ok := f.caller(r)
		if !ok {
			_, body := problem(&tournament.Error{Code: "unauthorized", Message: "no token"})
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write(body)
			return
		}
		body, _ := io.ReadAll(r.Body)
		key := r.Header.Get("Idempotency-Key")
		scope := string(a.ID) + " " + r.Method + " " + r.Pattern + " " + r.PathValue("id") + " " + key + " " + string(body)
		f.mu.Lock()
		stored, replay := f.keys[scope]
		f.mu.Unlock()
		status, out := stored.status, stored.body
		if !replay {
			status, out = h(r, a, body)
			if key != "" && status != 400 && status < 500 {
				f.mu.Lock()
				f.keys[scope] = storedResponse{status, out}
				f.mu.Unlock()
			}
		}
		if n := f.mutations.Add(1); f.dropEvery > 0 && n%f.dropEvery == 0 {
			f.dropped.Add(1)
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(out)
	}
}

func (f *fakeServer) createAccount(w http.ResponseWriter, r *http.Request) {
	var req apiclient.CreateAccountRequest
	_ = json.NewDecoder(r.Body).Decode(&req)
	id := tournament.AccountID(uuid.NewString())
	if err := f.store.CreateAccount(r.Context(), id, req.Name, tournament.RolePlayer, 0); err != nil {
		f.t.Errorf("create account: %v", err)
	}
	var b [32]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	f.mu.Lock()
	f.tokens[token] = tournament.Account{ID: id, Name: req.Name, Role: tournament.RolePlayer}
	f.mu.Unlock()
	writeJSON(w, 201, apiclient.AccountCreated{Account: f.account(id), Token: token})
}

func (f *fakeServer) account(id tournament.AccountID) apiclient.Account {
	bal, _ := f.store.Balance(context.Background(), id)
	return apiclient.Account{Id: uuid.MustParse(string(id)), Balance: bal, Role: apiclient.Player}
}

func (f *fakeServer) credit(r *http.Request, a tournament.Account, body []byte) (int, []byte) {
	var req apiclient.MoneyTransferRequest
	_ = json.Unmarshal(body, &req)
	id := tournament.AccountID(r.PathValue("id"))
	err := f.do(func(tx tournament.Tx) error {
		_, err := f.svc.Credit(r.Context(), tx, now(), tournament.Actor{ID: a.ID, Role: a.Role}, id, req.Amount)
		return err
	})
	if err != nil {
		return problem(err)
	}
	out, _ := json.Marshal(f.account(id))
	return 200, out
}

func (f *fakeServer) me(w http.ResponseWriter, r *http.Request) {
	a, ok := f.caller(r)
	if !ok {
		w.WriteHeader(401)
		return
	}
	writeJSON(w, 200, f.account(a.ID))
}

func (f *fakeServer) ledger(w http.ResponseWriter, r *http.Request) {
	rep, err := f.store.Ledger(r.Context())
	if err != nil {
		f.t.Errorf("ledger: %v", err)
	}
	writeJSON(w, 200, apiclient.LedgerReport{Treasury: rep.Treasury, PlayerBalances: rep.PlayerBalances, Escrows: rep.Escrows,
		EntriesSum: rep.EntriesSum, Ok: rep.OK(), Invariants: apiclient.LedgerInvariants{
			EntriesSumToZero: rep.EntriesSumToZero, BalancesMatchEntries: rep.BalancesMatchEntries,
			NoNegativeBalance: rep.NoNegativeBalance, ClosedEscrowsZero: rep.ClosedEscrowsZero}})
}

func (f *fakeServer) createLobby(r *http.Request, a tournament.Account, body []byte) (int, []byte) {
	var req apiclient.CreateLobbyRequest
	_ = json.Unmarshal(body, &req)
	cfg := tournament.DefaultConfig()
	in := req.Config
	cfg.BetSize, cfg.PlayersCountLimit = in.BetSize, int(in.PlayersCountLimit)
	set := func(dst *int64, src *int64) {
		if src != nil {
			*dst = *src
		}
	}
	set(&cfg.EntryTimeoutMs, in.EntryTimeoutMs)
	set(&cfg.MoveTimeoutMs, in.MoveTimeoutMs)
	set(&cfg.RevealTimeoutMs, in.RevealTimeoutMs)
	if in.Ruleset != nil {
		cfg.Ruleset = *in.Ruleset
	}
	if in.Resolution != nil {
		cfg.Resolution = engine.Resolution(*in.Resolution)
	}
	if in.StartWhenFull != nil {
		cfg.StartWhenFull = *in.StartWhenFull
	}
	if in.MaxExtensions != nil {
		cfg.MaxExtensions = int(*in.MaxExtensions)
	}
	if in.MaxRounds != nil {
		cfg.MaxRounds = int(*in.MaxRounds)
	}
	var id tournament.LobbyID
	err := f.do(func(tx tournament.Tx) error {
		var err error
		id, err = f.svc.CreateLobby(r.Context(), tx, now(), tournament.Actor{ID: a.ID, Role: a.Role}, req.Name, cfg)
		return err
	})
	if err != nil {
		return problem(err)
	}
	f.mu.Lock()
	f.lobbies = append(f.lobbies, id)
	f.mu.Unlock()
	out, _ := json.Marshal(f.lobbyView(id))
	return 201, out
}

type lobbyFunc func(ctx context.Context, tx tournament.Tx, now int64, a tournament.Actor, l tournament.LobbyID, body []byte) error

func (f *fakeServer) lobbyAction(fn lobbyFunc) handler {
	return func(r *http.Request, a tournament.Account, body []byte) (int, []byte) {
		id := tournament.LobbyID(r.PathValue("id"))
		err := f.do(func(tx tournament.Tx) error {
			return fn(r.Context(), tx, now(), tournament.Actor{ID: a.ID, Role: a.Role}, id, body)
		})
		if err != nil {
			return problem(err)
		}
		status := 200
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/players") {
			status = 201
		}
		out, _ := json.Marshal(f.lobbyView(id))
		return status, out
	}
}

func (f *fakeServer) lobbyView(id tournament.LobbyID) apiclient.Lobby {
	ctx := context.Background()
	l, err := f.store.Lobby(ctx, id)
	if err != nil {
		f.t.Errorf("lobby %s: %v", id, err)
		return apiclient.Lobby{}
	}
	g, err := f.store.Game(ctx, l.GameID)
	if err != nil {
		f.t.Errorf("game %s: %v", l.GameID, err)
	}
	view := apiclient.Lobby{Id: uuid.MustParse(string(id)), Name: l.Name, Closed: l.Closed, ServerTime: now(),
		Config: apiclient.GameConfig{BetSize: l.Config.BetSize, PlayersCountLimit: int32(l.Config.PlayersCountLimit),
			Ruleset: l.Config.Ruleset, Resolution: apiclient.Resolution(l.Config.Resolution)},
		Game: &apiclient.GameState{Id: uuid.MustParse(string(g.ID)), Number: int32(g.Number), Stage: apiclient.Stage(g.Stage),
			Round: int32(g.Round), Players: int32(g.Players), Remaining: int32(g.Active), Pot: g.Escrow}}
	return view
}

func (f *fakeServer) getLobby(w http.ResponseWriter, r *http.Request) {
	id := tournament.LobbyID(r.PathValue("id"))
	if _, err := f.store.Lobby(r.Context(), id); err != nil {
		status, body := problem(&tournament.Error{Code: tournament.CodeNotFound, Message: "no such lobby"})
		w.WriteHeader(status)
		_, _ = w.Write(body)
		return
	}
	_ = f.do(func(tx tournament.Tx) error {
		_, err := f.svc.Expire(r.Context(), tx, now(), id)
		return err
	})
	writeJSON(w, 200, f.lobbyView(id))
}

func (f *fakeServer) events(w http.ResponseWriter, r *http.Request) {
	id := tournament.LobbyID(r.PathValue("id"))
	after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
	wait, _ := strconv.Atoi(r.URL.Query().Get("wait"))
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	if limit <= 0 {
		limit = 100
	}
	deadline := time.After(time.Duration(wait) * time.Second)
	for {
		f.mu.Lock()
		changed := f.changed
		f.mu.Unlock()
		all, _ := f.store.Events(r.Context(), id)
		page := apiclient.EventPage{Events: []apiclient.Event{}, Next: after}
		for _, e := range all {
			if e.Seq > after && len(page.Events) < limit {
				ev := apiclient.Event{Seq: e.Seq, Type: string(e.Type), LobbyId: uuid.MustParse(string(e.LobbyID)),
					At: tournament.FormatTime(e.At), Data: e.Data, PrevHash: hex.EncodeToString(e.PrevHash[:]), Hash: hex.EncodeToString(e.Hash[:])}
				if e.GameID != "" {
					gid := uuid.MustParse(string(e.GameID))
					ev.GameId = &gid
				}
				page.Events = append(page.Events, ev)
				page.Next = e.Seq
			}
		}
		if len(page.Events) > 0 || wait == 0 {
			writeJSON(w, 200, page)
			return
		}
		select {
		case <-changed:
		case <-deadline:
			wait = 0
		case <-r.Context().Done():
			return
		}
	}
}

func (f *fakeServer) game(w http.ResponseWriter, r *http.Request) {
	g, err := f.store.Game(r.Context(), tournament.GameID(r.PathValue("id")))
	if err != nil {
		w.WriteHeader(404)
		return
	}
	s := apiclient.GameSummary{Id: uuid.MustParse(string(g.ID)), Number: int32(g.Number), Stage: apiclient.Stage(g.Stage),
		Round: int32(g.Round), Players: int32(g.Players), Payout: g.Payout}
	if g.Winner != "" {
		win := uuid.MustParse(string(g.Winner))
		s.Winner = &win
	}
	if g.StopReason != "" {
		s.StopReason = &g.StopReason
	}
	writeJSON(w, 200, s)
}

func (f *fakeServer) players(w http.ResponseWriter, r *http.Request) {
	game := tournament.GameID(r.PathValue("id"))
	ps, _ := f.store.Players(r.Context(), game)
	g, _ := f.store.Game(r.Context(), game)
	page := apiclient.GamePlayerPage{Players: []apiclient.GamePlayer{}}
	for _, p := range ps {
		gp := apiclient.GamePlayer{AccountId: uuid.MustParse(string(p.AccountID)), Order: int32(p.Order), Status: apiclient.Active}
		f.mu.Lock()
		for _, a := range f.tokens {
			if a.ID == p.AccountID {
				gp.Name = a.Name
			}
		}
		f.mu.Unlock()
		switch {
		case p.AccountID == g.Winner:
			gp.Status = apiclient.Winner
		case !p.Active:
			gp.Status = apiclient.Eliminated
			r := int32(p.EliminatedRound)
			gp.EliminatedInRound = &r
		}
		page.Players = append(page.Players, gp)
	}
	writeJSON(w, 200, page)
}

func (f *fakeServer) roundTranscript(w http.ResponseWriter, r *http.Request) {
	round, _ := strconv.Atoi(r.PathValue("round"))
	moves, _ := f.store.Moves(r.Context(), tournament.GameID(r.PathValue("id")), round)
	t := apiclient.RoundTranscript{Round: int32(round), Moves: []apiclient.RoundMove{}}
	for _, m := range moves {
		mv := int32(m.Move)
		t.Moves = append(t.Moves, apiclient.RoundMove{AccountId: uuid.MustParse(string(m.AccountID)), Committed: true, Revealed: m.Revealed, Move: &mv})
	}
	writeJSON(w, 200, t)
}

// ledgerOK asserts the books balance and no game holds money.
func (f *fakeServer) ledgerOK(t *testing.T) tournament.LedgerReport {
	t.Helper()
	rep, err := f.store.Ledger(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Errorf("ledger invariants broken: %+v", rep)
	}
	return rep
}

func (f *fakeServer) lobbyIDs() []tournament.LobbyID {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]tournament.LobbyID(nil), f.lobbies...)
}

var errNoLobby = errors.New("no lobby")

func (f *fakeServer) onlyLobby() (tournament.Lobby, tournament.Game, error) {
	ids := f.lobbyIDs()
	if len(ids) != 1 {
		return tournament.Lobby{}, tournament.Game{}, fmt.Errorf("%w: %d lobbies", errNoLobby, len(ids))
	}
	l, err := f.store.Lobby(context.Background(), ids[0])
	if err != nil {
		return l, tournament.Game{}, err
	}
	g, err := f.store.Game(context.Background(), l.GameID)
	return l, g, err
}
