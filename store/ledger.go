package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/commitreveal/rps/tournament"
	"github.com/jackc/pgx/v5"
)

// ledgerSide is a ledger account as the columns of ledger_entries: its kind and, for a player or
// an escrow, the account or game it belongs to ("" otherwise: NULL).
func ledgerSide(a tournament.LedgerAccount) (kind, player, escrow string) {
	switch a.Kind {
	case tournament.LedgerPlayer:
		return string(a.Kind), a.ID, ""
	case tournament.LedgerEscrow:
		return string(a.Kind), "", a.ID
	}
	return string(a.Kind), "", ""
}

// Transfer holds a posting, written as its two entries and applied to the player balances
// involved with the transaction's other held rows (see writeHeld). A balance the transaction
// holds locked changes at once.
func (t *pgTx) Transfer(ctx context.Context, p tournament.Posting) error {
	if p.Amount <= 0 {
		return fmt.Errorf("transfer %s: amount %d is not positive", p.Kind, p.Amount)
	}
	t.held.postings = append(t.held.postings, p)
	for _, side := range []struct {
		account tournament.LedgerAccount
		amount  int64
	}{{p.From, -p.Amount}, {p.To, p.Amount}} {
		if side.account.Kind != tournament.LedgerPlayer {
			continue
		}
		id := tournament.AccountID(side.account.ID)
		if a, ok := t.accounts[id]; ok {
			a.Balance += side.amount
			t.accounts[id] = a
		}
		if t.held.balances == nil {
			t.held.balances = make(map[tournament.AccountID]bool)
		}
		t.held.balances[id] = true
	}
	return nil
}

// SplitEscrow pays every active player its share (plus one unit for the first remainder in
// registration order) as one posting each of the given kind, and credits their balances, in one
// statement.
func (t *pgTx) SplitEscrow(ctx context.Context, game tournament.GameID, share int64, remainder int, kind tournament.PostingKind, at int64) error {
	if err := t.writeHeld(); err != nil {
		return err
	}
	clear(t.accounts) // the split changes balances this transaction may hold
	return t.withCustomPlans(func() error {
		// shares holds a volatile nextval, so Postgres evaluates it once, not per reference.
		t.tx.later(`WITH shares AS (
				SELECT account_id, nextval('ledger_posting_seq') AS posting,
					$2::bigint + CASE WHEN row_number() OVER (ORDER BY ord) <= $3 THEN 1 ELSE 0 END AS amount
				FROM game_players WHERE game_id = $1 AND active),
			paid AS (SELECT * FROM shares WHERE amount > 0),
			entries AS (
				INSERT INTO ledger_entries (posting_id, account_kind, player_id, escrow_id, amount, kind, game_id, at)
				SELECT paid.posting, side.kind, side.player, side.escrow, side.amount, $5, $1, $4
				FROM paid, LATERAL (VALUES
					('escrow', NULL::uuid, $1::uuid, -paid.amount),
					('player', paid.account_id, NULL::uuid, paid.amount)) AS side (kind, player, escrow, amount))
			UPDATE accounts a SET balance = a.balance + paid.amount FROM paid WHERE a.id = paid.account_id`,
			game, share, remainder, at, kind)
		return nil
	})
}

// LedgerEntry is one entry of a player's balance: positive amounts came in, negative went out.
type LedgerEntry struct {
	// ID orders the entries; pages continue after the last ID seen.
	ID        int64
	PostingID int64
	Kind      tournament.PostingKind
	Amount    int64
	// GameID is the game of a bet, refund, payout or split; empty for a credit or debit.
	GameID tournament.GameID
	At     int64
	// Note is what a credit or debit recorded of the admin's request (zero for a game's
	// entries, and for credits and debits written before the ledger kept it).
	Note tournament.MoneyNote
}

// LedgerEntries returns up to limit entries of a player's balance with an ID greater than after,
// oldest first.
func (s *Store) LedgerEntries(ctx context.Context, id tournament.AccountID, after int64, limit int) ([]LedgerEntry, error) {
	if !validID(string(id)) {
		return nil, nil
	}
	return collect(ctx, s.pool, func(r pgx.CollectableRow) (LedgerEntry, error) {
		var e LedgerEntry
		var auth []byte
		if err := r.Scan(&e.ID, &e.PostingID, &e.Kind, &e.Amount, &e.GameID, &e.At, &e.Note.Memo, &auth); err != nil {
			return e, err
		}
		if auth != nil {
			e.Note.Auth = new(tournament.AdminAuth)
			if err := json.Unmarshal(auth, e.Note.Auth); err != nil {
				return e, fmt.Errorf("ledger entry %d: its admin's signature: %w", e.ID, err)
			}
		}
		return e, nil
	}, `SELECT id, posting_id, kind, amount, coalesce(game_id::text, ''), at, coalesce(memo, ''), auth
		FROM ledger_entries WHERE player_id = $1 AND id > $2 ORDER BY id LIMIT $3`, id, after, limit)
}

// LedgerReport sums the whole ledger and checks its invariants in one statement (one snapshot):
// every posting is two opposite entries and all entries sum to zero; each player balance and each
// game escrow equals the sum of its entries; no player balance is negative; every finished or
// stopped game's escrow is zero. It reads every entry, so it is for audits and tests, not for
// every request.
func (s *Store) LedgerReport(ctx context.Context) (tournament.LedgerReport, error) {
	var r tournament.LedgerReport
	var pairsBalanced bool
	err := queryRow(ctx, s.pool, `WITH
		totals AS (SELECT coalesce(sum(amount), 0)::bigint AS total,
				coalesce(sum(amount) FILTER (WHERE account_kind = 'treasury'), 0)::bigint AS treasury
			FROM ledger_entries),
		pairs AS (SELECT NOT EXISTS (SELECT 1 FROM ledger_entries GROUP BY posting_id
				HAVING count(*) <> 2 OR sum(amount) <> 0) AS ok),
		player_sums AS (SELECT player_id, sum(amount) AS total FROM ledger_entries
			WHERE account_kind = 'player' GROUP BY player_id),
		balances AS (SELECT coalesce(sum(a.balance), 0)::bigint AS total,
				coalesce(bool_and(a.balance = coalesce(ps.total, 0)), true) AS match,
				coalesce(bool_and(a.role <> 'player' OR a.balance >= 0), true) AS nonnegative
			FROM accounts a LEFT JOIN player_sums ps ON ps.player_id = a.id),
		escrow_sums AS (SELECT escrow_id, sum(amount) AS total FROM ledger_entries
			WHERE account_kind = 'escrow' GROUP BY escrow_id),
		escrows AS (SELECT coalesce(sum(g.escrow), 0)::bigint AS total,
				coalesce(bool_and(g.escrow = coalesce(es.total, 0)), true) AS match,
				coalesce(bool_and(`+openSQL+` OR g.escrow = 0), true) AS closed_zero
			FROM games g LEFT JOIN escrow_sums es ON es.escrow_id = g.id)
		SELECT totals.treasury, balances.total, escrows.total, totals.total, pairs.ok,
			balances.match AND escrows.match, balances.nonnegative, escrows.closed_zero
		FROM totals, pairs, balances, escrows`).Scan(&r.Treasury, &r.PlayerBalances, &r.Escrows,
		&r.EntriesSum, &pairsBalanced, &r.BalancesMatchEntries, &r.NoNegativeBalance, &r.ClosedEscrowsZero)
	if err != nil {
		return r, fmt.Errorf("ledger report: %w", err)
	}
	r.EntriesSumToZero = r.EntriesSum == 0 && pairsBalanced
	return r, nil
}

// moneyLock is the advisory lock that serialises the transactions bounding the money in play
// (credits), so that two cannot both pass the bound.
const moneyLock int64 = 0x7270735f6d6f6e79 // "rps_mony"

// MoneyInPlay sums every balance and escrow, after taking moneyLock for the rest of the
// transaction: read after the lock, the sum includes every credit committed before it.
func (t *pgTx) MoneyInPlay(ctx context.Context) (int64, error) {
	if err := t.writeHeld(); err != nil {
		return 0, err
	}
	if _, err := exec(ctx, t.tx, `SELECT pg_advisory_xact_lock($1)`, moneyLock); err != nil {
		return 0, fmt.Errorf("lock the money in play: %w", err)
	}
	var n int64
	// Sums over whole tables, planned by PostgreSQL (a committer's plans find rows by key).
	err := t.withCustomPlans(func() error {
		return queryRow(ctx, t.tx, `SELECT (SELECT coalesce(sum(balance), 0) FROM accounts)::bigint
			+ (SELECT coalesce(sum(escrow), 0) FROM games)::bigint`).Scan(&n)
	})
	return n, err
}
