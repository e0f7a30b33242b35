package api

import (
	"compress/gzip"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/commitreveal/rps/translog"
)

// logPrefix is where the log's C2SP tlog-tiles resources are served: <prefix>checkpoint,
// <prefix>tile/<L>/<N>[.p/<W>] and <prefix>tile/entries/<N>[.p/<W>].
const logPrefix = "/log/"

// logPaths are the routes of those resources, in chi's pattern syntax.
var logPaths = []string{logPrefix + "checkpoint", logPrefix + "tile/*"}

// Cache lifetimes: a checkpoint changes every second or so; a full tile never changes; a partial
// tile's bytes never change either, but the full tile replaces it, so it is kept briefly.
const (
	checkpointCache  = "public, max-age=1"
	fullTileCache    = "public, max-age=31536000, immutable"
	partialTileCache = "public, max-age=10"
)

// serveLog serves the checkpoint, hash tiles and entry bundles (C2SP tlog-tiles).
func (s *Server) serveLog(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, logPrefix)
	ctx := r.Context()
	if path == "checkpoint" {
		c, err := s.publishedCheckpoint(ctx)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", checkpointCache)
		_, _ = w.Write(c.Signed())
		return
	}
	tile, err := torchwood.ParseTilePath(path)
	if err != nil || tile.H != translog.TileHeight || !tileInRange(tile) {
		s.writeProblem(w, r, newProblem(http.StatusNotFound, ProblemCodeNotFound, "no such log resource"))
		return
	}
	cache := fullTileCache
	if tile.W < 1<<translog.TileHeight {
		cache = partialTileCache
	}
	var data []byte
	if tile.L == -1 {
		data, err = s.entryBundle(r, tile.N, tile.W)
	} else {
		data, err = s.hashTile(r, tile.L, tile.N, tile.W)
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Cache-Control", cache)
	w.Header().Set("Vary", "Accept-Encoding")
	if tile.L == -1 && acceptsGzip(r) {
		// Entry bundles are text: C2SP asks logs to compress them.
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		_, _ = zw.Write(data)
		_ = zw.Close()
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data)
}

// tileInRange reports whether every entry a tile covers has an int64 index (as the log's do):
// entry tiles and level-0 hash tiles cover 2^8 entries each, level-L ones 2^(8(L+1)). It is
// checked before any shift, which would otherwise wrap a huge index onto tile 0 (issue 29), and
// bounds the level the store keeps as a smallint.
func tileInRange(t tlog.Tile) bool {
	bits := translog.TileHeight * (max(t.L, 0) + 1)
	return bits < 63 && t.N >= 0 && t.N <= math.MaxInt64>>bits
}

var errNoTile = newProblem(http.StatusNotFound, ProblemCodeNotFound, "the log has no such tile (yet)")

// hashTile is the first w hashes of tile n of a level, when the log has that many.
func (s *Server) hashTile(r *http.Request, level int, n int64, w int) ([]byte, error) {
	key := translog.TileKey{Level: level, N: n}
	tiles, err := s.store.LogTiles(r.Context(), []translog.TileKey{key})
	if err != nil {
		return nil, err
	}
	if len(tiles[key]) < w*32 {
		return nil, errNoTile
	}
	return tiles[key][:w*32], nil
}

// entryBundle is the bundle of the w entries of data tile n (in range: see tileInRange), when the
// log has that many.
func (s *Server) entryBundle(r *http.Request, n int64, w int) ([]byte, error) {
	start := n << translog.TileHeight
	leaves, err := s.store.LogEntries(r.Context(), start, start+int64(w))
	if err != nil {
		return nil, err
	}
	if len(leaves) < w {
		return nil, errNoTile
	}
	var bundle []byte
	for _, l := range leaves {
		if bundle, err = torchwood.AppendTileEntry(bundle, l.Entry()); err != nil {
			return nil, fmt.Errorf("entry bundle %d: %w", n, err)
		}
	}
	if len(bundle) == 0 {
		return nil, errors.New("empty entry bundle")
	}
	return bundle, nil
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		q, found := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q=")
		weight, err := strconv.ParseFloat(q, 64)
		return !found || err != nil || weight > 0
	}
	return false
}
