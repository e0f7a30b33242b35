package pgtest_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/commitreveal/rps/internal/pgtest"
	"github.com/commitreveal/rps/migrations"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestIsolated runs two parallel tests that write the same table at the
// same time; each must see only its own row, in its own migrated database.
func TestIsolated(t *testing.T) {
	latest, err := migrations.Latest()
	if err != nil {
		t.Fatal(err)
	}
	var written sync.WaitGroup
	written.Add(2)
	for _, value := range []string{"a", "b"} {
		t.Run(value, func(t *testing.T) {
			t.Parallel()
			pool := pgtest.New(t)
			ctx := t.Context()
			var version uint
			if err := pool.QueryRow(ctx, "SELECT version FROM schema_migrations").Scan(&version); err != nil {
				t.Fatal(err)
			}
			if version != latest {
				t.Errorf("database at migration %d, want %d", version, latest)
			}
			if _, err := pool.Exec(ctx, "CREATE TABLE probe (v text)"); err != nil {
				t.Fatal(err)
			}
			if _, err := pool.Exec(ctx, "INSERT INTO probe VALUES ($1)", value); err != nil {
				t.Fatal(err)
			}
			written.Done()
			written.Wait() // both databases now hold a probe row
			var got []string
			rows, err := pool.Query(ctx, "SELECT v FROM probe")
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var v string
				if err := rows.Scan(&v); err != nil {
					t.Fatal(err)
				}
				got = append(got, v)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0] != value {
				t.Errorf("probe rows = %v, want [%s]", got, value)
			}
		})
	}
}

// TestNewURLDropped checks that a test's database is gone after the test,
// even while a connection to it is still open.
func TestNewURLDropped(t *testing.T) {
	var url string
	t.Run("inner", func(t *testing.T) {
		url = pgtest.NewURL(t)
		pool := pgtest.New(t) // a second database, and an open pool at cleanup
		if err := pool.Ping(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
	pool := pgtest.New(t)
	name := url[strings.LastIndexByte(url, '/')+1 : strings.IndexByte(url, '?')]
	var n int
	if err := pool.QueryRow(t.Context(), "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("database %s still exists after its test", name)
	}
}
