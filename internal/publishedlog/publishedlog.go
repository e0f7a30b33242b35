// Package publishedlog keeps, outside the database, the newest checkpoint of the transparency
// log that this server published (its size and root hash, in a small file next to the data), and
// refuses a database whose log is behind it: a restore to a point before that checkpoint, or
// another database, would show clients and witnesses a log that went backwards, which they
// rightly take for the operator's misbehaviour.
package publishedlog

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
)

// Mark is a published checkpoint's tree: its size and root hash.
type Mark struct {
	Size int64
	Root [32]byte
}

// Read reads the mark in the file at path (ok false: no file yet).
func Read(path string) (m Mark, ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return m, false, nil
	} else if err != nil {
		return m, false, fmt.Errorf("read %s: %w", path, err)
	}
	fields := strings.Fields(string(b))
	var root []byte
	if len(fields) == 2 {
		m.Size, err = strconv.ParseInt(fields[0], 10, 64)
		if err == nil {
			root, err = hex.DecodeString(fields[1])
		}
	}
	if len(fields) != 2 || err != nil || len(root) != 32 || m.Size < 0 {
		return m, false, fmt.Errorf("%s does not hold a checkpoint's size and root hash as rpsd writes them (\"<size> <64 hex digits>\")", path)
	}
	copy(m.Root[:], root)
	return m, true, nil
}

// Write replaces the file at path by m, durably (a new file synced, then renamed over it).
func Write(path string, m Mark) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = fmt.Fprintf(f, "%d %x\n", m.Size, m.Root)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Check refuses a database whose log is behind the mark in the file at path, or does not extend
// the mark's tree (another root at its size, or a larger tree without it); nothing is refused
// before the first mark.
func Check(ctx context.Context, st *store.Store, path string) error {
	mark, ok, err := Read(path)
	if err != nil || !ok {
		return err
	}
	state, err := st.LogState(ctx)
	if errors.Is(err, tournament.ErrNotFound) {
		state, err = store.LogState{}, nil
	}
	if err != nil {
		return fmt.Errorf("read the log to compare it with %s: %w", path, err)
	}
	remedy := fmt.Sprintf("Restore the database to the end of its WAL (README, \"Backups and restores\": the newest backup, the archive "+
		"and the streamed WAL), or point DATABASE_URL at the database this server served; remove %s only if this log must start "+
		"over, which its witnesses and every client that saw it will call a rollback", path)
	switch {
	case state.Size < mark.Size:
		return fmt.Errorf("refusing to serve: the database's transparency log holds %d entries, but this server published a checkpoint "+
			"of %d entries (recorded in %s): the database was restored to a point before it, or is another database, and serving it "+
			"would show clients and witnesses a log that went back %d entries. %s", state.Size, mark.Size, path, mark.Size-state.Size, remedy)
	case state.Size == mark.Size && state.Root != mark.Root:
		return fmt.Errorf("refusing to serve: the database's transparency log of %d entries has root %x, but the checkpoint this server "+
			"published at that size (recorded in %s) has root %x: serving it would fork the log. %s", state.Size, state.Root, path, mark.Root, remedy)
	case state.Size > mark.Size && mark.Size > 0:
		// Ahead is not enough: the log must extend the published tree, as a witness checks.
		proof, err := tlog.ProveTree(state.Size, mark.Size, st.LogHashes(ctx, tlog.Tree{N: state.Size, Hash: state.Root}))
		if err != nil {
			return fmt.Errorf("read the log to compare it with %s: %w", path, err)
		}
		if err := tlog.CheckTree(proof, state.Size, state.Root, mark.Size, mark.Root); err != nil {
			return fmt.Errorf("refusing to serve: the database's transparency log of %d entries does not extend the checkpoint of %d "+
				"entries this server published (recorded in %s, root %x): serving it would fork the log. %s", state.Size, mark.Size, path, mark.Root, remedy)
		}
	}
	return nil
}

// Keep writes the newest published checkpoint to the file at path whenever it grows, every
// period until ctx ends.
func Keep(ctx context.Context, st *store.Store, path string, period time.Duration, log *slog.Logger) {
	var kept int64 = -1
	if m, ok, err := Read(path); err == nil && ok {
		kept = m.Size
	}
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		c, err := st.PublishedCheckpoint(ctx)
		if err == nil && c.Size > kept {
			if err = Write(path, Mark{Size: c.Size, Root: c.Root}); err == nil {
				kept = c.Size
			}
		}
		if err != nil && ctx.Err() == nil && !errors.Is(err, tournament.ErrNotFound) {
			log.Warn("keep the published checkpoint", "file", path, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// DefaultPath is the file's place for the private cluster when RPSD_LOG_MARK_FILE is unset: in
// its folder, beside (not in) the data directory a restore replaces.
func DefaultPath(dataDir string) string { return filepath.Join(dataDir, "published-checkpoint") }
