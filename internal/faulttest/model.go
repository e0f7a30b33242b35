package faulttest

// The sequential specification each lobby's history is checked against: the tournament
// package's Service over its in-memory reference store (tournament/memstore), driven by the
// operations the clients saw, at the instants the server gave them.
//
// How time enters. The server gives every lobby operation one instant, read from the database's
// clock after the lobby's lock; the test runs on the same machine, so that instant lies between
// the operation's call and its answer on the test's own clock, and a lobby's instants never go
// back in the order its operations took effect. An answered action carries its instant
// (serverTime), so the model runs it at exactly that instant; a refusal does not, so the model
// tries every instant in its window at which the outcome could differ (the window's start, and
// just past each deadline that falls inside it). Deadlines are applied by the server's clock
// worker at some moment after they pass, and reads do not apply them: so before a read (and a
// credit or a debit, which do not lock the lobby) the model may apply any prefix of the
// deadlines due by then, each at its own deadline, as the worker would have, and keeps every
// choice that matches what was read. Actions apply every deadline due before their instant
// first, as the server does. A clock_shifted event of the log (the outage rule) is an operation
// of its own at its logged instant.
//
// What the server logged is the ground truth the model's log is held to: every event the model
// writes must be the server's event of that sequence number, hash for hash. The model's game
// ids are the log's (ids are not semantics), and so are the salts of its moves_closed digests
// (randomness, revealed by the log once each round is over), so the hashes can agree at all.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/tournament"
	"github.com/commitreveal/rps/tournament/memstore"
)

// Kind names an operation.
type Kind string

// Operations. Every one but KindShift is a request of a client; KindShift is the outage rule's
// clock_shifted, taken from the log.
const (
	KindRegister    Kind = "register"
	KindLeave       Kind = "leave"
	KindCommit      Kind = "commit"
	KindReveal      Kind = "reveal"
	KindStop        Kind = "stop"
	KindNextConfig  Kind = "next_config"
	KindClose       Kind = "close"
	KindCredit      Kind = "credit"
	KindDebit       Kind = "debit"
	KindReadLobby   Kind = "read_lobby"
	KindReadBalance Kind = "read_balance"
	KindReadEvents  Kind = "read_events"
	KindShift       Kind = "clock_shifted"
)

// lobbyAction reports whether the kind runs under its lobby's lock and gets an instant of its own.
func (k Kind) lobbyAction() bool {
	switch k {
	case KindRegister, KindLeave, KindCommit, KindReveal, KindStop, KindNextConfig, KindClose:
		return true
	}
	return false
}

// read reports whether the kind changes nothing.
func (k Kind) read() bool {
	return k == KindReadLobby || k == KindReadBalance || k == KindReadEvents
}

// Input is an operation as it was invoked.
type Input struct {
	Kind Kind
	// Actor is the caller (a player or the admin); "" for an anonymous read.
	Actor tournament.AccountID
	// Target is the player whose balance a credit or a debit moves.
	Target     tournament.AccountID
	Commitment string
	Reveal     string
	Reason     string
	Config     tournament.Config
	Amount     int64
	// Signed is a player's lobby action's signature, as the server hands it to the core (the game
	// and round it names are those the player read before acting).
	Signed *tournament.Signed
	// After and Limit are an events read's cursor and page size.
	After int64
	Limit int
	// GapMs is a clock shift's gap.
	GapMs int64
	// FromMs and ToMs bound, on the clock the test shares with the server, the instant the
	// server can have given the operation: its call and its answer (or the end of the run).
	FromMs, ToMs int64
}

// Outcome is how an operation ended.
type Outcome string

// Outcomes. An operation that was never answered and is not in the log had no effect and is not
// in the checked history.
const (
	OutcomeOK      Outcome = "ok"
	OutcomeRefused Outcome = "refused"
	// OutcomeLogged: never answered, but its event is in the log, at Output.At.
	OutcomeLogged Outcome = "logged"
	// OutcomeUnknown: never answered, and the log cannot say which of a player's like actions it
	// was: the model tries it as not done (or refused), and as done at each instant the log
	// shows an action of its kind by its player within unknownWithin of its call.
	OutcomeUnknown Outcome = "unknown"
)

// Output is what an operation returned.
type Output struct {
	Outcome Outcome
	// Code is a refusal's code.
	Code tournament.Code
	// At is the instant the server gave the operation (an answered action's serverTime, a logged
	// one's event time, a clock shift's), or a lobby read's serverTime; 0 when unknown.
	At int64
	// View is the lobby an action's answer or a lobby read showed.
	View *View
	// Balance is a balance read's, or the balance a credit or a debit answered with.
	Balance int64
	// Events is an events read's page.
	Events []EventRef
}

// EventRef is an event as a read returned it, or a log's head: its place and its hash.
type EventRef struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
}

// View is what a lobby read or an action's answer shows of a lobby, as the caller sees it.
type View struct {
	Closed     bool
	Config     tournament.Config
	NextConfig *tournament.Config
	Game       GameView
	// Head is the log's head a lobby read shows with the state (nil in an action's answer).
	Head *EventRef
}

// GameView is a view's current game.
type GameView struct {
	ID                  tournament.GameID
	Number              int
	Stage               tournament.Stage
	Round               int
	StageStartedAt      int64
	Deadline            int64
	Extensions          int
	Players, Remaining  int
	Committed, Revealed int
	Pot                 int64
	RulesetHash         string
	You                 *You
}

// You is the caller's own part in the game (nil for the admin and anonymous callers).
type You struct {
	Registered, InGame, Committed, Revealed bool
	Commitment                              string
	// Move is the revealed move, -1 when none.
	Move int
}

// diff describes how got differs from want ("" when equal).
func (want View) diff(got View) string {
	var d []string
	add := func(field string, w, g any) {
		d = append(d, fmt.Sprintf("%s %v, want %v", field, g, w))
	}
	if want.Closed != got.Closed {
		add("closed", want.Closed, got.Closed)
	}
	if want.Config != got.Config {
		add("config", want.Config, got.Config)
	}
	if (want.NextConfig == nil) != (got.NextConfig == nil) || want.NextConfig != nil && *want.NextConfig != *got.NextConfig {
		add("nextConfig", configString(want.NextConfig), configString(got.NextConfig))
	}
	w, g := want.Game, got.Game
	wy, gy := w.You, g.You
	w.You, g.You = nil, nil
	if w != g {
		add("game", fmt.Sprintf("%+v", w), fmt.Sprintf("%+v", g))
	}
	if (wy == nil) != (gy == nil) || wy != nil && *wy != *gy {
		add("you", youString(wy), youString(gy))
	}
	return strings.Join(d, "; ")
}

func configString(c *tournament.Config) string {
	if c == nil {
		return "null"
	}
	return fmt.Sprintf("%+v", *c)
}

func youString(y *You) string {
	if y == nil {
		return "null"
	}
	return fmt.Sprintf("%+v", *y)
}

// LobbySpec is what the model needs to know of a lobby from outside its history: its creation
// (from its first event), the ids the server gave its games (from its log), the accounts that
// play in it and the admin's, and the log itself, which the model's log is held to.
type LobbySpec struct {
	ID        tournament.LobbyID
	Name      string
	Config    tournament.Config
	CreatedAt int64
	Admin     tournament.AccountID
	Players   []tournament.AccountID
	// Keys are the players' keys, by id, each bound at its player's sign-up.
	Keys    map[string]tournament.AccountID
	GameIDs []tournament.GameID
	// Salts are the salts of the rounds' moves_closed digests, as the events that made their
	// commitments public revealed them.
	Salts map[RoundRef]tournament.Salt
	Log   []EventRef
	// Acted lists the instants of the log's events of each player's registrations, leaves,
	// commits and reveals, by actedKey, for the actions whose answer was lost.
	Acted map[string][]int64
}

// RoundRef names a round of a game.
type RoundRef struct {
	Game  tournament.GameID
	Round int
}

// unrevealedSalt is the model's salt for a round whose salt the log never revealed (its game did
// not end): its moves_closed then differs from the server's, which logged says.
var unrevealedSalt = tournament.Salt{'u', 'n', 'r', 'e', 'v', 'e', 'a', 'l', 'e', 'd'}

// newSalt is a salt source that gives each round the salt the log revealed for it.
func (m *lobbyModel) newSalt(game tournament.GameID, round int) tournament.Salt {
	if s, ok := m.spec.Salts[RoundRef{game, round}]; ok {
		return s
	}
	return unrevealedSalt
}

// actedKey names a player's events of one type in LobbySpec.Acted.
func actedKey(typ tournament.EventType, player tournament.AccountID) string {
	return string(typ) + "/" + string(player)
}

// actedType is the event an accepted register, leave, commit or reveal writes ("" for others).
func actedType(k Kind) tournament.EventType {
	switch k {
	case KindRegister:
		return tournament.EventPlayerRegistered
	case KindLeave:
		return tournament.EventPlayerLeft
	case KindCommit:
		return tournament.EventMoveCommitted
	case KindReveal:
		return tournament.EventMoveRevealed
	}
	return ""
}

// unknownWithin bounds when a request whose answer was lost took effect, if it did: attempts
// time out after a second and a replica is stopped for at most a few seconds.
const unknownWithin = time.Minute

// lobbyModel is the specification of one lobby.
type lobbyModel struct {
	spec         LobbySpec
	rules        *engine.Registry
	minTimeoutMs int64
	// steps counts the steps porcupine's search asked for: the work its check took. Past
	// maxSteps (0: no bound) every step fails and exhausted is set: the search then ends at once,
	// and its verdict means nothing.
	steps     atomic.Int64
	maxSteps  int64
	exhausted atomic.Bool
}

// modelState is the lobby's state after some operations: the reference store (keeping only what
// later operations read) and the instant of the latest operation on the lobby. Every deadline
// before that instant has been applied.
type modelState struct {
	store *memstore.Store
	last  int64
	key   string
}

var ctx = context.Background()

func newLobbyModel(spec LobbySpec, minTimeoutMs int64) *lobbyModel {
	return &lobbyModel{spec: spec, rules: engine.Builtin(), minTimeoutMs: minTimeoutMs}
}

// initial is the lobby as its creation left it, or why the log's creation is not the model's.
func (m *lobbyModel) initial() (*modelState, error) {
	s := memstore.New()
	if err := s.CreateAccount(ctx, m.spec.Admin, "admin", tournament.RoleAdmin, 0); err != nil {
		return nil, err
	}
	for _, p := range m.spec.Players {
		if err := s.CreateAccount(ctx, p, string(p), tournament.RolePlayer, 0); err != nil {
			return nil, err
		}
	}
	for id, p := range m.spec.Keys {
		s.AddKey(p, id)
	}
	ids := []string{string(m.spec.ID)}
	if len(m.spec.GameIDs) > 0 {
		ids = append(ids, string(m.spec.GameIDs[0]))
	}
	svc := tournament.NewService(tournament.Options{Rules: m.rules, MinTimeoutMs: m.minTimeoutMs, NewSalt: m.newSalt, NewID: func() string {
		id := ids[0]
		ids = ids[1:]
		return id
	}})
	err := s.Do(ctx, func(tx tournament.Tx) error {
		_, err := svc.CreateLobby(ctx, tx, m.spec.CreatedAt, tournament.Actor{ID: m.spec.Admin, Role: tournament.RoleAdmin}, m.spec.Name, m.spec.Config)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create the lobby: %w", err)
	}
	st := &modelState{store: s, last: m.spec.CreatedAt}
	if why := m.logged(st, 0); why != "" {
		return nil, errors.New(why)
	}
	m.seal(st)
	return st, nil
}

// service is a Service whose new games take the ids the server's log gave them, in order, and
// which requires players' keys, as the servers under test do by default.
func (m *lobbyModel) service(s *memstore.Store) *tournament.Service {
	l, _ := s.Lobby(ctx, m.spec.ID)
	opened := l.Games
	return tournament.NewService(tournament.Options{Rules: m.rules, MinTimeoutMs: m.minTimeoutMs, NewSalt: m.newSalt, RequireKeys: true, NewID: func() string {
		opened++
		if opened <= len(m.spec.GameIDs) {
			return string(m.spec.GameIDs[opened-1])
		}
		return fmt.Sprintf("game-%d-not-in-the-log", opened)
	}})
}

// head is the sequence number of the model's last event.
func head(s *memstore.Store, lobby tournament.LobbyID) int64 {
	log, _ := s.Events(ctx, lobby)
	if len(log) == 0 {
		return 0
	}
	return log[len(log)-1].Seq
}

// logged checks the events the model wrote after seq from against the server's log, and says
// how they differ ("" when they agree).
func (m *lobbyModel) logged(st *modelState, from int64) string {
	log, _ := st.store.Events(ctx, m.spec.ID)
	for _, e := range log {
		if e.Seq <= from {
			continue
		}
		if e.Seq > int64(len(m.spec.Log)) {
			return fmt.Sprintf("the model logs event %d (%s at %s) that the server's log (%d events) lacks",
				e.Seq, e.Type, tournament.FormatTime(e.At), len(m.spec.Log))
		}
		if got := fmt.Sprintf("%x", e.Hash); got != m.spec.Log[e.Seq-1].Hash {
			why := ""
			var closed tournament.MovesClosedData
			if e.Type == tournament.EventMovesClosed && json.Unmarshal(e.Data, &closed) == nil {
				if _, ok := m.spec.Salts[RoundRef{e.GameID, closed.Round}]; !ok {
					why = " (the log never revealed the salt of this round's digest: its game did not end)"
				}
			}
			return fmt.Sprintf("event %d: the model logs %s at %s %s, the server's log differs%s", e.Seq, e.Type,
				tournament.FormatTime(e.At), e.Data, why)
		}
	}
	return ""
}

// clone copies a state for a step to change.
func (st *modelState) clone() *modelState {
	return &modelState{store: st.store.Clone(true), last: st.last}
}

// seal computes the state's key, which Equal and Hash compare: everything a later operation
// or observation can depend on.
func (m *lobbyModel) seal(st *modelState) {
	s := st.store
	l, _ := s.Lobby(ctx, m.spec.ID)
	g, _ := s.Game(ctx, l.GameID)
	players, _ := s.Players(ctx, g.ID)
	moves, _ := s.Moves(ctx, g.ID, g.Round)
	var b strings.Builder
	next := l.NextConfig
	l.NextConfig = nil
	fmt.Fprintf(&b, "%d|%+v|%s|%+v|%+v|%+v|", st.last, l, configString(next), g, players, moves)
	for _, p := range m.spec.Players {
		bal, _ := s.Balance(ctx, p)
		fmt.Fprintf(&b, "%d,", bal)
	}
	log, _ := s.Events(ctx, m.spec.ID)
	if len(log) > 0 {
		fmt.Fprintf(&b, "|%d:%x", log[len(log)-1].Seq, log[len(log)-1].Hash)
	}
	st.key = b.String()
}

// view is the lobby as actor sees it in st, in the answer to an action as in a read: a player's
// own status shows in an open game only (api's yourStatus).
func (m *lobbyModel) view(st *modelState, actor tournament.AccountID) View {
	s := st.store
	l, _ := s.Lobby(ctx, m.spec.ID)
	g, _ := s.Game(ctx, l.GameID)
	v := View{Closed: l.Closed, Config: l.Config, NextConfig: l.NextConfig, Game: GameView{
		ID: g.ID, Number: g.Number, Stage: g.Stage, Round: g.Round, StageStartedAt: g.StageStartedAt,
		Deadline: g.Deadline, Extensions: g.Extensions, Players: g.Players, Remaining: g.Active,
		Committed: g.Committed, Revealed: g.Revealed, Pot: g.Escrow, RulesetHash: g.RulesetHash,
	}}
	if actor == "" || actor == m.spec.Admin {
		return v
	}
	if !g.Stage.Open() {
		return v
	}
	you := &You{Move: -1}
	v.Game.You = you
	players, _ := s.Players(ctx, g.ID)
	i := slices.IndexFunc(players, func(p tournament.Player) bool { return p.AccountID == actor })
	if i < 0 {
		return v
	}
	you.Registered, you.InGame = true, players[i].Active
	moves, _ := s.Moves(ctx, g.ID, g.Round)
	if j := slices.IndexFunc(moves, func(mv tournament.RoundMove) bool { return mv.AccountID == actor }); j >= 0 && g.Round > 0 {
		you.Committed, you.Commitment = true, moves[j].Commitment.String()
		if moves[j].Revealed {
			you.Revealed, you.Move = true, int(moves[j].Move)
		}
	}
	return v
}

// deadline is the current game's deadline (0: none, or the game has ended).
func (st *modelState) deadline(lobby tournament.LobbyID) int64 {
	l, _ := st.store.Lobby(ctx, lobby)
	g, _ := st.store.Game(ctx, l.GameID)
	if !g.Stage.Open() {
		return 0
	}
	return g.Deadline
}

// expire applies the deadlines due before at, each at its own deadline, as the server's clock
// worker would, and checks the events it writes against the log.
func (m *lobbyModel) expire(st *modelState, at int64) (*modelState, string) {
	next := st.clone()
	from := head(next.store, m.spec.ID)
	svc := m.service(next.store)
	err := next.store.Do(ctx, func(tx tournament.Tx) error {
		_, err := tournament.Expire{LobbyID: m.spec.ID}.Apply(ctx, svc, tx, at, tournament.Actor{})
		return err
	})
	if err != nil {
		return nil, fmt.Sprintf("the model could not apply the deadlines before %d: %v", at, err)
	}
	if why := m.logged(next, from); why != "" {
		return nil, why
	}
	next.last = max(next.last, at)
	m.seal(next)
	return next, ""
}

// applied returns st and the states after each further deadline the clock worker can have
// applied by upTo (each a prefix of the due deadlines, applied in order).
func (m *lobbyModel) applied(st *modelState, upTo int64) ([]*modelState, string) {
	out := []*modelState{st}
	for cur := st; ; {
		d := cur.deadline(m.spec.ID)
		if d == 0 || d+1 > upTo {
			return out, ""
		}
		next, why := m.expire(cur, d+1)
		if next == nil {
			// Applying this deadline writes what the server did not log: it was not applied.
			return out, why
		}
		out = append(out, next)
		cur = next
	}
}

// act runs a lobby action or a money move at now through the Service, and returns the state
// after it and the refusal, or why the model cannot take the step.
func (m *lobbyModel) act(st *modelState, in Input, now int64) (*modelState, *tournament.Error, *tournament.Account, string) {
	next := st.clone()
	from := head(next.store, m.spec.ID)
	svc := m.service(next.store)
	actor := tournament.Actor{ID: in.Actor, Role: tournament.RolePlayer}
	if in.Actor == m.spec.Admin {
		actor.Role = tournament.RoleAdmin
	}
	op, err := operation(in, m.spec.ID)
	if err != nil {
		return nil, nil, nil, err.Error()
	}
	var result tournament.Result
	err = next.store.Do(ctx, func(tx tournament.Tx) error {
		var err error
		result, err = op.Apply(ctx, svc, tx, now, actor)
		return err
	})
	if err != nil {
		return nil, nil, nil, fmt.Sprintf("the model failed: %v", err)
	}
	refusal, account := result.Refusal, result.Account
	if why := m.logged(next, from); why != "" {
		return nil, nil, nil, why
	}
	if in.Kind.lobbyAction() {
		next.last = max(next.last, now)
	}
	m.seal(next)
	return next, refusal, account, ""
}

// operation is the one place an invoked operation becomes the tournament's, as the server
// builds it from a request.
func operation(in Input, lobby tournament.LobbyID) (tournament.Operation, error) {
	switch in.Kind {
	case KindRegister:
		return tournament.Register{LobbyID: lobby, Signed: in.Signed}, nil
	case KindLeave:
		return tournament.Leave{LobbyID: lobby, Signed: in.Signed}, nil
	case KindCommit:
		c, err := engine.ParseCommitment(in.Commitment)
		if err != nil {
			return nil, fmt.Errorf("commitment %q: %w", in.Commitment, err)
		}
		return tournament.Commit{LobbyID: lobby, Commitment: c, Signed: in.Signed}, nil
	case KindReveal:
		return tournament.Reveal{LobbyID: lobby, Reveal: in.Reveal, Signed: in.Signed}, nil
	case KindStop:
		return tournament.Stop{LobbyID: lobby, Reason: in.Reason}, nil
	case KindNextConfig:
		return tournament.ChangeNextConfig{LobbyID: lobby, Config: in.Config}, nil
	case KindClose:
		return tournament.CloseLobby{LobbyID: lobby}, nil
	case KindCredit:
		return tournament.Credit{Account: in.Target, Amount: in.Amount}, nil
	case KindDebit:
		return tournament.Debit{Account: in.Target, Amount: in.Amount}, nil
	}
	return nil, fmt.Errorf("no such action %q", in.Kind)
}

// step returns every state the lobby can be in after the operation, given what it returned,
// and, when there is none, why.
func (m *lobbyModel) step(st *modelState, in Input, out Output) ([]*modelState, string) {
	switch {
	case in.Kind.read():
		return m.read(st, in, out)
	case in.Kind == KindCredit || in.Kind == KindDebit:
		return m.moveMoney(st, in, out)
	case in.Kind == KindShift:
		return m.shift(st, in, out)
	}
	return m.action(st, in, out)
}

// read checks an observation against the states the clock worker can have left by then.
func (m *lobbyModel) read(st *modelState, in Input, out Output) ([]*modelState, string) {
	upTo := in.ToMs
	if in.Kind == KindReadLobby {
		// The read's clock was read after its snapshot: what it saw had happened by then.
		upTo = min(upTo, out.At)
	}
	if st.last > upTo {
		return nil, fmt.Sprintf("the read's clock (%d) is before the lobby's last operation (%d)", upTo, st.last)
	}
	candidates, why := m.applied(st, upTo)
	var next []*modelState
	var reasons []string
	for _, c := range candidates {
		switch in.Kind {
		case KindReadLobby:
			if d := m.view(c, in.Actor).diff(*out.View); d != "" {
				reasons = append(reasons, d)
				continue
			}
			if h := out.View.Head; h != nil {
				if seq := head(c.store, m.spec.ID); h.Seq != seq || seq > 0 && h.Hash != m.spec.Log[seq-1].Hash {
					reasons = append(reasons, fmt.Sprintf("head %d %s with a log at %d", h.Seq, short(h.Hash), seq))
					continue
				}
			}
		case KindReadBalance:
			if b, _ := c.store.Balance(ctx, in.Actor); b != out.Balance {
				reasons = append(reasons, fmt.Sprintf("balance %d, want %d", out.Balance, b))
				continue
			}
		case KindReadEvents:
			h := head(c.store, m.spec.ID)
			end := in.After + int64(len(out.Events))
			var ok bool
			if len(out.Events) == 0 {
				ok = h <= in.After // nothing after the cursor
			} else {
				ok = h >= end && (len(out.Events) == in.Limit || h == end) // a short page ends at the head
			}
			if !ok {
				reasons = append(reasons, fmt.Sprintf("read events %d..%d of a log at %d", in.After+1, end, h))
				continue
			}
		}
		next = append(next, c)
	}
	if why != "" {
		reasons = append(reasons, why)
	}
	return next, strings.Join(reasons, "; ")
}

// moveMoney checks a credit or a debit: it does not lock the lobby, so the clock worker may have
// applied deadlines before it, and it does not move the lobby's clock.
func (m *lobbyModel) moveMoney(st *modelState, in Input, out Output) ([]*modelState, string) {
	candidates, why := m.applied(st, in.ToMs)
	var next []*modelState
	var reasons []string
	for _, c := range candidates {
		after, refusal, account, whyNot := m.act(c, in, max(c.last, in.FromMs))
		switch {
		case after == nil:
			reasons = append(reasons, whyNot)
		case !outcomeMatches(refusal, out):
			reasons = append(reasons, fmt.Sprintf("answered %s, the model %s", describeOutput(out), describeRefusal(refusal)))
		case out.Outcome == OutcomeOK && account.Balance != out.Balance:
			reasons = append(reasons, fmt.Sprintf("balance after it %d, want %d", out.Balance, account.Balance))
		default:
			next = append(next, after)
		}
	}
	if why != "" {
		reasons = append(reasons, why)
	}
	return next, strings.Join(reasons, "; ")
}

// shift is the outage rule as the log shows it: the deadlines due before the last heartbeat
// applied as of then, and every open deadline moved by the gap.
func (m *lobbyModel) shift(st *modelState, in Input, out Output) ([]*modelState, string) {
	if out.At < st.last {
		return nil, fmt.Sprintf("clock shifted at %d, before the lobby's last operation (%d)", out.At, st.last)
	}
	candidates, why := m.applied(st, out.At)
	var next []*modelState
	var reasons []string
	for _, c := range candidates {
		after := c.clone()
		from := head(after.store, m.spec.ID)
		svc := m.service(after.store)
		err := after.store.Do(ctx, func(tx tournament.Tx) error {
			if _, err := svc.Expire(ctx, tx, out.At-in.GapMs, m.spec.ID); err != nil {
				return err
			}
			return svc.ShiftClock(ctx, tx, out.At, in.GapMs)
		})
		if err != nil {
			reasons = append(reasons, fmt.Sprintf("the model failed to shift: %v", err))
			continue
		}
		if w := m.logged(after, from); w != "" {
			reasons = append(reasons, w)
			continue
		}
		after.last = out.At
		m.seal(after)
		next = append(next, after)
	}
	if why != "" {
		reasons = append(reasons, why)
	}
	return next, strings.Join(reasons, "; ")
}

// action checks a lobby action: at its instant when the answer or the log gave it, otherwise at
// every instant of its window where the outcome could differ.
func (m *lobbyModel) action(st *modelState, in Input, out Output) ([]*modelState, string) {
	lo := max(st.last, in.FromMs)
	if out.Outcome == OutcomeUnknown {
		return m.unknownAction(st, in, lo)
	}
	var instants []int64
	if out.At != 0 {
		switch {
		case out.At < st.last:
			return nil, fmt.Sprintf("instant %d is before the lobby's last operation (%d)", out.At, st.last)
		case out.At < in.FromMs || out.At > in.ToMs:
			return nil, fmt.Sprintf("instant %d is outside the request's window %d..%d", out.At, in.FromMs, in.ToMs)
		}
		instants = []int64{out.At}
	} else {
		if lo > in.ToMs {
			return nil, fmt.Sprintf("no instant in the request's window %d..%d after the lobby's last operation (%d)", in.FromMs, in.ToMs, st.last)
		}
		instants = []int64{lo}
		chain, _ := m.applied(st, in.ToMs)
		for _, c := range chain {
			if d := c.deadline(m.spec.ID); d != 0 && d+1 > lo && d+1 <= in.ToMs {
				instants = append(instants, d+1)
			}
		}
	}
	var next []*modelState
	var reasons []string
	for _, now := range instants {
		after, refusal, _, why := m.act(st, in, now)
		switch {
		case after == nil:
			reasons = append(reasons, why)
		case !outcomeMatches(refusal, out):
			reasons = append(reasons, fmt.Sprintf("at %d answered %s, the model %s", now, describeOutput(out), describeRefusal(refusal)))
		case out.Outcome == OutcomeOK && out.View != nil:
			if d := m.view(after, in.Actor).diff(*out.View); d != "" {
				reasons = append(reasons, fmt.Sprintf("at %d the answer shows %s", now, d))
				continue
			}
			next = append(next, after)
		default:
			next = append(next, after)
		}
	}
	return next, strings.Join(reasons, "; ")
}

// unknownAction steps an action whose answer was lost: not done (no effect beyond the
// deadlines the clock worker may apply anyway), or done at an instant of the log's events of its
// kind by its player.
func (m *lobbyModel) unknownAction(st *modelState, in Input, lo int64) ([]*modelState, string) {
	next := []*modelState{st}
	var reasons []string
	for _, at := range m.spec.Acted[actedKey(actedType(in.Kind), in.Actor)] {
		if at < lo || at > in.FromMs+unknownWithin.Milliseconds() {
			continue
		}
		after, refusal, _, why := m.act(st, in, at)
		switch {
		case after == nil:
			reasons = append(reasons, why)
		case refusal == nil:
			next = append(next, after)
		}
	}
	return next, strings.Join(reasons, "; ")
}

func outcomeMatches(refusal *tournament.Error, out Output) bool {
	if out.Outcome == OutcomeRefused {
		return refusal != nil && refusal.Code == out.Code
	}
	return refusal == nil
}

func describeOutput(out Output) string {
	if out.Outcome == OutcomeRefused {
		return "refused " + string(out.Code)
	}
	return string(out.Outcome)
}

func describeRefusal(r *tournament.Error) string {
	if r == nil {
		return "accepts it"
	}
	return "refuses it: " + r.Error()
}

// porcupineModel wraps the lobby's specification for the checker.
func (m *lobbyModel) porcupineModel(init *modelState) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []any { return []any{init} },
		Step: func(state, input, output any) []any {
			if n := m.steps.Add(1); m.maxSteps > 0 && n > m.maxSteps {
				m.exhausted.Store(true)
				return nil
			}
			next, _ := m.step(state.(*modelState), input.(Input), output.(Output))
			out := make([]any, len(next))
			for i, s := range next {
				out[i] = s
			}
			return out
		},
		Equal: func(a, b any) bool { return a.(*modelState).key == b.(*modelState).key },
		Hash: func(state any) uint64 {
			h := fnv.New64a()
			h.Write([]byte(state.(*modelState).key))
			return h.Sum64()
		},
		DescribeOperation: func(input, output any) string { return describeOp(input.(Input), output.(Output)) },
		DescribeState:     func(state any) string { return m.describeState(state.(*modelState)) },
	}
	return nm.ToModel()
}

// describeOp is one line for an operation.
func describeOp(in Input, out Output) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", in.Kind)
	if in.Actor != "" {
		fmt.Fprintf(&b, " by %s", short(string(in.Actor)))
	}
	switch in.Kind {
	case KindCredit, KindDebit:
		fmt.Fprintf(&b, " %d to %s", in.Amount, short(string(in.Target)))
	case KindCommit:
		fmt.Fprintf(&b, " %s", short(in.Commitment))
	case KindReveal:
		fmt.Fprintf(&b, " %q", in.Reveal)
	case KindStop:
		fmt.Fprintf(&b, " %q", in.Reason)
	case KindReadEvents:
		fmt.Fprintf(&b, " after %d limit %d", in.After, in.Limit)
	case KindShift:
		fmt.Fprintf(&b, " by %d ms", in.GapMs)
	}
	fmt.Fprintf(&b, " -> %s", describeOutput(out))
	if out.At != 0 {
		fmt.Fprintf(&b, " at %d", out.At)
	}
	switch {
	case out.View != nil:
		g := out.View.Game
		fmt.Fprintf(&b, " [game %d %s round %d, %d players, %d in, %d committed, %d revealed, pot %d, deadline %d]",
			g.Number, g.Stage, g.Round, g.Players, g.Remaining, g.Committed, g.Revealed, g.Pot, g.Deadline)
	case in.Kind == KindReadBalance || (in.Kind == KindCredit || in.Kind == KindDebit) && out.Outcome == OutcomeOK:
		fmt.Fprintf(&b, " balance %d", out.Balance)
	case in.Kind == KindReadEvents:
		fmt.Fprintf(&b, " %d events", len(out.Events))
	}
	return b.String()
}

func (m *lobbyModel) describeState(st *modelState) string {
	v := m.view(st, "")
	g := v.Game
	var b strings.Builder
	fmt.Fprintf(&b, "game %d %s round %d, %d players, %d in, %d committed, %d revealed, pot %d, deadline %d, last instant %d, log at %d; balances",
		g.Number, g.Stage, g.Round, g.Players, g.Remaining, g.Committed, g.Revealed, g.Pot, g.Deadline, st.last, head(st.store, m.spec.ID))
	for _, p := range m.spec.Players {
		bal, _ := st.store.Balance(ctx, p)
		fmt.Fprintf(&b, " %s=%d", short(string(p)), bal)
	}
	return b.String()
}

// short is an id's first 8 characters.
func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
