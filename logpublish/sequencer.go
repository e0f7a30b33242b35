// Package logpublish is the transparency log's worker beside the API, as clock is the deadlines':
// it runs the log (package translog, which stays pure) on a store. It integrates the committed
// events into the Merkle tree in batches, about once a second, signs each new tree's checkpoint
// with the server's current key, and publishes it as the configured witnesses cosign it (C2SP
// tlog-witness; see cosigning.go). Every replica runs one; the store's compare-and-swap on the
// tree size lets one batch win when two race, so the log is safe across replicas and restarts,
// and a crash mid-integration leaves nothing half-written (a batch is one transaction). Nothing
// here is on the path of play: a slow database or a witness that refuses only delays the log.
package logpublish

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
	"github.com/commitreveal/rps/translog"
)

// Defaults.
const (
	DefaultPeriod = time.Second
	// maxLobbies and maxEvents bound one batch's read (a backlog is integrated in several).
	maxLobbies = 5_000
	maxEvents  = 50_000
	// keyRefresh is how often the current signing key is read again, so that `rpsd key rotate`
	// run elsewhere takes effect without a restart.
	keyRefresh = 5 * time.Second
	// orphanAfter is how old an unpublished checkpoint must be before a replica that did not sign
	// it asks the witnesses itself (its signer stopped before publishing it).
	orphanAfter = 10 * time.Second
	// retryWitnessesEvery is how often witnesses missing from the newest checkpoint are asked
	// again when the log is idle.
	retryWitnessesEvery = 30 * time.Second
)

// Config configures a Sequencer.
type Config struct {
	Store *store.Store
	// Origin names the log (RPSD_LOG_ORIGIN); empty: the stored one, or a default made from the
	// signing key's id when the log is created. A log keeps the origin it was created with.
	Origin string
	// Witnesses cosign each checkpoint before it is published; none: published at once.
	Witnesses []Witness
	// Period is the time between two integrations (DefaultPeriod if zero).
	Period time.Duration
	// WitnessTimeout bounds one request to a witness, its answer included (5 s if zero).
	WitnessTimeout time.Duration
	Logger         *slog.Logger
	// Registerer receives the log's metrics (none if nil).
	Registerer prometheus.Registerer
}

// Sequencer integrates and publishes the log.
type Sequencer struct {
	st        *store.Store
	origin    string
	witnesses []Witness
	period    time.Duration
	log       *slog.Logger
	metrics   metrics
	client    witnessClient

	keyMu   sync.Mutex
	key     store.SigningKey
	signer  note.Signer
	keyRead time.Time
	// cosigning hands each checkpoint this replica signs to the witnesses' workers and publishes
	// it (see cosigning.go).
	cosigning *cosigning
}

// New checks the configuration and creates the log when it does not exist yet. A configured
// origin that is not the log's is an error: witnesses and clients know the log by its origin.
func New(ctx context.Context, cfg Config) (*Sequencer, error) {
	if cfg.Store == nil {
		return nil, errors.New("sequencer: a store is required")
	}
	s := &Sequencer{
		st: cfg.Store, witnesses: cfg.Witnesses, period: cfg.Period, log: cfg.Logger,
		metrics: newMetrics(cfg.Registerer), client: newWitnessClient(cfg.WitnessTimeout),
		cosigning: newCosigning(cfg.Witnesses),
	}
	if s.period <= 0 {
		s.period = DefaultPeriod
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if cfg.Origin != "" {
		if err := translog.CheckOrigin(cfg.Origin); err != nil {
			return nil, fmt.Errorf("RPSD_LOG_ORIGIN: %w", err)
		}
	}
	st, err := s.st.LogState(ctx)
	if errors.Is(err, tournament.ErrNotFound) {
		st, err = s.create(ctx, cfg.Origin)
	}
	if err != nil {
		return nil, err
	}
	if cfg.Origin != "" && cfg.Origin != st.Origin {
		return nil, fmt.Errorf("the log's origin is %q, fixed when it was created (witnesses and clients know the log by it), "+
			"but RPSD_LOG_ORIGIN is %q: unset it or set it to the log's", st.Origin, cfg.Origin)
	}
	s.origin = st.Origin
	return s, nil
}

// DefaultOrigin is the origin of a log created without RPSD_LOG_ORIGIN: unique to the deployment
// (the id of the key that signs its first checkpoint) and plainly a placeholder.
func DefaultOrigin(keyID string) string { return "rps.invalid/" + keyID }

func (s *Sequencer) create(ctx context.Context, origin string) (store.LogState, error) {
	key, err := s.st.CurrentSigningKey(ctx)
	if err != nil {
		return store.LogState{}, err
	}
	if origin == "" {
		origin = DefaultOrigin(key.ID)
	}
	signer, err := translog.NewSigner(origin, key.Private)
	if err != nil {
		return store.LogState{}, err
	}
	empty, err := tlog.TreeHash(0, nil)
	if err != nil {
		return store.LogState{}, err
	}
	checkpoint, err := translog.SignCheckpoint(origin, tlog.Tree{N: 0, Hash: empty}, signer)
	if err != nil {
		return store.LogState{}, err
	}
	// The empty tree needs no witness: it is published at once, so /log/checkpoint always answers.
	return s.st.CreateLog(ctx, origin, empty, checkpoint, true)
}

// Origin is the log's origin.
func (s *Sequencer) Origin() string { return s.origin }

// Run integrates every period and runs the witnesses' workers until ctx ends.
func (s *Sequencer) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	if len(s.witnesses) > 0 {
		wg.Go(func() { s.runWitnesses(ctx) })
	}
	defer wg.Wait()
	tick := time.NewTicker(s.period)
	defer tick.Stop()
	for {
		if _, err := s.Integrate(ctx); err != nil && ctx.Err() == nil {
			// The next tick tries again; a lost race is not worth a warning.
			if errors.Is(err, store.ErrLogMoved) {
				s.log.Debug("log integration lost a race", "err", err)
			} else {
				s.log.Warn("log integration failed", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// signerNow returns the note signer of the current signing key.
func (s *Sequencer) signerNow(ctx context.Context) (note.Signer, error) {
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	if s.signer != nil && time.Since(s.keyRead) < keyRefresh {
		return s.signer, nil
	}
	key, err := s.st.CurrentSigningKey(ctx)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	if key.ID != s.key.ID {
		if s.signer, err = translog.NewSigner(s.origin, key.Private); err != nil {
			return nil, err
		}
		s.key = key
	}
	s.keyRead = time.Now()
	return s.signer, nil
}

// Integrate appends the committed events not yet in the log as one batch, signs the new tree's
// checkpoint and returns the number of leaves appended. It fails with store.ErrLogMoved when
// another replica appended first.
func (s *Sequencer) Integrate(ctx context.Context) (int, error) {
	started := time.Now()
	p, err := s.st.PendingLog(ctx, maxLobbies, maxEvents)
	if err != nil {
		return 0, err
	}
	batch := translog.Sequence(p.State.Size, p.Logged, p.Pending)
	a := store.LogAppend{OldSize: p.State.Size, Batch: batch, Floor: p.State.Floor}
	if p.Complete {
		a.Floor = p.Horizon
	}
	if len(batch.Leaves) == 0 {
		if a.Floor == p.State.Floor {
			return 0, nil
		}
		_, err := s.st.AppendLog(ctx, a)
		return 0, err
	}
	records := make([]tlog.Hash, len(batch.Leaves))
	for i, l := range batch.Leaves {
		records[i] = l.RecordHash()
	}
	if a.Growth, err = translog.Append(p.State.Size, p.Edge, records); err != nil {
		return 0, err
	}
	signer, err := s.signerNow(ctx)
	if err != nil {
		return 0, err
	}
	if a.Checkpoint, err = translog.SignCheckpoint(s.origin, a.Growth.Tree, signer); err != nil {
		return 0, err
	}
	a.Published = len(s.witnesses) == 0
	at, err := s.st.AppendLog(ctx, a)
	if err != nil {
		return 0, err
	}
	for _, l := range batch.Leaves {
		s.metrics.lag.Observe(float64(at-l.At) / 1000)
	}
	s.metrics.size.Set(float64(a.Growth.Tree.N))
	s.metrics.integration.Observe(time.Since(started).Seconds())
	if !a.Published {
		// The witnesses' workers take it from here (see cosigning.go).
		s.offer(ctx, store.LogCheckpoint{Size: a.Growth.Tree.N, Root: a.Growth.Tree.Hash, Note: a.Checkpoint, CreatedAt: at}, nil)
	}
	return len(batch.Leaves), nil
}
