package main

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// The parts of rpsd's work that the report splits its CPU time into, in the report's order.
const (
	partHTTP     = "HTTP and JSON"
	partDecision = "the decision"
	partDB       = "database round trips"
	partFanOut   = "fan-out"
	partRest     = "the rest (GC, scheduler, runtime)"
)

var cpuParts = []string{partHTTP, partDecision, partDB, partFanOut, partRest}

const module = `^github\.com/commitreveal/rps/`

// fanOutFrames are the functions of the fan-out: the event streams, the long polls, their shared
// encodings (api/fanout.go), the signed heads and the notifications that wake them (LISTEN and
// the store's cache of notified events). Keep them in step with those files' names.
// A sample with one of them anywhere on its stack is fan-out, whatever it spends its time on.
var fanOutFrames = regexp.MustCompile(module + `(` +
	`api\.\(\*Server\)\.(streamEvents|sendEvents|sendSnapshot|writeHead|headFailed|eventsAfter|readToHead|currentHead)|` +
	`api\.\(\*handlers\)\.ListEvents|api\.longPollAnswer\.|api\.\(\*streamOutput\)\.|api\.pacedWriter\.|` +
	`api\.\(\*(fanOut|lobbyFanOut)\)\.|api\.(encodeBatch|encodeEvent|headFrame)|api\.\(\*signer\)\.(head|reusable|sign)|` +
	`store\.\(\*Store\)\.(Subscribe|NotifiedEvents|MayHaveEventsAfter|listen)|store\.\(\*notifier\)\.)`)

// partFrames name the other parts by the package of a frame. Frames of any other package
// (runtime, syscall, net, bufio, encoding/json, crypto, sync...) name none: their time belongs to
// the nearest caller that does.
var partFrames = []struct {
	part string
	re   *regexp.Regexp
}{
	{partDecision, regexp.MustCompile(module + `(tournament|engine)\.`)},
	{partDB, regexp.MustCompile(`^github\.com/jackc/(pgx|pgconn|pgio|pgproto3|pgtype|puddle)|` + module + `store\.`)},
	{partHTTP, regexp.MustCompile(`^(net/http\.|net/textproto\.|mime|github\.com/go-chi/|github\.com/getkin/kin-openapi/|github\.com/oapi-codegen/)|` + module + `api\.`)},
}

// cpuSplitRule is how a sample is attributed, for the report.
const cpuSplitRule = "A sample whose stack holds a function of the fan-out (the event stream's and the long poll's " +
	"handlers and writers, the signed head, the store's notifications and their cache) is fan-out. Any other goes to " +
	"the first frame, walking from the leaf towards the root, that belongs to a part: `tournament` and `engine` are " +
	"the decision; pgx and `store` the database round trips (building statements, encoding, the protocol); " +
	"net/http, chi, kin-openapi, oapi-codegen and `api` are HTTP and JSON. Frames of other packages (runtime, " +
	"syscall, net, encoding/json, crypto...) belong to no part, so a system call, an allocation or a JSON encoding " +
	"counts for the part that asked for it; a sample with no part's frame at all (the garbage collector's workers, " +
	"the scheduler) is the rest."

// cpuSplit is a CPU profile's samples by part of rpsd's work.
type cpuSplit struct {
	total  time.Duration
	byPart map[string]time.Duration
}

// partOf is the part a sample's stack (leaf first) is attributed to, by cpuSplitRule.
func partOf(stack []string) string {
	for _, f := range stack {
		if fanOutFrames.MatchString(f) {
			return partFanOut
		}
	}
	for _, f := range stack {
		for _, p := range partFrames {
			if p.re.MatchString(f) {
				return p.part
			}
		}
	}
	return partRest
}

// splitTraces reads `go tool pprof -traces` output (a header, then each sample as a line of
// dashes, its value and leaf function, and its callers one a line) into a cpuSplit.
func splitTraces(text string) (cpuSplit, error) {
	s := cpuSplit{byPart: map[string]time.Duration{}}
	var value time.Duration
	var stack []string
	flush := func() {
		if len(stack) > 0 {
			s.byPart[partOf(stack)] += value
			s.total += value
		}
		value, stack = 0, nil
	}
	inSample := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "-----------+") {
			flush()
			inSample = true
			continue
		}
		if !inSample || strings.TrimSpace(line) == "" {
			continue
		}
		fields := strings.Fields(line)
		if len(stack) == 0 {
			// The sample's first line: its value, then its leaf.
			if len(fields) < 2 {
				return s, fmt.Errorf("pprof -traces: a sample without a value and a function: %q", line)
			}
			d, err := time.ParseDuration(fields[0])
			if err != nil {
				return s, fmt.Errorf("pprof -traces: the value of %q: %w", line, err)
			}
			value, fields = d, fields[1:]
		}
		stack = append(stack, fields[0]) // without " (inline)"
	}
	flush()
	if s.total == 0 {
		return s, fmt.Errorf("pprof -traces: no samples")
	}
	return s, nil
}

// perAction is the part's share of cpu, a CPU time per action measured from /proc over the
// whole run: the profile, over part of the run, gives the shares only.
func (s cpuSplit) perAction(part string, cpu time.Duration) time.Duration {
	if s.total == 0 {
		return 0
	}
	return time.Duration(float64(cpu) * float64(s.byPart[part]) / float64(s.total))
}
