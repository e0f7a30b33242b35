package migrations

import "testing"

func TestPgx5URL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"postgres://u:p@h:5/db?sslmode=disable":                             "pgx5://u:p@h:5/db?sslmode=disable",
		"postgresql://h/db":                                                 "pgx5://h/db",
		"postgres://h/db?pool_max_conns=8&sslmode=disable&pool_min_conns=1": "pgx5://h/db?sslmode=disable",
	} {
		got, err := pgx5URL(in)
		if err != nil || got != want {
			t.Errorf("pgx5URL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := pgx5URL("mysql://h/db"); err == nil {
		t.Error("a mysql URL was accepted")
	}
}
