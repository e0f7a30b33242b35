package faulttest

import (
	"sync"
	"time"

	"github.com/commitreveal/rps/tournament"
)

// Op is one operation of the history: what a client invoked, when, and what it got.
type Op struct {
	Lobby tournament.LobbyID
	// Client numbers the client that invoked it (within the whole run).
	Client int
	Input  Input
	Output Output
	// Call and Return are the wall-clock instants of the first attempt and of the answer, in
	// Unix nanoseconds (Return is the moment the client gave up for an unanswered one).
	Call, Return int64
	// Key is the Idempotency-Key every attempt carried ("" for reads).
	Key string
	// Attempts counts the requests sent; Ambiguous those of them whose outcome the client could
	// not know (no answer, a timeout, a 5xx).
	Attempts, Ambiguous int
	// Answered is false when no attempt got a definite answer; Replayed when the answer was a
	// replay of an earlier attempt's outcome.
	Answered, Replayed bool
	// Hedged: the first attempt went to two replicas at once; Mismatch says how their two
	// definite answers differed ("" when they agreed).
	Hedged   bool
	Mismatch string
}

// History records operations from many goroutines.
type History struct {
	mu  sync.Mutex
	ops []*Op
}

func (h *History) add(op *Op) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, op)
}

// Ops returns the recorded operations.
func (h *History) Ops() []*Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*Op(nil), h.ops...)
}

// Len is the number of recorded operations.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ops)
}

func nowNanos() int64 { return time.Now().UnixNano() }

// millis is a wall-clock nanosecond instant in whole milliseconds, as the server counts them.
func millis(ns int64) int64 { return ns / int64(time.Millisecond) }
