package restoretest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/commitreveal/rps/internal/faulttest"
	"github.com/commitreveal/rps/internal/pgcluster"
	"github.com/commitreveal/rps/internal/witnesstest"
)

// The drill (README, "Backups and restores"), make test-restore: one rpsd on its private cluster
// with synchronous backups (RPSD_BACKUP_REPO, RPSD_BACKUP_SYNC=1) and two witnesses cosigning its
// log; players play under load, every operation recorded by internal/faulttest's clients. Mid-play
// the disaster: rpsd and the postmaster are killed and the data directory is deleted. The
// runbook's restore (`rpsd restore`: the newest backup, the archive, the streamed WAL) rebuilds
// it and rpsd starts on it; the play goes on. Then faulttest's checks: every acknowledged action
// is in the logs, every chain intact, the ledger balanced, open deadlines moved by the outage,
// every game ended; rpsverify passes, also from the checkpoint it saved before the disaster; the
// witnesses, which had cosigned checkpoints before it, cosign newer ones (each with a proof that
// it extends theirs). Last, a restore to a point before the newest published checkpoint, which
// rpsd refuses to serve.

const (
	adminToken  = "restoretest-admin-token-0123456789abcdef"
	origin      = "rps.test/drill"
	threshold   = 1500 * time.Millisecond
	minTimeout  = 200
	playFor     = 45 * time.Second
	disasterAt  = 20 * time.Second
	backupEvery = 10 * time.Second
)

func TestRestoreDrill(t *testing.T) {
	if os.Getenv("RPSD_TEST_RESTORE") == "" {
		t.Skip("the restore drill is make test-restore (RPSD_TEST_RESTORE=1)")
	}
	began := time.Now()
	root := sharedDir(t)
	dataDir, repo, out := filepath.Join(root, "rpsd"), filepath.Join(root, "repo"), filepath.Join(root, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	bin, err := faulttest.BuildRPSD(out)
	if err != nil {
		t.Fatal(err)
	}
	verify := filepath.Join(out, "rpsverify")
	if b, err := exec.Command("go", "build", "-o", verify, "github.com/commitreveal/rps/cmd/rpsverify").CombinedOutput(); err != nil {
		t.Fatalf("build rpsverify: %v\n%s", err, b)
	}
	ws := []*witnesstest.Witness{witnesstest.Start(t, "witness.test/w1"), witnesstest.Start(t, "witness.test/w2")}
	var witnessEnv, witnessFlags []string
	for _, w := range ws {
		witnessEnv = append(witnessEnv, w.URL+" "+w.VerifierKey)
		witnessFlags = append(witnessFlags, "--witness", w.VerifierKey)
	}
	env := map[string]string{
		"RPSD_ADMIN_TOKEN": adminToken, "RPSD_MIN_TIMEOUT_MS": strconv.Itoa(minTimeout),
		"RPSD_ACCOUNT_RATE": "0", "RPSD_IP_RATE": "0", "RPSD_SIGNUP_RATE": "0", "RPSD_MAX_CONNS_PER_ADDR": "0",
		"RPSD_OUTAGE_THRESHOLD_MS": strconv.FormatInt(threshold.Milliseconds(), 10), "RPSD_DB_MAX_CONNS": "8",
		"RPSD_DATA_DIR": dataDir, "RPSD_BACKUP_REPO": repo, "RPSD_BACKUP_SYNC": "1",
		"RPSD_BACKUP_PERIOD_MS": strconv.FormatInt(backupEvery.Milliseconds(), 10), "RPSD_LOG_ORIGIN": origin,
		"RPSD_LOG_WITNESSES": strings.Join(witnessEnv, ","), "RPSD_LOG_PERIOD_MS": "250",
	}
	cluster, err := faulttest.StartCluster(faulttest.ClusterOptions{Bin: bin, Replicas: 1, Env: env, Dir: out})
	t.Cleanup(func() { stopPrivateCluster(t, dataDir, repo) })
	t.Cleanup(cluster.Close)
	if err != nil {
		t.Fatal(err)
	}
	rpsd := cluster.Replicas[0]
	// The witnesses learn the log's key, made by the first start.
	var info struct {
		VerifierKeys []struct {
			VerifierKey string `json:"verifierKey"`
		} `json:"verifierKeys"`
	}
	getJSON(t, rpsd.URL+"/v1/log", &info)
	for _, w := range ws {
		w.AddLog(t, origin, info.VerifierKeys[0].VerifierKey)
	}
	// The first backup, which rpsd takes when it starts, is where the refusal's restore goes.
	waitFor(t, time.Minute, "the first backup", func() bool { return len(backups(t, dataDir)) > 0 })
	// pgBackRest dates a backup's end to the second: the point restored to is after it.
	stopped := backups(t, dataDir)[0].stop
	waitFor(t, 5*time.Second, "a second past the first backup", func() bool { return time.Now().Unix() > stopped })
	beforePlay := time.Now()
	t.Logf("set up in %v", time.Since(began).Round(100*time.Millisecond))

	run := faulttest.NewRun(faulttest.Options{Seed: uint64(time.Now().UnixNano()), Lobbies: 6, PlayFor: playFor,
		URLs: cluster.URLs, AdminToken: adminToken, MinTimeoutMs: minTimeout, Logf: t.Logf})
	hard, cancel := context.WithTimeout(context.Background(), playFor+3*time.Minute)
	defer cancel()
	played := make(chan error, 1)
	go func() { played <- run.Play(hard) }()

	time.Sleep(disasterAt)
	// What clients and witnesses hold before the disaster.
	state := filepath.Join(out, "rpsverify-state.json")
	if code, report := rpsverify(verify, rpsd.URL, append(witnessFlags, "--state", state, "--max-log-lag", "10m")...); code != 0 {
		t.Fatalf("rpsverify before the disaster: exit %d\n%s", code, report)
	}
	cosigned := map[string]int64{}
	for _, w := range ws {
		cosigned[w.Name] = w.Size(t, origin)
	}
	kept := backups(t, dataDir)
	outage := faulttest.Outage{Kind: "restore", Start: time.Now()}
	rpsd.Kill()
	killPostmaster(t, dataDir)
	if err := os.RemoveAll(filepath.Join(dataDir, "data")); err != nil {
		t.Fatal(err)
	}
	restoring := time.Now()
	if b, err := rpsdCommand(bin, env, "restore").CombinedOutput(); err != nil {
		t.Fatalf("rpsd restore: %v\n%s", err, b)
	}
	restored := time.Since(restoring)
	if err := rpsd.Start(); err != nil {
		t.Fatalf("rpsd on the restored database: %v\n%s", err, tail(filepath.Join(out, "replica-0.log")))
	}
	outage.End = time.Now()
	var labels []string
	for _, b := range kept {
		labels = append(labels, b.label)
	}
	t.Logf("disaster after %v of play: witnesses had cosigned %v; restored from %d backups (%s) in %v, serving again %v after the kill",
		disasterAt, cosigned, len(kept), strings.Join(labels, ", "), restored.Round(100*time.Millisecond), outage.End.Sub(outage.Start).Round(100*time.Millisecond))

	if err := <-played; err != nil {
		t.Fatal(err)
	}
	if err := run.Finish(); err != nil {
		t.Fatal(err)
	}
	ledger, err := run.AdminLedger()
	if err != nil {
		t.Fatal(err)
	}
	res := faulttest.Check(run, faulttest.CheckOptions{MinTimeoutMs: minTimeout, OutDir: out, Timeout: time.Minute,
		Outages: []faulttest.Outage{outage}, OutageThreshold: threshold, DatabaseOutageRule: true, Ledger: ledger})
	for _, a := range res.Anomalies {
		t.Errorf("anomaly: %s", a)
	}
	if len(res.Timeouts) > 0 {
		t.Errorf("the linearizability check of lobbies %v did not finish in time", res.Timeouts)
	}
	if res.OpsByKind[faulttest.KindCommit] == 0 || res.Games < 6 || res.Shifts == 0 {
		t.Errorf("too little happened to prove anything: %d games, %d clock shifts, %v", res.Games, res.Shifts, res.OpsByKind)
	}
	t.Logf("%d operations (%v), %d games, %d events, %d clock shifts; unknowns %+v", res.Ops, res.OpsByKind, res.Games, res.Events, res.Shifts, res.Resolution)

	// The log extends every checkpoint seen before the disaster: the witnesses cosign newer ones
	// (each only with a consistency proof from theirs), and rpsverify checks the one it saved.
	for _, w := range ws {
		waitFor(t, time.Minute, "witness "+w.Name+" cosigning past its pre-disaster checkpoint", func() bool { return w.Size(t, origin) > cosigned[w.Name] })
	}
	if code, report := rpsverify(verify, rpsd.URL, append(witnessFlags, "--state", state)...); code != 0 {
		t.Fatalf("rpsverify after the restore: exit %d\n%s", code, report)
	}

	// A restore to a point before the newest published checkpoint is refused.
	rpsd.Kill()
	killPostmaster(t, dataDir)
	if b, err := rpsdCommand(bin, env, "restore", beforePlay.UTC().Format(time.RFC3339Nano)).CombinedOutput(); err != nil {
		t.Fatalf("rpsd restore %s: %v\n%s", beforePlay.Format(time.RFC3339Nano), err, b)
	}
	if err := rpsd.Start(); err == nil {
		t.Fatal("rpsd served a database restored to before its newest published checkpoint")
	}
	refusal := tail(filepath.Join(out, "replica-0.log"))
	for _, want := range []string{"refusing to serve", "published a checkpoint of", filepath.Join(dataDir, "published-checkpoint"), "Backups and restores"} {
		if !strings.Contains(refusal, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, refusal)
		}
	}
	t.Logf("the drill took %v; the refusal:\n%s", time.Since(began).Round(time.Second), refusal)
}

// sharedDir is a fresh folder the postgres OS user can enter (rpsd runs PostgreSQL as it when
// the test runs as root), removed at the end.
func sharedDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "rpsd-restore-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs are in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	return dir
}

// stopPrivateCluster stops what a killed rpsd left running: the postmaster and the WAL receiver.
func stopPrivateCluster(t *testing.T, dataDir, repo string) {
	if _, err := os.Stat(filepath.Join(dataDir, "data", "postmaster.pid")); err != nil {
		// No postmaster: a receiver alone is stopped by its pid.
		if b, err := os.ReadFile(filepath.Join(dataDir, "pg_receivewal.pid")); err == nil {
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && strings.Contains(string(cmdline), "pg_receivewal") {
				_ = syscall.Kill(pid, syscall.SIGTERM)
			}
		}
		return
	}
	c, err := pgcluster.Start(context.Background(), pgcluster.Options{Dir: dataDir, Backup: pgcluster.Backup{Repo: repo, Sync: true}})
	if err == nil {
		err = c.Stop()
	}
	if err != nil {
		t.Errorf("stop the private cluster: %v", err)
	}
}

// killPostmaster SIGKILLs the private cluster's postmaster and waits until it is gone.
func killPostmaster(t *testing.T, dataDir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "data", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the postmaster gone", func() bool { return syscall.Kill(pid, 0) != nil })
}

// backup is one in the repository: its label and when it ended (Unix seconds).
type backup struct {
	label string
	stop  int64
}

// backups lists the backups in the repository.
func backups(t *testing.T, dataDir string) []backup {
	t.Helper()
	cmd := exec.Command("pgbackrest", "--config="+filepath.Join(dataDir, "pgbackrest.conf"), "--stanza=rps", "info", "--output=json")
	if os.Geteuid() == 0 {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--"}, cmd.Args...)...)
	}
	cmd.Dir = "/"
	b, err := cmd.Output()
	if err != nil {
		return nil // no stanza yet
	}
	var info []struct {
		Backup []struct {
			Label     string `json:"label"`
			Timestamp struct {
				Stop int64 `json:"stop"`
			} `json:"timestamp"`
		} `json:"backup"`
	}
	if err := json.Unmarshal(b, &info); err != nil || len(info) != 1 {
		t.Fatalf("pgbackrest info: %v\n%s", err, b)
	}
	var out []backup
	for _, s := range info[0].Backup {
		out = append(out, backup{s.Label, s.Timestamp.Stop})
	}
	return out
}

// rpsdCommand runs an rpsd command with the drill's settings.
func rpsdCommand(bin string, env map[string]string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); name != "DATABASE_URL" && !strings.HasPrefix(name, "RPSD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}

// rpsverify runs rpsverify on the server and returns its exit status and output.
func rpsverify(bin, server string, args ...string) (int, string) {
	out, err := exec.Command(bin, append([]string{"--server", server, "--quiet"}, args...)...).CombinedOutput()
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode(), string(out)
	} else if err != nil {
		return -1, err.Error()
	}
	return 0, string(out)
}

func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

func waitFor(t *testing.T, limit time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !ok(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v", what, limit)
		}
	}
}

// tail is the end of a log file, for messages.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-8):], "\n")
}
