// Package witnesstest runs real C2SP tlog-witnesses on loopback for tests: torchwood's
// litewitness at the version Version pins, installed into the repository's .tools/bin by `go
// install` on first use (as scripts/lint-go.sh installs golangci-lint), so a fresh machine gets
// the same one. Each witness has its own SQLite database, its own Ed25519 key served by an ssh-agent
// running in the test process (litewitness signs through the agent protocol), and listens on a
// free loopback port. Everything stops, by PID, when the test ends. The logs a witness knows are
// written to its database here, as torchwood's witnessctl would (witnessctl itself needs a
// module the Go proxy does not serve).
//
//	w := witnesstest.Start(t, "witness.test/w1")
//	w.AddLog(t, origin, logVerifierKey)
//	logpublish.NewWitness(w.URL, w.VerifierKey)
package witnesstest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"filippo.io/torchwood"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"

	"github.com/commitreveal/rps/logpublish"
)

// Witness is a litewitness running for a test.
type Witness struct {
	// Name names the witness in its cosignatures; URL is its submission prefix; VerifierKey its
	// cosignature verifier key.
	Name, URL, VerifierKey string
	db, addr               string
	args                   []string
	cmd                    *exec.Cmd
	done                   chan struct{}
	out                    *bytes.Buffer
}

// Version is the torchwood release whose litewitness the tests run (the one go.mod requires).
const Version = "v0.9.0"

var (
	installOnce sync.Once
	litewitness string
	installErr  error
)

// binary returns litewitness, installing it into .tools/bin when that holds no binary of Version.
func binary(t testing.TB) string {
	t.Helper()
	installOnce.Do(func() {
		var root []byte
		if root, installErr = exec.Command("go", "env", "GOMOD").Output(); installErr != nil {
			return
		}
		bin := filepath.Join(filepath.Dir(strings.TrimSpace(string(root))), ".tools", "bin")
		litewitness = filepath.Join(bin, "litewitness")
		// The version is in the binary's build info: `go version -m` reads it.
		if info, err := exec.Command("go", "version", "-m", litewitness).Output(); err == nil &&
			strings.Contains(string(info), "filippo.io/torchwood\t"+Version) {
			return
		}
		cmd := exec.Command("go", "install", "filippo.io/torchwood/cmd/litewitness@"+Version)
		cmd.Env = append(os.Environ(), "GOBIN="+bin)
		if out, err := cmd.CombinedOutput(); err != nil {
			installErr = fmt.Errorf("install litewitness %s: %w\n%s", Version, err, out)
		}
	})
	if installErr != nil {
		t.Fatal(installErr)
	}
	return litewitness
}

// Start runs a witness named name. It knows no log until AddLog.
func Start(t testing.TB, name string) *Witness {
	t.Helper()
	// A short folder: a Unix socket's path is limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "lw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := torchwood.NewCosignatureSigner(name, priv)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "agent.sock")
	serveAgent(t, sock, priv)
	sshPub, err := ssh.NewPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	w := &Witness{Name: name, VerifierKey: signer.Verifier().String(), db: filepath.Join(dir, "witness.db")}
	// litewitness reads the logs it knows, and their keys, on every request.
	w.exec(t, schema)
	w.addr, w.args = freeAddr(t), []string{"-db", w.db, "-name", name, "-key", ssh.FingerprintSHA256(sshPub), "-ssh-agent", sock, "-obscurity"}
	w.URL = "http://" + w.addr + "/"
	w.start(t)
	t.Cleanup(w.Stop)
	return w
}

// start runs litewitness and waits until it listens.
func (w *Witness) start(t testing.TB) {
	t.Helper()
	w.done, w.out = make(chan struct{}), &bytes.Buffer{}
	w.cmd = exec.Command(binary(t), append(w.args, "-listen", w.addr)...)
	w.cmd.Stdout, w.cmd.Stderr = w.out, w.out
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := w.done
	go func() {
		_ = w.cmd.Wait()
		close(done)
	}()
	for deadline := time.Now().Add(10 * time.Second); ; {
		conn, err := net.DialTimeout("tcp", w.addr, time.Second)
		if err == nil {
			_ = conn.Close()
			return
		}
		select {
		case <-done:
			t.Fatalf("litewitness %s exited: %s", w.Name, w.out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("litewitness %s did not listen on %s: %s", w.Name, w.addr, w.out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Restart starts a stopped witness again, with its database, key and address.
func (w *Witness) Restart(t testing.TB) {
	t.Helper()
	w.Stop()
	w.start(t)
}

// Stop stops the witness (by its PID) and waits for it; its database stays until the test ends.
func (w *Witness) Stop() {
	select {
	case <-w.done:
		return
	default:
	}
	_ = w.cmd.Process.Kill()
	<-w.done
}

// schema is litewitness's (internal/witness.OpenDB), which it creates if missing.
const schema = `
	CREATE TABLE IF NOT EXISTS log (origin TEXT PRIMARY KEY, tree_size INTEGER NOT NULL, tree_hash TEXT NOT NULL);
	CREATE TABLE IF NOT EXISTS key (origin TEXT NOT NULL, key TEXT NOT NULL, FOREIGN KEY(origin) REFERENCES log(origin));
	CREATE TABLE IF NOT EXISTS bastion (origin TEXT NOT NULL, bastion TEXT NOT NULL, FOREIGN KEY(origin) REFERENCES log(origin));`

// AddLog has the witness know the log origin, at size 0, with its verifier key vkey (witnessctl
// add-log and add-key).
func (w *Witness) AddLog(t testing.TB, origin, vkey string) {
	t.Helper()
	empty := sha256.Sum256(nil)
	w.exec(t, "INSERT INTO log (origin, tree_size, tree_hash) VALUES (?, 0, ?)", origin, base64.StdEncoding.EncodeToString(empty[:]))
	w.AddKey(t, origin, vkey)
}

// AddKey adds a verifier key of a log the witness knows (witnessctl add-key), as an operator does
// after the log's key was rotated.
func (w *Witness) AddKey(t testing.TB, origin, vkey string) {
	t.Helper()
	w.exec(t, "INSERT INTO key (origin, key) VALUES (?, ?)", origin, vkey)
}

// Size is the size of the log origin the witness last cosigned.
func (w *Witness) Size(t testing.TB, origin string) int64 {
	t.Helper()
	conn := w.open(t)
	defer func() { _ = conn.Close() }()
	var size int64 = -1
	err := sqlitex.Execute(conn, "SELECT tree_size FROM log WHERE origin = ?", &sqlitex.ExecOptions{
		Args:       []any{origin},
		ResultFunc: func(stmt *sqlite.Stmt) error { size = stmt.ColumnInt64(0); return nil },
	})
	if err != nil || size < 0 {
		t.Fatalf("witness %s, log %s: size %d, %v", w.Name, origin, size, err)
	}
	return size
}

// Output is what the witness logged.
func (w *Witness) Output() string { return w.out.String() }

func (w *Witness) open(t testing.TB) *sqlite.Conn {
	t.Helper()
	conn, err := sqlite.OpenConn(w.db, 0)
	if err != nil {
		t.Fatalf("witness %s database: %v", w.Name, err)
	}
	conn.SetBusyTimeout(10 * time.Second)
	return conn
}

func (w *Witness) exec(t testing.TB, query string, args ...any) {
	t.Helper()
	conn := w.open(t)
	defer func() { _ = conn.Close() }()
	var err error
	if len(args) == 0 {
		err = sqlitex.ExecuteScript(conn, query, nil)
	} else {
		err = sqlitex.Execute(conn, query, &sqlitex.ExecOptions{Args: args})
	}
	if err != nil {
		t.Fatalf("witness %s database: %s: %v", w.Name, strings.TrimSpace(query), err)
	}
}

// serveAgent serves an ssh-agent holding key on a Unix socket until the test ends.
func serveAgent(t testing.TB, sock string, key ed25519.PrivateKey) {
	t.Helper()
	keyring := agent.NewKeyring()
	if err := keyring.Add(agent.AddedKey{PrivateKey: key}); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = l.Close()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { _ = conn.Close() }()
				_ = agent.ServeAgent(keyring, conn)
			}()
		}
	}()
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// Configs are the witnesses ws as the log's sequencer asks them (logpublish.Config.Witnesses).
func Configs(t testing.TB, ws ...*Witness) []logpublish.Witness {
	t.Helper()
	var cfg []logpublish.Witness
	for _, w := range ws {
		sw, err := logpublish.NewWitness(w.URL, w.VerifierKey)
		if err != nil {
			t.Fatal(err)
		}
		cfg = append(cfg, sw)
	}
	return cfg
}
