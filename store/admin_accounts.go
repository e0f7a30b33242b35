package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/commitreveal/rps/tournament"
	"github.com/jackc/pgx/v5"
)

// ErrAccountDisabled refuses an action of an account an admin has disabled.
var ErrAccountDisabled = errors.New("account disabled")

// RecentGames is how many of an account's latest games an admin search shows with it.
const RecentGames = 3

// AccountSummary is an account as an admin finds it: with its balance, status, totals and latest
// games.
type AccountSummary struct {
	Account tournament.Account
	Totals  Totals
	Recent  []Record
}

// AccountCursor is the position after the last account of a search page, in (lower-case name,
// id) order.
type AccountCursor struct {
	Account tournament.AccountID
}

// SearchAccounts finds up to limit accounts whose id is query, or whose name starts with query
// (case-insensitive), in order of lower-case name then id, after the account after ("" for the
// first page), each with its totals and its RecentGames latest games.
func (s *Store) SearchAccounts(ctx context.Context, query string, after tournament.AccountID, limit int) ([]AccountSummary, error) {
	if after != "" && !validID(string(after)) {
		return nil, ErrBadCursor
	}
	var out []AccountSummary
	err := s.withTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		// The prefix is matched literally: LIKE's wildcards in it are escaped.
		prefix := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(strings.ToLower(query)) + "%"
		var id any
		if validID(query) {
			id = strings.ToLower(query)
		}
		accounts, err := collect(ctx, tx, func(r pgx.CollectableRow) (AccountSummary, error) {
			var a AccountSummary
			var err error
			a.Account, err = scanAccount(r, &a.Totals.Games, &a.Totals.Wins, &a.Totals.Net)
			return a, err
		}, `SELECT `+accountColumns+`, coalesce(t.games, 0), coalesce(t.wins, 0), coalesce(t.net, 0)
			FROM accounts LEFT JOIN account_totals t ON t.account_id = accounts.id
			WHERE (CASE WHEN $1::uuid IS NOT NULL THEN accounts.id = $1::uuid
					ELSE lower(name) COLLATE "C" LIKE $2 END)
				AND ($3 = '' OR (lower(name) COLLATE "C", accounts.id) >
					(SELECT lower(name) COLLATE "C", id FROM accounts WHERE id = nullif($3, '')::uuid))
			ORDER BY lower(name) COLLATE "C", accounts.id LIMIT $4`, id, prefix, string(after), limit)
		if err != nil {
			return fmt.Errorf("search accounts: %w", err)
		}
		ids := make([]string, len(accounts))
		for i, a := range accounts {
			ids[i] = string(a.Account.ID)
		}
		recent, err := collect(ctx, tx, scanRecord, `WITH m AS (
				SELECT gp.account_id, gp.game_id, gp.ord, gp.registered_at, gp.active, gp.eliminated_round
				FROM unnest($1::uuid[]) AS a (id) CROSS JOIN LATERAL (
					SELECT * FROM game_players WHERE account_id = a.id
					ORDER BY registered_at DESC, game_id DESC LIMIT $2) gp)
			`+recordSQL, uuidArray(ids), RecentGames)
		if err != nil {
			return fmt.Errorf("read recent games: %w", err)
		}
		byAccount := make(map[tournament.AccountID][]Record)
		for _, r := range recent {
			byAccount[r.Player.AccountID] = append(byAccount[r.Player.AccountID], r)
		}
		for _, a := range accounts {
			a.Recent = byAccount[a.Account.ID]
			out = append(out, a)
		}
		return nil
	})
	return out, err
}

// SetDisabled disables (or enables again) an account, for the admin actor, in one transaction
// under key like any action (see Act), and answers with the account after the change. Disabling
// changes no money: the balance stays, bets in escrow stay in their games, and their payouts and
// refunds still arrive. A disabled account's actions are refused at once, on every replica: each
// action's first round trip reads the status (see queueCallReads). Disabling a disabled account
// keeps the time it was first disabled.
func (s *Store) SetDisabled(ctx context.Context, actor, id tournament.AccountID, disabled bool, key *IdempotencyKey,
	request RequestRef, audit *Audit) (Answer, error) {
	if !validID(string(id)) {
		return Answer{}, tournament.ErrNotFound
	}
	return s.actKeyed(ctx, actor, "", key, request, audit, func(t *pgTx, now int64) (tournament.Result, error) {
		var at any
		if disabled {
			at = now
		}
		a, err := scanAccount(queryRow(ctx, t.tx, `UPDATE accounts SET disabled_at = CASE
				WHEN $2::bigint IS NULL THEN NULL ELSE coalesce(disabled_at, $2::bigint) END
			WHERE id = $1 RETURNING `+accountColumns, id, at))
		if err != nil {
			return tournament.Result{}, err
		}
		return tournament.Result{At: now, Account: &a}, nil
	})
}
