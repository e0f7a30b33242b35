package api

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/commitreveal/rps/tournament"
)

// handlers implements the generated StrictServerInterface: each method translates a request into
// one store or core operation and its result into a response (built in views.go). The methods
// live in one file per resource: health.go, accounts.go, admin.go, rulesets.go, lobbies.go,
// play.go and games.go; this file holds what they share (paging, read errors).
type handlers struct {
	s *Server
}

// Page sizes of paged lists.
const (
	defaultPageSize = 100
	maxPageSize     = 500
)

func pageSize(limit *int32) int {
	if limit == nil || *limit <= 0 {
		return defaultPageSize
	}
	return min(int(*limit), maxPageSize)
}

func notFound(what string) *problemError {
	return newProblem(http.StatusNotFound, ProblemCodeNotFound, what+" not found")
}

// readErr turns a read's ErrNotFound into a 404 for what was read.
func readErr(err error, what string) error {
	if errors.Is(err, tournament.ErrNotFound) {
		return notFound(what)
	}
	return err
}

// int64Cursor reads an opaque cursor that encodes a position as a number.
func int64Cursor(after *string) (int64, error) {
	if after == nil {
		return 0, nil
	}
	n, err := strconv.ParseInt(*after, 10, 64)
	if err != nil || n < 0 {
		return 0, validationProblem("after", "not a cursor this server returned")
	}
	return n, nil
}

func int64CursorOf(n int64) *string {
	s := strconv.FormatInt(n, 10)
	return &s
}
