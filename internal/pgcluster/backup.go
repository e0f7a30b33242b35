package pgcluster

// Backups of the private cluster with pgBackRest (Options.Backup): every WAL segment archived by
// archive_command, full and incremental backups (Backup, BackUpEvery), and, in the synchronous
// mode, every WAL record streamed by pg_receivewal into the repository before a commit is
// acknowledged. Restore rebuilds the data directory from them.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Backup configures the backups of a cluster.
type Backup struct {
	// Repo is the pgBackRest repository (a folder, ideally on another disk or host's mount): it
	// receives every WAL segment and every backup. Empty: no backups.
	Repo string
	// Sync streams every WAL record into Repo/wal-stream (pg_receivewal --synchronous on a
	// replication slot, named in synchronous_standby_names) before a commit is acknowledged:
	// losing every disk of the database then loses nothing acknowledged. A commit waits for the
	// receiver, so while it is down, writes wait.
	Sync bool
}

// Layout of the backup pieces.
const (
	stanza          = "rps"               // pgBackRest's name for this cluster
	backrestConf    = "pgbackrest.conf"   // in Options.Dir, rewritten on every start
	backrestSubdir  = "pgbackrest"        // in Options.Dir: pgBackRest's logs and locks
	streamSubdir    = "wal-stream"        // in Backup.Repo: the synchronously streamed WAL
	receiverName    = "rps_backup"        // the receiver's slot and application_name
	receiverPIDFile = "pg_receivewal.pid" // in Options.Dir
	receiverLog     = "pg_receivewal.log" // in Options.Dir
	retentionFull   = "2"                 // full backups kept (with their incrementals and WAL)
	fullEvery       = 7 * 24 * time.Hour  // BackUpEvery takes a full backup when the newest is older
	receiverWait    = 30 * time.Second    // for the receiver to connect
	segmentNameLen  = 24                  // a WAL segment's file name: timeline, log, segment
)

// backupSettings are the server settings the backups need: archive every segment with
// pgBackRest and, in the synchronous mode, wait for the receiver before acknowledging a commit.
func (c *Cluster) backupSettings(b Backup) map[string]string {
	s := map[string]string{}
	if b.Repo == "" {
		return s
	}
	s["archive_mode"], s["archive_command"], s["wal_level"] = "on", c.backrestCommand("archive-push")+" %p", "replica"
	if b.Sync {
		s["synchronous_standby_names"] = receiverName
	}
	return s
}

// backrestCommand is the shell command that runs a pgBackRest command on this cluster's stanza.
func (c *Cluster) backrestCommand(command string) string {
	return fmt.Sprintf("pgbackrest --config=%s --stanza=%s %s", shellQuote(filepath.Join(c.dir, backrestConf)), stanza, command)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// writeBackrestConf writes pgBackRest's configuration for this cluster (its port may have
// changed) and makes its folders.
func (c *Cluster) writeBackrestConf(b Backup) error {
	if _, err := exec.LookPath("pgbackrest"); err != nil {
		return errors.New("backups need pgBackRest on PATH: run scripts/ensure-pgbackrest.sh (apt-get install pgbackrest)")
	}
	repo, err := filepath.Abs(b.Repo)
	if err != nil {
		return fmt.Errorf("backup repository: %w", err)
	}
	if err := checkPrivate(repo, true); err != nil {
		return err
	}
	for _, d := range []string{repo, filepath.Join(c.dir, backrestSubdir)} {
		if err := c.mkdirOwned(d); err != nil {
			return err
		}
	}
	conf := fmt.Sprintf(`# Written by pgcluster on every start; edits are lost.
[global]
repo1-path=%s
repo1-retention-full=%s
log-path=%s
lock-path=%s
log-level-console=warn
log-level-file=info
start-fast=y
compress-type=lz4

[%s]
pg1-path=%s
pg1-port=%d
pg1-socket-path=%s
pg1-user=%s
`, repo, retentionFull, filepath.Join(c.dir, backrestSubdir), filepath.Join(c.dir, backrestSubdir), stanza,
		c.dataDir(), c.port, filepath.Join(c.dir, socketSubdir), osUser)
	path := filepath.Join(c.dir, backrestConf)
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", backrestConf, err)
	}
	c.backup, c.backup.Repo = b, repo
	return c.chown(path)
}

// startBackups, on a running postmaster, creates the stanza (nothing when it exists for this
// cluster) and, in the synchronous mode, starts the WAL receiver unless one runs.
func (c *Cluster) startBackups(ctx context.Context) error {
	if c.backup.Repo == "" {
		return nil
	}
	// A restored cluster accepts connections once consistent, and replays on until it is
	// promoted: pgBackRest finds no primary before, and a receiver streaming before would follow
	// the old timeline and then ask the new one for WAL it never writes. Writes wait for the
	// promotion anyway.
	if err := c.waitPromoted(ctx); err != nil {
		return err
	}
	if c.backup.Sync {
		if err := c.startReceiver(ctx); err != nil {
			return err
		}
	}
	if _, err := c.backrest(ctx, "stanza-create"); err != nil {
		return fmt.Errorf("pgBackRest stanza: %w", err)
	}
	return nil
}

// backrest runs a pgBackRest command on the stanza.
func (c *Cluster) backrest(ctx context.Context, command string, args ...string) ([]byte, error) {
	return c.run(ctx, "pgbackrest", append([]string{"--config=" + filepath.Join(c.dir, backrestConf), "--stanza=" + stanza, command}, args...)...)
}

// startReceiver starts pg_receivewal on the cluster's replication slot (created if missing),
// detached like the postmaster (it outlives this process; the next start reuses it), and waits
// until the server sees it streaming synchronously.
func (c *Cluster) startReceiver(ctx context.Context) error {
	stream := filepath.Join(c.backup.Repo, streamSubdir)
	if err := c.mkdirOwned(stream); err != nil {
		return err
	}
	conninfo := fmt.Sprintf("host=%s port=%d user=%s application_name=%s", filepath.Join(c.dir, socketSubdir), c.port, osUser, receiverName)
	receivewal := filepath.Join(c.bin, "pg_receivewal")
	if _, err := c.run(ctx, receivewal, "--create-slot", "--if-not-exists", "--slot="+receiverName, "--dbname="+conninfo); err != nil {
		return fmt.Errorf("the receiver's replication slot: %w", err)
	}
	if pid := c.receiverPID(); pid == 0 {
		logf, err := os.OpenFile(filepath.Join(c.dir, receiverLog), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("receiver log: %w", err)
		}
		defer logf.Close()
		cmd := exec.Command(receivewal, "--synchronous", "--slot="+receiverName, "--directory="+stream, "--dbname="+conninfo)
		cmd.Dir, cmd.Stdout, cmd.Stderr = c.dir, logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if c.owner != nil {
			uid, _ := strconv.Atoi(c.owner.Uid)
			gid, _ := strconv.Atoi(c.owner.Gid)
			cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("start pg_receivewal: %w", err)
		}
		if err := os.WriteFile(filepath.Join(c.dir, receiverPIDFile), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o600); err != nil {
			return fmt.Errorf("write %s: %w", receiverPIDFile, err)
		}
		_ = cmd.Process.Release()
	}
	deadline := time.Now().Add(receiverWait)
	for {
		var sync string
		// Over the socket: on a first start the superuser has no password yet, and setting it
		// is a commit, which waits for this receiver.
		conn, err := c.socketConn(ctx, "postgres")
		if err == nil {
			err = conn.QueryRow(ctx, `SELECT coalesce((SELECT sync_state FROM pg_stat_replication WHERE application_name = $1 LIMIT 1), '')`,
				receiverName).Scan(&sync)
			_ = conn.Close(ctx)
		}
		if err == nil && sync == "sync" {
			c.log.Info("WAL receiver streaming synchronously", "dir", stream)
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("pg_receivewal does not stream synchronously after %v (state %q, %v); its log %s ends with:\n%s",
				receiverWait, sync, err, filepath.Join(c.dir, receiverLog), tail(filepath.Join(c.dir, receiverLog), 5))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitPromoted waits until the server is out of recovery (at once when it never was in it).
func (c *Cluster) waitPromoted(ctx context.Context) error {
	for {
		conn, err := c.socketConn(ctx, "postgres")
		if err != nil {
			return err
		}
		var recovering bool
		err = conn.QueryRow(ctx, `SELECT pg_is_in_recovery()`).Scan(&recovering)
		_ = conn.Close(ctx)
		if err != nil || !recovering {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for the end of the recovery: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// receiverPID is the pid of this cluster's running pg_receivewal, or 0.
func (c *Cluster) receiverPID() int {
	b, err := os.ReadFile(filepath.Join(c.dir, receiverPIDFile))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 || !processAlive(pid) {
		return 0
	}
	if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && !strings.Contains(string(cmdline), "pg_receivewal") {
		return 0
	}
	return pid
}

// stopReceiver stops the WAL receiver, once the postmaster it streams from is stopped (a fast
// shutdown first sends it every record).
func (c *Cluster) stopReceiver() {
	pid := c.receiverPID()
	if pid == 0 {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for deadline := time.Now().Add(10 * time.Second); processAlive(pid) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
}

// Backup takes a backup: full, or incremental on the newest backup (pgBackRest takes a full one
// when there is none). It returns pgBackRest's label of it.
func (c *Cluster) Backup(ctx context.Context, full bool) (string, error) {
	if c.backup.Repo == "" {
		return "", errors.New("no backup repository configured")
	}
	kind := "incr"
	if full {
		kind = "full"
	}
	if _, err := c.backrest(ctx, "backup", "--type="+kind); err != nil {
		return "", fmt.Errorf("%s backup: %w", kind, err)
	}
	info, err := c.BackupInfo(ctx)
	if err != nil || len(info.Backups) == 0 {
		return "", fmt.Errorf("the backup taken is not in the repository: %w", err)
	}
	newest := info.Backups[len(info.Backups)-1]
	if err := c.pruneStream(newest.WALStart); err != nil {
		return "", err
	}
	return newest.Label, nil
}

// pruneStream deletes the streamed segments older than the one a backup starts with: a restore
// begins at that backup, or an older one whose segments the archive holds as well.
func (c *Cluster) pruneStream(walStart string) error {
	entries, err := os.ReadDir(filepath.Join(c.backup.Repo, streamSubdir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("read the WAL stream: %w", err)
	}
	for _, e := range entries {
		// Only complete segments of the backup's timeline or an older one; names sort as WAL does.
		if name := e.Name(); len(name) == segmentNameLen && len(walStart) == segmentNameLen && name < walStart {
			if err := os.Remove(filepath.Join(c.backup.Repo, streamSubdir, name)); err != nil {
				return fmt.Errorf("prune the WAL stream: %w", err)
			}
		}
	}
	return nil
}

// BackupInfo is what the repository holds, as `pgbackrest info` tells.
type BackupInfo struct {
	// Status is pgBackRest's status message ("ok" when the stanza is healthy).
	Status  string
	Backups []BackupSet
	// WALMin and WALMax are the oldest and newest archived segments.
	WALMin, WALMax string
}

// BackupSet is one backup.
type BackupSet struct {
	Label, Type string
	Start, Stop time.Time
	// Size is the database's size, RepoSize what the backup takes in the repository (bytes).
	Size, RepoSize int64
	// WALStart is the WAL segment the backup starts at.
	WALStart string
}

// BackupInfo reads the repository's content.
func (c *Cluster) BackupInfo(ctx context.Context) (BackupInfo, error) {
	out, err := c.backrest(ctx, "info", "--output=json")
	if err != nil {
		return BackupInfo{}, err
	}
	var stanzas []struct {
		Status struct {
			Message string `json:"message"`
		} `json:"status"`
		Archive []struct {
			Min string `json:"min"`
			Max string `json:"max"`
		} `json:"archive"`
		Backup []struct {
			Label   string `json:"label"`
			Type    string `json:"type"`
			Archive struct {
				Start string `json:"start"`
			} `json:"archive"`
			Timestamp struct {
				Start int64 `json:"start"`
				Stop  int64 `json:"stop"`
			} `json:"timestamp"`
			Info struct {
				Size       int64 `json:"size"`
				Repository struct {
					Delta int64 `json:"delta"`
				} `json:"repository"`
			} `json:"info"`
		} `json:"backup"`
	}
	if err := json.Unmarshal(out, &stanzas); err != nil || len(stanzas) != 1 {
		return BackupInfo{}, fmt.Errorf("read pgbackrest info: %v: %s", err, out)
	}
	s := stanzas[0]
	info := BackupInfo{Status: s.Status.Message}
	if n := len(s.Archive); n > 0 {
		info.WALMin, info.WALMax = s.Archive[0].Min, s.Archive[n-1].Max
	}
	for _, b := range s.Backup {
		info.Backups = append(info.Backups, BackupSet{Label: b.Label, Type: b.Type, Start: time.Unix(b.Timestamp.Start, 0),
			Stop: time.Unix(b.Timestamp.Stop, 0), Size: b.Info.Size, RepoSize: b.Info.Repository.Delta, WALStart: b.Archive.Start})
	}
	return info, nil
}

// BackUpEvery takes a backup now and then every period until ctx ends: a full one when the
// repository holds none newer than a week, else an incremental one. Failures are logged, and
// retried at the next period.
func (c *Cluster) BackUpEvery(ctx context.Context, period time.Duration) {
	for {
		info, err := c.BackupInfo(ctx)
		full := err == nil
		for _, b := range info.Backups {
			if b.Type == "full" && time.Since(b.Stop) < fullEvery {
				full = false
			}
		}
		if err == nil {
			label, err := c.Backup(ctx, full)
			if err != nil {
				c.log.Error("backup failed", "err", err)
			} else {
				c.log.Info("backup taken", "label", label, "full", full)
			}
		} else if ctx.Err() == nil {
			c.log.Error("backup repository unreadable", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(period):
		}
	}
}

// RestoreTarget is how far a restore replays the WAL.
type RestoreTarget struct {
	// Time, when set, stops the replay at the last commit at or before it (point-in-time
	// recovery); zero replays everything archived and streamed (to the end).
	Time time.Time
}

// Restore rebuilds the cluster's data directory from the repository: the newest backup, then
// every archived WAL segment and, to the end, the segments the receiver streamed (the newest
// one partial), so that every commit acknowledged in the synchronous mode is there. The
// postmaster must not run; the data directory is moved aside (data.lost-<time>) when it is
// there. The next Start runs the recovery and opens the database on a new timeline; the old
// stream is kept aside (wal-stream.restored-<time>) and the receiver starts a new one.
func Restore(ctx context.Context, opts Options, target RestoreTarget) error {
	bin, err := FindBinaries()
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return err
	}
	c := &Cluster{bin: bin, dir: dir, log: opts.Logger}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	// The machine may be new: only the repository survived.
	if err := checkPrivate(dir, true); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create cluster dir: %w", err)
	}
	if os.Geteuid() == 0 {
		if err := c.prepareForPostgresUser(ctx); err != nil {
			return err
		}
	}
	if _, ok, err := c.livePostmaster(ctx); err != nil || ok {
		return fmt.Errorf("a postmaster runs on %s (%v): stop it (and every rpsd on it) before restoring", c.dataDir(), err)
	}
	c.stopReceiver()
	c.port, _, err = c.choosePort(opts.Port)
	if err != nil {
		return err
	}
	if err := c.writeBackrestConf(opts.Backup); err != nil {
		return err
	}
	stamp := time.Now().UTC().Format("20060102T150405Z")
	if _, err := os.Stat(c.dataDir()); err == nil {
		if err := os.Rename(c.dataDir(), c.dataDir()+".lost-"+stamp); err != nil {
			return fmt.Errorf("move the old data directory aside: %w", err)
		}
	}
	if err := c.mkdirOwned(c.dataDir()); err != nil {
		return err
	}
	args := []string{"--type=default"}
	if !target.Time.IsZero() {
		args = []string{"--type=time", "--target=" + target.Time.UTC().Format("2006-01-02 15:04:05.000000+00"), "--target-action=promote"}
	}
	start := time.Now()
	if _, err := c.backrest(ctx, "restore", args...); err != nil {
		return fmt.Errorf("pgBackRest restore: %w", err)
	}
	stream := filepath.Join(c.backup.Repo, streamSubdir)
	if target.Time.IsZero() {
		if err := c.copyStream(stream); err != nil {
			return err
		}
	}
	if _, err := os.Stat(stream); err == nil {
		if err := os.Rename(stream, stream+".restored-"+stamp); err != nil {
			return fmt.Errorf("set the old WAL stream aside: %w", err)
		}
	}
	c.log.Info("restored the data directory; the next start replays the WAL", "dir", c.dataDir(), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// copyStream copies the streamed WAL segments into pg_wal, the partial one under its final name:
// the recovery takes from the archive what it has and reads the rest there.
func (c *Cluster) copyStream(stream string) error {
	entries, err := os.ReadDir(stream)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("read the WAL stream: %w", err)
	}
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".partial")
		if len(name) != segmentNameLen || !e.Type().IsRegular() {
			continue // history files and the like come from the archive
		}
		b, err := os.ReadFile(filepath.Join(stream, e.Name()))
		if err != nil {
			return fmt.Errorf("read streamed segment: %w", err)
		}
		dst := filepath.Join(c.dataDir(), "pg_wal", name)
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			return fmt.Errorf("copy streamed segment: %w", err)
		}
		if err := c.chown(dst); err != nil {
			return err
		}
	}
	return nil
}
