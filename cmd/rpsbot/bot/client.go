// Package bot plays Rock-Paper-Scissors-Lizard-Spock games through the public HTTP API only, as a
// third-party client would: accounts, lobbies, registration, commit and reveal, the event log. It
// is the engine of `rpsbot play` and `rpsbot load` and of the benchmark in bench/.
package bot

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	openapi_types "github.com/oapi-codegen/runtime/types"

	"github.com/commitreveal/rps/internal/apiclient"
	"github.com/commitreveal/rps/tournament"
)

// Client calls the API with retries and counts every attempt in Stats.
//
// Network errors, 5xx and 429 are retried with the same Idempotency-Key, so a retried action
// never acts twice: the server stores the outcome of a request that reached the game with its
// key and replays it. Every other status is returned to the caller as an *apiclient.Error.
type Client struct {
	api      *apiclient.ClientWithResponses
	stats    *Stats
	attempts int
	timeout  time.Duration

	// origin is the transparency log's origin, which every signed message names: read once, by
	// the first signed action, so that signing costs no round trip per action.
	originMu sync.Mutex
	origin   string
}

// ClientOptions configure NewClient.
type ClientOptions struct {
	// Stats receives every attempt (a new Stats if nil).
	Stats *Stats
	// Conns is the number of connections kept open to the server (at least the concurrency).
	Conns int
	// Attempts bounds the tries of one call (default 5).
	Attempts int
	// Timeout bounds one attempt, long polls excepted (default 30s).
	Timeout time.Duration
}

// NewClient returns a client of the server at base URL (such as http://127.0.0.1:8080).
func NewClient(server string, o ClientOptions) (*Client, error) {
	if o.Stats == nil {
		o.Stats = NewStats()
	}
	if o.Attempts <= 0 {
		o.Attempts = 5
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConns = o.Conns + 16
	transport.MaxIdleConnsPerHost = o.Conns + 16
	api, err := apiclient.NewClientWithResponses(server, apiclient.WithHTTPClient(&http.Client{Transport: transport}))
	if err != nil {
		return nil, fmt.Errorf("api client for %s: %w", server, err)
	}
	return &Client{api: api, stats: o.Stats, attempts: o.Attempts, timeout: o.Timeout}, nil
}

// Stats returns the statistics the client records into.
func (c *Client) Stats() *Stats { return c.stats }

// call runs one operation under a fresh Idempotency-Key, retrying as the type's comment says.
// wait extends the per-attempt timeout for long polls.
func call[R apiclient.Response](ctx context.Context, c *Client, op string, want int, wait time.Duration,
	do func(ctx context.Context, key string) (R, error)) (R, error) {
	return callWithKey(ctx, c, op, want, wait, apiclient.NewKey(), do)
}

// callWithKey is call under the given Idempotency-Key (the one a signature covers).
func callWithKey[R apiclient.Response](ctx context.Context, c *Client, op string, want int, wait time.Duration, key string,
	do func(ctx context.Context, key string) (R, error)) (R, error) {
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, c.timeout+wait)
		start := time.Now()
		r, err := do(actx, key)
		d := time.Since(start)
		cancel()
		var zero R
		if err != nil {
			if ctx.Err() != nil {
				return zero, fmt.Errorf("%s: %w", op, ctx.Err())
			}
			c.stats.record(op, d, 0, codeNetwork)
			// Anything but our own cancellation is a transport failure (refused or reset
			// connection, timeout, truncated body): retry it, the key makes that safe.
			if attempt >= c.attempts {
				return zero, fmt.Errorf("%s: %w", op, err)
			}
		} else {
			if r.StatusCode() == want {
				c.stats.record(op, d, want, "")
				return r, nil
			}
			perr := apiclient.ProblemOf(r)
			c.stats.record(op, d, perr.Status, perr.Code)
			if (perr.Status < 500 && perr.Status != http.StatusTooManyRequests) || attempt >= c.attempts {
				return r, fmt.Errorf("%s: %w", op, perr)
			}
			if perr.RetryAfter > backoff {
				backoff = perr.RetryAfter
			}
		}
		if err := sleep(ctx, backoff); err != nil {
			return zero, fmt.Errorf("%s: %w", op, err)
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// signedCall runs a player's action: it signs m as the account, once, under the Idempotency-Key
// that every retry carries, and hands do the key and the signature's header editor. An account
// without a key acts unsigned (a server whose keys are optional takes that).
func signedCall[R apiclient.Response](ctx context.Context, c *Client, op string, want int, a Account, m tournament.ActionMessage,
	do func(ctx context.Context, key string, sig apiclient.RequestEditorFn) (R, error)) (R, error) {
	key := apiclient.NewKey()
	var sig apiclient.Signature
	if a.Key.Valid() {
		origin, err := c.Origin(ctx)
		if err != nil {
			var zero R
			return zero, fmt.Errorf("%s: %w", op, err)
		}
		m.Origin, m.Player, m.IdempotencyKey = origin, tournament.AccountID(a.ID), key
		if sig, err = a.Key.Sign(m, time.Now()); err != nil {
			var zero R
			return zero, fmt.Errorf("%s: %w", op, err)
		}
	}
	editor := sig.Editor()
	return callWithKey(ctx, c, op, want, 0, key, func(ctx context.Context, key string) (R, error) { return do(ctx, key, editor) })
}

// Origin is the transparency log's origin (GET /v1/log), read once.
func (c *Client) Origin(ctx context.Context) (string, error) {
	c.originMu.Lock()
	defer c.originMu.Unlock()
	if c.origin != "" {
		return c.origin, nil
	}
	r, err := call(ctx, c, OpRead, http.StatusOK, 0, func(ctx context.Context, _ string) (*apiclient.GetLogResponse, error) {
		return c.api.GetLogWithResponse(ctx)
	})
	if err != nil {
		return "", fmt.Errorf("the log's origin, which signatures name: %w", err)
	}
	c.origin = r.JSON200.Origin
	return c.origin, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// CodeOf returns the problem code of an error returned by Client, or "" when it is not an API
// refusal.
func CodeOf(err error) string {
	var e *apiclient.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func uuidOf(s string) (openapi_types.UUID, error) {
	var u openapi_types.UUID
	if err := u.UnmarshalText([]byte(s)); err != nil {
		return u, fmt.Errorf("bad id %q: %w", s, err)
	}
	return u, nil
}

func idem(key string) *apiclient.IdempotencyKey { return &key }

// Account is a player account the bots act as, with the key it signs its actions with (the zero
// key: unsigned, for a server whose keys are optional).
type Account struct {
	ID    string
	Name  string
	Token string
	Key   apiclient.PlayerKey
}

// CreateAccount signs up a player with a key made here, bound at sign-up by a signed sign_up.
// Sign-up takes no Idempotency-Key, so a retry after a lost response may leave an unused, empty
// account behind; no money is involved.
func (c *Client) CreateAccount(ctx context.Context, name string) (Account, error) {
	key := apiclient.NewPlayerKey()
	origin, err := c.Origin(ctx)
	if err != nil {
		return Account{}, err
	}
	pub := key.PublicKey()
	sig, err := key.Sign(tournament.ActionMessage{Origin: origin, Action: tournament.ActionSignUp,
		Payload: tournament.ActionPayload{Name: name, PublicKey: pub}}, time.Now())
	if err != nil {
		return Account{}, err
	}
	r, err := call(ctx, c, OpAccount, http.StatusCreated, 0, func(ctx context.Context, _ string) (*apiclient.CreateAccountResponse, error) {
		return c.api.CreateAccountWithResponse(ctx, nil, apiclient.CreateAccountRequest{Name: name, PublicKey: &pub}, sig.Editor())
	})
	if err != nil {
		return Account{}, err
	}
	return Account{ID: r.JSON201.Account.Id.String(), Name: name, Token: r.JSON201.Token, Key: key}, nil
}

// BindKey gives an account that has no key yet its first one, made here and signed by itself
// (POST /v1/me/keys, add_key), and returns the account with it: for accounts made without a key
// (the benchmark makes its accounts in the database).
func (c *Client) BindKey(ctx context.Context, a Account) (Account, error) {
	a.Key = apiclient.NewPlayerKey()
	pub := a.Key.PublicKey()
	m := tournament.ActionMessage{Action: tournament.ActionAddKey, Payload: tournament.ActionPayload{PublicKey: pub}}
	_, err := signedCall(ctx, c, OpAccount, http.StatusCreated, a, m, func(ctx context.Context, key string, sig apiclient.RequestEditorFn) (*apiclient.AddKeyResponse, error) {
		return c.api.AddKeyWithResponse(ctx, &apiclient.AddKeyParams{IdempotencyKey: idem(key)}, apiclient.AddKeyRequest{PublicKey: pub},
			apiclient.Bearer(a.Token), sig)
	})
	if err != nil {
		return Account{}, err
	}
	return a, nil
}

// Credit moves amount from the treasury to a player (admin).
func (c *Client) Credit(ctx context.Context, admin, account string, amount int64) error {
	id, err := uuidOf(account)
	if err != nil {
		return err
	}
	memo := "rpsbot"
	_, err = call(ctx, c, OpCredit, http.StatusOK, 0, func(ctx context.Context, key string) (*apiclient.CreditAccountResponse, error) {
		return c.api.CreditAccountWithResponse(ctx, id, &apiclient.CreditAccountParams{IdempotencyKey: idem(key)},
			apiclient.MoneyTransferRequest{Amount: amount, Memo: &memo}, apiclient.Bearer(admin))
	})
	return err
}

// CreateLobby creates a lobby (admin).
func (c *Client) CreateLobby(ctx context.Context, admin, name string, cfg apiclient.GameConfigInput) (*apiclient.Lobby, error) {
	r, err := call(ctx, c, OpAdmin, http.StatusCreated, 0, func(ctx context.Context, key string) (*apiclient.CreateLobbyResponse, error) {
		return c.api.CreateLobbyWithResponse(ctx, &apiclient.CreateLobbyParams{IdempotencyKey: idem(key)},
			apiclient.CreateLobbyRequest{Name: name, Config: cfg}, apiclient.Bearer(admin))
	})
	if err != nil {
		return nil, err
	}
	return r.JSON201, nil
}

// Lobby reads a lobby and its current game as the token's owner sees it ("" for anonymous).
func (c *Client) Lobby(ctx context.Context, token, lobby string) (*apiclient.Lobby, error) {
	id, err := uuidOf(lobby)
	if err != nil {
		return nil, err
	}
	r, err := call(ctx, c, OpLobby, http.StatusOK, 0, func(ctx context.Context, _ string) (*apiclient.GetLobbyResponse, error) {
		return c.api.GetLobbyWithResponse(ctx, id, nil, apiclient.Bearer(token))
	})
	if err != nil {
		return nil, err
	}
	return r.JSON200, nil
}

// Register registers the account in the lobby's game (the current one, as the caller last read
// it), whose bet is bet, signed.
func (c *Client) Register(ctx context.Context, a Account, lobby, game string, bet int64) error {
	id, err := uuidOf(lobby)
	if err != nil {
		return err
	}
	m := tournament.ActionMessage{Action: tournament.ActionRegister, LobbyID: tournament.LobbyID(lobby), GameID: tournament.GameID(game),
		Payload: tournament.ActionPayload{Bet: bet}}
	_, err = signedCall(ctx, c, OpRegister, http.StatusCreated, a, m, func(ctx context.Context, key string, sig apiclient.RequestEditorFn) (*apiclient.RegisterPlayerResponse, error) {
		return c.api.RegisterPlayerWithResponse(ctx, id, &apiclient.RegisterPlayerParams{IdempotencyKey: idem(key)}, apiclient.Bearer(a.Token), sig)
	})
	return err
}

// Leave takes the account out of the lobby's game during registration (bet refunded), signed.
func (c *Client) Leave(ctx context.Context, a Account, lobby, game string) error {
	id, err := uuidOf(lobby)
	if err != nil {
		return err
	}
	m := tournament.ActionMessage{Action: tournament.ActionLeave, LobbyID: tournament.LobbyID(lobby), GameID: tournament.GameID(game)}
	_, err = signedCall(ctx, c, OpLeave, http.StatusOK, a, m, func(ctx context.Context, key string, sig apiclient.RequestEditorFn) (*apiclient.LeaveLobbyResponse, error) {
		return c.api.LeaveLobbyWithResponse(ctx, id, &apiclient.LeaveLobbyParams{IdempotencyKey: idem(key)}, apiclient.Bearer(a.Token), sig)
	})
	return err
}

// Commit sends a commitment (64 hex characters) in the game's round, signed.
func (c *Client) Commit(ctx context.Context, a Account, lobby, game string, round int, commitment string) error {
	id, err := uuidOf(lobby)
	if err != nil {
		return err
	}
	m := tournament.ActionMessage{Action: tournament.ActionCommit, LobbyID: tournament.LobbyID(lobby), GameID: tournament.GameID(game),
		Round: round, Payload: tournament.ActionPayload{Commitment: commitment}}
	_, err = signedCall(ctx, c, OpCommit, http.StatusOK, a, m, func(ctx context.Context, key string, sig apiclient.RequestEditorFn) (*apiclient.CommitMoveResponse, error) {
		return c.api.CommitMoveWithResponse(ctx, id, &apiclient.CommitMoveParams{IdempotencyKey: idem(key)},
			apiclient.CommitRequest{Commitment: commitment}, apiclient.Bearer(a.Token), sig)
	})
	return err
}

// Reveal sends the committed string in the game's round, signed.
func (c *Client) Reveal(ctx context.Context, a Account, lobby, game string, round int, reveal string) error {
	id, err := uuidOf(lobby)
	if err != nil {
		return err
	}
	m := tournament.ActionMessage{Action: tournament.ActionReveal, LobbyID: tournament.LobbyID(lobby), GameID: tournament.GameID(game),
		Round: round, Payload: tournament.ActionPayload{Reveal: reveal}}
	_, err = signedCall(ctx, c, OpReveal, http.StatusOK, a, m, func(ctx context.Context, key string, sig apiclient.RequestEditorFn) (*apiclient.RevealMoveResponse, error) {
		return c.api.RevealMoveWithResponse(ctx, id, &apiclient.RevealMoveParams{IdempotencyKey: idem(key)},
			apiclient.RevealRequest{Reveal: reveal}, apiclient.Bearer(a.Token), sig)
	})
	return err
}

// Events reads the lobby's events after seq, holding the request up to wait when there are none.
// A token, when given, makes the poll count against that account's rate limit rather than the
// address's, which many bots behind one address would exhaust.
func (c *Client) Events(ctx context.Context, token, lobby string, after int64, wait time.Duration, limit int32) (*apiclient.EventPage, error) {
	id, err := uuidOf(lobby)
	if err != nil {
		return nil, err
	}
	secs := int32(wait / time.Second)
	r, err := call(ctx, c, OpEvents, http.StatusOK, wait, func(ctx context.Context, _ string) (*apiclient.ListEventsResponse, error) {
		return c.api.ListEventsWithResponse(ctx, id, &apiclient.ListEventsParams{After: &after, Wait: &secs, Limit: &limit}, apiclient.Bearer(token))
	})
	if err != nil {
		return nil, err
	}
	return r.JSON200, nil
}

// Round reads one page of a round's transcript.
func (c *Client) Round(ctx context.Context, game string, round int32, after *string) (*apiclient.RoundTranscript, error) {
	id, err := uuidOf(game)
	if err != nil {
		return nil, err
	}
	limit := int32(500)
	r, err := call(ctx, c, OpRead, http.StatusOK, 0, func(ctx context.Context, _ string) (*apiclient.GetRoundResponse, error) {
		return c.api.GetRoundWithResponse(ctx, id, round, &apiclient.GetRoundParams{After: after, Limit: &limit})
	})
	if err != nil {
		return nil, err
	}
	return r.JSON200, nil
}

// Game reads a game's summary.
func (c *Client) Game(ctx context.Context, game string) (*apiclient.GameSummary, error) {
	id, err := uuidOf(game)
	if err != nil {
		return nil, err
	}
	r, err := call(ctx, c, OpRead, http.StatusOK, 0, func(ctx context.Context, _ string) (*apiclient.GetGameResponse, error) {
		return c.api.GetGameWithResponse(ctx, id)
	})
	if err != nil {
		return nil, err
	}
	return r.JSON200, nil
}

// GamePlayers reads every player of a game, page by page.
func (c *Client) GamePlayers(ctx context.Context, game string) ([]apiclient.GamePlayer, error) {
	id, err := uuidOf(game)
	if err != nil {
		return nil, err
	}
	var all []apiclient.GamePlayer
	var after *string
	limit := int32(500)
	for {
		r, err := call(ctx, c, OpRead, http.StatusOK, 0, func(ctx context.Context, _ string) (*apiclient.ListGamePlayersResponse, error) {
			return c.api.ListGamePlayersWithResponse(ctx, id, &apiclient.ListGamePlayersParams{After: after, Limit: &limit})
		})
		if err != nil {
			return nil, err
		}
		all = append(all, r.JSON200.Players...)
		if r.JSON200.Next == nil {
			return all, nil
		}
		after = r.JSON200.Next
	}
}

// Me reads the token's account.
func (c *Client) Me(ctx context.Context, token string) (*apiclient.Account, error) {
	r, err := call(ctx, c, OpRead, http.StatusOK, 0, func(ctx context.Context, _ string) (*apiclient.GetMeResponse, error) {
		return c.api.GetMeWithResponse(ctx, apiclient.Bearer(token))
	})
	if err != nil {
		return nil, err
	}
	return r.JSON200, nil
}

// MyGame finds, among the token's games (newest first, a few pages at most), the record of one
// game; nil when it is not among them.
func (c *Client) MyGame(ctx context.Context, token, game string) (*apiclient.GameRecord, error) {
	var after *string
	limit := int32(20)
	for range 5 {
		r, err := call(ctx, c, OpRead, http.StatusOK, 0, func(ctx context.Context, _ string) (*apiclient.ListMyGamesResponse, error) {
			return c.api.ListMyGamesWithResponse(ctx, &apiclient.ListMyGamesParams{After: after, Limit: &limit}, apiclient.Bearer(token))
		})
		if err != nil {
			return nil, err
		}
		for _, g := range r.JSON200.Games {
			if g.GameId.String() == game {
				return &g, nil
			}
		}
		if r.JSON200.Next == nil {
			return nil, nil
		}
		after = r.JSON200.Next
	}
	return nil, nil
}

// Stop stops the lobby's current game (admin); the escrow is refunded or split.
func (c *Client) Stop(ctx context.Context, admin, lobby, reason string) error {
	id, err := uuidOf(lobby)
	if err != nil {
		return err
	}
	_, err = call(ctx, c, OpAdmin, http.StatusOK, 0, func(ctx context.Context, key string) (*apiclient.StopGameResponse, error) {
		return c.api.StopGameWithResponse(ctx, id, &apiclient.StopGameParams{IdempotencyKey: idem(key)},
			apiclient.StopGameRequest{Reason: reason}, apiclient.Bearer(admin))
	})
	return err
}

// Close closes a lobby (admin): no new game starts after the current one.
func (c *Client) Close(ctx context.Context, admin, lobby string) error {
	id, err := uuidOf(lobby)
	if err != nil {
		return err
	}
	_, err = call(ctx, c, OpAdmin, http.StatusOK, 0, func(ctx context.Context, key string) (*apiclient.CloseLobbyResponse, error) {
		return c.api.CloseLobbyWithResponse(ctx, id, &apiclient.CloseLobbyParams{IdempotencyKey: idem(key)}, apiclient.Bearer(admin))
	})
	return err
}

// Ledger reads the ledger totals and invariants (admin).
func (c *Client) Ledger(ctx context.Context, admin string) (*apiclient.LedgerReport, error) {
	r, err := call(ctx, c, OpAdmin, http.StatusOK, 0, func(ctx context.Context, _ string) (*apiclient.GetAdminLedgerResponse, error) {
		return c.api.GetAdminLedgerWithResponse(ctx, apiclient.Bearer(admin))
	})
	if err != nil {
		return nil, err
	}
	return r.JSON200, nil
}
