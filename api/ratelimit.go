package api

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// RateLimit is a token bucket: Rate requests per second on average, bursts of Burst. A zero Rate
// disables the limit.
type RateLimit struct {
	Rate  float64
	Burst int
}

// limiters holds one token bucket per key (an account or an IP address). Buckets unused for a
// while are dropped so the map stays as small as the set of active callers.
type limiters struct {
	limit RateLimit
	mu    sync.Mutex
	byKey map[string]*bucket
	swept time.Time
}

type bucket struct {
	limiter  *rate.Limiter
	lastSeen time.Time
}

// idleBucketTTL is how long an unused bucket is kept; a bucket that idle is full again anyway.
const idleBucketTTL = 10 * time.Minute

func newLimiters(limit RateLimit) *limiters {
	return &limiters{limit: limit, byKey: map[string]*bucket{}}
}

// allow takes a token for key, or says how many whole seconds to wait before retrying.
func (l *limiters) allow(key string, now time.Time) (ok bool, retryAfter int) {
	if l.limit.Rate <= 0 {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.swept) > idleBucketTTL {
		for k, b := range l.byKey {
			if now.Sub(b.lastSeen) > idleBucketTTL {
				delete(l.byKey, k)
			}
		}
		l.swept = now
	}
	b, found := l.byKey[key]
	if !found {
		b = &bucket{limiter: rate.NewLimiter(rate.Limit(l.limit.Rate), l.limit.Burst)}
		l.byKey[key] = b
	}
	b.lastSeen = now
	r := b.limiter.ReserveN(now, 1)
	if !r.OK() {
		return false, 1
	}
	if delay := r.DelayFrom(now); delay > 0 {
		r.CancelAt(now)
		return false, int(math.Ceil(delay.Seconds()))
	}
	return true, 0
}
