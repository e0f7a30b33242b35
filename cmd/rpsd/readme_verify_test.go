package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runReadmeVerify runs the README's two rpsverify lines as written, from the repository's root,
// against s (in place of make run's address), with a home folder of the test's own for the
// state file.
func runReadmeVerify(t *testing.T, s *server) {
	t.Helper()
	script := strings.ReplaceAll(readmeScript(t, "verify"), "http://localhost:8080", s.URL)
	home := t.TempDir()
	path := filepath.Join(home, "verify.sh")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// go run keeps using the machine's build and module caches under the test's home folder.
	env := childEnv(nil)
	for _, name := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		out, err := exec.Command("go", "env", name).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", name, err)
		}
		env = append(env, name+"="+strings.TrimSpace(string(out)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", path)
	cmd.Env = append(env, "HOME="+home)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("README rpsverify lines failed: %v\n%s\nscript:\n%s", err, out, script)
	}
	t.Logf("rpsverify:\n%s", out)
	// The walk-through's lobby, verified by each line.
	if got := strings.Count(string(out), ": ok: events 1.."); got != 2 {
		t.Errorf("want the lobby verified twice, got %d", got)
	}
	if !strings.Contains(string(out), ", 1 receipts") {
		t.Errorf("the second line checked no receipt")
	}
	data, err := os.ReadFile(filepath.Join(home, ".rpsverify.json"))
	if err != nil {
		t.Fatal(err)
	}
	var state struct {
		Receipts []json.RawMessage `json:"receipts"`
	}
	if err := json.Unmarshal(data, &state); err != nil || len(state.Receipts) != 1 {
		t.Errorf("state file %s: %v", data, err)
	}
}
