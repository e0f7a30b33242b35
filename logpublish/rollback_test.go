package logpublish_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/commitreveal/rps/logpublish"
)

// TestRefusesLogBehindItsWitnesses: at start a replica asks the witnesses which size of the log
// they hold; a database whose log is at that size is served, one rolled back behind it (here its
// log state set back to the empty tree, as a restore to before the first checkpoint would leave
// it) is refused, naming the witness and both sizes.
func TestRefusesLogBehindItsWitnesses(t *testing.T) {
	e, ws, log := witnessed(t)
	play(t, e, 3)
	c := waitCosigned(t, e, policy(log, 2, ws))
	starting, err := logpublish.New(t.Context(), logpublish.Config{Store: e.Store, Origin: origin, Witnesses: witnessConfigs(t, ws), WitnessTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := starting.CheckWitnesses(t.Context()); err != nil {
		t.Fatalf("a log at the witnesses' size %d: %v", c.N, err)
	}

	if _, err := e.Pool.Exec(t.Context(), `WITH cps AS (DELETE FROM log_checkpoints WHERE size > 0)
		UPDATE log_state SET size = 0, root = sha256('')`); err != nil {
		t.Fatal(err)
	}
	err = starting.CheckWitnesses(t.Context())
	if !errors.Is(err, logpublish.ErrBehindWitness) || !strings.Contains(err.Error(), "witness.test/w") ||
		!strings.Contains(err.Error(), "log 0") || !strings.Contains(err.Error(), "Backups and restores") {
		t.Fatalf("a log rolled back behind the witnesses' %d: %v, want a refusal naming the witness, both sizes and the remedy", c.N, err)
	}
}
