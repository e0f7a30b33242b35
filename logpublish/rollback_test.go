package logpublish_test

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commitreveal/rps/internal/witnesstest"
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
	starting, err := logpublish.New(t.Context(), logpublish.Config{Store: e.Store, Origin: origin, Witnesses: witnesstest.Configs(t, ws...), WitnessTimeout: 2 * time.Second})
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

// TestWitnessesAreAskedTogetherAtStart: at start every witness is asked at once, so that hanging
// witnesses delay a start (a failover's too) by one timeout, not one each: here each witness
// answers only once the other was asked too. (Asked one after the other, the first waited for its
// timeout before the second was asked.)
func TestWitnessesAreAskedTogetherAtStart(t *testing.T) {
	e, seq := setup(t)
	if n, err := seq.Integrate(t.Context()); err != nil || n == 0 {
		t.Fatalf("integrate: %d, %v", n, err)
	}
	asked := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	var timedOut atomic.Int64
	var fakes [2]*fakeWitness
	for i := range fakes {
		var once sync.Once
		fakes[i] = startFake(t, "witness.test/together"+strconv.Itoa(i), func(w http.ResponseWriter, r *http.Request, _ int64, text []byte) {
			once.Do(func() { close(asked[i]) })
			select {
			case <-asked[1-i]:
				fakes[i].cosign(w, text)
			case <-r.Context().Done():
				timedOut.Add(1)
			}
		})
	}
	starting, err := logpublish.New(t.Context(), logpublish.Config{
		Store: e.Store, Origin: origin, Witnesses: []logpublish.Witness{fakes[0].witness(t), fakes[1].witness(t)}, WitnessTimeout: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := starting.CheckWitnesses(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := timedOut.Load(); n != 0 {
		t.Fatalf("%d witnesses waited for their timeout before the other was asked", n)
	}
}
