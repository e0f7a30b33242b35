package api

// Accounts: sign-up, the caller's account, token rotation, ledger and games, and public profiles.

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
)

func (h *handlers) CreateAccount(ctx context.Context, req CreateAccountRequestObject) (CreateAccountResponseObject, error) {
	if ok, retry := h.s.signupLimits.allow(requestInfoOf(ctx).ip, time.Now()); !ok {
		return nil, rateLimited(retry)
	}
	if req.Body.PublicKey != nil {
		return h.signUpWithKey(ctx, req)
	}
	if req.Params.RpsKeyId != nil || req.Params.RpsSignedAt != nil || req.Params.RpsSignature != nil {
		return nil, validationProblem("publicKey", "a signed sign-up binds the key that signs it: send it as publicKey")
	}
	acct, token, err := h.s.store.CreateAccount(ctx, req.Body.Name, tournament.RolePlayer)
	if err != nil {
		return nil, err
	}
	return CreateAccount201JSONResponse{Account: accountView(acct), Token: token}, nil
}

func (h *handlers) GetMe(ctx context.Context, _ GetMeRequestObject) (GetMeResponseObject, error) {
	who, err := requireAccount(ctx)
	if err != nil {
		return nil, err
	}
	acct, err := h.s.store.Account(ctx, who.ID)
	if err != nil {
		return nil, readErr(err, "account")
	}
	return GetMe200JSONResponse(accountView(acct)), nil
}

func (h *handlers) RotateToken(ctx context.Context, req RotateTokenRequestObject) (RotateTokenResponseObject, error) {
	who, err := requireAccount(ctx)
	if err != nil {
		return nil, err
	}
	key, err := idempotencyKey(ctx, who.ID, req.Params.IdempotencyKey, nil)
	if err != nil {
		return nil, err
	}
	token, answer, err := h.s.store.RotateToken(ctx, who.ID, callerToken(ctx), key, requestRef(ctx))
	if errors.Is(err, store.ErrIdempotencyConflict) {
		return nil, errKeyReused
	}
	if err != nil {
		return nil, readErr(err, "account")
	}
	if token == "" {
		// A duplicate cannot be shown the token (it is never stored): it learns that its twin has it.
		return tokenReplay(answer, "this request already rotated the token; the new token went to its first answer and is not shown again"), nil
	}
	h.s.tokens.forgetAccount(who.ID)
	return RotateToken200JSONResponse{Token: token}, nil
}

func (h *handlers) ListMyLedger(ctx context.Context, req ListMyLedgerRequestObject) (ListMyLedgerResponseObject, error) {
	who, err := requireAccount(ctx)
	if err != nil {
		return nil, err
	}
	after, err := int64Cursor(req.Params.After, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	limit := pageSize(req.Params.Limit)
	entries, err := h.s.store.LedgerEntries(ctx, who.ID, after, limit+1)
	if err != nil {
		return nil, err
	}
	page := LedgerPage{Entries: []LedgerEntry{}}
	for i, e := range entries {
		if i == limit {
			page.Next = int64CursorOf(entries[limit-1].ID)
			break
		}
		entry, err := ledgerEntryView(e)
		if err != nil {
			return nil, err
		}
		page.Entries = append(page.Entries, entry)
	}
	return ListMyLedger200JSONResponse(page), nil
}

func (h *handlers) ListMyGames(ctx context.Context, req ListMyGamesRequestObject) (ListMyGamesResponseObject, error) {
	who, err := requireAccount(ctx)
	if err != nil {
		return nil, err
	}
	page, err := gameRecords(req.Params.After, req.Params.Limit, func(after *store.RecordCursor, limit int) ([]store.Record, error) {
		return h.s.store.PlayerGames(ctx, who.ID, after, limit)
	})
	if err != nil {
		return nil, err
	}
	return ListMyGames200JSONResponse(page), nil
}

func (h *handlers) ListAccountGames(ctx context.Context, req ListAccountGamesRequestObject) (ListAccountGamesResponseObject, error) {
	account := tournament.AccountID(req.AccountId.String())
	page, err := gameRecords(req.Params.After, req.Params.Limit, func(after *store.RecordCursor, limit int) ([]store.Record, error) {
		return h.s.store.AccountGames(ctx, account, after, limit)
	})
	if err != nil {
		return nil, readErr(err, "account")
	}
	return ListAccountGames200JSONResponse(page), nil
}

// gameRecords reads one page of a player's games with read, which gets the decoded cursor and
// one more than the page size (to know whether a next page exists).
func gameRecords(afterParam *string, limitParam *int32, read func(after *store.RecordCursor, limit int) ([]store.Record, error)) (GameRecordPage, error) {
	var page GameRecordPage
	after, err := cursorParam(afterParam, store.ParseRecordCursor)
	if err != nil {
		return page, err
	}
	limit := pageSize(limitParam)
	recs, err := read(after, limit+1)
	if err != nil {
		return page, err
	}
	recs, page.Next = nextPage(recs, limit, func(r store.Record) string {
		return store.RecordCursor{RegisteredAt: r.Player.RegisteredAt, Game: r.Game.ID}.String()
	})
	page.Games = gameRecordsView(recs)
	return page, nil
}

func (h *handlers) GetAccountProfile(ctx context.Context, req GetAccountProfileRequestObject) (GetAccountProfileResponseObject, error) {
	who, _, err := optionalCaller(ctx)
	if err != nil {
		return nil, err
	}
	a, totals, err := h.s.store.Profile(ctx, tournament.AccountID(req.AccountId.String()))
	if err != nil {
		return nil, readErr(err, "account")
	}
	out := AccountProfile{
		Id: parseUUID(string(a.ID)), Name: a.Name, Role: Role(a.Role), GamesPlayed: int32(totals.Games),
		GamesWon: int32(totals.Wins), Net: totals.Net, MemberSince: millisToTime(a.CreatedAt),
	}
	if who.ID == a.ID {
		out.Balance = &a.Balance
	}
	return GetAccountProfile200JSONResponse(out), nil
}
