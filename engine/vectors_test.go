package engine

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/vectors.json instead of checking it")

const vectorsFile = "testdata/vectors.json"

// The vector file lets other implementations (the Android client) check
// themselves against this package. Masks are plain integers.
type (
	commitmentVector struct {
		Preimage   string `json:"preimage"`
		Commitment string `json:"commitment"`
	}
	placementVector struct {
		Move     Move `json:"move"`
		Rotation int  `json:"rotation"`
		Tiles    Grid `json:"tiles"`
	}
	gridVector struct {
		Grid       Grid              `json:"grid"`
		Matches    []placementVector `json:"matches"`
		Candidates MoveSet           `json:"candidates"`
		ValidTiles Grid              `json:"validTiles"`
	}
	resolutionVector struct {
		Ruleset   string            `json:"ruleset"`
		Mode      Resolution        `json:"mode"`
		Counts    Counts            `json:"counts"`
		Present   MoveSet           `json:"present"`
		Survivors MoveSet           `json:"survivors"`
		Scores    [MaxWeapons]int64 `json:"scores"`
	}
)

// splitmix64 picks the grids and counts; it is spelled out here so the
// vectors never change with a Go release's math/rand.
type splitmix64 uint64

func (s *splitmix64) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

func (s *splitmix64) intn(n int) int { return int(s.next() % uint64(n)) }

// vectorGrids chooses the grids to publish for a ruleset: the empty grid,
// every placement, a random part of every placement, unions of two
// placements (mostly impossible), a few random sparse grids and the full grid.
func vectorGrids(rs *Ruleset, rng *splitmix64) []Grid {
	ps := rs.Placements()
	grids := []Grid{0}
	for _, p := range ps {
		grids = append(grids, p.Tiles)
	}
	for _, p := range ps {
		var part Grid
		for part == 0 || part == p.Tiles {
			part = p.Tiles & Grid(rng.next())
		}
		grids = append(grids, part)
	}
	for range 20 {
		grids = append(grids, ps[rng.intn(len(ps))].Tiles|ps[rng.intn(len(ps))].Tiles)
	}
	for range 20 {
		var g Grid
		for range 1 + rng.intn(4) {
			g |= 1 << rng.intn(25)
		}
		grids = append(grids, g)
	}
	return append(grids, FullGrid)
}

func placementVectors(ps []Placement) []placementVector {
	out := make([]placementVector, 0, len(ps))
	for _, p := range ps {
		out = append(out, placementVector(p))
	}
	return out
}

// buildVectors renders the vector file: compact JSON with one record per
// line, so that a diff of a change stays readable.
func buildVectors(t *testing.T) []byte {
	var b bytes.Buffer
	line := func(prefix string, v any, suffix string) {
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(prefix)
		b.Write(j)
		b.WriteString(suffix)
	}
	sep := func(i, n int) string {
		if i == n-1 {
			return "\n"
		}
		return ",\n"
	}

	preimages := []string{}
	for _, v := range gearVectors {
		preimages = append(preimages, v.preimage)
	}
	preimages = append(preimages, "0", "4", "2пароль", "3pässwörd🙂", "1 with spaces and \"quotes\"", "9"+strings.Repeat("z", 100))
	b.WriteString("{\n\"commitments\": [\n")
	for i, p := range preimages {
		line("", commitmentVector{p, Commit(p).String()}, sep(i, len(preimages)))
	}

	b.WriteString("],\n\"rulesets\": [\n")
	all := Builtin().All()
	rng := splitmix64(20240601)
	for i, rs := range all {
		head := struct {
			ID        string `json:"id"`
			Hash      string `json:"hash"`
			Canonical string `json:"canonical"`
		}{rs.ID(), rs.HashHex(), string(rs.Canonical())}
		h, _ := json.Marshal(head)
		b.Write(h[:len(h)-1])
		b.WriteString(",\n\"placements\": [\n")
		pv := placementVectors(rs.Placements())
		for j, p := range pv {
			line("", p, sep(j, len(pv)))
		}
		b.WriteString("],\n\"grids\": [\n")
		grids := vectorGrids(rs, &rng)
		for j, g := range grids {
			a := rs.AnalyzeGrid(g)
			line("", gridVector{g, placementVectors(a.Matches), a.Candidates, a.ValidTiles}, sep(j, len(grids)))
		}
		b.WriteString("]}" + sep(i, len(all)))
	}

	b.WriteString("],\n\"resolutions\": [\n")
	var rv []resolutionVector
	for _, rs := range all {
		// Every subset of weapons with random counts, plus the empty round.
		for mask := 0; mask < 1<<len(rs.Weapons()); mask++ {
			var c Counts
			for k, m := range rs.Moves().Moves() {
				if mask&(1<<k) != 0 {
					c[m] = int64(1 + rng.intn(5))
				}
			}
			for _, mode := range []Resolution{Classic, Weighted} {
				o := rs.Resolve(mode, c)
				rv = append(rv, resolutionVector{rs.ID(), mode, c, o.Present, o.Survivors, o.Scores})
			}
		}
	}
	for i, r := range rv {
		line("", r, sep(i, len(rv)))
	}
	b.WriteString("]\n}\n")
	return b.Bytes()
}

func TestVectors(t *testing.T) {
	got := buildVectors(t)
	if !json.Valid(got) {
		t.Fatal("vectors are not valid json")
	}
	if *update {
		if err := os.WriteFile(vectorsFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", vectorsFile, len(got))
		return
	}
	want, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatalf("%v (create it with go test ./engine -run TestVectors -update)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) && i < len(wl); i++ {
			if gl[i] != wl[i] {
				t.Fatalf("%s differs at line %d:\n got %s\nwant %s\nIf the change is intended, run go test ./engine -run TestVectors -update and tell the Android client.", vectorsFile, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%s differs in length (%d lines, want %d); if intended, rerun with -update", vectorsFile, len(gl), len(wl))
	}
}
