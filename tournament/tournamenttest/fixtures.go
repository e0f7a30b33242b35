package tournamenttest

import (
	"encoding/json"
	"fmt"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/tournament"
)

// FastService is a service that allows stage timeouts of a few milliseconds, for tests of a
// store and its clock on the real clock.
func FastService() *tournament.Service {
	return tournament.NewService(tournament.Options{Rules: engine.Builtin(), MinTimeoutMs: 1, NewID: NewID, NewSalt: NewSalt})
}

// FastConfig is a two-player game with a bet of 10 and timeouts of ms that stops after one empty
// extension.
func FastConfig(ms int64) tournament.Config {
	c := tournament.DefaultConfig()
	c.BetSize = 10
	c.PlayersCountLimit = 2
	c.EntryTimeoutMs, c.MoveTimeoutMs, c.RevealTimeoutMs = ms, ms, ms
	c.MaxExtensions = 1
	return c
}

// ClockShifts returns the gaps of a log's clock_shifted events, and the types of all its events.
func ClockShifts(events []tournament.LoggedEvent) (gaps []int64, types []tournament.EventType, err error) {
	for _, e := range events {
		types = append(types, e.Type)
		if e.Type == tournament.EventClockShifted {
			var d tournament.ClockShiftedData
			if err := json.Unmarshal(e.Data, &d); err != nil {
				return nil, nil, fmt.Errorf("clock_shifted %d: %w", e.Seq, err)
			}
			gaps = append(gaps, d.GapMs)
		}
	}
	return gaps, types, nil
}
