package migrations_test

import (
	"context"
	"strings"
	"testing"

	"github.com/commitreveal/rps/internal/pgtest"
	"github.com/commitreveal/rps/migrations"
	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestUpVersion(t *testing.T) {
	c := pgtest.Cluster(t)
	ctx := t.Context()
	if err := c.CreateDatabase(ctx, "migrate_up", ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DropDatabase(context.Background(), "migrate_up") })
	url := c.URL("migrate_up")
	latest, err := migrations.Latest()
	if err != nil || latest == 0 {
		t.Fatalf("Latest = %d, %v", latest, err)
	}

	if v, dirty, err := migrations.Version(ctx, url); err != nil || v != 0 || dirty {
		t.Fatalf("Version on an empty database = %d, %v, %v; want 0, false, nil", v, dirty, err)
	}
	// The second Up finds nothing to do, which is not an error.
	for range 2 {
		if err := migrations.Up(ctx, url); err != nil {
			t.Fatal(err)
		}
	}
	if v, dirty, err := migrations.Version(ctx, url); err != nil || v != latest || dirty {
		t.Fatalf("Version after Up = %d, %v, %v; want %d, false, nil", v, dirty, err, latest)
	}

	// A migration that failed half-way leaves the version dirty: Up must
	// refuse and name the version.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, "UPDATE schema_migrations SET dirty = true")
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v, dirty, err := migrations.Version(ctx, url); err != nil || v != latest || !dirty {
		t.Fatalf("Version after the failure = %d, %v, %v; want %d, true, nil", v, dirty, err, latest)
	}
	err = migrations.Up(ctx, url)
	if err == nil || !strings.Contains(err.Error(), "dirty at version") {
		t.Fatalf("Up on a dirty database: %v", err)
	}
	t.Log(err)
}

func TestURLSchemes(t *testing.T) {
	c := pgtest.Cluster(t)
	if err := c.CreateDatabase(t.Context(), "migrate_schemes", ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DropDatabase(context.Background(), "migrate_schemes") })
	url := c.URL("migrate_schemes") // postgres://
	for _, u := range []string{url, "postgresql" + strings.TrimPrefix(url, "postgres"), "pgx5" + strings.TrimPrefix(url, "postgres")} {
		if err := migrations.Up(t.Context(), u); err != nil {
			t.Errorf("Up(%s): %v", u, err)
		}
	}
	if err := migrations.Up(t.Context(), "mysql://x@localhost/db"); err == nil {
		t.Error("Up accepted a mysql URL")
	}
}
