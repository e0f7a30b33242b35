package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	openapi_types "github.com/oapi-codegen/runtime/types"

	"github.com/commitreveal/rps/internal/apiclient"
	"github.com/commitreveal/rps/tournament"
)

// networkError is a failure to get an answer from the server (as opposed to an answer that does
// not verify): rpsverify exits 2 on it.
type networkError struct{ err error }

func (e *networkError) Error() string { return e.err.Error() }
func (e *networkError) Unwrap() error { return e.err }

// errNotFound is a 404 from the server.
var errNotFound = errors.New("not found")

// client reads the public API: only anonymous endpoints, never a token.
type client struct {
	api *apiclient.Client
	// attempts bounds the tries of one read (network errors, 5xx); 429s wait as told and do not
	// count.
	attempts int
	// maxKeyEvents bounds the key events read of one account (--max-key-events).
	maxKeyEvents int
}

// maxAnswerBytes bounds one answer of the server: the largest the API serves (a page of events,
// a tile) is a few MiB, and a verifier must not be made to hold whatever a dishonest server
// streams.
const maxAnswerBytes = 64 << 20

// defaultMaxKeyEvents is --max-key-events' default. A player adds at most
// tournament.MaxAccountKeys keys and retires each once; only the operator's recoveries go past
// that, each one event.
const defaultMaxKeyEvents = 4096

func newClient(server string) (*client, error) {
	api, err := apiclient.NewClient(server, apiclient.WithHTTPClient(&http.Client{Timeout: 60 * time.Second}))
	if err != nil {
		return nil, &networkError{fmt.Errorf("server %s: %w", server, err)}
	}
	return &client{api: api, attempts: 3, maxKeyEvents: defaultMaxKeyEvents}, nil
}

// get runs a read and decodes its 200 body into a T, retrying network errors and 5xx, and
// waiting out rate limits as Retry-After says.
func get[T any](ctx context.Context, c *client, what string, call func(context.Context) (*http.Response, error)) (T, error) {
	var out T
	var last error
	for try := 0; try < c.attempts; {
		resp, err := call(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return out, &networkError{ctx.Err()}
			}
			last = err
			try++
			continue
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
		resp.Body.Close()
		switch {
		case err != nil:
			last = err
			try++
			continue
		case len(body) > maxAnswerBytes:
			return out, &networkError{fmt.Errorf("%s: the answer is larger than %d MiB, more than the API ever serves", what, maxAnswerBytes>>20)}
		case resp.StatusCode == http.StatusOK:
			if err := json.Unmarshal(body, &out); err != nil {
				return out, &networkError{fmt.Errorf("%s: decode: %w", what, err)}
			}
			return out, nil
		case resp.StatusCode == http.StatusNotFound:
			return out, fmt.Errorf("%s: %w", what, errNotFound)
		case resp.StatusCode == http.StatusTooManyRequests:
			wait, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
			select {
			case <-time.After(time.Duration(max(wait, 1)) * time.Second):
			case <-ctx.Done():
				return out, &networkError{ctx.Err()}
			}
			continue
		case resp.StatusCode >= 500:
			last = fmt.Errorf("status %d: %s", resp.StatusCode, body)
			try++
			continue
		default:
			return out, &networkError{fmt.Errorf("%s: status %d: %s", what, resp.StatusCode, body)}
		}
	}
	return out, &networkError{fmt.Errorf("%s: %w", what, last)}
}

// raw is get for a body kept verbatim.
func raw(ctx context.Context, c *client, what string, call func(context.Context) (*http.Response, error)) ([]byte, error) {
	m, err := get[json.RawMessage](ctx, c, what, call)
	return m, err
}

func uuidOf(s string) openapi_types.UUID {
	var id openapi_types.UUID
	_ = id.UnmarshalText([]byte(s))
	return id
}

func (c *client) lobbies(ctx context.Context) ([]string, error) {
	var ids []string
	params := &apiclient.ListLobbiesParams{Limit: ptr[int32](100)}
	for {
		page, err := get[apiclient.LobbyPage](ctx, c, "lobby list", func(ctx context.Context) (*http.Response, error) {
			return c.api.ListLobbies(ctx, params)
		})
		if err != nil {
			return nil, err
		}
		for _, l := range page.Lobbies {
			ids = append(ids, l.Id.String())
		}
		if page.Next == nil {
			return ids, nil
		}
		params.After = page.Next
	}
}

func (c *client) lobby(ctx context.Context, id string) (apiclient.Lobby, error) {
	return get[apiclient.Lobby](ctx, c, "lobby "+id, func(ctx context.Context) (*http.Response, error) {
		return c.api.GetLobby(ctx, uuidOf(id), nil)
	})
}

func (c *client) events(ctx context.Context, lobby string, after int64) (apiclient.EventPage, error) {
	return get[apiclient.EventPage](ctx, c, "events of lobby "+lobby, func(ctx context.Context) (*http.Response, error) {
		return c.api.ListEvents(ctx, uuidOf(lobby), &apiclient.ListEventsParams{After: &after, Limit: ptr[int32](1000)})
	})
}

func (c *client) keys(ctx context.Context) (apiclient.SigningKeyList, error) {
	return get[apiclient.SigningKeyList](ctx, c, "signing keys", func(ctx context.Context) (*http.Response, error) {
		return c.api.ListSigningKeys(ctx)
	})
}

func (c *client) ruleset(ctx context.Context, hash string) ([]byte, error) {
	return raw(ctx, c, "ruleset "+hash, func(ctx context.Context) (*http.Response, error) {
		return c.api.GetRulesetByHash(ctx, hash)
	})
}

func (c *client) game(ctx context.Context, id string) (apiclient.GameSummary, error) {
	return get[apiclient.GameSummary](ctx, c, "game "+id, func(ctx context.Context) (*http.Response, error) {
		return c.api.GetGame(ctx, uuidOf(id))
	})
}

func (c *client) players(ctx context.Context, game string) ([]apiclient.GamePlayer, error) {
	var out []apiclient.GamePlayer
	params := &apiclient.ListGamePlayersParams{Limit: ptr[int32](500)}
	for {
		page, err := get[apiclient.GamePlayerPage](ctx, c, "players of game "+game, func(ctx context.Context) (*http.Response, error) {
			return c.api.ListGamePlayers(ctx, uuidOf(game), params)
		})
		if err != nil {
			return nil, err
		}
		out = append(out, page.Players...)
		if page.Next == nil {
			return out, nil
		}
		params.After = page.Next
	}
}

func (c *client) postings(ctx context.Context, game string) ([]apiclient.GamePosting, error) {
	var out []apiclient.GamePosting
	params := &apiclient.ListGamePostingsParams{Limit: ptr[int32](500)}
	for {
		page, err := get[apiclient.GamePostingPage](ctx, c, "postings of game "+game, func(ctx context.Context) (*http.Response, error) {
			return c.api.ListGamePostings(ctx, uuidOf(game), params)
		})
		if err != nil {
			return nil, err
		}
		out = append(out, page.Postings...)
		if page.Next == nil {
			return out, nil
		}
		params.After = page.Next
	}
}

// round reads a round's whole transcript.
func (c *client) round(ctx context.Context, game string, round int) (apiclient.RoundTranscript, error) {
	var out apiclient.RoundTranscript
	params := &apiclient.GetRoundParams{Limit: ptr[int32](500)}
	for {
		page, err := get[apiclient.RoundTranscript](ctx, c, fmt.Sprintf("game %s round %d", game, round), func(ctx context.Context) (*http.Response, error) {
			return c.api.GetRound(ctx, uuidOf(game), int32(round), params)
		})
		if err != nil {
			return out, err
		}
		moves := append(out.Moves, page.Moves...)
		out = page
		out.Moves = moves
		if page.Next == nil {
			return out, nil
		}
		params.After = page.Next
	}
}

func ptr[T any](v T) *T { return &v }

// accountKeys reads an account's whole key log and its list of keys (none when the server
// has no key log for it).
func (c *client) accountKeys(ctx context.Context, account string) ([]apiclient.KeyEvent, []apiclient.AccountKey, error) {
	var events []apiclient.KeyEvent
	var keys []apiclient.AccountKey
	for {
		params := &apiclient.ListAccountKeysParams{After: ptr(int64(len(events)))}
		page, err := get[apiclient.AccountKeys](ctx, c, "keys of account "+account, func(ctx context.Context) (*http.Response, error) {
			return c.api.ListAccountKeys(ctx, uuidOf(account), params)
		})
		if errors.Is(err, errNotFound) {
			return nil, nil, nil
		} else if err != nil {
			return nil, nil, err
		}
		events, keys = append(events, page.Events...), page.Keys
		if len(events) > c.maxKeyEvents {
			return nil, nil, &networkError{fmt.Errorf("keys of account %s: the key log is longer than %d events (--max-key-events); "+
				"a player's own keys make at most %d", account, c.maxKeyEvents, 2*tournament.MaxAccountKeys)}
		}
		if len(page.Events) == 0 || page.Head == nil || page.Head.Seq <= int64(len(events)) {
			return events, keys, nil
		}
	}
}
