package migrations_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"

	"github.com/commitreveal/rps/internal/pgtest"
	"github.com/commitreveal/rps/migrations"
)

// TestNameKeysRenameDuplicates: the accounts made before names were unique keep their names,
// keyed, except where several are one name under the profile's comparison: the oldest keeps it,
// each other one is renamed with the start of its id, and no two accounts share a key after.
func TestNameKeysRenameDuplicates(t *testing.T) {
	c := pgtest.Cluster(t)
	ctx := t.Context()
	if err := c.CreateDatabase(ctx, "migrate_names", ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DropDatabase(context.Background(), "migrate_names") })
	url := c.URL("migrate_names")

	// The schema as it was before name keys (the migration files of this folder, to 0011).
	src, err := iofs.New(os.DirFS("."), ".")
	if err != nil {
		t.Fatal(err)
	}
	m, err := migrate.NewWithSourceInstance("iofs", src, "pgx5"+strings.TrimPrefix(url, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Migrate(11); err != nil {
		t.Fatal(err)
	}
	_, _ = m.Close()

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	_, err = conn.Exec(ctx, `INSERT INTO accounts (id, name, role, created_at) VALUES
		('1a000000-0000-4000-8000-000000000000', 'admin', 'admin', 1),
		('2b000000-0000-4000-8000-000000000000', 'Alice', 'player', 2),
		('3c000000-0000-4000-8000-000000000000', 'alice', 'player', 3),
		('4d000000-0000-4000-8000-000000000000', 'ALICE', 'player', 4),
		('5e000000-0000-4000-8000-000000000000', 'Admin', 'player', 5),
		('6f000000-0000-4000-8000-000000000000', 'bob', 'player', 6)`)
	if err != nil {
		t.Fatal(err)
	}
	if err := migrations.Up(ctx, url); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, `SELECT name || ' / ' || name_key FROM accounts ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"admin / admin", "Alice / alice", "alice #3c000000 / alice #3c000000", "ALICE #4d000000 / alice #4d000000",
		"Admin #5e000000 / admin #5e000000", "bob / bob",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("after the migration:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The database keeps keys unique from now on.
	_, err = conn.Exec(ctx, `INSERT INTO accounts (id, name, name_key, role, created_at) VALUES (gen_random_uuid(), 'BOB', 'bob', 'player', 7)`)
	if err == nil || !strings.Contains(err.Error(), "accounts_name_key") {
		t.Errorf("a second account keyed bob: %v", err)
	}
}
