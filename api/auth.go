package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
)

// tokenCacheTTL bounds how long a token is trusted without asking the database. A change to an
// account on any replica (a rotated or revoked token) evicts its tokens at once through the
// store's account notifications (and every action reads its account's status in its own
// transaction); the TTL only bounds the memory of tokens no longer used. It is longer than a
// game's stages, so that a player who acts once a stage is not read from the database each time
// (at 30 s, every action of the benchmark's big lobby was a round trip of its own).
const tokenCacheTTL = 5 * time.Minute

// maxCachedTokens bounds the cache: past it, it starts over. It holds a big lobby's players.
const maxCachedTokens = 250_000

// unknownTokenTTL is how long a token found unknown is answered 401 without asking the database
// again. Tokens are random: no valid token is ever unknown first.
const unknownTokenTTL = 10 * time.Second

// tokenCache remembers which account a token belongs to, or that it belongs to none, so that an
// authenticated request, or a repeated bogus one, needs no database round trip of its own.
// Tokens are kept only by their hash.
type tokenCache struct {
	mu      sync.Mutex
	entries map[[32]byte]cachedAccount
	// generation counts evictions: an account read from the database before an eviction is not
	// cached after it, since the read may predate the change that caused it.
	generation uint64
}

type cachedAccount struct {
	account tournament.Account
	known   bool
	expires time.Time
}

// get returns the cached answer for a token: its account and whether it is known, and cached
// false when the database must be asked.
func (c *tokenCache) get(key [32]byte, now time.Time) (a tournament.Account, known, cached bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || now.After(e.expires) {
		return tournament.Account{}, false, false
	}
	return e.account, e.known, true
}

// currentGeneration is to be read before the database read whose result put caches.
func (c *tokenCache) currentGeneration() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.generation
}

// put caches a token's account read from the database when generation (read before the read)
// is still current, for no longer than graceLeft when it is a token a rotation replaced (> 0):
// its grace ends with no change to the account that would evict it.
func (c *tokenCache) put(key [32]byte, a tournament.Account, known bool, generation uint64, now time.Time, graceLeft time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if generation != c.generation {
		return
	}
	if c.entries == nil || len(c.entries) > maxCachedTokens {
		// Entries expire quickly; starting over is cheaper than tracking age for eviction.
		c.entries = map[[32]byte]cachedAccount{}
	}
	ttl := tokenCacheTTL
	if !known {
		ttl = unknownTokenTTL
	}
	if graceLeft > 0 {
		ttl = min(ttl, graceLeft)
	}
	c.entries[key] = cachedAccount{account: a, known: known, expires: now.Add(ttl)}
}

// forgetAccount drops every cached token of an account, or of every account when id is "".
func (c *tokenCache) forgetAccount(id tournament.AccountID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.generation++
	if id == "" {
		clear(c.entries)
		return
	}
	for k, e := range c.entries {
		if e.known && e.account.ID == id {
			delete(c.entries, k)
		}
	}
}

type callerKey struct{}

// callerTokenKey holds the bearer token a caller authenticated with (which a rotation keeps
// valid for a grace period).
type callerTokenKey struct{}

func callerToken(ctx context.Context) string {
	token, _ := ctx.Value(callerTokenKey{}).(string)
	return token
}

// caller is the authenticated account of a request, if any.
func caller(ctx context.Context) (tournament.Account, bool) {
	a, ok := ctx.Value(callerKey{}).(tournament.Account)
	return a, ok
}

// bearerToken extracts the token of an Authorization header; ok is false when the header is
// absent, and err set when it is present but malformed.
func bearerToken(r *http.Request) (token string, ok bool, err error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", false, nil
	}
	scheme, token, found := strings.Cut(h, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return "", true, errors.New("the Authorization header must be 'Bearer <token>'")
	}
	return strings.TrimSpace(token), true, nil
}

type rejectedKey struct{}

// authenticate resolves the bearer token, if one is sent, to its account and puts it in the
// request's context. An unknown, revoked or malformed token is not refused here: anonymous
// operations ignore the Authorization header, and the operations that use a caller refuse it
// (requireAccount, optionalCaller). Authenticated callers are rate-limited by account, everyone
// else by address. A token the cache does not know is first charged to its address's lookup
// budget (as large as the anonymous one, but apart, so that anonymous traffic never keeps a
// player from signing in), so that made-up tokens cannot make the database work faster than that.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isProbe(r.URL.Path) {
			// Never limited: a probe answered 429 gets a healthy replica restarted.
			next.ServeHTTP(w, r)
			return
		}
		now := time.Now()
		ctx := r.Context()
		token, sent, err := bearerToken(r)
		var account tournament.Account
		known := false
		switch {
		case err != nil:
			ctx = context.WithValue(ctx, rejectedKey{}, err.Error())
		case sent:
			key := store.TokenHash(token)
			var cached bool
			if account, known, cached = s.tokens.get(key, now); !cached {
				if ok, retry := s.lookupLimits.allow(requestInfoOf(ctx).ip, now); !ok {
					s.writeProblem(w, r, rateLimited(retry))
					return
				}
				if account, known, err = s.lookupToken(ctx, key, token, now); err != nil {
					s.writeProblem(w, r, err)
					return
				}
			}
			if !known {
				ctx = context.WithValue(ctx, rejectedKey{}, "unknown or revoked token")
			}
		}
		if known {
			if ok, retry := s.tokenLimits.allow(string(account.ID), now); !ok {
				s.writeProblem(w, r, rateLimited(retry))
				return
			}
			ctx = context.WithValue(ctx, callerKey{}, account)
			ctx = context.WithValue(ctx, callerTokenKey{}, token)
		} else if ok, retry := s.ipLimits.allow(requestInfoOf(ctx).ip, now); !ok {
			s.writeProblem(w, r, rateLimited(retry))
			return
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// isProbe reports whether path is a health probe's.
func isProbe(path string) bool { return path == "/healthz" || path == "/readyz" }

// lookupToken asks the database for a token's account and caches the answer, known or not.
func (s *Server) lookupToken(ctx context.Context, key [32]byte, token string, now time.Time) (tournament.Account, bool, error) {
	generation := s.tokens.currentGeneration()
	account, graceLeft, retired, err := s.store.AccountByToken(ctx, token)
	if retired {
		// The token a rotation replaced no longer works: drop it from the cache.
		s.tokens.forgetAccount(account.ID)
	}
	if errors.Is(err, tournament.ErrNotFound) {
		s.tokens.put(key, account, false, generation, now, 0)
		return account, false, nil
	} else if err != nil {
		return account, false, err
	}
	s.tokens.put(key, account, true, generation, now, graceLeft)
	return account, true, nil
}

func rateLimited(retryAfter int) *problemError {
	p := newProblem(http.StatusTooManyRequests, ProblemCodeRateLimited, "too many requests; retry later")
	p.retryAfter = retryAfter
	return p
}

// requireAccount returns the caller, or 401.
func requireAccount(ctx context.Context) (tournament.Account, error) {
	a, ok, err := optionalCaller(ctx)
	if err == nil && !ok {
		err = errUnauthorized
	}
	return a, err
}

// optionalCaller returns the caller if a token was sent, 401 if the token sent is not valid, and
// 403 account_disabled if an admin disabled the caller's account. The account comes from the
// token cache, so another replica's disabling reaches reads here within tokenCacheTTL; every
// mutation also reads the status in its own transaction (store.ErrAccountDisabled), at once.
func optionalCaller(ctx context.Context) (tournament.Account, bool, error) {
	if reason, rejected := ctx.Value(rejectedKey{}).(string); rejected {
		return tournament.Account{}, false, newProblem(http.StatusUnauthorized, ProblemCodeUnauthorized, reason)
	}
	a, ok := caller(ctx)
	if ok && a.DisabledAt != 0 {
		return a, false, errAccountDisabled
	}
	return a, ok, nil
}

// adminOperations are the operations only an admin may call, by the embedded spec's operation
// ids (the generated handlers' names; their descriptions in openapi.yaml
// begin "Admin only"; a test pins the two together). The request validator refuses anyone else
// before it judges the request's parameters or body: a player learns nothing of what an admin
// route accepts, and is told 403, not 400 (issue 29). The handlers still take the admin's
// account from requireAdmin.
var adminOperations = map[string]bool{
	"IssueToken": true, "CreditAccount": true, "DebitAccount": true, "SearchAccounts": true,
	"DisableAccount": true, "EnableAccount": true, "ListAudit": true, "GetAdminLedger": true,
	"CreateLobby": true, "SetNextConfig": true, "CloseLobby": true, "StopGame": true,
	"RecoverKeys": true,
}

// requireAdmin returns the calling admin: 401 for anonymous callers, 403 for players.
func requireAdmin(ctx context.Context) (tournament.Account, error) {
	a, err := requireAccount(ctx)
	if err != nil {
		return a, err
	}
	if a.Role != tournament.RoleAdmin {
		return a, errAdminOnly
	}
	return a, nil
}

func actorOf(a tournament.Account) tournament.Actor {
	return tournament.Actor{ID: a.ID, Role: a.Role}
}
