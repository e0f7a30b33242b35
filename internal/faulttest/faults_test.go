package faulttest

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/commitreveal/rps/internal/pgtest"
)

// The fault runs play many small lobbies through several rpsd replicas while a nemesis injects
// faults, record every operation and check the history (see README, "Proven under faults").
//
//	RPSD_FAULTS=1                 run them, bounded (make test-faults, part of make test)
//	RPSD_FAULTS_DURATION=20m      play this long instead (implies RPSD_FAULTS=1)
//	RPSD_FAULTS_SEED=12345        the seed of the workload's and the nemesis's choices
//	RPSD_FAULTS_OUT=dir           where replica logs and visualizations go, a folder per run
//	                              (kept; without it, a temporary folder kept only on failure)

// bounded is the play time of the runs in make test: the whole of make test-faults stays under
// three minutes on two cores.
const bounded = 60 * time.Second

// faultSettings reads the environment: how long to play, from which seed, or a skip.
func faultSettings(t *testing.T) (time.Duration, uint64) {
	t.Helper()
	play := time.Duration(0)
	if d := os.Getenv("RPSD_FAULTS_DURATION"); d != "" {
		var err error
		if play, err = time.ParseDuration(d); err != nil || play <= 0 {
			t.Fatalf("RPSD_FAULTS_DURATION=%q: want a duration such as 20m", d)
		}
	} else if os.Getenv("RPSD_FAULTS") != "" {
		play = bounded
	} else {
		t.Skip("fault runs are make test-faults (RPSD_FAULTS=1 or RPSD_FAULTS_DURATION)")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("RPSD_FAULTS_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("RPSD_FAULTS_SEED=%q: want a number", s)
		}
	}
	return play, seed
}

// outDir is where a run keeps replica logs and visualizations: removed after a pass, kept and
// printed after a failure.
func outDir(t *testing.T, seed uint64) string {
	t.Helper()
	dir := os.Getenv("RPSD_FAULTS_OUT")
	if dir != "" {
		dir = filepath.Join(dir, t.Name()) // the runs go side by side
	} else {
		var err error
		if dir, err = os.MkdirTemp("", fmt.Sprintf("rpsd-faults-%d-", seed)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replica logs and visualizations are in %s", dir)
		} else if os.Getenv("RPSD_FAULTS_OUT") == "" {
			os.RemoveAll(dir)
		}
	})
	return dir
}

// faultAdminToken is the replicas' bootstrap admin token.
const faultAdminToken = "faulttest-admin-token-0123456789abcdef"

// replicaEnv are the settings of every replica: short stage timeouts, no rate limits (every
// client shares one address), a short outage threshold so that a total outage a few seconds
// long is one.
func replicaEnv(threshold time.Duration) map[string]string {
	return map[string]string{
		"RPSD_ADMIN_TOKEN": faultAdminToken, "RPSD_MIN_TIMEOUT_MS": "200",
		"RPSD_ACCOUNT_RATE": "0", "RPSD_IP_RATE": "0", "RPSD_SIGNUP_RATE": "0", "RPSD_MAX_CONNS_PER_ADDR": "0",
		"RPSD_OUTAGE_THRESHOLD_MS": strconv.FormatInt(threshold.Milliseconds(), 10), "RPSD_DB_MAX_CONNS": "8",
	}
}

// TestFaults runs three replicas on one PostgreSQL, each through a Toxiproxy proxy, while the
// nemesis kills, pauses, slows down, resets, stalls and cuts off replicas, and now and then all
// of them at once.
func TestFaults(t *testing.T) {
	play, seed := faultSettings(t)
	t.Parallel() // with the failover run, whose formation takes most of its time to build
	began := time.Now()
	dir := outDir(t, seed)
	bin, err := BuildRPSD(dir)
	if err != nil {
		t.Fatal(err)
	}
	const threshold = 1500 * time.Millisecond
	cluster, err := StartCluster(ClusterOptions{Bin: bin, DatabaseURL: pgtest.NewURL(t), Replicas: 3, Proxy: true,
		Env: replicaEnv(threshold), Dir: dir})
	t.Cleanup(cluster.Close)
	if err != nil {
		t.Fatal(err)
	}
	nemesis := NewNemesis(cluster, seed, map[string]int{
		FaultKill: 3, FaultPause: 3, FaultLatency: 3, FaultReset: 2, FaultStall: 2, FaultPartition: 3,
		FaultKillAll: 1, FaultPartitionAll: 1,
	}, threshold, namedLogf(t))
	playAndCheck(t, "3 replicas on one PostgreSQL, each through its own Toxiproxy proxy", cluster, nemesis, seed, play, began, dir)
}

// playAndCheck plays for the given time under the nemesis, then checks and reports.
func playAndCheck(t *testing.T, setup string, cluster *Cluster, nemesis *Nemesis, seed uint64, play time.Duration, began time.Time, dir string) {
	t.Helper()
	run := NewRun(Options{Seed: seed, Lobbies: 8, PlayFor: play, URLs: cluster.URLs, AdminToken: faultAdminToken,
		MinTimeoutMs: 200, Logf: t.Logf})
	hard, cancel := context.WithTimeout(context.Background(), play+3*time.Minute)
	defer cancel()
	faults, stopFaults := context.WithCancel(hard)
	nemesisDone := make(chan struct{})
	go func() {
		defer close(nemesisDone)
		// The lobbies are set up before the first fault.
		sleepCtx(faults, 2*time.Second)
		nemesis.Run(faults)
	}()
	err := run.Play(hard)
	stopFaults()
	<-nemesisDone
	if err != nil {
		t.Fatal(err)
	}
	played := time.Since(began)
	if err := run.Finish(); err != nil {
		t.Fatal(err)
	}
	ledger, err := run.AdminLedger()
	if err != nil {
		t.Fatal(err)
	}
	checking := time.Now()
	res := Check(run, CheckOptions{MinTimeoutMs: 200, OutDir: dir, Timeout: 5 * time.Minute,
		Outages: nemesis.Outages(), OutageThreshold: nemesis.threshold, DatabaseOutageRule: true, Ledger: ledger})
	report := Report{Setup: setup, Seed: seed, Play: play, Result: res, Faults: nemesis.Counts(), FailedReads: run.failedReads.Load(),
		Took: time.Since(began), Played: played, Checked: time.Since(checking)}
	t.Log("\n" + report.String())
	for _, err := range nemesis.Errs() {
		t.Errorf("nemesis: %v", err)
	}
	for _, a := range res.Anomalies {
		t.Errorf("anomaly: %s", a)
	}
	if len(res.Timeouts) > 0 {
		t.Errorf("the linearizability check of lobbies %v did not finish in time: nothing is proven for them", res.Timeouts)
	}
	if res.OpsByKind[KindCommit] == 0 || res.Games < 8 || sum(nemesis.Counts()) == 0 {
		t.Errorf("too little happened to prove anything: %d games, %v, faults %v", res.Games, res.OpsByKind, nemesis.Counts())
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// Report is a run's figures.
type Report struct {
	Setup                 string
	Seed                  uint64
	Play                  time.Duration
	Result                Result
	Faults                map[string]int
	FailedReads           int64
	Took, Played, Checked time.Duration
}

func (r Report) String() string {
	res := r.Result
	var kinds []string
	for _, k := range []Kind{KindRegister, KindLeave, KindCommit, KindReveal, KindStop, KindNextConfig, KindClose, KindCredit, KindDebit,
		KindReadLobby, KindReadBalance, KindReadEvents} {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, res.OpsByKind[k]))
	}
	u := res.Resolution
	var b strings.Builder
	fmt.Fprintf(&b, "fault run, seed %d (RPSD_FAULTS_SEED=%d makes the same choices; the interleaving is the machine's)\n", r.Seed, r.Seed)
	fmt.Fprintf(&b, "  setup        %s\n", r.Setup)
	fmt.Fprintf(&b, "  duration     play %v; whole run %v (checking %v)\n", r.Play, r.Took.Round(time.Second), r.Checked.Round(100*time.Millisecond))
	fmt.Fprintf(&b, "  operations   %d: %s; %d reads unanswered (left out)\n", res.Ops, strings.Join(kinds, ", "), r.FailedReads)
	fmt.Fprintf(&b, "  faults       %s\n", describeCounts(r.Faults))
	fmt.Fprintf(&b, "  unknowns     %d resolved by a retry with the same key (%d replayed, %d first done by the retry); %d never answered, %d of them matching a logged action (each checked as done at a logged instant or not done)\n",
		u.Ambiguous, u.Replayed, u.Fresh, u.Logged+u.Absent, u.Logged)
	fmt.Fprintf(&b, "  duplicates   %d actions sent to two replicas at once with one key, answered alike\n", res.Hedged)
	fmt.Fprintf(&b, "  played       %d games, %d events, %d clock shifts (outage rule)\n", res.Games, res.Events, res.Shifts)
	fmt.Fprintf(&b, "  anomalies    %d\n", len(res.Anomalies))
	// The lobbies whose check took longest: what a long run's checking time and memory go to.
	slowest := slices.SortedFunc(slices.Values(res.Lobbies), func(a, b LobbyCheck) int { return cmp.Compare(b.Took, a.Took) })
	var steps int64
	for _, c := range res.Lobbies {
		steps += c.Steps
	}
	fmt.Fprintf(&b, "  checking     %d lobbies, %d model steps; the slowest:\n", len(res.Lobbies), steps)
	for _, c := range slowest[:min(3, len(slowest))] {
		fmt.Fprintf(&b, "               %s\n", c)
	}
	return b.String()
}

// namedLogf logs under the test's name: the two runs go side by side.
func namedLogf(t *testing.T) func(format string, args ...any) {
	return func(format string, args ...any) { t.Logf(t.Name()+": "+format, args...) }
}
