package memstore_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/tournament"
	"github.com/commitreveal/rps/tournament/memstore"
	"github.com/commitreveal/rps/tournament/tournamenttest"
)

// signersSetup is a two-player lobby in registration on a service that requires keys, with
// alice's key bound and bob without one.
type signersSetup struct {
	ctx        context.Context
	s          *memstore.Store
	svc        *tournament.Service
	lobby      tournament.LobbyID
	game       tournament.GameID
	alice, bob tournament.Actor
	now        int64
}

func setupSigners(t *testing.T, requireKeys bool) *signersSetup {
	t.Helper()
	x := &signersSetup{ctx: context.Background(), s: memstore.New(), now: tournamenttest.Start}
	x.svc = tournament.NewService(tournament.Options{Rules: engine.Builtin(), MinTimeoutMs: tournamenttest.Timeout,
		NewID: tournamenttest.NewID, NewSalt: tournamenttest.NewSalt, RequireKeys: requireKeys})
	admin := tournament.Actor{ID: tournament.AccountID(tournamenttest.NewID()), Role: tournament.RoleAdmin}
	x.alice = tournament.Actor{ID: tournament.AccountID(tournamenttest.NewID()), Role: tournament.RolePlayer}
	x.bob = tournament.Actor{ID: tournament.AccountID(tournamenttest.NewID()), Role: tournament.RolePlayer}
	for _, a := range []tournament.Actor{admin, x.alice, x.bob} {
		if err := x.s.CreateAccount(x.ctx, a.ID, string(a.ID)[:8], a.Role, 100); err != nil && a.Role == tournament.RolePlayer {
			t.Fatal(err)
		}
	}
	x.s.AddKey(x.alice.ID, "a11ce00000000001")
	cfg := tournament.DefaultConfig()
	cfg.BetSize, cfg.PlayersCountLimit = 10, 2
	if err := x.s.Do(x.ctx, func(tx tournament.Tx) (err error) {
		x.lobby, err = x.svc.CreateLobby(x.ctx, tx, x.now, admin, "signed", cfg)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	l, _ := x.s.Lobby(x.ctx, x.lobby)
	x.game = l.GameID
	return x
}

// apply runs op as actor and returns its refusal code ("" when it was done).
func (x *signersSetup) apply(t *testing.T, actor tournament.Actor, op tournament.Operation) tournament.Code {
	t.Helper()
	var r tournament.Result
	if err := x.s.Do(x.ctx, func(tx tournament.Tx) (err error) {
		r, err = op.Apply(x.ctx, x.svc, tx, x.now, actor)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if r.Refusal != nil {
		if r.Refusal.Replayable() {
			t.Errorf("%s: a refusal of a signature is stored under the request's key", r.Refusal.Code)
		}
		return r.Refusal.Code
	}
	return ""
}

func (x *signersSetup) signed(action tournament.ActionName, key string) *tournament.Signed {
	return &tournament.Signed{Action: action, KeyID: key, SignedAt: x.now, IdempotencyKey: "k-" + string(action),
		Signature: make([]byte, 64), GameID: x.game}
}

// TestSignerRules: the core's rules of players' keys, each refusal changing nothing.
func TestSignerRules(t *testing.T) {
	t.Run("an account with a key must sign", func(t *testing.T) {
		x := setupSigners(t, false)
		if code := x.apply(t, x.alice, tournament.Register{LobbyID: x.lobby}); code != tournament.CodeSignatureRequired {
			t.Fatalf("unsigned registration of an account with a key: %q, want signature_required", code)
		}
		if code := x.apply(t, x.bob, tournament.Register{LobbyID: x.lobby}); code != "" {
			t.Fatalf("unsigned registration of an account without a key, keys optional: %q", code)
		}
	})
	t.Run("keys required", func(t *testing.T) {
		x := setupSigners(t, true)
		if code := x.apply(t, x.bob, tournament.Register{LobbyID: x.lobby}); code != tournament.CodeKeyRequired {
			t.Fatalf("unsigned registration of an account without a key, keys required: %q, want key_required", code)
		}
		x.s.AddKey(x.bob.ID, "b0b0000000000001")
		x.s.RetireKey("b0b0000000000001")
		if code := x.apply(t, x.bob, tournament.Register{LobbyID: x.lobby}); code != tournament.CodeSignatureRequired {
			t.Fatalf("unsigned registration of an account whose keys are retired: %q, want signature_required", code)
		}
		if code := x.apply(t, x.bob, tournament.Register{LobbyID: x.lobby, Signed: x.signed(tournament.ActionRegister, "b0b0000000000001")}); code != tournament.CodeBadSignature {
			t.Fatalf("registration signed by a retired key: %q, want bad_signature", code)
		}
	})
	t.Run("signed for another game, round or instant", func(t *testing.T) {
		x := setupSigners(t, true)
		other := x.signed(tournament.ActionRegister, "a11ce00000000001")
		other.GameID = "00000000-0000-4000-8000-000000000000"
		if code := x.apply(t, x.alice, tournament.Register{LobbyID: x.lobby, Signed: other}); code != tournament.CodeStaleSignature {
			t.Fatalf("registration signed for another game: %q, want stale_signature", code)
		}
		old := x.signed(tournament.ActionRegister, "a11ce00000000001")
		old.SignedAt = x.now - tournament.SignatureMaxAge - 1
		if code := x.apply(t, x.alice, tournament.Register{LobbyID: x.lobby, Signed: old}); code != tournament.CodeSignatureExpired {
			t.Fatalf("registration signed a day ago: %q, want signature_expired", code)
		}
		if code := x.apply(t, x.alice, tournament.Register{LobbyID: x.lobby, Signed: x.signed(tournament.ActionRegister, "b0b0000000000001")}); code != tournament.CodeBadSignature {
			t.Fatalf("registration signed by another account's key: %q, want bad_signature", code)
		}
		events, _ := x.s.Events(x.ctx, x.lobby)
		if len(events) != 2 {
			t.Fatalf("refused registrations wrote events: %d events, want lobby_created and game_opened", len(events))
		}
		if code := x.apply(t, x.alice, tournament.Register{LobbyID: x.lobby, Signed: x.signed(tournament.ActionRegister, "a11ce00000000001")}); code != "" {
			t.Fatalf("signed registration: %q", code)
		}
		x.s.AddKey(x.bob.ID, "b0b0000000000001")
		if code := x.apply(t, x.bob, tournament.Register{LobbyID: x.lobby, Signed: x.signed(tournament.ActionRegister, "b0b0000000000001")}); code != "" {
			t.Fatalf("signed registration: %q", code)
		}
		// Round 1 started: a commit signed for round 2 is stale.
		commit := x.signed(tournament.ActionCommit, "a11ce00000000001")
		commit.Round = 2
		c := engine.Commit("0secret")
		if code := x.apply(t, x.alice, tournament.Commit{LobbyID: x.lobby, Commitment: c, Signed: commit}); code != tournament.CodeStaleSignature {
			t.Fatalf("commit signed for round 2 in round 1: %q, want stale_signature", code)
		}
		commit.Round = 1
		commit.Signature[0] = 7
		if code := x.apply(t, x.alice, tournament.Commit{LobbyID: x.lobby, Commitment: c, Signed: commit}); code != "" {
			t.Fatalf("commit signed for round 1: %q", code)
		}
		// The events record each signature: in clear for a registration, hashed for a commit.
		events, _ = x.s.Events(x.ctx, x.lobby)
		var registered tournament.PlayerRegisteredData
		var committed tournament.MoveCommittedData
		for _, e := range events {
			switch e.Type {
			case tournament.EventPlayerRegistered:
				if err := json.Unmarshal(e.Data, &registered); err != nil {
					t.Fatal(err)
				}
			case tournament.EventMoveCommitted:
				if err := json.Unmarshal(e.Data, &committed); err != nil {
					t.Fatal(err)
				}
			}
		}
		if a := registered.Auth; a == nil || a.Signature != hex.EncodeToString(make([]byte, 64)) || a.SealedSignature != "" || a.KeyID != "b0b0000000000001" {
			t.Errorf("registration's auth: %+v", a)
		}
		sealed := tournament.SealSignature(commit.Signature)
		if a := committed.Auth; a == nil || a.Signature != "" || a.SealedSignature != hex.EncodeToString(sealed[:]) || a.Action != tournament.ActionCommit {
			t.Errorf("commit's auth: %+v (the signature of a sealed value must not be in the log)", a)
		}
		moves, _ := x.s.Moves(x.ctx, x.game, 1)
		if len(moves) != 1 || moves[0].CommitSignature[0] != 7 {
			t.Errorf("the move keeps its commit's signature: %+v", moves)
		}
	})
}
