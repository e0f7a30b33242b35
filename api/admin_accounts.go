package api

// Admin account tools: search, disabling and enabling, and the audit log of every admin action.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
)

func (h *handlers) SearchAccounts(ctx context.Context, req SearchAccountsRequestObject) (SearchAccountsResponseObject, error) {
	if _, err := requireAdmin(ctx); err != nil {
		return nil, err
	}
	after, err := cursorParam(req.Params.After, idCursor)
	if err != nil {
		return nil, err
	}
	query := ""
	if req.Params.Query != nil {
		query = *req.Params.Query
	}
	var from tournament.AccountID
	if after != nil {
		from = tournament.AccountID(*after)
	}
	limit := pageSize(req.Params.Limit)
	found, err := h.s.store.SearchAccounts(ctx, query, from, limit+1)
	if err != nil {
		return nil, err
	}
	var page AdminAccountPage
	found, page.Next = nextPage(found, limit, func(a store.AccountSummary) string { return string(a.Account.ID) })
	page.Accounts = []AdminAccount{}
	for _, a := range found {
		page.Accounts = append(page.Accounts, AdminAccount{
			Account: accountView(a.Account), GamesPlayed: int32(a.Totals.Games), GamesWon: int32(a.Totals.Wins),
			Net: a.Totals.Net, RecentGames: gameRecordsView(a.Recent),
		})
	}
	return SearchAccounts200JSONResponse(page), nil
}

func (h *handlers) DisableAccount(ctx context.Context, req DisableAccountRequestObject) (DisableAccountResponseObject, error) {
	// The reason is kept in the audit log: free text under the one rule for it.
	if _, err := tournament.Text("reason", req.Body.Reason, tournament.MaxStopReasonLength); err != nil {
		return nil, err
	}
	p := req.Params
	return h.setDisabled(ctx, "disable_account", req.AccountId.String(), p.IdempotencyKey, adminSignatureOf(p.RpsKeyId, p.RpsSignedAt, p.RpsSignature), req.Body, true)
}

func (h *handlers) EnableAccount(ctx context.Context, req EnableAccountRequestObject) (EnableAccountResponseObject, error) {
	p := req.Params
	return h.setDisabled(ctx, "enable_account", req.AccountId.String(), p.IdempotencyKey, adminSignatureOf(p.RpsKeyId, p.RpsSignedAt, p.RpsSignature), nil, false)
}

func (h *handlers) setDisabled(ctx context.Context, name, id string, key *string, sig signatureHeaders, body any, disabled bool) (rawResponse, error) {
	who, err := requireAdmin(ctx)
	if err != nil {
		return rawResponse{}, err
	}
	account := tournament.AccountID(id)
	if account == who.ID {
		return rawResponse{}, newProblem(http.StatusForbidden, ProblemCodeForbidden, "an admin cannot disable or enable its own account")
	}
	a := action{name: name, caller: who, target: account, key: key, body: body, adminSignature: sig, status: http.StatusOK, view: accountResult}
	idem, err := idempotencyKey(ctx, who.ID, key, body)
	if err != nil {
		return rawResponse{}, err
	}
	audit, err := h.audit(ctx, a)
	if err != nil {
		return rawResponse{}, err
	}
	answer, err := h.s.store.SetDisabled(ctx, who.ID, account, disabled, idem, requestRef(ctx), audit)
	// This replica stops trusting the account's cached tokens at once.
	h.s.tokens.forgetAccount(account)
	return h.respond(a, answer, readErr(err, "account"))
}

func (h *handlers) ListAudit(ctx context.Context, req ListAuditRequestObject) (ListAuditResponseObject, error) {
	if _, err := requireAdmin(ctx); err != nil {
		return nil, err
	}
	before, err := int64Cursor(req.Params.After, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	limit := pageSize(req.Params.Limit)
	entries, err := h.s.store.Audit(ctx, before, limit+1)
	if err != nil {
		return nil, err
	}
	var page AuditPage
	entries, page.Next = nextPage(entries, limit, func(e store.AuditEntry) string { return strconv.FormatInt(e.ID, 10) })
	page.Entries = []AuditEntry{}
	for _, e := range entries {
		var detail map[string]any
		if err := json.Unmarshal(e.Detail, &detail); err != nil {
			return nil, fmt.Errorf("decode audit detail: %w", err)
		}
		page.Entries = append(page.Entries, AuditEntry{
			Id: strconv.FormatInt(e.ID, 10), At: millisToTime(e.At), Actor: parseUUID(string(e.Actor)),
			Action: e.Action, Target: e.Target, Detail: detail,
		})
	}
	return ListAudit200JSONResponse(page), nil
}
