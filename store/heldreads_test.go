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

// rowReads counts the round trips (pipelined batches of statements) and, among their statements,
// those that read one registration or one move by its key (pgTx's Player and RoundMove when the
// transaction does not hold the row).
type rowReads struct {
	mu         sync.Mutex
	reads      []string
	roundTrips int
}

func (r *rowReads) note(sql string) {
	if strings.Contains(sql, "FROM game_players WHERE game_id = $1 AND account_id = $2") ||
		strings.Contains(sql, "FROM round_moves rm WHERE game_id = $1 AND round = $2 AND account_id = $3") {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.reads = append(r.reads, sql[:strings.Index(sql, " WHERE")])
	}
}

func (r *rowReads) take() ([]string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	reads, trips := r.reads, r.roundTrips
	r.reads, r.roundTrips = nil, 0
	return reads, trips
}

func (r *rowReads) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	r.note(data.SQL)
	return ctx
}

func (r *rowReads) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *rowReads) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.roundTrips++
	return ctx
}

func (r *rowReads) TraceBatchQuery(_ context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	r.note(data.SQL)
}

func (r *rowReads) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// TestStageChangeInABatchMakesNoRoundTrip runs, in one batch, the reveal that resolves a round of
// lobby A (rock beats scissors: one player out, round 2 starts) and then a commit in lobby B. The
// batch read A's round whole with its locks, so the round is counted, its reveals sealed and its
// loser put out from memory, and round 2 has no moves yet: the batch takes two round trips, its
// reads and its writes with the COMMIT. (Before, five: the count and the seal each read the
// round after writing what the batch held, and the elimination made the reveal's answer read its
// player's registration again; and before that, B's commit read its own too, and the answer its
// player's move in round 2, which cannot exist yet.)
func TestStageChangeInABatchMakesNoRoundTrip(t *testing.T) {
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
	if got, trips := reads.take(); len(got) != 0 || trips != 2 {
		t.Errorf("the batch took %d round trips, reading %d rows by key in its middle (%q); want 2 and none", trips, len(got), got)
	}
	after, err := s.Lobby(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if after.Game.Round != 2 || after.Game.Active != 2 {
		t.Errorf("lobby A after the batch: round %d, %d active; want round 2, 2 active", after.Game.Round, after.Game.Active)
	}
}
