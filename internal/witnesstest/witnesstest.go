// Package witnesstest runs real C2SP tlog-witnesses on loopback for tests: torchwood's
// litewitness, built from the version go.mod pins (its `tool` lines), so a fresh machine gets the
// same one. Each witness has its own SQLite database, its own Ed25519 key served by an ssh-agent
// running in the test process (litewitness signs through the agent protocol), and listens on a
// free loopback port. Everything stops, by PID, when the test ends.
//
//	w := witnesstest.Start(t, "witness.test/w1")
//	w.AddLog(t, origin, logVerifierKey)
//	sequencer.NewWitness(w.URL, w.VerifierKey)
package witnesstest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
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
)

// Witness is a litewitness running for a test.
type Witness struct {
	// Name names the witness in its cosignatures; URL is its submission prefix; VerifierKey its
	// cosignature verifier key.
	Name, URL, VerifierKey string
	db                     string
	cmd                    *exec.Cmd
	done                   chan struct{}
	out                    *bytes.Buffer
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries builds litewitness and witnessctl once per test process, from the module's pinned
// torchwood.
func binaries(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "witnesstest-bin")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", binDir, "filippo.io/torchwood/cmd/litewitness", "filippo.io/torchwood/cmd/witnessctl")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build litewitness: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

// Start runs a witness named name. It knows no log until AddLog.
func Start(t testing.TB, name string) *Witness {
	t.Helper()
	bin := binaries(t)
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
	w := &Witness{Name: name, VerifierKey: signer.Verifier().String(), db: filepath.Join(dir, "witness.db"), done: make(chan struct{}), out: &bytes.Buffer{}}
	// witnessctl creates the database; litewitness reads the logs it knows on every request.
	w.ctl(t, "list-logs")
	addr := freeAddr(t)
	w.URL = "http://" + addr + "/"
	w.cmd = exec.Command(filepath.Join(bin, "litewitness"), "-db", w.db, "-name", name, "-key", ssh.FingerprintSHA256(sshPub),
		"-ssh-agent", sock, "-listen", addr, "-obscurity")
	w.cmd.Stdout, w.cmd.Stderr = w.out, w.out
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = w.cmd.Wait()
		close(w.done)
	}()
	t.Cleanup(w.Stop)
	for deadline := time.Now().Add(10 * time.Second); ; {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			break
		}
		select {
		case <-w.done:
			t.Fatalf("litewitness %s exited: %s", name, w.out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("litewitness %s did not listen on %s: %s", name, addr, w.out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return w
}

// Stop stops the witness (by its PID) and waits for it; its database stays until the test ends.
func (w *Witness) Stop() {
	if w.cmd.Process != nil {
		_ = w.cmd.Process.Kill()
	}
	<-w.done
}

// AddLog has the witness know the log origin with its verifier key vkey (a log it knows starts
// at size 0).
func (w *Witness) AddLog(t testing.TB, origin, vkey string) {
	t.Helper()
	w.ctl(t, "add-log", "-origin", origin)
	w.ctl(t, "add-key", "-origin", origin, "-key", vkey)
}

// Size is the size of the log origin the witness last cosigned.
func (w *Witness) Size(t testing.TB, origin string) int64 {
	t.Helper()
	for _, line := range strings.Split(w.ctl(t, "list-logs"), "\n") {
		var l struct {
			Origin string `json:"origin"`
			Size   int64  `json:"size"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Origin == origin {
			return l.Size
		}
	}
	t.Fatalf("witness %s does not know log %s", w.Name, origin)
	return 0
}

// Output is what the witness logged.
func (w *Witness) Output() string { return w.out.String() }

func (w *Witness) ctl(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args = append(args[:1:1], append([]string{"-db", w.db}, args[1:]...)...)
	out, err := exec.CommandContext(ctx, filepath.Join(binDir, "witnessctl"), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("witnessctl %v: %v\n%s", args, err, out)
	}
	return string(out)
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
		l.Close()
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
				defer conn.Close()
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
	defer l.Close()
	return l.Addr().String()
}
