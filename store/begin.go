package store

// The read that begins a batch: for each of its calls, in one statement, the instant (with the
// newest heartbeat, see errOutage), the result stored under its key, its actor's account, and the
// actor's registration and move in the lobby's current game and round.

import (
	"bytes"

	"github.com/commitreveal/rps/tournament"
	"github.com/jackc/pgx/v5"
)

// callRead is what queueCallReads reads for one call.
type callRead struct {
	now int64
	// newestBeat is the newest heartbeat of any replica (see errOutage).
	newestBeat *int64
	// The result stored under the call's key, if any, and whether it has expired (storing a new
	// one deletes it first).
	hash    []byte
	status  *int
	stored  []byte
	version *int
	expired bool
	// The actor's account (found false: none, or no actor).
	account tournament.Account
	found   bool
	// The actor's registration in the lobby's current game and move in its current round.
	player    tournament.Player
	hasPlayer bool
	move      moveRow
	// leaves counts the actor's leaves of the lobby's current game.
	leaves int
	// keys is the state of the actor's keys, the signer's included.
	keys tournament.KeyState
}

// callKey is a call's actor, key and lobby, as queueCallReads reads them.
type callKey struct {
	actor tournament.AccountID
	key   *IdempotencyKey
	// lobby is the lobby the call acts on ("": none), locked by its batch before this read.
	lobby tournament.LobbyID
	// signer is the key that signed the call ("": none).
	signer string
}

// queueCallReads queues the statement that begins calls: one row each, in order, with the
// actor's registration and move in the current game of the call's lobby ("" or no such lobby:
// none is read). Queued after the lobbies' locks, it sees what the locks' last holders committed,
// so an instant never goes back in a lobby's log and a duplicate that held the lock is seen. The instant is the database's,
// unless now is set, which decides too whether a stored result has expired.
//
// The actor's registration and move are looked up by their whole primary key (a lateral subquery
// per call, which Postgres cannot turn into a join): with "account_id = ANY(...)", a round that
// grew since the table's statistics were taken was scanned whole (9 ms a batch at 100,000
// players, EXPLAIN ANALYZE in the bench's big lobby).
func queueCallReads(b *pgx.Batch, calls []callKey, now *int64) []*callRead {
	n := len(calls)
	actors, keyAccounts, methods, routes, names, ords := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]int32, n)
	lobbies, signers := make([]string, n), make([]string, n)
	for i, c := range calls {
		ords[i] = int32(i)
		lobbies[i], signers[i] = string(c.lobby), c.signer
		if validID(string(c.actor)) {
			actors[i] = string(c.actor)
		}
		if k := c.key; k != nil && validID(string(k.AccountID)) {
			// An empty key never matches: a stored key is at least one character.
			keyAccounts[i], methods[i], routes[i], names[i] = string(k.AccountID), k.Method, k.Route, k.Key
		}
	}
	reads := make([]*callRead, n)
	for i := range reads {
		reads[i] = &callRead{}
	}
	var a sqlArgs
	nowArg, ttlArg := a.arg(now), a.arg(IdempotencyTTL.Milliseconds())
	from := a.rows("c", n, col("actor", "text", actors), col("key_account", "text", keyAccounts), col("method", "text", methods),
		col("route", "text", routes), col("key", "text", names), col("lobby", "text", lobbies), col("signer", "text", signers), col("ord", "int", ords))
	queue(b, `SELECT `+clockSQL+`, `+newestBeatSQL+`,
			k.request_hash, k.status, k.response, k.result_version,
			coalesce(k.created_at < coalesce(`+nowArg+`::bigint, `+clockSQL+`) - `+ttlArg+`::bigint, false),
			a.id IS NOT NULL, coalesce(a.id::text, ''), coalesce(a.name, ''), coalesce(a.role, ''), coalesce(a.balance, 0),
			coalesce(a.created_at, 0), coalesce(a.disabled_at, 0),
			p.account_id IS NOT NULL, coalesce(p.ord, 0), coalesce(p.registered_at, 0), coalesce(p.active, false),
			coalesce(p.eliminated_round, 0),
			`+moveFields+`,
			coalesce((SELECT gl.leaves FROM game_leaves gl
				WHERE gl.game_id = (SELECT game_id FROM lobbies WHERE id = nullif(c.lobby, '')::uuid) AND gl.account_id = a.id), 0),
			coalesce(a.active_keys, 0), coalesce(a.key_seq, 0) > 0,
			coalesce((SELECT k.retired_seq IS NULL FROM account_keys k WHERE k.key_id = c.signer AND k.account_id = a.id), false)
		FROM `+from+`
		-- Every row looked up by its key in a lateral subquery, never joined: the committer plans
		-- this statement once, generically, guessing 100 calls, and a join planned for 100 read
		-- the accounts and the stored results whole (1.3 ms a batch in the mixed load).
		LEFT JOIN LATERAL (SELECT * FROM accounts WHERE id = nullif(c.actor, '')::uuid LIMIT 1) AS a ON true
		LEFT JOIN LATERAL (SELECT * FROM idempotency_keys WHERE account_id = nullif(c.key_account, '')::uuid
			AND method = c.method AND route = c.route AND key = c.key LIMIT 1) AS k ON true
		LEFT JOIN LATERAL (SELECT * FROM game_players p
			WHERE p.game_id = (SELECT game_id FROM lobbies WHERE id = nullif(c.lobby, '')::uuid) AND p.account_id = a.id LIMIT 1) AS p ON true
		-- The game and its round as scalar subqueries: a join with games scanned the whole round.
		LEFT JOIN LATERAL (SELECT * FROM round_moves m
			WHERE m.game_id = (SELECT game_id FROM lobbies WHERE id = nullif(c.lobby, '')::uuid)
				AND m.round = (SELECT g.round FROM games g JOIN lobbies l ON g.id = l.game_id WHERE l.id = nullif(c.lobby, '')::uuid)
				AND m.account_id = a.id LIMIT 1) AS rm ON true
		ORDER BY c.ord`, a.args...).
		Query(func(rows pgx.Rows) error {
			i := 0
			for rows.Next() {
				r := reads[i]
				a, p := &r.account, &r.player
				dest := append([]any{&r.now, &r.newestBeat, &r.hash, &r.status, &r.stored, &r.version, &r.expired,
					&r.found, &a.ID, &a.Name, &a.Role, &a.Balance, &a.CreatedAt, &a.DisabledAt,
					&r.hasPlayer, &p.Order, &p.RegisteredAt, &p.Active, &p.EliminatedRound}, r.move.dest()...)
				dest = append(dest, &r.leaves, &r.keys.Active, &r.keys.Ever, &r.keys.SignerActive)
				if err := rows.Scan(dest...); err != nil {
					return err
				}
				i++
			}
			return rows.Err()
		})
	return reads
}

// replay returns ErrAccountDisabled for a disabled actor, else the answer stored under key that
// has not expired, if any, or ErrIdempotencyConflict when it was stored for another request.
func (r *callRead) replay(key *IdempotencyKey) (Answer, bool, error) {
	if r.found && r.account.DisabledAt != 0 {
		return Answer{}, false, ErrAccountDisabled
	}
	if key == nil || r.hash == nil || r.expired {
		return Answer{}, false, nil
	}
	if !bytes.Equal(r.hash, key.RequestHash) {
		return Answer{}, false, ErrIdempotencyConflict
	}
	if r.version == nil {
		// Stored before keys kept results: the HTTP answer itself.
		return Answer{Replayed: true, Stored: &StoredResponse{Status: *r.status, Body: r.stored}}, true, nil
	}
	request, result, err := decodeResult(*r.version, r.stored)
	if err != nil {
		return Answer{}, false, err
	}
	return Answer{Result: result, Replayed: true, Request: request}, true, nil
}

// hold records the actor's rows read (or their absence) in game g, the lobby's current game, as
// held by the transaction, so that the actions read none of them again. The account is not
// locked: a bet that another transaction's spending made too large fails the balance's check
// when it is written, and the batch runs again (see checkHeldWrite).
func (r *callRead) hold(t *pgTx, actor tournament.AccountID, signer string, g tournament.Game) {
	if r.found {
		t.accounts[r.account.ID] = r.account
		t.keys[signerKey{actor, signer}] = r.keys
	}
	if g.ID == "" || !validID(string(actor)) {
		return
	}
	pk := playerKey{g.ID, actor}
	if _, held := t.leaves[pk]; !held {
		t.leaves[pk] = r.leaves
	}
	if _, held := t.players[pk]; !held {
		t.players[pk] = tournament.Player{}
		if r.hasPlayer {
			r.player.GameID, r.player.AccountID = g.ID, actor
			t.players[pk] = r.player
		}
	}
	mk := moveKey{g.ID, g.Round, actor}
	if _, held := t.moves[mk]; !held {
		t.moves[mk] = tournament.RoundMove{}
		if m, found := r.move.move(); found {
			m.GameID, m.Round, m.AccountID = g.ID, g.Round, actor
			t.moves[mk] = m
		}
	}
}
