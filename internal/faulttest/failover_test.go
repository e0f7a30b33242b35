package faulttest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/commitreveal/rps/internal/ha"
)

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
		if _, err := ha.Formation("down", formationDir); err != nil {
			t.Error(err)
		}
	})
	if err := ha.DownAtExit(formationDir); err != nil {
		t.Fatal(err)
	}
	databaseURL, err := ha.Formation("up", formationDir)
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
	primary, err := ha.Formation("primary", dir)
	if err != nil {
		return Outage{}, err
	}
	start := time.Now()
	if _, err := ha.Formation("kill", dir, primary); err != nil {
		return Outage{}, err
	}
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if writable(databaseURL) {
			return Outage{Kind: FaultPrimary, Start: start, End: time.Now()}, nil
		}
	}
	return Outage{}, fmt.Errorf("no primary took writes 2 minutes after %s was killed", primary)
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
