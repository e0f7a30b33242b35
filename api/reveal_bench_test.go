package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/commitreveal/rps/internal/apitest"
)

// BenchmarkRevealRequest sends reveals through the whole handler stack in process (the
// middleware, validation, the handler, store.Act against a real database, the answer), with an
// Idempotency-Key as the app sends one. One op is one reveal: the first of a round's two, then
// the one that resolves it (both players play rock, so both go on to the next round). The
// commits are sent with the timer stopped. cpu-µs/op is this process's CPU (rpsd's side and the
// harness, not PostgreSQL's), ns/op the wall time including the database's round trips.
func BenchmarkRevealRequest(b *testing.B) {
	e := apitest.Start(b)
	week := int64(7 * 24 * time.Hour / time.Millisecond)
	players := []apitest.Player{e.NewPlayer("p", 0), e.NewPlayer("q", 0)}
	lobby := e.CreateLobby(map[string]any{"betSize": 0, "playersCountLimit": 2, "startWhenFull": true,
		"moveTimeoutMs": week, "revealTimeoutMs": week, "maxRounds": 0}).Id.String()
	for _, p := range players {
		e.Register(lobby, p).Want(b, http.StatusCreated)
	}
	handler := e.Server.Handler()
	path := "/v1/lobbies/" + lobby + "/reveals"
	var cpu int64 // ns
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		p := players[i%2]
		reveal := fmt.Sprintf("0%s-round-%d-password", p.Name, i/2)
		if i%2 == 0 {
			b.StopTimer()
			for _, q := range players {
				e.Commit(lobby, q, fmt.Sprintf("0%s-round-%d-password", q.Name, i/2)).Want(b, http.StatusOK)
			}
			b.StartTimer()
		}
		start := processCPU()
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{"reveal":"`+reveal+`"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+p.Token)
		req.Header.Set("Idempotency-Key", fmt.Sprintf("reveal-%d", i))
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, req)
		cpu += processCPU() - start
		if w.Code != http.StatusOK {
			b.Fatalf("reveal %d: %d %s", i, w.Code, w.Body)
		}
	}
	b.ReportMetric(float64(cpu)/1e3/float64(b.N), "cpu-µs/op")
}
