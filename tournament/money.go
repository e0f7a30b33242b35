package tournament

import (
	"context"
	"errors"
	"fmt"
)

// Credit moves amount from the treasury to a player's balance (a deposit; admins only), its
// ledger entries recording note, and returns the account after it.
func (s *Service) Credit(ctx context.Context, tx Tx, now int64, actor Actor, id AccountID, amount int64, note MoneyNote) (Account, error) {
	return s.moveMoney(ctx, tx, now, actor, id, amount, PostingCredit, note)
}

// Debit moves amount from a player's balance to the treasury (a withdrawal; admins only), its
// ledger entries recording note, and returns the account after it; it refuses an amount beyond
// the balance.
func (s *Service) Debit(ctx context.Context, tx Tx, now int64, actor Actor, id AccountID, amount int64, note MoneyNote) (Account, error) {
	return s.moveMoney(ctx, tx, now, actor, id, amount, PostingDebit, note)
}

func (s *Service) moveMoney(ctx context.Context, tx Tx, now int64, actor Actor, id AccountID, amount int64, kind PostingKind, note MoneyNote) (Account, error) {
	if actor.Role != RoleAdmin {
		return Account{}, refuse(CodeForbidden, "only an admin can move money to or from the treasury")
	}
	if amount <= 0 || amount > maxSafeInteger {
		return Account{}, invalid("amount", fmt.Sprintf("must be between 1 and %d", int64(maxSafeInteger)))
	}
	acct, err := tx.Account(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return Account{}, refuse(CodeNotFound, "account %s not found", id)
	} else if err != nil {
		return Account{}, fmt.Errorf("read account: %w", err)
	}
	if acct.Role != RolePlayer {
		return Account{}, refuse(CodeForbidden, "only player accounts hold money")
	}
	p := Posting{From: Treasury, To: PlayerAccount(id), Amount: amount, Kind: kind, At: now, Note: note}
	switch kind {
	case PostingCredit:
		// Every balance is part of the money in play and a payout cannot be refused, so bounding
		// the whole is what keeps every balance (and escrow) within what JSON clients read exactly.
		inPlay, err := tx.MoneyInPlay(ctx)
		if err != nil {
			return Account{}, fmt.Errorf("money in play: %w", err)
		}
		if inPlay > maxSafeInteger-amount {
			return Account{}, refuse(CodeMoneyLimit, "the money in play (%d) would exceed %d", inPlay, int64(maxSafeInteger))
		}
		acct.Balance += amount
	case PostingDebit:
		if acct.Balance < amount {
			return Account{}, refuse(CodeInsufficientFunds, "the balance is %d, less than %d", acct.Balance, amount)
		}
		p.From, p.To = p.To, p.From
		acct.Balance -= amount
	}
	if err := tx.Transfer(ctx, p); err != nil {
		return Account{}, fmt.Errorf("transfer %s: %w", kind, err)
	}
	return acct, nil
}
