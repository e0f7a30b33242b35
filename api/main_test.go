package api_test

// The tests of this package run the real API in process over a real, migrated Postgres database
// per test: internal/apitest holds the harness (Start, the fixtures, the event and stream helpers).

import (
	"testing"

	"github.com/commitreveal/rps/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
