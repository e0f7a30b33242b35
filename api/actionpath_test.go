package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/commitreveal/rps/internal/apitest"
)

// TestRevealSizeCheckedOnce: a reveal over 1024 bytes is refused by one rule, in bytes, with one
// wording, whether it is over 1024 characters too or only in bytes, and before it reaches the
// store: it costs no transaction. (Before, the validator refused 1025 characters with words of its
// own, and 1024 two-byte characters went on to the core, which refused them in a transaction.)
func TestRevealSizeCheckedOnce(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	p, q := e.NewPlayer("p", 100), e.NewPlayer("q", 100)
	lobby := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 2}).Id.String()
	e.Register(lobby, p).Want(t, http.StatusCreated)
	e.Register(lobby, q).Want(t, http.StatusCreated)
	e.Commit(lobby, p, "0p-pw").Want(t, http.StatusOK)
	e.Commit(lobby, q, "1q-pw").Want(t, http.StatusOK)

	for name, reveal := range map[string]string{
		"1025 characters":             "0" + strings.Repeat("x", 1024),
		"1024 characters, 2047 bytes": "0" + strings.Repeat("é", 1023),
	} {
		before := e.Store.WriteStats()
		prob := e.Reveal(lobby, p, reveal).WantProblem(t, http.StatusBadRequest, "validation_failed")
		if prob.Field == nil || *prob.Field != "reveal" || prob.Detail == nil || !strings.Contains(*prob.Detail, "longer than 1024 bytes") {
			t.Errorf("%s: field %v, detail %v; want the reveal named and refused as longer than 1024 bytes", name, deref(prob.Field), deref(prob.Detail))
		}
		if after := e.Store.WriteStats(); after != before {
			t.Errorf("%s: the refused reveal reached the store: write stats %+v -> %+v", name, before, after)
		}
	}
	e.Reveal(lobby, p, "0p-pw").Want(t, http.StatusOK)
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
