package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/tournament"
	"github.com/jackc/pgx/v5"
)

// pgTx is tournament.Tx over one Postgres transaction. Apart from the set effects, every method
// is one statement on the lobby, the game header or the acting player's own rows, so an action
// costs the same in a lobby of 2 or 100,000.
type pgTx struct {
	s  *Store
	tx *txConn
	// heads are the chain heads of the lobbies this transaction has locked, so that Append needs
	// no read.
	heads map[tournament.LobbyID]tournament.LoggedEvent
	// deadlines are the games' deadlines as last read or written, to tell the clock workers only
	// when one changes.
	deadlines map[tournament.GameID]int64
	// locked holds the lobbies this transaction has locked and games holds the games it has
	// read or written, as they are now: a lobby locked again (to render a response after an
	// operation) costs no statement.
	locked map[tournament.LobbyID]tournament.Lobby
	games  map[tournament.GameID]tournament.Game
	// players and moves hold the rows of the acting players this transaction has read or
	// written, for the same reason; a zero row (no account id) records that there is none.
	players map[playerKey]tournament.Player
	moves   map[moveKey]tournament.RoundMove
	// leaves holds the acting players' leaves of their games (Leaves), read or counted.
	leaves map[playerKey]int
	// newGames are the games this transaction opened, and newRounds the rounds it started: the
	// database has none of their registrations, leaves or moves but those this transaction holds,
	// so a read of one it does not hold finds none without asking (a round resolved mid-batch
	// made the resolving action's answer read its move in the next round, and a game finished
	// its registration in the next game).
	newGames  map[tournament.GameID]bool
	newRounds map[roundKey]bool
	// rounds are the rounds of small games that the batch may close, read whole with its first
	// round trip (see rounds.go).
	rounds map[tournament.GameID]*heldRound
	// accounts are the accounts this transaction has locked, as they are now.
	accounts map[tournament.AccountID]tournament.Account
	// keys are the actors' key states as their batch read them, by account and signing key.
	keys map[signerKey]tournament.KeyState
	// ended are the games this transaction ended, to settle once it has committed.
	ended []tournament.GameID
	// held are the rows written and not yet sent (see writeHeld).
	held heldWrites
	// genericPlans reports that the transaction forces generic plans (a committer's does), which
	// the statements over a whole round or game set aside (see withCustomPlans).
	genericPlans bool
}

// forceGenericPlans makes PostgreSQL plan each prepared statement once for the rest of the
// transaction (see applyCalls), by index. A generic plan is made once per connection, from the
// statistics of that moment, and kept: made while a table is small or not yet analyzed (a new
// deployment's first minutes), it joins the batch's rows to the whole table by a hash over a
// sequential scan, and keeps doing so as the table grows (2,253 rows of round_moves read for one
// reveal within a minute of play). Without sequential scans and hash joins the planner finds
// each row by its key, whatever the statistics said when it planned.
const forceGenericPlans = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true),
	set_config('enable_seqscan', 'off', true), set_config('enable_hashjoin', 'off', true)`

// customPlans sets the settings forceGenericPlans changed back to PostgreSQL's defaults (reading
// the session's own from pg_settings costs a millisecond).
const customPlans = `SELECT set_config('plan_cache_mode', 'auto', true),
	set_config('enable_seqscan', 'on', true), set_config('enable_hashjoin', 'on', true)`

// withCustomPlans queues, with queue, statements over a whole round or game (a stage change's
// set effects) under PostgreSQL's own choice of plan; generic plans are forced again before the
// next statement of another kind (so a stage change's consecutive statements over its round
// share one setting aside: each paid two statements before, 0.8 per action in the mixed load). A generic
// plan cannot know the game's size: where one game of 100,000 players dominates the tables, the
// generic plans of these statements read game_players and round_moves whole (20-87 ms each,
// EXPLAIN ANALYZE), where a plan for the game's own id uses its index.
func (t *pgTx) withCustomPlans(queue func() error) error {
	if !t.genericPlans {
		return queue()
	}
	if t.tx.restore == "" {
		t.tx.later(customPlans)
	}
	t.tx.restore = "" // set aside still, from the statement before
	err := queue()
	t.tx.restore = forceGenericPlans
	return err
}

type playerKey struct {
	game    tournament.GameID
	account tournament.AccountID
}

type moveKey struct {
	game    tournament.GameID
	round   int
	account tournament.AccountID
}

type roundKey struct {
	game  tournament.GameID
	round int
}

func (s *Store) newTx(c *txConn) *pgTx {
	return &pgTx{
		s: s, tx: c,
		heads:     make(map[tournament.LobbyID]tournament.LoggedEvent),
		deadlines: make(map[tournament.GameID]int64),
		locked:    make(map[tournament.LobbyID]tournament.Lobby),
		games:     make(map[tournament.GameID]tournament.Game),
		players:   make(map[playerKey]tournament.Player),
		moves:     make(map[moveKey]tournament.RoundMove),
		leaves:    make(map[playerKey]int),
		newGames:  make(map[tournament.GameID]bool),
		newRounds: make(map[roundKey]bool),
		accounts:  make(map[tournament.AccountID]tournament.Account),
		keys:      make(map[signerKey]tournament.KeyState),
	}
}

var _ tournament.Tx = (*pgTx)(nil)

const lobbyColumns = `id::text, name, closed, config, next_config, coalesce(game_id::text, ''), games, created_at`

func scanLobby(r pgx.Row, extra ...any) (tournament.Lobby, error) {
	var l tournament.Lobby
	dest := append([]any{&l.ID, &l.Name, &l.Closed, &l.Config, &l.NextConfig, &l.GameID, &l.Games, &l.CreatedAt}, extra...)
	return l, r.Scan(dest...)
}

const gameColumns = `id::text, lobby_id::text, number, config, ruleset_hash, stage, round,
	stage_started_at, deadline, extensions, joined, players, active, committed, revealed, escrow,
	coalesce(winner::text, ''), payout, stop_reason, created_at, ended_at`

func scanGame(r pgx.Row, extra ...any) (tournament.Game, error) {
	var g tournament.Game
	err := r.Scan(append(gameDest(&g), extra...)...)
	return g, err
}

// gameDest is where gameColumns scan to.
func gameDest(g *tournament.Game) []any {
	return []any{&g.ID, &g.LobbyID, &g.Number, &g.Config, &g.RulesetHash, &g.Stage, &g.Round,
		&g.StageStartedAt, &g.Deadline, &g.Extensions, &g.Joined, &g.Players, &g.Active, &g.Committed,
		&g.Revealed, &g.Escrow, &g.Winner, &g.Payout, &g.StopReason, &g.CreatedAt, &g.EndedAt}
}

// LockLobby locks the lobby row, then reads its game, in one round trip (unless this
// transaction holds both already).
func (t *pgTx) LockLobby(ctx context.Context, id tournament.LobbyID) (tournament.Lobby, tournament.Game, error) {
	if l, ok := t.locked[id]; ok {
		if g, ok := t.games[l.GameID]; ok {
			return l.Clone(), g, nil
		}
	}
	if !validID(string(id)) {
		return tournament.Lobby{}, tournament.Game{}, tournament.ErrNotFound
	}
	var b pgx.Batch
	read := queueLobbyLock(&b, id)
	games, _ := queueGamesOf(&b, []tournament.LobbyID{id}, nil)
	if err := t.tx.send(ctx, &b); err != nil {
		return tournament.Lobby{}, tournament.Game{}, err
	}
	if !read.foundLobby {
		return tournament.Lobby{}, tournament.Game{}, tournament.ErrNotFound
	}
	l, g := t.holdLock(read, games[id])
	return l, g, nil
}

// lockRead receives what queueLobbyLock's statement read.
type lockRead struct {
	lobby      tournament.Lobby
	head       tournament.LoggedEvent
	foundLobby bool
}

// queueLobbyLock queues the statement that locks a lobby's row and reads it. It names one lobby:
// once lobbies are sharded, a lock of several at once would span shards.
func queueLobbyLock(b *pgx.Batch, id tournament.LobbyID) *lockRead {
	read := &lockRead{}
	queue(b, `SELECT `+lobbyColumns+`, last_seq, last_hash FROM lobbies WHERE id = $1 FOR UPDATE`, id).
		QueryRow(func(r pgx.Row) error {
			var hash []byte
			l, err := scanLobby(row{r}, &read.head.Seq, &hash)
			if errors.Is(err, tournament.ErrNotFound) {
				return nil
			}
			copy(read.head.Hash[:], hash)
			read.lobby, read.foundLobby = l, err == nil
			return err
		})
	return read
}

// holdLock records a lobby locked by queueLobbyLock's statement, and its game g, as held by this
// transaction.
func (t *pgTx) holdLock(read *lockRead, g tournament.Game) (tournament.Lobby, tournament.Game) {
	l := read.lobby
	t.heads[l.ID] = read.head
	t.locked[l.ID] = l.Clone()
	if g.ID != "" {
		t.deadlines[g.ID] = g.Deadline
		t.games[g.ID] = g
	}
	return l, g
}

func (t *pgTx) InsertLobby(ctx context.Context, l tournament.Lobby) error {
	// Sent before the held rows, which refer to it; its later changes are held.
	t.tx.later(`INSERT INTO lobbies (id, name, closed, config, next_config, game_id, games, created_at)
		VALUES ($1, $2, $3, $4, $5, NULL, $6, $7)`,
		l.ID, l.Name, l.Closed, l.Config, l.NextConfig, l.Games, l.CreatedAt)
	// A new lobby is as good as locked: nobody else sees it before the commit.
	t.heads[l.ID] = tournament.LoggedEvent{}
	t.locked[l.ID] = l.Clone()
	if l.GameID != "" {
		return t.UpdateLobby(ctx, l)
	}
	return nil
}

func (t *pgTx) UpdateLobby(ctx context.Context, l tournament.Lobby) error {
	// The lobby is locked by this transaction, so the row is there.
	row := l.Clone()
	t.held.lobby(l.ID).row = &row
	t.locked[l.ID] = l.Clone()
	return nil
}

func (t *pgTx) InsertGame(ctx context.Context, g tournament.Game) error {
	t.held.holdGame(g, true)
	t.games[g.ID] = g
	t.newGames[g.ID] = true
	return nil
}

func (t *pgTx) UpdateGame(ctx context.Context, g tournament.Game) error {
	old, seen := t.games[g.ID]
	if !g.Stage.Open() && (!seen || old.Stage.Open()) {
		t.ended = append(t.ended, g.ID)
	}
	if seen && g.Round > old.Round {
		// A round starts once, under the lobby's lock that this transaction holds.
		t.newRounds[roundKey{g.ID, g.Round}] = true
	}
	t.held.holdGame(g, false)
	t.games[g.ID] = g
	return nil
}

// ClockChannel is notified, on commit, whenever a transaction sets a deadline, so that clock
// workers sleeping until a later one wake and look again (see ListenDeadlines).
const ClockChannel = "rps_clock"

// deadlineNote notifies ClockChannel, with the earliest, of the deadlines the held games set: a
// worker sleeping until an earlier one need not wake.
func (t *pgTx) deadlineNote(b *setStatement) {
	var earliest int64
	note := func(g tournament.Game) {
		if old, seen := t.deadlines[g.ID]; (seen && old == g.Deadline) || (!seen && g.Deadline == 0) {
			return
		}
		t.deadlines[g.ID] = g.Deadline
		if g.Deadline != 0 && (earliest == 0 || g.Deadline < earliest) {
			earliest = g.Deadline
		}
	}
	for _, g := range t.held.newGames {
		note(g)
	}
	for _, g := range t.held.games {
		note(g)
	}
	if earliest != 0 {
		b.notify(ClockChannel, strconv.FormatInt(earliest, 10))
	}
}

func (t *pgTx) Account(ctx context.Context, id tournament.AccountID) (tournament.Account, error) {
	if !validID(string(id)) {
		return tournament.Account{}, tournament.ErrNotFound
	}
	// The actors' accounts come with their batch's first read (see callRead.hold).
	if a, ok := t.accounts[id]; ok {
		return a, nil
	}
	if t.held.balances[id] {
		// A held posting changes the balance: written first, so that the read includes it.
		if err := t.writeHeld(); err != nil {
			return tournament.Account{}, err
		}
	}
	// Locked, so that a transfer in another transaction cannot spend the balance between this
	// read and the transfer that follows it.
	a, err := scanAccount(queryRow(ctx, t.tx,
		`SELECT `+accountColumns+` FROM accounts WHERE id = $1 FOR NO KEY UPDATE`, id))
	if err == nil {
		t.accounts[id] = a
	}
	return a, err
}

// SaveRuleset always writes (a no-op on conflict): caching "saved" would be wrong if the
// transaction that saved it rolled back. It is sent before the held rows, whose games refer to it.
func (t *pgTx) SaveRuleset(ctx context.Context, rs *engine.Ruleset) error {
	t.tx.later(`INSERT INTO rulesets (hash, id, canonical) VALUES ($1, $2, $3)
		ON CONFLICT (hash) DO NOTHING`, rs.HashHex(), rs.ID(), rs.Canonical())
	return nil
}

func (t *pgTx) Ruleset(ctx context.Context, hash string) (*engine.Ruleset, error) {
	return t.s.ruleset(ctx, t.tx, hash)
}

// ruleset loads a ruleset by content hash, once per process: the hash names immutable content.
func (s *Store) ruleset(ctx context.Context, q querier, hash string) (*engine.Ruleset, error) {
	if rs, ok := s.rulesets.Load(hash); ok {
		return rs.(*engine.Ruleset), nil
	}
	var id string
	var canonical []byte
	err := queryRow(ctx, q, `SELECT id, canonical FROM rulesets WHERE hash = $1`, hash).Scan(&id, &canonical)
	if err != nil {
		return nil, err
	}
	rs, err := engine.LoadRuleset(id, canonical)
	if err != nil {
		return nil, fmt.Errorf("load ruleset %s: %w", hash, err)
	}
	if rs.HashHex() != hash {
		return nil, fmt.Errorf("ruleset %s: stored content hashes to %s", hash, rs.HashHex())
	}
	s.rulesets.Store(hash, rs)
	return rs, nil
}

const playerColumns = `game_id::text, account_id::text, ord, registered_at, active, eliminated_round`

func scanPlayer(r pgx.Row) (tournament.Player, error) {
	var p tournament.Player
	err := r.Scan(&p.GameID, &p.AccountID, &p.Order, &p.RegisteredAt, &p.Active, &p.EliminatedRound)
	return p, err
}

func (t *pgTx) Player(ctx context.Context, game tournament.GameID, account tournament.AccountID) (tournament.Player, error) {
	if !validID(string(account)) {
		return tournament.Player{}, tournament.ErrNotFound
	}
	key := playerKey{game, account}
	if p, ok := t.players[key]; ok {
		if p.AccountID == "" {
			return p, tournament.ErrNotFound
		}
		return p, nil
	}
	if t.newGames[game] {
		return tournament.Player{}, tournament.ErrNotFound
	}
	p, err := scanPlayer(queryRow(ctx, t.tx,
		`SELECT `+playerColumns+` FROM game_players WHERE game_id = $1 AND account_id = $2`, game, account))
	if err == nil {
		t.players[key] = p
	}
	return p, err
}

func (t *pgTx) InsertPlayer(ctx context.Context, p tournament.Player) error {
	if !p.Active || p.EliminatedRound != 0 {
		return fmt.Errorf("insert player %s: a registration starts active", p.AccountID)
	}
	t.held.players = append(t.held.players, p)
	t.players[playerKey{p.GameID, p.AccountID}] = p
	return nil
}

// DeletePlayer deletes at once (the held rows first, the registration among them): a player
// leaving is rare, and a registration held after it must be written after it.
func (t *pgTx) DeletePlayer(ctx context.Context, game tournament.GameID, account tournament.AccountID) error {
	if err := t.writeHeld(); err != nil {
		return err
	}
	t.players[playerKey{game, account}] = tournament.Player{} // none now
	return execOne(ctx, t.tx, `DELETE FROM game_players WHERE game_id = $1 AND account_id = $2`, game, account)
}

func (t *pgTx) Leaves(ctx context.Context, game tournament.GameID, account tournament.AccountID) (int, error) {
	if !validID(string(account)) {
		return 0, nil
	}
	key := playerKey{game, account}
	if n, ok := t.leaves[key]; ok {
		return n, nil
	}
	if t.newGames[game] {
		return 0, nil
	}
	var n int
	err := queryRow(ctx, t.tx, `SELECT coalesce((SELECT leaves FROM game_leaves WHERE game_id = $1 AND account_id = $2), 0)`,
		game, account).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("read leaves: %w", err)
	}
	t.leaves[key] = n
	return n, nil
}

// CountLeave writes at once, as DeletePlayer does before it: a player leaving is rare.
func (t *pgTx) CountLeave(ctx context.Context, game tournament.GameID, account tournament.AccountID) error {
	var n int
	err := queryRow(ctx, t.tx, `INSERT INTO game_leaves (game_id, account_id, leaves) VALUES ($1, $2, 1)
		ON CONFLICT (game_id, account_id) DO UPDATE SET leaves = game_leaves.leaves + 1 RETURNING leaves`,
		game, account).Scan(&n)
	if err != nil {
		return fmt.Errorf("count leave: %w", err)
	}
	t.leaves[playerKey{game, account}] = n
	return nil
}

// moveFields are the columns of a round_moves row aliased rm that moveRow receives, after its
// key. NULLs (an unrevealed move, or no row at all through a LEFT JOIN) read as zero values.
const moveFields = `rm.account_id IS NOT NULL, rm.commitment, coalesce(rm.committed_at, 0),
	coalesce(rm.revealed, false), coalesce(rm.reveal, ''), coalesce(rm.move, 0), coalesce(rm.revealed_at, 0),
	rm.commit_signature, rm.reveal_signature`

// moveColumns read a whole round_moves row aliased rm, key first.
const moveColumns = `rm.game_id::text, rm.round, rm.account_id::text, ` + moveFields

// moveRow is the one scanner of round_moves rows: dest receives moveFields, and move returns the
// move read (false when a LEFT JOIN found none).
type moveRow struct {
	m                  tournament.RoundMove
	found              bool
	commitment, reveal []byte
}

func (r *moveRow) dest() []any {
	return []any{&r.found, &r.commitment, &r.m.CommittedAt, &r.m.Revealed, &r.reveal, &r.m.Move, &r.m.RevealedAt,
		&r.m.CommitSignature, &r.m.RevealSignature}
}

func (r *moveRow) move() (tournament.RoundMove, bool) {
	copy(r.m.Commitment[:], r.commitment)
	r.m.Reveal = string(r.reveal)
	return r.m, r.found
}

func scanMove(row pgx.Row) (tournament.RoundMove, error) {
	var r moveRow
	if err := row.Scan(append([]any{&r.m.GameID, &r.m.Round, &r.m.AccountID}, r.dest()...)...); err != nil {
		return r.m, err
	}
	m, _ := r.move()
	return m, nil
}

func (t *pgTx) RoundMove(ctx context.Context, game tournament.GameID, round int, account tournament.AccountID) (tournament.RoundMove, error) {
	if !validID(string(account)) {
		return tournament.RoundMove{}, tournament.ErrNotFound
	}
	key := moveKey{game, round, account}
	if m, ok := t.moves[key]; ok {
		if m.AccountID == "" {
			return m, tournament.ErrNotFound
		}
		return m, nil
	}
	if t.newGames[game] || t.newRounds[roundKey{game, round}] {
		return tournament.RoundMove{}, tournament.ErrNotFound
	}
	m, err := scanMove(queryRow(ctx, t.tx,
		`SELECT `+moveColumns+` FROM round_moves rm WHERE game_id = $1 AND round = $2 AND account_id = $3`,
		game, round, account))
	if err == nil {
		t.moves[key] = m
	}
	return m, err
}

func (t *pgTx) InsertMove(ctx context.Context, m tournament.RoundMove) error {
	if m.Revealed {
		return fmt.Errorf("insert move of %s: a move is inserted by its commitment", m.AccountID)
	}
	t.held.moves = append(t.held.moves, m)
	t.moves[moveKey{m.GameID, m.Round, m.AccountID}] = m
	return nil
}

// UpdateMove stores a reveal.
func (t *pgTx) UpdateMove(ctx context.Context, m tournament.RoundMove) error {
	if !m.Revealed {
		return fmt.Errorf("update move of %s: only a reveal updates a move", m.AccountID)
	}
	if t.held.pendingMove(m) {
		// Its insert is held: written first (never in one batch: the commitments are written
		// before the reveal stage opens).
		if err := t.writeHeld(); err != nil {
			return err
		}
	}
	t.held.reveals = append(t.held.reveals, m)
	t.moves[moveKey{m.GameID, m.Round, m.AccountID}] = m
	return nil
}

// eliminateSQL puts out every active player of a game who has no round_moves row in the round
// matching the condition appended to it.
const eliminateSQL = `UPDATE game_players p SET active = false, eliminated_round = $2
	WHERE p.game_id = $1 AND p.active AND NOT EXISTS (
		SELECT 1 FROM round_moves m
		WHERE m.game_id = p.game_id AND m.round = $2 AND m.account_id = p.account_id`

// eliminateStatement is the statement of an elimination: tournament.Keep.Keeps in SQL
// (TestEliminateIsKeeps holds the two together).
func eliminateStatement(game tournament.GameID, round int, keep tournament.Keep) (string, []any, error) {
	switch keep.Kind {
	case tournament.KeepCommitted:
		return eliminateSQL + `)`, []any{game, round}, nil
	case tournament.KeepRevealed:
		return eliminateSQL + ` AND m.revealed)`, []any{game, round}, nil
	case tournament.KeepMoves:
		return eliminateSQL + ` AND m.revealed AND (1 << m.move) & $3 <> 0)`, []any{game, round, int32(keep.Moves)}, nil
	}
	return "", nil, fmt.Errorf("eliminate: unknown keep kind %q", keep.Kind)
}

func (t *pgTx) Eliminate(ctx context.Context, game tournament.GameID, round int, keep tournament.Keep) error {
	sql, args, err := eliminateStatement(game, round, keep)
	if err != nil {
		return err
	}
	if err := t.writeHeld(); err != nil {
		return err
	}
	// The set effect changes the registrations of this game that the transaction may hold (the
	// other lobbies' in the batch stay held).
	t.heldEliminate(game, round, keep)
	return t.withCustomPlans(func() error {
		t.tx.later(sql, args...)
		return nil
	})
}

func (t *pgTx) FirstActive(ctx context.Context, game tournament.GameID) (tournament.AccountID, error) {
	if id, held, err := t.heldFirstActive(game); held {
		return id, err
	}
	if err := t.writeHeld(); err != nil {
		return "", err
	}
	var id tournament.AccountID
	err := t.withCustomPlans(func() error {
		return queryRow(ctx, t.tx, `SELECT account_id::text FROM game_players
			WHERE game_id = $1 AND active ORDER BY ord LIMIT 1`, game).Scan(&id)
	})
	return id, err
}

func (t *pgTx) RevealCounts(ctx context.Context, game tournament.GameID, round int) (engine.Counts, error) {
	var counts engine.Counts
	if moves, held := t.roundMoves(game, round); held {
		for _, m := range moves {
			if !m.Revealed {
				continue
			}
			if int(m.Move) >= len(counts) {
				return counts, fmt.Errorf("round %d: move %d out of range", round, m.Move)
			}
			counts[m.Move]++
		}
		return counts, nil
	}
	if err := t.writeHeld(); err != nil {
		return counts, err
	}
	err := t.withCustomPlans(func() error {
		rows, err := t.tx.Query(ctx, `SELECT move, count(*) FROM round_moves
			WHERE game_id = $1 AND round = $2 AND revealed GROUP BY move`, game, round)
		if err != nil {
			return err
		}
		var move int16
		var n int64
		_, err = pgx.ForEachRow(rows, []any{&move, &n}, func() error {
			if move < 0 || int(move) >= len(counts) {
				return fmt.Errorf("round %d: move %d out of range", round, move)
			}
			counts[move] = n
			return nil
		})
		return err
	})
	return counts, mapErr(err)
}

// SealedValues streams the values in primary-key order: a uuid sorts as its 16 bytes, which is
// the bytewise order of its lower-case hex text, so no sort is needed. fn must not use the
// transaction, whose connection is busy with the stream.
func (t *pgTx) SealedValues(ctx context.Context, game tournament.GameID, round int, kind tournament.Sealed, fn func(tournament.AccountID, string) error) error {
	var sql string
	switch kind {
	case tournament.SealedCommitments:
		sql = `SELECT account_id::text, encode(commitment, 'hex') FROM round_moves
			WHERE game_id = $1 AND round = $2 ORDER BY account_id`
	case tournament.SealedReveals:
		sql = `SELECT account_id::text, reveal FROM round_moves
			WHERE game_id = $1 AND round = $2 AND revealed ORDER BY account_id`
	default:
		return fmt.Errorf("sealed values: unknown kind %q", kind)
	}
	if held, err := t.heldSealedValues(game, round, kind, fn); held {
		return err
	}
	if err := t.writeHeld(); err != nil {
		return err
	}
	return mapErr(t.withCustomPlans(func() error {
		rows, err := t.tx.Query(ctx, sql, game, round)
		if err != nil {
			return err
		}
		var player tournament.AccountID
		var value []byte
		_, err = pgx.ForEachRow(rows, []any{&player, &value}, func() error {
			return fn(player, string(value))
		})
		return err
	}))
}

// ShiftDeadlines locks the lobbies with an open deadline first, in id order, so that it takes
// locks in the order every other writer does (lobby, then game) and the chain heads for Append.
func (t *pgTx) ShiftDeadlines(ctx context.Context, gap int64) ([]tournament.LobbyID, error) {
	if err := t.writeHeld(); err != nil {
		return nil, err
	}
	rows, err := t.tx.Query(ctx, `SELECT l.id::text, l.last_seq, l.last_hash
		FROM lobbies l JOIN games g ON l.id = g.lobby_id AND l.game_id = g.id
		WHERE `+openDeadlineSQL+`
		ORDER BY l.id FOR UPDATE OF l`)
	if err != nil {
		return nil, mapErr(err)
	}
	var id tournament.LobbyID
	var head tournament.LoggedEvent
	var hash []byte
	_, err = pgx.ForEachRow(rows, []any{&id, &head.Seq, &hash}, func() error {
		copy(head.Hash[:], hash)
		t.heads[id] = head
		return nil
	})
	if err != nil {
		return nil, mapErr(err)
	}
	clear(t.games) // the games held are stale now; they are read again if needed
	lobbies, err := collect(ctx, t.tx, pgx.RowTo[tournament.LobbyID], `WITH shifted AS (
			UPDATE games g SET stage_started_at = g.stage_started_at + $1, deadline = g.deadline + $1
			WHERE `+openDeadlineSQL+`
			RETURNING g.lobby_id)
		SELECT DISTINCT lobby_id::text FROM shifted ORDER BY 1`, gap)
	if err != nil {
		return nil, err
	}
	if len(lobbies) > 0 {
		if _, err := exec(ctx, t.tx, `SELECT pg_notify($1, '')`, ClockChannel); err != nil {
			return nil, err
		}
	}
	// Any game read earlier in this transaction now has another deadline.
	clear(t.deadlines)
	return lobbies, nil
}
