package engine

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"

	"golang.org/x/crypto/blake2b"
)

// DefaultRulesetID is the ruleset a game uses when its config names none.
const DefaultRulesetID = "rpsls"

// ErrInvalidRuleset is wrapped by every LoadRuleset error, so callers can tell
// bad rules data from other failures.
var ErrInvalidRuleset = errors.New("invalid ruleset")

// Weapon is one weapon of a ruleset as loaded and normalised.
type Weapon struct {
	// Move is the digit a reveal starts with to play this weapon.
	Move Move
	// Name is unique within the ruleset; files refer to weapons by it.
	Name string
	// Layout is the shape's bounding box as rows of 'X' and ' ', top row
	// first, each row padded to the box width.
	Layout []string
	// Rotations means the four clockwise quarter turns of Layout all count.
	Rotations bool
	// Beats holds the moves this weapon defeats.
	Beats MoveSet
}

// Ruleset is a validated, immutable set of weapons with its grid placements
// computed once, so that per-round and per-tap questions are cheap.
type Ruleset struct {
	id, name   string
	weapons    []Weapon // ascending move
	index      [MaxWeapons]int8
	moves      MoveSet
	beats      [MaxWeapons]MoveSet
	beatenBy   [MaxWeapons]MoveSet
	placements []Placement
	tiles      []Grid // placements[i].Tiles, kept apart for a tight scan
	canonical  []byte
	hash       [32]byte
}

// rulesetJSON is the file format. Fields are in alphabetical order because
// Canonical marshals these same structs and promises sorted keys.
type rulesetJSON struct {
	ID      string       `json:"id"`
	Name    string       `json:"name"`
	Weapons []weaponJSON `json:"weapons"`
}

type weaponJSON struct {
	Beats     []string `json:"beats"`
	Layout    []string `json:"layout"`
	Move      string   `json:"move"`
	Name      string   `json:"name"`
	Rotations bool     `json:"rotations"`
}

var idPattern = regexp.MustCompile(`^[a-z0-9-]+$`)

// LoadRuleset parses and validates a ruleset file. file only labels errors,
// which name the file, the weapon and the problem so that whoever edits the
// rules can fix them without reading this code. Unknown fields are refused
// because a misspelt key would otherwise silently change the rules.
func LoadRuleset(file string, data []byte) (*Ruleset, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidRuleset, file, fmt.Sprintf(format, args...))
	}
	var in rulesetJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("%w: %s: decode json: %w", ErrInvalidRuleset, file, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fail("trailing data after the json object")
	}
	switch {
	case in.ID == "":
		return nil, fail("missing id")
	case !idPattern.MatchString(in.ID):
		return nil, fail("id %q must match [a-z0-9-]+", in.ID)
	case in.Name == "":
		return nil, fail("missing name")
	case len(in.Weapons) < 2:
		return nil, fail("has %d weapons, need at least 2", len(in.Weapons))
	case len(in.Weapons) > MaxWeapons:
		return nil, fail("has %d weapons, more than %d", len(in.Weapons), MaxWeapons)
	}

	rs := &Ruleset{id: in.ID, name: in.Name}
	for i := range rs.index {
		rs.index[i] = -1
	}
	label := func(i int) string {
		if in.Weapons[i].Name == "" {
			return fmt.Sprintf("weapon #%d", i+1)
		}
		return fmt.Sprintf("weapon %q", in.Weapons[i].Name)
	}
	byName := make(map[string]int, len(in.Weapons))
	moveOf := make([]Move, len(in.Weapons))
	shapes := make([]shape, len(in.Weapons))
	for i, w := range in.Weapons {
		if w.Name == "" {
			return nil, fail("%s: missing name", label(i))
		}
		if _, dup := byName[w.Name]; dup {
			return nil, fail("%s: duplicate name", label(i))
		}
		byName[w.Name] = i
		if len(w.Move) != 1 || w.Move[0] < '0' || w.Move[0] > '9' {
			return nil, fail("%s: move %q is not a single digit 0-9", label(i), w.Move)
		}
		m := Move(w.Move[0] - '0')
		if rs.moves.Has(m) {
			return nil, fail("%s: duplicate move %s", label(i), m)
		}
		rs.moves |= 1 << m
		moveOf[i] = m
		s, err := parseLayout(w.Layout)
		if err != nil {
			return nil, fail("%s: %v", label(i), err)
		}
		shapes[i] = s
	}
	for i, w := range in.Weapons {
		m := moveOf[i]
		for _, b := range w.Beats {
			j, ok := byName[b]
			switch {
			case !ok:
				return nil, fail("%s: beats unknown weapon %q", label(i), b)
			case j == i:
				return nil, fail("%s: beats itself", label(i))
			case rs.beats[m].Has(moveOf[j]):
				return nil, fail("%s: lists %q twice in beats", label(i), b)
			}
			rs.beats[m] |= 1 << moveOf[j]
		}
	}
	for i := range in.Weapons {
		for j := i + 1; j < len(in.Weapons); j++ {
			a, b := moveOf[i], moveOf[j]
			switch ab, ba := rs.beats[a].Has(b), rs.beats[b].Has(a); {
			case ab && ba:
				return nil, fail("%s and %s: beat each other", label(i), label(j))
			case !ab && !ba:
				return nil, fail("%s and %s: neither beats the other", label(i), label(j))
			}
		}
	}
	for m := Move(0); m < MaxWeapons; m++ {
		for v := Move(0); v < MaxWeapons; v++ {
			if rs.beats[v].Has(m) {
				rs.beatenBy[m] |= 1 << v
			}
		}
	}

	order := make([]int, len(in.Weapons))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(moveOf[a]) - int(moveOf[b]) })
	owner := make(map[Grid]int)
	canon := rulesetJSON{ID: in.ID, Name: in.Name}
	for _, i := range order {
		w, m := in.Weapons[i], moveOf[i]
		for _, p := range shapes[i].placements(m, w.Rotations) {
			if j, taken := owner[p.Tiles]; taken {
				return nil, fail("%s and %s: share a placement on the grid (tiles %d)", label(j), label(i), p.Tiles)
			}
			owner[p.Tiles] = i
			rs.placements = append(rs.placements, p)
			rs.tiles = append(rs.tiles, p.Tiles)
		}
		rs.index[m] = int8(len(rs.weapons))
		rs.weapons = append(rs.weapons, Weapon{
			Move: m, Name: w.Name, Layout: shapes[i].rows(), Rotations: w.Rotations, Beats: rs.beats[m],
		})
		beats := make([]string, 0, rs.beats[m].Count())
		for _, j := range order {
			if rs.beats[m].Has(moveOf[j]) {
				beats = append(beats, in.Weapons[j].Name)
			}
		}
		canon.Weapons = append(canon.Weapons, weaponJSON{
			Beats: beats, Layout: shapes[i].rows(), Move: w.Move, Name: w.Name, Rotations: w.Rotations,
		})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// HTML escaping would make the canonical bytes depend on a web concern
	// and harder for other languages to reproduce.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(canon); err != nil {
		return nil, fmt.Errorf("%w: %s: encode canonical json: %w", ErrInvalidRuleset, file, err)
	}
	rs.canonical = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	rs.hash = blake2b.Sum256(rs.canonical)
	return rs, nil
}

// parseLayout checks a layout and trims it to the bounding box of its tiles,
// so that blank margins in the file change neither placements nor the hash.
func parseLayout(rows []string) (shape, error) {
	for _, row := range rows {
		for k := 0; k < len(row); k++ {
			if row[k] != 'X' && row[k] != ' ' {
				return shape{}, fmt.Errorf("layout has character %q, want only 'X' or space", row[k:k+1])
			}
		}
	}
	width := 0
	for _, row := range rows {
		width = max(width, len(row))
	}
	if len(rows) > GridSize || width > GridSize {
		return shape{}, fmt.Errorf("layout is %d rows by %d columns, larger than %dx%d", len(rows), width, GridSize, GridSize)
	}
	top, bottom, left, right := GridSize, -1, GridSize, -1
	for r, row := range rows {
		for c := 0; c < len(row); c++ {
			if row[c] == 'X' {
				top, bottom = min(top, r), max(bottom, r)
				left, right = min(left, c), max(right, c)
			}
		}
	}
	if bottom < 0 {
		return shape{}, errors.New("layout is empty")
	}
	s := shape{h: bottom - top + 1, w: right - left + 1}
	for r := top; r <= bottom; r++ {
		for c := left; c <= right && c < len(rows[r]); c++ {
			s.cells[r-top][c-left] = rows[r][c] == 'X'
		}
	}
	return s, nil
}

// ID is the ruleset's stable identifier, as used in game configs.
func (r *Ruleset) ID() string { return r.id }

// Name is the ruleset's human-readable name.
func (r *Ruleset) Name() string { return r.name }

// Weapons lists the weapons in ascending move order. The result is a copy.
func (r *Ruleset) Weapons() []Weapon {
	out := make([]Weapon, len(r.weapons))
	for i, w := range r.weapons {
		out[i] = cloneWeapon(w)
	}
	return out
}

// Weapon looks a weapon up by move.
func (r *Ruleset) Weapon(m Move) (Weapon, bool) {
	if !r.moves.Has(m) {
		return Weapon{}, false
	}
	return cloneWeapon(r.weapons[r.index[m]]), true
}

// cloneWeapon copies the layout so callers cannot edit a shared ruleset.
func cloneWeapon(w Weapon) Weapon {
	w.Layout = slices.Clone(w.Layout)
	return w
}

// Moves is the set of the ruleset's moves.
func (r *Ruleset) Moves() MoveSet { return r.moves }

// Placements lists every placement of every rotation of every weapon,
// ordered by move, then rotation, then ascending tile mask. The result is a copy.
func (r *Ruleset) Placements() []Placement { return slices.Clone(r.placements) }

// Canonical is the ruleset as canonical JSON: sorted keys, no whitespace,
// weapons by move, beats by move, layouts trimmed to their bounding box.
// Loading it again yields the same ruleset and hash, which is why the store
// keeps these bytes for every game. The result is a copy.
func (r *Ruleset) Canonical() []byte { return slices.Clone(r.canonical) }

// Hash is the blake2b-256 digest of Canonical: the identity a game records so
// that later edits to a ruleset file never change a game already played.
func (r *Ruleset) Hash() [32]byte { return r.hash }

// HashHex is Hash in lower-case hex, as it appears in JSON and events.
func (r *Ruleset) HashHex() string { return hex.EncodeToString(r.hash[:]) }
