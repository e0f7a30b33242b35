package logpublish_test

import (
	"io"
	"testing"
	"time"

	"github.com/commitreveal/rps/cmd/rpsbot/bot"
	"github.com/commitreveal/rps/internal/apitest"
)

// BenchmarkLogUnderMixedLoad runs the mixed load of make bench (smaller: 20 lobbies of 10 for
// 20 s) against the API in process, with the log integrating every second and two real
// witnesses cosigning, and reports how far the log ran behind commit and how long a witness
// round took (go test -run - -bench LogUnderMixedLoad -benchtime 1x ./logpublish/).
func BenchmarkLogUnderMixedLoad(b *testing.B) {
	for range b.N {
		e, _, _ := witnessedWith(b, time.Second)
		start := time.Now()
		rep, err := bot.Load(b.Context(), mixedLoad(e))
		if err != nil {
			b.Fatal(err)
		}
		time.Sleep(3 * time.Second) // the last events' integration and witness round
		f, err := e.Store.LogFiguresSince(b.Context(), start.UnixMilli())
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("mixed load: %.0f actions/s; log: %s", rep.Actions.PerSec, f)
		b.ReportMetric(f.IntegratedP99, "integrated-p99-ms")
		b.ReportMetric(f.PublishedP99, "published-p99-ms")
		b.ReportMetric(f.RoundP99, "witness-round-p99-ms")
		b.ReportMetric(rep.Actions.PerSec, "actions/s")
		b.ReportMetric(float64(rep.Actions.Latency.P99.Microseconds())/1000, "action-p99-ms")
	}
}

// BenchmarkMixedLoadWithoutLog is the same load without the log, to compare the actions' rate and
// latency with BenchmarkLogUnderMixedLoad's (run both in one go test, alternately with -count).
func BenchmarkMixedLoadWithoutLog(b *testing.B) {
	for range b.N {
		e := apitest.Start(b, apitest.WithClock())
		rep, err := bot.Load(b.Context(), mixedLoad(e))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(rep.Actions.PerSec, "actions/s")
		b.ReportMetric(float64(rep.Actions.Latency.P99.Microseconds())/1000, "action-p99-ms")
	}
}

func mixedLoad(e *apitest.Env) bot.LoadConfig {
	return bot.LoadConfig{
		Server: e.URL, AdminToken: e.Admin, Lobbies: 20, Players: 10, Duration: 20 * time.Second, Concurrency: 8,
		Strategy: "random", Seed: 1, Skip: 0.02, Grace: 3 * time.Second, NewAccounts: 200,
		Game: bot.GameSettings{Bet: 10, TimeoutMs: 2000, Resolution: "weighted", MaxRounds: 20}, Out: io.Discard,
	}
}
