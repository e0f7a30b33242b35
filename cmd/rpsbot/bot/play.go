package bot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/commitreveal/rps/cmd/rpsbot/strategy"
	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/internal/apiclient"
)

// GameSettings is the config of the lobbies the bots create.
type GameSettings struct {
	Bet        int64
	TimeoutMs  int64
	Ruleset    string
	Resolution string
	MaxRounds  int
}

// Input is the config of a lobby for players players.
func (g GameSettings) Input(players int) apiclient.GameConfigInput {
	startWhenFull := true
	// Three empty expiries in a row stop a game, so that a run whose bots all stalled cannot
	// leave a game waiting forever.
	maxExtensions := int32(3)
	cfg := apiclient.GameConfigInput{
		BetSize: g.Bet, PlayersCountLimit: int32(players), StartWhenFull: &startWhenFull, MaxExtensions: &maxExtensions,
	}
	if g.TimeoutMs > 0 {
		cfg.EntryTimeoutMs, cfg.MoveTimeoutMs, cfg.RevealTimeoutMs = &g.TimeoutMs, &g.TimeoutMs, &g.TimeoutMs
	}
	if g.Ruleset != "" {
		cfg.Ruleset = &g.Ruleset
	}
	if g.Resolution != "" {
		res := apiclient.Resolution(g.Resolution)
		cfg.Resolution = &res
	}
	if g.MaxRounds > 0 {
		mr := int32(g.MaxRounds)
		cfg.MaxRounds = &mr
	}
	return cfg
}

// PlayConfig configures Play.
type PlayConfig struct {
	Server, AdminToken string
	// Lobby is the lobby to join; empty creates one for the bots, closed after their game.
	Lobby    string
	Bots     int
	Strategy string
	Seed     uint64
	// Script is the text of a script for the script strategy.
	Script string
	// Fund is what each new bot account is credited (the lobby's bet if zero).
	Fund int64
	// Game configures a lobby created by Play.
	Game GameSettings
	Out  io.Writer
}

// Play creates and funds cfg.Bots accounts, registers them in the lobby's next game, plays it to
// its end and prints a line per round and the final standings. Cancelling ctx makes the bots
// leave a game that has not started; a started game in a lobby Play created is stopped (bets
// split), one in someone else's lobby is played to its end.
func Play(ctx context.Context, cfg PlayConfig) error {
	if cfg.Bots < 1 {
		return errors.New("--bots must be at least 1")
	}
	cfg.Out = &syncWriter{w: cfg.Out}
	client, err := NewClient(cfg.Server, ClientOptions{Conns: cfg.Bots})
	if err != nil {
		return err
	}
	pool := NewPool(min(cfg.Bots, 16))
	defer pool.Close()
	// Set-up and wind-down must finish even after a Ctrl-C; a second Ctrl-C kills the process.
	hard := context.WithoutCancel(ctx)

	lobbyID, created := cfg.Lobby, false
	var lobby *apiclient.Lobby
	if lobbyID == "" {
		lobby, err = client.CreateLobby(hard, cfg.AdminToken, "rpsbot play", cfg.Game.Input(max(cfg.Bots, 2)))
		if err != nil {
			return fmt.Errorf("create lobby: %w", err)
		}
		lobbyID, created = lobby.Id.String(), true
		fmt.Fprintf(cfg.Out, "lobby %s created (bet %d, %s, %s)\n", lobbyID, lobby.Config.BetSize, lobby.Config.Ruleset, lobby.Config.Resolution)
	} else if lobby, err = client.Lobby(hard, "", lobbyID); err != nil {
		return err
	}
	rules, ok := engine.Builtin().Get(lobby.Config.Ruleset)
	if !ok {
		return fmt.Errorf("lobby %s plays ruleset %q, which this rpsbot does not know", lobbyID, lobby.Config.Ruleset)
	}
	var script []engine.Move
	if cfg.Strategy == strategy.Script {
		if script, err = strategy.ParseScript(strings.NewReader(cfg.Script), rules); err != nil {
			return fmt.Errorf("script: %w", err)
		}
	}
	fund := cfg.Fund
	if fund == 0 {
		fund = lobby.Config.BetSize
	}
	accounts, err := CreateAccounts(hard, client, pool, cfg.AdminToken, cfg.Bots, cfg.Strategy+"-bot", fund, nil)
	if err != nil {
		return err
	}
	seats, err := NewSeats(accounts, cfg.Strategy, cfg.Seed, script)
	if err != nil {
		return err
	}
	names := map[string]string{}
	for _, s := range seats {
		names[s.ID] = s.Name
	}

	var (
		mu     sync.Mutex // the callbacks run on the runner's goroutine, read after it returns
		result *GameResult
	)
	runner := NewRunner(RunnerOptions{
		Client: client, Pool: pool, Lobby: lobbyID, Seats: seats, Games: 1,
		Admin: cfg.AdminToken, StopOnQuit: created,
		OnRound: func(r RoundResult) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintln(cfg.Out, roundLine(r))
		},
		OnGame: func(g GameResult) {
			mu.Lock()
			defer mu.Unlock()
			result = &g
		},
		Logf: func(format string, args ...any) { fmt.Fprintf(cfg.Out, "warning: "+format+"\n", args...) },
	})
	fmt.Fprintf(cfg.Out, "%d %s bots registering in lobby %s\n", cfg.Bots, cfg.Strategy, lobbyID)
	err = runner.Run(hard, ctx)
	if created {
		// The lobby served this one game: closing it stops the empty game that opened after it.
		if cerr := client.Close(hard, cfg.AdminToken, lobbyID); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close lobby %s: %w", lobbyID, cerr))
		}
	}
	if err != nil {
		return err
	}
	if result == nil {
		fmt.Fprintln(cfg.Out, "interrupted before the game ended; bets of a game that had not started were refunded")
		return ctx.Err()
	}
	return standings(hard, client, cfg.Out, *result, names, seats)
}

// roundLine is the one-line summary of a resolved round.
func roundLine(r RoundResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "game %d round %d: %d revealed |", r.Game, r.Round, r.Revealed)
	var survivors []string
	if r.Rules != nil {
		for _, w := range r.Rules.Weapons() {
			if int(w.Move) < len(r.Counts) && r.Counts[w.Move] > 0 {
				fmt.Fprintf(&b, " %s %d", w.Name, r.Counts[w.Move])
			}
			if r.Survivors.Has(w.Move) {
				survivors = append(survivors, w.Name)
			}
		}
	}
	if len(survivors) == 0 {
		survivors = []string{"none"}
	}
	fmt.Fprintf(&b, " | survive: %s | %d left", strings.Join(survivors, ", "), r.Remaining)
	if len(r.Mine) > 0 && r.Rules != nil {
		var mine []string
		for _, name := range slices.Sorted(maps.Keys(r.Mine)) {
			w, _ := r.Rules.Weapon(r.Mine[name])
			mine = append(mine, name+" "+w.Name)
		}
		fmt.Fprintf(&b, " | %s", strings.Join(mine, ", "))
	}
	return b.String()
}

// standings prints the game's outcome and every player's place, with how the game ended for each
// bot and what it netted.
func standings(ctx context.Context, c *Client, out io.Writer, g GameResult, names map[string]string, seats []*Seat) error {
	summary, err := c.Game(ctx, g.GameID)
	if err != nil {
		return err
	}
	players, err := c.GamePlayers(ctx, g.GameID)
	if err != nil {
		return err
	}
	switch g.Outcome {
	case "finished":
		winner := names[g.Winner]
		if winner == "" {
			winner = g.Winner
		}
		fmt.Fprintf(out, "game %d finished after %d rounds in %s: %s won %d\n", g.Number, summary.Round, g.Total.Round(time.Millisecond), winner, summary.Payout)
	default:
		reason := ""
		if summary.StopReason != nil {
			reason = *summary.StopReason
		}
		fmt.Fprintf(out, "game %d stopped after %d rounds (%s); the escrow was refunded or split\n", g.Number, summary.Round, reason)
	}
	// Winner first, then the players still in (a stopped game), then by the round they went out.
	rank := func(p apiclient.GamePlayer) int {
		switch p.Status {
		case apiclient.GamePlayerStatusWinner:
			return 1 << 30
		case apiclient.GamePlayerStatusActive:
			return 1 << 29
		case apiclient.GamePlayerStatusEliminated:
			if p.EliminatedInRound != nil {
				return int(*p.EliminatedInRound)
			}
		}
		return -1
	}
	slices.SortStableFunc(players, func(a, b apiclient.GamePlayer) int { return rank(b) - rank(a) })
	// Each bot's own record of the game (GET /v1/me/games) says how it ended and what it netted.
	records := map[string]*apiclient.GameRecord{}
	for _, s := range seats {
		rec, err := c.MyGame(ctx, s.Token, g.GameID)
		if err != nil {
			return err
		}
		if rec != nil {
			records[s.ID] = rec
		}
	}
	fmt.Fprintln(out, "final standings:")
	for i, p := range players {
		status := string(p.Status)
		if p.Status == apiclient.GamePlayerStatusEliminated && p.EliminatedInRound != nil {
			status = fmt.Sprintf("out in round %d", *p.EliminatedInRound)
		}
		line := fmt.Sprintf("%3d. %-20s %-16s", i+1, p.Name, status)
		if rec, ok := records[p.AccountId.String()]; ok {
			line += fmt.Sprintf(" %s, net %+d", rec.Ending, rec.Net)
		}
		fmt.Fprintln(out, line)
	}
	return nil
}

// CreateAccounts signs up n player accounts named prefix-RUN-1 ... prefix-RUN-n, each credited
// fund by the admin (when fund > 0), using the pool's concurrency. RUN is random, since a server
// takes a name once and the bots of an earlier run may have theirs. progress, if not nil, is told
// of each one.
func CreateAccounts(ctx context.Context, c *Client, pool *Pool, admin string, n int, prefix string, fund int64, progress func(done int)) ([]Account, error) {
	var run [3]byte
	_, _ = rand.Read(run[:]) // crypto/rand.Read never fails
	prefix += "-" + hex.EncodeToString(run[:])
	accounts := make([]Account, n)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		done     int
	)
	for i := range accounts {
		wg.Add(1)
		ok := pool.submit(ctx, func() {
			defer wg.Done()
			a, err := c.CreateAccount(ctx, fmt.Sprintf("%s-%d", prefix, i+1))
			if err == nil && fund > 0 {
				err = c.Credit(ctx, admin, a.ID, fund)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("create account %d: %w", i+1, err)
			}
			accounts[i] = a
			done++
			if progress != nil {
				progress(done)
			}
		})
		if !ok {
			wg.Done()
			break
		}
	}
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	return accounts, firstErr
}

// NewSeats gives each account a strategy seeded seed+i, so that bots differ but a run repeats.
func NewSeats(accounts []Account, name string, seed uint64, script []engine.Move) ([]*Seat, error) {
	seats := make([]*Seat, len(accounts))
	for i, a := range accounts {
		s, err := strategy.New(name, seed+uint64(i), script)
		if err != nil {
			return nil, err
		}
		seats[i] = &Seat{Account: a, Strategy: s}
	}
	return seats, nil
}
