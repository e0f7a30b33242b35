package apiclient

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"time"
)

// Response is what every generated *Response type offers: the status and the raw body.
type Response interface {
	StatusCode() int
	GetBody() []byte
}

// Error is a response other than the one expected, decoded from its RFC 9457 problem body when
// it has one. Code is the problem's stable code, or "http_<status>" when the body is no problem
// (a proxy's page, an empty 502), so that callers can always count errors by code.
type Error struct {
	Status int
	Code   string
	Detail string
	Field  string
	// RetryAfter is the server's Retry-After for 429 (and 503) responses, zero when absent.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%d %s", e.Status, e.Code)
	if e.Field != "" {
		msg += " (" + e.Field + ")"
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Check returns nil when r has the wanted status, and an *Error describing it otherwise.
func Check(r Response, want int) error {
	if r.StatusCode() == want {
		return nil
	}
	return ProblemOf(r)
}

// ProblemOf decodes a response's problem body into an *Error.
func ProblemOf(r Response) *Error {
	e := &Error{Status: r.StatusCode(), Code: "http_" + strconv.Itoa(r.StatusCode())}
	var p Problem
	if err := json.Unmarshal(r.GetBody(), &p); err == nil && p.Code != "" {
		e.Code = p.Code
		if p.Detail != nil {
			e.Detail = *p.Detail
		}
		if p.Field != nil {
			e.Field = *p.Field
		}
	}
	e.RetryAfter = retryAfter(httpResponse(r))
	return e
}

// httpResponse returns the HTTPResponse field every generated response struct has. The generated
// types expose the status and body through methods but the headers only through that field, and
// Retry-After is needed for any operation, so it is read by reflection rather than per type.
func httpResponse(r Response) *http.Response {
	v := reflect.ValueOf(r)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	f := v.FieldByName("HTTPResponse")
	if !f.IsValid() {
		return nil
	}
	hr, _ := f.Interface().(*http.Response)
	return hr
}

// retryAfter reads the Retry-After header (in seconds) of a response, zero when absent.
func retryAfter(r *http.Response) time.Duration {
	if r == nil {
		return 0
	}
	s, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || s <= 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}

// Bearer authenticates a request with a token; an empty token sends the request anonymously.
func Bearer(token string) RequestEditorFn {
	return func(_ context.Context, req *http.Request) error {
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return nil
	}
}

// NewKey returns a fresh Idempotency-Key: 128 random bits in hex, one per intended action, reused
// for every retry of that action.
func NewKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}
