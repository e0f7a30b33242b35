package pgcluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// backupRepo returns a fresh repository folder the postgres OS user can enter. The backup tests
// are make test-restore's (RPSD_TEST_RESTORE=1), which installs pgBackRest.
func backupRepo(t *testing.T) string {
	t.Helper()
	if os.Getenv("RPSD_TEST_RESTORE") == "" {
		t.Skip("the backup tests are make test-restore (RPSD_TEST_RESTORE=1)")
	}
	if _, err := exec.LookPath("pgbackrest"); err != nil {
		t.Fatal("pgbackrest is missing: run scripts/ensure-pgbackrest.sh")
	}
	dir, err := os.MkdirTemp("", "pgcluster-repo-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "repo")
}

// TestSyncBackupLosesNothing: with synchronous streaming, every commit acknowledged after the
// last backup, the newest of them in a WAL segment neither complete nor archived, is there after
// the postmaster was killed, the cluster's whole folder deleted (only the repository survives)
// and the cluster restored; the restored cluster takes writes again (streamed anew on its new
// timeline). After a backup the stream keeps no segment older than it.
func TestSyncBackupLosesNothing(t *testing.T) {
	t.Parallel()
	loseTheMachine(t, true)
}

// TestArchivedCommitsAreRestored: with the archive alone, the commits of every archived segment
// are there after the same loss; the restored cluster (which opens only once promoted, when
// pgBackRest finds it primary again) takes writes and backups again.
func TestArchivedCommitsAreRestored(t *testing.T) {
	t.Parallel()
	loseTheMachine(t, false)
}

// loseTheMachine backs a cluster up, commits 200 rows, loses the machine (the postmaster killed,
// the cluster's folder deleted) and checks that the restore has every row.
func loseTheMachine(t *testing.T, sync bool) {
	dir, repo := clusterDir(t), backupRepo(t)
	ctx := t.Context()
	opts := Options{Dir: dir, Backup: Backup{Repo: repo, Sync: sync}}
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	first := c
	t.Cleanup(first.stopReceiver)
	url := c.URL("postgres")
	exec1(t, url, `CREATE TABLE acked (n int PRIMARY KEY)`)
	exec1(t, url, `SELECT pg_switch_wal()`)
	exec1(t, url, `INSERT INTO acked VALUES (-2)`)
	exec1(t, url, `SELECT pg_switch_wal()`)
	if label, err := c.Backup(ctx, true); err != nil || label == "" {
		t.Fatalf("full backup: %q %v", label, err)
	}
	if sync {
		info, err := c.BackupInfo(ctx)
		if err != nil {
			t.Fatal(err)
		}
		streamed, err := os.ReadDir(filepath.Join(c.backup.Repo, streamSubdir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range streamed {
			if e.Name() < info.Backups[0].WALStart {
				t.Errorf("streamed segment %s kept after a backup that starts at %s", e.Name(), info.Backups[0].WALStart)
			}
		}
	}
	// A few segments of WAL to replay after the backup: the restored server accepts connections
	// once consistent, a while before its replay ends and it is promoted.
	exec1(t, url, `CREATE TABLE filler AS SELECT generate_series(1, 400000) AS n`)
	const acked = 200
	for n := range acked {
		exec1(t, url, `INSERT INTO acked VALUES (`+strconv.Itoa(n)+`)`)
	}
	if !sync {
		// Archived only once their segment is: pgbackrest check switches it and waits.
		if _, err := c.backrest(ctx, "check"); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Kill(postmasterPID(t, c), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the postmaster's children notice and exit
	// The machine is lost: its receiver with it, and the whole folder (passwords, port, settings).
	c.stopReceiver()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := Restore(ctx, opts, RestoreTarget{}); err != nil {
		t.Fatal(err)
	}
	if c, err = Start(ctx, opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	if got := query(t, c.URL("postgres"), `SELECT count(*) FROM acked WHERE n >= 0`); got != strconv.Itoa(acked) {
		t.Fatalf("%s acknowledged rows after the restore, want %d", got, acked)
	}
	exec1(t, c.URL("postgres"), `INSERT INTO acked VALUES (-1)`)
	if _, err := c.Backup(ctx, false); err != nil {
		t.Fatalf("a backup of the restored cluster: %v", err)
	}
}

func exec1(t *testing.T, url, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
