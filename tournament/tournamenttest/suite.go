package tournamenttest

import (
	"testing"
)

// Options tune Run for a backend.
type Options struct {
	// Serial runs the scenarios one at a time. Set it when the backends newBackend returns share
	// state: ShiftClock moves the deadlines of every lobby of a backend, so scenarios running in
	// parallel on one database would see each other's shifts.
	Serial bool
}

// scenario is one story test. It gets a harness on a fresh backend (an admin, players p1..p6 with
// Funds each, a clock at Start, no lobby yet); Run verifies every invariant after it.
type scenario struct {
	name string
	run  func(h *harness)
}

// Run runs the whole suite against backends made by newBackend: every scenario as a subtest on
// its own backend, in parallel, followed by the property tests. The property tests run rapid's
// default number of checks (100, a fifth of that with -short; -rapid.checks or RAPID_CHECKS
// override it).
func Run(t *testing.T, newBackend func(t *testing.T) Backend) {
	RunWith(t, Options{}, newBackend)
}

// RunWith is Run with options.
func RunWith(t *testing.T, o Options, newBackend func(t *testing.T) Backend) {
	groups := []struct {
		name      string
		scenarios []scenario
	}{
		{"Gear", gearScenarios},
		{"Ours", ourScenarios},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, s := range g.scenarios {
				t.Run(s.name, func(t *testing.T) {
					if !o.Serial {
						t.Parallel()
					}
					h := newHarness(t, newBackend(t))
					s.run(h)
					h.verify()
				})
			}
		})
	}
	t.Run("Property", func(t *testing.T) {
		for _, p := range properties {
			t.Run(p.name, func(t *testing.T) {
				if !o.Serial {
					t.Parallel()
				}
				p.run(t, newBackend(t))
			})
		}
	})
}
