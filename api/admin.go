package api

// Administration: credits, debits, the ledger report and tokens issued to players.

import (
	"context"
	"errors"
	"net/http"

	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
)

func (h *handlers) CreditAccount(ctx context.Context, req CreditAccountRequestObject) (CreditAccountResponseObject, error) {
	return h.moveMoney(ctx, "credit", req.AccountId.String(), req.Params.IdempotencyKey, req.Body, h.s.service.Credit)
}

func (h *handlers) DebitAccount(ctx context.Context, req DebitAccountRequestObject) (DebitAccountResponseObject, error) {
	return h.moveMoney(ctx, "debit", req.AccountId.String(), req.Params.IdempotencyKey, req.Body, h.s.service.Debit)
}

type moneyOp func(ctx context.Context, tx tournament.Tx, now int64, actor tournament.Actor, id tournament.AccountID, amount int64) (tournament.Account, error)

func (h *handlers) moveMoney(ctx context.Context, action, id string, key *string, body *MoneyTransferRequest, op moneyOp) (rawResponse, error) {
	who, err := requireAdmin(ctx)
	if err != nil {
		return rawResponse{}, err
	}
	if body.Memo != nil {
		// The memo is kept in the audit log.
		if _, err := tournament.Text("memo", *body.Memo, tournament.MaxMemoLength); err != nil {
			return rawResponse{}, err
		}
	}
	return h.mutate(ctx, mutation{
		action: action, caller: who, target: tournament.AccountID(id), key: key, body: body, status: http.StatusOK,
		run: func(ctx context.Context, tx tournament.Tx, now int64) (any, error) {
			acct, err := op(ctx, tx, now, actorOf(who), tournament.AccountID(id), body.Amount)
			if err != nil {
				return nil, err
			}
			return accountView(acct), nil
		},
	})
}

func (h *handlers) GetAdminLedger(ctx context.Context, _ GetAdminLedgerRequestObject) (GetAdminLedgerResponseObject, error) {
	if _, err := requireAdmin(ctx); err != nil {
		return nil, err
	}
	report, err := h.s.store.LedgerReport(ctx)
	if err != nil {
		return nil, err
	}
	return GetAdminLedger200JSONResponse(ledgerReportView(report)), nil
}

// IssueToken gives a player a new token on an admin's behalf (audited by the store).
func (h *handlers) IssueToken(ctx context.Context, req IssueTokenRequestObject) (IssueTokenResponseObject, error) {
	admin, err := requireAdmin(ctx)
	if err != nil {
		return nil, err
	}
	key, err := idempotencyKey(ctx, mutation{caller: admin, key: req.Params.IdempotencyKey})
	if err != nil {
		return nil, err
	}
	already := newProblem(http.StatusConflict, ProblemCodeIdempotencyConflict,
		"this request already issued a token; it went to its first answer and is not shown again")
	id := tournament.AccountID(req.AccountId.String())
	token, replay, replayed, err := h.s.store.IssueToken(ctx, admin.ID, id, key,
		store.Outcome{Status: already.status, Body: problemBody(ctx, already)})
	if errors.Is(err, store.ErrIdempotencyConflict) {
		return nil, errKeyReused
	}
	if err != nil {
		return nil, readErr(err, "account")
	}
	if replayed {
		return rawResponse{status: replay.Status, body: replay.Body, replayed: true}, nil
	}
	h.s.tokens.forgetAccount(id)
	return IssueToken200JSONResponse{Token: token}, nil
}
