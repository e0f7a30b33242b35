package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/commitreveal/rps/tournament"
	"github.com/jackc/pgx/v5"
)

// AuditEntry is an admin action as the audit log keeps it.
type AuditEntry struct {
	// ID orders the log; pages continue before the last ID seen (newest first).
	ID     int64
	Actor  tournament.AccountID
	Action string
	// Target is the account or lobby acted on ("" when none, such as a lobby being created).
	Target string
	// Detail is the request and its outcome, as JSON.
	Detail json.RawMessage
	At     int64
}

// queueAudit queues the audit entry of an admin's action that had result, written with the
// action's effects.
func (t *pgTx) queueAudit(actor tournament.AccountID, a *Audit, r tournament.Result, at int64) error {
	detail, err := a.detail(r)
	if err != nil {
		return err
	}
	t.queueAuditEntry(AuditEntry{Actor: actor, Action: a.Action, Target: a.Target, Detail: detail}, at)
	return nil
}

// queueAuditEntry holds an entry of the audit log, written with the action's effects (see
// writeHeld).
func (t *pgTx) queueAuditEntry(e AuditEntry, at int64) {
	t.held.audits = append(t.held.audits, auditRow{entry: e, at: at})
}

// Audit returns up to limit entries of the admins' audit log, newest first, with an ID less than
// before (0: from the newest).
func (s *Store) Audit(ctx context.Context, before int64, limit int) ([]AuditEntry, error) {
	entries, err := collect(ctx, s.pool, func(r pgx.CollectableRow) (AuditEntry, error) {
		var e AuditEntry
		var detail []byte
		err := r.Scan(&e.ID, &e.Actor, &e.Action, &e.Target, &detail, &e.At)
		e.Detail = detail
		return e, err
	}, `SELECT id, actor::text, action, target, detail::text, at FROM admin_audit
		WHERE $1::bigint = 0 OR id < $1 ORDER BY id DESC LIMIT $2`, before, limit)
	if err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	return entries, nil
}
