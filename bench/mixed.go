package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/commitreveal/rps/cmd/rpsbot/bot"
)

// mixedEnv is what a run of the mixed load needs of the bench.
type mixedEnv struct {
	o                        options
	server                   *server
	meter                    cpuMeter
	dbURL, admin, rpsd, work string
	tpcb                     float64
	tpcbCPU                  time.Duration
	step                     func(string)
}

// run plays the mixed load once, its players following their lobbies as follow says, with
// accounts of its own (named prefix-i), and measures it: throughput and latency, CPU per action
// (from /proc, and split by part from a profile over the middle of the run), PostgreSQL's
// statements, actions per transaction and the clock worker's lag. The server's figures are taken
// over the window whose actions the bots count (LoadConfig.Window): the lobbies' creation and the
// wind-down after it are left out of every figure per action. An error is one that stops the
// bench; the load's own failure is in the result.
func (e mixedEnv) run(ctx context.Context, follow bot.Follow, prefix, profileOut string) (mixedResult, error) {
	o := e.o
	res := mixedResult{follow: follow}
	e.step(fmt.Sprintf("mixed load, players following by %s: %d lobbies x %d players for %s", follow, o.lobbies, o.players, o.loadTime))
	accounts, bindPerKey, err := createAccounts(ctx, e.dbURL, e.server.url, prefix, o.lobbies*o.players, 1_000_000_000)
	if err != nil {
		return res, err
	}
	res.bindPerKey = bindPerKey
	// A CPU profile of rpsd over the middle of the load.
	profiled := make(chan profileResult, 1)
	var before cpuSample
	var metricsBefore scrape
	var metricsErr error
	var start time.Time
	var classes []statementClass // over the window, divided by its actions once the load returns them
	window := func(begins bool) {
		if begins {
			if err := resetStatements(ctx, e.dbURL); err != nil {
				res.notes = append(res.notes, "pg_stat_statements_reset: "+err.Error())
			}
			metricsBefore, metricsErr = scrapeMetrics(e.server.metricsURL)
			before, start = e.meter.sample(), time.Now()
			go func() {
				select {
				case <-time.After(o.loadTime / 4):
					profiled <- cpuProfile(ctx, e.server.debugAddr, e.rpsd, e.work, o.loadTime/2, profileOut)
				case <-ctx.Done():
					profiled <- profileResult{}
				}
			}()
			return
		}
		res.cpu = e.meter.sample().since(before)
		growth, growthErr := metricsSince(e.server.metricsURL, metricsBefore, metricsErr)
		res.writes = writesOf(growth, growthErr)
		res.clockLag = clockLag(growth, growthErr)
		var err error
		if res.statements, err = topStatements(ctx, e.dbURL, "total_exec_time"); err != nil {
			res.notes = append(res.notes, "pg_stat_statements: "+err.Error())
		}
		if classes, err = statementClasses(ctx, e.dbURL); err != nil {
			res.notes = append(res.notes, "pg_stat_statements by class: "+err.Error())
		}
	}
	res.stats, res.err = bot.Load(ctx, bot.LoadConfig{
		Server: e.server.url, AdminToken: e.admin, Lobbies: o.lobbies, Players: o.players, Duration: o.loadTime,
		Concurrency: o.clients, Strategy: "random", Seed: 1, Skip: 0.02, Grace: 3 * time.Second, Progress: 10 * time.Second,
		Game:     bot.GameSettings{Bet: 10, TimeoutMs: o.timeoutMs, Resolution: "weighted", MaxRounds: 20},
		Accounts: accounts, Follow: follow, Window: window, Out: os.Stdout,
	})
	if start.IsZero() {
		return res, nil // the load failed before it began: its error says why
	}
	res.notes = append(res.notes, logNote(ctx, e.dbURL, "the mixed load following by "+string(follow), start))
	res.profile = <-profiled
	if e.tpcb > 0 {
		res.ratio = res.stats.Actions.PerSec / e.tpcb
	}
	n := res.stats.Actions.Count
	if n > 0 && e.tpcbCPU > 0 {
		res.perAction = cpuSample{pg: res.cpu.pg / time.Duration(n), rpsd: res.cpu.rpsd / time.Duration(n)}
		res.costRatio = float64(res.perAction.pg+res.perAction.rpsd) / float64(e.tpcbCPU)
	}
	res.classes = perAction(classes, n)
	return res, nil
}
