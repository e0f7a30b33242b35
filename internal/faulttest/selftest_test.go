package faulttest

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/commitreveal/rps/internal/apiclient"
	"github.com/commitreveal/rps/internal/apitest"
	"github.com/commitreveal/rps/internal/pgtest"
	"github.com/commitreveal/rps/tournament"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// quietRun plays a few lobbies on one in-process server without faults.
func quietRun(t *testing.T, seed uint64, play time.Duration) (*Run, CheckOptions) {
	t.Helper()
	e := apitest.Start(t, apitest.WithClock(), apitest.WithMinTimeout(200))
	run := NewRun(Options{Seed: seed, Lobbies: 3, PlayFor: play, URLs: func() []string { return []string{e.URL} },
		AdminToken: e.Admin, MinTimeoutMs: 200, Logf: t.Logf})
	hard, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	if err := run.Play(hard); err != nil {
		t.Fatal(err)
	}
	if err := run.Finish(); err != nil {
		t.Fatal(err)
	}
	ledger, err := run.AdminLedger()
	if err != nil {
		t.Fatal(err)
	}
	return run, CheckOptions{MinTimeoutMs: 200, OutDir: t.TempDir(), Timeout: time.Minute, Ledger: ledger}
}

// doctored is a copy of the run whose history edit has changed.
func doctored(r *Run, edit func(ops []*Op) ([]*Op, bool)) (*Run, bool) {
	var ops []*Op
	for _, op := range r.history.Ops() {
		c := *op
		ops = append(ops, &c)
	}
	slices.SortFunc(ops, func(a, b *Op) int { return int(a.Call - b.Call) })
	ops, ok := edit(ops)
	c := &Run{Options: r.Options, history: &History{ops: ops}, admin: r.admin, lobbies: r.lobbies,
		Logs: r.Logs, Ledgers: r.Ledgers, Audit: r.Audit, Balances: r.Balances, Unended: r.Unended}
	return c, ok
}

// TestCheckerStopsAtItsStepBudget: a lobby whose search needs more steps than the budget is
// reported as unchecked (nothing proven, the run fails on it), never as an anomaly; past the
// budget every step fails, so the search makes no new state and its memory stays bounded.
func TestCheckerStopsAtItsStepBudget(t *testing.T) {
	run, o := quietRun(t, 11, 4*time.Second)
	o.MaxSteps = 20
	res := Check(run, o)
	if len(res.Anomalies) > 0 {
		t.Errorf("a search stopped at its budget reported anomalies: %v", res.Anomalies)
	}
	over := 0
	for _, c := range res.Lobbies {
		if c.OverBudget != (c.Steps > o.MaxSteps) || c.OverBudget != slices.Contains(res.Timeouts, c.Lobby) {
			t.Errorf("%s: over budget %t, in Timeouts %t", c, c.OverBudget, slices.Contains(res.Timeouts, c.Lobby))
		}
		if c.OverBudget {
			over++
			if !strings.Contains(c.String(), "stopped at its step budget") {
				t.Errorf("the report does not say so: %s", c)
			}
		}
	}
	if over == 0 {
		t.Fatalf("no lobby's check needed more than %d steps: %v", o.MaxSteps, res.Lobbies)
	}
}

func TestCheckerOnAQuietRun(t *testing.T) {
	run, o := quietRun(t, 7, 8*time.Second)
	res := Check(run, o)
	t.Logf("%d operations %v, %d games, %d events", res.Ops, res.OpsByKind, res.Games, res.Events)
	for _, a := range res.Anomalies {
		t.Errorf("anomaly: %s", a)
	}
	if len(res.Timeouts) > 0 {
		t.Errorf("check timed out for lobbies %v", res.Timeouts)
	}
	if res.Games < 6 || res.OpsByKind[KindCommit] < 20 {
		t.Errorf("too little was played to check anything: %d games, %v", res.Games, res.OpsByKind)
	}

	// An action never answered is found in the log: the same history with a few answers lost
	// passes the checks.
	lost, ok := doctored(run, func(ops []*Op) ([]*Op, bool) {
		n := 0
		for _, op := range ops {
			if op.Input.Kind.lobbyAction() && op.Output.Outcome == OutcomeOK && n < 12 || op.Input.Kind == KindCredit && n < 15 {
				op.Answered, op.Output, op.Input.ToMs = false, Output{}, math.MaxInt64
				n++
			}
		}
		return ops, n > 12
	})
	if !ok {
		t.Fatal("the history has too few actions to lose answers of")
	}
	if res := Check(lost, o); len(res.Anomalies) > 0 || res.Resolution.Logged < 13 {
		t.Errorf("with answers lost: %d found in the log, anomalies %v", res.Resolution.Logged, res.Anomalies)
	}

	// A long run's lobby has many answers lost at once (a total outage loses every request in
	// flight), some of them of requests a paused or cut-off replica held for seconds before it
	// ran them, and many actions answered only after retries through an outage. Left open from
	// their calls to the end of the history, the lost ones made the search backtrack through
	// every operation between each one's call and its event (a 20-minute run's check ran out of
	// memory); taken at their calls, the retried ones set the model's clock ahead of everything in
	// between. The same history with every third action's answer lost, and two player actions in
	// three (lost or answered) called 3 s before they ran, passes the checks in at most two model
	// steps per operation.
	manyLost, ok := doctored(run, func(ops []*Op) ([]*Op, bool) {
		n := 0
		for i, op := range ops {
			if !op.Input.Kind.lobbyAction() || op.Output.Outcome != OutcomeOK || i%3 == 2 {
				continue
			}
			if op.Input.Signed != nil {
				op.Call -= int64(3 * time.Second)
				op.Input.FromMs = millis(op.Call)
			}
			if i%3 == 0 {
				op.Answered, op.Output, op.Input.ToMs = false, Output{}, math.MaxInt64
				n++
			}
		}
		return ops, n > 30
	})
	if !ok {
		t.Fatal("the history has too few actions to lose answers of")
	}
	manyRes := Check(manyLost, o)
	for _, c := range manyRes.Lobbies {
		t.Logf("many answers lost: %s", c)
		if limit := 2 * int64(c.Shape.Ops); c.Steps > limit {
			t.Errorf("many answers lost: lobby %s took %d model steps, more than %d", c.Lobby, c.Steps, limit)
		}
	}
	if len(manyRes.Anomalies) > 0 || len(manyRes.Timeouts) > 0 || manyRes.Resolution.Logged < 30 {
		t.Errorf("with many answers lost: %d found in the log, anomalies %v, timeouts %v", manyRes.Resolution.Logged, manyRes.Anomalies, manyRes.Timeouts)
	}

	// A close sent again after the first was given up finds the lobby closed by the first: it is
	// acknowledged and logs nothing (a 20-minute run's finding: the checker took it for a lost
	// close). The same history with the last close of a lobby resent so passes the checks.
	resent, ok := doctored(run, func(ops []*Op) ([]*Op, bool) {
		for _, op := range ops {
			if op.Input.Kind != KindClose || op.Output.Outcome != OutcomeOK {
				continue
			}
			if g := op.Output.View.Game; g.Stage.Open() && g.Deadline == op.Output.At {
				continue // a deadline at the close's instant would pass before the one resent
			}
			again := *op
			again.Call, again.Return = op.Call+1, op.Return+int64(time.Millisecond)
			again.Input.FromMs, again.Input.ToMs = millis(again.Call), millis(again.Return)
			again.Output.At++
			op.Answered, op.Output, op.Input.ToMs = false, Output{}, math.MaxInt64
			return append(ops, &again), true
		}
		return ops, false
	})
	if !ok {
		t.Fatal("the history has no close to send again")
	}
	if res := Check(resent, o); len(res.Anomalies) > 0 || res.Resolution.Logged < 1 {
		t.Errorf("with a close sent again: %d found in the log, anomalies %v", res.Resolution.Logged, res.Anomalies)
	}

	// The checks can fail: each doctored history below shows one anomaly.
	cases := []struct {
		name, check string
		edit        func(ops []*Op) ([]*Op, bool)
	}{
		{"a registration counted twice", "linearizable", func(ops []*Op) ([]*Op, bool) {
			// The same registration answered twice, the second time at the first one's instant.
			for _, op := range ops {
				if op.Input.Kind == KindRegister && op.Output.Outcome == OutcomeOK {
					again := *op
					again.Call, again.Return = op.Call+1, op.Return+1
					return append(ops, &again), true
				}
			}
			return ops, false
		}},
		{"a read that saw a stale stage", "linearizable", func(ops []*Op) ([]*Op, bool) {
			for i, early := range ops {
				if early.Input.Kind != KindReadLobby || !early.Answered {
					continue
				}
				for _, late := range ops[i+1:] {
					if late.Lobby == early.Lobby && late.Input.Kind == KindReadLobby && late.Input.Actor == early.Input.Actor &&
						late.Call > early.Return+int64(50*time.Millisecond) && late.Output.View.Game.Stage != early.Output.View.Game.Stage {
						stale := *early.Output.View
						late.Output.View = &stale
						return ops, true
					}
				}
			}
			return ops, false
		}},
		{"a read whose head is not its state's", "linearizable", func(ops []*Op) ([]*Op, bool) {
			for _, op := range ops {
				if op.Input.Kind == KindReadLobby && op.Answered && op.Output.View.Head != nil && op.Output.View.Head.Seq > 3 {
					v := *op.Output.View
					v.Head = &EventRef{Seq: v.Head.Seq - 1, Hash: v.Head.Hash}
					op.Output.View = &v
					return ops, true
				}
			}
			return ops, false
		}},
		{"a close acknowledged before the lobby was closed", "acknowledged actions are logged", func(ops []*Op) ([]*Op, bool) {
			for _, op := range ops {
				if op.Input.Kind == KindClose && op.Output.Outcome == OutcomeOK {
					early := *op
					early.Call -= int64(time.Millisecond)
					early.Input.FromMs = millis(early.Call)
					early.Output.At--
					return append(ops, &early), true
				}
			}
			return ops, false
		}},
		{"an acknowledged credit lost", "money is conserved", func(ops []*Op) ([]*Op, bool) {
			for _, op := range ops {
				if op.Input.Kind == KindCredit && op.Output.Outcome == OutcomeOK {
					op.Input.Amount++ // the client credited one more than the ledger shows
					return ops, true
				}
			}
			return ops, false
		}},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			bad, ok := doctored(run, c.edit)
			if !ok {
				t.Fatal("the history has nothing to doctor")
			}
			res := Check(bad, o)
			found := false
			for _, a := range res.Anomalies {
				t.Logf("anomaly: %s", a)
				found = found || a.Check == c.check
			}
			if !found {
				t.Errorf("no %q anomaly found", c.check)
			}
		})
	}
}

// TestOutageCheckStartsWhenWritesStop: a lobby's deadline applied in the moment between the
// nemesis's start of an outage and the kill landing (the formation's kill script takes that long
// to start on a busy machine) left no deadline to shift, and the check must not ask for a
// shift (a bounded run took it for a missing one); a deadline still open when the writes stopped
// does need one.
func TestOutageCheckStartsWhenWritesStop(t *testing.T) {
	start := time.UnixMilli(1_800_000_000_000)
	outage := Outage{Kind: FaultPrimary, Start: start, End: start.Add(9 * time.Second)}
	at := func(d time.Duration) int64 { return start.Add(d).UnixMilli() }
	event := func(seq int64, typ tournament.EventType, atMs int64, fields map[string]any) LogEvent {
		return LogEvent{Event: apiclient.Event{Seq: seq, Type: string(typ)}, atMs: atMs, fields: fields}
	}
	registered := func(deadline int64) LogEvent {
		return event(3, tournament.EventPlayerRegistered, at(-time.Second), map[string]any{"deadline": float64(deadline)})
	}
	applied := tournament.LobbyID("applied-as-the-kill-landed")
	open := tournament.LobbyID("open-when-the-writes-stopped")
	r := &Run{lobbies: []*lobbyRun{{id: applied}, {id: open}}, Logs: map[tournament.LobbyID][]LogEvent{
		applied: {registered(at(100 * time.Millisecond)),
			event(4, tournament.EventGameStopped, at(101*time.Millisecond), nil)},
		open: {registered(at(5 * time.Second))},
	}}
	anomalies := checkOutages(r, CheckOptions{Outages: []Outage{outage}, OutageThreshold: 1500 * time.Millisecond, DatabaseOutageRule: true})
	var flagged []tournament.LobbyID
	for _, a := range anomalies {
		t.Logf("anomaly: %s", a)
		flagged = append(flagged, a.Lobby)
	}
	if !slices.Equal(flagged, []tournament.LobbyID{open}) {
		t.Errorf("lobbies flagged %v, want only %s", flagged, open)
	}
}
