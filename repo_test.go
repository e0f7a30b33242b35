package rps_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// gitLsFiles lists the tracked files with their modes, or skips the test outside a git checkout
// (a source archive has no index to check).
func gitLsFiles(t *testing.T) map[string]string {
	t.Helper()
	out, err := exec.Command("git", "ls-files", "-s", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	files := map[string]string{}
	for entry := range bytes.SplitSeq(out, []byte{0}) {
		meta, path, ok := bytes.Cut(entry, []byte{'\t'})
		if !ok {
			continue
		}
		mode, _, _ := strings.Cut(string(meta), " ")
		files[string(path)] = mode
	}
	return files
}

// TestNoBinariesTracked: build outputs never go into git. No tracked file is a compiled program
// (ELF, Mach-O, PE or a Java class), and every executable one is a script.
func TestNoBinariesTracked(t *testing.T) {
	magics := map[string][]byte{
		"ELF": []byte("\x7fELF"), "Mach-O": {0xcf, 0xfa, 0xed, 0xfe}, "Mach-O (32-bit)": {0xce, 0xfa, 0xed, 0xfe},
		"Mach-O (universal) or a Java class": {0xca, 0xfe, 0xba, 0xbe}, "PE": []byte("MZ\x90\x00"),
	}
	for path, mode := range gitLsFiles(t) {
		f, err := os.Open(path)
		if err != nil {
			continue // deleted in the work tree
		}
		head := make([]byte, 4)
		n, _ := f.Read(head)
		_ = f.Close()
		head = head[:n]
		for kind, magic := range magics {
			if bytes.HasPrefix(head, magic) {
				t.Errorf("%s is a compiled program (%s) in git: remove it (git rm --cached) and ignore it", path, kind)
			}
		}
		if mode == "100755" && !bytes.HasPrefix(head, []byte("#!")) {
			t.Errorf("%s is executable but not a script", path)
		}
	}
}

// TestBuildOutputsIgnored: what builds and runs leave in the tree is ignored by git, wherever it
// lands, and kept out of a Docker build's context; the sources are not.
func TestBuildOutputsIgnored(t *testing.T) {
	gitLsFiles(t)
	outputs := []string{
		"rpsd", "rpsbot", "rpsverify", "bench/bench", "cmd/rpsd/rpsd", "cmd/rpsbot/rpsbot", "cmd/rpsverify/rpsverify",
		"api/api.test", "cpu.prof", ".rpsd/password", ".tools/bin/golangci-lint", "node_modules/x/index.js",
		"android-client/app/target/rps.apk", "android-client/core/target/classes/A.class", "console/test/output/a.png",
	}
	for _, path := range outputs {
		if err := exec.Command("git", "check-ignore", "-q", "--no-index", path).Run(); err != nil {
			t.Errorf("git does not ignore %s", path)
		}
	}
	for _, path := range []string{"cmd/rpsd/main.go", "bench/main.go", "api/server.go", "android-client/pom.xml"} {
		if err := exec.Command("git", "check-ignore", "-q", "--no-index", path).Run(); err == nil {
			t.Errorf("git ignores the source %s", path)
		}
	}

	f, err := os.Open(".dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var patterns []string
	for s := bufio.NewScanner(f); s.Scan(); {
		if line := strings.TrimSpace(s.Text()); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, line)
		}
	}
	for _, want := range []string{
		".git", "**/.rpsd", "**/node_modules", "**/.tools", "**/target",
		"rpsd", "rpsbot", "rpsverify", "bench/bench", "cmd/rpsd/rpsd", "cmd/rpsbot/rpsbot", "cmd/rpsverify/rpsverify", "**/*.test",
	} {
		if !slices.Contains(patterns, want) {
			t.Errorf(".dockerignore does not list %s", want)
		}
	}
}

// readmeSections splits README.md into its level-2 sections, by heading, in order.
func readmeSections(t *testing.T) (headings []string, bodies map[string]string) {
	t.Helper()
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	bodies = map[string]string{}
	var current string
	inFence := false
	for line := range strings.SplitSeq(string(raw), "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if h, ok := strings.CutPrefix(line, "## "); ok && !inFence {
			current = h
			headings = append(headings, h)
			continue
		}
		bodies[current] += line + "\n"
	}
	return headings, bodies
}

// TestReadmeSections: README has one trust model, and the protocol's items sit in the protocol
// section rather than under another heading.
func TestReadmeSections(t *testing.T) {
	headings, bodies := readmeSections(t)
	seen := map[string]int{}
	for _, h := range headings {
		if seen[h]++; seen[h] == 2 {
			t.Errorf("README has more than one section %q", h)
		}
	}
	const protocol = "The protocol, for third-party clients"
	for _, item := range []string{"**Finding a game.**", "**History and standings.**", "**Admin account tools.**", "**Sealing.**", "**Events.**"} {
		if !strings.Contains(bodies[protocol], "- "+item) {
			t.Errorf("the protocol item %s is not in README's section %q", item, protocol)
		}
	}
	for _, who := range []string{"**A player**", "**An admin**", "**A database reader**", "**The operator**"} {
		if !strings.Contains(bodies["Trust model"], who) {
			t.Errorf("README's trust model does not say what %s can do", who)
		}
	}
}

// TestTranslogStaysPure: the transparency log's package and any package under it compute, they do
// not store or talk: none reaches the store or a database driver, even indirectly, and none
// imports an HTTP or network package itself (the worker that integrates, signs and asks the
// witnesses is logpublish, beside the API). torchwood, which translog uses for its formats, has an
// HTTP client of its own, so indirect net/http is not judged.
func TestTranslogStaysPure(t *testing.T) {
	goList := func(args ...string) []string {
		t.Helper()
		out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
		if err != nil {
			t.Fatalf("go list %v: %v", args, err)
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	stored := func(path string) bool {
		return path == "github.com/commitreveal/rps/store" || strings.HasPrefix(path, "github.com/commitreveal/rps/store/") ||
			strings.HasPrefix(path, "github.com/jackc/") || path == "database/sql"
	}
	for _, dep := range goList("-deps", "./translog/...") {
		if stored(dep) {
			t.Errorf("translog reaches %s: storing the log belongs to store, running it to logpublish", dep)
		}
	}
	for _, line := range goList("-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./translog/...") {
		pkg, imports, _ := strings.Cut(line, " ")
		for imp := range strings.FieldsSeq(imports) {
			if imp == "net" || strings.HasPrefix(imp, "net/") {
				t.Errorf("%s imports %s: talking to witnesses and serving the log belong to logpublish and api", pkg, imp)
			}
		}
	}
}
