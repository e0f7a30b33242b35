package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/commitreveal/rps/tournament"
	"github.com/jackc/pgx/v5"
)

// Totals are an account's results over settled games (refunded registrations do not count).
type Totals struct {
	Games int
	Wins  int
	// Net is what the account got back from its games minus what it bet.
	Net int64
}

// Standing is an account's place in the standings.
type Standing struct {
	// Position is the place in the standings, from 1.
	Position  int
	AccountID tournament.AccountID
	Name      string
	Totals
}

// RankBy orders the standings.
type RankBy string

// Orders of the standings. Each breaks ties by the other figure, then by account id.
const (
	RankByWins RankBy = "wins"
	RankByNet  RankBy = "net"
)

// Period is the span of the standings: all time, or the last days (UTC days, today included).
type Period int

// Periods of the standings, in days (0: all time).
const (
	PeriodAll Period = 0
	Period30d Period = 30
	Period7d  Period = 7
)

// StandingCursor is the standing of the last account of a page: its two figures in the
// ranking's order, its id and its position.
type StandingCursor struct {
	First, Second int64
	Account       tournament.AccountID
	Position      int
}

// String encodes the cursor for a client.
func (c StandingCursor) String() string {
	return fmt.Sprintf("%d_%d_%s_%d", c.First, c.Second, c.Account, c.Position)
}

// ParseStandingCursor decodes a cursor of String's form; anything else is ErrBadCursor.
func ParseStandingCursor(s string) (StandingCursor, error) {
	parts := strings.Split(s, "_")
	if len(parts) != 4 || !validID(parts[2]) {
		return StandingCursor{}, ErrBadCursor
	}
	first, err1 := strconv.ParseInt(parts[0], 10, 64)
	second, err2 := strconv.ParseInt(parts[1], 10, 64)
	position, err3 := strconv.Atoi(parts[3])
	if err1 != nil || err2 != nil || err3 != nil || position < 1 {
		return StandingCursor{}, ErrBadCursor
	}
	return StandingCursor{First: first, Second: second, Account: tournament.AccountID(parts[2]), Position: position}, nil
}

// cursor is the cursor of the page that continues after s.
func (s Standing) cursor(by RankBy) StandingCursor {
	if by == RankByNet {
		return StandingCursor{First: s.Net, Second: int64(s.Wins), Account: s.AccountID, Position: s.Position}
	}
	return StandingCursor{First: int64(s.Wins), Second: s.Net, Account: s.AccountID, Position: s.Position}
}

// Leaderboard returns up to limit standings, best first, after the cursor (nil: from the top),
// and the cursor of the next page when there may be one. Each page is a walk of one index of the
// totals, all-time or of the period.
func (s *Store) Leaderboard(ctx context.Context, by RankBy, period Period, after *StandingCursor, limit int) ([]Standing, *StandingCursor, error) {
	// Every order is ascending on (-first, -second, id), the indexes' order, so a page starts
	// with one row comparison.
	first, second := "wins", "net"
	if by == RankByNet {
		first, second = "net", "wins"
	}
	var args []any
	var cond string
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	source := `account_totals`
	if period != PeriodAll {
		if err := s.rollPeriod(ctx, period); err != nil {
			return nil, nil, err
		}
		source = `account_period_totals`
		cond = `days = ` + arg(int32(period)) + ` AND `
	}
	position := 0
	if after == nil {
		cond += `true`
	} else {
		position = after.Position
		cond += `(-` + first + `, -` + second + `, account_id) > (-` + arg(after.First) + `::bigint, -` +
			arg(after.Second) + `::bigint, ` + arg(string(after.Account)) + `::uuid)`
	}
	rows, err := collect(ctx, s.pool, func(r pgx.CollectableRow) (Standing, error) {
		position++
		st := Standing{Position: position}
		err := r.Scan(&st.AccountID, &st.Name, &st.Games, &st.Wins, &st.Net)
		return st, err
	}, `SELECT t.account_id::text, a.name, t.games, t.wins, t.net
		FROM (SELECT * FROM `+source+` WHERE `+cond+`
			ORDER BY -`+first+`, -`+second+`, account_id LIMIT `+arg(limit+1)+`) t
		JOIN accounts a ON a.id = t.account_id
		ORDER BY -t.`+first+`, -t.`+second+`, t.account_id`, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("read leaderboard: %w", err)
	}
	if len(rows) <= limit {
		return rows, nil, nil
	}
	next := rows[limit-1].cursor(by)
	return rows[:limit], &next, nil
}

// Profile returns an account with its totals over settled games, or tournament.ErrNotFound.
func (s *Store) Profile(ctx context.Context, id tournament.AccountID) (tournament.Account, Totals, error) {
	if !validID(string(id)) {
		return tournament.Account{}, Totals{}, tournament.ErrNotFound
	}
	var t Totals
	a, err := scanAccount(queryRow(ctx, s.pool, `SELECT `+accountColumns+`,
			coalesce(t.games, 0), coalesce(t.wins, 0), coalesce(t.net, 0)
		FROM accounts LEFT JOIN account_totals t ON t.account_id = accounts.id WHERE accounts.id = $1`, id),
		&t.Games, &t.Wins, &t.Net)
	return a, t, err
}

// rollPeriod brings a period's totals to today, if it is not there yet (the first read of the
// day): the days that left the period are subtracted, in one transaction that holds the
// period's row, so settles (which share-lock it) wait for it and it for them.
func (s *Store) rollPeriod(ctx context.Context, period Period) error {
	now, err := s.nowOn(ctx, s.pool)
	if err != nil {
		return err
	}
	base := dayOf(now) - int32(period)
	var stale bool
	if err := queryRow(ctx, s.pool, `SELECT base < $2 FROM periods WHERE days = $1`, int32(period), base).Scan(&stale); err != nil {
		return fmt.Errorf("read period: %w", err)
	}
	if !stale {
		return nil
	}
	return s.withTx(ctx, pgx.TxOptions{}, func(tx pgx.Tx) error {
		var from int32
		if err := queryRow(ctx, tx, `SELECT base FROM periods WHERE days = $1 FOR UPDATE`, int32(period)).Scan(&from); err != nil {
			return fmt.Errorf("lock period: %w", err)
		}
		if from >= base {
			return nil // rolled by another reader meanwhile
		}
		b := &pgx.Batch{}
		queue(b, `WITH gone AS (
				SELECT account_id, sum(games) AS games, sum(wins) AS wins, sum(net) AS net FROM account_days
				WHERE day > $2 AND day <= $3 GROUP BY account_id),
			emptied AS (
				DELETE FROM account_period_totals p USING gone
				WHERE p.days = $1 AND p.account_id = gone.account_id AND p.games = gone.games)
			UPDATE account_period_totals p SET games = p.games - gone.games, wins = p.wins - gone.wins, net = p.net - gone.net
			FROM gone WHERE p.days = $1 AND p.account_id = gone.account_id AND p.games > gone.games`, int32(period), from, base)
		queue(b, `UPDATE periods SET base = $2 WHERE days = $1`, int32(period), base)
		if err := mapErr(tx.SendBatch(ctx, b).Close()); err != nil {
			return fmt.Errorf("roll period: %w", err)
		}
		return nil
	})
}
