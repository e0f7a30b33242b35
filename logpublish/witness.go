package logpublish

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/translog"
)

// Witness is a C2SP tlog-witness the log asks to cosign its checkpoints.
type Witness struct {
	// URL is the witness's submission prefix; add-checkpoint is posted below it.
	URL string
	// VerifierKey is the witness's note verifier key (a tlog-cosignature key, as litewitness
	// prints); its name names the witness.
	VerifierKey string
	verifier    note.Verifier
}

// Name is the witness's key name.
func (w Witness) Name() string { return w.verifier.Name() }

// ParseWitnesses reads RPSD_LOG_WITNESSES: entries separated by commas or new lines, each the
// witness's URL and its verifier key separated by a space, such as
// "https://witness.example/ witness.example/w1+5a6b7c8d+BF...". A name may appear once.
func ParseWitnesses(text string) ([]Witness, error) {
	var out []Witness
	seen := map[string]bool{}
	for _, entry := range strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == '\n' }) {
		fields := strings.Fields(entry)
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 {
			return nil, fmt.Errorf("witness %q: want its URL and its verifier key separated by a space", strings.TrimSpace(entry))
		}
		w, err := NewWitness(fields[0], fields[1])
		if err != nil {
			return nil, err
		}
		if seen[w.Name()] {
			return nil, fmt.Errorf("witness %s is listed twice", w.Name())
		}
		seen[w.Name()] = true
		out = append(out, w)
	}
	return out, nil
}

// NewWitness checks a witness's URL and verifier key.
func NewWitness(rawURL, vkey string) (Witness, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Witness{}, fmt.Errorf("witness URL %q: want an http or https URL", rawURL)
	}
	var v note.Verifier
	if cv, err := torchwood.NewCosignatureVerifier(vkey); err == nil {
		v = cv
	} else if v, err = note.NewVerifier(vkey); err != nil {
		return Witness{}, fmt.Errorf("witness %s: verifier key %q: %w", rawURL, vkey, err)
	}
	return Witness{URL: strings.TrimSuffix(rawURL, "/") + "/", VerifierKey: vkey, verifier: v}, nil
}

type witnessClient struct{ http *http.Client }

func newWitnessClient(timeout time.Duration) witnessClient {
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	return witnessClient{http: &http.Client{Timeout: timeout}}
}

// errRefused is a witness's refusal (not a failure to reach it).
var errRefused = errors.New("witness refused the checkpoint")

// runWitnesses has the witnesses cosign each checkpoint this replica signs, and those another
// replica signed but did not publish (it stopped), and asks the witnesses missing from the
// newest checkpoint again from time to time.
func (s *Sequencer) runWitnesses(ctx context.Context) {
	retry := time.NewTicker(max(s.period, time.Second) * 5)
	defer retry.Stop()
	var lastRetry time.Time
	for {
		var mine int64 = -1
		select {
		case <-ctx.Done():
			return
		case mine = <-s.signed:
		case <-retry.C:
		}
		c, err := s.st.NewestCheckpoint(ctx)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("witness round: read the newest checkpoint", "err", err)
			}
			continue
		}
		var ask []Witness
		switch {
		case c.PublishedAt == 0 && (c.Size == mine || time.Since(time.UnixMilli(c.CreatedAt)) > orphanAfter):
			ask = s.witnesses
		case c.PublishedAt != 0 && time.Since(lastRetry) > retryWitnessesEvery:
			for _, w := range s.witnesses {
				if !bytes.Contains(c.Cosignatures, []byte("— "+w.Name()+" ")) {
					ask = append(ask, w)
				}
			}
			lastRetry = time.Now()
		}
		if len(ask) > 0 {
			s.witnessRound(ctx, c, ask)
		}
	}
}

// witnessRound asks the witnesses to cosign checkpoint c, all at once, and publishes it with
// the cosignatures gathered (and those it had), whatever the witnesses answered.
func (s *Sequencer) witnessRound(ctx context.Context, c store.LogCheckpoint, ask []Witness) {
	started := time.Now()
	known, err := s.st.WitnessSizes(ctx)
	if err != nil {
		s.log.Warn("witness round: read the witnesses' sizes", "err", err)
		return
	}
	cosigs := make([][]byte, len(ask))
	var wg sync.WaitGroup
	for i, w := range ask {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lines, err := s.cosign(ctx, w, c, known[w.Name()])
			if err != nil {
				reason := "unreachable"
				if errors.Is(err, errRefused) {
					reason = "refused"
				}
				s.metrics.refusals.WithLabelValues(w.Name(), reason).Inc()
				s.log.Warn("witness did not cosign the checkpoint", "witness", w.Name(), "size", c.Size, "err", err)
				return
			}
			cosigs[i] = lines
		}()
	}
	wg.Wait()
	all := append([]byte(nil), c.Cosignatures...)
	for _, lines := range cosigs {
		all = append(all, lines...)
	}
	if err := s.st.PublishCheckpoint(ctx, c.Size, all); err != nil {
		s.log.Warn("publish checkpoint", "size", c.Size, "err", err)
		return
	}
	s.metrics.round.Observe(time.Since(started).Seconds())
}

// cosign submits checkpoint c to witness w, which last cosigned size old as far as the log
// knows; a witness that answers 409 with another size is asked once more from that size.
func (s *Sequencer) cosign(ctx context.Context, w Witness, c store.LogCheckpoint, old int64) ([]byte, error) {
	for attempt := 0; ; attempt++ {
		if old > c.Size {
			return nil, fmt.Errorf("%w: it cosigned size %d, past this checkpoint's %d: the log was rolled back or forked", errRefused, old, c.Size)
		}
		var proof tlog.TreeProof
		if old > 0 && old < c.Size {
			var err error
			if proof, err = s.prove(ctx, c, old); err != nil {
				return nil, fmt.Errorf("consistency proof from %d: %w", old, err)
			}
		}
		status, body, err := s.client.addCheckpoint(ctx, w, translog.AddCheckpointRequest(old, proof, c.Note))
		if err != nil {
			return nil, err
		}
		switch status {
		case http.StatusOK:
			lines, err := translog.Cosignatures(c.Note, body, w.verifier)
			if err != nil {
				return nil, err
			}
			if err := s.st.SetWitnessSize(ctx, w.Name(), c.Size); err != nil {
				return nil, err
			}
			return lines, nil
		case http.StatusConflict:
			size, err := translog.ParseWitnessSize(body)
			if err != nil {
				return nil, fmt.Errorf("%w: 409: %w", errRefused, err)
			}
			if err := s.st.SetWitnessSize(ctx, w.Name(), size); err != nil {
				return nil, err
			}
			if attempt > 0 || size == old {
				return nil, fmt.Errorf("%w: 409: it has size %d", errRefused, size)
			}
			old = size
		case http.StatusUnprocessableEntity:
			return nil, fmt.Errorf("%w: 422 (the consistency proof from %d does not hold for it): %s", errRefused, old, firstLine(body))
		default:
			return nil, fmt.Errorf("%w: status %d: %s", errRefused, status, firstLine(body))
		}
	}
}

// prove is the consistency proof of checkpoint c from size old, from the stored tiles
// (authenticated against c's root on the way).
func (s *Sequencer) prove(ctx context.Context, c store.LogCheckpoint, old int64) (tlog.TreeProof, error) {
	tiles := translog.TileReader{Read: func(keys []translog.TileKey) (map[translog.TileKey][]byte, error) {
		return s.st.LogTiles(ctx, keys)
	}}
	return tlog.ProveTree(c.Size, old, tlog.TileHashReader(tlog.Tree{N: c.Size, Hash: c.Root}, tiles))
}

func (c witnessClient) addCheckpoint(ctx context.Context, w Witness, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL+"add-checkpoint", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("add-checkpoint: %w", err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return 0, nil, fmt.Errorf("add-checkpoint: %w", err)
	}
	return resp.StatusCode, answer, nil
}

func firstLine(b []byte) string {
	line, _, _ := strings.Cut(string(b), "\n")
	return line
}
