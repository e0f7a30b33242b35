package faulttest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/commitreveal/rps/internal/apiclient"
	"github.com/commitreveal/rps/tournament"
)

// Client is one user of the API (a player or the admin) behind a load balancer: every attempt
// goes to a replica picked at random, and an action is retried with its Idempotency-Key through
// network errors, timeouts, 5xx and 429 until it gets a definite answer, as a phone on a bad
// network would. It records each operation in the history.
type Client struct {
	id      int
	lobby   tournament.LobbyID
	account tournament.AccountID
	token   string
	// key signs the player's actions (the zero key: the admin, the follower).
	key  apiclient.PlayerKey
	run  *Run
	rng  *mrand.Rand
	http *http.Client
}

// attemptTimeout bounds one attempt: a replica that is stopped or cut off from the database is
// given up on for another.
const attemptTimeout = time.Second

func (r *Run) newClient(lobby tournament.LobbyID, account tournament.AccountID, token string) *Client {
	r.mu.Lock()
	r.clients++
	id := r.clients
	seed := r.rng.Uint64()
	r.mu.Unlock()
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 4
	return &Client{
		id: id, lobby: lobby, account: account, token: token, run: r,
		rng:  mrand.New(mrand.NewPCG(seed, uint64(id))),
		http: &http.Client{Transport: transport, Timeout: attemptTimeout},
	}
}

// answer is one attempt's outcome.
type answer struct {
	status   int
	body     []byte
	replayed bool
	// definite is false when the attempt's outcome is unknown: no answer, or a 5xx or a 429.
	definite bool
}

// send makes one attempt on a random replica; headers are name, value pairs.
func (c *Client) send(ctx context.Context, method, path, key string, body any, headers ...string) answer {
	urls := c.run.urls()
	return c.sendTo(ctx, urls[c.rng.IntN(len(urls))], method, path, key, body, headers...)
}

// sendTo makes one attempt on the replica at base.
func (c *Client) sendTo(ctx context.Context, base, method, path, key string, body any, headers ...string) answer {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			panic(err) // every body is a plain struct or map
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, r)
	if err != nil {
		return answer{}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return answer{}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{status: resp.StatusCode}
	}
	definite := resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests
	return answer{status: resp.StatusCode, body: raw, replayed: resp.Header.Get("Idempotent-Replayed") == "true", definite: definite}
}

// problemCode is a problem answer's code.
func problemCode(raw []byte) tournament.Code {
	var p struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(raw, &p)
	return tournament.Code(p.Code)
}

// newKey is a fresh Idempotency-Key.
func newKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// act invokes a mutation and records it. It retries until a definite answer or until the run's
// hard stop, after which the operation stays unanswered (its outcome is resolved from the log).
// A player's lobby action (signed not nil) is signed once, under the operation's Idempotency-Key,
// for the game and round of in, and every attempt carries that signature.
func (c *Client) act(in Input, method, path string, body any, want int, signed *tournament.ActionMessage) Output {
	op := &Op{Lobby: c.lobby, Client: c.id, Input: in, Key: newKey(), Call: nowNanos()}
	op.Input.FromMs = millis(op.Call)
	var headers []string
	if signed != nil {
		headers, op.Input.Signed = c.sign(*signed, op.Key)
	}
	defer c.run.history.add(op)
	backoff := 50 * time.Millisecond
	for {
		if c.run.hard.Err() != nil {
			op.Return = nowNanos()
			op.Input.ToMs = math.MaxInt64
			return Output{}
		}
		var a answer
		if op.Attempts == 0 && c.rng.IntN(hedgeOneIn) == 0 {
			a = c.hedge(op, method, path, body, headers)
		} else {
			op.Attempts++
			a = c.send(c.run.hard, method, path, op.Key, body, headers...)
		}
		if !a.definite {
			op.Ambiguous++
			if c.run.soft.Err() == nil && c.rng.IntN(abandonOneIn) == 0 {
				// The app was closed with the request in flight: the outcome stays unknown to the
				// client (the check finds it in the log), which goes on with something else.
				op.Return = nowNanos()
				op.Input.ToMs = math.MaxInt64
				return Output{}
			}
			sleepCtx(c.run.hard, backoff+time.Duration(c.rng.Int64N(int64(backoff))))
			backoff = min(2*backoff, time.Second)
			continue
		}
		op.Return = nowNanos()
		op.Input.ToMs = millis(op.Return)
		op.Answered, op.Replayed = true, a.replayed
		op.Output = c.decodeAnswer(in, a, want)
		return op.Output
	}
}

// abandonOneIn: after an attempt whose outcome it could not know, one client in this many gives
// the action up instead of retrying it.
const abandonOneIn = 8

// hedgeOneIn: one action in this many is sent twice at once, with its key, to two replicas, as a
// client hedging against a slow one would: a concurrent duplicate waits for the first and
// replays it, so both answers must be the same, byte for byte; unless one of them is a refusal
// the server keeps under no key (a validation failure, a signature refused), which changed
// nothing and is not the request's answer: the other attempt ran on its own, maybe later, in
// another state (a commit refused as stale_signature before its round began, and then, round 1
// started, not_in_game).
const hedgeOneIn = 20

// hedge sends the operation's first attempt to two replicas at once and returns an answer that
// was definite, if any; two definite answers that differ are recorded in op.Mismatch.
func (c *Client) hedge(op *Op, method, path string, body any, headers []string) answer {
	urls := c.run.urls()
	i := c.rng.IntN(len(urls))
	bases := []string{urls[i], urls[(i+1)%len(urls)]}
	answers := make([]answer, 2)
	var wg sync.WaitGroup
	for j, base := range bases {
		wg.Go(func() { answers[j] = c.sendTo(c.run.hard, base, method, path, op.Key, body, headers...) })
	}
	wg.Wait()
	op.Attempts += 2
	op.Hedged = true
	a, b := answers[0], answers[1]
	switch {
	case a.definite && b.definite:
		switch {
		case unkept(a):
			// Not the request's answer: the other is, or, unkept too, was judged on its own in
			// the state it found (two stale_signature refusals may name two games, each the
			// lobby's current one when it ran; a 6-minute run flagged such a pair).
			return b
		case unkept(b):
			return a
		}
		if a.status != b.status || !bytes.Equal(a.body, b.body) {
			op.Mismatch = fmt.Sprintf("%s answered %d %s and %d %s", strings.Join(bases, " and "), a.status, a.body, b.status, b.body)
		}
		if b.replayed {
			return a // the first execution's answer, as the other replayed it
		}
		return b
	case b.definite:
		return b
	}
	return a
}

// unkept reports whether an answer is a refusal the server keeps under no key
// (tournament.Error.Replayable).
func unkept(a answer) bool {
	code := problemCode(a.body)
	return a.status >= 400 && code != "" && !(&tournament.Error{Code: code}).Replayable()
}

// decodeAnswer turns a definite answer into the operation's output.
func (c *Client) decodeAnswer(in Input, a answer, want int) Output {
	if a.status != want {
		code := problemCode(a.body)
		if code == "" {
			code = tournament.Code(fmt.Sprintf("status_%d", a.status))
		}
		return Output{Outcome: OutcomeRefused, Code: code}
	}
	out := Output{Outcome: OutcomeOK}
	switch in.Kind {
	case KindCredit, KindDebit:
		var acct struct {
			Balance int64 `json:"balance"`
		}
		if err := json.Unmarshal(a.body, &acct); err != nil {
			return Output{Outcome: OutcomeRefused, Code: "undecodable_answer"}
		}
		out.Balance = acct.Balance
	default:
		v, at, err := decodeLobby(a.body)
		if err != nil {
			return Output{Outcome: OutcomeRefused, Code: "undecodable_answer"}
		}
		out.View, out.At = &v, at
	}
	return out
}

// read sends one read and records it when it was answered; a read that was not changed nothing
// and is left out of the history. It returns the answer's body (nil when there is none).
func (c *Client) read(in Input, path string) (Output, []byte, bool) {
	op := &Op{Lobby: c.lobby, Client: c.id, Input: in, Call: nowNanos(), Attempts: 1}
	a := c.send(c.run.hard, http.MethodGet, path, "", nil)
	op.Return = nowNanos()
	op.Input.FromMs, op.Input.ToMs = millis(op.Call), millis(op.Return)
	if a.status != http.StatusOK {
		c.run.countFailedRead()
		return Output{}, nil, false
	}
	out := Output{Outcome: OutcomeOK}
	switch in.Kind {
	case KindReadLobby:
		v, at, err := decodeLobby(a.body)
		if err != nil {
			c.run.countFailedRead()
			return Output{}, nil, false
		}
		out.View, out.At = &v, at
	case KindReadBalance:
		var me struct {
			Balance int64 `json:"balance"`
		}
		if err := json.Unmarshal(a.body, &me); err != nil {
			c.run.countFailedRead()
			return Output{}, nil, false
		}
		out.Balance = me.Balance
	case KindReadEvents:
		page, err := decodeEvents(a.body)
		if err != nil {
			c.run.countFailedRead()
			return Output{}, nil, false
		}
		for _, e := range page {
			out.Events = append(out.Events, EventRef{Seq: e.Seq, Hash: e.Hash})
		}
	}
	op.Answered, op.Output = true, out
	c.run.history.add(op)
	return out, a.body, true
}

func (c *Client) readLobby() (View, bool) {
	out, _, ok := c.read(Input{Kind: KindReadLobby, Actor: c.account}, "/v1/lobbies/"+string(c.lobby))
	if !ok {
		return View{}, false
	}
	return *out.View, true
}

func (c *Client) readBalance() (int64, bool) {
	out, _, ok := c.read(Input{Kind: KindReadBalance, Actor: c.account}, "/v1/me")
	return out.Balance, ok
}

// readEvents reads a page of the lobby's log after seq after.
func (c *Client) readEvents(after int64, limit int) ([]LogEvent, bool) {
	path := fmt.Sprintf("/v1/lobbies/%s/events?after=%d&limit=%d", c.lobby, after, limit)
	_, body, ok := c.read(Input{Kind: KindReadEvents, After: after, Limit: limit}, path)
	if !ok {
		return nil, false
	}
	page, err := decodeEvents(body)
	return page, err == nil
}

func (c *Client) lobbyPath(rest string) string { return "/v1/lobbies/" + string(c.lobby) + rest }

// sign signs the player's action m under the Idempotency-Key key, now, on the run's origin, and
// returns the Rps-* headers and the signature as the core records it.
func (c *Client) sign(m tournament.ActionMessage, key string) ([]string, *tournament.Signed) {
	m.Origin, m.Player, m.LobbyID, m.IdempotencyKey = c.run.origin, c.account, c.lobby, key
	s, err := c.key.Sign(m, time.Now())
	if err != nil {
		panic(err) // every message here is well formed
	}
	sig, err := hex.DecodeString(s.Value)
	if err != nil {
		panic(err) // Sign writes hex
	}
	return s.Pairs(), &tournament.Signed{Action: m.Action, KeyID: s.KeyID, SignedAt: s.SignedAt, IdempotencyKey: key,
		Signature: sig, GameID: m.GameID, Round: m.Round}
}

// The player's actions, each signed for the game (and round) of the lobby as the player last read
// it (v): if the game or round moved on meanwhile, the server refuses it as stale_signature. A
// commit or reveal read before round 1 (a stray one) signs for round 1, which is stale too.

func (c *Client) register(v View) Output {
	return c.act(Input{Kind: KindRegister, Actor: c.account}, http.MethodPost, c.lobbyPath("/players"), nil, http.StatusCreated,
		&tournament.ActionMessage{Action: tournament.ActionRegister, GameID: v.Game.ID, Payload: tournament.ActionPayload{Bet: v.Config.BetSize}})
}

func (c *Client) leave(v View) Output {
	return c.act(Input{Kind: KindLeave, Actor: c.account}, http.MethodDelete, c.lobbyPath("/players/me"), nil, http.StatusOK,
		&tournament.ActionMessage{Action: tournament.ActionLeave, GameID: v.Game.ID})
}

func (c *Client) commit(v View, commitment string) Output {
	return c.act(Input{Kind: KindCommit, Actor: c.account, Commitment: commitment}, http.MethodPost,
		c.lobbyPath("/commitments"), map[string]string{"commitment": commitment}, http.StatusOK,
		&tournament.ActionMessage{Action: tournament.ActionCommit, GameID: v.Game.ID, Round: max(v.Game.Round, 1), Payload: tournament.ActionPayload{Commitment: commitment}})
}

func (c *Client) reveal(v View, reveal string) Output {
	return c.act(Input{Kind: KindReveal, Actor: c.account, Reveal: reveal}, http.MethodPost,
		c.lobbyPath("/reveals"), map[string]string{"reveal": reveal}, http.StatusOK,
		&tournament.ActionMessage{Action: tournament.ActionReveal, GameID: v.Game.ID, Round: max(v.Game.Round, 1), Payload: tournament.ActionPayload{Reveal: reveal}})
}

func (c *Client) stop(reason string) Output {
	return c.act(Input{Kind: KindStop, Actor: c.account, Reason: reason}, http.MethodPost,
		c.lobbyPath("/stop"), map[string]string{"reason": reason}, http.StatusOK, nil)
}

func (c *Client) setNextConfig(cfg tournament.Config) Output {
	return c.act(Input{Kind: KindNextConfig, Actor: c.account, Config: cfg}, http.MethodPut,
		c.lobbyPath("/next-config"), cfg, http.StatusOK, nil)
}

func (c *Client) closeLobby() Output {
	return c.act(Input{Kind: KindClose, Actor: c.account}, http.MethodPost, c.lobbyPath("/close"), nil, http.StatusOK, nil)
}

// moveMoney credits or debits a player; the memo carries a mark of the operation, so that an
// unanswered one can be found in the player's ledger.
func (c *Client) moveMoney(kind Kind, target tournament.AccountID, amount int64) Output {
	in := Input{Kind: kind, Actor: c.account, Target: target, Amount: amount}
	verb := "credits"
	if kind == KindDebit {
		verb = "debits"
	}
	memo := "faulttest " + newKey()
	in.Reason = memo
	return c.act(in, http.MethodPost, "/v1/admin/accounts/"+string(target)+"/"+verb,
		map[string]any{"amount": amount, "memo": memo}, http.StatusOK, nil)
}

// lobbyJSON is the API's Lobby, as far as a View goes.
type lobbyJSON struct {
	Closed     bool               `json:"closed"`
	Config     tournament.Config  `json:"config"`
	NextConfig *tournament.Config `json:"nextConfig"`
	ServerTime int64              `json:"serverTime"`
	Head       *EventRef          `json:"head"`
	Game       *struct {
		ID             tournament.GameID `json:"id"`
		Number         int               `json:"number"`
		Stage          tournament.Stage  `json:"stage"`
		Round          int               `json:"round"`
		StageStartedAt *time.Time        `json:"stageStartedAt"`
		DeadlineMs     *int64            `json:"deadlineMs"`
		Extensions     int               `json:"extensions"`
		Players        int               `json:"players"`
		Remaining      int               `json:"remaining"`
		Committed      int               `json:"committed"`
		Revealed       int               `json:"revealed"`
		Pot            int64             `json:"pot"`
		RulesetHash    string            `json:"rulesetHash"`
		You            *struct {
			Registered bool    `json:"registered"`
			InGame     bool    `json:"inGame"`
			Committed  bool    `json:"committed"`
			Revealed   bool    `json:"revealed"`
			Commitment *string `json:"commitment"`
			Move       *int    `json:"move"`
		} `json:"you"`
	} `json:"game"`
}

// decodeLobby reads a Lobby answer into a View and its serverTime.
func decodeLobby(raw []byte) (View, int64, error) {
	var l lobbyJSON
	if err := json.Unmarshal(raw, &l); err != nil {
		return View{}, 0, fmt.Errorf("decode lobby: %w", err)
	}
	if l.Game == nil {
		return View{}, 0, errors.New("decode lobby: no game")
	}
	g := l.Game
	v := View{Closed: l.Closed, Config: l.Config, NextConfig: l.NextConfig, Head: l.Head, Game: GameView{
		ID: g.ID, Number: g.Number, Stage: g.Stage, Round: g.Round, Extensions: g.Extensions, Players: g.Players,
		Remaining: g.Remaining, Committed: g.Committed, Revealed: g.Revealed, Pot: g.Pot, RulesetHash: g.RulesetHash,
	}}
	if g.StageStartedAt != nil {
		v.Game.StageStartedAt = g.StageStartedAt.UnixMilli()
	}
	if g.DeadlineMs != nil {
		v.Game.Deadline = *g.DeadlineMs
	}
	if y := g.You; y != nil {
		you := &You{Registered: y.Registered, InGame: y.InGame, Committed: y.Committed, Revealed: y.Revealed, Move: -1}
		if y.Commitment != nil {
			you.Commitment = *y.Commitment
		}
		if y.Move != nil {
			you.Move = *y.Move
		}
		v.Game.You = you
	}
	return v, l.ServerTime, nil
}

// LogEvent is an event as the API serves it, with its instant and data decoded.
type LogEvent struct {
	apiclient.Event
	atMs   int64          // At parsed
	fields map[string]any // Data decoded
}

// game is the event's game id ("" for a lobby-level event).
func (e LogEvent) game() tournament.GameID {
	if e.GameId == nil {
		return ""
	}
	return tournament.GameID(e.GameId.String())
}

func decodeEvents(raw []byte) ([]LogEvent, error) {
	var page apiclient.EventPage
	if err := json.Unmarshal(raw, &page); err != nil {
		return nil, fmt.Errorf("decode events: %w", err)
	}
	events := make([]LogEvent, len(page.Events))
	for i, served := range page.Events {
		e := LogEvent{Event: served}
		t, err := time.Parse(time.RFC3339Nano, e.At)
		if err != nil {
			return nil, fmt.Errorf("event %d at %q: %w", e.Seq, e.At, err)
		}
		e.atMs = t.UnixMilli()
		if err := json.Unmarshal(e.Data, &e.fields); err != nil {
			return nil, fmt.Errorf("event %d data: %w", e.Seq, err)
		}
		events[i] = e
	}
	return events, nil
}

// str is a string field of the event's data.
func (e LogEvent) str(field string) string {
	s, _ := e.fields[field].(string)
	return s
}

// num is a number field of the event's data.
func (e LogEvent) num(field string) int64 {
	f, _ := e.fields[field].(float64)
	return int64(f)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
