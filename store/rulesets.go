package store

import "context"

// RulesetCanonical returns the canonical form of the ruleset with the given content hash, or
// tournament.ErrNotFound. Every ruleset a game was opened with is kept.
func (s *Store) RulesetCanonical(ctx context.Context, hash string) ([]byte, error) {
	var canonical []byte
	err := queryRow(ctx, s.pool, `SELECT canonical FROM rulesets WHERE hash = $1`, hash).Scan(&canonical)
	return canonical, err
}
