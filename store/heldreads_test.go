package store

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/tournament"
	"github.com/jackc/pgx/v5"
)

// rowReads counts the statements that read one registration or one move by its key (pgTx's
// Player and RoundMove when the transaction does not hold the row): each is a round trip of its
// own in the middle of a batch.
type rowReads struct {
	mu    sync.Mutex
	reads []string
}

func (r *rowReads) note(sql string) {
	if strings.Contains(sql, "FROM game_players WHERE game_id = $1 AND account_id = $2") ||
		strings.Contains(sql, "FROM round_moves rm WHERE game_id = $1 AND round = $2 AND account_id = $3") {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.reads = append(r.reads, sql[:strings.Index(sql, " WHERE")])
	}
}

func (r *rowReads) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	reads := r.reads
	r.reads = nil
	return reads
}

func (r *rowReads) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	r.note(data.SQL)
	return ctx
}

func (r *rowReads) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *rowReads) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (r *rowReads) TraceBatchQuery(_ context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	r.note(data.SQL)
}

func (r *rowReads) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// TestStageChangeReadsOnlyWhatItChanged runs, in one batch, the reveal that resolves a round of
// lobby A (rock beats scissors: one player out, round 2 starts) and then a commit in lobby B.
// The round's elimination changes only A's registrations, and round 2 has no moves yet: the
// batch reads again only the resolving player's registration in A. (Before, the elimination
// dropped every registration the batch held, so B's commit read its player again, and the
// reveal's answer read its player's move in round 2, which cannot exist yet: three round trips
// in the middle of the batch.)
func TestStageChangeReadsOnlyWhatItChanged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reads := &rowReads{}
	s := New(tracedPool(t, reads), Options{Service: newService()})
	t.Cleanup(func() { checkLedger(t, s); checkReferences(t, s); checkRows(t, s); s.Close() })
	adm := admin(t, s)
	act := func(a tournament.Actor, op tournament.Operation) {
		t.Helper()
		answer, err := s.Act(ctx, Action{Actor: a, Op: op})
		if err != nil || answer.Result.Refusal != nil {
			t.Fatalf("%T: %v, refused %v", op, err, answer.Result.Refusal)
		}
	}
	three := fastConfig(60_000)
	three.PlayersCountLimit = 3
	a := createLobby(t, s, adm, three)
	b := createLobby(t, s, adm, fastConfig(60_000))
	reveals := []string{"0rock-1", "0rock-2", "2scissors-3"}
	var as, bs []tournament.Actor
	for i, reveal := range reveals {
		p := player(t, s, "a"+reveal, 100)
		as = append(as, p)
		if err := register(s, p, a); err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			q := player(t, s, "b"+reveal, 100)
			bs = append(bs, q)
			if err := register(s, q, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, p := range as {
		act(p, tournament.Commit{LobbyID: a, Commitment: engine.Commit(reveals[i])})
	}
	for i, p := range as[:2] {
		act(p, tournament.Reveal{LobbyID: a, Reveal: reveals[i]})
	}
	reads.take()

	callOf := func(actor tournament.Actor, op tournament.Operation) *call {
		return &call{ctx: ctx, lobby: op.Lobby(), actor: actor, apply: func(t *pgTx, now int64) (tournament.Result, error) {
			return op.Apply(ctx, s.service, t, now, actor)
		}}
	}
	batch := []*call{
		callOf(as[2], tournament.Reveal{LobbyID: a, Reveal: reveals[2]}),
		callOf(bs[0], tournament.Commit{LobbyID: b, Commitment: engine.Commit("1paper")}),
	}
	if split, _ := s.commitBatch(batch); split {
		t.Fatal("the batch failed as a whole")
	}
	for _, c := range batch {
		if c.err != nil || c.answer.Result.Refusal != nil {
			t.Fatalf("%v, refused %v", c.err, c.answer.Result.Refusal)
		}
	}
	resolved := batch[0].answer.Result
	if resolved.Game.Round != 2 || resolved.Player == nil || resolved.Player.Active || resolved.Move != nil {
		t.Fatalf("the reveal's answer: round %d, player %+v, move %+v; want round 2, its player out, no move",
			resolved.Game.Round, resolved.Player, resolved.Move)
	}
	if got := reads.take(); len(got) != 1 || !strings.Contains(got[0], "FROM game_players") {
		t.Errorf("the batch read %d rows by key in its middle (%q), want 1: the resolving player's registration", len(got), got)
	}
}
