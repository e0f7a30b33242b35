package tournamenttest

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"

	"golang.org/x/crypto/blake2b"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/tournament"
)

// TB is the part of *testing.T (and of *rapid.T) the harness uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
}

// The scenarios' constants, as in Gear's tests: every timeout is the server's minimum.
const (
	// Start is the fake clock's first instant (Unix ms).
	Start int64 = 1_700_000_000_000
	// Timeout is every stage's timeout and the server's minimum.
	Timeout int64 = 5000
	// Bet is the default bet B.
	Bet int64 = 1000
	// Funds is each player's starting balance.
	Funds int64 = 10 * Bet
	// NumPlayers is how many player accounts a harness creates (p1..p6).
	NumPlayers = 6
)

// The RPSLS moves.
const (
	Rock     engine.Move = 0
	Paper    engine.Move = 1
	Scissors engine.Move = 2
	Lizard   engine.Move = 3
	Spock    engine.Move = 4
)

// Password is the password Gear's tests use for every move, so that equal moves give equal
// commitments.
const Password = "pass12"

// idSeq numbers every id the suite makes, so ids are unique across the subtests of a process
// (and valid UUIDs, since Postgres stores them as uuid). Within one harness they grow in creation
// order, so bytewise id order is creation order.
var idSeq atomic.Int64

// NewID returns a fresh id in UUID form for lobbies and games.
func NewID() string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", idSeq.Add(1)) }

// NewSalt is the suite's salt source: made up from the game and round (never zero), so that
// every implementation run on the same operations writes the same log.
func NewSalt(game tournament.GameID, round int) tournament.Salt {
	return blake2b.Sum256(fmt.Appendf(nil, "test salt of game %s round %d", game, round))
}

func newAccountID() tournament.AccountID {
	return tournament.AccountID(fmt.Sprintf("00000000-0000-4000-9000-%012d", idSeq.Add(1)))
}

// harness drives one backend with a fake clock, an admin and a few players.
type harness struct {
	t   TB
	ctx context.Context
	b   Backend
	svc *tournament.Service
	now int64

	admin tournament.Actor
	// p[1..NumPlayers] are the players; p[0] is unused so the story reads p1, p2, ...
	p []tournament.Actor

	// lobby is the lobby the helpers act on; lobbies lists every lobby the harness created.
	lobby   tournament.LobbyID
	lobbies []tournament.LobbyID
	// accounts and credited let verify check that money is conserved.
	accounts []tournament.AccountID
	credited int64
	// secrets maps a player to the reveal string of their last commitment.
	secrets map[tournament.AccountID]string
}

func newHarness(t TB, b Backend) *harness {
	t.Helper()
	h := &harness{
		t:       t,
		ctx:     context.Background(),
		b:       b,
		svc:     tournament.NewService(tournament.Options{Rules: engine.Builtin(), MinTimeoutMs: Timeout, NewID: NewID, NewSalt: NewSalt}),
		now:     Start,
		secrets: map[tournament.AccountID]string{},
	}
	h.admin = h.newAccount("admin", tournament.RoleAdmin, 0)
	h.p = []tournament.Actor{{}}
	for i := 1; i <= NumPlayers; i++ {
		h.p = append(h.p, h.newAccount(fmt.Sprintf("p%d", i), tournament.RolePlayer, Funds))
	}
	return h
}

// newAccount creates an account with a balance.
func (h *harness) newAccount(name string, role tournament.Role, balance int64) tournament.Actor {
	h.t.Helper()
	id := newAccountID()
	// Names are unique in a store: the property tests make many harnesses on one backend.
	name += "-" + strings.TrimLeft(string(id[len(id)-12:]), "0")
	if err := h.b.CreateAccount(h.ctx, id, name, role, balance); err != nil {
		h.t.Fatalf("create account %s: %v", name, err)
	}
	h.accounts = append(h.accounts, id)
	h.credited += balance
	return tournament.Actor{ID: id, Role: role}
}

// config is Gear's test config: bet B, limit 5, every timeout 5000 ms, with our defaults.
func config() tournament.Config {
	c := tournament.DefaultConfig()
	c.BetSize = Bet
	c.PlayersCountLimit = 5
	c.EntryTimeoutMs, c.MoveTimeoutMs, c.RevealTimeoutMs = Timeout, Timeout, Timeout
	// Gear's unlimited extensions, which the cases on extensions exercise.
	c.MaxExtensions = 0
	return c
}

// open creates a lobby with cfg and makes it the one the helpers act on.
func (h *harness) open(cfg tournament.Config) tournament.LobbyID {
	h.t.Helper()
	var id tournament.LobbyID
	h.ok(h.do(func(tx tournament.Tx) (err error) {
		id, err = h.svc.CreateLobby(h.ctx, tx, h.now, h.admin, "lobby", cfg)
		return err
	}))
	h.lobby = id
	h.lobbies = append(h.lobbies, id)
	return id
}

func (h *harness) do(fn func(tx tournament.Tx) error) error { return h.b.Do(h.ctx, fn) }

// ok fails the test on any error.
func (h *harness) ok(err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatalf("unexpected error: %v", err)
	}
}

// mustRefuse fails the test unless err is a refusal with code.
func (h *harness) mustRefuse(code tournament.Code, err error) *tournament.Error {
	h.t.Helper()
	e, ok := tournament.IsRefusal(err)
	if !ok || e.Code != code {
		h.t.Fatalf("want refusal %q, got %v", code, err)
	}
	return e
}

// mustInvalid fails the test unless err is validation_failed naming field.
func (h *harness) mustInvalid(field string, err error) {
	h.t.Helper()
	e := h.mustRefuse(tournament.CodeValidationFailed, err)
	if e.Field != field {
		h.t.Fatalf("want validation_failed on %q, got %v", field, err)
	}
}

// Clock.

func (h *harness) advance(ms int64) { h.now += ms }

// expire applies the deadlines due by now, as the clock worker does, and reports whether
// anything changed.
func (h *harness) expire() bool {
	h.t.Helper()
	var r tournament.Result
	h.ok(h.do(func(tx tournament.Tx) (err error) {
		r, err = tournament.Expire{LobbyID: h.lobby}.Apply(h.ctx, h.svc, tx, h.now, tournament.Actor{})
		return err
	}))
	if r.Refusal != nil {
		h.t.Fatalf("expire: %v", r.Refusal)
	}
	h.checkResult(tournament.Actor{}, tournament.Expire{LobbyID: h.lobby}, r)
	return r.Expired
}

// passDeadline moves the clock 1 ms past the current game's deadline and applies it.
func (h *harness) passDeadline() {
	h.t.Helper()
	g := h.game()
	if g.Deadline == 0 {
		h.t.Fatalf("game %s in %s has no deadline", g.ID, g.Stage)
	}
	h.now = g.Deadline + 1
	h.expire()
}

func (h *harness) shift(gap int64) error {
	return h.do(func(tx tournament.Tx) error { return h.svc.ShiftClock(h.ctx, tx, h.now, gap) })
}

// Operations: the try* forms return the error, the others fail the test on one.

func (h *harness) tryRegister(a tournament.Actor) error {
	return h.apply(a, tournament.Register{LobbyID: h.lobby})
}

// register registers players by number.
func (h *harness) register(ps ...int) {
	h.t.Helper()
	for _, i := range ps {
		if err := h.tryRegister(h.p[i]); err != nil {
			h.t.Fatalf("register p%d: %v", i, err)
		}
	}
}

func (h *harness) tryLeave(a tournament.Actor) error {
	return h.apply(a, tournament.Leave{LobbyID: h.lobby})
}

func (h *harness) tryCommit(a tournament.Actor, c engine.Commitment) error {
	return h.apply(a, tournament.Commit{LobbyID: h.lobby, Commitment: c})
}

// tryMove commits move with password and remembers the reveal string.
func (h *harness) tryMove(a tournament.Actor, m engine.Move, password string) error {
	err := h.tryCommit(a, engine.CommitMove(m, password))
	if err == nil {
		h.secrets[a.ID] = m.String() + password
	}
	return err
}

// move commits move for player i with Gear's password.
func (h *harness) move(i int, m engine.Move) {
	h.t.Helper()
	if err := h.tryMove(h.p[i], m, Password); err != nil {
		h.t.Fatalf("commit p%d: %v", i, err)
	}
}

func (h *harness) tryReveal(a tournament.Actor, reveal string) error {
	return h.apply(a, tournament.Reveal{LobbyID: h.lobby, Reveal: reveal})
}

// reveal reveals player i's last commitment.
func (h *harness) reveal(ps ...int) {
	h.t.Helper()
	for _, i := range ps {
		s, ok := h.secrets[h.p[i].ID]
		if !ok {
			h.t.Fatalf("p%d has no commitment to reveal", i)
		}
		if err := h.tryReveal(h.p[i], s); err != nil {
			h.t.Fatalf("reveal p%d: %v", i, err)
		}
	}
}

// round has the players (by number) commit the moves, then reveal them all.
func (h *harness) round(players []int, moves ...engine.Move) {
	h.t.Helper()
	if len(players) != len(moves) {
		h.t.Fatalf("round: %d players, %d moves", len(players), len(moves))
	}
	for k, i := range players {
		h.move(i, moves[k])
	}
	h.reveal(players...)
}

func (h *harness) tryStop(a tournament.Actor, reason string) error {
	return h.apply(a, tournament.Stop{LobbyID: h.lobby, Reason: reason})
}

func (h *harness) stop() {
	h.t.Helper()
	h.ok(h.tryStop(h.admin, "test stop"))
}

func (h *harness) tryNextConfig(a tournament.Actor, cfg tournament.Config) error {
	return h.apply(a, tournament.ChangeNextConfig{LobbyID: h.lobby, Config: cfg})
}

func (h *harness) tryClose(a tournament.Actor) error {
	return h.apply(a, tournament.CloseLobby{LobbyID: h.lobby})
}

// apply runs an operation as the store runs it (a refusal commits) and checks its result against
// the state it left: the lobby and game, the actor's registration and move. It returns the
// refusal, if any, as the error.
func (h *harness) apply(a tournament.Actor, op tournament.Operation) error {
	h.t.Helper()
	var r tournament.Result
	err := h.do(func(tx tournament.Tx) error {
		var err error
		if r, err = op.Apply(h.ctx, h.svc, tx, h.now, a); err != nil {
			return err
		}
		if r.Refusal != nil {
			return r.Refusal
		}
		return nil
	})
	if err != nil {
		return err
	}
	h.checkResult(a, op, r)
	return nil
}

// checkResult checks the result of an operation done on a lobby against the state it left.
func (h *harness) checkResult(a tournament.Actor, op tournament.Operation, r tournament.Result) {
	h.t.Helper()
	if r.At != h.now || r.Lobby.ID != op.Lobby() {
		h.t.Fatalf("%T: result at %d of lobby %s, want at %d of %s", op, r.At, r.Lobby.ID, h.now, op.Lobby())
	}
	if l := h.lobbyRow(); !reflect.DeepEqual(r.Lobby, l) {
		h.t.Errorf("%T: result's lobby %+v, stored %+v", op, r.Lobby, l)
	}
	if g := h.gameByID(r.Lobby.GameID); !reflect.DeepEqual(r.Game, g) {
		h.t.Errorf("%T: result's game %+v, stored %+v", op, r.Game, g)
	}
	var player *tournament.Player
	var move *tournament.RoundMove
	if a.Role == tournament.RolePlayer {
		for _, p := range h.playersOf(r.Game.ID) {
			if p.AccountID == a.ID {
				player = &p
			}
		}
		moves, err := h.b.Moves(h.ctx, r.Game.ID, r.Game.Round)
		h.ok(err)
		for _, m := range moves {
			if m.AccountID == a.ID && player != nil {
				move = &m
			}
		}
	}
	if !reflect.DeepEqual(r.Player, player) || !reflect.DeepEqual(r.Move, move) {
		h.t.Errorf("%T: result's player %+v and move %+v, stored %+v and %+v", op, r.Player, r.Move, player, move)
	}
}

// State.

func (h *harness) lobbyRow() tournament.Lobby {
	h.t.Helper()
	l, err := h.b.Lobby(h.ctx, h.lobby)
	h.ok(err)
	return l
}

// game returns the lobby's current (latest) game.
func (h *harness) game() tournament.Game {
	h.t.Helper()
	return h.gameByID(h.lobbyRow().GameID)
}

func (h *harness) gameByID(id tournament.GameID) tournament.Game {
	h.t.Helper()
	g, err := h.b.Game(h.ctx, id)
	h.ok(err)
	return g
}

func (h *harness) stage() tournament.Stage { h.t.Helper(); return h.game().Stage }

func (h *harness) wantStage(s tournament.Stage) {
	h.t.Helper()
	if g := h.game(); g.Stage != s {
		h.t.Fatalf("game %d: stage %s, want %s", g.Number, g.Stage, s)
	}
}

func (h *harness) balance(i int) int64 {
	h.t.Helper()
	b, err := h.b.Balance(h.ctx, h.p[i].ID)
	h.ok(err)
	return b
}

// wantBalances checks players' balances: want[k] is player k+1's.
func (h *harness) wantBalances(want ...int64) {
	h.t.Helper()
	for k, w := range want {
		if got := h.balance(k + 1); got != w {
			h.t.Errorf("p%d balance %d, want %d", k+1, got, w)
		}
	}
}

func (h *harness) playersOf(g tournament.GameID) []tournament.Player {
	h.t.Helper()
	ps, err := h.b.Players(h.ctx, g)
	h.ok(err)
	return ps
}

// active returns the numbers of the current game's active players, in registration order.
func (h *harness) active() []int {
	h.t.Helper()
	var out []int
	for _, p := range h.playersOf(h.game().ID) {
		if p.Active {
			out = append(out, h.num(p.AccountID))
		}
	}
	return out
}

func (h *harness) wantActive(want ...int) {
	h.t.Helper()
	if got := h.active(); fmt.Sprint(got) != fmt.Sprint(want) {
		h.t.Fatalf("active players %v, want %v", got, want)
	}
}

// num is a player's number (0 for other accounts).
func (h *harness) num(id tournament.AccountID) int {
	for i, a := range h.p {
		if i > 0 && a.ID == id {
			return i
		}
	}
	return 0
}

func (h *harness) events() []tournament.LoggedEvent {
	h.t.Helper()
	es, err := h.b.Events(h.ctx, h.lobby)
	h.ok(err)
	return es
}

// mark returns the length of the lobby's log, for eventsSince.
func (h *harness) mark() int { h.t.Helper(); return len(h.events()) }

func (h *harness) eventsSince(mark int) []tournament.LoggedEvent {
	h.t.Helper()
	return h.events()[mark:]
}

// types lists events' types.
func types(es []tournament.LoggedEvent) []tournament.EventType {
	out := make([]tournament.EventType, len(es))
	for i, e := range es {
		out[i] = e.Type
	}
	return out
}

// wantEvents checks events' types and instants (at[i] = 0 skips the instant).
func (h *harness) wantEvents(es []tournament.LoggedEvent, want []tournament.EventType, at []int64) {
	h.t.Helper()
	if fmt.Sprint(types(es)) != fmt.Sprint(want) {
		h.t.Fatalf("events %v, want %v", types(es), want)
	}
	for i := range at {
		if at[i] != 0 && es[i].At != at[i] {
			h.t.Errorf("event %d (%s) at %d, want %d (%+d ms)", i, es[i].Type, es[i].At, at[i], es[i].At-at[i])
		}
	}
}

// lastEvent returns the last event of a type in the lobby's log, decoded into data.
func (h *harness) lastEvent(typ tournament.EventType, data any) tournament.LoggedEvent {
	h.t.Helper()
	es := h.events()
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].Type == typ {
			if data != nil {
				h.ok(decode(es[i], data))
			}
			return es[i]
		}
	}
	h.t.Fatalf("no %s event", typ)
	return tournament.LoggedEvent{}
}

func (h *harness) countEvents(typ tournament.EventType) int {
	h.t.Helper()
	n := 0
	for _, e := range h.events() {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// verify checks every invariant over what the harness created.
func (h *harness) verify() {
	h.t.Helper()
	v := &verifier{t: h.t, ctx: h.ctx, b: h.b}
	v.money(h.accounts, h.credited, h.lobbies)
	for _, l := range h.lobbies {
		v.lobby(l)
	}
}

// moves returns the current game's moves in a round.
func (h *harness) moves(round int) []tournament.RoundMove {
	h.t.Helper()
	ms, err := h.b.Moves(h.ctx, h.game().ID, round)
	h.ok(err)
	return ms
}
