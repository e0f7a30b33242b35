package tournament

import (
	"errors"
	"fmt"
)

// Code is the stable machine-readable code of a refusal; the HTTP layer maps each to a status.
type Code string

// Refusal codes, in the order the core checks them.
const (
	CodeNotFound           Code = "not_found"
	CodeWrongStage         Code = "wrong_stage"
	CodeForbidden          Code = "forbidden"
	CodeNotInGame          Code = "not_in_game"
	CodeAlreadyRegistered  Code = "already_registered"
	CodeRejoinLimit        Code = "rejoin_limit"
	CodeLobbyFull          Code = "lobby_full"
	CodeInsufficientFunds  Code = "insufficient_funds"
	CodeMoneyLimit         Code = "money_limit"
	CodeAlreadyCommitted   Code = "already_committed"
	CodeCommitmentMismatch Code = "commitment_mismatch"
	CodeInvalidMove        Code = "invalid_move"
	CodeAlreadyRevealed    Code = "already_revealed"
	CodeValidationFailed   Code = "validation_failed"

	// Refusals of players' keys (see checkSigner): the request is not the player's own, or
	// not for this game. None is stored under the request's idempotency key, so that a request
	// signed again can be retried under it.
	CodeSignatureRequired Code = "signature_required"
	CodeKeyRequired       Code = "key_required"
	CodeBadSignature      Code = "bad_signature"
	CodeSignatureExpired  Code = "signature_expired"
	CodeStaleSignature    Code = "stale_signature"
)

// signatureRefusals are the refusals of players' keys.
var signatureRefusals = map[Code]bool{
	CodeSignatureRequired: true, CodeKeyRequired: true, CodeBadSignature: true, CodeSignatureExpired: true, CodeStaleSignature: true,
}

// Error is a refusal: the operation was not performed. Every other error is a failure of the store.
//
// A refusal commits. A refusal is the game's answer to a request, not a failure, so:
//   - the transaction it was given in commits, keeping the expiries applied before the refused
//     action (Service.run writes them back; the store commits on a refusal);
//   - under an idempotency key it is stored and replayed like a success (store.RunIdempotent),
//     unless it is not Replayable: a request the game found invalid may be retried, corrected,
//     under the same key.
//
// This is the one statement of the rule; the places that apply it point here.
type Error struct {
	Code Code
	// Field names the offending input for CodeValidationFailed.
	Field   string
	Message string
	// tentative marks a refusal that is not the request's answer (see Join).
	tentative bool
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", e.Code, e.Field, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Replayable reports whether the refusal is stored under the request's idempotency key and
// replayed to a retry (see Error): every refusal but a failed validation, a refusal of the
// request's signature and a tentative one.
func (e *Error) Replayable() bool {
	return e.Code != CodeValidationFailed && !signatureRefusals[e.Code] && !e.tentative
}

// Tentative reports whether the refusal only says that this attempt did not fit, for a caller
// that tries others (a quick join's lobbies, see Join): it is not the request's answer.
func (e *Error) Tentative() bool { return e.tentative }

// ErrNotFound is returned by a Tx for a row that does not exist.
var ErrNotFound = errors.New("not found")

// IsRefusal reports whether err is a refusal and returns it.
func IsRefusal(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

func refuse(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func invalid(field, message string) *Error {
	return &Error{Code: CodeValidationFailed, Field: field, Message: message}
}
