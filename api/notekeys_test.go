package api_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apitest"
	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
)

// TestRetiredKeyForgesNoNotifiedEvent plays the attacker of issue 21 (finding 7): it holds the
// seed of a signing key that has since been retired (a leaked backup, a former operator) and can
// NOTIFY (any database login can). After `rpsd key rotate`, a chain-valid event it forges and
// MACs as notifications were authenticated before the rotation must not be served to a waiting
// long poll: the poll gets the lobby's real next event from the log instead.
func TestRetiredKeyForgesNoNotifiedEvent(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	ctx := t.Context()
	p := e.NewPlayer("p", 100)
	lobby := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 3}).Id.String()
	page := e.Events(lobby, 0) // signs a head: the first key exists from here on
	var seed []byte
	if err := e.Pool.QueryRow(ctx, `SELECT seed FROM signing_keys WHERE retired_at IS NULL`).Scan(&seed); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.RotateSigningKey(ctx); err != nil {
		t.Fatal(err)
	}

	polled := make(chan apitest.Response, 1)
	go func() {
		r, err := e.Request(ctx, "GET", fmt.Sprintf("/v1/lobbies/%s/events?after=%d&wait=20", lobby, page.Next), p.Token, nil)
		if err != nil {
			t.Error(err)
		}
		polled <- r
	}()
	waitUntil(t, "the long poll waits", func() bool { return api.OpenWaits(e.Server, p.ID) == 1 })

	var prev tournament.LoggedEvent
	prev.Seq = page.Head.Seq
	if _, err := hex.Decode(prev.Hash[:], []byte(page.Head.Hash)); err != nil {
		t.Fatal(err)
	}
	forged, err := tournament.Seal(prev, tournament.Event{Type: tournament.EventLobbyClosed,
		LobbyID: tournament.LobbyID(lobby), At: prev.Seq, Data: &tournament.LobbyClosedData{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Pool.Exec(ctx, `SELECT pg_notify($1, $2)`, store.EventsChannel, forgeNote(t, seed, forged)); err != nil {
		t.Fatal(err)
	}
	// The real next event, notified after the forged one.
	e.Register(lobby, p).Want(t, http.StatusCreated)

	var got api.EventPage
	(<-polled).Want(t, http.StatusOK).Decode(t, &got)
	if len(got.Events) == 0 {
		t.Fatal("the long poll returned no event")
	}
	if first := got.Events[0]; first.Type != string(tournament.EventPlayerRegistered) || first.Hash == hex.EncodeToString(forged.Hash[:]) {
		t.Fatalf("the long poll was served %s %s, want the real player_registered", first.Type, first.Hash)
	}
	apitest.VerifyChain(t, got.Events, page.Next+1, page.Head.Hash)
}

// forgeNote is the attacker's notification of event e, authenticated as the server authenticated
// notifications under the signing key whose seed it holds: "lobby:seq:mac:event".
func forgeNote(t *testing.T, seed []byte, e tournament.LoggedEvent) string {
	t.Helper()
	body, err := json.Marshal(map[string]any{"t": e.Type, "a": e.At, "d": e.Data, "p": e.PrevHash[:], "h": e.Hash[:]})
	if err != nil {
		t.Fatal(err)
	}
	key := sha256.Sum256(append([]byte("rps-event-note-v1\n"), seed...))
	head := string(e.LobbyID) + ":" + strconv.FormatInt(e.Seq, 10) + ":"
	m := hmac.New(sha256.New, key[:])
	m.Write([]byte(head))
	m.Write(body)
	return head + base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16]) + ":" + string(body)
}
