package publishedlog

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/commitreveal/rps/internal/pgtest"
	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
	"github.com/commitreveal/rps/translog"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestRefusesLogBehindPublished: a database whose log is behind the checkpoint recorded in the
// file (a restore to before it), or holds another tree of that size (a fork), is refused with the
// sizes and the file named; one at it is served; no file, nothing refused. Keep records
// the newest published checkpoint, durably.
func TestRefusesLogBehindPublished(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.New(t)
	st := store.New(pool, store.Options{Service: tournament.NewService(tournament.Options{})})
	path := filepath.Join(t.TempDir(), "published-checkpoint")
	if err := Check(ctx, st, path); err != nil {
		t.Fatalf("no file yet: %v", err)
	}
	if err := Write(path, Mark{Size: 1}); err != nil {
		t.Fatal(err)
	}
	if err := Check(ctx, st, path); err == nil || !strings.Contains(err.Error(), "holds 0 entries") {
		t.Fatalf("a database without a log, after a checkpoint of 1 was published: %v, want a refusal", err)
	}
	root := [32]byte{7}
	if _, err := pool.Exec(ctx, `INSERT INTO log_state (origin, size, root, updated_at) VALUES ('o', 41, $1, 0)`, root[:]); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, Mark{Size: 42, Root: [32]byte{1}}); err != nil {
		t.Fatal(err)
	}
	err := Check(ctx, st, path)
	if err == nil || !strings.Contains(err.Error(), "holds 41 entries") || !strings.Contains(err.Error(), "checkpoint of 42 entries") ||
		!strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "Backups and restores") {
		t.Fatalf("a log one entry behind: %v, want a refusal naming both sizes, the file and the remedy", err)
	}
	if err := Write(path, Mark{Size: 41, Root: [32]byte{1}}); err != nil {
		t.Fatal(err)
	}
	if err := Check(ctx, st, path); err == nil || !strings.Contains(err.Error(), "fork") {
		t.Fatalf("another tree of the published size: %v, want a refusal", err)
	}
	// A log past the mark: TestRefusesLogAheadButForked (it needs the tiles to prove it).
	if err := Write(path, Mark{Size: 41, Root: root}); err != nil {
		t.Fatal(err)
	}
	if err := Check(ctx, st, path); err != nil {
		t.Fatalf("a log at the published checkpoint: %v", err)
	}
	if err := os.WriteFile(path, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Check(ctx, st, path); err == nil {
		t.Fatal("a file that holds no checkpoint: no error")
	}

	// Keep records the newest published checkpoint.
	if _, err := pool.Exec(ctx, `INSERT INTO log_checkpoints (size, root, note, created_at, published_at) VALUES
		(41, $1, 'n', 0, 0), (45, $1, 'unpublished', 0, NULL)`, root[:]); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	kctx, cancel := context.WithCancel(ctx)
	kept := make(chan struct{})
	go func() { Keep(kctx, st, path, 10*time.Millisecond, slog.New(slog.DiscardHandler)); close(kept) }()
	for {
		if m, ok, err := Read(path); err != nil || ok {
			cancel()
			<-kept
			if err != nil || m != (Mark{Size: 41, Root: root}) {
				t.Fatalf("kept %+v (%v), want the published checkpoint of 41", m, err)
			}
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRefusesLogAheadButForked: a database whose log is past the published checkpoint is served
// only when that checkpoint is a prefix of it (another database, or a restore that went on from
// before the mark on another server, may be ahead and still not hold what was published); the
// consistency proof comes from the stored tiles, as a witness's would.
func TestRefusesLogAheadButForked(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.New(t)
	st := store.New(pool, store.Options{Service: tournament.NewService(tournament.Options{})})
	path := filepath.Join(t.TempDir(), "published-checkpoint")

	leaves := make([]tlog.Hash, 5)
	for i := range leaves {
		leaves[i] = tlog.RecordHash([]byte{byte(i)})
	}
	grown, err := translog.Append(0, nil, leaves)
	if err != nil {
		t.Fatal(err)
	}
	for _, tile := range grown.Tiles {
		if _, err := pool.Exec(ctx, `INSERT INTO log_tiles (level, n, hashes) VALUES ($1, $2, $3)`, tile.Level, tile.N, tile.Hashes); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `INSERT INTO log_state (origin, size, root, updated_at) VALUES ('o', 5, $1, 0)`, grown.Tree.Hash[:]); err != nil {
		t.Fatal(err)
	}
	prefix, err := translog.Append(0, nil, leaves[:3])
	if err != nil {
		t.Fatal(err)
	}
	forked, err := translog.Append(0, nil, []tlog.Hash{leaves[0], leaves[1], tlog.RecordHash([]byte("another"))})
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(path, Mark{Size: 3, Root: forked.Tree.Hash}); err != nil {
		t.Fatal(err)
	}
	if err := Check(ctx, st, path); err == nil || !strings.Contains(err.Error(), "fork") || !strings.Contains(err.Error(), path) {
		t.Fatalf("a log of 5 that does not extend the published checkpoint of 3: %v, want a refusal", err)
	}
	if err := Write(path, Mark{Size: 3, Root: prefix.Tree.Hash}); err != nil {
		t.Fatal(err)
	}
	if err := Check(ctx, st, path); err != nil {
		t.Fatalf("a log of 5 that extends the published checkpoint of 3: %v", err)
	}
}
