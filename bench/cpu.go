package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// cpuMeter reads from /proc the CPU time of rpsd and of the PostgreSQL cluster: its postmaster,
// every live child (backends, background workers) and the children that exited, whose times the
// postmaster collected when it reaped them. The bots and pgbench's own client are not counted.
type cpuMeter struct {
	postmaster, rpsd int
	// tick is the length of a clock tick, the unit of /proc's times.
	tick time.Duration
}

// cpuSample is the CPU time used so far.
type cpuSample struct{ pg, rpsd time.Duration }

func newCPUMeter(ctx context.Context, dbURL string, rpsd int) (cpuMeter, error) {
	m := cpuMeter{rpsd: rpsd, tick: 10 * time.Millisecond}
	if out, err := exec.CommandContext(ctx, "getconf", "CLK_TCK").Output(); err == nil {
		if hz, err := strconv.Atoi(strings.TrimSpace(string(out))); err == nil && hz > 0 {
			m.tick = time.Second / time.Duration(hz)
		}
	}
	err := withConn(ctx, dbURL, func(c *pgx.Conn) error {
		var backend int
		if err := c.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
			return err
		}
		st, err := procStat(backend)
		m.postmaster = st.ppid
		return err
	})
	if err != nil {
		return m, fmt.Errorf("find the postmaster: %w", err)
	}
	return m, nil
}

func (m cpuMeter) sample() cpuSample {
	var pgTicks int64
	if st, err := procStat(m.postmaster); err == nil {
		pgTicks += st.own + st.children
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := procStat(pid); err == nil && st.ppid == m.postmaster {
			pgTicks += st.own + st.children
		}
	}
	var rpsdTicks int64
	if st, err := procStat(m.rpsd); err == nil {
		rpsdTicks = st.own
	}
	return cpuSample{pg: time.Duration(pgTicks) * m.tick, rpsd: time.Duration(rpsdTicks) * m.tick}
}

func (s cpuSample) since(earlier cpuSample) cpuSample {
	return cpuSample{pg: s.pg - earlier.pg, rpsd: s.rpsd - earlier.rpsd}
}

// stat is what the bench reads of /proc/PID/stat: the parent, the process's own CPU ticks (user
// and system) and those of its reaped children.
type stat struct {
	ppid          int
	own, children int64
}

func procStat(pid int) (stat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return stat{}, err
	}
	// The command name, in parentheses, may hold spaces: the fields start after its last ')'.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return stat{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	n := func(k int) int64 { v, _ := strconv.ParseInt(f[k-3], 10, 64); return v } // k: field number in proc(5)
	return stat{ppid: int(n(4)), own: n(14) + n(15), children: n(16) + n(17)}, nil
}

// profileResult is a CPU profile of rpsd: the top of `go tool pprof -top`, and its samples split
// by part of rpsd's work (see cpuSplitRule); splitErr says why there is no split.
type profileResult struct {
	top      []string
	split    cpuSplit
	splitErr string
}

// cpuProfile takes a CPU profile of rpsd for d through its debug listener and reads it with go
// tool pprof; keep, if not empty, is where to copy the profile.
func cpuProfile(ctx context.Context, debugAddr, rpsd, dir string, d time.Duration, keep string) profileResult {
	failed := func(err error) profileResult {
		return profileResult{top: []string{"profile: " + err.Error()}, splitErr: "profile: " + err.Error()}
	}
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", debugAddr, int(d.Seconds()))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return failed(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return failed(err)
	}
	defer resp.Body.Close()
	path := filepath.Join(dir, "rpsd.cpu.pprof")
	f, err := os.Create(path)
	if err != nil {
		return failed(err)
	}
	_, err = io.Copy(f, resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return failed(err)
	}
	if keep != "" {
		if b, err := os.ReadFile(path); err == nil {
			_ = os.WriteFile(keep, b, 0o644) // a convenience: the report has the top already
		}
	}
	var res profileResult
	out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=25", rpsd, path).CombinedOutput()
	if err != nil {
		res.top = []string{"go tool pprof: " + err.Error() + ": " + lastLines(string(out), 5)}
	} else {
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if strings.HasPrefix(l, "File:") || strings.HasPrefix(l, "Build ID:") || strings.HasPrefix(l, "Type:") || strings.HasPrefix(l, "Time:") {
				continue
			}
			res.top = append(res.top, l)
		}
	}
	traces, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-traces", rpsd, path).Output()
	if err != nil {
		res.splitErr = "go tool pprof -traces: " + err.Error()
		return res
	}
	if res.split, err = splitTraces(string(traces)); err != nil {
		res.splitErr = err.Error()
	}
	return res
}

// loadAverage is /proc/loadavg's three load averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
