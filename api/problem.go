package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"

	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
)

// The problem codes this server sends. The contract's ProblemCode is an open set (clients fall back
// on the status for a code they do not know), so the generated type is a plain string and the
// codes are listed here; a test checks that the contract documents each of them.
const (
	ProblemCodeValidationFailed    ProblemCode = "validation_failed"
	ProblemCodeUnauthorized        ProblemCode = "unauthorized"
	ProblemCodeForbidden           ProblemCode = "forbidden"
	ProblemCodeAccountDisabled     ProblemCode = "account_disabled"
	ProblemCodeNotFound            ProblemCode = "not_found"
	ProblemCodeMethodNotAllowed    ProblemCode = "method_not_allowed"
	ProblemCodeWrongStage          ProblemCode = "wrong_stage"
	ProblemCodeNotInGame           ProblemCode = "not_in_game"
	ProblemCodeAlreadyRegistered   ProblemCode = "already_registered"
	ProblemCodeRejoinLimit         ProblemCode = "rejoin_limit"
	ProblemCodeNameTaken           ProblemCode = "name_taken"
	ProblemCodeKeyTaken            ProblemCode = "key_taken"
	ProblemCodeLastKey             ProblemCode = "last_key"
	ProblemCodeKeyLimit            ProblemCode = "key_limit"
	ProblemCodeLobbyFull           ProblemCode = "lobby_full"
	ProblemCodeInsufficientFunds   ProblemCode = "insufficient_funds"
	ProblemCodeMoneyLimit          ProblemCode = "money_limit"
	ProblemCodeAlreadyCommitted    ProblemCode = "already_committed"
	ProblemCodeAlreadyRevealed     ProblemCode = "already_revealed"
	ProblemCodeIdempotencyConflict ProblemCode = "idempotency_conflict"
	ProblemCodeNoMatch             ProblemCode = "no_match"
	ProblemCodeNotLogged           ProblemCode = "not_logged"
	ProblemCodePayloadTooLarge     ProblemCode = "payload_too_large"
	ProblemCodeCommitmentMismatch  ProblemCode = "commitment_mismatch"
	ProblemCodeInvalidMove         ProblemCode = "invalid_move"
	ProblemCodeRateLimited         ProblemCode = "rate_limited"
	ProblemCodeInternal            ProblemCode = "internal"
	ProblemCodeUnavailable         ProblemCode = "unavailable"
	ProblemCodeSignatureRequired   ProblemCode = "signature_required"
	ProblemCodeKeyRequired         ProblemCode = "key_required"
	ProblemCodeBadSignature        ProblemCode = "bad_signature"
	ProblemCodeSignatureExpired    ProblemCode = "signature_expired"
	ProblemCodeStaleSignature      ProblemCode = "stale_signature"
)

// problemError is an error that becomes an RFC 9457 problem response. Handlers return it (or a
// tournament refusal, which writeProblem maps) and the one helper below shapes the response.
type problemError struct {
	status int
	code   ProblemCode
	detail string
	field  string
	// retryAfter, in seconds, is sent with 429 and 503.
	retryAfter int
}

func (e *problemError) Error() string { return e.code + ": " + e.detail }

func newProblem(status int, code ProblemCode, detail string) *problemError {
	return &problemError{status: status, code: code, detail: detail}
}

// bodyProblem is the problem of a body the spec accepts but its typed request cannot hold: the
// spec's integers are JSON numbers, which may be written 1.0 or 1e3, and the typed request keeps
// them as Go integers, which take only digits. It names the field, as the spec's own checks do.
func bodyProblem(err error) *problemError {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		want := "a JSON value of Go type " + typeErr.Type.String()
		switch typeErr.Type.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			want = "a whole number written in digits only (no fraction, no exponent)"
		}
		return validationProblem(typeErr.Field, fmt.Sprintf("%s must be %s, not %s", typeErr.Field, want, typeErr.Value))
	}
	return validationProblem("body", err.Error())
}

func validationProblem(field, detail string) *problemError {
	return &problemError{status: http.StatusBadRequest, code: ProblemCodeValidationFailed, detail: detail, field: field}
}

var (
	errUnauthorized    = newProblem(http.StatusUnauthorized, ProblemCodeUnauthorized, "a valid bearer token is required")
	errAdminOnly       = newProblem(http.StatusForbidden, ProblemCodeForbidden, "only an admin may do this")
	errAccountDisabled = newProblem(http.StatusForbidden, ProblemCodeAccountDisabled, "an admin disabled this account")
	// errNameTaken answers a sign-up whose name another account has (compared as the PRECIS
	// Nickname profile compares: case, width and spaces aside).
	errNameTaken = &problemError{status: http.StatusConflict, code: ProblemCodeNameTaken, field: "name",
		detail: "another account has this name (names are compared without regard to case, width or spacing); choose another"}
	// errUnavailable answers while the database is out of reach (a failover takes seconds).
	errUnavailable = &problemError{status: http.StatusServiceUnavailable, code: ProblemCodeUnavailable,
		detail: "the database is unreachable; retry with the same Idempotency-Key", retryAfter: 1}
)

// refusalStatus maps each refusal code of the core to its HTTP status.
var refusalStatus = map[tournament.Code]int{
	tournament.CodeNotFound:           http.StatusNotFound,
	tournament.CodeWrongStage:         http.StatusConflict,
	tournament.CodeForbidden:          http.StatusForbidden,
	tournament.CodeNotInGame:          http.StatusConflict,
	tournament.CodeAlreadyRegistered:  http.StatusConflict,
	tournament.CodeRejoinLimit:        http.StatusConflict,
	tournament.CodeLobbyFull:          http.StatusConflict,
	tournament.CodeInsufficientFunds:  http.StatusConflict,
	tournament.CodeKeyTaken:           http.StatusConflict,
	tournament.CodeLastKey:            http.StatusConflict,
	tournament.CodeKeyLimit:           http.StatusConflict,
	tournament.CodeMoneyLimit:         http.StatusConflict,
	tournament.CodeAlreadyCommitted:   http.StatusConflict,
	tournament.CodeCommitmentMismatch: http.StatusUnprocessableEntity,
	tournament.CodeInvalidMove:        http.StatusUnprocessableEntity,
	tournament.CodeAlreadyRevealed:    http.StatusConflict,
	tournament.CodeValidationFailed:   http.StatusBadRequest,
	tournament.CodeSignatureRequired:  http.StatusUnauthorized,
	tournament.CodeKeyRequired:        http.StatusForbidden,
	tournament.CodeBadSignature:       http.StatusUnauthorized,
	tournament.CodeSignatureExpired:   http.StatusUnauthorized,
	tournament.CodeStaleSignature:     http.StatusConflict,
}

var problemTitles = map[ProblemCode]string{
	ProblemCodeValidationFailed:    "Validation failed",
	ProblemCodeUnauthorized:        "Unauthorized",
	ProblemCodeForbidden:           "Forbidden",
	ProblemCodeNotFound:            "Not found",
	ProblemCodeWrongStage:          "Wrong stage",
	ProblemCodeNotInGame:           "Not in game",
	ProblemCodeAlreadyRegistered:   "Already registered",
	ProblemCodeRejoinLimit:         "Rejoin limit",
	ProblemCodeNameTaken:           "Name taken",
	ProblemCodeKeyTaken:            "Key taken",
	ProblemCodeLastKey:             "Last key",
	ProblemCodeKeyLimit:            "Key limit",
	ProblemCodeLobbyFull:           "Lobby full",
	ProblemCodeInsufficientFunds:   "Insufficient funds",
	ProblemCodeMoneyLimit:          "Money limit",
	ProblemCodeAlreadyCommitted:    "Already committed",
	ProblemCodeAlreadyRevealed:     "Already revealed",
	ProblemCodeCommitmentMismatch:  "Commitment mismatch",
	ProblemCodeInvalidMove:         "Invalid move",
	ProblemCodeIdempotencyConflict: "Idempotency conflict",
	ProblemCodePayloadTooLarge:     "Payload too large",
	ProblemCodeMethodNotAllowed:    "Method not allowed",
	ProblemCodeRateLimited:         "Rate limited",
	ProblemCodeInternal:            "Internal error",
	ProblemCodeAccountDisabled:     "Account disabled",
	ProblemCodeNoMatch:             "No match",
	ProblemCodeSignatureRequired:   "Signature required",
	ProblemCodeKeyRequired:         "Key required",
	ProblemCodeBadSignature:        "Bad signature",
	ProblemCodeSignatureExpired:    "Signature expired",
	ProblemCodeStaleSignature:      "Stale signature",
	ProblemCodeNotLogged:           "Not in the log yet",
	ProblemCodeUnavailable:         "Service unavailable",
}

// asProblem turns any error into the problem it is: a problemError as it is, a refusal of the
// core by its code, anything else a 500 whose details stay in the log.
func asProblem(err error) *problemError {
	var p *problemError
	if errors.As(err, &p) {
		return p
	}
	if errors.Is(err, store.ErrAccountDisabled) {
		return errAccountDisabled
	}
	if errors.Is(err, store.ErrNameTaken) {
		return errNameTaken
	}
	if r, ok := tournament.IsRefusal(err); ok {
		status, known := refusalStatus[r.Code]
		if known {
			return &problemError{status: status, code: ProblemCode(r.Code), detail: r.Message, field: r.Field}
		}
	}
	if store.IsUnavailable(err) {
		return errUnavailable
	}
	return &problemError{status: http.StatusInternalServerError, code: ProblemCodeInternal, detail: "internal error; quote the request id when reporting it"}
}

// problemBody renders a problem as the JSON the response to the request of ctx carries.
func problemBody(ctx context.Context, p *problemError) []byte {
	return renderProblem(p, requestRef(ctx))
}

// renderProblem renders a problem as the JSON of the answer to the request named by ref.
func renderProblem(p *problemError, ref store.RequestRef) []byte {
	body := Problem{
		Type:   "urn:rps:problem:" + p.code,
		Title:  problemTitles[p.code],
		Status: int32(p.status),
		Code:   p.code,
	}
	if p.detail != "" {
		body.Detail = &p.detail
	}
	if p.field != "" {
		body.Field = &p.field
	}
	if ref.ID != "" {
		body.Instance = &ref.Path
		body.RequestId = &ref.ID
	}
	out, err := json.Marshal(body)
	if err != nil {
		// A Problem always marshals; keep a valid body regardless.
		return []byte(`{"type":"urn:rps:problem:internal","title":"Internal error","status":500,"code":"internal"}`)
	}
	return out
}

// writeProblem is the one place that shapes an error response, for every layer: handlers, the
// request validator, the strict server, authentication, limits and panics.
func (s *Server) writeProblem(w http.ResponseWriter, r *http.Request, err error) {
	if answerBegun(w) {
		// The answer failed midway: its client stopped taking its bytes past the write deadline
		// (see HTTPLimits.WriteTimeout), or went away. Its status is sent; nothing more can be.
		s.log.InfoContext(r.Context(), "answer not taken; client disconnected", "err", err, "requestId", requestID(r.Context()))
		return
	}
	p := asProblem(err)
	if p.status >= 500 && r.Context().Err() != nil {
		// The client hung up (a long poll it gave up on): not a server error, and nobody reads
		// the answer. Counted apart, as nginx does.
		s.log.DebugContext(r.Context(), "client closed the request", "err", err, "requestId", requestID(r.Context()))
		w.WriteHeader(statusClientClosedRequest)
		return
	}
	if p == errUnavailable {
		// Expected for the seconds of a failover; the log says why without an alarm per request.
		s.log.WarnContext(r.Context(), "database unavailable", "err", err, "method", logged(r.Method), "path", logged(r.URL.Path), "requestId", requestID(r.Context()))
	} else if p.status >= 500 {
		s.log.ErrorContext(r.Context(), "request failed", "err", err, "method", logged(r.Method), "path", logged(r.URL.Path), "requestId", requestID(r.Context()))
	}
	writeRawProblem(w, p.status, p.retryAfter, problemBody(r.Context(), p))
}

// statusClientClosedRequest is nginx's status for a request whose client went away before the
// answer; it is never sent, only logged and counted.
const statusClientClosedRequest = 499

// maxLoggedLength caps what a log line takes of a request's method or path, which the client
// chooses and may make huge.
const maxLoggedLength = 200

func logged(s string) string {
	if len(s) > maxLoggedLength {
		return s[:maxLoggedLength] + "..."
	}
	return s
}

func writeRawProblem(w http.ResponseWriter, status, retryAfter int, body []byte) {
	w.Header().Set("Content-Type", "application/problem+json")
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
