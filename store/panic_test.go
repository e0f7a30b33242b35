package store

import (
	"context"
	"testing"
	"time"

	"github.com/commitreveal/rps/tournament"
)

// TestPanicInTransactionReleasesLobby panics inside a transaction that holds a lobby's row lock:
// the rollback must still run, so that the next operation on the lobby goes through at once
// instead of waiting forever behind a connection that nobody returns.
func TestPanicInTransactionReleasesLobby(t *testing.T) {
	t.Parallel()
	s := newStore(t, Options{Service: fastService()})
	adm := admin(t, s)
	lobby := createLobby(t, s, adm, fastConfig(60_000))
	p := player(t, s, "p", 100)

	func() {
		defer func() {
			if v := recover(); v != "injected" {
				t.Fatalf("recovered %v, want the injected panic", v)
			}
		}()
		_ = s.RunLobby(context.Background(), lobby, func(tx tournament.Tx, now int64) error {
			panic("injected")
		})
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err := s.RunLobby(ctx, lobby, func(tx tournament.Tx, now int64) error {
		return s.service.Register(ctx, tx, now, p, lobby)
	})
	if err != nil {
		t.Fatalf("register after a panic: %v (the lobby is still locked)", err)
	}
}
