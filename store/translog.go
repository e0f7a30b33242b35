package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/commitreveal/rps/tournament"
	"github.com/commitreveal/rps/translog"
)

// This file is the SQL of the transparency log (package translog): reading what is not in the
// tree yet, appending a batch, and the reads that serve checkpoints, tiles, entries and proofs.
// The integration itself runs in logpublish, between PendingLog and AppendLog: no code
// of another package runs inside these transactions.

// LogState is the log as stored: its origin, its tree, and the transaction id below which every
// committed event is in the tree.
type LogState struct {
	Origin string
	Size   int64
	Root   [32]byte
	Floor  int64
}

// ErrLogMoved: the log grew since the batch was read (another replica integrated first).
var ErrLogMoved = errors.New("the log grew meanwhile")

// LogState returns the log's state, or tournament.ErrNotFound before CreateLog.
func (s *Store) LogState(ctx context.Context) (LogState, error) {
	return scanLogState(queryRow(ctx, s.pool, logStateSQL))
}

const logStateSQL = `SELECT origin, size, root, floor::text::bigint FROM log_state`

func scanLogState(r pgx.Row, extra ...any) (LogState, error) {
	var st LogState
	var root []byte
	err := r.Scan(append([]any{&st.Origin, &st.Size, &root, &st.Floor}, extra...)...)
	copy(st.Root[:], root)
	return st, err
}

// CreateLog creates the empty log under origin with its first checkpoint (the empty tree's,
// signed), unless it exists; either way it returns the log's state. Two replicas starting at once
// create it once.
func (s *Store) CreateLog(ctx context.Context, origin string, root [32]byte, checkpoint []byte, published bool) (LogState, error) {
	err := s.withTx(ctx, pgx.TxOptions{}, func(tx pgx.Tx) error {
		tag, err := exec(ctx, tx, `INSERT INTO log_state (origin, root, updated_at) VALUES ($1, $2, `+clockSQL+`)
			ON CONFLICT DO NOTHING`, origin, root[:])
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		_, err = exec(ctx, tx, `INSERT INTO log_checkpoints (size, root, note, created_at, published_at)
			VALUES (0, $1, $2, `+clockSQL+`, CASE WHEN $3 THEN `+clockSQL+` END)`, root[:], string(checkpoint), published)
		return err
	})
	if err != nil {
		return LogState{}, fmt.Errorf("create the log: %w", err)
	}
	return s.LogState(ctx)
}

// LogPending is what the log does not hold yet, read in one snapshot.
type LogPending struct {
	State LogState
	// Horizon is the oldest transaction id still running when the snapshot was taken: every
	// event of an older transaction is committed and was read (as far as the limits allowed).
	Horizon int64
	// Edge are the tree's right-edge tiles (translog.EdgeTiles).
	Edge []translog.Tile
	// Logged is the newest logged seq of each chain (translog.Leaf.Chain) with pending events
	// (absent: none).
	Logged  map[string]int64
	Pending []translog.Pending
	// Complete is false when the limits cut the read: the next batch must look again from the
	// same floor.
	Complete bool
}

// PendingLog reads, in one snapshot, the log's state, its right edge and the committed events not
// in it yet, at most maxEvents of each of at most maxLobbies lobbies, and likewise of the
// accounts' key logs. A lobby has new events when one of its events was written by a transaction
// between the log's floor and the snapshot's horizon; its events are then read from its newest
// logged one on, whatever transaction wrote them, so an event held back for a gap is read again.
// An account's key events are found and read the same way.
func (s *Store) PendingLog(ctx context.Context, maxLobbies, maxEvents int) (LogPending, error) {
	var p LogPending
	err := s.withTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		p.State, err = scanLogState(queryRow(ctx, tx, `SELECT origin, size, root, floor::text::bigint,
			pg_snapshot_xmin(pg_current_snapshot())::text::bigint FROM log_state`), &p.Horizon)
		if err != nil {
			return fmt.Errorf("read the log: %w", err)
		}
		if p.Edge, err = s.readTiles(ctx, tx, translog.EdgeTiles(p.State.Size)); err != nil {
			return err
		}
		p.Logged = map[string]int64{}
		p.Complete = true
		for _, c := range pendingChains {
			complete, err := p.readPending(ctx, tx, c, maxLobbies, maxEvents)
			if err != nil {
				return err
			}
			p.Complete = p.Complete && complete
		}
		return nil
	})
	return p, err
}

// chainTables are where one kind of chain whose events are leaves is stored: its events, its
// runs of leaves, its logged heads and its id column.
type chainTables struct {
	events, ranges, heads, id string
	// key: the accounts' key logs (translog.Leaf.Account), not the lobbies' events.
	key bool
}

// The two kinds of chains: the lobbies' events and the accounts' key events.
var (
	lobbyChains   = chainTables{events: "events", ranges: "log_ranges", heads: "log_heads", id: "lobby_id"}
	keyChains     = chainTables{events: "account_key_events", ranges: "log_key_ranges", heads: "log_key_heads", id: "account_id", key: true}
	pendingChains = []chainTables{lobbyChains, keyChains}
)

// readPending reads the pending events of one kind of chain into p (see PendingLog), and
// reports whether the limits left none out.
func (p *LogPending) readPending(ctx context.Context, tx pgx.Tx, c chainTables, maxChains, maxEvents int) (bool, error) {
	chains := map[string]int{}
	rows, err := tx.Query(ctx, `WITH dirty AS (
			SELECT DISTINCT `+c.id+` AS id FROM `+c.events+`
			WHERE log_xid >= $1::bigint::text::xid8 AND log_xid < $2::bigint::text::xid8 LIMIT $3)
		SELECT d.id::text, coalesce(h.seq, 0), e.seq, e.hash, e.at
		FROM dirty d LEFT JOIN `+c.heads+` h ON h.`+c.id+` = d.id
		CROSS JOIN LATERAL (SELECT seq, hash, at FROM `+c.events+` e
			WHERE e.`+c.id+` = d.id AND e.seq > coalesce(h.seq, 0) AND e.log_xid < $2::bigint::text::xid8
			ORDER BY seq LIMIT $4) e`, p.State.Floor, p.Horizon, maxChains, maxEvents)
	if err != nil {
		return false, fmt.Errorf("read pending %s: %w", c.events, mapErr(err))
	}
	defer rows.Close()
	for rows.Next() {
		var e translog.Pending
		var id string
		var logged int64
		var hash []byte
		if err := rows.Scan(&id, &logged, &e.Seq, &hash, &e.At); err != nil {
			return false, fmt.Errorf("read pending %s: %w", c.events, mapErr(err))
		}
		if c.key {
			e.Account = id
		} else {
			e.Lobby = id
		}
		copy(e.Hash[:], hash)
		if logged > 0 {
			p.Logged[e.Chain()] = logged
		}
		chains[id]++
		p.Pending = append(p.Pending, e)
	}
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("read pending %s: %w", c.events, mapErr(err))
	}
	// A chain without rows was fully logged already; only a full read may have left some out.
	complete := len(chains) < maxChains
	for _, n := range chains {
		complete = complete && n < maxEvents
	}
	return complete, nil
}

// readTiles reads stored tiles by key; missing ones are absent from the result.
func (s *Store) readTiles(ctx context.Context, q querier, keys []translog.TileKey) ([]translog.Tile, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	levels, ns := make([]int16, len(keys)), make([]int64, len(keys))
	for i, k := range keys {
		levels[i], ns[i] = int16(k.Level), k.N
	}
	tiles, err := collect(ctx, q, func(r pgx.CollectableRow) (translog.Tile, error) {
		var t translog.Tile
		err := r.Scan(&t.Level, &t.N, &t.Hashes)
		return t, err
	}, `SELECT t.level, t.n, t.hashes FROM log_tiles t JOIN unnest($1::smallint[], $2::bigint[]) k (level, n)
		ON t.level = k.level AND t.n = k.n`, levels, ns)
	if err != nil {
		return nil, fmt.Errorf("read log tiles: %w", err)
	}
	return tiles, nil
}

// LogHashes reads the hashes of tree from the stored tiles, each checked against its root on the
// way (for proofs: tlog.ProveTree, tlog.ProveRecord, tlog.TreeHash).
func (s *Store) LogHashes(ctx context.Context, tree tlog.Tree) tlog.HashReader {
	return tlog.TileHashReader(tree, translog.TileReader{Read: func(keys []translog.TileKey) (map[translog.TileKey][]byte, error) {
		return s.LogTiles(ctx, keys)
	}})
}

// LogTiles reads stored tiles by key (for serving tiles and proving); missing ones are absent.
func (s *Store) LogTiles(ctx context.Context, keys []translog.TileKey) (map[translog.TileKey][]byte, error) {
	tiles, err := s.readTiles(ctx, s.pool, keys)
	if err != nil {
		return nil, err
	}
	out := make(map[translog.TileKey][]byte, len(tiles))
	for _, t := range tiles {
		out[t.TileKey] = t.Hashes
	}
	return out, nil
}

// LogAppend is one integration: the batch, the tiles it grew, the new tree and its checkpoint.
type LogAppend struct {
	// OldSize is the size the batch was built on; the append fails with ErrLogMoved when the
	// log is no longer that size.
	OldSize int64
	Batch   translog.Batch
	Growth  translog.Growth
	// Floor is the log's new floor (the read's horizon when the read was complete).
	Floor int64
	// Checkpoint is the new tree's signed checkpoint (nil when the batch is empty); Published
	// publishes it at once (no witnesses to ask).
	Checkpoint []byte
	Published  bool
}

// AppendLog appends a batch in one transaction: tiles, ranges, heads, checkpoint and the new state
// all commit together or not at all. It returns the commit's instant (the database's clock, Unix
// milliseconds).
func (s *Store) AppendLog(ctx context.Context, a LogAppend) (int64, error) {
	var at int64
	err := s.withTx(ctx, pgx.TxOptions{}, func(tx pgx.Tx) error {
		var size int64
		if err := queryRow(ctx, tx, `SELECT size, `+clockSQL+` FROM log_state FOR UPDATE`).Scan(&size, &at); err != nil {
			return fmt.Errorf("lock the log: %w", err)
		}
		if size != a.OldSize {
			return fmt.Errorf("%w: size %d, the batch was built on %d", ErrLogMoved, size, a.OldSize)
		}
		if len(a.Batch.Leaves) == 0 {
			_, err := exec(ctx, tx, `UPDATE log_state SET floor = $1::bigint::text::xid8 WHERE floor < $1::bigint::text::xid8`, a.Floor)
			return err
		}
		if a.Growth.Tree.N != a.OldSize+int64(len(a.Batch.Leaves)) {
			return fmt.Errorf("append to the log: a tree of %d for %d + %d leaves", a.Growth.Tree.N, a.OldSize, len(a.Batch.Leaves))
		}
		var b pgx.Batch
		levels, ns, hashes := make([]int16, len(a.Growth.Tiles)), make([]int64, len(a.Growth.Tiles)), make([][]byte, len(a.Growth.Tiles))
		for i, t := range a.Growth.Tiles {
			levels[i], ns[i], hashes[i] = int16(t.Level), t.N, t.Hashes
		}
		// A stored tile only grows: a shorter one would be a bug, and is refused by the check.
		queue(&b, `INSERT INTO log_tiles (level, n, hashes) SELECT * FROM unnest($1::smallint[], $2::bigint[], $3::bytea[])
			ON CONFLICT (level, n) DO UPDATE SET hashes = excluded.hashes
			WHERE substring(excluded.hashes FOR length(log_tiles.hashes)) = log_tiles.hashes`, levels, ns, hashes)
		for _, c := range pendingChains {
			queueRanges(&b, c, a.Batch)
		}
		queue(&b, `INSERT INTO log_checkpoints (size, root, note, created_at, published_at)
			VALUES ($1, $2, $3, $4, CASE WHEN $5 THEN $4::bigint END)`,
			a.Growth.Tree.N, a.Growth.Tree.Hash[:], string(a.Checkpoint), at, a.Published)
		queue(&b, `UPDATE log_state SET size = $1, root = $2, floor = greatest(floor, $3::bigint::text::xid8), updated_at = $4`,
			a.Growth.Tree.N, a.Growth.Tree.Hash[:], a.Floor, at)
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return fmt.Errorf("append to the log: %w", mapErr(err))
		}
		return nil
	})
	return at, err
}

// queueRanges queues the inserts of a batch's ranges and heads of the chains of c.
func queueRanges(b *pgx.Batch, c chainTables, batch translog.Batch) {
	var firsts, seqs, counts, headSeqs, headLeaves []int64
	var ids, headIDs []string
	for _, r := range batch.Ranges {
		if id := rangeChain(c, r.Lobby, r.Account); id != "" {
			firsts, ids, seqs, counts = append(firsts, r.FirstIndex), append(ids, id), append(seqs, r.FirstSeq), append(counts, r.Count)
		}
	}
	for _, h := range batch.Heads {
		if id := rangeChain(c, h.Lobby, h.Account); id != "" {
			headIDs, headSeqs, headLeaves = append(headIDs, id), append(headSeqs, h.Seq), append(headLeaves, h.LeafIndex)
		}
	}
	if len(ids) == 0 {
		return
	}
	queue(b, `INSERT INTO `+c.ranges+` (first_index, `+c.id+`, first_seq, count)
		SELECT * FROM unnest($1::bigint[], $2::uuid[], $3::bigint[], $4::bigint[])`, firsts, uuidArray(ids), seqs, counts)
	queue(b, `INSERT INTO `+c.heads+` (`+c.id+`, seq, leaf_index) SELECT * FROM unnest($1::uuid[], $2::bigint[], $3::bigint[])
		ON CONFLICT (`+c.id+`) DO UPDATE SET seq = excluded.seq, leaf_index = excluded.leaf_index`, uuidArray(headIDs), headSeqs, headLeaves)
}

// rangeChain is the id of a range's or head's chain when it is of the kind of c, or "".
func rangeChain(c chainTables, lobby, account string) string {
	if c.key {
		return account
	}
	if account != "" {
		return ""
	}
	return lobby
}

// LogCheckpoint is a signed checkpoint as stored.
type LogCheckpoint struct {
	Size int64
	Root [32]byte
	// Note is the checkpoint as the log signed it; Cosignatures the witnesses' lines gathered.
	Note         []byte
	Cosignatures []byte
	CreatedAt    int64
	// PublishedAt is 0 while the witnesses have not answered yet.
	PublishedAt int64
}

// Signed is the checkpoint with its cosignatures, as served.
func (c LogCheckpoint) Signed() []byte {
	return append(append([]byte(nil), c.Note...), c.Cosignatures...)
}

const checkpointColumns = `size, root, note, cosignatures, created_at, coalesce(published_at, 0)`

func scanCheckpoint(r pgx.Row) (LogCheckpoint, error) {
	var c LogCheckpoint
	var root []byte
	var note, cosigs string
	err := r.Scan(&c.Size, &root, &note, &cosigs, &c.CreatedAt, &c.PublishedAt)
	copy(c.Root[:], root)
	c.Note, c.Cosignatures = []byte(note), []byte(cosigs)
	return c, err
}

// PublishedCheckpoint is the newest published checkpoint, or tournament.ErrNotFound before the
// log exists.
func (s *Store) PublishedCheckpoint(ctx context.Context) (LogCheckpoint, error) {
	return scanCheckpoint(queryRow(ctx, s.pool, `SELECT `+checkpointColumns+` FROM log_checkpoints
		WHERE published_at IS NOT NULL ORDER BY size DESC LIMIT 1`))
}

// NewestCheckpoint is the newest checkpoint, published or not.
func (s *Store) NewestCheckpoint(ctx context.Context) (LogCheckpoint, error) {
	return scanCheckpoint(queryRow(ctx, s.pool, `SELECT `+checkpointColumns+` FROM log_checkpoints ORDER BY size DESC LIMIT 1`))
}

// PublishCheckpoint publishes a checkpoint with the cosignatures gathered for it, or replaces
// a published one's cosignatures by a longer list (a witness that answered late).
func (s *Store) PublishCheckpoint(ctx context.Context, size int64, cosignatures []byte) error {
	_, err := exec(ctx, s.pool, `UPDATE log_checkpoints SET cosignatures = $2, published_at = coalesce(published_at, `+clockSQL+`)
		WHERE size = $1 AND (published_at IS NULL OR length(cosignatures) < length($2))`, size, string(cosignatures))
	if err != nil {
		return fmt.Errorf("publish checkpoint %d: %w", size, err)
	}
	return nil
}

// WitnessSizes returns the size each witness last cosigned, as far as the log knows.
func (s *Store) WitnessSizes(ctx context.Context) (map[string]int64, error) {
	rows, err := collect(ctx, s.pool, func(r pgx.CollectableRow) (struct {
		name string
		size int64
	}, error) {
		var w struct {
			name string
			size int64
		}
		err := r.Scan(&w.name, &w.size)
		return w, err
	}, `SELECT name, size FROM log_witnesses`)
	if err != nil {
		return nil, fmt.Errorf("witness sizes: %w", err)
	}
	out := make(map[string]int64, len(rows))
	for _, w := range rows {
		out[w.name] = w.size
	}
	return out, nil
}

// SetWitnessSize records the size a witness cosigned or told us it has.
func (s *Store) SetWitnessSize(ctx context.Context, name string, size int64) error {
	_, err := exec(ctx, s.pool, `INSERT INTO log_witnesses (name, size, updated_at) VALUES ($1, $2, `+clockSQL+`)
		ON CONFLICT (name) DO UPDATE SET size = excluded.size, updated_at = excluded.updated_at`, name, size)
	if err != nil {
		return fmt.Errorf("witness %s size: %w", name, err)
	}
	return nil
}

// LogEntries returns the leaves with indexes in [start, end), in order, as far as the log has
// them.
func (s *Store) LogEntries(ctx context.Context, start, end int64) ([]translog.Leaf, error) {
	leaves, err := collect(ctx, s.pool, func(r pgx.CollectableRow) (translog.Leaf, error) {
		var l translog.Leaf
		var id string
		var key bool
		var hash []byte
		var index int64
		err := r.Scan(&id, &key, &l.Seq, &hash, &index)
		if key {
			l.Account = id
		} else {
			l.Lobby = id
		}
		copy(l.Hash[:], hash)
		return l, err
	}, `WITH first AS (SELECT greatest(
				(SELECT max(first_index) FROM log_ranges WHERE first_index <= $1),
				(SELECT max(first_index) FROM log_key_ranges WHERE first_index <= $1), 0) AS index)
		SELECT e.lobby_id::text, false, e.seq, e.hash, r.first_index
		FROM first, log_ranges r
		JOIN events e ON e.lobby_id = r.lobby_id AND e.seq >= r.first_seq + greatest($1 - r.first_index, 0)
			AND e.seq < r.first_seq + least($2 - r.first_index, r.count)
		WHERE r.first_index >= first.index AND r.first_index < $2
		UNION ALL
		SELECT e.account_id::text, true, e.seq, e.hash, r.first_index
		FROM first, log_key_ranges r
		JOIN account_key_events e ON e.account_id = r.account_id AND e.seq >= r.first_seq + greatest($1 - r.first_index, 0)
			AND e.seq < r.first_seq + least($2 - r.first_index, r.count)
		WHERE r.first_index >= first.index AND r.first_index < $2
		ORDER BY 5, 3`, start, end)
	if err != nil {
		return nil, fmt.Errorf("log entries %d..%d: %w", start, end, err)
	}
	return leaves, nil
}

// LogRanges returns the runs of leaves that hold a lobby's events from first to last seq (only
// the logged ones).
func (s *Store) LogRanges(ctx context.Context, lobby tournament.LobbyID, first, last int64) ([]translog.Range, error) {
	return s.logRanges(ctx, lobbyChains, string(lobby), first, last)
}

// KeyLogRanges returns the runs of leaves that hold an account's key events from first to last
// seq (only the logged ones).
func (s *Store) KeyLogRanges(ctx context.Context, account tournament.AccountID, first, last int64) ([]translog.Range, error) {
	return s.logRanges(ctx, keyChains, string(account), first, last)
}

func (s *Store) logRanges(ctx context.Context, c chainTables, id string, first, last int64) ([]translog.Range, error) {
	if !validID(id) {
		return nil, nil
	}
	ranges, err := collect(ctx, s.pool, func(r pgx.CollectableRow) (translog.Range, error) {
		var x translog.Range
		var chain string
		err := r.Scan(&x.FirstIndex, &chain, &x.FirstSeq, &x.Count)
		if c.key {
			x.Account = chain
		} else {
			x.Lobby = chain
		}
		return x, err
	}, `SELECT first_index, `+c.id+`::text, first_seq, count FROM `+c.ranges+`
		WHERE `+c.id+` = $1 AND first_seq <= $3
			AND first_seq >= coalesce((SELECT max(first_seq) FROM `+c.ranges+` WHERE `+c.id+` = $1 AND first_seq <= $2), 0)
		ORDER BY first_seq`, id, first, last)
	if err != nil {
		return nil, fmt.Errorf("log ranges of %s %s: %w", c.id, id, err)
	}
	return ranges, nil
}

// LeafOf finds the leaf of a lobby's event, and whether it is logged.
func LeafOf(ranges []translog.Range, seq int64) (int64, bool) {
	for _, r := range ranges {
		if seq >= r.FirstSeq && seq < r.FirstSeq+r.Count {
			return r.FirstIndex + seq - r.FirstSeq, true
		}
	}
	return 0, false
}

// LogHead is a lobby's newest logged event and its leaf (ok false: none logged yet).
func (s *Store) LogHead(ctx context.Context, lobby tournament.LobbyID) (translog.Head, bool, error) {
	if !validID(string(lobby)) {
		return translog.Head{}, false, nil
	}
	h := translog.Head{Lobby: string(lobby)}
	err := queryRow(ctx, s.pool, `SELECT seq, leaf_index FROM log_heads WHERE lobby_id = $1`, lobby).Scan(&h.Seq, &h.LeafIndex)
	if errors.Is(err, tournament.ErrNotFound) {
		return h, false, nil
	}
	return h, err == nil, err
}

// EventHash returns the chain hash of a lobby's event.
func (s *Store) EventHash(ctx context.Context, lobby tournament.LobbyID, seq int64) ([32]byte, error) {
	return s.chainHash(ctx, lobbyChains, string(lobby), seq)
}

// KeyEventHash returns the chain hash of an account's key event.
func (s *Store) KeyEventHash(ctx context.Context, account tournament.AccountID, seq int64) ([32]byte, error) {
	return s.chainHash(ctx, keyChains, string(account), seq)
}

func (s *Store) chainHash(ctx context.Context, c chainTables, id string, seq int64) ([32]byte, error) {
	var out [32]byte
	if !validID(id) {
		return out, tournament.ErrNotFound
	}
	var hash []byte
	err := queryRow(ctx, s.pool, `SELECT hash FROM `+c.events+` WHERE `+c.id+` = $1 AND seq = $2`, id, seq).Scan(&hash)
	copy(out[:], hash)
	return out, err
}

// LoggedBefore is a lobby's newest event among the log's first size leaves, and its leaf (ok
// false: none).
func (s *Store) LoggedBefore(ctx context.Context, lobby tournament.LobbyID, size int64) (translog.Head, bool, error) {
	if !validID(string(lobby)) || size <= 0 {
		return translog.Head{}, false, nil
	}
	h := translog.Head{Lobby: string(lobby)}
	err := queryRow(ctx, s.pool, `SELECT first_seq + least(count, $2 - first_index) - 1, first_index + least(count, $2 - first_index) - 1
		FROM log_ranges WHERE lobby_id = $1 AND first_index < $2 ORDER BY first_seq DESC LIMIT 1`, lobby, size).Scan(&h.Seq, &h.LeafIndex)
	if errors.Is(err, tournament.ErrNotFound) {
		return h, false, nil
	}
	return h, err == nil, err
}

// LogFigures are how far the log ran behind the events of a period, in milliseconds (for the
// benchmark): from an event's instant to the commit of the batch that integrated it, and to the
// publication of the first checkpoint holding it; and each checkpoint's witness round (from its
// creation to its publication). Only players' actions count: their instant is their commit's
// (within the transaction), while an event a deadline caused is dated at the deadline.
type LogFigures struct {
	Events, Checkpoints          int64
	IntegratedP50, IntegratedP99 float64
	IntegratedMax                int64
	PublishedP50, PublishedP99   float64
	PublishedMax                 int64
	RoundP50, RoundP99           float64
	RoundMax                     int64
	LeavesPerCheckpoint          float64
}

// LogFiguresSince computes LogFigures over the events at or after since (Unix milliseconds).
func (s *Store) LogFiguresSince(ctx context.Context, since int64) (LogFigures, error) {
	var f LogFigures
	err := queryRow(ctx, s.pool, `WITH leaf AS (
			SELECT e.at, r.first_index + (e.seq - r.first_seq) AS idx
			FROM log_ranges r JOIN events e ON e.lobby_id = r.lobby_id AND e.seq >= r.first_seq AND e.seq < r.first_seq + r.count
			WHERE e.at >= $1 AND e.type IN ('player_registered', 'player_left', 'move_committed', 'move_revealed')),
		lag AS (
			SELECT (SELECT c.created_at FROM log_checkpoints c WHERE c.size > leaf.idx ORDER BY c.size LIMIT 1) - leaf.at AS integrated,
				(SELECT c.published_at FROM log_checkpoints c WHERE c.size > leaf.idx AND c.published_at IS NOT NULL
					ORDER BY c.size LIMIT 1) - leaf.at AS published
			FROM leaf)
		SELECT count(*), coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY integrated), 0),
			coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY integrated), 0), coalesce(max(integrated), 0),
			coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY published), 0),
			coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY published), 0), coalesce(max(published), 0)
		FROM lag`, since).Scan(&f.Events, &f.IntegratedP50, &f.IntegratedP99, &f.IntegratedMax, &f.PublishedP50, &f.PublishedP99, &f.PublishedMax)
	if err != nil {
		return f, fmt.Errorf("log figures: %w", err)
	}
	err = queryRow(ctx, s.pool, `SELECT count(*), coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY published_at - created_at), 0),
			coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY published_at - created_at), 0), coalesce(max(published_at - created_at), 0)
		FROM log_checkpoints WHERE size > 0 AND created_at >= $1 AND published_at IS NOT NULL`, since).
		Scan(&f.Checkpoints, &f.RoundP50, &f.RoundP99, &f.RoundMax)
	if err != nil {
		return f, fmt.Errorf("log figures: %w", err)
	}
	if f.Checkpoints > 0 {
		f.LeavesPerCheckpoint = float64(f.Events) / float64(f.Checkpoints)
	}
	return f, nil
}

// String is the figures as a report line.
func (f LogFigures) String() string {
	return fmt.Sprintf("%d actions' events, %d published checkpoints (%.0f such events each); integrated after p50 %.0f ms, p99 %.0f ms, max %d ms; "+
		"published after p50 %.0f ms, p99 %.0f ms, max %d ms; witness round p50 %.0f ms, p99 %.0f ms, max %d ms",
		f.Events, f.Checkpoints, f.LeavesPerCheckpoint, f.IntegratedP50, f.IntegratedP99, f.IntegratedMax,
		f.PublishedP50, f.PublishedP99, f.PublishedMax, f.RoundP50, f.RoundP99, f.RoundMax)
}
