// Package ha drives scripts/ha/formation.sh, a pg_auto_failover formation on loopback, for the
// tests that fail PostgreSQL over (cmd/rpsd's TestFailover, internal/faulttest's failover run),
// and cleans up after a test process however it ends.
package ha

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// script is scripts/ha/formation.sh, found from this file's place in the repository.
func script() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..", "scripts", "ha", "formation.sh")
}

// Formation runs formation.sh with args (up DIR, primary DIR, kill DIR NODE, down DIR) and
// returns its standard output without surrounding space.
func Formation(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{script()}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("formation.sh %v: %w\n%s%s", args, err, stdout.String(), stderr.String())
	}
	return strings.TrimSpace(stdout.String()), nil
}

// DownAtExit takes the formation in dir down (every process by PID, and the folder) once this
// process has exited, whatever the way it goes.
func DownAtExit(dir string) error {
	return RunAtExit(`bash "$1" down "$2"`, script(), dir)
}

// exitPipes keeps the watchdogs' pipes open for the life of the process.
var (
	exitPipesMu sync.Mutex
	exitPipes   []*os.File
)

// RunAtExit runs the shell script with args once this process has exited, whatever the way it
// goes: a shell blocks reading a pipe whose only writer is this process.
func RunAtExit(script string, args ...string) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd := exec.Command("/bin/sh", append([]string{"-c", "read -r _; " + script, "rps-test-cleanup"}, args...)...)
	cmd.Stdin = r
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return err
	}
	exitPipesMu.Lock()
	exitPipes = append(exitPipes, w)
	exitPipesMu.Unlock()
	return cmd.Process.Release()
}
