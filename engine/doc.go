// Package engine holds the pure rules of a commit-reveal tournament: rulesets
// loaded from data, the 5x5 weapon-grid bitmasks players draw their weapons on,
// round resolution from per-move counts, and move commitments.
//
// Nothing here does I/O or reads the clock, so every rule can be tested in
// microseconds and gives the same answer on every replica. Rulesets are
// immutable once loaded and safe for concurrent use.
package engine
