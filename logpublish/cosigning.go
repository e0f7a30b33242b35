package logpublish

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/commitreveal/rps/store"
)

// How checkpoints reach the witnesses and get published.
//
// Each witness has a worker of its own that asks it about one checkpoint at a time. A checkpoint
// signed while the worker is busy waits in the worker's mailbox, where a newer one replaces it
// (latest wins): a newer size is never dropped, a slow witness is asked about the newest
// checkpoint next rather than about a backlog, and it never holds up the other witnesses.
//
// A checkpoint is published once every witness asked about it has answered (cosigned, refused,
// failed or timed out), with the cosignatures it got; a cosignature that comes later is added to
// it. A witness still busy with an older checkpoint is not waited for once another witness has
// cosigned this one, and no witness is waited for longer than publishWithin after the checkpoint
// was signed. So healthy witnesses' cosignatures are published together, a witness that hangs
// delays no checkpoint after the one it hangs on once another witness cosigned it, and publication
// waits publishWithin at most.

// publishWithin bounds the wait for the witnesses still asking about a checkpoint before it is
// published without them (their cosignatures are added when they come): several times a
// witness's usual answer (a round took p99 115-190 ms under the benchmark's load).
const publishWithin = 500 * time.Millisecond

// cosigning is the witnesses' mailboxes and the newest checkpoint's publication.
type cosigning struct {
	mu      sync.Mutex
	workers []*witnessWorker
	newest  *publication
}

// witnessWorker is one witness's mailbox and what its worker is doing.
type witnessWorker struct {
	witness Witness
	// wake is signalled (never blocking: it holds one signal) when next is set.
	wake chan struct{}
	// next is the newest checkpoint to ask the witness about (nil: none).
	next *store.LogCheckpoint
	// asking is the size of the checkpoint the witness is being asked about (-1: none).
	asking int64
}

// publication is the newest checkpoint offered to the witnesses and what they answered.
type publication struct {
	// c is the checkpoint as offered, with the cosignatures it had then.
	c       store.LogCheckpoint
	offered time.Time
	// added are the cosignature lines gathered since, by witness name.
	added     map[string][]byte
	published bool
}

// publishing is a checkpoint to publish (or to publish again with more cosignatures).
type publishing struct {
	size         int64
	cosignatures []byte
	// first: the checkpoint was not published yet; waited is how long after its offer.
	first  bool
	waited time.Duration
}

func newCosigning(witnesses []Witness) *cosigning {
	c := &cosigning{}
	for _, w := range witnesses {
		c.workers = append(c.workers, &witnessWorker{witness: w, wake: make(chan struct{}, 1), asking: -1})
	}
	return c
}

// offer puts checkpoint c in the mailboxes of the witnesses ask (nil: all), unless a newer one is
// there already, and returns what to publish, if anything (c when no witness is left to ask about
// it first), and whether c waits for its publication (then publish it with due after
// publishWithin). A checkpoint older than the newest offered is ignored, as is the newest offered
// again before it was published (its witnesses are on it).
func (cs *cosigning) offer(c store.LogCheckpoint, ask []Witness) (_ *publishing, waits bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	switch p := cs.newest; {
	case p == nil || c.Size > p.c.Size:
		cs.newest = &publication{c: c, offered: time.Now(), added: map[string][]byte{}, published: c.PublishedAt != 0}
	case c.Size < p.c.Size || !p.published:
		return nil, false
	default:
		p.c = c // the stored cosignatures, which another replica may have added to
	}
	for _, wk := range cs.workers {
		if ask != nil && !asked(ask, wk.witness) {
			continue
		}
		if wk.next == nil || wk.next.Size <= c.Size {
			wk.next = &c
		}
		select {
		case wk.wake <- struct{}{}:
		default:
		}
	}
	out := cs.decide(false)
	return out, !cs.newest.published
}

// due returns checkpoint size to publish with the cosignatures gathered so far, if it is still
// the newest and not published yet (publishWithin has passed since its offer).
func (cs *cosigning) due(size int64) *publishing {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.newest == nil || cs.newest.c.Size != size || cs.newest.published {
		return nil
	}
	return cs.gathered()
}

func asked(ask []Witness, w Witness) bool {
	for _, a := range ask {
		if a.Name() == w.Name() {
			return true
		}
	}
	return false
}

// take empties wk's mailbox: the checkpoint to ask its witness about, if any.
func (cs *cosigning) take(wk *witnessWorker) (store.LogCheckpoint, bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if wk.next == nil {
		return store.LogCheckpoint{}, false
	}
	c := *wk.next
	wk.next, wk.asking = nil, c.Size
	return c, true
}

// answered records wk's witness's answer about checkpoint size (lines: its cosignature; nil: it
// did not cosign) and returns what to publish, if anything. A cosignature of a checkpoint older
// than the newest is not kept: clients read the newest, and the witness's size is recorded, so
// it is asked about the newest next with the right proof.
func (cs *cosigning) answered(wk *witnessWorker, size int64, lines []byte) *publishing {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	wk.asking = -1
	p := cs.newest
	if p == nil || p.c.Size != size {
		return nil
	}
	cosigned := lines != nil && !hasCosignature(p.c.Cosignatures, wk.witness)
	if cosigned {
		p.added[wk.witness.Name()] = lines
	}
	return cs.decide(cosigned)
}

// decide returns the newest checkpoint to publish: unpublished, once no witness is left to wait
// for; published, when a cosignature was just added. Called with mu held.
func (cs *cosigning) decide(cosigned bool) *publishing {
	p := cs.newest
	if p == nil || (p.published && !cosigned) {
		return nil
	}
	if !p.published {
		for _, wk := range cs.workers {
			asking := wk.asking == p.c.Size
			next := wk.next != nil && wk.next.Size == p.c.Size
			busyWithOlder := wk.asking >= 0 && !asking
			if asking || (next && !(busyWithOlder && len(p.added) > 0)) {
				return nil
			}
		}
	}
	return cs.gathered()
}

// gathered is the newest checkpoint with every cosignature gathered, marked published. Called
// with mu held.
func (cs *cosigning) gathered() *publishing {
	p := cs.newest
	all := append([]byte(nil), p.c.Cosignatures...)
	for _, wk := range cs.workers { // in the configured order, so every replica lists them alike
		if !hasCosignature(p.c.Cosignatures, wk.witness) {
			all = append(all, p.added[wk.witness.Name()]...)
		}
	}
	out := &publishing{size: p.c.Size, cosignatures: all, first: !p.published, waited: time.Since(p.offered)}
	p.published = true
	return out
}

// hasCosignature tells whether cosignature lines hold one of witness w.
func hasCosignature(lines []byte, w Witness) bool {
	return bytes.Contains(lines, []byte("— "+w.Name()+" "))
}

// runWitnesses runs a worker per witness and, from time to time, offers them the checkpoints no
// replica is asking about: one another replica signed but did not publish (it stopped), and the
// newest published one, to the witnesses missing from it.
func (s *Sequencer) runWitnesses(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, wk := range s.cosigning.workers {
		wg.Go(func() { s.askWitness(ctx, wk) })
	}
	retry := time.NewTicker(max(s.period, time.Second) * 5)
	defer retry.Stop()
	var lastRetry time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-retry.C:
		}
		c, err := s.st.NewestCheckpoint(ctx)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("witnesses: read the newest checkpoint", "err", err)
			}
			continue
		}
		switch {
		case c.PublishedAt == 0 && time.Since(time.UnixMilli(c.CreatedAt)) > orphanAfter:
			s.offer(ctx, c, nil)
		case c.PublishedAt != 0 && time.Since(lastRetry) > retryWitnessesEvery:
			var missing []Witness
			for _, w := range s.witnesses {
				if !hasCosignature(c.Cosignatures, w) {
					missing = append(missing, w)
				}
			}
			if len(missing) > 0 {
				s.offer(ctx, c, missing)
			}
			lastRetry = time.Now()
		}
	}
}

// askWitness is wk's worker: it asks its witness about the checkpoint in its mailbox, one
// request at a time, until ctx ends. A witness is asked about a checkpoint once (twice after a
// 409 naming another size), however it answers: a failed one waits for the next checkpoint.
func (s *Sequencer) askWitness(ctx context.Context, wk *witnessWorker) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-wk.wake:
		}
		for ctx.Err() == nil {
			c, ok := s.cosigning.take(wk)
			if !ok {
				break
			}
			lines, err := s.cosign(ctx, wk.witness, c)
			if err != nil && ctx.Err() == nil {
				reason := "unreachable"
				switch {
				case errors.Is(err, errRefused):
					reason = "refused"
				case errors.Is(err, errRedirected):
					reason = "redirected"
				}
				s.metrics.refusals.WithLabelValues(wk.witness.Name(), reason).Inc()
				s.log.Warn("witness did not cosign the checkpoint", "witness", wk.witness.Name(), "size", c.Size, "err", err)
			}
			s.publish(ctx, s.cosigning.answered(wk, c.Size, lines))
		}
	}
}

// offer hands checkpoint c to the workers of the witnesses ask (nil: all), and publishes it when
// no witness is left to ask about it first, or else publishWithin later at the latest.
func (s *Sequencer) offer(ctx context.Context, c store.LogCheckpoint, ask []Witness) {
	p, waits := s.cosigning.offer(c, ask)
	s.publish(ctx, p)
	if waits {
		time.AfterFunc(publishWithin, func() { s.publish(ctx, s.cosigning.due(c.Size)) })
	}
}

// publish stores what offer or answered decided to publish (nothing if p is nil). Two
// publications of one checkpoint may land in either order: the store keeps the longer list of
// cosignatures, which is the later one.
func (s *Sequencer) publish(ctx context.Context, p *publishing) {
	if p == nil {
		return
	}
	if err := s.st.PublishCheckpoint(ctx, p.size, p.cosignatures); err != nil {
		if ctx.Err() == nil {
			s.log.Warn("publish checkpoint", "size", p.size, "err", err)
		}
		return
	}
	if p.first {
		s.metrics.round.Observe(p.waited.Seconds())
	}
}
