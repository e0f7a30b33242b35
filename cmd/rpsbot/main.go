// Command rpsbot plays Rock-Paper-Scissors-Lizard-Spock through the server's public HTTP API, as
// any third-party client would.
//
//	rpsbot play --server URL --admin-token T [--lobby ID] --bots N --strategy random|smart|script --seed S [--script FILE]
//	rpsbot load --server URL --admin-token T --lobbies L --players P --duration D --concurrency C [--follow lobby|poll|stream]
//
// play creates and funds N bot accounts, registers them in the lobby's next game (in a new lobby
// when --lobby is omitted), plays the game to its end and prints a line per round and the final
// standings. load fills L new lobbies with P bots each, plays games back to back for D and prints
// throughput, latency percentiles, errors by code and stage-change lag; it exits with status 1 on
// any 5xx response or when the ledger check fails. Both stop cleanly on Ctrl-C: bots leave games
// that have not started, and games the run created are stopped, so no bet is left behind.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/commitreveal/rps/cmd/rpsbot/bot"
	"github.com/commitreveal/rps/cmd/rpsbot/strategy"
)

const usage = `usage:
  rpsbot play --server URL --admin-token T [--lobby ID] --bots N --strategy random|smart|script --seed S [--script FILE]
  rpsbot load --server URL --admin-token T --lobbies L --players P --duration D --concurrency C [--follow lobby|poll|stream]

Run "rpsbot play -h" or "rpsbot load -h" for every flag.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal the bots wind down; restoring the default lets a second one kill.
	context.AfterFunc(ctx, stop)
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run executes a command line and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "play":
		err = play(ctx, args[1:], stdout, stderr)
	case "load":
		err = load(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "unknown command %q\n%s", args[0], usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, err)
		return 2
	default:
		fmt.Fprintln(stderr, "rpsbot:", err)
		return 1
	}
}

var errUsage = errors.New("usage")

// common holds the flags both commands share.
type common struct {
	server, admin string
	game          bot.GameSettings
	strategy      string
	seed          uint64
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.server, "server", "http://127.0.0.1:8080", "base URL of the rpsd server")
	fs.StringVar(&c.admin, "admin-token", os.Getenv("RPSD_ADMIN_TOKEN"), "admin token, to fund the bots and create lobbies (default $RPSD_ADMIN_TOKEN)")
	fs.StringVar(&c.strategy, "strategy", strategy.Random, "random, smart or script")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the bots' strategies (bot i uses seed+i)")
	fs.Int64Var(&c.game.Bet, "bet", 100, "bet of a lobby the bots create")
	fs.StringVar(&c.game.Ruleset, "ruleset", "rpsls", "ruleset of a lobby the bots create")
	fs.StringVar(&c.game.Resolution, "resolution", "", "resolution of a lobby the bots create: classic or weighted")
	fs.IntVar(&c.game.MaxRounds, "max-rounds", 0, "rounds without a winner after which a created game is stopped (0: unlimited)")
}

func (c *common) check() error {
	if c.admin == "" {
		return fmt.Errorf("%w: --admin-token (or RPSD_ADMIN_TOKEN) is required to fund the bots", errUsage)
	}
	return nil
}

func play(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rpsbot play", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs)
	lobby := fs.String("lobby", "", "lobby to join (default: create one for the bots, closed after their game)")
	bots := fs.Int("bots", 4, "number of bots")
	script := fs.String("script", "", "file of moves for --strategy script: digits or weapon names, one per round, looping")
	fund := fs.Int64("fund", 0, "credit for each new bot account (default: the lobby's bet)")
	timeout := fs.Duration("timeout", 0, "stage timeouts of a lobby the bots create (default: the server's default, 60s)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := c.check(); err != nil {
		return err
	}
	cfg := bot.PlayConfig{Server: c.server, AdminToken: c.admin, Lobby: *lobby, Bots: *bots, Strategy: c.strategy,
		Seed: c.seed, Fund: *fund, Game: c.game, Out: stdout}
	cfg.Game.TimeoutMs = timeout.Milliseconds()
	if c.strategy == strategy.Script {
		if *script == "" {
			return fmt.Errorf("%w: --strategy script needs --script FILE", errUsage)
		}
		text, err := os.ReadFile(*script)
		if err != nil {
			return fmt.Errorf("read script: %w", err)
		}
		cfg.Script = string(text)
	} else if _, err := strategy.New(c.strategy, 0, nil); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return bot.Play(ctx, cfg)
}

func load(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rpsbot load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs)
	cfg := bot.LoadConfig{Out: stdout}
	fs.IntVar(&cfg.Lobbies, "lobbies", 20, "lobbies to create")
	fs.IntVar(&cfg.Players, "players", 10, "bots per lobby (each lobby's player limit)")
	fs.DurationVar(&cfg.Duration, "duration", 30*time.Second, "how long to play games back to back")
	fs.IntVar(&cfg.Concurrency, "concurrency", 8, "game actions in flight at once")
	fs.IntVar(&cfg.NewAccounts, "accounts", 20, "accounts to sign up, shared by the lobbies in turn (at least --players; the server limits sign-ups per address)")
	fs.Float64Var(&cfg.Skip, "skip", 0.02, "probability that a bot skips a commit, so that some stages end by deadline (stage-change lag)")
	fs.DurationVar(&cfg.Grace, "grace", 5*time.Second, "how long games still running at the end may go on before they are stopped")
	fs.DurationVar(&cfg.Progress, "progress", 5*time.Second, "interval of the progress lines (0: none)")
	timeout := fs.Duration("timeout", 200*time.Millisecond, "stage timeouts of the lobbies (at least the server's RPSD_MIN_TIMEOUT_MS)")
	follow := fs.String("follow", string(bot.FollowLobby), "how the bots follow their lobby: lobby (one long poll per lobby), poll (each bot long-polls, as a generated client does) or stream (each bot holds an event stream, as the Android app does); poll and stream hold a request open per bot, which the server's RPSD_MAX_CONNS_PER_ADDR and RPSD_MAX_WAITS_PER_CLIENT bound")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := c.check(); err != nil {
		return err
	}
	var err error
	if cfg.Follow, err = bot.ParseFollow(*follow); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if c.game.Resolution == "" {
		// Classic resolution rarely ends a 10-player RPSLS round (four or five weapons present means
		// everyone replays); weighted ends games in a few rounds.
		c.game.Resolution = "weighted"
	}
	if c.game.MaxRounds == 0 {
		c.game.MaxRounds = 20
	}
	c.game.TimeoutMs = timeout.Milliseconds()
	cfg.Server, cfg.AdminToken, cfg.Game, cfg.Strategy, cfg.Seed = c.server, c.admin, c.game, c.strategy, c.seed
	if c.strategy == strategy.Script {
		return fmt.Errorf("%w: load runs random or smart bots", errUsage)
	}
	if _, err := strategy.New(c.strategy, 0, nil); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	fmt.Fprintf(stdout, "load: %d lobbies x %d players for %s, concurrency %d, following by %s, against %s\n",
		cfg.Lobbies, cfg.Players, cfg.Duration, cfg.Concurrency, cfg.Follow, cfg.Server)
	report, err := bot.Load(ctx, cfg)
	report.Print(stdout)
	return err
}
