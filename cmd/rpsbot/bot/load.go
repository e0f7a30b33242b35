package bot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"time"
)

// LoadConfig configures Load.
type LoadConfig struct {
	Server, AdminToken string
	Lobbies, Players   int
	Duration           time.Duration
	Concurrency        int
	Game               GameSettings
	Strategy           string
	Seed               uint64
	// Skip is the probability that a bot skips a round's commit (see RunnerOptions.Skip).
	Skip float64
	// Follow is how the bots follow their lobby (FollowLobby if empty): with FollowPoll or
	// FollowStream every bot holds a request of its own open, Lobbies x Players in all.
	Follow Follow
	// Grace is how long a game still running at the end may go on before it is stopped.
	Grace time.Duration
	// Progress is the interval of the progress lines (none if zero).
	Progress time.Duration
	// Accounts, if given, are funded accounts to play with (at least Players); otherwise Load signs
	// up and funds NewAccounts of its own through the API (Lobbies x Players if zero). Seats take
	// the accounts in turn, so with fewer accounts than seats an account plays in several lobbies
	// at once, which keeps sign-ups within the server's per-address limit.
	Accounts    []Account
	NewAccounts int
	Out         io.Writer
	// Logf reports unexpected refusals and failures (to Out if nil).
	Logf func(format string, args ...any)
	// Window, if set, is called just before the measured play begins (true) and as it ends
	// (false), so that the caller can measure the server (its CPU, its statements) over the
	// very window whose actions the report counts, without the set-up and the wind-down.
	Window func(begins bool)
}

// ErrFailed is returned by Load when the server answered with a 5xx or its ledger check failed.
var ErrFailed = errors.New("load run failed")

// CheckLoopback refuses a server that is not on the loopback interface: load runs are for a
// server on this machine, never for someone else's.
func CheckLoopback(server string) error {
	u, err := url.Parse(server)
	if err != nil {
		return fmt.Errorf("server URL %q: %w", server, err)
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("refusing to load %s: load runs target a loopback address (127.0.0.1, ::1, localhost) only", server)
}

// Load plays games back to back in cfg.Lobbies new lobbies of cfg.Players bots each for
// cfg.Duration (or until ctx ends), then winds down: bots leave games that have not started,
// games still running after Grace are stopped by the admin, the lobbies are closed, and the
// ledger's invariants are checked through the API. The report's throughput and latencies cover
// the play from the first game to the end of cfg.Duration; errors, 5xx and lags cover the whole
// run. ErrFailed (wrapped) means a 5xx or a failed ledger check.
func Load(ctx context.Context, cfg LoadConfig) (Report, error) {
	if err := CheckLoopback(cfg.Server); err != nil {
		return Report{}, err
	}
	if cfg.Lobbies < 1 || cfg.Players < 2 || cfg.Concurrency < 1 {
		return Report{}, errors.New("need at least 1 lobby, 2 players per lobby and a concurrency of 1")
	}
	cfg.Out = &syncWriter{w: cfg.Out}
	if cfg.Logf == nil {
		cfg.Logf = func(format string, args ...any) { fmt.Fprintf(cfg.Out, "warning: "+format+"\n", args...) }
	}
	stats := NewStats()
	waiting := cfg.Lobbies // the requests held open to follow the lobbies
	if cfg.Follow == FollowPoll || cfg.Follow == FollowStream {
		waiting *= cfg.Players
	}
	client, err := NewClient(cfg.Server, ClientOptions{Stats: stats, Conns: cfg.Concurrency + waiting})
	if err != nil {
		return Report{}, err
	}
	pool := NewPool(cfg.Concurrency)
	defer pool.Close()
	// The wind-down runs on a context of its own, bounded, so that a Ctrl-C still leaves no game
	// holding bets; a second Ctrl-C kills the process.
	hard, cancelHard := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelHard()

	accounts := cfg.Accounts
	if accounts == nil {
		n := cfg.NewAccounts
		if n <= 0 {
			n = cfg.Lobbies * cfg.Players
		}
		n = min(max(n, cfg.Players), cfg.Lobbies*cfg.Players)
		fund := cfg.Game.Bet * 1_000_000 // enough for every game a run can play
		fmt.Fprintf(cfg.Out, "creating and funding %d accounts\n", n)
		every := max(n/10, 1)
		accounts, err = CreateAccounts(ctx, client, pool, cfg.AdminToken, n, "load", fund, func(done int) {
			if done%every == 0 {
				fmt.Fprintf(cfg.Out, "  %d/%d accounts\n", done, n)
			}
		})
		if err != nil {
			return stats.Report(), err
		}
	} else if len(accounts) < cfg.Players {
		return Report{}, fmt.Errorf("%d accounts given, at least %d needed", len(accounts), cfg.Players)
	}
	lobbies := make([]string, cfg.Lobbies)
	for i := range lobbies {
		l, err := client.CreateLobby(ctx, cfg.AdminToken, fmt.Sprintf("load %d", i+1), cfg.Game.Input(cfg.Players))
		if err != nil {
			for _, id := range lobbies[:i] {
				_ = client.Close(hard, cfg.AdminToken, id)
			}
			return stats.Report(), fmt.Errorf("create lobby: %w", err)
		}
		lobbies[i] = l.Id.String()
	}

	if cfg.Window != nil {
		cfg.Window(true)
	}
	stats.Reset()
	quit, stop := context.WithTimeout(ctx, cfg.Duration)
	defer stop()
	var measured Report
	var measuredOnce sync.Once
	takeMeasure := func() {
		measuredOnce.Do(func() {
			measured = stats.Report()
			if cfg.Window != nil {
				cfg.Window(false)
			}
		})
	}
	context.AfterFunc(quit, takeMeasure)
	progressDone := make(chan struct{})
	var progressWG sync.WaitGroup
	if cfg.Progress > 0 {
		progressWG.Go(func() { progress(cfg.Out, stats, cfg.Progress, progressDone) })
	}
	var wg sync.WaitGroup
	for i, id := range lobbies {
		mine := make([]Account, cfg.Players)
		for p := range mine {
			mine[p] = accounts[(i*cfg.Players+p)%len(accounts)] // distinct within a lobby
		}
		seats, err := NewSeats(mine, cfg.Strategy, cfg.Seed+uint64(i*cfg.Players), nil)
		if err != nil {
			return Report{}, err
		}
		runner := NewRunner(RunnerOptions{
			Client: client, Pool: pool, Lobby: id, Seats: seats, Skip: cfg.Skip, Seed: cfg.Seed + uint64(i),
			Admin: cfg.AdminToken, StopOnQuit: true, Grace: cfg.Grace, Follow: cfg.Follow, Wait: 5 * time.Second, Logf: cfg.Logf,
		})
		wg.Go(func() {
			if err := runner.Run(hard, quit); err != nil {
				cfg.Logf("%v", err)
			}
		})
	}
	// Bound the wind-down: the runners stop games after Grace; give the stops time to land.
	go func() {
		<-quit.Done()
		t := time.NewTimer(cfg.Grace + 30*time.Second)
		defer t.Stop()
		select {
		case <-t.C:
			cancelHard()
		case <-progressDone:
		}
	}()
	wg.Wait()
	close(progressDone)
	progressWG.Wait()
	takeMeasure()

	// Whatever happened to the runners, no lobby of this run may keep bets in an open game.
	sweepCtx, cancelSweep := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancelSweep()
	for _, id := range lobbies {
		if err := settle(sweepCtx, client, cfg.AdminToken, id); err != nil {
			cfg.Logf("lobby %s: %v", id, err)
		}
	}
	final := stats.Report()
	measured.ErrorsByCode, measured.Server5xx, measured.Lag, measured.Games = final.ErrorsByCode, final.Server5xx, final.Lag, final.Games
	ledger, err := client.Ledger(sweepCtx, cfg.AdminToken)
	if err != nil {
		return measured, fmt.Errorf("ledger check: %w", err)
	}
	measured.LedgerOK = &ledger.Ok
	if !ledger.Ok {
		measured.LedgerProblem = fmt.Sprintf("%+v", ledger.Invariants)
	}
	switch {
	case measured.Server5xx > 0:
		return measured, fmt.Errorf("%w: %d responses with a 5xx status", ErrFailed, measured.Server5xx)
	case !ledger.Ok:
		return measured, fmt.Errorf("%w: the ledger check failed: %s", ErrFailed, measured.LedgerProblem)
	}
	return measured, nil
}

// settle closes a lobby and stops its current game if it still holds bets.
func settle(ctx context.Context, c *Client, admin, lobby string) error {
	if err := c.Close(ctx, admin, lobby); err != nil {
		return err
	}
	l, err := c.Lobby(ctx, admin, lobby)
	if err != nil {
		return err
	}
	if g := l.Game; g != nil && open(g.Stage) && g.Players > 0 {
		if err := c.Stop(ctx, admin, lobby, "rpsbot load: run ended"); err != nil && CodeOf(err) != "wrong_stage" {
			return err
		}
	}
	return nil
}

// progress prints a line every interval until done is closed.
func progress(out io.Writer, stats *Stats, every time.Duration, done <-chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			r := stats.Report()
			games := 0
			for _, n := range r.Games {
				games += n
			}
			errs := 0
			for _, n := range r.ErrorsByCode {
				errs += n
			}
			fmt.Fprintf(out, "t=%4.0fs actions=%d (%.0f/s, p99 %s ms) register=%d commit=%d reveal=%d games=%d errors=%d 5xx=%d lag p99=%s ms\n",
				r.Elapsed.Seconds(), r.Actions.Count, r.Actions.PerSec, ms(r.Actions.Latency.P99),
				r.Op(OpRegister).Count, r.Op(OpCommit).Count, r.Op(OpReveal).Count, games, errs, r.Server5xx, ms(r.Lag.P99))
		}
	}
}

// syncWriter serialises the writes of the progress lines and the runners' warnings.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
