package main

import (
	"strings"
	"testing"
	"time"
)

// The report's line on signatures reads each benchmark's ns/op and sets it beside rpsd's CPU per
// action in the mixed load.
func TestVerifyLineReadsTheBenchmark(t *testing.T) {
	r := &report{crypto: []string{"cpu: Intel(R) Xeon(R)",
		"BenchmarkActionVerify-2   	    4132	    51818 ns/op	     976 B/op	       3 allocs/op",
		"BenchmarkHeadSign-2       	   10000	    25900 ns/op	     664 B/op	       4 allocs/op"}}
	r.mixed.perAction.rpsd = 1295 * time.Microsecond
	got := r.verifyLine()
	if !strings.Contains(got, "**52 µs per action**") || !strings.Contains(got, "4.0% of rpsd's 1295 µs") ||
		!strings.Contains(got, "**26 µs per event**") || !strings.Contains(got, "2.0% of rpsd's CPU per action") {
		t.Errorf("verifyLine = %q", got)
	}
	r.crypto = []string{"go test -bench failed: exit status 1"}
	if got := r.verifyLine(); !strings.Contains(got, "not measured (go test -bench failed") {
		t.Errorf("verifyLine without a result = %q", got)
	}
}

// The big lobby's size leaves time for its players to bind their keys: a millisecond per key
// takes about a sixth of the 100,000 players a 600 s budget holds at 1,000 actions/s.
func TestBigSizeLeavesTimeToBindKeys(t *testing.T) {
	without, _ := bigSize(0, 1000, 0, 600*time.Second)
	with, why := bigSize(0, 1000, time.Millisecond, 600*time.Second)
	if without != 89_000 || with != 75_000 {
		t.Errorf("sizes %d without binding keys and %d with (%s), want 89000 and 75000", without, with, why)
	}
}
