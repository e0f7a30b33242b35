package bot

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Operation names under which Stats counts requests. The first four are the game actions that
// throughput is measured in.
const (
	OpRegister = "register"
	OpCommit   = "commit"
	OpReveal   = "reveal"
	OpLeave    = "leave"
	OpEvents   = "events"
	OpStream   = "stream" // an event stream's connection: its latency is the time to the response's head
	OpLobby    = "lobby"
	OpAccount  = "account"
	OpCredit   = "credit"
	OpAdmin    = "admin"
	OpRead     = "read"
)

// Actions are the operations counted as game actions.
var Actions = []string{OpRegister, OpCommit, OpReveal, OpLeave}

// codeNetwork counts requests that got no HTTP response at all.
const codeNetwork = "network_error"

// Stats collects every request's latency and outcome, and the stage-change lags, from many
// goroutines. Latencies are kept in full (8 bytes each), so percentiles are exact.
type Stats struct {
	mu        sync.Mutex
	start     time.Time
	ops       map[string]*opStats
	server5xx int
	lags      []time.Duration
	games     map[string]int // finished/stopped games by outcome
}

type opStats struct {
	latencies []time.Duration // responses of any status
	errors    map[string]int  // by problem code, including network errors
}

// NewStats returns empty statistics whose clock starts now.
func NewStats() *Stats {
	return &Stats{start: time.Now(), ops: map[string]*opStats{}, games: map[string]int{}}
}

// Reset empties the statistics and restarts their clock, so that set-up requests are not counted
// in a measurement.
func (s *Stats) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.start, s.ops, s.server5xx, s.lags, s.games = time.Now(), map[string]*opStats{}, 0, nil, map[string]int{}
}

func (s *Stats) op(name string) *opStats {
	o := s.ops[name]
	if o == nil {
		o = &opStats{errors: map[string]int{}}
		s.ops[name] = o
	}
	return o
}

// record counts one attempt of op: its latency when a response came, and its error code unless it
// succeeded (code "").
func (s *Stats) record(op string, d time.Duration, status int, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.op(op)
	if status != 0 {
		o.latencies = append(o.latencies, d)
	}
	if code != "" {
		o.errors[code]++
	}
	if status >= 500 {
		s.server5xx++
	}
}

// Lag records a stage-change lag.
func (s *Stats) Lag(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lags = append(s.lags, d)
}

// Game counts an ended game by outcome ("finished" or "stopped").
func (s *Stats) Game(outcome string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.games[outcome]++
}

// Server5xx is the number of 5xx responses so far.
func (s *Stats) Server5xx() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.server5xx
}

// Summary is a distribution of durations.
type Summary struct {
	Count                   int
	P50, P90, P99, Max, Avg time.Duration
}

func summarize(ds []time.Duration) Summary {
	if len(ds) == 0 {
		return Summary{}
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	var total time.Duration
	for _, d := range sorted {
		total += d
	}
	// Nearest rank: the smallest value with at least q of the samples at or below it.
	rank := func(q float64) time.Duration {
		i := int(q*float64(len(sorted))+0.999999) - 1
		return sorted[min(max(i, 0), len(sorted)-1)]
	}
	return Summary{
		Count: len(sorted), P50: rank(0.50), P90: rank(0.90), P99: rank(0.99),
		Max: sorted[len(sorted)-1], Avg: total / time.Duration(len(sorted)),
	}
}

// OpReport is one operation's figures.
type OpReport struct {
	Name    string
	Count   int // responses (successes and refusals)
	PerSec  float64
	Latency Summary
	Errors  map[string]int
}

// Report is a snapshot of Stats.
type Report struct {
	Elapsed time.Duration
	Ops     []OpReport
	// Actions sums the game actions (register, commit, reveal, leave).
	Actions       OpReport
	ErrorsByCode  map[string]int
	Server5xx     int
	Lag           Summary
	Games         map[string]int
	LedgerOK      *bool
	LedgerProblem string
}

// Report summarises the statistics so far.
func (s *Stats) Report() Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := Report{Elapsed: time.Since(s.start), ErrorsByCode: map[string]int{}, Server5xx: s.server5xx,
		Lag: summarize(s.lags), Games: maps.Clone(s.games)}
	secs := max(r.Elapsed.Seconds(), 1e-9)
	var actions []time.Duration
	r.Actions = OpReport{Name: "actions", Errors: map[string]int{}}
	for _, name := range slices.Sorted(maps.Keys(s.ops)) {
		o := s.ops[name]
		rep := OpReport{Name: name, Count: len(o.latencies), PerSec: float64(len(o.latencies)) / secs,
			Latency: summarize(o.latencies), Errors: maps.Clone(o.errors)}
		r.Ops = append(r.Ops, rep)
		for code, n := range o.errors {
			r.ErrorsByCode[code] += n
		}
		if slices.Contains(Actions, name) {
			actions = append(actions, o.latencies...)
			for code, n := range o.errors {
				r.Actions.Errors[code] += n
			}
		}
	}
	r.Actions.Count, r.Actions.PerSec, r.Actions.Latency = len(actions), float64(len(actions))/secs, summarize(actions)
	return r
}

// Op returns the report of one operation (zero if it never ran).
func (r Report) Op(name string) OpReport {
	for _, o := range r.Ops {
		if o.Name == name {
			return o
		}
	}
	return OpReport{Name: name}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }

// Print writes the report as a table: throughput and latency per operation, errors by code and
// the stage-change lags. Long polls are listed but their latency is the wait, not service time.
func (r Report) Print(w io.Writer) {
	fmt.Fprintf(w, "elapsed %s\n", r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "%-10s %8s %9s %8s %8s %8s %8s  %s\n", "op", "count", "per s", "p50 ms", "p90 ms", "p99 ms", "max ms", "errors")
	row := func(o OpReport) {
		fmt.Fprintf(w, "%-10s %8d %9.1f %8s %8s %8s %8s  %s\n", o.Name, o.Count, o.PerSec,
			ms(o.Latency.P50), ms(o.Latency.P90), ms(o.Latency.P99), ms(o.Latency.Max), codes(o.Errors))
	}
	for _, o := range r.Ops {
		row(o)
	}
	row(r.Actions)
	fmt.Fprintf(w, "errors by code: %s\n", codes(r.ErrorsByCode))
	fmt.Fprintf(w, "5xx responses: %d\n", r.Server5xx)
	if r.Lag.Count > 0 {
		fmt.Fprintf(w, "stage-change lag (deadline -> event received): n=%d p50 %s ms, p90 %s ms, p99 %s ms, max %s ms\n",
			r.Lag.Count, ms(r.Lag.P50), ms(r.Lag.P90), ms(r.Lag.P99), ms(r.Lag.Max))
	} else {
		fmt.Fprintln(w, "stage-change lag: no stage expired while watched")
	}
	fmt.Fprintf(w, "games: %s\n", codes(r.Games))
	if r.LedgerOK != nil {
		fmt.Fprintf(w, "ledger ok: %v %s\n", *r.LedgerOK, r.LedgerProblem)
	}
}

// codes formats counts by name, most frequent first.
func codes(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	keys := slices.Collect(maps.Keys(m))
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}
