package main

import (
	"strings"
	"testing"
	"time"
)

// A profile's samples go to the parts of rpsd's work by cpuSplitRule: the fan-out by any frame
// on the stack, the others by the frame nearest the leaf that names a part, the rest when none
// does.
func TestSplitTracesAttributesEachSampleByTheRule(t *testing.T) {
	const traces = `File: rpsd
Type: cpu
Duration: 30s, Total samples = 1.27s (4.2%)
-----------+-------------------------------------------------------
      10ms   runtime.memmove
             encoding/json.(*encodeState).marshal
             github.com/commitreveal/rps/api.(*handlers).CommitMove
             net/http.HandlerFunc.ServeHTTP
-----------+-------------------------------------------------------
      20ms   syscall.Syscall
             internal/poll.(*FD).Write
             net.(*conn).Write
             net/http.(*chunkWriter).Write
             github.com/commitreveal/rps/api.(*streamOutput).write
             github.com/commitreveal/rps/api.(*Server).streamEvents
-----------+-------------------------------------------------------
      1.2s   crypto/internal/fips140/edwards25519.(*Point).ScalarBaseMult
             crypto/ed25519.Sign
             github.com/commitreveal/rps/api.(*signer).head
             github.com/commitreveal/rps/api.(*handlers).RevealMove
-----------+-------------------------------------------------------
      30ms   github.com/commitreveal/rps/engine.Resolve (inline)
             github.com/commitreveal/rps/tournament.(*Service).Reveal
             github.com/commitreveal/rps/store.(*Store).runBatch
-----------+-------------------------------------------------------
      40ms   runtime.mallocgc
             github.com/jackc/pgx/v5/pgconn.(*PgConn).ExecParams
             github.com/commitreveal/rps/store.(*Store).runBatch
             github.com/commitreveal/rps/api.(*handlers).RevealMove
-----------+-------------------------------------------------------
      50ms   runtime.scanobject
             runtime.gcDrain
             runtime.gcBgMarkWorker
-----------+-------------------------------------------------------
       2ms   encoding/json.Marshal
             github.com/commitreveal/rps/api.encodeEvent
             github.com/commitreveal/rps/api.(*lobbyFanOut).pollPage
-----------+-------------------------------------------------------
       1ms   github.com/commitreveal/rps/store.(*notifier).wake
             github.com/commitreveal/rps/store.(*Store).listenOnce
`
	s, err := splitTraces(traces)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{
		partHTTP:     10 * time.Millisecond,
		partFanOut:   1223 * time.Millisecond,
		partDecision: 30 * time.Millisecond,
		partDB:       40 * time.Millisecond,
		partRest:     50 * time.Millisecond,
	}
	for _, p := range cpuParts {
		if s.byPart[p] != want[p] {
			t.Errorf("%s: %s, want %s", p, s.byPart[p], want[p])
		}
	}
	if s.total != 1353*time.Millisecond {
		t.Errorf("total %s, want 1.353s", s.total)
	}
	if got := s.perAction(partRest, 1353*time.Microsecond); got != 50*time.Microsecond {
		t.Errorf("the rest of 1353 µs per action: %s, want 50µs", got)
	}
}

func TestSplitTracesRefusesWhatIsNoProfile(t *testing.T) {
	for _, text := range []string{"", "File: rpsd\n", "-----------+----\n   tenms   main.main\n"} {
		if _, err := splitTraces(text); err == nil || !strings.Contains(err.Error(), "pprof -traces") {
			t.Errorf("%q: %v", text, err)
		}
	}
}
