package migrations_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/commitreveal/rps/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

// TestHotPathDownsRestoreTheSchema checks that the down migrations of the constraints dropped for
// the write path (0018: foreign keys, 0019: checks) restore exactly what their up dropped: the
// store's tests run those downs in a transaction they roll back, to check that every row still
// satisfies each dropped constraint (adding a constraint validates every row), so a down that
// restored another definition would check another rule.
func TestHotPathDownsRestoreTheSchema(t *testing.T) {
	for _, version := range []string{"0018", "0019"} {
		t.Run(version, func(t *testing.T) { testDownRestoresTheSchema(t, version) })
	}
}

func testDownRestoresTheSchema(t *testing.T, version string) {
	c := pgtest.Cluster(t)
	ctx := t.Context()
	name := "migrate_down_" + version
	if err := c.CreateDatabase(ctx, name, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DropDatabase(context.Background(), name) })
	conn, err := pgx.Connect(ctx, c.URL(name))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	ups, err := filepath.Glob("*.up.sql")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ups)
	apply := func(file string) {
		t.Helper()
		sql, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		// The simple protocol runs a file of several statements, as golang-migrate does.
		if _, err := conn.Exec(ctx, string(sql), pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	var up string
	for _, f := range ups {
		if f >= version {
			up = f
			break
		}
		apply(f)
	}
	if up == "" || up[:4] != version {
		t.Fatalf("no migration %s", version)
	}
	before := schemaConstraints(t, conn)
	apply(up)
	dropped := schemaConstraints(t, conn)
	if len(dropped) >= len(before) {
		t.Fatalf("%s drops nothing: %d constraints before, %d after", up, len(before), len(dropped))
	}
	apply(up[:len(up)-len(".up.sql")] + ".down.sql")
	if after := schemaConstraints(t, conn); !slices.Equal(before, after) {
		t.Errorf("%s's down does not restore the constraints its up dropped:\nbefore: %q\nafter:  %q", up, before, after)
	}
}

// schemaConstraints lists every constraint and index of the public schema with its definition.
func schemaConstraints(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	rows, err := conn.Query(t.Context(), `SELECT conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid)
			FROM pg_constraint WHERE connamespace = 'public'::regnamespace
		UNION ALL
		SELECT pg_get_indexdef(indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
			WHERE c.relnamespace = 'public'::regnamespace
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(fmt.Errorf("list constraints: %w", err))
	}
	return defs
}
