package pgcluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/commitreveal/rps/migrations"
)

// testSettings make the test clusters quick; they hold nothing worth keeping.
var testSettings = map[string]string{"fsync": "off", "shared_buffers": "16MB"}

// clusterDir returns a fresh directory the postgres OS user can enter (a
// t.TempDir is not, when running as root) and, at the end of the test,
// stops whatever postmaster runs there and removes it.
func clusterDir(t *testing.T) string {
	t.Helper()
	if _, err := FindBinaries(); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "pgcluster-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A test that failed half-way may have left its postmaster running:
		// Start reuses it, so that Stop can stop it.
		if _, err := os.Stat(filepath.Join(dir, dataSubdir, "postmaster.pid")); err == nil {
			c, err := Start(context.Background(), Options{Dir: dir})
			if err == nil {
				err = c.Stop()
			}
			if err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
		os.RemoveAll(dir)
	})
	return dir
}

func start(t *testing.T, dir string) *Cluster {
	t.Helper()
	c, err := Start(t.Context(), Options{Dir: dir, Settings: testSettings})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// postmasterPID returns the pid recorded in the cluster's postmaster.pid.
func postmasterPID(t *testing.T, c *Cluster) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.dataDir(), "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func query(t *testing.T, url, sql string) string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var s string
	if err := conn.QueryRow(t.Context(), sql).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStartReuseRestart(t *testing.T) {
	t.Parallel()
	dir := clusterDir(t)
	c := start(t, dir)
	if !c.Started() {
		t.Fatal("first Start did not start the postmaster")
	}
	if got := query(t, c.URL("postgres"), "SHOW listen_addresses"); got != "127.0.0.1" {
		t.Errorf("listen_addresses = %q", got)
	}
	if got := query(t, c.URL("postgres"), "SHOW server_encoding"); got != "UTF8" {
		t.Errorf("server_encoding = %q", got)
	}
	if err := c.CreateDatabase(t.Context(), "kept", ""); err != nil {
		t.Fatal(err)
	}
	pid := postmasterPID(t, c)

	// The first Cluster is dropped without Stop, as when its process is
	// killed: the next Start reuses the running postmaster.
	c2 := start(t, dir)
	if c2.Started() {
		t.Error("second Start started a postmaster instead of reusing the live one")
	}
	if c2.URL("kept") != c.URL("kept") || postmasterPID(t, c2) != pid {
		t.Errorf("reused cluster differs: %s pid %d, want %s pid %d", c2.URL("kept"), postmasterPID(t, c2), c.URL("kept"), pid)
	}
	if err := c2.Stop(); err != nil {
		t.Fatal(err)
	}
	if processAlive(pid) {
		t.Fatalf("postmaster %d still alive after Stop", pid)
	}

	// A restart after a clean stop keeps the port and the data.
	c3 := start(t, dir)
	if !c3.Started() || c3.Port() != c.Port() {
		t.Errorf("restart: started %v port %d, want true and %d", c3.Started(), c3.Port(), c.Port())
	}
	if got := query(t, c3.URL("kept"), "SELECT current_database()"); got != "kept" {
		t.Errorf("current_database = %q", got)
	}
	if err := c3.DropDatabase(t.Context(), "kept"); err != nil {
		t.Fatal(err)
	}
	if err := c3.Stop(); err != nil {
		t.Fatal(err)
	}
}

func TestStalePIDFile(t *testing.T) {
	t.Parallel()
	dir := clusterDir(t)
	c := start(t, dir)
	pidPath := filepath.Join(c.dataDir(), "postmaster.pid")
	stale, err := os.ReadFile(pidPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	// Put back the pid file of the stopped postmaster, as a crash of the
	// whole machine leaves it, naming a pid that is certainly dead (the
	// stopped postmaster may linger as a zombie, which PostgreSQL counts
	// as alive).
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(stale), "\n")
	if err := os.WriteFile(pidPath, []byte(strconv.Itoa(dead.Process.Pid)+"\n"+rest), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.chown(pidPath); err != nil {
		t.Fatal(err)
	}
	c2 := start(t, dir)
	if !c2.Started() {
		t.Error("Start reused a postmaster that is not running")
	}
	if got := query(t, c2.URL("postgres"), "SELECT 'ok'"); got != "ok" {
		t.Errorf("query = %q", got)
	}
	if err := c2.Stop(); err != nil {
		t.Fatal(err)
	}
}

// TestStopAtExit runs a child process that starts a cluster, arms the
// watchdog and exits without stopping it; the watchdog must stop the
// postmaster and remove the directory.
func TestStopAtExit(t *testing.T) {
	if dir := os.Getenv("PGCLUSTER_TEST_CHILD_DIR"); dir != "" {
		c, err := Start(context.Background(), Options{Dir: dir, Settings: testSettings})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.StopAtExit(true); err != nil {
			t.Fatal(err)
		}
		os.Exit(0)
	}
	t.Parallel()
	dir := clusterDir(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestStopAtExit$")
	cmd.Env = append(os.Environ(), "PGCLUSTER_TEST_CHILD_DIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("cluster dir still present 10s after its owner exited")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestFindBinaries(t *testing.T) {
	// PATH without initdb, and two versions installed the Debian way.
	t.Setenv("PATH", t.TempDir())
	root := t.TempDir()
	for _, v := range []string{"9.6", "15", "13"} {
		bin := filepath.Join(root, v, "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
			if err := os.WriteFile(filepath.Join(bin, name), nil, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := findBinaries(filepath.Join(root, "*", "bin"))
	if want := filepath.Join(root, "15", "bin"); err != nil || got != want {
		t.Errorf("findBinaries = %q, %v; want %q", got, err, want)
	}
	_, err = findBinaries(filepath.Join(t.TempDir(), "*", "bin"))
	if err == nil || !strings.Contains(err.Error(), "apt-get install postgresql") {
		t.Errorf("findBinaries with nothing installed: %v", err)
	}
}

// TestOnlyTheOwnerGetsIn: the private cluster is not open to every local user. Over TCP it asks
// for the generated password, which only the owner can read; its socket is in a folder only the
// owner can enter.
func TestOnlyTheOwnerGetsIn(t *testing.T) {
	dir := clusterDir(t)
	c := start(t, dir)
	for _, user := range []string{"postgres", "root", "nobody"} {
		url := "postgres://" + user + "@127.0.0.1:" + strconv.Itoa(c.Port()) + "/postgres?sslmode=disable"
		if conn, err := pgx.Connect(t.Context(), url); err == nil {
			conn.Close(context.Background())
			t.Errorf("%s logged in over TCP without a password", user)
		}
	}
	if got := query(t, c.URL("postgres"), "SELECT current_user"); got != "postgres" {
		t.Errorf("the cluster's URL logs in as %q", got)
	}
	for path, want := range map[string]os.FileMode{
		filepath.Join(dir, passwordFile): 0o600,
		filepath.Join(dir, socketSubdir): 0o700 | os.ModeDir,
	} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s has mode %v, want %v", path, fi.Mode(), want)
		}
	}
	// A restart (and a cluster made before passwords, whose file is gone) keeps the owner in.
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, passwordFile)); err != nil {
		t.Fatal(err)
	}
	c = start(t, dir)
	if got := query(t, c.URL("postgres"), "SELECT current_user"); got != "postgres" {
		t.Errorf("after a restart the cluster's URL logs in as %q", got)
	}
	if err := c.Stop(); err != nil {
		t.Error(err)
	}
}

// nobody is a local user that is neither this process's nor PostgreSQL's: the attacker.
const nobody = 65534

// TestRefusesWhatOthersPlanted: a private cluster folder, or a secret in it, that another local
// user made or could have changed is refused, with a message naming the path and what is wrong;
// and a password file is only ever used as rpsd writes it (hex), never spliced into SQL.
func TestRefusesWhatOthersPlanted(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("planting files as another user needs root")
	}
	write := func(t *testing.T, path, content string, mode os.FileMode, uid int) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(path, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	hex64 := strings.Repeat("ab", 32)
	for name, plant := range map[string]func(t *testing.T, dir string) (path, want string){
		"a folder anyone may write": func(t *testing.T, dir string) (string, string) {
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			return dir, "writable by group or others"
		},
		"a folder of another user": func(t *testing.T, dir string) (string, string) {
			if err := os.Chown(dir, nobody, nobody); err != nil {
				t.Fatal(err)
			}
			return dir, "owned by uid 65534"
		},
		"a password file of another user": func(t *testing.T, dir string) (string, string) {
			path := filepath.Join(dir, passwordFile)
			write(t, path, hex64+"\n", 0o600, nobody)
			return path, "owned by uid 65534"
		},
		"a password file others may write": func(t *testing.T, dir string) (string, string) {
			path := filepath.Join(dir, passwordFile)
			write(t, path, hex64+"\n", 0o666, 0)
			return path, "writable by group or others"
		},
		"a password file that is a link": func(t *testing.T, dir string) (string, string) {
			target := filepath.Join(dir, "elsewhere")
			write(t, target, hex64+"\n", 0o600, 0)
			path := filepath.Join(dir, passwordFile)
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
			return path, "not a regular file"
		},
		"a password with a quote": func(t *testing.T, dir string) (string, string) {
			path := filepath.Join(dir, passwordFile)
			write(t, path, hex64[:40]+"'; ALTER ROLE nobody SUPERUSER; --\n", 0o600, 0)
			return path, "64 hexadecimal digits"
		},
		"a port file of another user": func(t *testing.T, dir string) (string, string) {
			path := filepath.Join(dir, portFile)
			write(t, path, "5432\n", 0o644, nobody)
			return path, "owned by uid 65534"
		},
		"a socket folder anyone may write": func(t *testing.T, dir string) (string, string) {
			path := filepath.Join(dir, socketSubdir)
			if err := os.Mkdir(path, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, 0o777); err != nil {
				t.Fatal(err)
			}
			return path, "writable by group or others"
		},
		"a data folder of another user": func(t *testing.T, dir string) (string, string) {
			path := filepath.Join(dir, dataSubdir)
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(path, nobody, nobody); err != nil {
				t.Fatal(err)
			}
			return path, "owned by uid 65534"
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := clusterDir(t)
			path, want := plant(t, dir)
			c, err := Start(t.Context(), Options{Dir: dir, Settings: testSettings})
			if err == nil {
				_ = c.Stop()
				t.Fatalf("Start served a cluster with %s (%s)", name, path)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) {
				t.Errorf("Start refused with %q; want a message naming %s and saying %q", err, path, want)
			}
		})
	}
}

// TestServingRoleIsNoSuperuser: the application connects as a login role of its own that owns its
// database and is not a superuser; it can migrate its schema. A database that an older rpsd
// migrated as the superuser is handed to that role, objects and all.
func TestServingRoleIsNoSuperuser(t *testing.T) {
	t.Parallel()
	dir := clusterDir(t)
	c := start(t, dir)
	defer func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}()
	// The older rpsd's database: created and migrated as the superuser.
	if err := c.CreateDatabase(t.Context(), "legacy", ""); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Up(t.Context(), c.URL("legacy")); err != nil {
		t.Fatal(err)
	}
	for _, database := range []string{"fresh", "legacy"} {
		url, err := c.EnsureApp(t.Context(), "app", database)
		if err != nil {
			t.Fatal(err)
		}
		if got := query(t, url, "SELECT rolsuper::text FROM pg_roles WHERE rolname = current_user"); got != "false" {
			t.Errorf("%s: the serving role is a superuser (rolsuper %s)", database, got)
		}
		if got := query(t, url, "SELECT current_user"); got != "app" {
			t.Errorf("%s: serving as %q, want app", database, got)
		}
		if err := migrations.Up(t.Context(), url); err != nil {
			t.Fatalf("%s: migrate as the serving role: %v", database, err)
		}
		if got := query(t, url, `SELECT count(*)::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = 'public' AND c.relowner <> 'app'::regrole`); got != "0" {
			t.Errorf("%s: %s relations in public not owned by the serving role", database, got)
		}
		// What a later migration does: change a table, replace a trigger's function.
		conn, err := pgx.Connect(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		for _, sql := range []string{`ALTER TABLE accounts ADD COLUMN probe int`, `ALTER TABLE accounts DROP COLUMN probe`,
			`COMMENT ON FUNCTION notify_account_changed() IS 'owned'`} {
			if _, err := conn.Exec(t.Context(), sql); err != nil {
				t.Errorf("%s: %s as the serving role: %v", database, sql, err)
			}
		}
		conn.Close(context.Background())
	}
	// A second call (the next start) finds everything in place.
	if _, err := c.EnsureApp(t.Context(), "app", "fresh"); err != nil {
		t.Fatal(err)
	}
}
