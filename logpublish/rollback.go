package logpublish

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/commitreveal/rps/tournament"
)

// ErrBehindWitness: a witness holds a checkpoint of the log larger than the database's log (a
// restore to an earlier point, or another database).
var ErrBehindWitness = errors.New("the database's log is behind a checkpoint a witness cosigned")

// CheckWitnesses asks every witness, at start, which size of the log it holds, by offering it the
// database's newest checkpoint (a witness at that size cosigns it again, one behind is proven up
// to it). It returns ErrBehindWitness, naming the witnesses and the sizes, when most of them hold
// more than the database's log; a witness that cannot be reached, or a minority that claims more,
// is only logged, so that neither a witness's outage nor a lying witness stops the service.
func (s *Sequencer) CheckWitnesses(ctx context.Context) error {
	c, err := s.st.NewestCheckpoint(ctx)
	if errors.Is(err, tournament.ErrNotFound) {
		return nil
	} else if err != nil {
		return fmt.Errorf("read the newest checkpoint: %w", err)
	}
	// All at once: asked one after the other, each hanging witness added its timeout (5 s, twice
	// after a 409) to every start, a failover's included.
	var wg sync.WaitGroup
	for _, w := range s.witnesses {
		wg.Go(func() {
			if _, err := s.cosign(ctx, w, c); err != nil && !errors.Is(err, errRefused) {
				s.log.Warn("witness unreachable at start: its size is not checked", "witness", w.Name(), "err", err)
			}
		})
	}
	wg.Wait()
	// cosign records the size each witness says it holds.
	sizes, err := s.st.WitnessSizes(ctx)
	if err != nil {
		return err
	}
	// Another replica may have grown the log meanwhile: only the log as it is now counts.
	st, err := s.st.LogState(ctx)
	if err != nil {
		return err
	}
	var ahead []string
	for _, w := range s.witnesses {
		if size := sizes[w.Name()]; size > st.Size {
			ahead = append(ahead, fmt.Sprintf("witness %s holds a cosigned checkpoint of %d entries", w.Name(), size))
		}
	}
	// Witnesses are not trusted: one alone claiming a longer log is only logged, so that it cannot
	// stop the service; when most of them hold more, the log was rolled back.
	if len(ahead) > 0 && 2*len(ahead) <= len(s.witnesses) {
		s.log.Warn("a minority of the witnesses claim a longer log than the database's", "claims", strings.Join(ahead, "; "), "size", st.Size)
	} else if len(ahead) > 0 {
		return fmt.Errorf("refusing to serve: %w: %s, the database's log %d, so serving it would show a log that went "+
			"backwards. Restore the database to the end of its WAL (README, \"Backups and restores\"), or point DATABASE_URL at "+
			"the database this log was served from", ErrBehindWitness, strings.Join(ahead, "; "), st.Size)
	}
	return nil
}
