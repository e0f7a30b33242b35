package faulttest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/internal/apiclient"
	"github.com/commitreveal/rps/tournament"
)

// Options configure a Run.
type Options struct {
	// Seed seeds every random choice of the workload (the nemesis has its own, from the same).
	Seed uint64
	// Lobbies is how many lobbies are played at once.
	Lobbies int
	// PlayFor is how long the players play before the lobbies are closed.
	PlayFor time.Duration
	// URLs returns the base URLs of the replicas a request may go to.
	URLs func() []string
	// AdminToken is the bootstrap admin's token.
	AdminToken string
	// MinTimeoutMs is the servers' minimum stage timeout (the model's too).
	MinTimeoutMs int64
	// Logf reports progress.
	Logf func(format string, args ...any)
}

// Run plays many small lobbies through the replicas and records every operation.
type Run struct {
	Options
	history *History
	rng     *mrand.Rand // setup only, under mu
	mu      sync.Mutex
	clients int
	// soft ends the play; hard ends every retry (an operation then stays unanswered).
	soft, hard context.Context

	failedReads atomic.Int64
	admin       tournament.AccountID
	// origin is the transparency log's origin, which every signed action names.
	origin  string
	lobbies []*lobbyRun
	// Logs holds each lobby's whole log, read when everything had ended.
	Logs map[tournament.LobbyID][]LogEvent
	// Ledgers holds each player's ledger entries, read at the end.
	Ledgers map[tournament.AccountID][]LedgerEntry
	// Balances holds each player's balance, read once its lobby's last game had ended.
	Balances map[tournament.AccountID]int64
	// Audit holds the admin audit log's entries of credits and debits, by the memo that marks
	// each operation (a replayed retry writes none; an executed request one).
	Audit map[string][]AuditEntry
	// Unended lists the lobbies whose last game did not end after they were closed.
	Unended []tournament.LobbyID
}

// lobbyRun is one lobby and its clients.
type lobbyRun struct {
	id      tournament.LobbyID
	name    string
	config  tournament.Config
	players []*Client
	admin   *Client
	// follower reads the log as a live client would.
	follower *Client
	rng      *mrand.Rand
	configs  int
	stops    int
	// ctx ends the lobby's play; finished tells that it was closed and its last game ended.
	ctx      context.Context
	finished bool
}

// lobbyLife is how long a lobby is played before it is closed and another takes its place: a
// long run plays many lobbies, whose histories each stay short enough to check.
const lobbyLife = 90 * time.Second

// LedgerEntry is one of a player's ledger entries as GET /v1/me/ledger shows it.
type LedgerEntry struct {
	At     time.Time `json:"at"`
	Amount int64     `json:"amount"`
	Kind   string    `json:"kind"`
	Memo   *string   `json:"memo"`
}

// AuditEntry is an entry of the admin audit log, as far as a credit or a debit goes.
type AuditEntry struct {
	At     time.Time `json:"at"`
	Action string    `json:"action"`
	Detail struct {
		Request struct {
			Memo string `json:"memo"`
		} `json:"request"`
		Status int `json:"status"`
	} `json:"detail"`
}

// NewRun prepares a run.
func NewRun(o Options) *Run {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return &Run{Options: o, history: &History{}, rng: mrand.New(mrand.NewPCG(o.Seed, 1)),
		Logs: map[tournament.LobbyID][]LogEvent{}, Ledgers: map[tournament.AccountID][]LedgerEntry{},
		Audit: map[string][]AuditEntry{}, Balances: map[tournament.AccountID]int64{}}
}

// History is what the run recorded.
func (r *Run) History() *History { return r.history }

func (r *Run) urls() []string { return r.URLs() }

func (r *Run) countFailedRead() { r.failedReads.Add(1) }

// setupCall sends a request that is not part of the history (setup), retrying it through
// faults until it gets status want, and decodes the answer into out.
// setupError is a set-up call's last answer when it was not the one wanted.
type setupError struct {
	method, path string
	status       int
	body         []byte
}

func (e *setupError) Error() string {
	return fmt.Sprintf("%s %s: status %d %s", e.method, e.path, e.status, e.body)
}

// signUp creates a player account named after base, born with a key of its own (a signed
// sign_up), and returns that key. Creating an account takes no Idempotency-Key (its token is
// shown once): when an attempt's answer is lost, the account it created is out of reach and a
// retry finds the name or the key taken (a 20-minute run on the formation stopped on key_taken),
// so each try takes a new name and a new key.
func (r *Run) signUp(ctx context.Context, base string, out any) (apiclient.PlayerKey, error) {
	for try := 0; ; try++ {
		name := base
		if try > 0 {
			name = fmt.Sprintf("%s-%d", base, try)
		}
		key := apiclient.NewPlayerKey()
		sig, err := key.Sign(tournament.ActionMessage{Origin: r.origin, Action: tournament.ActionSignUp,
			Payload: tournament.ActionPayload{Name: name, PublicKey: key.PublicKey()}}, time.Now())
		if err != nil {
			return key, err
		}
		err = r.setupCall(ctx, r.newClient("", "", ""), http.MethodPost, "/v1/accounts",
			map[string]string{"name": name, "publicKey": key.PublicKey()}, http.StatusCreated, out, sig.Pairs()...)
		var se *setupError
		if err == nil || try >= 10 || !errors.As(err, &se) || se.status != http.StatusConflict ||
			!(bytes.Contains(se.body, []byte(`"name_taken"`)) || bytes.Contains(se.body, []byte(`"key_taken"`))) {
			return key, err
		}
	}
}

func (r *Run) setupCall(ctx context.Context, c *Client, method, path string, body any, want int, out any, headers ...string) error {
	key := newKey()
	for attempt := 1; ; attempt++ {
		a := c.send(ctx, method, path, key, body, headers...)
		if a.status == want {
			if out == nil {
				return nil
			}
			return json.Unmarshal(a.body, out)
		}
		if a.definite || ctx.Err() != nil || attempt > 200 {
			return &setupError{method: method, path: path, status: a.status, body: a.body}
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
}

// Play sets the lobbies up, plays until o.PlayFor has passed (faults are the caller's, meanwhile),
// and returns once every client has stopped. hard bounds everything, retries included.
func (r *Run) Play(hard context.Context) error {
	soft, cancel := context.WithTimeout(hard, r.PlayFor)
	defer cancel()
	r.soft, r.hard = soft, hard
	adminClient := r.newClient("", "", r.AdminToken)
	var me struct {
		ID tournament.AccountID `json:"id"`
	}
	if err := r.setupCall(hard, adminClient, http.MethodGet, "/v1/me", nil, http.StatusOK, &me); err != nil {
		return fmt.Errorf("read the admin: %w", err)
	}
	r.admin = me.ID
	var log struct {
		Origin string `json:"origin"`
	}
	if err := r.setupCall(hard, adminClient, http.MethodGet, "/v1/log", nil, http.StatusOK, &log); err != nil {
		return fmt.Errorf("read the log's origin, which players' signatures name: %w", err)
	}
	r.origin = log.Origin
	var wg sync.WaitGroup
	errs := make([]error, r.Lobbies)
	for i := range r.Lobbies {
		wg.Go(func() { errs[i] = r.playSlot(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// playSlot plays lobby after lobby in one of the run's slots until the play ends; the last one
// is left for Finish.
func (r *Run) playSlot(slot int) error {
	for generation := 0; r.soft.Err() == nil; generation++ {
		l, err := r.setupLobby(r.hard, slot, generation)
		if err != nil {
			return err
		}
		r.mu.Lock()
		r.lobbies = append(r.lobbies, l)
		r.mu.Unlock()
		var cancel context.CancelFunc
		l.ctx, cancel = context.WithTimeout(r.soft, lobbyLife)
		var wg sync.WaitGroup
		for _, p := range l.players {
			wg.Go(func() { r.playPlayer(l, p) })
		}
		wg.Go(func() { r.playAdmin(l) })
		wg.Go(func() { r.follow(l) })
		wg.Wait()
		cancel()
		if r.soft.Err() != nil {
			return nil
		}
		r.finishLobby(l)
	}
	return nil
}

// Finish closes every lobby, waits for its last game to end by itself, and reads what the
// checks need: the balances, the lobbies and their whole logs (all recorded), and the ledgers.
func (r *Run) Finish() error {
	var wg sync.WaitGroup
	for _, l := range r.lobbies {
		if !l.finished {
			wg.Go(func() { r.finishLobby(l) })
		}
	}
	wg.Wait()
	for _, l := range r.lobbies {
		log, err := r.wholeLog(l)
		if err != nil {
			return err
		}
		r.Logs[l.id] = log
		for _, p := range l.players {
			entries, err := r.ledger(p)
			if err != nil {
				return err
			}
			r.Ledgers[p.account] = entries
		}
	}
	return r.readAudit()
}

// readAudit reads the admin audit log's entries of credits and debits.
func (r *Run) readAudit() error {
	admin := r.newClient("", r.admin, r.AdminToken)
	after := ""
	for {
		path := "/v1/admin/audit?limit=500"
		if after != "" {
			path += "&after=" + after
		}
		var page struct {
			Entries []AuditEntry `json:"entries"`
			Next    *string      `json:"next"`
		}
		if err := r.setupCall(r.hard, admin, http.MethodGet, path, nil, http.StatusOK, &page); err != nil {
			return fmt.Errorf("read the audit log: %w", err)
		}
		for _, e := range page.Entries {
			if memo := e.Detail.Request.Memo; memo != "" {
				r.Audit[memo] = append(r.Audit[memo], e)
			}
		}
		if page.Next == nil {
			return nil
		}
		after = *page.Next
	}
}

// lobbyConfig is a small, quick config: 2 or 3 players, stages of under a second.
func lobbyConfig(rng *mrand.Rand, minTimeoutMs int64, unique int) tournament.Config {
	c := tournament.DefaultConfig()
	c.BetSize = 5 + rng.Int64N(11)
	c.PlayersCountLimit = 2 + rng.IntN(2)
	timeout := func() int64 { return max(minTimeoutMs, 350+rng.Int64N(450)) }
	// The entry timeout tells the configs of one lobby apart, so that an unanswered change can
	// be found in the log.
	c.EntryTimeoutMs = timeout() + int64(unique)
	c.MoveTimeoutMs, c.RevealTimeoutMs = timeout(), timeout()
	if rng.IntN(3) == 0 {
		c.Ruleset = "rps"
	}
	if rng.IntN(3) == 0 {
		c.Resolution = engine.Weighted
	}
	c.StartWhenFull = rng.IntN(4) != 0
	c.MaxExtensions = 1 + rng.IntN(2)
	c.MaxRounds = 2 + rng.IntN(3)
	return c
}

func (r *Run) setupLobby(ctx context.Context, i, generation int) (*lobbyRun, error) {
	rng := mrand.New(mrand.NewPCG(r.Seed, uint64(100+i+1000*generation)))
	l := &lobbyRun{name: fmt.Sprintf("faults %d.%d", i, generation), rng: rng}
	l.config = lobbyConfig(rng, r.MinTimeoutMs, 0)
	admin := r.newClient("", r.admin, r.AdminToken)
	var created struct {
		ID tournament.LobbyID `json:"id"`
	}
	if err := r.setupCall(ctx, admin, http.MethodPost, "/v1/lobbies", map[string]any{"name": l.name, "config": l.config}, http.StatusCreated, &created); err != nil {
		return nil, fmt.Errorf("create lobby %d: %w", i, err)
	}
	l.id = created.ID
	admin.lobby = l.id
	l.admin = admin
	l.follower = r.newClient(l.id, "", "")
	for j := range 3 {
		var acct struct {
			Account struct {
				ID tournament.AccountID `json:"id"`
			} `json:"account"`
			Token string `json:"token"`
		}
		key, err := r.signUp(ctx, fmt.Sprintf("faults-%d-%d-%d", i, generation, j), &acct)
		if err != nil {
			return nil, fmt.Errorf("sign up: %w", err)
		}
		p := r.newClient(l.id, acct.Account.ID, acct.Token)
		p.key = key
		l.players = append(l.players, p)
		admin.moveMoney(KindCredit, p.account, 200+rng.Int64N(200))
	}
	return l, nil
}

// playPlayer plays the lobby as one player until the play ends: it reads the lobby and does
// what is due, lets a stage pass now and then (so that stages also end by the clock), and once
// in a while does something the game must refuse.
func (r *Run) playPlayer(l *lobbyRun, c *Client) {
	secrets := map[string]string{} // reveal strings by commitment
	skipped := map[string]bool{}   // the rounds this player lets pass
	for l.ctx.Err() == nil {
		sleepCtx(l.ctx, time.Duration(20+c.rng.IntN(100))*time.Millisecond)
		v, ok := c.readLobby()
		if !ok {
			sleepCtx(l.ctx, 100*time.Millisecond)
			continue
		}
		g := v.Game
		you := g.You
		if you == nil {
			you = &You{}
		}
		round := fmt.Sprintf("%s/%d", g.ID, g.Round)
		switch x := c.rng.Float64(); {
		case x < 0.03:
			r.strayAction(c, v)
		case x < 0.07:
			c.readBalance()
		case g.Stage == tournament.StageRegistration && !you.Registered:
			if c.rng.Float64() < 0.7 {
				c.register(v)
			}
		case g.Stage == tournament.StageRegistration:
			if c.rng.Float64() < 0.04 {
				c.leave(v)
			}
		case g.Stage == tournament.StageMoves && you.InGame && !you.Committed && !skipped[round]:
			if c.rng.Float64() < 0.12 {
				skipped[round] = true
				continue
			}
			moves := 5
			if g.RulesetHash != "" && v.Config.Ruleset == "rps" {
				moves = 3
			}
			digit := c.rng.IntN(moves)
			if c.rng.Float64() < 0.02 {
				digit = 9 // no weapon: its reveal is refused as invalid_move
			}
			secret := fmt.Sprintf("%d%s", digit, newKey()[:12])
			commitment := engine.Commit(secret).String()
			secrets[commitment] = secret
			c.commit(v, commitment)
		case g.Stage == tournament.StageReveal && you.Committed && !you.Revealed && !skipped[round]:
			secret, known := secrets[you.Commitment]
			switch y := c.rng.Float64(); {
			case !known || y < 0.08:
				skipped[round] = true
			case y < 0.13:
				c.reveal(v, secret+"x") // does not match: commitment_mismatch, changes nothing
			default:
				c.reveal(v, secret)
			}
		}
	}
}

// strayAction sends an action the game will most likely refuse (a wrong stage, twice, not in
// the game), so that refusals are checked too.
func (r *Run) strayAction(c *Client, v View) {
	switch c.rng.IntN(4) {
	case 0:
		c.register(v)
	case 1:
		c.leave(v)
	case 2:
		c.commit(v, engine.Commit(fmt.Sprintf("1%s", newKey()[:8])).String())
	default:
		c.reveal(v, "2"+newKey()[:8])
	}
}

// playAdmin runs the lobby as its admin: credits and debits its players, changes the next
// game's config, stops games, reads the lobby.
func (r *Run) playAdmin(l *lobbyRun) {
	c := l.admin
	for l.ctx.Err() == nil {
		sleepCtx(l.ctx, time.Duration(300+c.rng.IntN(900))*time.Millisecond)
		if l.ctx.Err() != nil {
			return
		}
		p := l.players[c.rng.IntN(len(l.players))]
		switch x := c.rng.Float64(); {
		case x < 0.25:
			c.moveMoney(KindCredit, p.account, 1+c.rng.Int64N(100))
		case x < 0.35:
			c.moveMoney(KindDebit, p.account, 1+c.rng.Int64N(60))
		case x < 0.47:
			l.configs++
			c.setNextConfig(lobbyConfig(c.rng, r.MinTimeoutMs, l.configs))
		case x < 0.55:
			l.stops++
			c.stop(fmt.Sprintf("faulttest stop %d", l.stops))
		default:
			c.readLobby()
		}
	}
}

// follow reads the lobby's log as a live client would, now and then from an earlier point.
func (r *Run) follow(l *lobbyRun) {
	c := l.follower
	var cursor int64
	for l.ctx.Err() == nil {
		sleepCtx(l.ctx, time.Duration(100+c.rng.IntN(300))*time.Millisecond)
		after := cursor
		if c.rng.IntN(20) == 0 {
			after = c.rng.Int64N(cursor + 1)
		}
		page, ok := c.readEvents(after, 1+c.rng.IntN(30))
		if ok && len(page) > 0 && after == cursor {
			cursor = page[len(page)-1].Seq
		}
	}
}

// endWait bounds how long a closed lobby's last game may take to end by itself.
const endWait = 60 * time.Second

// finishLobby closes the lobby, waits for its last game to end (nobody acts any more: it ends
// by its deadlines), and reads the final balances and lobby.
func (r *Run) finishLobby(l *lobbyRun) {
	defer func() { l.finished = true }()
	// A close given up (faults go on while a lobby is replaced) is sent again.
	for attempt := 0; attempt < 20 && l.admin.closeLobby().Outcome == ""; attempt++ {
	}
	ended := false
	for deadline := time.Now().Add(endWait); time.Now().Before(deadline) && r.hard.Err() == nil; {
		if v, ok := l.admin.readLobby(); ok && v.Closed && !v.Game.Stage.Open() {
			ended = true
			break
		}
		sleepCtx(r.hard, 200*time.Millisecond)
	}
	if !ended {
		r.mu.Lock()
		r.Unended = append(r.Unended, l.id)
		r.mu.Unlock()
	}
	// The final reads, through faults still going on: each is retried until it is answered.
	for _, p := range l.players {
		for attempt := 0; attempt < 100 && r.hard.Err() == nil; attempt++ {
			if balance, ok := p.readBalance(); ok {
				r.mu.Lock()
				r.Balances[p.account] = balance
				r.mu.Unlock()
				break
			}
			sleepCtx(r.hard, 100*time.Millisecond)
		}
		for attempt := 0; attempt < 100 && r.hard.Err() == nil; attempt++ {
			if _, ok := p.readLobby(); ok {
				break
			}
			sleepCtx(r.hard, 100*time.Millisecond)
		}
	}
}

// wholeLog reads the lobby's whole log, page by page (each page is an operation of the history).
func (r *Run) wholeLog(l *lobbyRun) ([]LogEvent, error) {
	var all []LogEvent
	for {
		var page []LogEvent
		ok := false
		for attempt := 0; attempt < 50 && !ok; attempt++ {
			page, ok = l.follower.readEvents(int64(len(all)), 500)
			if !ok {
				sleepCtx(r.hard, 100*time.Millisecond)
			}
		}
		if !ok {
			return nil, fmt.Errorf("read the log of lobby %s", l.id)
		}
		all = append(all, page...)
		if len(page) < 500 {
			return all, nil
		}
	}
}

// ledger reads a player's whole ledger.
func (r *Run) ledger(c *Client) ([]LedgerEntry, error) {
	var all []LedgerEntry
	after := ""
	for {
		path := "/v1/me/ledger?limit=500"
		if after != "" {
			path += "&after=" + after
		}
		var page struct {
			Entries []LedgerEntry `json:"entries"`
			Next    *string       `json:"next"`
		}
		if err := r.setupCall(r.hard, c, http.MethodGet, path, nil, http.StatusOK, &page); err != nil {
			return nil, fmt.Errorf("read the ledger of %s: %w", c.account, err)
		}
		all = append(all, page.Entries...)
		if page.Next == nil {
			return all, nil
		}
		after = *page.Next
	}
}

// AdminLedger reads the admin's ledger report.
func (r *Run) AdminLedger() (LedgerReport, error) {
	var report LedgerReport
	admin := r.newClient("", r.admin, r.AdminToken)
	err := r.setupCall(r.hard, admin, http.MethodGet, "/v1/admin/ledger", nil, http.StatusOK, &report)
	return report, err
}
