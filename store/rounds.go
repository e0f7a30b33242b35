package store

// The rounds a batch may close, read with its first round trip: a stage change of a small game
// counts the round's reveals, seals its values and names the last player left from them and from
// what the transaction holds, without a round trip in the middle of the batch (each one held up
// every action of the batch, whatever its lobby: about a third of the mixed load's transactions
// carry a stage change). A round of a larger game is counted and sealed by PostgreSQL.

import (
	"maps"
	"slices"
	"strconv"

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

// closingGamesSQL is the FROM item g of the current games of lobbies x (with x.calls the batch's
// calls on each) that the batch may close a stage of: small, in a moves or reveal stage, and
// short of at most as many commitments or reveals as the batch has calls on the lobby.
var closingGamesSQL = `unnest($1::uuid[], $2::int[]) AS x (lobby, calls)
	CROSS JOIN LATERAL (SELECT g.id, g.round FROM games g
		WHERE g.id = (SELECT game_id FROM lobbies WHERE id = x.lobby)
			AND ` + stagesSQL("g.stage", []tournament.Stage{tournament.StageMoves, tournament.StageReveal}) + `
			AND g.active <= ` + strconv.Itoa(heldRoundMax) + `
			AND CASE WHEN g.stage = '` + string(tournament.StageMoves) + `' THEN g.committed ELSE g.revealed END + x.calls >= g.active
		LIMIT 1) AS g`

// queueHeldRounds queues the reads of the rounds that a batch may close: lobbies are the
// batch's lobbies, calls how many of its calls act on each (an expiry counts as many as it takes
// to close anything). Queued after the lobbies' locks, they see what the locks' last holders
// committed.
func queueHeldRounds(b *pgx.Batch, lobbies []tournament.LobbyID, calls []int32) map[tournament.GameID]*heldRound {
	rounds := map[tournament.GameID]*heldRound{}
	if len(lobbies) == 0 {
		return rounds
	}
	ids := make([]string, len(lobbies))
	for i, id := range lobbies {
		ids[i] = string(id)
	}
	held := func(game tournament.GameID, round int) *heldRound {
		h := rounds[game]
		if h == nil {
			h = &heldRound{round: round, moves: map[tournament.AccountID]tournament.RoundMove{}}
			rounds[game] = h
		}
		return h
	}
	queue(b, `SELECT g.id::text, g.round, coalesce(rm.account_id::text, ''), `+moveFields+`
		FROM `+closingGamesSQL+`
		LEFT JOIN LATERAL (SELECT * FROM round_moves m WHERE m.game_id = g.id AND m.round = g.round) AS rm ON true`,
		uuidArray(ids), calls).
		Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var game tournament.GameID
				var round int
				var account tournament.AccountID
				var r moveRow
				if err := rows.Scan(append([]any{&game, &round, &account}, r.dest()...)...); err != nil {
					return err
				}
				h := held(game, round)
				if m, found := r.move(); found {
					m.GameID, m.Round, m.AccountID = game, round, account
					h.moves[account] = m
				}
			}
			return rows.Err()
		})
	queue(b, `SELECT g.id::text, g.round, p.account_id::text, p.ord, p.registered_at
		FROM `+closingGamesSQL+`
		JOIN LATERAL (SELECT * FROM game_players p WHERE p.game_id = g.id AND p.active) AS p ON true`,
		uuidArray(ids), calls).
		Query(func(rows pgx.Rows) error {
			for rows.Next() {
				p := tournament.Player{Active: true}
				var round int
				if err := rows.Scan(&p.GameID, &round, &p.AccountID, &p.Order, &p.RegisteredAt); err != nil {
					return err
				}
				h := held(p.GameID, round)
				h.players = append(h.players, p)
			}
			for _, h := range rounds {
				slices.SortFunc(h.players, func(a, b tournament.Player) int { return a.Order - b.Order })
			}
			return rows.Err()
		})
	return rounds
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
		m := moves[id]
		value := m.Reveal
		if kind == tournament.SealedCommitments {
			value = m.Commitment.String()
		} else if !m.Revealed {
			continue
		}
		if err := fn(id, value); err != nil {
			return true, err
		}
	}
	return true, nil
}
