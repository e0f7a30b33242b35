package faulttest

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"
)

// Fault kinds the nemesis injects.
const (
	FaultKill         = "kill"          // SIGKILL a replica, restart it after a while
	FaultPause        = "pause"         // SIGSTOP a replica, SIGCONT it after a while
	FaultLatency      = "latency"       // slow a replica's database traffic down
	FaultReset        = "reset"         // reset a replica's database connections (TCP RST)
	FaultStall        = "stall"         // a replica's database traffic stops, then its connections close
	FaultPartition    = "partition"     // cut a replica off the database for a while
	FaultKillAll      = "kill-all"      // SIGKILL every replica for longer than the outage threshold
	FaultPartitionAll = "partition-all" // cut every replica off the database for longer than it
	FaultPrimary      = "primary-kill"  // SIGKILL the database's primary (a failover formation)
)

// Nemesis injects faults at random times, from a seed, one at a time, and heals each one.
type Nemesis struct {
	cluster *Cluster
	rng     *mrand.Rand
	// weights choose the next fault's kind.
	weights map[string]int
	// threshold is the replicas' outage threshold; total outages last longer.
	threshold time.Duration
	// scheduled is a fault injected once, at a set time after the nemesis starts (the primary's
	// kill, which a formation survives only once).
	scheduled *scheduledFault
	logf      func(format string, args ...any)

	mu      sync.Mutex
	counts  map[string]int
	outages []Outage
	errs    []error
}

// NewNemesis returns a nemesis over the cluster, choosing faults by weight.
func NewNemesis(c *Cluster, seed uint64, weights map[string]int, threshold time.Duration, logf func(string, ...any)) *Nemesis {
	return &Nemesis{cluster: c, rng: mrand.New(mrand.NewPCG(seed, 2)), weights: weights, threshold: threshold,
		logf: logf, counts: map[string]int{}}
}

// Counts returns how many faults of each kind were injected.
func (n *Nemesis) Counts() map[string]int {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := map[string]int{}
	for k, v := range n.counts {
		out[k] = v
	}
	return out
}

// Outages are the total outages injected (every replica down or cut off from the database).
func (n *Nemesis) Outages() []Outage {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Outage(nil), n.outages...)
}

// Errs are the faults the nemesis failed to inject or heal.
func (n *Nemesis) Errs() []error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]error(nil), n.errs...)
}

func (n *Nemesis) fail(err error) {
	if err == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.errs = append(n.errs, err)
}

// between is a random duration in [lo, hi).
func (n *Nemesis) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(n.rng.Int64N(int64(hi-lo)))
}

// pick chooses a fault kind by weight.
func (n *Nemesis) pick() string {
	kinds := make([]string, 0, len(n.weights))
	total := 0
	for k, w := range n.weights {
		kinds = append(kinds, k)
		total += w
	}
	sort.Strings(kinds) // map order is random; the seed must decide
	x := n.rng.IntN(total)
	for _, k := range kinds {
		if x < n.weights[k] {
			return k
		}
		x -= n.weights[k]
	}
	return kinds[len(kinds)-1]
}

type scheduledFault struct {
	after time.Duration
	// inject injects the fault and returns the outage it caused.
	inject func() (Outage, error)
}

// Schedule has the nemesis kill the database's primary once, after the given time: inject does
// it and returns the outage (FaultPrimary).
func (n *Nemesis) Schedule(after time.Duration, inject func() (Outage, error)) {
	n.scheduled = &scheduledFault{after: after, inject: inject}
}

// Run injects faults until ctx ends, each one healed before the next; everything is healed when
// it returns.
func (n *Nemesis) Run(ctx context.Context) {
	start := time.Now()
	for {
		sleepCtx(ctx, n.between(300*time.Millisecond, 2500*time.Millisecond))
		if ctx.Err() != nil {
			return
		}
		if s := n.scheduled; s != nil && time.Since(start) >= s.after {
			n.scheduled = nil
			n.injectScheduled(s)
			continue
		}
		n.inject(n.pick())
	}
}

func (n *Nemesis) injectScheduled(s *scheduledFault) {
	n.mu.Lock()
	n.counts[FaultPrimary]++
	n.mu.Unlock()
	outage, err := s.inject()
	n.fail(err)
	if err != nil {
		return
	}
	n.mu.Lock()
	n.outages = append(n.outages, outage)
	n.mu.Unlock()
	n.logf("nemesis %s: the database's primary killed; writes again after %v", outage.Start.Format("15:04:05.000"),
		outage.End.Sub(outage.Start).Round(time.Millisecond))
}

// inject injects one fault of the kind and heals it.
func (n *Nemesis) inject(kind string) {
	replicas := n.cluster.Replicas
	r := replicas[n.rng.IntN(len(replicas))]
	proxied := r.proxy != nil
	switch kind {
	case FaultLatency, FaultReset, FaultStall, FaultPartition, FaultPartitionAll:
		if !proxied {
			return
		}
	}
	n.mu.Lock()
	n.counts[kind]++
	n.mu.Unlock()
	start := time.Now()
	var what string
	switch kind {
	case FaultKill:
		r.Kill()
		d := n.between(200*time.Millisecond, 2*time.Second)
		time.Sleep(d)
		n.fail(r.Start())
		what = fmt.Sprintf("%s killed for %v", r.Name, d.Round(time.Millisecond))
	case FaultPause:
		n.fail(r.Pause())
		d := n.between(200*time.Millisecond, 2500*time.Millisecond)
		time.Sleep(d)
		n.fail(r.Resume())
		what = fmt.Sprintf("%s paused for %v", r.Name, d.Round(time.Millisecond))
	case FaultLatency:
		latency := 10 + n.rng.Int64N(150)
		for _, stream := range []string{"upstream", "downstream"} {
			n.fail(r.AddToxic("latency-"+stream, "latency", stream, map[string]any{"latency": latency, "jitter": latency / 3}))
		}
		d := n.between(time.Second, 5*time.Second)
		time.Sleep(d)
		for _, stream := range []string{"upstream", "downstream"} {
			n.fail(r.RemoveToxic("latency-" + stream))
		}
		what = fmt.Sprintf("%s's database traffic %d ms late for %v", r.Name, latency, d.Round(time.Millisecond))
	case FaultReset:
		n.fail(r.AddToxic("reset", "reset_peer", "upstream", map[string]any{"timeout": n.rng.Int64N(100)}))
		d := n.between(200*time.Millisecond, 1500*time.Millisecond)
		time.Sleep(d)
		n.fail(r.RemoveToxic("reset"))
		what = fmt.Sprintf("%s's database connections reset for %v", r.Name, d.Round(time.Millisecond))
	case FaultStall:
		// Nothing passes; at the end every connection that stalled is closed, as a timeout would
		// (resuming them would hand the database a stream with a hole in it).
		n.fail(r.AddToxic("stall", "timeout", "upstream", map[string]any{"timeout": 0}))
		d := n.between(500*time.Millisecond, 3*time.Second)
		time.Sleep(d)
		r.Cut()
		n.fail(r.RemoveToxic("stall"))
		n.fail(r.Mend())
		what = fmt.Sprintf("%s's database connections stalled for %v, then closed", r.Name, d.Round(time.Millisecond))
	case FaultPartition:
		r.Cut()
		d := n.between(300*time.Millisecond, 3*time.Second)
		time.Sleep(d)
		n.fail(r.Mend())
		what = fmt.Sprintf("%s cut off the database for %v", r.Name, d.Round(time.Millisecond))
	case FaultKillAll:
		d := n.outage(kind, func() {
			for _, r := range replicas {
				r.Kill()
			}
		}, func() {
			var wg sync.WaitGroup
			for _, r := range replicas {
				wg.Go(func() { n.fail(r.Start()) })
			}
			wg.Wait()
		})
		what = fmt.Sprintf("every replica killed for %v", d.Round(time.Millisecond))
	case FaultPartitionAll:
		d := n.outage(kind, func() {
			for _, r := range replicas {
				r.Cut()
			}
		}, func() {
			for _, r := range replicas {
				n.fail(r.Mend())
			}
		})
		what = fmt.Sprintf("every replica cut off the database for %v", d.Round(time.Millisecond))
	}
	n.logf("nemesis %s: %s", start.Format("15:04:05.000"), what)
}

// outage makes a total outage longer than the threshold: down takes every replica out, up
// brings them back; the outage is recorded from the moment the last replica was out (killing
// three replicas one after the other takes a while on a busy machine) until up begins. It
// returns its length.
func (n *Nemesis) outage(kind string, down, up func()) time.Duration {
	down()
	start := time.Now()
	d := n.threshold + n.between(500*time.Millisecond, 2*time.Second)
	time.Sleep(d)
	end := time.Now()
	up()
	n.mu.Lock()
	n.outages = append(n.outages, Outage{Kind: kind, Start: start, End: end})
	n.mu.Unlock()
	return d
}

// describeCounts renders fault counts sorted by kind.
func describeCounts(counts map[string]int) string {
	var kinds []string
	total := 0
	for k, v := range counts {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, v))
		total += v
	}
	sort.Strings(kinds)
	return fmt.Sprintf("%d (%s)", total, strings.Join(kinds, ", "))
}
