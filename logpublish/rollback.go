package logpublish

import (
	"context"
	"errors"
	"fmt"

	"github.com/commitreveal/rps/tournament"
)

// ErrBehindWitness: a witness holds a checkpoint of the log larger than the database's log (a
// restore to an earlier point, or another database).
var ErrBehindWitness = errors.New("the database's log is behind a checkpoint a witness cosigned")

// CheckWitnesses asks every witness, at start, which size of the log it holds, by offering it the
// database's newest checkpoint (a witness at that size cosigns it again, one behind is proven up
// to it). It returns ErrBehindWitness, naming the witness and both sizes, when one holds more;
// a witness that cannot be reached is only logged, so that a witness's outage never stops the
// service.
func (s *Sequencer) CheckWitnesses(ctx context.Context) error {
	c, err := s.st.NewestCheckpoint(ctx)
	if errors.Is(err, tournament.ErrNotFound) {
		return nil
	} else if err != nil {
		return fmt.Errorf("read the newest checkpoint: %w", err)
	}
	for _, w := range s.witnesses {
		if _, err := s.cosign(ctx, w, c, c.Size); err != nil && !errors.Is(err, errRefused) {
			s.log.Warn("witness unreachable at start: its size is not checked", "witness", w.Name(), "err", err)
		}
	}
	// cosign records the size each witness says it holds.
	sizes, err := s.st.WitnessSizes(ctx)
	if err != nil {
		return err
	}
	for _, w := range s.witnesses {
		if size := sizes[w.Name()]; size > c.Size {
			// Another replica may have grown the log meanwhile: only the log as it is now counts.
			st, err := s.st.LogState(ctx)
			if err != nil {
				return err
			}
			if size > st.Size {
				return fmt.Errorf("refusing to serve: %w: witness %s holds a cosigned checkpoint of %d entries, the database's log %d, so "+
					"serving it would show a log that went back %d entries. Restore the database to the end of its WAL (README, "+
					"\"Backups and restores\"), or point DATABASE_URL at the database this log was served from", ErrBehindWitness,
					w.Name(), size, st.Size, size-st.Size)
			}
		}
	}
	return nil
}
