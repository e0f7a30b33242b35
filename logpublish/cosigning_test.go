package logpublish_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"

	"github.com/commitreveal/rps/internal/apitest"
	"github.com/commitreveal/rps/logpublish"
	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
)

// guard bounds a wait that only a broken sequencer makes long; a passing test waits for channels.
const guard = 20 * time.Second

// fakeWitness is a witness on loopback that answers add-checkpoint with answer, and says which
// sizes it was asked about on asked.
type fakeWitness struct {
	name, vkey string
	signer     note.Signer
	srv        *httptest.Server
	asked      chan int64
}

// cosign answers as an honest witness: the cosignature of the checkpoint's text.
func (f *fakeWitness) cosign(w http.ResponseWriter, text []byte) {
	signed, err := note.Sign(&note.Note{Text: string(text)}, f.signer)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	_, sigs, _ := bytes.Cut(signed, []byte("\n\n"))
	_, _ = w.Write(sigs)
}

func startFake(t *testing.T, name string, answer func(w http.ResponseWriter, r *http.Request, size int64, text []byte)) *fakeWitness {
	t.Helper()
	f := &fakeWitness{name: name, asked: make(chan int64, 100)}
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := torchwood.NewCosignatureSigner(name, key)
	if err != nil {
		t.Fatal(err)
	}
	f.vkey, f.signer = signer.Verifier().String(), signer
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		// The request: "old N", the proof's lines, a blank line, then the signed checkpoint,
		// whose text ends at its own blank line; its second line is the size.
		_, checkpoint, _ := bytes.Cut(body, []byte("\n\n"))
		text, _, _ := bytes.Cut(checkpoint, []byte("\n\n"))
		text = append(text, '\n')
		lines := strings.Split(string(text), "\n")
		size, _ := strconv.ParseInt(lines[min(1, len(lines)-1)], 10, 64)
		f.asked <- size
		if answer != nil {
			answer(w, r, size, text)
			return
		}
		f.cosign(w, text)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// hang never answers: it waits for the client to give up.
func hang(_ http.ResponseWriter, r *http.Request, _ int64, _ []byte) { <-r.Context().Done() }

func (f *fakeWitness) witness(t *testing.T) logpublish.Witness {
	t.Helper()
	w, err := logpublish.NewWitness(f.srv.URL, f.vkey)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// runWith starts the API over a database with events, and a sequencer of its log asking the
// witnesses ws, with no time limit of its own on a witness (a minute), and integrates the events
// once; the sequencer then runs without integrating by itself (an hour's period): the test does.
func runWith(t *testing.T, ws ...*fakeWitness) (*apitest.Env, *logpublish.Sequencer) {
	t.Helper()
	e, _ := setup(t)
	var cfg []logpublish.Witness
	for _, w := range ws {
		cfg = append(cfg, w.witness(t))
	}
	seq, err := logpublish.New(t.Context(), logpublish.Config{
		Store: e.Store, Origin: origin, Witnesses: cfg, Period: time.Hour, WitnessTimeout: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := seq.Integrate(t.Context()); err != nil || n == 0 {
		t.Fatalf("integrate: %d, %v", n, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = seq.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return e, seq
}

// integrateEvents integrates the events written since the log's size was before, as the
// sequencer's next tick would, and returns the log's new size. The sequencer's Run integrates once
// as it starts, and on a loaded machine that pass can race this one: the loser's
// store.ErrLogMoved is tried again.
func integrateEvents(t *testing.T, e *apitest.Env, seq *logpublish.Sequencer, before int64) int64 {
	t.Helper()
	for {
		_, err := seq.Integrate(t.Context())
		if errors.Is(err, store.ErrLogMoved) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		size := newestSize(t, e)
		if size <= before {
			t.Fatalf("integrate: the log stayed at %d", size)
		}
		return size
	}
}

// waitAsked waits until f is asked about size.
func (f *fakeWitness) waitAsked(t *testing.T, size int64) {
	t.Helper()
	timeout := time.After(guard)
	for {
		select {
		case got := <-f.asked:
			if got == size {
				return
			}
		case <-timeout:
			t.Fatalf("witness %s was never asked about size %d", f.name, size)
		}
	}
}

// waitPublished waits until the published checkpoint is of size and returns its cosignatures.
func waitPublished(t *testing.T, e *apitest.Env, size int64) []byte {
	t.Helper()
	for deadline := time.Now().Add(guard); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		c, err := e.Store.PublishedCheckpoint(t.Context())
		if err != nil && !errors.Is(err, tournament.ErrNotFound) {
			t.Fatal(err)
		}
		if c.Size == size {
			return c.Cosignatures
		}
	}
	t.Fatalf("checkpoint %d was never published", size)
	return nil
}

func newestSize(t *testing.T, e *apitest.Env) int64 {
	t.Helper()
	c, err := e.Store.NewestCheckpoint(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return c.Size
}

// TestAHangingWitnessHoldsNothingBack: while one witness hangs on the first checkpoint, two more
// are signed; the newest is not dropped: the healthy witness cosigns it and it is published with
// that cosignature at once, the hanging witness's request still open. (The one-slot channel
// dropped the third size, and the round waited for the hanging witness: the newest checkpoint
// waited for the witness's timeout, then for the orphan timeout and the retry ticker.)
func TestAHangingWitnessHoldsNothingBack(t *testing.T) {
	hanging := startFake(t, "witness.test/hangs", hang)
	healthy := startFake(t, "witness.test/healthy", nil)
	e, seq := runWith(t, hanging, healthy)
	first := newestSize(t, e)
	hanging.waitAsked(t, first)
	newest := first
	for i := range 2 {
		l := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 5})
		e.Register(l.Id.String(), e.NewPlayer("late"+strconv.Itoa(i), 100))
		newest = integrateEvents(t, e, seq, newest)
	}
	healthy.waitAsked(t, newest)
	cosigs := waitPublished(t, e, newest)
	if !bytes.Contains(cosigs, []byte("— "+healthy.name+" ")) || bytes.Contains(cosigs, []byte(hanging.name)) {
		t.Fatalf("checkpoint %d published with the cosignatures\n%s", newest, cosigs)
	}
	select {
	case size := <-hanging.asked:
		t.Fatalf("the hanging witness was asked about %d while its first request was open", size)
	default:
	}
}

// TestASlowWitnessDoesNotHoldUpTheOthers: both witnesses are asked about the same checkpoint;
// one hangs, the other cosigns, and the checkpoint is published with that cosignature while the
// hanging one's request is still open (the round waited for every witness: for the hanging one's
// timeout, a minute here).
func TestASlowWitnessDoesNotHoldUpTheOthers(t *testing.T) {
	hanging := startFake(t, "witness.test/hangs", hang)
	healthy := startFake(t, "witness.test/healthy", nil)
	e, _ := runWith(t, hanging, healthy)
	size := newestSize(t, e)
	hanging.waitAsked(t, size)
	if cosigs := waitPublished(t, e, size); !bytes.Contains(cosigs, []byte("— "+healthy.name+" ")) {
		t.Fatalf("checkpoint %d published with the cosignatures\n%s", size, cosigs)
	}
}

// TestAWitnessCannotRedirectTheLog: a witness answering 307 to another server is not followed
// (that server is never hit) and counts as not cosigning; the checkpoint is published without it.
func TestAWitnessCannotRedirectTheLog(t *testing.T) {
	var hits atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	t.Cleanup(elsewhere.Close)
	redirecting := startFake(t, "witness.test/redirects", func(w http.ResponseWriter, r *http.Request, _ int64, _ []byte) {
		http.Redirect(w, r, elsewhere.URL+"/add-checkpoint", http.StatusTemporaryRedirect)
	})
	e, _ := runWith(t, redirecting)
	size := newestSize(t, e)
	redirecting.waitAsked(t, size)
	if cosigs := waitPublished(t, e, size); len(cosigs) != 0 {
		t.Fatalf("cosignatures %q", cosigs)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the server the witness redirected to was hit %d times", n)
	}
}

// TestAWitnessCannotMakeTheLogReadWithoutEnd: a witness that answers 200 with more than a
// cosignature's worth and then keeps the answer open is read no further than a small bound: the
// client hangs up and the checkpoint is published without it, long before the witness's timeout.
func TestAWitnessCannotMakeTheLogReadWithoutEnd(t *testing.T) {
	hungUp := make(chan struct{}, 1)
	endless := startFake(t, "witness.test/endless", func(w http.ResponseWriter, r *http.Request, _ int64, _ []byte) {
		_, _ = w.Write(bytes.Repeat([]byte("— witness.test/endless AAAA\n"), 1<<10)) // 28 KiB
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		hungUp <- struct{}{}
	})
	e, _ := runWith(t, endless)
	size := newestSize(t, e)
	endless.waitAsked(t, size)
	if cosigs := waitPublished(t, e, size); len(cosigs) != 0 {
		t.Fatalf("cosignatures %q", cosigs)
	}
	select {
	case <-hungUp:
	case <-time.After(guard):
		t.Fatal("the log's client kept the endless answer open")
	}
}

// TestAWitnessIsAskedAgainAfterClaimingALongerLog: a witness that once answered 409 with a size
// past the log's (a lie, a bug, another log of the same origin) is asked again with the next
// checkpoint, and cosigns it once it answers right. (The claimed size was stored and every later
// round refused the witness without asking it: one bad answer lost its cosignatures for good,
// and made every start refuse the database when it was the only witness.)
func TestAWitnessIsAskedAgainAfterClaimingALongerLog(t *testing.T) {
	var lied atomic.Bool
	var liar *fakeWitness
	liar = startFake(t, "witness.test/liar-once", func(w http.ResponseWriter, _ *http.Request, _ int64, text []byte) {
		if lied.CompareAndSwap(false, true) {
			w.Header().Set("Content-Type", "text/x.tlog.size")
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte("1000000\n"))
			return
		}
		liar.cosign(w, text)
	})
	e, seq := runWith(t, liar)
	liar.waitAsked(t, newestSize(t, e))
	l := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 5})
	before := newestSize(t, e)
	e.Register(l.Id.String(), e.NewPlayer("after-the-lie", 100))
	newest := integrateEvents(t, e, seq, before)
	liar.waitAsked(t, newest)
	if cosigs := waitPublished(t, e, newest); !bytes.Contains(cosigs, []byte("— "+liar.name+" ")) {
		t.Fatalf("checkpoint %d published with the cosignatures\n%s", newest, cosigs)
	}
}
