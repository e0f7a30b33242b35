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
	id := tournament.AccountID(req.AccountId.String())
	p := req.Params
	return h.moveMoney(ctx, "credit", id, p.IdempotencyKey, adminSignatureOf(p.RpsKeyId, p.RpsSignedAt, p.RpsSignature), req.Body,
		func(note tournament.MoneyNote) tournament.Operation {
			return tournament.Credit{Account: id, Amount: req.Body.Amount, Note: note}
		})
}

func (h *handlers) DebitAccount(ctx context.Context, req DebitAccountRequestObject) (DebitAccountResponseObject, error) {
	id := tournament.AccountID(req.AccountId.String())
	p := req.Params
	return h.moveMoney(ctx, "debit", id, p.IdempotencyKey, adminSignatureOf(p.RpsKeyId, p.RpsSignedAt, p.RpsSignature), req.Body,
		func(note tournament.MoneyNote) tournament.Operation {
			return tournament.Debit{Account: id, Amount: req.Body.Amount, Note: note}
		})
}

func (h *handlers) moveMoney(ctx context.Context, name string, id tournament.AccountID, key *string, sig signatureHeaders, body *MoneyTransferRequest,
	op func(tournament.MoneyNote) tournament.Operation) (rawResponse, error) {
	who, err := requireAdmin(ctx)
	if err != nil {
		return rawResponse{}, err
	}
	var note tournament.MoneyNote
	if body.Memo != nil {
		// The player reads the memo in its ledger (the audit log keeps the request as sent); act
		// adds the admin's signature to the note.
		if note.Memo, err = tournament.Text("memo", *body.Memo, tournament.MaxMemoLength); err != nil {
			return rawResponse{}, err
		}
	}
	return h.act(ctx, action{name: name, caller: who, target: id, key: key, body: body, op: op(note), adminSignature: sig,
		status: http.StatusOK, view: accountResult})
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
	key, err := idempotencyKey(ctx, admin.ID, req.Params.IdempotencyKey, nil)
	if err != nil {
		return nil, err
	}
	id := tournament.AccountID(req.AccountId.String())
	p := req.Params
	auth, err := h.adminAuth(ctx, action{name: "issue_token", caller: admin, target: id, key: p.IdempotencyKey,
		adminSignature: adminSignatureOf(p.RpsKeyId, p.RpsSignedAt, p.RpsSignature)})
	if err != nil {
		return nil, err
	}
	token, answer, err := h.s.store.IssueToken(ctx, admin.ID, id, key, requestRef(ctx), auth)
	if errors.Is(err, store.ErrIdempotencyConflict) {
		return nil, errKeyReused
	}
	if err != nil {
		return nil, readErr(err, "account")
	}
	if token == "" {
		return tokenReplay(answer, "this request already issued a token; it went to its first answer and is not shown again"), nil
	}
	h.s.tokens.forgetAccount(id)
	return IssueToken200JSONResponse{Token: token}, nil
}

// tokenReplay answers a request that made no token: its refusal, or, replayed, that its first
// answer had the token (never stored, so not shown again).
func tokenReplay(answer store.Answer, already string) rawResponse {
	if s := answer.Stored; s != nil {
		return rawResponse{status: s.Status, body: s.Body, replayed: true}
	}
	p := newProblem(http.StatusConflict, ProblemCodeIdempotencyConflict, already)
	if r := answer.Result.Refusal; r != nil {
		p = asProblem(r)
	}
	return rawResponse{status: p.status, body: renderProblem(p, answer.Request), replayed: answer.Replayed}
}
