package tournament

import (
	"encoding/json"
	"fmt"

	"github.com/commitreveal/rps/engine"
)

// Config is a game's configuration: Gear's five fields plus our extensions.
type Config struct {
	BetSize           int64             `json:"betSize"`
	PlayersCountLimit int               `json:"playersCountLimit"`
	EntryTimeoutMs    int64             `json:"entryTimeoutMs"`
	MoveTimeoutMs     int64             `json:"moveTimeoutMs"`
	RevealTimeoutMs   int64             `json:"revealTimeoutMs"`
	Ruleset           string            `json:"ruleset"`
	Resolution        engine.Resolution `json:"resolution"`
	// StartWhenFull starts round 1 as soon as the game is full instead of waiting out the entry
	// window.
	StartWhenFull bool `json:"startWhenFull"`
	// MaxExtensions > 0 stops a game whose moves or reveal stage expired empty that many times in a
	// row (0 = unlimited, as in Gear, where players who never act hold a lobby forever; the
	// default is DefaultMaxExtensions).
	MaxExtensions int `json:"maxExtensions"`
	// MaxRounds > 0 stops a game when that many rounds ended without a winner (0 = unlimited, an
	// explicit choice: a few colluding accounts can then make a classic game replay forever; the
	// default is DefaultMaxRounds).
	MaxRounds int `json:"maxRounds"`
}

// Limits of a config.
const (
	MinPlayers = 2
	MaxPlayers = 100_000
	// MaxTimeoutMs is seven days.
	MaxTimeoutMs = 7 * 24 * 60 * 60 * 1000
	// DefaultMinTimeoutMs is Gear's minimum timeout; a server may lower it for tests.
	DefaultMinTimeoutMs = 5000
	// DefaultTimeoutMs is the timeout of a stage whose timeout a config omits.
	DefaultTimeoutMs = 60_000
	// DefaultMaxExtensions is the maxExtensions of a config that omits it: a game whose players
	// all stop acting ends (split) after this many empty windows instead of never.
	DefaultMaxExtensions = 3
	// DefaultMaxRounds is the maxRounds of a config that omits it. Under classic resolution
	// three accounts playing Rock, Paper and Scissors make every round replay, whatever the
	// others play; this bound ends (and splits) such a game. It is chosen so that a fair game
	// almost never reaches it: with up to 6 players picking moves at random, under every shipped
	// ruleset and either resolution, a game needs more than 100 rounds with a probability below
	// 1e-9 (TestDefaultMaxRoundsSpareFairGames computes it exactly). Larger classic games rarely
	// end by themselves (with 10 players under rpsls, 1 in 20 is still open after 100 rounds):
	// weighted resolution is for them.
	DefaultMaxRounds = 100
	// maxSafeInteger is 2^53-1, the largest integer every JSON client reads exactly.
	maxSafeInteger = 1<<53 - 1
)

// DefaultConfig is the config whose fields an omitted field takes.
func DefaultConfig() Config {
	return Config{
		BetSize:           0,
		PlayersCountLimit: MinPlayers,
		EntryTimeoutMs:    DefaultTimeoutMs,
		MoveTimeoutMs:     DefaultTimeoutMs,
		RevealTimeoutMs:   DefaultTimeoutMs,
		Ruleset:           engine.DefaultRulesetID,
		Resolution:        engine.Classic,
		StartWhenFull:     true,
		MaxExtensions:     DefaultMaxExtensions,
		MaxRounds:         DefaultMaxRounds,
	}
}

// ConfigOfRequest is the config a request's config object asks for: DefaultConfig's fields, each
// replaced by the request's member of the same name where it has one that is not null. The API
// reads its typed body by this rule (a test holds the two together); rpsverify checks with it
// that an admin's signed request is the config its event shows.
func ConfigOfRequest(request []byte) (Config, error) {
	c := DefaultConfig()
	if err := json.Unmarshal(request, &c); err != nil {
		return Config{}, fmt.Errorf("config of request: %w", err)
	}
	return c, nil
}

// timeout is the length of a stage's window.
func (c Config) timeout(s Stage) int64 {
	switch s {
	case StageRegistration:
		return c.EntryTimeoutMs
	case StageMoves:
		return c.MoveTimeoutMs
	case StageReveal:
		return c.RevealTimeoutMs
	}
	return 0
}

// validateConfig checks a config against the limits, the server's minimum timeout and the known
// rulesets, and returns the ruleset it names.
func validateConfig(c Config, rules *engine.Registry, minTimeoutMs int64) (*engine.Ruleset, error) {
	if c.PlayersCountLimit < MinPlayers || c.PlayersCountLimit > MaxPlayers {
		return nil, invalid("playersCountLimit", fmt.Sprintf("must be between %d and %d", MinPlayers, MaxPlayers))
	}
	if c.BetSize < 0 {
		return nil, invalid("betSize", "must not be negative")
	}
	if c.BetSize > maxSafeInteger/int64(c.PlayersCountLimit) {
		return nil, invalid("betSize", "betSize x playersCountLimit must not exceed 2^53-1")
	}
	for _, t := range []struct {
		field string
		ms    int64
	}{{"entryTimeoutMs", c.EntryTimeoutMs}, {"moveTimeoutMs", c.MoveTimeoutMs}, {"revealTimeoutMs", c.RevealTimeoutMs}} {
		if t.ms < minTimeoutMs || t.ms > MaxTimeoutMs {
			return nil, invalid(t.field, fmt.Sprintf("must be between %d and %d ms", minTimeoutMs, MaxTimeoutMs))
		}
	}
	rs, ok := rules.Get(c.Ruleset)
	if !ok {
		return nil, invalid("ruleset", fmt.Sprintf("unknown ruleset %q", c.Ruleset))
	}
	if _, err := engine.ParseResolution(string(c.Resolution)); err != nil {
		return nil, invalid("resolution", fmt.Sprintf("unknown resolution %q", c.Resolution))
	}
	if c.MaxExtensions < 0 {
		return nil, invalid("maxExtensions", "must not be negative")
	}
	if c.MaxRounds < 0 {
		return nil, invalid("maxRounds", "must not be negative")
	}
	return rs, nil
}
