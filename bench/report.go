package main

import (
	"fmt"
	"strconv"
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
	p("In the mixed load every player follows its lobby as the Android app does: it holds an event stream of the lobby")
	p("(`GET /v1/lobbies/{id}/events/stream`, resumed with `Last-Event-ID` when it ends), so every event goes out once")
	p("per player. A second run of the same load has every player long-poll the lobby's events itself")
	p("(`GET /v1/lobbies/{id}/events?wait=`), as a generated client does: a generated client reads a response to its")
	p("end, so it cannot hold a stream, and each player's client follows the lobby on its own. The bots of a lobby")
	p("act on whichever of their streams or polls brings an event first (the bots read every event once per player,")
	p("on the same cores as the server). The big lobby and the 10-player baseline")
	p("follow their lobby by one long poll, shared by its bots (100,000 phones' streams do not fit on this machine).")
	p("Player accounts are created and funded directly in the database: the figures measure play, not sign-up;")
	p("each then binds its first key through the API (`POST /v1/me/keys`), and every action is signed by it.")
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

	p("## 2. Mixed register/commit/reveal load (%d lobbies x %d players, weighted, random bots)", r.lobbies, r.players)
	p("")
	p("### Players following their lobby by event stream, as the Android app does (the headline)")
	p("")
	r.mixed.table(p)
	r.mixed.figures(p, r.tpcbCPU)
	p("")
	p("### The same load, players long-polling, as generated clients do")
	p("")
	r.polled.table(p)
	r.polled.figures(p, r.tpcbCPU)
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
	p("Big-lobby throughput %.0f actions/s (%d actions); **actions per transaction: %s**. All of them queue for one", ba.PerSec, ba.Count, big.writes)
	p("lobby's batches, so their latency is mostly that queue: the per-round times above are the check that an")
	p("action's cost does not grow with the lobby.")
	p("")
	p("CPU per action in the big lobby: rpsd %s µs + PostgreSQL %s µs = %s µs, **%.2f** TPC-B transactions (goal <= 0.5: %s).",
		usf(big.cpu.rpsd), usf(big.cpu.pg), usf(big.cpu.rpsd+big.cpu.pg), big.costRatio, goal(big.costRatio > 0 && big.costRatio <= 0.5))
	p("")
	p("Where PostgreSQL's time went in the big lobby, per action (pg_stat_statements over the big lobby alone):")
	p("")
	classTable(p, big.classes)
	p("")

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
	p("Measured by the bots as the time from a stage's deadline to the moment a player's client following the")
	p("lobby (its event stream; in the second run, its long poll) receives the event that applies the expiry")
	p("(server clock, corrected by `serverTime`). The event's own `at` is the deadline itself by design (a stage")
	p("opened by an expiry starts at the deadline), so the lag is only visible on arrival. Only expiries the clock")
	p("worker applied while the stream or poll was already open count. This includes the notification and HTTP")
	p("delivery, so it bounds the clock worker's own lag (which rpsd exports as `rps_clock_lag_seconds`) from above.")
	p("")
	for _, m := range []mixedResult{r.mixed, r.polled} {
		lag := m.stats.Lag
		p("- players following by %s: n=%d, p50 %s ms, p90 %s ms, p99 **%s ms**, max %s ms (goal p99 < 50 ms: %s); the server's", m.follow, lag.Count,
			msf(lag.P50), msf(lag.P90), msf(lag.P99), msf(lag.Max), goal(lag.Count > 0 && lag.P99 < 50*time.Millisecond))
		p("  own view, `rps_clock_lag_seconds` over the measured window (deadline to the expiry's transaction, histogram buckets): %s.", m.clockLag)
	}
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
	p("it reaped; the bots and pgbench's client are not counted), in the mixed load over the window whose actions")
	p("the bots count (the lobbies' creation and the wind-down after it left out):")
	p("")
	p("- pgbench TPC-B: PostgreSQL %s µs per transaction", usf(r.tpcbCPU))
	for _, m := range []mixedResult{r.mixed, r.polled} {
		p("- mixed load, players following by %s: rpsd %s µs + PostgreSQL %s µs = %s µs per action (%d actions; rpsd %s, PostgreSQL %s in all);",
			m.follow, usf(m.perAction.rpsd), usf(m.perAction.pg), usf(m.perAction.rpsd+m.perAction.pg), m.stats.Actions.Count,
			m.cpu.rpsd.Round(time.Millisecond), m.cpu.pg.Round(time.Millisecond))
		p("  **cost ratio %.2f** (goal <= 1.5: %s)", m.costRatio, goal(m.costRatio > 0 && m.costRatio <= 1.5))
	}
	p("- big lobby: rpsd %s µs + PostgreSQL %s µs = %s µs per action (%d actions); **cost ratio %.2f** (goal <= 0.5: %s)",
		usf(r.big.cpu.rpsd), usf(r.big.cpu.pg), usf(r.big.cpu.rpsd+r.big.cpu.pg), r.big.stats.Actions.Count, r.big.costRatio,
		goal(r.big.costRatio > 0 && r.big.costRatio <= 0.5))
	p("- %s", r.verifyLine())
	p("")
	p("The mixed load's figures include everything the server does for it: the players' event streams or long")
	p("polls, their lobby reads, the clock worker's expiries, TLS-free HTTP.")
	p("")
	p("rpsd's CPU per action by part of its work, in µs (its CPU per action above, shared out as the samples of")
	p("its CPU profile over the middle of each run; %s):", "the big lobby's over 15 s of its registrations")
	p("")
	p("| part | mixed, streams | mixed, long polls | big lobby |")
	p("|---|---|---|---|")
	for _, part := range cpuParts {
		p("| %s | %s | %s | %s |", part, r.mixed.part(part), r.polled.part(part), partCell(r.big.profile, part, r.big.cpu.rpsd))
	}
	p("")
	p("%s", cpuSplitRule)
	p("")
	for _, m := range []mixedResult{r.mixed, r.polled} {
		p("Where PostgreSQL's time went in the mixed load, players following by %s, per action (pg_stat_statements;", m.follow)
		p("execution time only: parsing, planning, the protocol and the commit's WAL flush are in the CPU figure above,")
		p("not here):")
		p("")
		classTable(p, m.classes)
		p("")
	}
	p("## 7. CPU profile of rpsd during the mixed load, players following by stream (`go tool pprof -top`)")
	p("")
	p("```")
	for _, l := range r.mixed.profile.top {
		p("%s", l)
	}
	p("```")
	p("")

	p("## 8. CPU profile of rpsd during the big lobby (15 s into its registrations, `go tool pprof -top`)")
	p("")
	p("```")
	for _, l := range r.big.profile.top {
		p("%s", l)
	}
	p("```")
	p("")

	p("%s", findings)
	p("## Where the database time goes (pg_stat_statements during the mixed load, players following by stream)")
	p("")
	p("| calls | total ms | mean ms | statement |")
	p("|---|---|---|---|")
	for _, s := range r.mixed.statements {
		p("%s", s)
	}
	p("")
	for _, n := range r.notes {
		p("Note: %s", n)
	}
	return b.String()
}

func usf(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d.Nanoseconds())/1000) }

// goals is the table (issue 30): every figure next to its goal, with the figures the
// issue measured on main before its changes (make bench on a fresh clone of 19665d5, whose
// mixed load followed each lobby by one long poll), then the figures the issue asked to see.
func (r *report) goals(p func(string, ...any)) {
	m := r.mixed
	a := m.stats.Actions
	big := r.big
	bigFigure := fmt.Sprintf("%d players; registration %s; %s after %s", big.size, big.register.Round(time.Second),
		orDash(big.outcome), big.total.Round(time.Second))
	bigMet := big.size >= 100_000 && big.outcome == "finished" && big.total < time.Minute
	lag := m.stats.Lag
	p("## Goals")
	p("")
	p("The mixed load's figures are the headline run's, its players following their lobbies by event stream.")
	p("")
	p("| measure | before (issue 30: main at 19665d5) | this run | goal | |")
	p("|---|---|---|---|---|")
	p("| server CPU per action, mixed load : PostgreSQL CPU per pgbench TPC-B transaction | 4.98 (846 + 1,318 µs : 434 µs) | %.2f (%s + %s µs : %s µs) | <= 1.5 | %s |",
		m.costRatio, usf(m.perAction.rpsd), usf(m.perAction.pg), usf(r.tpcbCPU), goal(m.costRatio > 0 && m.costRatio <= 1.5))
	p("| the same, big lobby (%d in flight) | 0.84 (175 + 192 µs) | %.2f (%s + %s µs) | <= 0.5 | %s |",
		big.clients, big.costRatio, usf(big.cpu.rpsd), usf(big.cpu.pg), goal(big.costRatio > 0 && big.costRatio <= 0.5))
	p("| 100,000-player weighted game, first registration to winner | 1m40s (registration 40 s) | %s | < 1 min | %s |", bigFigure, goal(bigMet))
	p("| mixed actions/s : pgbench TPC-B tps | 655 : 3,244 = 0.20 | %.0f : %.0f = %.2f | >= 0.5 | %s |", a.PerSec, r.pgbench[0].tps, m.ratio, goal(m.ratio >= 0.5))
	p("| mixed p99 | 47.5 ms | %s ms | < 20 ms | %s |", msf(a.Latency.P99), goal(a.Count > 0 && a.Latency.P99 < 20*time.Millisecond))
	p("| stage-change lag p99 | 135 ms | %s ms | < 50 ms | %s |", msf(lag.P99), goal(lag.Count > 0 && lag.P99 < 50*time.Millisecond))
	p("| actions per transaction, mixed load / big lobby (`rps_write_actions_total` / `rps_write_transactions_total`) | about 1 / not measured (a batch per lobby) | %s / %s | | |",
		m.writes.ratio(), big.writes.ratio())
	p("| statements per action, mixed load (pg_stat_statements calls / actions) | 4.8 | %s | | |", statementsPerAction(m.classes))
	p("| rpsd CPU per action, mixed load: HTTP and JSON / decision / database round trips / fan-out / rest (section 6) | not measured | %s µs | | |", m.parts())
	pm := r.polled
	p("| the mixed load with players long-polling: actions/s : tps, p99, cost ratio | (one long poll per lobby) 0.20, 47.5 ms, 4.98 | %.2f, %s ms, %.2f | | |",
		pm.ratio, msf(pm.stats.Actions.Latency.P99), pm.costRatio)
	p("")
}

// table renders a mixed run's throughput and latency by action.
func (m mixedResult) table(p func(string, ...any)) {
	if m.err != nil {
		p("The run reported: `%v`.", m.err)
		p("")
	}
	p("| | actions/s | p50 ms | p90 ms | p99 ms | max ms |")
	p("|---|---|---|---|---|---|")
	for _, op := range []string{bot.OpRegister, bot.OpCommit, bot.OpReveal, bot.OpLeave} {
		o := m.stats.Op(op)
		if o.Count > 0 {
			p("| %s | %.0f | %s | %s | %s | %s |", op, o.PerSec, msf(o.Latency.P50), msf(o.Latency.P90), msf(o.Latency.P99), msf(o.Latency.Max))
		}
	}
	a := m.stats.Actions
	p("| **all actions** | **%.0f** | %s | %s | %s | %s |", a.PerSec, msf(a.Latency.P50), msf(a.Latency.P90), msf(a.Latency.P99), msf(a.Latency.Max))
	p("")
}

// figures renders a mixed run's headline lines.
func (m mixedResult) figures(p func(string, ...any), tpcbCPU time.Duration) {
	a := m.stats.Actions
	p("- over %s; %d actions; games: %s; event streams opened %d, long polls %d", m.stats.Elapsed.Round(time.Millisecond), a.Count,
		counts(m.stats.Games), m.stats.Op(bot.OpStream).Count, m.stats.Op(bot.OpEvents).Count)
	p("- refusals and errors by code: %s (`wrong_stage` is expected: 2%% of the bots skip a commit so", counts(m.stats.ErrorsByCode))
	p("  that stages also end by deadline, and an action that loses the race against an expiry is refused)")
	p("- 5xx responses: %d; ledger check through the API: %s", m.stats.Server5xx, ledger(m.stats))
	p("- **ratio actions/s : pgbench TPC-B tps = %.2f** (goal >= 0.5: %s); p99 %s ms (goal < 20 ms: %s)",
		m.ratio, goal(m.ratio >= 0.5), msf(a.Latency.P99), goal(a.Latency.P99 < 20*time.Millisecond))
	p("- **cost ratio %.2f**: rpsd %s µs + PostgreSQL %s µs per action : %s µs per TPC-B transaction (goal <= 1.5: %s)",
		m.costRatio, usf(m.perAction.rpsd), usf(m.perAction.pg), usf(tpcbCPU), goal(m.costRatio > 0 && m.costRatio <= 1.5))
	p("- **actions per transaction: %s**", m.writes)
	p("- **statements per action: %s** (every statement pg_stat_statements counted over the measured window, the clients' reads,", statementsPerAction(m.classes))
	p("  the clock worker and BEGIN/COMMIT included, per action; by class in section 6)")
	p("- **rpsd's CPU per action by part** (HTTP and JSON / the decision / database round trips / fan-out / the rest): %s µs", m.parts())
}

// parts is rpsd's CPU per action in each part of its work, in the order of cpuParts.
func (m mixedResult) parts() string {
	if m.profile.splitErr != "" || m.profile.split.total == 0 {
		return "unknown (" + orDash(m.profile.splitErr) + ")"
	}
	var out []string
	for _, part := range cpuParts {
		out = append(out, usf(m.profile.split.perAction(part, m.perAction.rpsd)))
	}
	return strings.Join(out, " / ")
}

// part is one cell of the table of rpsd's CPU by part.
func (m mixedResult) part(part string) string { return partCell(m.profile, part, m.perAction.rpsd) }

// partCell is rpsd's CPU per action in one part, and its share, or why it is unknown.
func partCell(pr profileResult, part string, rpsd time.Duration) string {
	if pr.splitErr != "" || pr.split.total == 0 {
		return "unknown"
	}
	return fmt.Sprintf("%s (%.0f%%)", usf(pr.split.perAction(part, rpsd)), 100*float64(pr.split.byPart[part])/float64(pr.split.total))
}

// statementsPerAction is every statement's calls per action, summed over the classes.
func statementsPerAction(classes []statementClass) string {
	if len(classes) == 0 {
		return "unknown"
	}
	var calls float64
	for _, c := range classes {
		calls += c.calls
	}
	return fmt.Sprintf("%.2f", calls)
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

// findings is what profiling showed and what was changed because of it (issue 30); the figures
// above are this run's own. The findings of earlier rounds are in the history of this file.
const findings = `## What profiling found, and what changed (issue 30)

Issue 30 measured the write path at about five TPC-B transactions of CPU per action, because the
mixed load's actions almost never met another action of their own lobby, so each paid a
transaction of its own. What changed, and what the measurements on the way showed (a shared
machine, its load average between 7 and 29 on 2 cores while they were taken, so CPU times are
quoted, not rates):

- **Group commit across lobbies** (` + "`store/batch.go`" + `). One committer per replica
  (` + "`RPSD_COMMITTERS`" + `, default 1) runs one transaction at a time; the actions that arrive
  meanwhile, of whatever lobbies, share the next one, their lobbies locked in id order one
  statement each. In the mixed load (8 in flight) a transaction now carries about 4 actions (the
  table above, from rpsd's own counters), against 1 before. With 4 committers, measured side by
  side on the loaded machine, it was 1.1 actions a transaction and PostgreSQL's CPU per action
  rose by 70%: the default stays 1.
- **One statement text, one plan** (` + "`store/writes.go`" + `). The held writes were a statement
  whose text depended on the kinds of rows present and on one row (VALUES) or several (unnest);
  they are now fixed texts over arrays, sent only when they have rows, and the committer's
  transaction sets ` + "`plan_cache_mode = force_generic_plan`" + `: left to choose, PostgreSQL planned
  the one text again on every execution (1.1-1.3 ms of planning per action in batches of one).
  A CTE with no rows still opens its tables and indexes (170-250 µs of a backend's CPU for an
  empty statement), so registrations, postings, new games and audit rows go in statements of
  their own, sent only when a batch has some.
- **The accounts trigger.** Every balance change (bets, refunds, payouts) evaluated the
  token-notification trigger's condition by turning both rows into jsonb (about 30 µs of CPU
  each); migration 0015 compares the columns instead.
- **Fan-out** (` + "`api/fanout.go`" + `). An event is encoded once per lobby and position and its head
  signed once, whoever follows it: per follower and event, a stream's allocations went from 21.7
  to 4.9 and its handler's CPU from 37 to 22 µs; followers woken together sign one head, not one
  each (31-40 signatures for 24 events before, 24 now).
- **One parse of a body** (` + "`api/validate.go`" + `). The strict server binds the value the validator
  decoded instead of decoding the bytes again; a reveal's size and a commitment's form are each
  checked once.
- **Plans that do not depend on when they were made** (` + "`store/tx.go`" + `). A connection makes a
  statement's generic plan once and keeps it. Made on a new database (as every run of this bench
  starts), from the statistics of empty tables, the held writes' plan joined the batch's rows to
  whole tables by a hash: a minute into the mixed load one reveal read 2,253 moves
  (` + "`auto_explain`" + `). The committer's transaction now turns sequential scans and hash joins off
  with the generic plans, so every row is found by its key whatever the statistics said.
- **No foreign keys on the rows every action writes** (migration 0018). A foreign key's check
  is a query and a row lock (a write to the row referred to, and WAL) per row: an event had
  three, a move, a registration, an idempotency record and each ledger entry one or more.
  ` + "`auto_explain`" + ` timed them at about a third of the held writes' statement, and store's
  ` + "`BenchmarkHeldWrites`" + ` measured 14-26% less PostgreSQL CPU per action without them
  (batches of 4; runs on a noisy machine). The events' chain keeps its key; the others are
  checked at the end of every store test.
- **No CHECK constraints on the rows every action writes but money's** (migration 0019).
  PostgreSQL rebuilds a table's checks from their stored text for every statement that writes it
  (nothing is kept between statements): ` + "`ExecConstraints`" + ` was 12% of PostgreSQL's samples in the
  mixed load, for the 40 checks of the five tables every action writes. Without them, store's
  ` + "`BenchmarkHeldWrites`" + ` spent 24-30% less execution time on the held writes (batches of 4,
  three runs each way). The checks that guard money stay (balances, escrow, payouts, the ledger);
  every store test ends by adding the others back in a transaction it rolls back, which validates
  every row against PostgreSQL's own definitions.
- **Uuid arrays in binary** (` + "`store/query.go`" + `, ` + "`uuidArray`" + `). pgx has no binary encoding of a
  string as a uuid: for every uuid array of every statement (about ten in a batch's held
  writes) it built an error, searched its plans again and fell back to text, which PostgreSQL
  then parsed element by element (` + "`pgtype.Map.Encode`" + ` was 7% of rpsd's CPU in the mixed load).
  They are now sent as uuids; the profile's database round trips went from 388 to 258 µs of
  rpsd's CPU per action.
- **The garbage collector at ` + "`GOGC=400`" + `** (` + "`cmd/rpsd`" + `, unless ` + "`GOGC`" + ` is set). At Go's default the
  collector and runtime took 177 µs of rpsd's CPU per action in the mixed load, at 400 80 µs.
- **The clock's expiries in a committer of their own** (` + "`store/batch.go`" + `). In the players'
  queue an expiry waited for the running transaction, then ran in the next one with the actions
  that arrived meanwhile: 16 ms from its start to its answer at the median of a short mixed load,
  7.7 ms in a committer of its own (the expiry's instant 10 ms after the deadline at the median
  before, 5 ms after).
- **One setting aside per stage change** (` + "`store/txconn.go`" + `). A stage change's statements over
  its round each set the committer's plans aside and back (two statements each, 0.78 per action
  in the mixed load); consecutive ones now share one setting aside, and generic plans come back
  before the next statement of another kind.
- **A stage change re-reads only what it changed** (` + "`store/tx.go`" + `). A round's elimination dropped
  every registration the batch held, so each later action of the batch, whatever its lobby, read
  its player again in a round trip of its own; and the resolving action's answer read its move in
  the round just started, which cannot exist yet. The elimination now drops its own game's rows
  only, and a game or round the transaction opened has no rows but those it holds: a batch that
  resolves a round and then commits in another lobby makes one such read, not three.
- **One write deadline per follower and event** (` + "`api/events.go`" + `). A stream's write and its flush
  each set the connection's write deadline (2.2% of rpsd's CPU in the mixed load); the flush now
  shares the write's.
- **Tried and left out.** Holding an idle committer back up to a millisecond so that more
  actions share its transaction: the mixed load's transactions carried 3.9 actions either way,
  because almost every action arrives while one is running; what bounds them is how many are
  in flight (8) and how many of those are elsewhere (in HTTP, rendering, a bot's turn).
- **A small game's stage change without a round trip** (` + "`store/rounds.go`" + `). A batch reads whole,
  with its locks and in the same round trip, the rounds of games of 64 players or fewer that its
  calls may close; their stage changes count the reveals, seal the values and name the last
  player from those rows and what the transaction holds. Before, the count and each seal was a
  round trip of its own in the middle of the batch (about a third of the mixed load's
  transactions carry a stage change), and every action of the batch waited for them.
- **Where PostgreSQL's CPU goes now** (` + "`perf`" + ` over the backends during the mixed load). The
  profile is flat. Each statement pays for starting its plan (` + "`ExecutorStart`" + `, 15% of the
  samples: opening its tables and indexes) and its commit; the rest is B-tree inserts and
  lookups, hash lookups (catalog and buffers), and the events' chain key (its check is a query
  per event). That is the cost of a statement per table per batch, which more actions per
  transaction would spread thinner; with 8 in flight a transaction carries about 4.
- **What is left** (sections 6 and 7): the held writes remain the largest PostgreSQL cost per
  action; with every player streaming, the fan-out's writes (a system call per follower and
  event) are a large part of rpsd's CPU; and the signatures, a player's verified per action and
  the lobby's head signed per event, are a floor the server cannot batch away (see the line on
  signatures above).
`

// verifyLine reports the cost of verifying a player's signature, which every signed action pays
// once (issue 31), and of signing a lobby's head, which every event written pays once, beside
// rpsd's CPU per action in the mixed load.
func (r *report) verifyLine() string {
	verify, ok := nsPerOp(r.crypto, "BenchmarkActionVerify")
	if !ok {
		return fmt.Sprintf("verifying a player's signature: not measured (%s)", strings.Join(r.crypto, "; "))
	}
	line := fmt.Sprintf("verifying a player's signature (every signed action, once: its message rebuilt and Ed25519-verified, "+
		"tournament's `BenchmarkActionVerify`): **%s µs per action**", usf(verify))
	rpsd := r.mixed.perAction.rpsd
	if rpsd > 0 {
		line += fmt.Sprintf(", %.1f%% of rpsd's %s µs per action in the mixed load", 100*float64(verify)/float64(rpsd), usf(rpsd))
	}
	if sign, ok := nsPerOp(r.crypto, "BenchmarkHeadSign"); ok {
		line += fmt.Sprintf("; signing a lobby's head (every event written, once, whoever follows the lobby: "+
			"tournament's `BenchmarkHeadSign`): **%s µs per event**", usf(sign))
		if rpsd > 0 {
			line += fmt.Sprintf(", %.1f%% of rpsd's CPU per action at one event per action", 100*float64(sign)/float64(rpsd))
		}
	}
	return line
}

// nsPerOp is the ns/op of the benchmark named name among lines.
func nsPerOp(lines []string, name string) (time.Duration, bool) {
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 0 || !strings.HasPrefix(f[0], name+"-") {
			continue
		}
		for i := 1; i < len(f); i++ {
			if f[i] == "ns/op" {
				ns, err := strconv.ParseFloat(f[i-1], 64)
				return time.Duration(ns), err == nil
			}
		}
	}
	return 0, false
}
