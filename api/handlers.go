package api

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/google/uuid"

	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
)

// handlers implements the generated StrictServerInterface: each method translates a request into
// one store or core operation and its result into a response (built in views.go). The methods
// live in one file per resource: health.go, accounts.go, admin.go, admin_accounts.go,
// rulesets.go, lobbies.go, play.go, matchmaking.go, games.go and leaderboard.go; this file holds
// what they share (paging, read errors).
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

// int64Cursor reads an opaque cursor that encodes a position as a number up to max (the range
// of the column it is compared with: past it the database would refuse the argument).
func int64Cursor(after *string, max int64) (int64, error) {
	if after == nil {
		return 0, nil
	}
	n, err := strconv.ParseInt(*after, 10, 64)
	if err != nil || n < 0 || n > max {
		return 0, validationProblem("after", "not a cursor this server returned")
	}
	return n, nil
}

func int64CursorOf(n int64) *string {
	s := strconv.FormatInt(n, 10)
	return &s
}

// cursorParam decodes the after parameter with parse (nil when absent); a cursor this server did
// not hand out is 400 naming the parameter.
func cursorParam[C any](after *string, parse func(string) (C, error)) (*C, error) {
	if after == nil {
		return nil, nil
	}
	c, err := parse(*after)
	if err != nil {
		return nil, validationProblem("after", "not a cursor this server returned")
	}
	return &c, nil
}

// nextPage cuts a list read with one item more than limit to the page, and returns the cursor of
// the next page (nil when the extra item was not there: this is the last page).
func nextPage[T any](items []T, limit int, cursor func(T) string) ([]T, *string) {
	if len(items) <= limit {
		return items, nil
	}
	next := cursor(items[limit-1])
	return items[:limit], &next
}

// idCursor is a cursor that is an id.
func idCursor(s string) (string, error) {
	if uuid.Validate(s) != nil {
		return "", store.ErrBadCursor
	}
	return s, nil
}
