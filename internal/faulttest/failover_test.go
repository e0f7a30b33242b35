package faulttest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// formationScript is scripts/ha/formation.sh.
var formationScript = filepath.Join("..", "..", "scripts", "ha", "formation.sh")

// formation runs formation.sh with args and returns its standard output.
func formation(args ...string) (string, error) {
	script, err := filepath.Abs(formationScript)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{script}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", &formationError{args: args, err: err, out: stdout.String() + stderr.String()}
	}
	return strings.TrimSpace(stdout.String()), nil
}

type formationError struct {
	args []string
	err  error
	out  string
}

func (e *formationError) Error() string {
	return "formation.sh " + strings.Join(e.args, " ") + ": " + e.err.Error() + "\n" + e.out
}

// exitPipes keeps the watchdogs' pipes open for the life of the process.
var exitPipes []*os.File

// downAtExit takes the formation in dir down once this process has exited, whatever the way it
// goes: a shell blocks reading a pipe whose only writer is this process.
func downAtExit(dir string) error {
	script, err := filepath.Abs(formationScript)
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd := exec.Command("/bin/sh", "-c", `read -r _; bash "$1" down "$2"`, "faulttest-formation-down", script, dir)
	cmd.Stdin, cmd.Dir = r, "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return err
	}
	exitPipes = append(exitPipes, w)
	return cmd.Process.Release()
}

// TestFaultsFailover runs two replicas on a pg_auto_failover formation (a monitor, a primary and
// a synchronous secondary) while the nemesis kills and pauses replicas, and kills the primary
// once, a third into the play: the secondary is promoted and play goes on.
func TestFaultsFailover(t *testing.T) {
	play, seed := faultSettings(t)
	t.Parallel()
	if _, err := exec.LookPath("pg_autoctl"); err != nil {
		if os.Getenv("RPSD_TEST_HA") != "" {
			t.Fatal("pg_autoctl is missing: run scripts/ha/ensure-auto-failover.sh")
		}
		t.Skip("pg_auto_failover is not installed (make test-faults installs it)")
	}
	if os.Getenv("RPSD_FAULTS_DURATION") == "" {
		play = boundedFailover
	}
	began := time.Now()
	dir := outDir(t, seed)
	formationDir, err := os.MkdirTemp("", "rpsd-faults-ha-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := formation("down", formationDir); err != nil {
			t.Error(err)
		}
	})
	if err := downAtExit(formationDir); err != nil {
		t.Fatal(err)
	}
	databaseURL, err := formation("up", formationDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("formation up in %v", time.Since(began).Round(100*time.Millisecond))
	bin, err := BuildRPSD(dir)
	if err != nil {
		t.Fatal(err)
	}
	const threshold = 1500 * time.Millisecond
	cluster, err := StartCluster(ClusterOptions{Bin: bin, DatabaseURL: databaseURL, Replicas: 2, Env: replicaEnv(threshold), Dir: dir})
	t.Cleanup(cluster.Close)
	if err != nil {
		t.Fatal(err)
	}
	nemesis := NewNemesis(cluster, seed, map[string]int{FaultKill: 1, FaultPause: 1}, threshold, namedLogf(t))
	nemesis.Schedule(play/3, func() (Outage, error) { return killPrimary(formationDir, databaseURL) })
	playAndCheck(t, "2 replicas on a pg_auto_failover formation (monitor, primary, synchronous secondary), the primary killed once", cluster, nemesis, seed, play, began, dir)
}

// boundedFailover is the failover run's play time in make test (its formation takes 10-50 s to
// build).
const boundedFailover = 30 * time.Second

// killPrimary SIGKILLs the formation's primary and returns the outage: from the kill until the
// database takes a write again.
func killPrimary(dir, databaseURL string) (Outage, error) {
	primary, err := formation("primary", dir)
	if err != nil {
		return Outage{}, err
	}
	start := time.Now()
	if _, err := formation("kill", dir, primary); err != nil {
		return Outage{}, err
	}
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if writable(databaseURL) {
			return Outage{Kind: FaultPrimary, Start: start, End: time.Now()}, nil
		}
	}
	return Outage{}, &formationError{args: []string{"kill", dir, primary}, err: context.DeadlineExceeded, out: "no primary took writes 2 minutes after the kill"}
}

// writable tells whether the database takes a write now.
func writable(databaseURL string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return false
	}
	defer conn.Close(ctx)
	var readOnly bool
	return conn.QueryRow(ctx, `SELECT pg_is_in_recovery()`).Scan(&readOnly) == nil && !readOnly
}
