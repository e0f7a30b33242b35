package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/commitreveal/rps/tournament"
)

// rewriteLog replaces a lobby's log in the database by edit's version of it, renumbered from 1
// and re-hashed into a valid chain, as an operator with database access could.
func (s *server) rewriteLog(lobby string, edit func([]tournament.LoggedEvent) []tournament.LoggedEvent) {
	s.t.Helper()
	ctx := s.t.Context()
	events, err := s.Store.Events(ctx, tournament.LobbyID(lobby), 0, 100_000)
	if err != nil {
		s.t.Fatalf("read log: %v", err)
	}
	events = edit(append([]tournament.LoggedEvent(nil), events...))
	var prev [32]byte
	for i := range events {
		e := &events[i]
		e.Seq, e.PrevHash = int64(i+1), prev
		if e.Hash, err = tournament.ChainHash(*e); err != nil {
			s.t.Fatalf("re-hash: %v", err)
		}
		prev = e.Hash
	}
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		// The chain's foreign key would refuse rows rewritten one by one.
		if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM events WHERE lobby_id = $1`, lobby); err != nil {
			return err
		}
		for _, e := range events {
			var game any
			if e.GameID != "" {
				game = string(e.GameID)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO events (lobby_id, seq, type, game_id, at, data, prev_hash, hash)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, lobby, e.Seq, e.Type, game, e.At, string(e.Data), e.PrevHash[:], e.Hash[:]); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `UPDATE lobbies SET last_seq = $2, last_hash = $3 WHERE id = $1`, lobby, len(events), prev[:])
		return err
	})
	if err != nil {
		s.t.Fatalf("rewrite log: %v", err)
	}
}

func (s *server) exec(sql string, args ...any) {
	s.t.Helper()
	if _, err := s.Pool.Exec(context.Background(), sql, args...); err != nil {
		s.t.Fatalf("%s: %v", sql, err)
	}
}

// firstGame is the id of a lobby's first game.
func (s *server) firstGame(lobby string) string {
	s.t.Helper()
	var id string
	if err := s.Pool.QueryRow(context.Background(), `SELECT id::text FROM games WHERE lobby_id = $1 AND number = 1`, lobby).Scan(&id); err != nil {
		s.t.Fatalf("first game: %v", err)
	}
	return id
}

// seqOf is the seq of the nth (from 1) event of a type in a lobby's log.
func seqOf(es []tournament.LoggedEvent, typ tournament.EventType, n int) int {
	for i, e := range es {
		if e.Type == typ {
			if n--; n == 0 {
				return i
			}
		}
	}
	return -1
}

func TestVerifierNamesTampering(t *testing.T) {
	s := newServer(t)
	cases := []struct {
		name string
		// tamper changes the lobby's data and returns the failure the verifier must report.
		tamper func(lobby, game string, ps []player) Failure
	}{
		{"an old reveal edited", func(lobby, game string, ps []player) Failure {
			s.exec(`UPDATE round_moves SET reveal = convert_to('0tampered', 'UTF8') WHERE game_id = $1 AND round = 1 AND account_id = $2`, game, ps[1].ID)
			return Failure{Game: game, Round: 1, Item: "reveal of " + ps[1].ID}
		}},
		{"a payout changed", func(lobby, game string, ps []player) Failure {
			s.exec(`UPDATE ledger_entries SET amount = amount - sign(amount) WHERE game_id = $1 AND kind = 'payout'`, game)
			return Failure{Game: game, Round: 2, Item: "payout to " + ps[0].ID, Expected: "300", Found: "299"}
		}},
		{"an event's data edited and the chain re-hashed", func(lobby, game string, ps []player) Failure {
			var seq int64
			s.rewriteLog(lobby, func(es []tournament.LoggedEvent) []tournament.LoggedEvent {
				i := seqOf(es, tournament.EventMovesClosed, 2)
				var d tournament.MovesClosedData
				_ = json.Unmarshal(es[i].Data, &d)
				d.Digest = "00" + d.Digest[2:]
				es[i].Data, _ = tournament.Canonical(d)
				// Checked when round_resolved reveals the salt.
				seq = es[seqOf(es, tournament.EventRoundResolved, 2)].Seq
				return es
			})
			return Failure{Seq: seq, Game: game, Round: 2, Item: "commitments digest"}
		}},
		{"a revealed salt changed and the chain re-hashed", func(lobby, game string, ps []player) Failure {
			var seq int64
			s.rewriteLog(lobby, func(es []tournament.LoggedEvent) []tournament.LoggedEvent {
				i := seqOf(es, tournament.EventRoundResolved, 1)
				var d tournament.RoundResolvedData
				_ = json.Unmarshal(es[i].Data, &d)
				d.Salt = strings.Repeat("5a", 32)
				es[i].Data, _ = tournament.Canonical(d)
				seq = es[i].Seq
				return es
			})
			return Failure{Seq: seq, Game: game, Round: 1, Item: "commitments digest"}
		}},
		{"a revealed salt dropped and the chain re-hashed", func(lobby, game string, ps []player) Failure {
			var seq int64
			s.rewriteLog(lobby, func(es []tournament.LoggedEvent) []tournament.LoggedEvent {
				i := seqOf(es, tournament.EventRoundResolved, 2)
				var d tournament.RoundResolvedData
				_ = json.Unmarshal(es[i].Data, &d)
				d.Salt = "" // as in a log older than salts: the digest would be unsalted
				es[i].Data, _ = tournament.Canonical(d)
				seq = es[i].Seq
				return es
			})
			return Failure{Seq: seq, Game: game, Round: 2, Item: "commitments digest"}
		}},
		{"an event deleted and the log renumbered", func(lobby, game string, ps []player) Failure {
			var seq int64
			s.rewriteLog(lobby, func(es []tournament.LoggedEvent) []tournament.LoggedEvent {
				i := seqOf(es, tournament.EventMoveCommitted, 1)
				seq = es[i].Seq
				return append(es[:i], es[i+1:]...)
			})
			return Failure{Seq: seq, Game: game, Round: 1, Item: "committed", Expected: "1", Found: "2"}
		}},
		{"a game's winner swapped", func(lobby, game string, ps []player) Failure {
			s.exec(`UPDATE games SET winner = $2 WHERE id = $1`, game, ps[1].ID)
			return Failure{Game: game, Round: 2, Item: "winner", Expected: ps[0].ID, Found: ps[1].ID}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lobby, ps := s.quickGame()
			if code, out, _ := s.verify("--lobby", lobby); code != exitOK {
				t.Fatalf("before tampering: exit %d\n%s", code, out)
			}
			want := c.tamper(lobby, s.firstGame(lobby), ps)
			code, out, rep := s.verify("--lobby", lobby, "--json")
			if code != exitFailed || len(rep.Lobbies) != 1 || rep.Lobbies[0].Failure == nil {
				t.Fatalf("after tampering: exit %d, want %d\n%s", code, exitFailed, out)
			}
			got := *rep.Lobbies[0].Failure
			if got.Lobby != lobby || got.Game != want.Game || got.Round != want.Round || got.Item != want.Item ||
				(want.Seq != 0 && got.Seq != want.Seq) ||
				(want.Expected != "" && (got.Expected != want.Expected || got.Found != want.Found)) {
				t.Errorf("failure %+v, want %+v", got, want)
			}
			_, text, _ := s.verify("--lobby", lobby)
			t.Logf("%s", text)
		})
	}
}

func TestReceiptsProveARewrite(t *testing.T) {
	s := newServer(t)
	lobby, _ := s.quickGame()
	state := t.TempDir() + "/state.json"
	if code, out, _ := s.verify("--lobby", lobby, "--state", state); code != exitOK {
		t.Fatalf("before the rewrite: exit %d\n%s", code, out)
	}
	// A rotated key stays published, so the receipts it signed stay checkable.
	if _, err := s.Store.RotateSigningKey(t.Context()); err != nil {
		t.Fatal(err)
	}
	keys := s.do("GET", "/v1/keys", "", nil, 200)["keys"].([]any)
	if len(keys) != 2 || keys[0].(map[string]any)["validUntil"] != nil || keys[1].(map[string]any)["validUntil"] == nil {
		t.Fatalf("keys after a rotation: %v", keys)
	}

	// The operator rewrites the lobby's history with its own key: the log alone still verifies.
	s.rewriteLog(lobby, func(es []tournament.LoggedEvent) []tournament.LoggedEvent {
		var created tournament.LobbyCreatedData
		_ = json.Unmarshal(es[0].Data, &created)
		created.Name = "rewritten"
		es[0].Data, _ = tournament.Canonical(created)
		return es
	})
	if code, out, _ := s.verify("--lobby", lobby); code != exitOK {
		t.Fatalf("the rewritten log alone: exit %d\n%s", code, out)
	}
	code, out, rep := s.verify("--receipts", state, "--json")
	if code != exitFailed || len(rep.Lobbies) != 1 || rep.Lobbies[0].Fork == nil {
		t.Fatalf("receipts: exit %d, want %d\n%s", code, exitFailed, out)
	}
	fork := rep.Lobbies[0].Fork
	if fork.Receipt.Hash == fork.CurrentHashAtSeq || fork.Current.LobbyId.String() != lobby || fork.Current.Seq < fork.Receipt.Seq {
		t.Errorf("fork proof %+v", fork)
	}
	_, text, _ := s.verify("--receipts", state)
	for _, want := range []string{"FORK", "receipt: {", "current: {"} {
		if !strings.Contains(text, want) {
			t.Errorf("the proof lacks %q:\n%s", want, text)
		}
	}
	t.Logf("%s", text)
}
