package main

// What replicas share and what they do not: a change to a token is seen by every replica at once
// (the account notifications evict their token caches), while rate limits are kept per replica.

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/commitreveal/rps/internal/pgtest"
)

// refusedEverywhere waits until every replica answers 401 to token and returns how long the
// slowest took from since; it fails the test after two seconds (the cache would keep a token for
// 30 s without the notifications).
func refusedEverywhere(t *testing.T, replicas []*server, token, path string, since time.Time) time.Duration {
	t.Helper()
	var slowest time.Duration
	for _, r := range replicas {
		for {
			status, raw := r.call("GET", path, token, nil, nil)
			if status == http.StatusUnauthorized {
				break
			}
			if status != http.StatusOK {
				t.Fatalf("GET %s on %s: %d %s", path, r.name, status, raw)
			}
			if time.Since(since) > 2*time.Second {
				t.Fatalf("%s still accepts the old token %v after the change", r.name, time.Since(since))
			}
			time.Sleep(2 * time.Millisecond)
		}
		slowest = max(slowest, time.Since(since))
	}
	return slowest
}

// acceptedEverywhere checks that every replica accepts token (and so caches it).
func acceptedEverywhere(t *testing.T, replicas []*server, token, path string) {
	t.Helper()
	for _, r := range replicas {
		r.must(http.StatusOK, "GET", path, token, nil, nil)
	}
}

func TestTokenChangesReachEveryReplica(t *testing.T) {
	databaseURL := pgtest.NewURL(t)
	env := replicaEnv(databaseURL, nil)
	replicas := startReplicas(t, 3, env)

	// A player rotates their token through replica 1; replicas 0 and 2 had the old one cached.
	alice := replicas[0].newPlayer("alice", 0)
	acceptedEverywhere(t, replicas, alice.Token, "/v1/me")
	var rotated struct {
		Token string `json:"token"`
	}
	replicas[1].must(http.StatusOK, "POST", "/v1/me/token", alice.Token, nil, &rotated)
	// The old token keeps a grace period until the new one is first used (so that a rotation whose
	// answer was lost does not lock the player out); that first use, on replica 2, ends it.
	replicas[2].must(http.StatusOK, "GET", "/v1/me", rotated.Token, nil, nil)
	lag := refusedEverywhere(t, replicas, alice.Token, "/v1/me", time.Now())
	acceptedEverywhere(t, replicas, rotated.Token, "/v1/me")
	t.Logf("a rotated token was refused by all 3 replicas within %v", lag.Round(100*time.Microsecond))

	// The admin token is revoked by `rpsd admin token`, a separate process.
	acceptedEverywhere(t, replicas, adminToken, "/v1/admin/ledger")
	start := time.Now()
	res := runRPSD(t, map[string]string{"DATABASE_URL": databaseURL}, "admin", "token")
	if res.code != 0 {
		t.Fatalf("rpsd admin token: exit %d: %s", res.code, res.stderr)
	}
	lag = refusedEverywhere(t, replicas, adminToken, "/v1/admin/ledger", start)
	t.Logf("the revoked admin token was refused by all 3 replicas within %v of starting rpsd admin token", lag.Round(time.Millisecond))

	// An operator revoking a token by hand in SQL is seen too: the trigger notifies, not the code.
	conn, err := pgx.Connect(context.Background(), databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	acceptedEverywhere(t, replicas, rotated.Token, "/v1/me")
	start = time.Now()
	if _, err := conn.Exec(context.Background(), `UPDATE accounts SET token_hash = NULL WHERE id = $1`, alice.ID); err != nil {
		t.Fatal(err)
	}
	lag = refusedEverywhere(t, replicas, rotated.Token, "/v1/me", start)
	t.Logf("a token revoked in SQL was refused by all 3 replicas within %v", lag.Round(100*time.Microsecond))
}

// Rate limits are per replica: behind a load balancer spreading a client over N replicas, the
// client may make N times the configured rate (README, "Running in production").
func TestRateLimitsArePerReplica(t *testing.T) {
	// 0.5 requests per second with bursts of 1: the next token comes 2 s later, far longer than
	// this test's requests take.
	replicas := startReplicas(t, 3, replicaEnv(pgtest.NewURL(t), map[string]string{"RPSD_ACCOUNT_RATE": "0.5"}))
	bob := replicas[0].newPlayer("bob", 0)
	accepted := 0
	for _, r := range replicas {
		for i := range 3 {
			status, raw := r.call("GET", "/v1/me", bob.Token, nil, nil)
			switch {
			case status == http.StatusOK && i == 0:
				accepted++
			case status == http.StatusTooManyRequests && i > 0:
			default:
				t.Fatalf("request %d of bob on %s: %d %s; want 200 for the first (its burst), 429 after", i+1, r.name, status, raw)
			}
		}
	}
	// The effective limit is the replicas times the per-replica limit.
	if want := len(replicas) * 1; accepted != want {
		t.Fatalf("%d requests accepted across %d replicas, want %d", accepted, len(replicas), want)
	}
}
