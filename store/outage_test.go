package store

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/internal/pgtest"
	"github.com/commitreveal/rps/tournament"
	"github.com/commitreveal/rps/tournament/tournamenttest"
)

// outageFixture is two replicas (stores with pools of their own) on one database with an outage
// threshold of one second, and helpers to play the database's outage on it.
type outageFixture struct {
	replicas [2]*Store
	admin    tournament.Actor
}

func newOutageFixture(t *testing.T, threshold time.Duration) *outageFixture {
	t.Helper()
	url := pgtest.NewURL(t)
	f := &outageFixture{}
	for i := range f.replicas {
		s := New(openPool(t, url), Options{Service: fastService(), OutageThreshold: threshold})
		t.Cleanup(s.Close)
		f.replicas[i] = s
	}
	t.Cleanup(func() { checkLedger(t, f.replicas[0]); checkReferences(t, f.replicas[0]); checkRows(t, f.replicas[0]) })
	f.admin = admin(t, f.replicas[0])
	return f
}

// movesWithOneCommit opens a two-player game in its moves stage where the first player has
// committed and the second has not: were its deadline applied, the first would win alone.
func (f *outageFixture) movesWithOneCommit(t *testing.T, name string) (tournament.LobbyID, tournament.Actor) {
	t.Helper()
	s := f.replicas[0]
	lobby := createLobby(t, s, f.admin, fastConfig(60_000))
	first, second := player(t, s, name+"-1", 100), player(t, s, name+"-2", 100)
	for _, p := range []tournament.Actor{first, second} {
		if err := register(s, p, lobby); err != nil {
			t.Fatal(err)
		}
	}
	if err := commit(s, first, lobby, "1"+name); err != nil {
		t.Fatal(err)
	}
	return lobby, second
}

func commit(s *Store, a tournament.Actor, lobby tournament.LobbyID, reveal string) error {
	ctx := context.Background()
	return s.RunLobby(ctx, lobby, func(tx tournament.Tx, now int64) error {
		return s.service.Commit(ctx, tx, now, a, lobby, engine.Commit(reveal))
	})
}

// outage plays a database that every replica lost a minute ago, and that was out when the open
// moves stages fell due, 30 s ago: the newest heartbeat is a minute old.
func (f *outageFixture) outage(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if _, err := f.replicas[0].pool.Exec(ctx, `UPDATE heartbeats SET beat_at = `+clockSQL+` - 60000`); err != nil {
		t.Fatal(err)
	}
	if _, err := f.replicas[0].pool.Exec(ctx, `UPDATE games
		SET stage_started_at = stage_started_at - (deadline - (`+clockSQL+` - 30000)), deadline = `+clockSQL+` - 30000
		WHERE stage = 'moves'`); err != nil {
		t.Fatal(err)
	}
}

// shifts returns the gaps of a lobby's clock_shifted events, and the types of its events.
func shifts(t *testing.T, s *Store, lobby tournament.LobbyID) ([]int64, []tournament.EventType) {
	t.Helper()
	events, err := s.Events(context.Background(), lobby, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	gaps, types, err := tournamenttest.ClockShifts(events)
	if err != nil {
		t.Fatal(err)
	}
	return gaps, types
}

// TestDatabaseOutageShiftsBeforeExpiring: the database was unreachable from every replica, which
// stayed up, for longer than the outage threshold (the newest heartbeat of any replica is a
// minute old) and open moves stages fell due meanwhile. When it is back, the first transaction
// that would apply an expiry, here an action, finds the gap: the clock shifts by it first, once
// across the replicas, with one clock_shifted per lobby, and nobody is eliminated. (The clock
// workers finding it first: package clock's TestWorkersShiftOnceAfterAnOutage.)
func TestDatabaseOutageShiftsBeforeExpiring(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newOutageFixture(t, time.Second)
	acted, late := f.movesWithOneCommit(t, "acted")
	clocked, _ := f.movesWithOneCommit(t, "clocked")
	if _, err := f.replicas[0].Recover(ctx); err != nil {
		t.Fatal(err)
	}

	// An action first, on the second replica: the player who had not committed yet still can.
	f.outage(t)
	before, err := f.replicas[1].Lobby(ctx, clocked)
	if err != nil {
		t.Fatal(err)
	}
	if err := commit(f.replicas[1], late, acted, "2late"); err != nil {
		t.Fatalf("a commit after the outage: %v, want it accepted after the shift", err)
	}
	for _, lobby := range []tournament.LobbyID{acted, clocked} {
		gaps, types := shifts(t, f.replicas[0], lobby)
		if len(gaps) != 1 || gaps[0] < 60_000 || gaps[0] > 70_000 {
			t.Fatalf("lobby %s: clock_shifted gaps %v, want one of about 60000 ms; events %v", lobby, gaps, types)
		}
	}
	after, err := f.replicas[1].Lobby(ctx, clocked)
	if err != nil {
		t.Fatal(err)
	}
	gaps, _ := shifts(t, f.replicas[0], clocked)
	if after.Game.Stage != tournament.StageMoves || after.Game.Deadline != before.Game.Deadline+gaps[0] {
		t.Errorf("the other lobby after the shift: %s with deadline %d, want moves with %d + %d",
			after.Game.Stage, after.Game.Deadline, before.Game.Deadline, gaps[0])
	}
	if v, err := f.replicas[0].Lobby(ctx, acted); err != nil || v.Game.Stage != tournament.StageReveal {
		t.Errorf("the acted lobby: %+v (%v), want the reveal stage with both players", v.Game, err)
	}
}

// TestStalledReplicaAloneIsNoOutage: a replica that stops beating (a long GC pause, an
// overloaded host) while another beats shifts nothing when it acts again.
func TestStalledReplicaAloneIsNoOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newOutageFixture(t, 300*time.Millisecond)
	lobby, late := f.movesWithOneCommit(t, "stalled")
	if _, err := f.replicas[0].Recover(ctx); err != nil {
		t.Fatal(err)
	}
	beating(t, f.replicas[1]) // the live replica beats; the first one stalls
	time.Sleep(time.Second)
	if err := commit(f.replicas[0], late, lobby, "3stalled"); err != nil {
		t.Fatal(err)
	}
	if gaps, types := shifts(t, f.replicas[0], lobby); len(gaps) != 0 {
		t.Errorf("clock_shifted gaps %v after one replica stalled, want none; events %v", gaps, types)
	}
}

// beating records a replica's heartbeat every BeatInterval, as its clock worker does, until the
// test ends.
func beating(t *testing.T, s *Store) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(s.BeatInterval())
		defer tick.Stop()
		for {
			if _, err := s.Recover(ctx); err != nil && ctx.Err() == nil {
				t.Errorf("heartbeat: %v", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// TestReplicaStoppedMidBeatIsNoOutage: a replica stopped (SIGSTOP, a VM frozen) in the middle of
// its heartbeat's transaction, holding what that transaction locks, while another replica goes on
// beating, shifts nothing. Before, every beat updated one shared row under its lock: the live
// replica's beats waited for the stopped one, the row aged past the threshold, and the clock
// shifted as after an outage (found by the fault tests: one of two replicas paused for 2.4 s
// shifted every lobby by 2.5 s).
func TestReplicaStoppedMidBeatIsNoOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newOutageFixture(t, 300*time.Millisecond)
	lobby, late := f.movesWithOneCommit(t, "midbeat")
	if _, err := f.replicas[0].Recover(ctx); err != nil {
		t.Fatal(err)
	}
	// The first replica is stopped inside Recover, the heartbeat's transaction, past its write.
	stopped, err := f.replicas[0].pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stopped.Exec(ctx, `INSERT INTO heartbeats (replica, beat_at) VALUES ($1, `+clockSQL+`)
		ON CONFLICT (replica) DO UPDATE SET beat_at = excluded.beat_at`, f.replicas[0].replica); err != nil {
		t.Fatal(err)
	}
	beating(t, f.replicas[1]) // the live replica beats
	time.Sleep(time.Second)
	if err := stopped.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if err := commit(f.replicas[1], late, lobby, "3midbeat"); err != nil {
		t.Fatal(err)
	}
	if gaps, types := shifts(t, f.replicas[1], lobby); len(gaps) != 0 {
		t.Errorf("clock_shifted gaps %v after one replica stopped mid-beat, want none; events %v", gaps, types)
	}
}

// TestTheHeartbeatDoesNotWaitForThePool: with every connection of the store's pool held, as by
// requests that saturate it, a beat is still recorded at once: the heartbeat has a connection of
// its own, so a busy pool does not age the beats into an outage. (Through the pool, the beat
// waited for a free connection until its context ended.)
func TestTheHeartbeatDoesNotWaitForThePool(t *testing.T) {
	cfg, err := pgxpool.ParseConfig(pgtest.NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := New(pool, Options{Service: fastService()})
	t.Cleanup(s.Close)
	var held []*pgxpool.Conn
	for range cfg.MaxConns {
		c, err := pool.Acquire(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	defer func() {
		for _, c := range held {
			c.Release()
		}
	}()
	// Not a timing: the bound only ends a beat that waits for the pool, which never frees.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if _, err := s.Recover(ctx); err != nil {
		t.Fatalf("a beat with the pool exhausted: %v", err)
	}
	var beats int
	if err := held[0].QueryRow(ctx, `SELECT count(*) FROM heartbeats WHERE replica = $1`, s.replica).Scan(&beats); err != nil || beats != 1 {
		t.Fatalf("%d beats of the replica (%v)", beats, err)
	}
}
