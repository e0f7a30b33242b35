package store

// The rounds a batch may close, read with its first round trip: a stage change of a small game
// counts the round's reveals, seals its values and names the last player left from them and from
// what the transaction holds, without a round trip in the middle of the batch (each one held up
// every action of the batch, whatever its lobby: about a third of the mixed load's transactions
// carry a stage change). A round of a larger game is counted and sealed by PostgreSQL.

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/tournament"
	"github.com/jackc/pgx/v5"
)

// heldRoundMax is the most active players of a game whose round its batch reads whole.
const heldRoundMax = 64

// heldRound is a game's current round as its batch read it, and the eliminations the
// transaction has applied to the game since.
type heldRound struct {
	round int
	// moves are the round's moves at the batch's start; players are the game's active players
	// then, in registration order.
	moves   map[tournament.AccountID]tournament.RoundMove
	players []tournament.Player
	// eliminated are the eliminations this transaction applied to the game, in order.
	eliminated []elimination
}

type elimination struct {
	round int
	keep  tournament.Keep
}

// closingSQL says that the batch may close a stage of game g, with x.calls calls on its lobby:
// the game is small, in a moves or reveal stage, and short of at most as many commitments or
// reveals as the batch has calls on its lobby.
var closingSQL = stagesSQL("g.stage", []tournament.Stage{tournament.StageMoves, tournament.StageReveal}) + `
	AND g.active <= ` + strconv.Itoa(heldRoundMax) + `
	AND CASE WHEN g.stage = '` + string(tournament.StageMoves) + `' THEN g.committed ELSE g.revealed END + x.calls >= g.active`

// queueGamesOf queues the statement that reads the current games of lobbies, by lobby, and, in
// the same statement, the rounds that a batch may close: calls are its calls on each lobby that
// may close a stage (nil: none, see closingCalls). Queued after the lobbies' locks, it runs once
// they are granted: under READ COMMITTED it sees the rows that the locks' last holders committed.
func queueGamesOf(b *pgx.Batch, lobbies []tournament.LobbyID, calls []int32) (map[tournament.LobbyID]tournament.Game, map[tournament.GameID]*heldRound) {
	games := make(map[tournament.LobbyID]tournament.Game, len(lobbies))
	rounds := map[tournament.GameID]*heldRound{}
	if len(lobbies) == 0 {
		return games, rounds
	}
	ids := make([]string, len(lobbies))
	for i, id := range lobbies {
		ids[i] = string(id)
	}
	// The salt is read here only, for the core: no read of the API's even loads it. Each game is
	// looked up by its key in a lateral subquery: planned once, generically, for a guess of 100
	// lobbies, a join read the games whole. A closing round's moves and active players come as
	// JSON arrays, in this statement rather than statements of their own, which every batch
	// would pay for (the CASE runs their subqueries only for a closing round).
	queue(b, `SELECT `+gameColumns+`, moves_salt,
			CASE WHEN `+closingSQL+` THEN (SELECT coalesce(json_agg(json_build_object('a', m.account_id,
					'c', encode(m.commitment, 'hex'), 'r', m.revealed, 'v', encode(m.reveal, 'hex'), 'm', m.move)), '[]')
				FROM round_moves m WHERE m.game_id = g.id AND m.round = g.round) END,
			CASE WHEN `+closingSQL+` THEN (SELECT coalesce(json_agg(json_build_object('a', p.account_id, 'o', p.ord,
					't', p.registered_at) ORDER BY p.ord), '[]')
				FROM game_players p WHERE p.game_id = g.id AND p.active) END
		FROM unnest($1::uuid[], $2::int[]) AS x (lobby, calls)
		CROSS JOIN LATERAL (SELECT * FROM games WHERE id = (SELECT game_id FROM lobbies WHERE id = x.lobby) LIMIT 1) AS g`,
		uuidArray(ids), calls).
		Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var salt, moves, players []byte
				g, err := scanGame(rows, &salt, &moves, &players)
				if err != nil {
					return err
				}
				copy(g.Salt[:], salt)
				games[g.LobbyID] = g
				if moves != nil {
					h, err := decodeHeldRound(g, moves, players)
					if err != nil {
						return fmt.Errorf("round %d of game %s: %w", g.Round, g.ID, err)
					}
					rounds[g.ID] = h
				}
			}
			return rows.Err()
		})
	return games, rounds
}

// decodeHeldRound decodes a closing round's moves and active players as queueGamesOf reads them.
func decodeHeldRound(g tournament.Game, moves, players []byte) (*heldRound, error) {
	var ms []struct {
		Account    tournament.AccountID `json:"a"`
		Commitment string               `json:"c"`
		Revealed   bool                 `json:"r"`
		Reveal     string               `json:"v"`
		Move       engine.Move          `json:"m"`
	}
	var ps []struct {
		Account      tournament.AccountID `json:"a"`
		Order        int                  `json:"o"`
		RegisteredAt int64                `json:"t"`
	}
	if err := json.Unmarshal(moves, &ms); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(players, &ps); err != nil {
		return nil, err
	}
	h := &heldRound{round: g.Round, moves: make(map[tournament.AccountID]tournament.RoundMove, len(ms))}
	for _, m := range ms {
		move := tournament.RoundMove{GameID: g.ID, Round: g.Round, AccountID: m.Account, Revealed: m.Revealed, Move: m.Move}
		if n, err := hex.Decode(move.Commitment[:], []byte(m.Commitment)); err != nil || n != len(move.Commitment) {
			return nil, fmt.Errorf("commitment of %s: %q", m.Account, m.Commitment)
		}
		reveal, err := hex.DecodeString(m.Reveal)
		if err != nil {
			return nil, fmt.Errorf("reveal of %s: %w", m.Account, err)
		}
		move.Reveal = string(reveal)
		h.moves[m.Account] = move
	}
	for _, p := range ps {
		h.players = append(h.players, tournament.Player{GameID: g.ID, AccountID: p.Account, Order: p.Order,
			RegisteredAt: p.RegisteredAt, Active: true})
	}
	return h, nil
}

// roundMoves returns the moves of a game's round as they are now in this transaction, when it
// knows them all: a round its batch read whole, or one it started (the database has none of its
// moves but those this transaction holds).
func (t *pgTx) roundMoves(game tournament.GameID, round int) (map[tournament.AccountID]tournament.RoundMove, bool) {
	h := t.rounds[game]
	started := t.newRounds[roundKey{game, round}]
	if !started && (h == nil || h.round != round) {
		return nil, false
	}
	moves := map[tournament.AccountID]tournament.RoundMove{}
	if !started {
		maps.Copy(moves, h.moves)
	}
	for k, m := range t.moves {
		if k.game == game && k.round == round && m.AccountID != "" {
			moves[k.account] = m
		}
	}
	return moves, true
}

// keeps reports whether a player is still in game after the eliminations this transaction
// applied to it, and false when it cannot tell (a round whose moves it does not hold).
func (t *pgTx) keeps(h *heldRound, game tournament.GameID, player tournament.AccountID) (kept, known bool) {
	for _, e := range h.eliminated {
		moves, ok := t.roundMoves(game, e.round)
		if !ok {
			return false, false
		}
		m, moved := moves[player]
		if !e.keep.Keeps(m, moved) {
			return false, true
		}
	}
	return true, true
}

// heldFirstActive is FirstActive from the round the batch read: the first player, in
// registration order, of those active then that every elimination since kept.
func (t *pgTx) heldFirstActive(game tournament.GameID) (tournament.AccountID, bool, error) {
	h := t.rounds[game]
	if h == nil {
		return "", false, nil
	}
	for _, p := range h.players {
		kept, known := t.keeps(h, game, p.AccountID)
		if !known {
			return "", false, nil
		}
		if kept {
			return p.AccountID, true, nil
		}
	}
	return "", true, tournament.ErrNotFound
}

// heldEliminate applies an elimination to what the transaction holds of the game: recorded on
// its held round, and applied to the registrations it holds when it knows the round's moves
// (else they are dropped, to be read again). It returns whether the held registrations are
// current.
func (t *pgTx) heldEliminate(game tournament.GameID, round int, keep tournament.Keep) bool {
	if h := t.rounds[game]; h != nil {
		h.eliminated = append(h.eliminated, elimination{round, keep})
	}
	moves, ok := t.roundMoves(game, round)
	for k, p := range t.players {
		if k.game != game || p.AccountID == "" || !p.Active {
			continue
		}
		if !ok {
			delete(t.players, k)
			continue
		}
		m, moved := moves[k.account]
		if !keep.Keeps(m, moved) {
			p.Active, p.EliminatedRound = false, round
			t.players[k] = p
		}
	}
	return ok
}

// heldSealedValues calls fn with the round's sealed values, in bytewise order of account id (a
// uuid's lower-case text sorts as its bytes), when the transaction knows the round's moves.
func (t *pgTx) heldSealedValues(game tournament.GameID, round int, kind tournament.Sealed, fn func(tournament.AccountID, string) error) (bool, error) {
	moves, ok := t.roundMoves(game, round)
	if !ok {
		return false, nil
	}
	for _, id := range slices.Sorted(maps.Keys(moves)) {
		value, ok := moves[id].SealedValue(kind)
		if !ok {
			continue
		}
		if err := fn(id, value); err != nil {
			return true, err
		}
	}
	return true, nil
}
