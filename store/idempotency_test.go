package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/tournament"
)

// TestExpiredKeyIsReplaced: an outcome is replayed under its key until it expires; then the key
// is free for any request, whose outcome replaces the expired one (the begin read saw it expired,
// so the transaction deletes it before it inserts the new one).
func TestExpiredKeyIsReplaced(t *testing.T) {
	t.Parallel()
	var clock atomic.Int64
	s, adm, lobby := batchLobby(t, &clock, 1000)
	run := func(request string) keyedResult {
		var r keyedResult
		keyed(t, s, lobby, key(adm, "k", request), &r, func(context.Context, tournament.Tx, int64) error { return nil })()
		return r
	}
	check := func(step string, r keyedResult, wantBody string, wantReplayed bool) {
		t.Helper()
		if r.err != nil || string(r.out.Body) != wantBody || r.replayed != wantReplayed {
			t.Fatalf("%s: got %q replayed=%v err=%v, want %q replayed=%v", step, r.out.Body, r.replayed, r.err, wantBody, wantReplayed)
		}
	}
	first := fmt.Sprintf("ok %d", clock.Load())
	check("first", run("a"), first, false)
	check("retry", run("a"), first, true)
	if r := run("b"); !errors.Is(r.err, ErrIdempotencyConflict) {
		t.Fatalf("another request under a live key: err %v, want a conflict", r.err)
	}
	clock.Add(IdempotencyTTL.Milliseconds() + 1)
	second := fmt.Sprintf("ok %d", clock.Load())
	check("after expiry", run("b"), second, false)
	check("retry after expiry", run("b"), second, true)
	var stored int
	if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM idempotency_keys WHERE key = 'k'`).Scan(&stored); err != nil || stored != 1 {
		t.Fatalf("rows under the key: %d (%v), want 1", stored, err)
	}
}

// TestStoredResponseReplays: a key stored before keys kept results (format 1: the HTTP answer
// itself, status and body) is replayed as it was stored for its 24 hours, without running the
// operation; the same key with another request is still a conflict.
func TestStoredResponseReplays(t *testing.T) {
	t.Parallel()
	var clock atomic.Int64
	s, adm, lobby := batchLobby(t, &clock, 1000)
	ctx := context.Background()
	k := key(adm, "old", "stop")
	body := []byte(`{"id":"an answer rendered by an older rpsd"}`)
	_, err := s.pool.Exec(ctx, `INSERT INTO idempotency_keys (account_id, method, route, key, request_hash, status, response, created_at)
		VALUES ($1, $2, $3, $4, $5, 200, $6, $7)`, string(k.AccountID), k.Method, k.Route, k.Key, k.RequestHash, body, clock.Load()-1000)
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	op := testOp{lobby, func(context.Context, tournament.Tx, int64) error { ran = true; return nil }}
	answer, err := s.Act(ctx, Action{Actor: adm, Key: k, Op: op})
	if err != nil || !answer.Replayed || answer.Stored == nil || answer.Stored.Status != 200 || string(answer.Stored.Body) != string(body) || ran {
		t.Fatalf("answer %+v (%v), ran %v: want the stored response replayed, the operation not run", answer, err, ran)
	}
	if _, err := s.Act(ctx, Action{Actor: adm, Key: key(adm, "old", "another request"), Op: op}); !errors.Is(err, ErrIdempotencyConflict) || ran {
		t.Fatalf("another request under the old key: %v (ran %v), want a conflict", err, ran)
	}
	clock.Add(IdempotencyTTL.Milliseconds())
	if answer, err := s.Act(ctx, Action{Actor: adm, Key: k, Op: op}); err != nil || answer.Replayed || !ran {
		t.Fatalf("after it expired: %+v (%v), ran %v: want the operation run", answer, err, ran)
	}
}

// TestResultRoundTrip: a result is stored and read back as it was, every field of it (a reveal's
// password may be any bytes, a lobby may have a next config), so that a replay renders the very
// answer the first request got.
func TestResultRoundTrip(t *testing.T) {
	t.Parallel()
	next := tournament.DefaultConfig()
	next.BetSize, next.MaxRounds = 7, 3
	full := tournament.Result{
		At: 1_700_000_000_123, Expired: true,
		Lobby: tournament.Lobby{ID: "l", Name: "name \"quoted\" <b>", Closed: true, Config: tournament.DefaultConfig(),
			NextConfig: &next, GameID: "g", Games: 4, CreatedAt: 5},
		Game: tournament.Game{ID: "g", LobbyID: "l", Number: 4, Config: next, RulesetHash: "abc", Stage: tournament.StageReveal,
			Round: 2, StageStartedAt: 6, Deadline: 7, Extensions: 1, Joined: 9, Players: 8, Active: 5, Committed: 4,
			Revealed: 3, Escrow: 80, Winner: "w", Payout: 2, StopReason: "why", CreatedAt: 10, EndedAt: 11},
		Player: &tournament.Player{GameID: "g", AccountID: "a", Order: 3, RegisteredAt: 12, Active: true, EliminatedRound: 0},
		Move: &tournament.RoundMove{GameID: "g", Round: 2, AccountID: "a", Commitment: engine.CommitMove(3, "\xff\x00pw"),
			CommittedAt: 13, Revealed: true, Reveal: "3\xff\x00pw", Move: 3, RevealedAt: 14},
		Account: &tournament.Account{ID: "a", Name: "n", Role: tournament.RolePlayer, Balance: 15, CreatedAt: 16, DisabledAt: 17},
	}
	refused := tournament.Result{At: 3, Refusal: &tournament.Error{Code: tournament.CodeLobbyFull, Message: "the game is full (2 players)"}}
	ref := RequestRef{ID: "req-1", Path: "/v1/lobbies/l/players"}
	for _, r := range []tournament.Result{full, refused, {At: 1}} {
		stored, err := encodeResult(ref, r)
		if err != nil {
			t.Fatal(err)
		}
		gotRef, got, err := decodeResult(resultVersion, stored)
		if err != nil || gotRef != ref || !reflect.DeepEqual(got, r) {
			t.Errorf("round trip of %+v:\ngot  %+v %+v (%v)", r, got, gotRef, err)
		}
	}
}
