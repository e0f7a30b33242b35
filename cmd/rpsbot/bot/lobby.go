package bot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"sync"
	"time"

	"github.com/commitreveal/rps/cmd/rpsbot/strategy"
	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/internal/apiclient"
)

// Seat is one bot in one lobby: its account, its strategy, and what it has done in the current
// game and round.
type Seat struct {
	Account
	Strategy strategy.Strategy
	// Client, when set, is the one the bot acts through (such as the client of one server
	// replica); the runner's own client follows the lobby either way.
	Client *Client

	// In the current game.
	registered bool
	out        bool // eliminated, or refused by the game
	satOut     bool // registration refused (full, started, no money): watches this game
	pending    bool // an action is in flight

	// In round `round`: the secret and how far the bot got with it.
	round     int
	move      engine.Move
	password  string
	committed bool
	revealed  bool
	gaveUp    bool // nothing more to do this round (skipped, or refused for good)
}

// RoundResult is a resolved round as one lobby's bots saw it.
type RoundResult struct {
	Lobby, GameID string
	Game, Round   int
	Rules         *engine.Ruleset
	Revealed      int
	Counts        []int64
	Survivors     engine.MoveSet
	Remaining     int
	// Mine holds the move of each of the lobby's bots that revealed in the round, by bot name.
	Mine map[string]engine.Move
	// Commit and Reveal are the observed durations of the round's moves and reveal stages.
	Commit, Reveal time.Duration
}

// GameResult is an ended game as one lobby's bots saw it.
type GameResult struct {
	Lobby, GameID string
	Number        int
	// Outcome is "finished" (a winner was paid) or "stopped".
	Outcome string
	Winner  string
	Amount  int64
	Rounds  int
	Reason  string
	// Joined tells whether any of the lobby's bots played the game.
	Joined bool
	// Registration runs from the first registration sent to round 1; Total to the game's end.
	Registration, Total time.Duration
}

// RunnerOptions configure a Runner.
type RunnerOptions struct {
	Client *Client
	Pool   *Pool
	Lobby  string
	Seats  []*Seat
	// Games is how many games the bots join (0: as many as they can until told to quit).
	Games int
	// Skip is the probability that a bot lets a round's moves stage pass without committing, so
	// that stages also end by their deadlines and the stage-change lag can be measured.
	Skip float64
	// Seed seeds the skip decisions.
	Seed uint64
	// Admin is an admin token; with it and StopOnQuit, quitting closes the lobby and stops a game
	// still running after Grace.
	Admin      string
	StopOnQuit bool
	Grace      time.Duration
	// Follow is how the bots learn what happens in the lobby (FollowLobby if empty).
	Follow Follow
	// Wait is the long-poll wait for events (default 10s).
	Wait    time.Duration
	OnRound func(RoundResult)
	OnGame  func(GameResult)
	// Logf reports unexpected refusals and failures (discarded if nil).
	Logf func(format string, args ...any)
}

// Runner drives a lobby's bots game after game. It follows the lobby's event log (by one long
// poll, or through every bot's own long polls or event stream: see Follow) and acts on what it
// reads: register in a new game, commit when a moves stage opens, reveal when the reveal stage
// opens. It never reads the lobby's state to find out whether a stage has expired
// (a read applies due expiries itself), so the server's clock worker alone ends stages that the
// bots let run out, and the time it takes is the stage-change lag.
type Runner struct {
	o      RunnerOptions
	rng    *mrand.Rand
	bySeat map[string]*Seat
	kick   chan struct{}
	wg     sync.WaitGroup // actions in flight
	// feed carries what the followers read to Run; failed a follower's error that ends the run.
	feed   chan delivery
	failed chan error

	mu          sync.Mutex
	pending     int   // seats with an action in flight
	offsetMs    int64 // server clock minus ours
	next        int64 // event cursor
	closed      bool
	gameID      string
	bet         int64 // the current game's bet, which a registration signs
	number      int
	stage       apiclient.Stage
	round       int
	players     int // in the current round
	deadline    int64
	lagTaken    bool
	rules       *engine.Ruleset
	resolution  engine.Resolution
	joined      int // games in which the bots tried to register
	joinedThis  bool
	ended       int // of those, games that ended
	quitting    bool
	quitAt      time.Time
	stopSent    bool
	firstSend   time.Time
	roundAt     time.Time // round_started observed
	closedAt    time.Time // moves_closed observed
	commitTime  time.Duration
	gameStarted time.Time // round 1 observed
}

// NewRunner returns a runner; Run starts it.
func NewRunner(o RunnerOptions) *Runner {
	if o.Wait <= 0 {
		o.Wait = 10 * time.Second
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Follow == "" {
		o.Follow = FollowLobby
	}
	r := &Runner{o: o, rng: mrand.New(mrand.NewPCG(o.Seed, 0x5851f42d4c957f2d)), bySeat: map[string]*Seat{},
		kick: make(chan struct{}, 1), feed: make(chan delivery, 64), failed: make(chan error, len(o.Seats)+1)}
	for _, s := range o.Seats {
		r.bySeat[s.ID] = s
	}
	return r
}

// Run plays until the bots have played their games, the lobby closes, or quit ends and the
// wind-down is over: bots registered in a game that has not started leave it (bet refunded); a
// started game is played to its end, or stopped after Grace when StopOnQuit. ctx bounds
// everything, the wind-down included.
func (r *Runner) Run(ctx, quit context.Context) error {
	defer r.wg.Wait()
	if err := r.syncClock(ctx); err != nil {
		return err
	}
	// Catch up with the log without acting on the past, then follow it live.
	for {
		page, err := r.o.Client.Events(ctx, r.pollToken(r.next), r.o.Lobby, r.next, 0, 1000)
		if err != nil {
			return fmt.Errorf("lobby %s: %w", r.o.Lobby, err)
		}
		r.mu.Lock()
		for _, e := range page.Events {
			r.apply(e, false, 0, 0)
		}
		r.next = page.Next
		r.mu.Unlock()
		if len(page.Events) < 1000 {
			break
		}
	}
	stopFollowing := r.follow(ctx)
	defer stopFollowing()
	for {
		r.mu.Lock()
		if !r.quitting && quit.Err() != nil {
			r.quitting, r.quitAt = true, time.Now()
			if r.o.StopOnQuit && r.o.Admin != "" {
				r.mu.Unlock()
				if err := r.o.Client.Close(ctx, r.o.Admin, r.o.Lobby); err != nil {
					r.o.Logf("lobby %s: close: %v", r.o.Lobby, err)
				}
				r.mu.Lock()
			}
		}
		if r.done() {
			r.mu.Unlock()
			return nil
		}
		tasks := r.plan()
		quitting, wait := r.quitting, r.o.Wait
		stop := r.quitting && r.o.StopOnQuit && r.o.Admin != "" && !r.stopSent && r.stage != apiclient.StageRegistration &&
			open(r.stage) && time.Since(r.quitAt) >= r.o.Grace
		if stop {
			r.stopSent = true
		}
		r.mu.Unlock()
		r.dispatch(ctx, tasks)
		if stop {
			if err := r.o.Client.Stop(ctx, r.o.Admin, r.o.Lobby, "rpsbot: run ended"); err != nil && CodeOf(err) != "wrong_stage" {
				r.o.Logf("lobby %s: stop: %v", r.o.Lobby, err)
			}
		}
		if quitting {
			// Look again every second while winding down, so that the grace period and the
			// leaving are timely.
			wait = time.Second
		}
		if err := r.await(ctx, quit, quitting, wait); err != nil {
			return err
		}
	}
}

// syncClock estimates the server's clock offset from one lobby read, so that lags are measured
// on the server's clock even when the bots run elsewhere.
func (r *Runner) syncClock(ctx context.Context) error {
	before := time.Now()
	l, err := r.o.Client.Lobby(ctx, r.pollToken(r.next), r.o.Lobby)
	if err != nil {
		return fmt.Errorf("lobby %s: %w", r.o.Lobby, err)
	}
	after := time.Now()
	mid := before.Add(after.Sub(before) / 2)
	r.offsetMs = l.ServerTime - mid.UnixMilli()
	return nil
}

// pollToken spreads the event polls over the lobby's bots: polls sent with a token count
// against that account's rate limit instead of the shared address's.
func (r *Runner) pollToken(after int64) string {
	if len(r.o.Seats) == 0 {
		return ""
	}
	return r.o.Seats[int(after)%len(r.o.Seats)].Token
}

// await waits up to wait for news and applies it: the events the followers read, an action that
// finished without an event to show for it (a refusal), or, once, quit ending.
func (r *Runner) await(ctx, quit context.Context, quitting bool, wait time.Duration) error {
	var quitC <-chan struct{}
	if !quitting {
		quitC = quit.Done()
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case d := <-r.feed:
		r.mu.Lock()
		defer r.mu.Unlock()
		r.take(d)
		// Take what else has arrived before planning again.
		for range cap(r.feed) {
			select {
			case d := <-r.feed:
				r.take(d)
			default:
				return nil
			}
		}
	case err := <-r.failed:
		return err
	case <-ctx.Done():
		return fmt.Errorf("lobby %s: %w", r.o.Lobby, ctx.Err())
	case <-r.kick:
	case <-quitC:
	case <-t.C:
	}
	return nil
}

// clientOf is the client a seat acts through.
func (r *Runner) clientOf(s *Seat) *Client {
	if s.Client != nil {
		return s.Client
	}
	return r.o.Client
}

func (r *Runner) wake() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

func open(s apiclient.Stage) bool {
	return s == apiclient.StageRegistration || s == apiclient.StageMoves || s == apiclient.StageReveal
}

// done reports whether the runner has nothing left to do. Called with mu held.
func (r *Runner) done() bool {
	if r.pending > 0 {
		return false
	}
	ended := !open(r.stage)
	if r.o.Games > 0 && r.ended >= r.o.Games {
		return true
	}
	if r.closed && ended && r.gameID != "" {
		return true
	}
	if r.quitting {
		if ended || r.gameID == "" {
			return true
		}
		if r.stage == apiclient.StageRegistration {
			for _, s := range r.o.Seats {
				if s.registered {
					return false
				}
			}
			return true
		}
	}
	return false
}

// wantGame reports whether the bots should join the current game. Called with mu held.
func (r *Runner) wantGame() bool {
	return !r.quitting && (r.joinedThis || r.o.Games == 0 || r.joined < r.o.Games)
}

type task struct {
	seat *Seat
	run  func(ctx context.Context) error
	done func(err error) // called with mu held
}

// plan decides the actions due in the current state and marks their seats pending. Called with
// mu held.
func (r *Runner) plan() []task {
	var tasks []task
	for _, s := range r.o.Seats {
		if t, ok := r.planSeat(s); ok {
			tasks = append(tasks, t)
		}
	}
	return tasks
}

// planSeat decides one seat's next action, if it has one due, and marks it pending. Called with
// mu held.
func (r *Runner) planSeat(s *Seat) (task, bool) {
	if s.pending {
		return task{}, false
	}
	var t task
	switch r.stage {
	case apiclient.StageRegistration:
		switch {
		case r.quitting && s.registered:
			t = r.leave(s)
		case !s.registered && !s.satOut && r.wantGame():
			if !r.joinedThis {
				r.joinedThis = true
				r.joined++
			}
			if r.firstSend.IsZero() {
				r.firstSend = time.Now()
			}
			t = r.register(s)
		default:
			return task{}, false
		}
	case apiclient.StageMoves:
		if !s.registered || s.out {
			return task{}, false
		}
		if s.round != r.round {
			s.round, s.committed, s.revealed, s.gaveUp = r.round, false, false, false
			if r.o.Skip > 0 && r.rng.Float64() < r.o.Skip {
				s.gaveUp = true
				return task{}, false
			}
			s.move = s.Strategy.Choose(strategy.Round{Number: r.round, Players: r.players, Rules: r.rules, Resolution: r.resolution})
			s.password = newPassword()
		}
		if s.committed || s.gaveUp {
			return task{}, false
		}
		t = r.commit(s)
	case apiclient.StageReveal:
		if !s.registered || s.out || s.round != r.round || !s.committed || s.revealed || s.gaveUp {
			return task{}, false
		}
		t = r.reveal(s)
	default:
		return task{}, false
	}
	s.pending = true
	r.pending++
	return t, true
}

// dispatch runs the tasks on the pool, in order, without waiting for them.
func (r *Runner) dispatch(ctx context.Context, tasks []task) {
	if len(tasks) == 0 {
		return
	}
	r.wg.Add(len(tasks))
	// A finished action may be what the next one waits for (the reveal of a commit whose
	// response came after the event that opened the reveal stage), so plan again at once rather
	// than at the next event, which may never come.
	finish := func(t task, err error) {
		r.mu.Lock()
		t.seat.pending = false
		r.pending--
		t.done(err)
		var next []task
		if ctx.Err() == nil {
			if n, ok := r.planSeat(t.seat); ok {
				next = []task{n}
			}
		}
		if r.done() {
			r.wake() // the loop may be waiting for events that will not come
		}
		r.mu.Unlock()
		r.dispatch(ctx, next)
		r.wg.Done()
	}
	go func() {
		for i, t := range tasks {
			ok := r.o.Pool.submit(ctx, func() { finish(t, t.run(ctx)) })
			if !ok {
				for _, rest := range tasks[i:] {
					finish(rest, ctx.Err())
				}
				return
			}
		}
	}()
}

func newPassword() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// refused handles the outcome every action shares: context ends and transport failures leave the
// seat to be retried on the next plan; it returns the refusal code otherwise ("" for success).
func (r *Runner) refused(op string, s *Seat, err error) (code string, retry bool) {
	if err == nil {
		return "", false
	}
	code = CodeOf(err)
	if code == "" || code == "rate_limited" || code == "internal" || code == "unavailable" || code == "http_502" || code == "http_503" {
		if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			r.o.Logf("%s %s: %v", s.Name, op, err)
		}
		r.wake()
		return code, true
	}
	return code, false
}

// The actions sign the game and round the runner has read when it plans them (no read of the
// lobby per action); if the game moved on meanwhile, the server answers stale_signature, which
// the bots take as they take wrong_stage.

func (r *Runner) register(s *Seat) task {
	game, bet := r.gameID, r.bet
	return task{seat: s, run: func(ctx context.Context) error { return r.clientOf(s).Register(ctx, s.Account, r.o.Lobby, game, bet) },
		done: func(err error) {
			code, retry := r.refused("register", s, err)
			switch {
			case retry:
			case code == "" || code == "already_registered":
				s.registered = true
			default: // wrong_stage, lobby_full, insufficient_funds, forbidden: not this game
				s.satOut = true
				if code != "wrong_stage" && code != "lobby_full" && code != "stale_signature" {
					r.o.Logf("%s register: %v", s.Name, err)
				}
				r.wake()
			}
		}}
}

func (r *Runner) leave(s *Seat) task {
	game := r.gameID
	return task{seat: s, run: func(ctx context.Context) error { return r.clientOf(s).Leave(ctx, s.Account, r.o.Lobby, game) },
		done: func(err error) {
			code, retry := r.refused("leave", s, err)
			switch {
			case retry:
			case code == "" || code == "not_in_game":
				s.registered = false
				r.wake()
			default: // wrong_stage, stale_signature: the game started meanwhile, so the bot plays it out
			}
		}}
}

func (r *Runner) commit(s *Seat) task {
	game, round, move, password := r.gameID, s.round, s.move, s.password
	c := engine.CommitMove(move, password).String()
	return task{seat: s, run: func(ctx context.Context) error {
		return r.clientOf(s).Commit(ctx, s.Account, r.o.Lobby, game, round, c)
	},
		done: func(err error) {
			if s.round != round {
				return
			}
			code, retry := r.refused("commit", s, err)
			switch {
			case retry:
			case code == "" || code == "already_committed":
				s.committed = true
			case code == "not_in_game":
				s.out = true
			default: // wrong_stage, stale_signature: the moves stage ended first
				s.gaveUp = true
				if code != "wrong_stage" && code != "stale_signature" {
					r.o.Logf("%s commit: %v", s.Name, err)
				}
			}
		}}
}

func (r *Runner) reveal(s *Seat) task {
	game, round, reveal := r.gameID, s.round, string(rune(s.move.Digit()))+s.password
	return task{seat: s, run: func(ctx context.Context) error {
		return r.clientOf(s).Reveal(ctx, s.Account, r.o.Lobby, game, round, reveal)
	},
		done: func(err error) {
			if s.round != round {
				return
			}
			code, retry := r.refused("reveal", s, err)
			switch {
			case retry:
			case code == "" || code == "already_revealed":
				s.revealed = true
			case code == "not_in_game":
				s.out = true
			default: // wrong_stage, stale_signature: the reveal stage ended first; a mismatch would be a bug
				s.gaveUp = true
				if code != "wrong_stage" && code != "stale_signature" {
					r.o.Logf("%s reveal: %v", s.Name, err)
				}
			}
		}}
}

// apply updates the runner's view with one event. live events were received by a poll sent at
// server time sent and answered at seen; a live event that carries a stage's expiry (its `at` is
// exactly the deadline, as the server stamps expiries) yields one stage-change lag sample when
// the poll was already waiting at the deadline. Called with mu held.
func (r *Runner) apply(e apiclient.Event, live bool, sent, seen int64) {
	at, err := time.Parse("2006-01-02T15:04:05.000Z07:00", e.At)
	if err != nil {
		r.o.Logf("lobby %s: event %d: bad time %q", r.o.Lobby, e.Seq, e.At)
	}
	if live && !r.lagTaken && r.deadline > 0 && at.UnixMilli() == r.deadline && sent <= r.deadline {
		r.o.Client.stats.Lag(time.Duration(seen-r.deadline) * time.Millisecond)
		r.lagTaken = true
	}
	setDeadline := func(d int64) {
		if d != r.deadline {
			r.deadline, r.lagTaken = d, false
		}
	}
	decode := func(v any) bool {
		if err := json.Unmarshal(e.Data, v); err != nil {
			r.o.Logf("lobby %s: event %d (%s): %v", r.o.Lobby, e.Seq, e.Type, err)
			return false
		}
		return true
	}
	now := time.Now()
	switch e.Type {
	case "lobby_closed":
		r.closed = true
	case "game_opened":
		var d apiclient.GameOpenedData
		if !decode(&d) {
			return
		}
		r.gameID, r.stage, r.round, r.players = "", apiclient.StageRegistration, 0, 0
		if e.GameId != nil {
			r.gameID = e.GameId.String()
		}
		r.number, r.bet = int(d.Number), d.Config.BetSize
		setDeadline(0)
		r.joinedThis, r.firstSend, r.gameStarted = false, time.Time{}, time.Time{}
		r.rules, _ = engine.Builtin().Get(d.Config.Ruleset)
		if r.rules == nil {
			r.o.Logf("lobby %s: unknown ruleset %q: the bots sit this game out", r.o.Lobby, d.Config.Ruleset)
		}
		r.resolution = engine.Resolution(d.Config.Resolution)
		for _, s := range r.o.Seats {
			s.registered, s.out, s.satOut, s.round = false, false, r.rules == nil, 0
		}
	case "player_registered":
		var d apiclient.PlayerRegisteredData
		if decode(&d) {
			setDeadline(d.Deadline)
			if s := r.bySeat[d.Player.String()]; s != nil {
				s.registered = true
			}
		}
	case "player_left":
		var d apiclient.PlayerLeftData
		if decode(&d) {
			if s := r.bySeat[d.Player.String()]; s != nil {
				s.registered = false
			}
		}
	case "round_started":
		var d apiclient.RoundStartedData
		if decode(&d) {
			r.stage, r.round, r.players = apiclient.StageMoves, int(d.Round), int(d.Players)
			setDeadline(d.Deadline)
			r.roundAt = now
			if d.Round == 1 {
				r.gameStarted = now
			}
		}
	case "move_committed":
		var d apiclient.MoveCommittedData
		if decode(&d) {
			if s := r.bySeat[d.Player.String()]; s != nil && s.round == int(d.Round) {
				s.committed = true
			}
		}
	case "moves_closed":
		var d apiclient.MovesClosedData
		if decode(&d) {
			r.stage, r.players = apiclient.StageReveal, int(d.Committed)
			setDeadline(d.Deadline)
			r.closedAt, r.commitTime = now, now.Sub(r.roundAt)
			for _, s := range r.o.Seats {
				if s.registered && !s.out && !(s.round == int(d.Round) && s.committed) {
					s.out = true
				}
			}
		}
	case "move_revealed":
		var d apiclient.MoveRevealedData
		if decode(&d) {
			if s := r.bySeat[d.Player.String()]; s != nil && s.round == int(d.Round) {
				s.revealed = true
			}
		}
	case "round_resolved":
		var d apiclient.RoundResolvedData
		if decode(&d) {
			r.roundResolved(d, now)
		}
	case "stage_extended":
		var d apiclient.StageExtendedData
		if decode(&d) {
			setDeadline(d.Deadline)
		}
	case "clock_shifted":
		var d apiclient.ClockShiftedData
		if decode(&d) && r.deadline > 0 {
			setDeadline(r.deadline + d.GapMs)
		}
	case "game_finished":
		var d apiclient.GameFinishedData
		if decode(&d) {
			r.gameEnded(GameResult{Outcome: "finished", Winner: d.Winner.String(), Amount: d.Amount, Rounds: int(d.Round)}, now)
		}
	case "game_stopped":
		var d apiclient.GameStoppedData
		if decode(&d) {
			r.gameEnded(GameResult{Outcome: "stopped", Reason: d.Reason, Rounds: int(d.Round)}, now)
		}
	}
}

func (r *Runner) roundResolved(d apiclient.RoundResolvedData, now time.Time) {
	survivors := engine.MoveSet(d.Survivors)
	var counts engine.Counts
	copy(counts[:], d.Counts)
	mine := map[string]engine.Move{}
	for _, s := range r.o.Seats {
		played := s.round == int(d.Round) && s.revealed
		if s.registered && played {
			mine[s.Name] = s.move
		}
		if s.registered && !s.out && (!played || !survivors.Has(s.move)) {
			s.out = true
		}
		if s.registered {
			s.Strategy.Observe(counts, s.move, played)
		}
	}
	if r.o.OnRound != nil && r.joinedThis {
		r.o.OnRound(RoundResult{Lobby: r.o.Lobby, GameID: r.gameID, Game: r.number, Round: int(d.Round), Rules: r.rules,
			Revealed: int(d.Revealed), Counts: d.Counts, Survivors: survivors, Remaining: int(d.Remaining), Mine: mine,
			Commit: r.commitTime, Reveal: now.Sub(r.closedAt)})
	}
}

func (r *Runner) gameEnded(g GameResult, now time.Time) {
	r.stage = apiclient.StageFinished
	if g.Outcome == "stopped" {
		r.stage = apiclient.StageStopped
	}
	r.deadline = 0
	if !r.joinedThis {
		return
	}
	r.ended++
	r.o.Client.stats.Game(g.Outcome)
	g.Lobby, g.GameID, g.Number, g.Joined = r.o.Lobby, r.gameID, r.number, false
	for _, s := range r.o.Seats {
		g.Joined = g.Joined || s.registered
	}
	if !r.firstSend.IsZero() {
		g.Total = now.Sub(r.firstSend)
		if !r.gameStarted.IsZero() {
			g.Registration = r.gameStarted.Sub(r.firstSend)
		}
	}
	if r.o.OnGame != nil {
		r.o.OnGame(g)
	}
}
