package main

// A dishonest server can answer whatever it likes; rpsverify must still end, in bounded memory,
// saying why it could not conclude.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/commitreveal/rps/internal/apiclient"
)

// TestEndlessKeyLogEnds: a server that answers every page of an account's key log with one more
// event and a head always further on had rpsverify read it without end.
func TestEndlessKeyLogEnds(t *testing.T) {
	pages := 0
	c := keyLogServer(t, func(r *http.Request) *apiclient.AccountKeys {
		pages++
		after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
		return &apiclient.AccountKeys{AccountId: uuidOf(testAccount),
			Events: []apiclient.KeyEvent{{Seq: after + 1, Type: "key_added", AccountId: uuidOf(testAccount)}},
			Head:   &apiclient.KeyLogHead{Seq: after + 1_000_000}}
	})
	c.maxKeyEvents = 50
	_, _, err := c.accountKeys(context.Background(), testAccount)
	var nerr *networkError
	if !errors.As(err, &nerr) || !strings.Contains(err.Error(), "longer than 50 events") {
		t.Fatalf("an endless key log: %v, want a network error naming the bound", err)
	}
	if pages != 51 {
		t.Fatalf("read %d pages, want 51 (one past the bound)", pages)
	}
}

// TestOversizeAnswerIsRefused: an answer larger than any the API serves is not read whole.
func TestOversizeAnswerIsRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		chunk := []byte(strings.Repeat(" ", 1<<20))
		_, _ = w.Write([]byte("["))
		for range maxAnswerBytes>>20 + 1 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		_, _ = w.Write([]byte("]"))
	}))
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"--server", srv.URL, "--quiet"}, &stdout, &stderr)
	if code != exitNetwork || !strings.Contains(stderr.String(), "larger than 64 MiB") {
		t.Fatalf("an oversize answer: exit %d, stderr %q; want %d naming the limit", code, stderr.String(), exitNetwork)
	}
}

// keyLogServer is a client of a server that answers every request for a key log with page(r)
// (nil: 404), as a dishonest server may.
func keyLogServer(t *testing.T, page func(r *http.Request) *apiclient.AccountKeys) *client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := page(r)
		if p == nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(p)
	}))
	t.Cleanup(srv.Close)
	c, err := newClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
