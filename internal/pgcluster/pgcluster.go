// Package pgcluster runs a private PostgreSQL cluster from the machine's
// PostgreSQL binaries: initdb on first use, pg_ctl to start and stop it.
//
// It serves rpsd when no DATABASE_URL is given and the test harness
// (internal/pgtest). The cluster admits only its owner: it listens on
// 127.0.0.1, where the postgres role needs a password generated on first use
// and kept in the cluster's directory, readable by the owner only (0600); and
// on a Unix socket in a folder only the owner can enter (0700), where it is
// trusted. Any other local user can neither log in nor read the password. A
// folder or secret that another local user made or could change is refused
// (see checkPrivate), and an application connects as a role of its own that
// is not a superuser (EnsureApp).
//
// PostgreSQL refuses to run as root; when the current user is root every
// binary runs as the "postgres" OS user (through runuser), which must be able
// to enter every parent of the cluster's directory.
package pgcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Layout of Options.Dir.
const (
	dataSubdir   = "data"           // PGDATA
	initSubdir   = "data.init"      // initdb target, renamed to data when complete
	socketSubdir = "socket"         // unix socket directory
	logFile      = "postgres.log"   // server log (pg_ctl -l)
	portFile     = "port"           // the port chosen when Options.Port is 0
	lockFile     = ".lock"          // serialises Start between processes
	confFile     = "pgcluster.conf" // in PGDATA, included by postgresql.conf
	hbaFile      = "pg_hba.conf"    // in PGDATA, rewritten on every start
	passwordFile = "password"       // the postgres role's password, 0600
	// An application role's password is in "<role>.password", 0600.
	appPasswordSuffix = ".password"
)

// osUser is the account PostgreSQL runs as when this process is root.
const osUser = "postgres"

// Options configures Start.
type Options struct {
	// Dir holds the data directory (data/), the unix socket directory
	// (socket/), the server log (postgres.log) and the remembered port. It is
	// created if missing.
	Dir string
	// Port is the TCP port on 127.0.0.1. 0 picks a free port on first use and
	// remembers it in Dir so that a restart reuses it.
	Port int
	// Settings are extra server settings (postgresql.conf names and values),
	// applied when this call starts the postmaster. With "fsync" set to
	// "off" the cluster is treated as disposable and initdb skips its sync.
	Settings map[string]string
	// Logger receives one line per lifecycle step; nil discards them.
	Logger *slog.Logger
	// Backup configures backups with pgBackRest (backup.go); its zero value takes none.
	Backup Backup
}

// Cluster is a PostgreSQL cluster in a directory of its own.
type Cluster struct {
	bin     string // directory with initdb, pg_ctl and postgres
	dir     string // Options.Dir, absolute
	port    int
	started bool
	log     *slog.Logger
	owner   *user.User // the postgres OS user when running as root, else nil
	// password is the postgres role's, for connections over TCP.
	password string
	// backup is Options.Backup, its repository made absolute.
	backup Backup
}

// FindBinaries returns the directory holding initdb, pg_ctl and postgres:
// the one found through PATH, else the highest-versioned
// /usr/lib/postgresql/*/bin (Debian and Ubuntu keep them off PATH).
func FindBinaries() (string, error) {
	return findBinaries("/usr/lib/postgresql/*/bin")
}

func findBinaries(fallback string) (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		// Resolve symlinks such as /usr/local/bin/initdb so that the siblings
		// are looked up next to the real binary.
		if real, err := filepath.EvalSymlinks(p); err == nil && hasBinaries(filepath.Dir(real)) {
			return filepath.Dir(real), nil
		}
		if hasBinaries(filepath.Dir(p)) {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob(fallback)
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) > pgVersion(dirs[j]) })
	for _, d := range dirs {
		if hasBinaries(d) {
			return d, nil
		}
	}
	return "", errors.New("postgresql binaries (initdb, pg_ctl, postgres) not found on PATH or in /usr/lib/postgresql/*/bin: " +
		"install them, e.g. `apt-get install postgresql` (Debian/Ubuntu) or `brew install postgresql` (macOS)")
}

func hasBinaries(dir string) bool {
	for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// pgVersion extracts the major version from /usr/lib/postgresql/<v>/bin.
func pgVersion(binDir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	return v
}

// Start makes the cluster in opts.Dir available: it runs initdb on first
// use and starts the postmaster, or reuses a postmaster that is already
// running on the data directory (for instance one left behind by a process
// that was killed). A postmaster.pid naming a dead process is stale and
// ignored; PostgreSQL recovers from the crash on start.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	bin, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	if opts.Dir == "" {
		return nil, errors.New("pgcluster: Options.Dir is empty")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("pgcluster dir: %w", err)
	}
	c := &Cluster{bin: bin, dir: dir, log: opts.Logger}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	// Before anything in it is used: what another local user made or could change is refused.
	if err := checkPrivate(dir, true); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create cluster dir: %w", err)
	}
	for _, entry := range []struct {
		name string
		dir  bool
	}{{dataSubdir, true}, {socketSubdir, true}, {passwordFile, false}, {portFile, false}, {lockFile, false}, {logFile, false}} {
		if err := checkPrivate(filepath.Join(dir, entry.name), entry.dir); err != nil {
			return nil, err
		}
	}
	unlock, err := lockDir(filepath.Join(dir, lockFile))
	if err != nil {
		return nil, err
	}
	defer unlock()

	if os.Geteuid() == 0 {
		if err := c.prepareForPostgresUser(ctx); err != nil {
			return nil, err
		}
	}

	if c.password, err = loadPassword(filepath.Join(dir, passwordFile)); err != nil {
		return nil, err
	}

	if port, ok, err := c.livePostmaster(ctx); err != nil {
		return nil, err
	} else if ok {
		if opts.Port != 0 && opts.Port != port {
			return nil, fmt.Errorf("postmaster already running on %s with port %d, not %d", c.dataDir(), port, opts.Port)
		}
		c.log.Info("reusing running postgres", "dir", dir, "port", port)
		if opts.Backup.Repo != "" {
			if err := c.writeBackrestConf(opts.Backup); err != nil {
				return nil, err
			}
		}
		if err := c.startBackups(ctx); err != nil {
			return nil, err
		}
		return c, c.setPassword(ctx)
	}

	if _, err := os.Stat(filepath.Join(c.dataDir(), "PG_VERSION")); errors.Is(err, fs.ErrNotExist) {
		if err := c.initdb(ctx, opts.Settings["fsync"] == "off"); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, fmt.Errorf("check data dir: %w", err)
	}

	// A port picked here may be taken by someone else before the postmaster
	// binds it (several test processes start clusters at once), so a bind
	// failure on a freshly picked port is retried with another one.
	for attempt := 1; ; attempt++ {
		port, fresh, err := c.choosePort(opts.Port)
		if err != nil {
			return nil, err
		}
		c.port = port
		settings := c.backupSettings(opts.Backup)
		if opts.Backup.Repo != "" {
			if err := c.writeBackrestConf(opts.Backup); err != nil {
				return nil, err
			}
		}
		maps.Copy(settings, opts.Settings)
		err = c.start(ctx, settings)
		if err == nil {
			break
		}
		if !fresh || attempt == 3 || !strings.Contains(err.Error(), "could not bind") {
			return nil, err
		}
		c.log.Warn("postgres port taken, picking another", "port", port)
		if err := os.Remove(filepath.Join(dir, portFile)); err != nil {
			return nil, fmt.Errorf("forget port: %w", err)
		}
	}
	c.started = true
	c.log.Info("started postgres", "dir", dir, "port", c.port)
	if err := c.startBackups(ctx); err != nil {
		// Nothing is left running that no one would stop.
		_ = c.Stop()
		return nil, err
	}
	return c, c.setPassword(ctx)
}

// URL returns a connection URL for database on this cluster, as the superuser, with its password.
func (c *Cluster) URL(database string) string {
	return c.roleURL(osUser, c.password, database)
}

func (c *Cluster) roleURL(role, password, database string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(role, password), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)),
		Path: "/" + database, RawQuery: "sslmode=disable"}
	return u.String()
}

// checkPrivate refuses path, when it exists, unless it could only have been made by this
// process's user: a folder (dir) or a regular file (a link is not followed, except for the
// cluster's own folder, which may be one), owned by this user (or, running as root, by root or
// the postgres OS user that runs PostgreSQL) and not writable by group or others. A folder
// another local user could write to lets that user plant a password file (and so log in as the
// superuser), a port file (and so receive rpsd's connections) or a data folder of its choice.
func checkPrivate(path string, dir bool) error {
	stat := os.Lstat
	if dir {
		stat = os.Stat
	}
	fi, err := stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("check %s: %w", path, err)
	}
	switch {
	case dir && !fi.IsDir():
		return fmt.Errorf("refusing %s: it is not a folder", path)
	case !dir && !fi.Mode().IsRegular():
		return fmt.Errorf("refusing %s: it is not a regular file (%v), as rpsd would have written it; remove it", path, fi.Mode().Type())
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("check %s: no owner information", path)
	}
	owners, ownersText, err := allowedOwners()
	if err != nil {
		return err
	}
	if !slices.Contains(owners, st.Uid) {
		return fmt.Errorf("refusing %s: it is owned by uid %d (%s), not by %s; another local user may have planted it: remove it, or give it to %s if it is yours",
			path, st.Uid, userName(st.Uid), ownersText, ownersText)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("refusing %s: it is writable by group or others (mode %04o), so another local user could have changed it; "+
			"run chmod go-w on it if you trust its content, else remove it", path, fi.Mode().Perm())
	}
	return nil
}

// allowedOwners are the users whose files the cluster may use: this process's, and when it runs
// as root, the postgres OS user, which runs PostgreSQL and owns what it writes.
func allowedOwners() ([]uint32, string, error) {
	me := uint32(os.Geteuid())
	if me != 0 {
		return []uint32{me}, fmt.Sprintf("this user (uid %d, %s)", me, userName(me)), nil
	}
	u, err := user.Lookup(osUser)
	if err != nil {
		return nil, "", fmt.Errorf("running as root needs the %q OS user (the postgresql package creates it): %w", osUser, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, "", fmt.Errorf("uid of %s: %w", osUser, err)
	}
	return []uint32{0, uint32(uid)}, "root or " + osUser, nil
}

func userName(uid uint32) string {
	if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil {
		return u.Username
	}
	return "no such user"
}

// passwordLength is the length of the passwords this package generates: 32 random bytes in hex.
const passwordLength = 64

// validPassword tells a password as loadPassword writes them: hexadecimal digits only, so that
// no file content can ever change the SQL it is quoted into.
func validPassword(p string) bool {
	return len(p) == passwordLength && strings.Trim(p, "0123456789abcdef") == ""
}

// loadPassword reads the password in the file at path (checked by checkPrivate), generating it
// on first use (or when the file is empty: a write cut short).
func loadPassword(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if password := strings.TrimSpace(string(b)); password != "" {
		if !validPassword(password) {
			return "", fmt.Errorf("refusing %s: it does not hold a password as rpsd writes them (%d hexadecimal digits); "+
				"remove it to have a new one generated", path, passwordLength)
		}
		// Kept readable by the owner only, whatever an earlier version or an editor left.
		return password, os.Chmod(path, 0o600)
	}
	var secret [passwordLength / 2]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return "", err
	}
	password := hex.EncodeToString(secret[:])
	if err := os.WriteFile(path, []byte(password+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return password, nil
}

// socketConn connects to database as the superuser through the owner-only socket, which needs
// no password.
func (c *Cluster) socketConn(ctx context.Context, database string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(fmt.Sprintf("host=%s port=%d user=%s sslmode=disable", filepath.Join(c.dir, socketSubdir), c.port, osUser))
	if err != nil {
		return nil, err
	}
	cfg.Database = database
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect over the socket: %w", err)
	}
	return conn, nil
}

// setRolePassword sets a role's password. ALTER ROLE takes no bind parameters: the password,
// which validPassword checked, goes as a literal the server's own rules escape.
func setRolePassword(ctx context.Context, conn *pgx.Conn, role, password, attributes string) error {
	if !validPassword(password) {
		return fmt.Errorf("set the %s password: not a generated password", role)
	}
	literal, err := conn.PgConn().EscapeString(password)
	if err != nil {
		return fmt.Errorf("set the %s password: %w", role, err)
	}
	if _, err := conn.Exec(ctx, "ALTER ROLE "+pgx.Identifier{role}.Sanitize()+" WITH "+attributes+" PASSWORD '"+literal+"'"); err != nil {
		return fmt.Errorf("set the %s password: %w", role, err)
	}
	return nil
}

// setPassword sets the postgres role's password to the one in the cluster's folder, through the
// owner-only socket. Run on every start, it also protects a cluster made before passwords.
func (c *Cluster) setPassword(ctx context.Context) error {
	conn, err := c.socketConn(ctx, "postgres")
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return setRolePassword(ctx, conn, osUser, c.password, "LOGIN")
}

// appRoleAttributes are an application role's: it logs in, and can do nothing a superuser alone
// may (read or write the server's files, run programs, bypass row security, make roles or
// databases).
const appRoleAttributes = "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS"

// EnsureApp makes the role an application connects as, and its database, and returns the URL to
// connect with, over TCP with the role's password (generated on first use, kept in
// "<role>.password" beside the superuser's). The role is not a superuser; it owns the database,
// its public schema and everything in it, so it can run the application's migrations. A database
// an older version made and migrated as the superuser is handed over to it. Run on every start,
// it also puts back the role's attributes and password.
func (c *Cluster) EnsureApp(ctx context.Context, role, database string) (string, error) {
	if !appName(role) || !appName(database) {
		return "", fmt.Errorf("application role %q and database %q must be lower-case names ([a-z_][a-z0-9_]*)", role, database)
	}
	path := filepath.Join(c.dir, role+appPasswordSuffix)
	if err := checkPrivate(path, false); err != nil {
		return "", err
	}
	password, err := loadPassword(path)
	if err != nil {
		return "", err
	}
	if err := c.ensureRoleAndDatabase(ctx, role, password, database); err != nil {
		return "", err
	}
	if err := c.handOver(ctx, role, database); err != nil {
		return "", err
	}
	return c.roleURL(role, password, database), nil
}

func appName(name string) bool {
	return name != "" && name != osUser && strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789_") == "" && (name[0] < '0' || name[0] > '9')
}

// ensureRoleAndDatabase creates (or puts back the attributes and password of) the role and
// creates the database it owns, or gives it to the role.
func (c *Cluster) ensureRoleAndDatabase(ctx context.Context, role, password, database string) error {
	conn, err := c.socketConn(ctx, "postgres")
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var roleExists, databaseExists bool
	err = conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1),
		EXISTS (SELECT 1 FROM pg_database WHERE datname = $2)`, role, database).Scan(&roleExists, &databaseExists)
	if err != nil {
		return fmt.Errorf("look up role %s and database %s: %w", role, database, err)
	}
	roleName, databaseName := pgx.Identifier{role}.Sanitize(), pgx.Identifier{database}.Sanitize()
	if !roleExists {
		if _, err := conn.Exec(ctx, "CREATE ROLE "+roleName); err != nil {
			return fmt.Errorf("create role %s: %w", role, err)
		}
	}
	if err := setRolePassword(ctx, conn, role, password, appRoleAttributes); err != nil {
		return err
	}
	owner := "CREATE DATABASE " + databaseName + " OWNER " + roleName
	if databaseExists {
		owner = "ALTER DATABASE " + databaseName + " OWNER TO " + roleName
	}
	if _, err := conn.Exec(ctx, owner); err != nil {
		return fmt.Errorf("give database %s to %s: %w", database, role, err)
	}
	return nil
}

// handOver gives the role, in its database, the public schema and whatever an older version
// created there as the superuser: tables (with their indexes, triggers and owned sequences),
// other sequences and views, and functions.
func (c *Cluster) handOver(ctx context.Context, role, database string) error {
	conn, err := c.socketConn(ctx, database)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// The role's name reaches the DO block as a setting, not spliced into its text.
	if _, err := conn.Exec(ctx, `SELECT set_config('pgcluster.app_role', $1, false)`, role); err != nil {
		return fmt.Errorf("hand %s over to %s: %w", database, role, err)
	}
	_, err = conn.Exec(ctx, `DO $hand_over$
DECLARE
	app regrole := current_setting('pgcluster.app_role')::regrole;
	obj record;
BEGIN
	EXECUTE format('ALTER SCHEMA public OWNER TO %I', app);
	-- Tables first: their indexes, triggers and owned sequences follow them.
	FOR obj IN SELECT c.oid::regclass AS name, c.relkind FROM pg_class c
			JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relowner <> app AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
			AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
				AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i'))
		ORDER BY c.relkind <> 'r', c.relkind <> 'p'
	LOOP
		EXECUTE format('ALTER %s %s OWNER TO %I', CASE obj.relkind WHEN 'S' THEN 'SEQUENCE' WHEN 'v' THEN 'VIEW'
			WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END, obj.name, app);
	END LOOP;
	FOR obj IN SELECT p.oid::regprocedure AS name FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = 'public' AND p.proowner <> app AND p.prokind IN ('f', 'p')
	LOOP
		EXECUTE format('ALTER ROUTINE %s OWNER TO %I', obj.name, app);
	END LOOP;
END
$hand_over$`)
	if err != nil {
		return fmt.Errorf("hand %s over to %s: %w", database, role, err)
	}
	return nil
}

// Port returns the TCP port the cluster listens on.
func (c *Cluster) Port() int { return c.port }

// Started reports whether Start started the postmaster; false means it
// reused one that was already running.
func (c *Cluster) Started() bool { return c.started }

// Stop stops the postmaster (pg_ctl stop -m fast: open sessions are
// disconnected, the data is checkpointed). It stops a reused postmaster too.
func (c *Cluster) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.run(ctx, filepath.Join(c.bin, "pg_ctl"), "stop", "-D", c.dataDir(), "-m", "fast", "-w"); err != nil {
		return fmt.Errorf("stop postgres: %w", err)
	}
	c.stopReceiver()
	c.log.Info("stopped postgres", "dir", c.dir)
	return nil
}

// CreateDatabase creates database name, as a copy of template when template
// is not empty. The template must have no open connections.
func (c *Cluster) CreateDatabase(ctx context.Context, name, template string) error {
	err := c.withConn(ctx, func(conn *pgx.Conn) error {
		sql := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
		if template != "" {
			sql += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
			// PostgreSQL 15 made WAL_LOG the default, which writes every
			// block of the template to the WAL; on an idle machine it was
			// three times slower than a file copy (230 ms against 80 ms)
			// for a small template, and the tests clone one per test.
			if serverMajor(conn) >= 15 {
				sql += " STRATEGY FILE_COPY"
			}
		}
		_, err := conn.Exec(ctx, sql)
		return err
	})
	if err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// EnsureDatabase creates database name unless it exists.
func (c *Cluster) EnsureDatabase(ctx context.Context, name string) error {
	var exists bool
	err := c.withConn(ctx, func(conn *pgx.Conn) error {
		return conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists)
	})
	if err != nil {
		return fmt.Errorf("look up database %s: %w", name, err)
	}
	if exists {
		return nil
	}
	return c.CreateDatabase(ctx, name, "")
}

// DropDatabase drops database name if it exists, disconnecting its sessions.
func (c *Cluster) DropDatabase(ctx context.Context, name string) error {
	err := c.withConn(ctx, func(conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
		return err
	})
	if err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// serverMajor returns the server's major version, such as 15 for "15.18 (Debian 15.18-0+deb12u1)".
func serverMajor(conn *pgx.Conn) int {
	v := conn.PgConn().ParameterStatus("server_version")
	end := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' })
	if end >= 0 {
		v = v[:end]
	}
	n, _ := strconv.Atoi(v)
	return n
}

// withConn runs f on a connection to the maintenance database.
func (c *Cluster) withConn(ctx context.Context, f func(*pgx.Conn) error) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return f(conn)
}

func (c *Cluster) dataDir() string { return filepath.Join(c.dir, dataSubdir) }

// prepareForPostgresUser hands the directory to the postgres OS user and
// checks that this user can reach it, which fails when a parent directory
// is private (such as a t.TempDir under a 0700 parent).
func (c *Cluster) prepareForPostgresUser(ctx context.Context) error {
	u, err := user.Lookup(osUser)
	if err != nil {
		return fmt.Errorf("running as root needs the %q OS user (the postgresql package creates it): %w", osUser, err)
	}
	c.owner = u
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(c.dir, uid, gid); err != nil {
		return fmt.Errorf("chown cluster dir: %w", err)
	}
	if _, err := c.run(ctx, "test", "-w", c.dir, "-a", "-x", c.dir); err != nil {
		return fmt.Errorf("the %s user cannot enter %s: every parent directory must be searchable by it", osUser, c.dir)
	}
	return nil
}

// livePostmaster reports the port of a postmaster already running on the
// data directory, waiting briefly for one that is still starting up.
func (c *Cluster) livePostmaster(ctx context.Context) (int, bool, error) {
	pidPath := filepath.Join(c.dataDir(), "postmaster.pid")
	b, err := os.ReadFile(pidPath)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	} else if err != nil {
		return 0, false, fmt.Errorf("read postmaster.pid: %w", err)
	}
	// Lines: pid, data dir, start time, port, socket dir, listen address,
	// shared memory key, status.
	lines := strings.Split(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || pid <= 0 {
		return 0, false, nil // partially written or garbage: postgres replaces it
	}
	if !processAlive(pid) {
		c.log.Info("ignoring stale postmaster.pid", "pid", pid)
		return 0, false, nil
	}
	port := 0
	if len(lines) > 3 {
		port, _ = strconv.Atoi(strings.TrimSpace(lines[3]))
	}
	if port == 0 {
		return 0, false, fmt.Errorf("postmaster pid %d is alive but %s names no port", pid, pidPath)
	}
	c.port = port
	deadline := time.Now().Add(10 * time.Second)
	for {
		pingCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err = c.ping(pingCtx)
		cancel()
		if err == nil {
			return port, true, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return 0, false, fmt.Errorf("postmaster pid %d is alive but does not accept connections on port %d (%w); "+
				"stop it, or remove %s if that pid is not a postgres", pid, port, err, pidPath)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// processAlive reports whether pid is a running process. Like PostgreSQL
// itself it treats EPERM as dead: such a pid belongs to another user, so it
// cannot be this cluster's postmaster. A zombie counts as dead too: a
// stopped postmaster stays one until its adoptive parent reaps it, which
// some container init processes take their time to do.
func processAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no procfs (macOS): kill is all we have
	}
	// The state follows the parenthesised command name, which may itself
	// contain parentheses.
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

func (c *Cluster) ping(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// initdb creates the data directory. It works in a scratch directory and
// renames it when complete, so an interrupted initdb never leaves a
// half-made data directory that later starts would trip on.
func (c *Cluster) initdb(ctx context.Context, noSync bool) error {
	tmp := filepath.Join(c.dir, initSubdir)
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("remove unfinished initdb: %w", err)
	}
	// The C locale keeps the cluster independent of the locales installed
	// on the machine and sorts text bytewise.
	args := []string{"-D", tmp, "-U", osUser, "-E", "UTF8", "--locale=C", "--auth-local=trust", "--auth-host=scram-sha-256"}
	if noSync {
		// A cluster running with fsync=off is not durable anyway; skipping
		// initdb's final sync saves a third of its time.
		args = append(args, "--no-sync")
	}
	start := time.Now()
	if _, err := c.run(ctx, filepath.Join(c.bin, "initdb"), args...); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	// Our settings live in a file of their own, rewritten on every start.
	f, err := os.OpenFile(filepath.Join(tmp, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("open postgresql.conf: %w", err)
	}
	_, err = fmt.Fprintf(f, "\ninclude_if_exists '%s'\n", confFile)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write postgresql.conf: %w", err)
	}
	if err := os.Rename(tmp, c.dataDir()); err != nil {
		return fmt.Errorf("install data dir: %w", err)
	}
	c.log.Info("initialised postgres cluster", "dir", c.dir, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// choosePort returns the port to use and whether it was picked just now.
func (c *Cluster) choosePort(want int) (int, bool, error) {
	if want != 0 {
		return want, false, nil
	}
	path := filepath.Join(c.dir, portFile)
	if b, err := os.ReadFile(path); err == nil {
		p, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || p <= 0 || p > 65535 {
			return 0, false, fmt.Errorf("refusing %s: it does not hold a port number (1-65535); remove it to have a free port picked", path)
		}
		return p, false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return 0, false, fmt.Errorf("read port file: %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, false, fmt.Errorf("pick a port: %w", err)
	}
	p := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, false, fmt.Errorf("pick a port: %w", err)
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(p)+"\n"), 0o644); err != nil {
		return 0, false, fmt.Errorf("write port file: %w", err)
	}
	return p, true, nil
}

// start writes the settings file and starts the postmaster, waiting until
// it accepts connections.
func (c *Cluster) start(ctx context.Context, settings map[string]string) error {
	socketDir := filepath.Join(c.dir, socketSubdir)
	if err := c.mkdirOwned(socketDir); err != nil {
		return err
	}
	conf := map[string]string{
		"listen_addresses":        "127.0.0.1",
		"port":                    strconv.Itoa(c.port),
		"unix_socket_directories": socketDir,
	}
	for k, v := range settings {
		conf[k] = v
	}
	var b strings.Builder
	b.WriteString("# Written by pgcluster on every start; edits are lost.\n")
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		fmt.Fprintf(&b, "%s = '%s'\n", k, strings.ReplaceAll(conf[k], "'", "''"))
	}
	confPath := filepath.Join(c.dataDir(), confFile)
	if err := os.WriteFile(confPath, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", confFile, err)
	}
	if err := c.chown(confPath); err != nil {
		return err
	}
	// The socket's folder admits the owner only, so it may trust; TCP needs the password.
	hba := "# Written by pgcluster on every start; edits are lost.\n" +
		"local all all trust\n" +
		"local replication all trust\n" +
		"host all all 127.0.0.1/32 scram-sha-256\n" +
		"host all all ::1/128 scram-sha-256\n"
	hbaPath := filepath.Join(c.dataDir(), hbaFile)
	if err := os.WriteFile(hbaPath, []byte(hba), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", hbaFile, err)
	}
	if err := c.chown(hbaPath); err != nil {
		return err
	}
	logPath := filepath.Join(c.dir, logFile)
	// -l matters beyond logging: without it the postmaster would inherit
	// our output pipe and keep it open.
	if _, err := c.run(ctx, filepath.Join(c.bin, "pg_ctl"), "start", "-D", c.dataDir(), "-l", logPath, "-w", "-t", "60"); err != nil {
		return fmt.Errorf("start postgres: %w; server log %s ends with:\n%s", err, logPath, tail(logPath, 10))
	}
	return nil
}

func (c *Cluster) mkdirOwned(path string) error {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Base(path), err)
	}
	// MkdirAll keeps the mode of a folder that exists.
	if err := os.Chmod(path, 0o700); err != nil {
		return fmt.Errorf("chmod %s: %w", filepath.Base(path), err)
	}
	return c.chown(path)
}

// chown gives path to the postgres OS user when running as root.
func (c *Cluster) chown(path string) error {
	if c.owner == nil {
		return nil
	}
	uid, _ := strconv.Atoi(c.owner.Uid)
	gid, _ := strconv.Atoi(c.owner.Gid)
	if err := os.Chown(path, uid, gid); err != nil {
		return fmt.Errorf("chown %s: %w", filepath.Base(path), err)
	}
	return nil
}

// run runs a program as the postgres OS user when running as root, from the
// cluster's directory so that it never needs the caller's working directory
// (which that user may not be allowed to enter).
func (c *Cluster) run(ctx context.Context, path string, args ...string) ([]byte, error) {
	argv := c.command(path, args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = c.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%s: %w: %s", filepath.Base(path), err, strings.TrimSpace(string(out)))
	}
	return out, nil
}

// command returns the argv that runs path with args as the right OS user.
func (c *Cluster) command(path string, args ...string) []string {
	if c.owner != nil {
		return append([]string{"runuser", "-u", osUser, "--", path}, args...)
	}
	return append([]string{path}, args...)
}

// tail returns the last n lines of a file, for error messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// lockDir takes an exclusive lock on path, so that two processes starting
// the same cluster at once do not both run initdb or pg_ctl start.
func lockDir(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock cluster dir: %w", err)
	}
	// Closing the file releases the lock.
	return func() { _ = f.Close() }, nil
}

// exitPipes keeps the write ends of the StopAtExit pipes referenced for the
// life of the process: a collected *os.File would close its descriptor and
// wake the watchdog early.
var (
	exitPipesMu sync.Mutex
	exitPipes   []*os.File
)

// StopAtExit starts a watchdog process that stops the postmaster (and, if
// removeDir is set, deletes the cluster's directory) once this process has
// exited, whatever the cause: a normal exit, a panic, a test timeout,
// SIGINT or SIGKILL. The watchdog blocks reading a pipe whose only writer
// is this process, so it wakes exactly when the kernel closes that pipe;
// it runs in a session of its own so that a Ctrl-C in the terminal does not
// take it down with us. Stopping the cluster earlier is fine: the watchdog
// then finds nothing to do.
func (c *Cluster) StopAtExit(removeDir bool) error {
	r, w, err := os.Pipe() // close-on-exec: no other child inherits w
	if err != nil {
		return fmt.Errorf("watchdog pipe: %w", err)
	}
	defer r.Close()
	rm := ""
	if removeDir {
		rm = c.dir
	}
	const script = `read -r _
data=$1 rmdir=$2
shift 2
[ -f "$data/postmaster.pid" ] && "$@" >/dev/null 2>&1
receiver=$(cat "$data/../pg_receivewal.pid" 2>/dev/null) && grep -q pg_receivewal "/proc/$receiver/cmdline" 2>/dev/null && kill "$receiver"
[ -n "$rmdir" ] && rm -rf "$rmdir"
exit 0`
	stop := c.command(filepath.Join(c.bin, "pg_ctl"), "stop", "-D", c.dataDir(), "-m", "fast", "-w")
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, "pgcluster-watchdog", c.dataDir(), rm}, stop...)...)
	cmd.Stdin = r
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		_ = w.Close()
		return fmt.Errorf("start watchdog: %w", err)
	}
	// The watchdog outlives us by design; release it instead of waiting.
	if err := cmd.Process.Release(); err != nil {
		return fmt.Errorf("release watchdog: %w", err)
	}
	exitPipesMu.Lock()
	exitPipes = append(exitPipes, w)
	exitPipesMu.Unlock()
	return nil
}
