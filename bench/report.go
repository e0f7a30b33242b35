package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/commitreveal/rps/cmd/rpsbot/bot"
)

func msf(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }

func goal(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

// markdown renders the report as bench/RESULTS.md.
func (r *report) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("# Benchmark results")
	p("")
	p("Written by `make bench` (`go run ./bench`); every figure below is from the run described here,")
	p("which took %s.", time.Since(r.started).Round(time.Second))
	p("")
	for _, m := range r.machine {
		p("- %s", m)
	}
	p("- disk: %s. fsync is nearly free on this machine's disk, so commits cost CPU, not I/O waits;", r.fsync)
	p("  on a disk with a real flush cost every figure below would drop, pgbench's as much as ours.")
	p("")
	p("Set-up: a private PostgreSQL cluster (internal/pgcluster, `shared_buffers=256MB`, default `fsync` and")
	p("`synchronous_commit`), and rpsd built from this tree on the same cluster with `RPSD_MIN_TIMEOUT_MS=100`")
	p("a pool of %d connections (`RPSD_DB_MAX_CONNS`), its rate limits and its cap of connections per address off. The bots (cmd/rpsbot/bot) play through the HTTP API", rpsdPoolSize)
	p("only, on the same 2 cores as the server and the database, with %d actions in flight in the mixed load (as", r.clients)
	p("pgbench keeps %d clients) and %d in the big lobby, each on an HTTP connection of its own.", r.clients, r.big.clients)
	p("Player accounts are created and funded directly in the database: the figures measure play, not sign-up.")
	p("Load average (/proc/loadavg, 1/5/15 min) when the run began: %s; when it ended: %s. The machine is", r.load[0], r.load[1])
	p("shared: other work running at the same time lowers every figure below except the cost ratio.")
	p("")
	r.goals(p)

	p("## 1. PostgreSQL baseline (pgbench, scale 10, %d clients)", r.clients)
	p("")
	p("| mode | tps | average latency ms |")
	p("|---|---|---|")
	for _, pb := range r.pgbench {
		p("| %s | %.0f | %.2f |", pb.mode, pb.tps, pb.latencyMs)
	}
	p("")

	m := r.mixed
	p("## 2. Mixed register/commit/reveal load (%d lobbies x %d players, weighted, random bots)", r.lobbies, r.players)
	p("")
	if r.mixedErr != nil {
		p("The run reported: `%v`.", r.mixedErr)
		p("")
	}
	p("| | actions/s | p50 ms | p90 ms | p99 ms | max ms |")
	p("|---|---|---|---|---|---|")
	for _, op := range []string{bot.OpRegister, bot.OpCommit, bot.OpReveal, bot.OpLeave} {
		o := m.Op(op)
		if o.Count > 0 {
			p("| %s | %.0f | %s | %s | %s | %s |", op, o.PerSec, msf(o.Latency.P50), msf(o.Latency.P90), msf(o.Latency.P99), msf(o.Latency.Max))
		}
	}
	a := m.Actions
	p("| **all actions** | **%.0f** | %s | %s | %s | %s |", a.PerSec, msf(a.Latency.P50), msf(a.Latency.P90), msf(a.Latency.P99), msf(a.Latency.Max))
	p("")
	p("- over %s; %d actions; games: %s", m.Elapsed.Round(time.Millisecond), a.Count, counts(m.Games))
	p("- refusals and errors by code: %s (`wrong_stage` is expected: 2%% of the bots skip a commit so", counts(m.ErrorsByCode))
	p("  that stages also end by deadline, and an action that loses the race against an expiry is refused)")
	p("- 5xx responses: %d; ledger check through the API: %s", m.Server5xx, ledger(m))
	p("- **ratio actions/s : pgbench TPC-B tps = %.2f** (goal >= 0.5: %s); p99 %s ms (goal < 20 ms: %s)",
		r.ratio, goal(r.ratio >= 0.5), msf(a.Latency.P99), goal(a.Latency.P99 < 20*time.Millisecond))
	p("")

	big := r.big
	p("## 3. One big lobby (weighted resolution, %d players)", big.size)
	p("")
	p("Size: %s.", big.sizing)
	p("")
	if big.err != nil {
		p("The run reported: `%v`.", big.err)
		p("")
	}
	p("| phase | time |")
	p("|---|---|")
	p("| register everyone (first registration to round 1) | %s |", big.register.Round(time.Millisecond))
	for _, rr := range big.rounds {
		p("| round %d: commit %d players / reveal | %s / %s |", rr.Round, rr.Revealed, rr.Commit.Round(time.Millisecond), rr.Reveal.Round(time.Millisecond))
	}
	p("| whole game, first registration to %s | %s |", orDash(big.outcome), big.total.Round(time.Millisecond))
	p("")
	p("Played with %d actions in flight, each on a connection of its own. Per-action latency, big lobby", big.clients)
	p("(%d in flight) and one 10-player lobby (games back to back, %d in flight), in ms:", big.clients, r.clients)
	p("")
	p("| action | big lobby p50 | p99 | max | 10 players p50 |")
	p("|---|---|---|---|---|")
	for _, op := range []string{bot.OpRegister, bot.OpCommit, bot.OpReveal} {
		o := big.stats.Op(op)
		p("| %s | %s | %s | %s | %s |", op, msf(o.Latency.P50), msf(o.Latency.P99), msf(o.Latency.Max), msf(r.baseline.Op(op).Latency.P50))
	}
	ba := big.stats.Actions
	p("| **all actions** | %s | %s | %s | %s |", msf(ba.Latency.P50), msf(ba.Latency.P99), msf(ba.Latency.Max), msf(r.baseline.Actions.Latency.P50))
	p("")
	p("Big-lobby throughput %.0f actions/s (%d actions). All of them queue for one lobby's batches (at most 256", ba.PerSec, ba.Count)
	p("actions a batch, one transaction each), so their latency is mostly that queue: the per-round times")
	p("above are the check that an action's cost does not grow with the lobby.")
	p("")
	p("CPU per action in the big lobby: rpsd %s µs + PostgreSQL %s µs = %s µs, **%.2f** TPC-B transactions (goal <= 0.5: %s).",
		usf(big.cpu.rpsd), usf(big.cpu.pg), usf(big.cpu.rpsd+big.cpu.pg), big.costRatio, goal(big.costRatio > 0 && big.costRatio <= 0.5))
	p("")
	p("Where PostgreSQL's time went in the big lobby, per action (pg_stat_statements over the big lobby alone):")
	p("")
	classTable(p, big.classes)
	p("")

	lag := m.Lag
	p("The big lobby's statements with the longest single call (pg_stat_statements over the big lobby")
	p("alone). The set-based statements of a stage change (eliminating, counting, sealing, splitting)")
	p("run inside the action that completes the stage, so their longest calls, and the longest action")
	p("above, bound that stage-change transaction:")
	p("")
	p("| calls | max ms | mean ms | statement |")
	p("|---|---|---|---|")
	for _, s := range big.statements {
		p("%s", s)
	}
	p("")
	p("The stage-change transactions themselves at 100,000 players, measured alone (store's BenchmarkStageChange:")
	p("a round of 100,000 seeded with SQL, then the last commit, which seals every commitment and opens the")
	p("reveal stage, and the last reveal, which counts, eliminates, seals every reveal and opens round 2;")
	p("each is one transaction holding the lobby's lock for its duration):")
	p("")
	p("```")
	for _, l := range r.stageChange {
		p("%s", l)
	}
	p("```")
	p("")
	p("Longest action in the big lobby (the one that changes a stage, with its set-based statements): commit %s ms, reveal %s ms, register %s ms.",
		msf(big.stats.Op(bot.OpCommit).Latency.Max), msf(big.stats.Op(bot.OpReveal).Latency.Max), msf(big.stats.Op(bot.OpRegister).Latency.Max))
	p("")

	p("## 4. Stage-change lag under the mixed load")
	p("")
	p("Measured by the bots as the time from a stage's deadline to the moment a client long-polling the")
	p("lobby's events receives the event that applies the expiry (server clock, corrected by `serverTime`).")
	p("The event's own `at` is the deadline itself by design (a stage opened by an expiry starts at the")
	p("deadline), so the lag is only visible on arrival. Only expiries the clock worker applied while a poll")
	p("was already waiting count. This includes the notification and HTTP delivery, so it bounds the clock")
	p("worker's own lag (which rpsd exports as `rps_clock_lag_seconds`) from above.")
	p("")
	p("n=%d, p50 %s ms, p90 %s ms, p99 **%s ms**, max %s ms (goal p99 < 50 ms: %s).", lag.Count, msf(lag.P50), msf(lag.P90),
		msf(lag.P99), msf(lag.Max), goal(lag.Count > 0 && lag.P99 < 50*time.Millisecond))
	p("")
	p("The server's own view, `rps_clock_lag_seconds` (deadline to the expiry's transaction, all expiries")
	p("of the run so far, histogram buckets): %s.", r.clockLag)
	p("")

	p("## 5. Engine benchmarks (`go test -run '^$' -bench . -benchtime 300ms -benchmem ./engine`)")
	p("")
	p("```")
	for _, l := range r.engine {
		p("%s", l)
	}
	p("```")
	p("")

	p("## 6. Server cost per action")
	p("")
	p("CPU time from /proc (user + system; PostgreSQL is its postmaster, its live children and the children")
	p("it reaped; the bots and pgbench's client are not counted):")
	p("")
	p("- pgbench TPC-B: PostgreSQL %s µs per transaction", usf(r.tpcbCPU))
	p("- mixed load: rpsd %s µs + PostgreSQL %s µs = %s µs per action (%d actions; rpsd %s, PostgreSQL %s in all)",
		usf(r.perAction.rpsd), usf(r.perAction.pg), usf(r.perAction.rpsd+r.perAction.pg), r.mixed.Actions.Count,
		r.mixedCPU.rpsd.Round(time.Millisecond), r.mixedCPU.pg.Round(time.Millisecond))
	p("- **cost ratio %.2f** (goal <= 1.5: %s). The mixed load's figure includes everything the server does", r.costRatio, goal(r.costRatio > 0 && r.costRatio <= 1.5))
	p("  for it: the bots' event long-polls and lobby reads, the clock worker's expiries, TLS-free HTTP.")
	p("- big lobby: rpsd %s µs + PostgreSQL %s µs = %s µs per action (%d actions); **cost ratio %.2f** (goal <= 0.5: %s)",
		usf(r.big.cpu.rpsd), usf(r.big.cpu.pg), usf(r.big.cpu.rpsd+r.big.cpu.pg), r.big.stats.Actions.Count, r.big.costRatio,
		goal(r.big.costRatio > 0 && r.big.costRatio <= 0.5))
	p("")
	p("Where PostgreSQL's time went in the mixed load, per action (pg_stat_statements; execution time only:")
	p("parsing, planning, the protocol and the commit's WAL flush are in the CPU figure above, not here):")
	p("")
	classTable(p, r.classes)
	p("")
	p("## 7. CPU profile of rpsd during the mixed load (`go tool pprof -top`)")
	p("")
	p("```")
	for _, l := range r.profile {
		p("%s", l)
	}
	p("```")
	p("")

	p("## 8. CPU profile of rpsd during the big lobby (15 s into its registrations, `go tool pprof -top`)")
	p("")
	p("```")
	for _, l := range r.big.profile {
		p("%s", l)
	}
	p("```")
	p("")

	p("%s", findings)
	p("## Where the database time goes (pg_stat_statements during the mixed load)")
	p("")
	p("| calls | total ms | mean ms | statement |")
	p("|---|---|---|---|")
	for _, s := range r.statements {
		p("%s", s)
	}
	p("")
	for _, n := range r.notes {
		p("Note: %s", n)
	}
	return b.String()
}

func usf(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d.Nanoseconds())/1000) }

// goals is the table (issue 26): every figure next to its goal, with the figures the
// issue measured on main before its changes (make bench on a fresh clone, 2026-11-24).
func (r *report) goals(p func(string, ...any)) {
	a := r.mixed.Actions
	big := r.big
	bigFigure := fmt.Sprintf("%d players; registration %s; %s after %s", big.size, big.register.Round(time.Second),
		orDash(big.outcome), big.total.Round(time.Second))
	bigMet := big.size >= 100_000 && big.outcome == "finished" && big.total < 2*time.Minute
	lag := r.mixed.Lag
	p("## Goals")
	p("")
	p("| measure | before (issue 26: main, 2026-11-24) | this run | goal | |")
	p("|---|---|---|---|---|")
	p("| server CPU per action, mixed load : PostgreSQL CPU per pgbench TPC-B transaction | 5.33 (756 + 1,538 µs : 430 µs) | %.2f (%s + %s µs : %s µs) | <= 1.5 | %s |",
		r.costRatio, usf(r.perAction.rpsd), usf(r.perAction.pg), usf(r.tpcbCPU), goal(r.costRatio > 0 && r.costRatio <= 1.5))
	p("| server CPU per action in the big lobby (%d in flight) : the same | not measured | %.2f (%s + %s µs) | <= 0.5 | %s |",
		big.clients, big.costRatio, usf(big.cpu.rpsd), usf(big.cpu.pg), goal(big.costRatio > 0 && big.costRatio <= 0.5))
	p("| 100,000-player weighted game, first registration to winner | no winner after 5m24s (registration alone 3m03s) | %s | < 2 min | %s |", bigFigure, goal(bigMet))
	p("| mixed actions/s : pgbench TPC-B tps | 651 : 3,401 = 0.19 | %.0f : %.0f = %.2f | >= 0.5 | %s |", a.PerSec, r.pgbench[0].tps, r.ratio, goal(r.ratio >= 0.5))
	p("| mixed p99 | 45 ms | %s ms | < 20 ms | %s |", msf(a.Latency.P99), goal(a.Count > 0 && a.Latency.P99 < 20*time.Millisecond))
	p("| stage-change lag p99 | 83 ms | %s ms | < 50 ms | %s |", msf(lag.P99), goal(lag.Count > 0 && lag.P99 < 50*time.Millisecond))
	p("")
}

// classTable renders where PostgreSQL's time went, per action, by class of statement.
func classTable(p func(string, ...any), classes []statementClass) {
	p("| statements | calls per action | µs per action |")
	p("|---|---|---|")
	var calls, micros float64
	for _, c := range classes {
		p("| %s | %.2f | %.0f |", c.name, c.calls, c.micros)
		calls, micros = calls+c.calls, micros+c.micros
	}
	p("| **all** | **%.2f** | **%.0f** |", calls, micros)
}

func ledger(m bot.Report) string {
	if m.LedgerOK == nil {
		return "not run"
	}
	if *m.LedgerOK {
		return "ok"
	}
	return "**failed** " + m.LedgerProblem
}

func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	return strings.Join(parts, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// rpsdPoolSize is the database pool the bench gives rpsd (its default).
const rpsdPoolSize = 16

// findings is what profiling showed and what was changed because of it (issue 26); the figures
// above are this run's own. The findings of earlier rounds are in the history of this file.
const findings = `## What profiling found, and what changed (issue 26)

The write path was rebuilt around one unit of work per lobby (see README, "How it is built"): an
action is a ` + "`tournament`" + ` operation that ` + "`store.Act`" + ` runs in its lobby's batch; each kind of write is
one statement for the whole batch; ` + "`api`" + ` renders after COMMIT from the domain result, the same
code for a fresh answer and a replay. What the measurements showed on the way (the machine was
shared throughout, its load average between 10 and 27 on 2 cores, so wall-clock figures moved by
a factor of 3 from run to run; CPU time read from /proc and from the test process moved much
less, and is what is quoted):

- **Statements per action.** A batch of one action (the mixed load's common case) now runs BEGIN,
  the lobby's lock, its game, one read for all its actions (instant and newest heartbeat, stored
  result, the actor's account, registration and move), one statement for all its writes, COMMIT:
  6 statements, against about 11 before. A batch of 256 runs the same 6.
- **Set-based writes and the plan cache.** The first form wrote every kind of row from arrays
  (` + "`unnest`" + `). Postgres estimates a parameter array at 100 rows in a generic plan and at its real
  length in a custom one, so it never settled on the generic plan and planned the whole statement
  again on every execution: in-process, 10-player games through ` + "`Act`" + `, PostgreSQL's CPU per action
  was 758 µs against 367 µs for the old path (forcing generic plans: 550 µs). A kind with one row
  now goes as a VALUES of scalar parameters (exact estimates, one generic plan), several as
  ` + "`unnest`" + `: about 320 µs, some 10-15% under the old path's 367 to 378 µs in the same test.
- **The big lobby.** In-process (` + "`store`" + ` and ` + "`tournament`" + ` only, no HTTP), 20,000 players
  with 256 actions in flight, bets and idempotency keys: PostgreSQL 51 to 87 µs and the store's Go 35
  to 50 µs per action; batches of up to 256 (was 64) took the Go side from about 50 to 35 µs.
- **Tokens.** pprof of rpsd in the big lobby: ` + "`AccountByToken`" + ` 19% of its CPU. The token cache
  trusted an entry for 30 s and held 100,000: a player acting once a stage was read from the
  database on nearly every action. It now trusts one for 5 minutes (changes to an account still
  evict its tokens at once, and every action reads its account's status) and holds 250,000.
- **Not per action.** The events every action appends, a batch's notification and the canonical
  body of a commit or a reveal (its idempotency key's hash) are now built by hand in RFC 8785 form
  (tests compare each with ` + "`tournament.Canonical`" + `); a lobby's signed head is signed once for every
  response that shows it within a second; a batch sends one notification per lobby, carrying its
  events, not one per event.
- **Where rpsd's CPU goes now** (sections 7 and 8): system calls of the HTTP requests and of the
  two round trips per batch (16-17%), scheduling and garbage collection; request validation about
  2%. In the mixed load every action is a request, two round trips, a notification and a long
  poll's answer: fixed costs per action that batching cannot share when two actions rarely meet
  in one lobby.
`
