package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/tournament"
	"github.com/commitreveal/rps/tournament/tournamenttest"
)

// queued is the number of players' calls waiting for the running transaction of the lobby's committer.
func (cs *committers) queued(lobby tournament.LobbyID) int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.queueOf(&call{lobby: lobby}).waiting)
}

// running reports whether the lobby's committer is running a transaction.
func (cs *committers) running(lobby tournament.LobbyID) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.queueOf(&call{lobby: lobby}).running
}

// runAsBatch makes the calls one batch, in the order given: it holds the lobby with an action that
// waits, queues the calls one after another behind it, then lets the held action end.
func runAsBatch(t *testing.T, s *Store, lobby tournament.LobbyID, calls ...func()) {
	t.Helper()
	ctx := context.Background()
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	wg.Go(func() {
		err := s.RunLobby(ctx, lobby, func(tournament.Tx, int64) error {
			once.Do(func() { close(held) })
			<-release
			return nil
		})
		if err != nil {
			t.Errorf("holding action: %v", err)
		}
	})
	<-held
	for i, c := range calls {
		wg.Go(c)
		for s.commit.queued(lobby) < i+1 {
			time.Sleep(time.Millisecond)
		}
	}
	close(release)
	wg.Wait()
}

// txID is the id of the transaction tx runs in.
func txID(t *testing.T, tx tournament.Tx) int64 {
	t.Helper()
	var id int64
	if err := queryRow(context.Background(), tx.(*pgTx).tx, `SELECT txid_current()`).Scan(&id); err != nil {
		t.Errorf("txid: %v", err)
	}
	return id
}

// outcome is an answer as the tests render it: 200 "ok <instant>", or 409 with the refusal's code.
type outcome struct {
	Status  int
	Body    []byte
	Refused error
}

// keyedResult is what an idempotent call returned.
type keyedResult struct {
	out      outcome
	replayed bool
	err      error
	tx       int64
}

// testOp is an operation made of a function of the core's Tx, for the tests: a refusal is its
// result's, any other error fails it.
type testOp struct {
	lobby tournament.LobbyID
	fn    func(ctx context.Context, tx tournament.Tx, now int64) error
}

func (o testOp) Lobby() tournament.LobbyID { return o.lobby }

func (o testOp) Apply(ctx context.Context, _ *tournament.Service, tx tournament.Tx, now int64, _ tournament.Actor) (tournament.Result, error) {
	err := o.fn(ctx, tx, now)
	if refusal, ok := tournament.IsRefusal(err); ok {
		return tournament.Result{Refusal: refusal, At: now}, nil
	}
	return tournament.Result{At: now}, err
}

// render renders an answer as outcome.
func render(a Answer) outcome {
	if r := a.Result.Refusal; r != nil {
		return outcome{Status: 409, Body: []byte(r.Code), Refused: r}
	}
	return outcome{Status: 200, Body: fmt.Appendf(nil, "ok %d", a.Result.At)}
}

// keyed runs action like the API does: under key (nil: none), through Act.
func keyed(t *testing.T, s *Store, lobby tournament.LobbyID, key *IdempotencyKey, r *keyedResult,
	action func(ctx context.Context, tx tournament.Tx, now int64) error) func() {
	return func() {
		ctx := context.Background()
		answer, err := s.Act(ctx, Action{Actor: tournament.Actor{ID: actorOf(key)}, Key: key, Op: testOp{lobby, func(ctx context.Context, tx tournament.Tx, now int64) error {
			r.tx = txID(t, tx)
			return action(ctx, tx, now)
		}}})
		r.out, r.replayed, r.err = render(answer), answer.Replayed, err
		if err != nil {
			r.out = outcome{}
		}
	}
}

// actorOf is the account acting under key ("" without a key).
func actorOf(key *IdempotencyKey) tournament.AccountID {
	if key == nil {
		return ""
	}
	return key.AccountID
}

func registerAction(s *Store, a tournament.Actor, lobby tournament.LobbyID) func(context.Context, tournament.Tx, int64) error {
	return func(ctx context.Context, tx tournament.Tx, now int64) error {
		return s.service.Register(ctx, tx, now, a, lobby)
	}
}

func key(a tournament.Actor, name, request string) *IdempotencyKey {
	hash := sha256.Sum256([]byte(request))
	return &IdempotencyKey{AccountID: a.ID, Method: "POST", Route: "/register", Key: name, RequestHash: hash[:]}
}

// batchLobby returns a store, its admin and a lobby of up to 10 players with stage timeouts of ms.
// The store's clock is clock, set to 1,000,000, or the database's when clock is nil.
func batchLobby(t *testing.T, clock *atomic.Int64, ms int64) (*Store, tournament.Actor, tournament.LobbyID) {
	t.Helper()
	opts := Options{Service: fastService()}
	if clock != nil {
		clock.Store(1_000_000)
		opts.Now = clock.Load
	}
	s := newStore(t, opts)
	cfg := fastConfig(ms)
	cfg.PlayersCountLimit = 10
	adm := admin(t, s)
	return s, adm, createLobby(t, s, adm, cfg)
}

// TestBatchKeepsEachOutcome runs, in one batch, registrations that succeed, a refusal, a
// validation failure, a duplicate of a key stored earlier in the same batch, the same key with
// another request, and a call without a key: each gets the outcome it would have had alone, in
// arrival order, and only the stored outcomes are replayed to later retries.
func TestBatchKeepsEachOutcome(t *testing.T) {
	t.Parallel()
	var clock atomic.Int64
	s, adm, lobby := batchLobby(t, &clock, 60_000)
	ctx := context.Background()
	p1, poor, p3, p4 := player(t, s, "p1", 100), player(t, s, "poor", 5), player(t, s, "p3", 100), player(t, s, "p4", 100)

	var first, refused, invalid, duplicate, conflict, third, unkeyed keyedResult
	runAsBatch(t, s, lobby,
		keyed(t, s, lobby, key(p1, "k1", "register"), &first, registerAction(s, p1, lobby)),
		keyed(t, s, lobby, key(poor, "k2", "register"), &refused, registerAction(s, poor, lobby)),
		keyed(t, s, lobby, key(adm, "k3", "stop"), &invalid, func(ctx context.Context, tx tournament.Tx, now int64) error {
			return s.service.Stop(ctx, tx, now, adm, lobby, " ")
		}),
		keyed(t, s, lobby, key(p1, "k1", "register"), &duplicate, registerAction(s, p1, lobby)),
		keyed(t, s, lobby, key(p1, "k1", "another request"), &conflict, registerAction(s, p1, lobby)),
		keyed(t, s, lobby, key(p3, "k4", "register"), &third, registerAction(s, p3, lobby)),
		keyed(t, s, lobby, nil, &unkeyed, registerAction(s, p4, lobby)),
	)

	if first.err != nil || first.replayed || first.out.Status != 200 {
		t.Errorf("first registration: %+v", first)
	}
	if refused.err != nil || refused.out.Status != 409 || string(refused.out.Body) != string(tournament.CodeInsufficientFunds) {
		t.Errorf("refused registration: %+v", refused)
	}
	if refusalCode(invalid.out.Refused) != tournament.CodeValidationFailed {
		t.Errorf("invalid stop: %+v", invalid)
	}
	if duplicate.err != nil || !duplicate.replayed || string(duplicate.out.Body) != string(first.out.Body) {
		t.Errorf("duplicate: %+v, want a replay of %+v", duplicate, first)
	}
	if !errors.Is(conflict.err, ErrIdempotencyConflict) {
		t.Errorf("same key, another request: %+v, want a conflict", conflict)
	}
	if third.err != nil || unkeyed.err != nil || third.out.Status != 200 || unkeyed.out.Status != 200 {
		t.Errorf("later registrations: %+v, %+v", third, unkeyed)
	}
	// Every call that ran its action ran it in the batch's one transaction.
	for _, r := range []keyedResult{refused, invalid, third, unkeyed} {
		if r.tx != first.tx {
			t.Errorf("a call ran in transaction %d, the batch's first in %d", r.tx, first.tx)
		}
	}

	// The registrations in arrival order, charged once each; the refused player kept its money.
	players, err := s.Players(ctx, lobbyGame(t, s, lobby), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := []tournament.AccountID{p1.ID, p3.ID, p4.ID}
	if len(players) != len(want) {
		t.Fatalf("players %+v, want %v", players, want)
	}
	for i, p := range players {
		if p.AccountID != want[i] || p.Order != i+1 {
			t.Errorf("player %d: %+v, want %s with order %d", i, p, want[i], i+1)
		}
	}
	for _, c := range []struct {
		a    tournament.Actor
		want int64
	}{{p1, 90}, {poor, 5}, {p3, 90}, {p4, 90}} {
		if a, err := s.Account(ctx, c.a.ID); err != nil || a.Balance != c.want {
			t.Errorf("balance of %s: %d (%v), want %d", c.a.ID, a.Balance, err, c.want)
		}
	}

	// Retries alone: the stored outcomes come back; the validation failure was not stored.
	var retry keyedResult
	keyed(t, s, lobby, key(poor, "k2", "register"), &retry, registerAction(s, poor, lobby))()
	if !retry.replayed || string(retry.out.Body) != string(tournament.CodeInsufficientFunds) {
		t.Errorf("retry of the refusal: %+v (%v)", retry, retry.err)
	}
	keyed(t, s, lobby, key(adm, "k3", "stop"), &retry, func(ctx context.Context, tx tournament.Tx, now int64) error {
		return s.service.Stop(ctx, tx, now, adm, lobby, "corrected")
	})()
	if retry.replayed || retry.err != nil || retry.out.Status != 200 {
		t.Errorf("corrected retry of the validation failure: %+v, want it run", retry)
	}
	tournamenttest.VerifyLobby(t, ctx, backend{s}, lobby)
}

// lobbyGame is the lobby's current game.
func lobbyGame(t *testing.T, s *Store, lobby tournament.LobbyID) tournament.GameID {
	t.Helper()
	v, err := s.Lobby(context.Background(), lobby)
	if err != nil {
		t.Fatal(err)
	}
	return v.Game.ID
}

// TestBatchExpiryInside moves the clock past the entry deadline between two calls of one batch:
// the call before it registers, the expiry applies before the next call, which is refused
// because round 1 has started, and the call after it commits in round 1; the same player's
// second commit in the batch sees the first.
func TestBatchExpiryInside(t *testing.T) {
	t.Parallel()
	var clock atomic.Int64
	s, _, lobby := batchLobby(t, &clock, 1000)
	ctx := context.Background()
	p1, p2, p3, late := player(t, s, "p1", 100), player(t, s, "p2", 100), player(t, s, "p3", 100), player(t, s, "late", 100)
	for _, p := range []tournament.Actor{p1, p2} {
		if err := register(s, p, lobby); err != nil {
			t.Fatal(err)
		}
	}
	clock.Store(1_000_500)

	var third, tooLate, commit, again keyedResult
	commitAction := func(ctx context.Context, tx tournament.Tx, now int64) error {
		return s.service.Commit(ctx, tx, now, p1, lobby, engine.CommitMove(0, "salt-of-p1"))
	}
	runAsBatch(t, s, lobby,
		keyed(t, s, lobby, key(p3, "r", "register"), &third, func(ctx context.Context, tx tournament.Tx, now int64) error {
			err := s.service.Register(ctx, tx, now, p3, lobby)
			clock.Store(1_001_500) // past the deadline at 1_001_000, before the next call
			return err
		}),
		keyed(t, s, lobby, key(late, "r", "register"), &tooLate, registerAction(s, late, lobby)),
		keyed(t, s, lobby, key(p1, "c1", "commit"), &commit, commitAction),
		keyed(t, s, lobby, key(p1, "c2", "commit again"), &again, commitAction),
	)
	if refusalCode(again.out.Refused) != tournament.CodeAlreadyCommitted {
		t.Errorf("second commit of p1 in the batch: %+v, want already_committed", again)
	}
	if third.out.Status != 200 || commit.out.Status != 200 {
		t.Errorf("registration before the deadline %+v, commit after it %+v: want both done", third, commit)
	}
	if refusalCode(tooLate.out.Refused) != tournament.CodeWrongStage {
		t.Errorf("registration after the deadline: %+v, want wrong_stage", tooLate)
	}
	if third.tx != tooLate.tx || tooLate.tx != commit.tx {
		t.Errorf("transactions %d, %d, %d: want one batch", third.tx, tooLate.tx, commit.tx)
	}
	v, err := s.Lobby(ctx, lobby)
	if err != nil {
		t.Fatal(err)
	}
	if v.Game.Stage != tournament.StageMoves || v.Game.Round != 1 || v.Game.Players != 3 || v.Game.Committed != 1 {
		t.Errorf("game %+v: want round 1's moves stage with 3 players, 1 committed", v.Game)
	}
	if a, err := s.Account(ctx, late.ID); err != nil || a.Balance != 100 {
		t.Errorf("the late player's balance: %d (%v), want 100", a.Balance, err)
	}
	tournamenttest.VerifyLobby(t, ctx, backend{s}, lobby)
}

// TestBatchFailureRunsOthersAlone fails one call of a batch with an unexpected error, and panics
// in a call of another batch: each batch rolls back and its calls run again alone, so the others
// succeed; the failing call gets its error, and the panic is raised again in its own caller's
// goroutine (without running the action again).
func TestBatchFailureRunsOthersAlone(t *testing.T) {
	t.Parallel()
	s, _, lobby := batchLobby(t, nil, 60_000)
	ctx := context.Background()
	var players []tournament.Actor
	for i := range 6 {
		players = append(players, player(t, s, fmt.Sprint("p", i), 100))
	}
	boom := errors.New("boom")

	var before, failing, after keyedResult
	var failures, panics atomic.Int32
	runAsBatch(t, s, lobby,
		keyed(t, s, lobby, key(players[0], "k0", "register"), &before, registerAction(s, players[0], lobby)),
		keyed(t, s, lobby, key(players[1], "k1", "register"), &failing, func(ctx context.Context, tx tournament.Tx, now int64) error {
			if err := s.service.Register(ctx, tx, now, players[1], lobby); err != nil {
				return err
			}
			failures.Add(1)
			return boom
		}),
		keyed(t, s, lobby, key(players[2], "k2", "register"), &after, registerAction(s, players[2], lobby)),
	)
	if before.err != nil || before.out.Status != 200 || after.err != nil || after.out.Status != 200 {
		t.Errorf("the calls around the failing one: %+v, %+v: want both registered", before, after)
	}
	if !errors.Is(failing.err, boom) || failures.Load() != 2 {
		t.Errorf("failing call: %+v after %d runs, want boom after 2 (in the batch, then alone)", failing, failures.Load())
	}

	var recovered any
	runAsBatch(t, s, lobby,
		keyed(t, s, lobby, nil, &before, registerAction(s, players[3], lobby)),
		func() {
			defer func() { recovered = recover() }()
			_ = s.RunLobby(ctx, lobby, func(tx tournament.Tx, now int64) error {
				if err := s.service.Register(ctx, tx, now, players[4], lobby); err != nil {
					return err
				}
				panics.Add(1)
				panic("bug")
			})
		},
		keyed(t, s, lobby, nil, &after, registerAction(s, players[5], lobby)),
	)
	if before.err != nil || before.out.Status != 200 || after.err != nil || after.out.Status != 200 {
		t.Errorf("the calls around the panicking one: %+v, %+v: want both registered", before, after)
	}
	if recovered != "bug" || panics.Load() != 1 {
		t.Errorf("panicking call: recovered %v after %d runs, want bug after 1", recovered, panics.Load())
	}

	registered, err := s.Players(ctx, lobbyGame(t, s, lobby), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(registered) != 4 {
		t.Errorf("players %+v, want p0, p2, p3 and p5", registered)
	}
	for i, want := range []int64{90, 100, 90, 90, 100, 90} {
		if a, err := s.Account(ctx, players[i].ID); err != nil || a.Balance != want {
			t.Errorf("balance of p%d: %d (%v), want %d", i, a.Balance, err, want)
		}
	}
	tournamenttest.VerifyLobby(t, ctx, backend{s}, lobby)
}

// TestLonePanicFreesLobby panics in an action that runs alone while others wait for it: the panic
// reaches its caller, and the waiting actions still run.
func TestLonePanicFreesLobby(t *testing.T) {
	t.Parallel()
	s, _, lobby := batchLobby(t, nil, 60_000)
	ctx := context.Background()
	p1, p2 := player(t, s, "p1", 100), player(t, s, "p2", 100)
	held := make(chan struct{})
	var recovered any
	var wg sync.WaitGroup
	wg.Go(func() {
		defer func() { recovered = recover() }()
		_ = s.RunLobby(ctx, lobby, func(tournament.Tx, int64) error {
			<-held
			panic("bug")
		})
	})
	for !s.commit.running(lobby) {
		time.Sleep(time.Millisecond)
	}
	errs := make([]error, 2)
	for i, p := range []tournament.Actor{p1, p2} {
		wg.Go(func() { errs[i] = register(s, p, lobby) })
		for s.commit.queued(lobby) < i+1 {
			time.Sleep(time.Millisecond)
		}
	}
	close(held)
	wg.Wait()
	if recovered != "bug" {
		t.Errorf("recovered %v, want the panic", recovered)
	}
	if errs[0] != nil || errs[1] != nil {
		t.Errorf("the waiting registrations: %v", errs)
	}
}

// TestBatchSettlesWhatItsCallsEnded stops a game in play by an action that is not its batch's
// first: the call that ended the game settles it (the batch's leader settles only what its own action
// ended), so the game counts in the standings once, as when it ends alone.
func TestBatchSettlesWhatItsCallsEnded(t *testing.T) {
	t.Parallel()
	var clock atomic.Int64
	s, adm, lobby := batchLobby(t, &clock, 1000)
	ctx := context.Background()
	p1, p2, p3 := player(t, s, "p1", 100), player(t, s, "p2", 100), player(t, s, "p3", 100)
	for _, p := range []tournament.Actor{p1, p2} {
		if err := register(s, p, lobby); err != nil {
			t.Fatal(err)
		}
	}
	game := lobbyGame(t, s, lobby)
	var first, stop keyedResult
	runAsBatch(t, s, lobby,
		keyed(t, s, lobby, key(p3, "r", "register"), &first, func(ctx context.Context, tx tournament.Tx, now int64) error {
			err := s.service.Register(ctx, tx, now, p3, lobby)
			clock.Store(1_001_500) // past the registration deadline: the stop starts round 1 first
			return err
		}),
		keyed(t, s, lobby, key(adm, "s", "stop"), &stop, func(ctx context.Context, tx tournament.Tx, now int64) error {
			return s.service.Stop(ctx, tx, now, adm, lobby, "test")
		}),
	)
	if first.tx != stop.tx || first.out.Status != 200 || stop.out.Status != 200 {
		t.Fatalf("registration %+v, stop %+v: want both done in one batch", first, stop)
	}
	var settled bool
	var counted int
	err := s.pool.QueryRow(ctx, `SELECT settled, (SELECT count(*) FROM account_totals WHERE games > 0)
		FROM games WHERE id = $1`, game).Scan(&settled, &counted)
	if err != nil || !settled || counted != 3 {
		t.Fatalf("stopped game settled %v with %d players counted (%v), want settled with 3", settled, counted, err)
	}
}

// TestConcurrentBetsSpendOnce: a player's balance covers one bet, and the player registers in
// several lobbies at once, each registration in a batch with others: the balance is read
// unlocked, so all may see it, but exactly one bet is taken, the others are refused
// insufficient_funds (a bet that a concurrent one made too large fails the balance check when
// written, and its batch runs again), and nobody else's registration fails.
func TestConcurrentBetsSpendOnce(t *testing.T) {
	t.Parallel()
	s := newStore(t, Options{Service: fastService()})
	ctx := context.Background()
	adm := admin(t, s)
	cfg := fastConfig(60_000)
	cfg.PlayersCountLimit = 10
	for round := range 5 {
		spender := player(t, s, fmt.Sprint("spender", round), 10)
		var wg sync.WaitGroup
		var taken, refused, failed atomic.Int32
		for l := range 4 {
			lobby := createLobby(t, s, adm, cfg)
			others := []tournament.Actor{player(t, s, fmt.Sprint("a", round, l), 10), player(t, s, fmt.Sprint("b", round, l), 10)}
			for _, a := range append(others, spender) {
				wg.Go(func() {
					answer, err := s.Act(ctx, Action{Actor: a, Op: tournament.Register{LobbyID: lobby}})
					switch {
					case err != nil:
						failed.Add(1)
						t.Errorf("register %s: %v", a.ID, err)
					case a.ID != spender.ID:
						if answer.Result.Refusal != nil {
							failed.Add(1)
							t.Errorf("register %s: %v", a.ID, answer.Result.Refusal)
						}
					case a.ID == spender.ID && answer.Result.Refusal == nil:
						taken.Add(1)
					case a.ID == spender.ID && answer.Result.Refusal.Code == tournament.CodeInsufficientFunds:
						refused.Add(1)
					default:
						t.Errorf("register %s: %v", a.ID, answer.Result.Refusal)
					}
				})
			}
		}
		wg.Wait()
		if taken.Load() != 1 || refused.Load() != 3 || failed.Load() != 0 {
			t.Fatalf("round %d: %d bets taken, %d refused, %d failures; want 1, 3, 0", round, taken.Load(), refused.Load(), failed.Load())
		}
		if a, err := s.Account(ctx, spender.ID); err != nil || a.Balance != 0 {
			t.Fatalf("round %d: the spender's balance %d (%v), want 0", round, a.Balance, err)
		}
	}
}

// TestExpiriesDoNotWaitForPlayersTransactions holds the players' committer with a transaction
// that waits, and expires another lobby whose deadline has passed: the expiry, in the
// committer of expiries, commits meanwhile.
func TestExpiriesDoNotWaitForPlayersTransactions(t *testing.T) {
	t.Parallel()
	var clock atomic.Int64
	s, adm, busy := batchLobby(t, &clock, 1000)
	due := createLobby(t, s, adm, fastConfig(1000))
	for _, name := range []string{"p1", "p2"} {
		if err := register(s, player(t, s, name, 100), due); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	holding, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(release)
	wg.Go(func() {
		err := s.RunLobby(ctx, busy, func(tournament.Tx, int64) error {
			close(holding)
			<-release
			return nil
		})
		if err != nil {
			t.Errorf("holding action: %v", err)
		}
	})
	<-holding
	clock.Store(1_001_500) // past the registration's deadline at 1_001_000
	expired := make(chan Answer, 1)
	wg.Go(func() {
		answer, err := s.Act(ctx, Action{Op: tournament.Expire{LobbyID: due}})
		if err != nil {
			t.Errorf("expire: %v", err)
		}
		expired <- answer
	})
	select {
	case answer := <-expired:
		if !answer.Result.Expired || answer.Result.Game.Stage != tournament.StageMoves {
			t.Errorf("the expiry: %+v, want the registration's deadline applied", answer.Result)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the expiry waited for the players' transaction")
	}
}
