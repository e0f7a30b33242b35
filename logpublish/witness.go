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

// The bounds of what a witness, a third party, can make rpsd do.
const (
	// defaultWitnessTimeout bounds one request to a witness, its answer's body included.
	defaultWitnessTimeout = 5 * time.Second
	// maxWitnessAnswer bounds the body of a witness's answer read: a cosignature answer is a few
	// lines of about 100 bytes, a 409's is one number. A longer answer is a failure of the
	// witness, not read to its end.
	maxWitnessAnswer = 4 << 10
	// maxWitnessHeader bounds its answer's header.
	maxWitnessHeader = 16 << 10
)

// errRedirected is a witness answering with a redirect, which is never followed: the log posts
// its checkpoints to the witnesses the operator named, and nowhere a witness points to.
var errRedirected = errors.New("witness answered with a redirect, which is not followed")

type witnessClient struct{ http *http.Client }

func newWitnessClient(timeout time.Duration) witnessClient {
	if timeout <= 0 {
		timeout = defaultWitnessTimeout
	}
	return witnessClient{http: &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true, IdleConnTimeout: 90 * time.Second,
			MaxResponseHeaderBytes: maxWitnessHeader,
		},
		// The redirect itself comes back as the answer, which addCheckpoint refuses.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// errRefused is a witness's refusal (not a failure to reach it).
var errRefused = errors.New("witness refused the checkpoint")

// cosign submits checkpoint c to witness w, with the consistency proof from the size it last
// cosigned as far as the log knows (c's own size when that is past c); a witness that answers 409
// with another size is asked once more from that size.
func (s *Sequencer) cosign(ctx context.Context, w Witness, c store.LogCheckpoint) ([]byte, error) {
	known, err := s.st.WitnessSizes(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the witnesses' sizes: %w", err)
	}
	old := known[w.Name()]
	if old > c.Size {
		// A size past the log's is what the witness said once (a rollback, or a lie or a bug of
		// its own): ask it again rather than refuse it for good, offering c as it is; a witness
		// still past it says so again (409), and is refused below.
		old = c.Size
	}
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
	return tlog.ProveTree(c.Size, old, s.st.LogHashes(ctx, tlog.Tree{N: c.Size, Hash: c.Root}))
}

// addCheckpoint posts body to witness w's add-checkpoint and returns its answer's status and body.
// It follows no redirect and reads at most maxWitnessAnswer bytes, all within the client's
// timeout; a redirect or a longer answer is an error.
func (c witnessClient) addCheckpoint(ctx context.Context, w Witness, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL+"add-checkpoint", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("add-checkpoint: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return 0, nil, fmt.Errorf("add-checkpoint: %w (status %d, to %q)", errRedirected, resp.StatusCode, resp.Header.Get("Location"))
	}
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxWitnessAnswer+1))
	if err != nil {
		return 0, nil, fmt.Errorf("add-checkpoint: %w", err)
	}
	if len(answer) > maxWitnessAnswer {
		return 0, nil, fmt.Errorf("add-checkpoint: status %d with an answer longer than %d bytes, not read further", resp.StatusCode, maxWitnessAnswer)
	}
	return resp.StatusCode, answer, nil
}

func firstLine(b []byte) string {
	line, _, _ := strings.Cut(string(b), "\n")
	return line
}
