package engine

import (
	"embed"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
)

// Registry is a fixed set of rulesets looked up by id.
type Registry struct {
	byID map[string]*Ruleset
	all  []*Ruleset
}

// ErrDuplicateRuleset is wrapped by NewRegistry when two rulesets share an id.
var ErrDuplicateRuleset = errors.New("duplicate ruleset id")

// NewRegistry builds a registry; ids must be unique so a game config can
// never be ambiguous.
func NewRegistry(rulesets ...*Ruleset) (*Registry, error) {
	reg := &Registry{byID: make(map[string]*Ruleset, len(rulesets))}
	for _, rs := range rulesets {
		if rs == nil {
			return nil, errors.New("new registry: nil ruleset")
		}
		if _, dup := reg.byID[rs.ID()]; dup {
			return nil, fmt.Errorf("new registry: %w %q", ErrDuplicateRuleset, rs.ID())
		}
		reg.byID[rs.ID()] = rs
		reg.all = append(reg.all, rs)
	}
	slices.SortFunc(reg.all, func(a, b *Ruleset) int { return strings.Compare(a.ID(), b.ID()) })
	return reg, nil
}

// Get looks a ruleset up by id.
func (r *Registry) Get(id string) (*Ruleset, bool) {
	rs, ok := r.byID[id]
	return rs, ok
}

// All lists the rulesets sorted by id. The slice is a copy.
func (r *Registry) All() []*Ruleset { return slices.Clone(r.all) }

//go:embed rulesets/*.json
var rulesetFiles embed.FS

// Builtin is the registry of the rulesets shipped in engine/rulesets, loaded
// once. It panics on an invalid file because the files are compiled in and a
// test loads every one of them, so a failure here is a build defect.
func Builtin() *Registry { return builtin() }

var builtin = sync.OnceValue(func() *Registry {
	reg, err := loadEmbedded()
	if err != nil {
		panic(err)
	}
	return reg
})

// loadEmbedded loads every embedded file and checks that its name is its id,
// so that the file to edit for a ruleset is never in doubt.
func loadEmbedded() (*Registry, error) {
	entries, err := rulesetFiles.ReadDir("rulesets")
	if err != nil {
		return nil, fmt.Errorf("read embedded rulesets: %w", err)
	}
	var all []*Ruleset
	for _, e := range entries {
		name := path.Join("rulesets", e.Name())
		data, err := rulesetFiles.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read embedded ruleset: %w", err)
		}
		rs, err := LoadRuleset(name, data)
		if err != nil {
			return nil, err
		}
		if want := strings.TrimSuffix(e.Name(), ".json"); rs.ID() != want {
			return nil, fmt.Errorf("%w: %s: id %q does not match the file name", ErrInvalidRuleset, name, rs.ID())
		}
		all = append(all, rs)
	}
	return NewRegistry(all...)
}
