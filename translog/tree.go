package translog

import (
	"fmt"

	"golang.org/x/mod/sumdb/tlog"
)

// TileHeight is the height of the log's tiles (C2SP tlog-tiles: 8, so a full tile holds 256
// hashes).
const TileHeight = 8

// tileWidth is the number of hashes in a full tile.
const tileWidth = 1 << TileHeight

// TileKey names a stored hash tile: its level and its index in the level. A stored tile holds the
// first hashes of that tile, as many as the tree has (1 to 256): tiles only grow, so a partial
// tile of any width is a prefix of the stored one.
type TileKey struct {
	Level int
	N     int64
}

// Tile is a stored hash tile and its hashes (32 bytes each, concatenated).
type Tile struct {
	TileKey
	Hashes []byte
}

// EdgeTiles are the tiles a tree of the given size has at its right edge, those that appending
// to the tree reads and extends: at each level, the partial tile (when the level has one).
func EdgeTiles(size int64) []TileKey {
	var keys []TileKey
	for level := 0; size>>(TileHeight*level) > 0; level++ {
		n := size >> (TileHeight * level)
		if n%tileWidth != 0 {
			keys = append(keys, TileKey{Level: level, N: n / tileWidth})
		}
	}
	return keys
}

// tileSet is a set of stored tiles that serves the tree's stored hashes (tlog.HashReader) from
// them.
type tileSet map[TileKey][]byte

func (s tileSet) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, index := range indexes {
		t := tlog.TileForIndex(TileHeight, index)
		data := s[TileKey{Level: t.L, N: t.N}]
		if len(data) < t.W*tlog.HashSize {
			return nil, fmt.Errorf("translog: hash %d is not in the tiles at hand (tile %s)", index, t.Path())
		}
		h, err := tlog.HashFromTile(t, data, index)
		if err != nil {
			return nil, err
		}
		out[i] = h
	}
	return out, nil
}

// Growth is what appending records to a tree produces: the tiles that changed (each with all its
// hashes so far) and the new tree.
type Growth struct {
	Tiles []Tile
	Tree  tlog.Tree
}

// Append appends records (leaf hashes) to the tree of the given size whose right-edge tiles are
// edge (EdgeTiles(size), as stored), and returns the tiles to store and the new tree. The tiles
// in edge are not modified.
func Append(size int64, edge []Tile, records []tlog.Hash) (Growth, error) {
	tiles := tileSet{}
	for _, key := range EdgeTiles(size) {
		tiles[key] = nil
	}
	for _, t := range edge {
		if _, ok := tiles[t.TileKey]; !ok {
			continue
		}
		want := int(size>>(TileHeight*t.Level)) % tileWidth
		if len(t.Hashes) < want*tlog.HashSize {
			return Growth{}, fmt.Errorf("translog: edge tile %d/%d has %d bytes, the tree of size %d needs %d", t.Level, t.N, len(t.Hashes), size, want*tlog.HashSize)
		}
		// Only the tree's own hashes: a longer stored tile would be a bug elsewhere, not
		// something to build on.
		tiles[t.TileKey] = append([]byte(nil), t.Hashes[:want*tlog.HashSize]...)
	}
	for key, data := range tiles {
		if want := int(size>>(TileHeight*key.Level)) % tileWidth; len(data) != want*tlog.HashSize {
			return Growth{}, fmt.Errorf("translog: edge tile %d/%d of the tree of size %d is missing", key.Level, key.N, size)
		}
	}
	changed := map[TileKey]bool{}
	for i, record := range records {
		n := size + int64(i)
		hashes, err := tlog.StoredHashesForRecordHash(n, record, tiles)
		if err != nil {
			return Growth{}, fmt.Errorf("translog: append record %d: %w", n, err)
		}
		base := tlog.StoredHashIndex(0, n)
		for j, h := range hashes {
			level, k := tlog.SplitStoredHashIndex(base + int64(j))
			if level%TileHeight != 0 {
				// Levels between two tile levels are recomputed from the tile below.
				continue
			}
			key := TileKey{Level: level / TileHeight, N: k / tileWidth}
			if int64(len(tiles[key])) != (k%tileWidth)*tlog.HashSize {
				return Growth{}, fmt.Errorf("translog: bad tile math at record %d: tile %d/%d holds %d bytes, hash %d goes next", n, key.Level, key.N, len(tiles[key]), k)
			}
			tiles[key] = append(tiles[key], h[:]...)
			changed[key] = true
		}
	}
	newSize := size + int64(len(records))
	root, err := tlog.TreeHash(newSize, tiles)
	if err != nil {
		return Growth{}, fmt.Errorf("translog: tree hash: %w", err)
	}
	g := Growth{Tree: tlog.Tree{N: newSize, Hash: root}}
	for key := range changed {
		g.Tiles = append(g.Tiles, Tile{TileKey: key, Hashes: tiles[key]})
	}
	return g, nil
}

// TileReader serves a tree's tiles (tlog.TileReader) from a function that reads stored tiles,
// such as the database's, so that tlog.TileHashReader can prove inclusion and consistency from
// them. It checks nothing itself: tlog.TileHashReader authenticates every tile against the tree.
type TileReader struct {
	Read func(keys []TileKey) (map[TileKey][]byte, error)
}

// Height is the tiles' height.
func (r TileReader) Height() int { return TileHeight }

// ReadTiles returns each tile's data at its width, a prefix of the stored tile.
func (r TileReader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	keys := make([]TileKey, len(tiles))
	for i, t := range tiles {
		keys[i] = TileKey{Level: t.L, N: t.N}
	}
	stored, err := r.Read(keys)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		data := stored[keys[i]]
		if len(data) < t.W*tlog.HashSize {
			return nil, fmt.Errorf("translog: tile %s is not stored", t.Path())
		}
		out[i] = data[:t.W*tlog.HashSize]
	}
	return out, nil
}

// SaveTiles does nothing: the tiles come from storage.
func (TileReader) SaveTiles([]tlog.Tile, [][]byte) {}
