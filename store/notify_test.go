package store

import (
	"context"
	"crypto/sha256"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/commitreveal/rps/tournament"
)

// TestNotifiedEventsNeedNoRead: the events a follower at the head is woken for come with their
// notifications, byte for byte as the log holds them (free text with HTML characters included),
// and are served to waiting followers without a read; a gap in the notifications sends them back
// to the log, as are pages read without waiting.
func TestNotifiedEventsNeedNoRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, Options{Service: fastService()})
	if _, err := s.CurrentSigningKey(ctx); err != nil { // the key notifications are MACed under
		t.Fatal(err)
	}
	adm := admin(t, s)
	cfg := fastConfig(60_000)
	cfg.PlayersCountLimit = 3
	lobby := createLobby(t, s, adm, cfg)
	woken, cancel := s.Subscribe(lobby)
	defer cancel()
	logged := func(after int64) []tournament.LoggedEvent {
		t.Helper()
		events, err := collect(ctx, s.pool, scanEvent, `SELECT seq, type, lobby_id::text, coalesce(game_id::text, ''),
				at, data::text, prev_hash, hash FROM events WHERE lobby_id = $1 AND seq > $2 ORDER BY seq`, lobby, after)
		if err != nil {
			t.Fatal(err)
		}
		return events
	}
	// The listener connects in the background: act until a notification of this lobby arrives.
	var head int64
	for i := 0; ; i++ {
		if err := register(s, player(t, s, fmt.Sprint("p", i), 100), lobby); err != nil {
			t.Fatal(err)
		}
		select {
		case <-woken:
		case <-time.After(5 * time.Second):
			t.Fatal("no notification")
		}
		events := logged(0)
		head = events[len(events)-1].Seq
		if !s.MayHaveEventsAfter(lobby, head) {
			break
		}
		if i == 1 {
			t.Fatal("the listener missed the registrations")
		}
	}
	err := s.RunLobby(ctx, lobby, func(tx tournament.Tx, now int64) error {
		return s.service.Stop(ctx, tx, now, adm, lobby, `<b>stopped</b> & "quoted" é `+"\u2028")
	})
	if err != nil {
		t.Fatal(err)
	}
	want := logged(head)
	if len(want) == 0 {
		t.Fatal("the stop logged no event")
	}
	last := want[len(want)-1].Seq
	deadline := time.Now().Add(5 * time.Second)
	// Wait for the notifications of the stop's events (on a loaded machine they may come late).
	for !reflect.DeepEqual(s.notify.recentAfter(lobby, head, 100), want) {
		if time.Now().After(deadline) {
			t.Fatalf("notified events %+v, want %+v", s.notify.recentAfter(lobby, head, 100), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	before := s.pool.Stat().AcquireCount()
	got, err := s.NotifiedEvents(ctx, lobby, head, 100)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("NotifiedEvents after %d: %+v (%v), want %+v", head, got, err, want)
	}
	if reads := s.pool.Stat().AcquireCount() - before; reads != 0 {
		t.Errorf("the notified events cost %d reads", reads)
	}
	if page, _ := s.NotifiedEvents(ctx, lobby, head, 1); !reflect.DeepEqual(page, want[:1]) {
		t.Errorf("a page of 1: %+v, want %+v", page, want[:1])
	}
	before = s.pool.Stat().AcquireCount()
	if got, err := s.Events(ctx, lobby, head, 100); err != nil || !reflect.DeepEqual(got, want) || s.pool.Stat().AcquireCount() == before {
		t.Errorf("Events after %d: %+v (%v), want %+v read from the log", head, got, err, want)
	}

	// A notification without its event (too large, or from an older replica) is a gap: the
	// events before it are not served any more, and the log is read.
	s.notify.wake(lobby, last+1, nil, false)
	if recent := s.notify.recentAfter(lobby, head, 100); recent != nil {
		t.Errorf("after a gap: %+v served from the notifications", recent)
	}
	if got, err := s.NotifiedEvents(ctx, lobby, head, 100); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("NotifiedEvents after a gap: %+v (%v), want %+v", got, err, want)
	}

	// A notification anyone connected could send, with a well-formed event but no valid MAC, is
	// news of a seq, never an event to serve.
	forged, err := notePayload(&[32]byte{}, tournament.LoggedEvent{Seq: last + 2, Type: "lobby_closed", LobbyID: lobby, Data: []byte("{}")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, EventsChannel, forged); err != nil {
		t.Fatal(err)
	}
	for !s.MayHaveEventsAfter(lobby, last+1) {
		if time.Now().After(deadline.Add(5 * time.Second)) {
			t.Fatal("the forged notification never arrived")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if recent := s.notify.recentAfter(lobby, last+1, 100); recent != nil {
		t.Errorf("a forged notification's event is served: %+v", recent)
	}
}

// TestEventNotes: a notification carries its event only under the note key: no key, another key
// or any change to it gives the seq alone.
func TestEventNotes(t *testing.T) {
	t.Parallel()
	key, other := &[32]byte{1}, &[32]byte{2}
	e := tournament.LoggedEvent{Seq: 7, Type: "lobby_closed", LobbyID: "5a1f0c1e-8d4b-4c55-9a43-2f1d0e7b6c11", At: 5, Data: []byte(`{"a":"<b>"}`)}
	e.Hash[0], e.PrevHash[0] = 9, 8
	payload, err := notePayload(key, e)
	if err != nil {
		t.Fatal(err)
	}
	if lobby, seq, got := parseEventNote(payload, key); lobby != e.LobbyID || seq != 7 || len(got) != 1 || !reflect.DeepEqual(got[0], e) {
		t.Fatalf("parsed %s %d %+v, want %+v", lobby, seq, got, e)
	}
	if noKey, _ := notePayload(nil, e); noKey != string(e.LobbyID)+":7:" {
		t.Errorf("without a key: %q, want the seq alone", noKey)
	}
	tampered := strings.Replace(payload, "<b>", "<i>", 1)
	for name, c := range map[string]struct {
		payload string
		key     *[32]byte
	}{"no key": {payload, nil}, "another key": {payload, other}, "changed data": {tampered, key}, "no MAC": {strings.Replace(payload, ":7:", ":7::", 1), key}} {
		if _, seq, got := parseEventNote(c.payload, c.key); seq != 7 || got != nil {
			t.Errorf("%s: seq %d, event %+v; want 7 and no event", name, seq, got)
		}
	}
}

// TestRecentEventsAreBounded: the notified events kept for followers stay within maxRecentEvents
// a lobby and maxRecentLobbies lobbies, and the heads within maxKnownLobbies, however many lobbies
// have news.
func TestRecentEventsAreBounded(t *testing.T) {
	t.Parallel()
	var n notifier
	for i := range maxKnownLobbies + 100 {
		lobby := tournament.LobbyID(fmt.Sprint("lobby-", i))
		for seq := int64(1); seq <= 3; seq++ {
			n.wake(lobby, seq, []tournament.LoggedEvent{{Seq: seq, LobbyID: lobby}}, false)
		}
	}
	if len(n.heads) > maxKnownLobbies {
		t.Errorf("%d heads kept, want at most %d", len(n.heads), maxKnownLobbies)
	}
	busy := tournament.LobbyID("busy")
	for seq := int64(1); seq <= maxRecentEvents+10; seq++ {
		n.wake(busy, seq, []tournament.LoggedEvent{{Seq: seq, LobbyID: busy}}, false)
	}
	if len(n.recent) > maxRecentLobbies {
		t.Errorf("%d lobbies kept, want at most %d", len(n.recent), maxRecentLobbies)
	}
	if run := n.recent[busy]; len(run) != maxRecentEvents || run[0].Seq != 11 {
		t.Errorf("the busy lobby keeps %d events from %d, want the last %d", len(run), run[0].Seq, maxRecentEvents)
	}
}

// TestRecentEventsAreSharedNotCopied: every follower of a lobby woken by an event asks for the
// events after the same seq; they get the kept events themselves, without a copy each, and what
// one was given stays as it was however the lobby's run moves on.
func TestRecentEventsAreSharedNotCopied(t *testing.T) {
	// Not parallel: AllocsPerRun counts the whole process's allocations.
	var n notifier
	const lobby = tournament.LobbyID("lobby")
	event := func(seq int64) tournament.LoggedEvent {
		return tournament.LoggedEvent{Seq: seq, LobbyID: lobby, Data: []byte(fmt.Sprint(`{"n":`, seq, `}`))}
	}
	for seq := int64(1); seq <= 10; seq++ {
		n.wake(lobby, seq, []tournament.LoggedEvent{event(seq)}, false)
	}
	if copies := testing.AllocsPerRun(100, func() { n.recentAfter(lobby, 5, 100) }); copies != 0 {
		t.Errorf("a follower's read of the kept events allocated %v times, want none", copies)
	}
	given := n.recentAfter(lobby, 5, 3)
	for seq := int64(11); seq <= 3*maxRecentEvents; seq++ {
		n.wake(lobby, seq, []tournament.LoggedEvent{event(seq)}, false)
	}
	for i, e := range given {
		if want := event(int64(6 + i)); !reflect.DeepEqual(e, want) {
			t.Fatalf("the events given out changed as the run moved on: %+v, want %+v", e, want)
		}
	}
	if grown := append(given, event(99)); &grown[0] == &n.recent[lobby][0] || len(n.recent[lobby]) != maxRecentEvents {
		t.Fatal("the events given out can be appended to in place")
	}
}

// TestForgedNotificationsKeepNothing: any login may NOTIFY the events channel with lobby ids of
// its choosing (the attack sent 600,000 and rpsd's memory grew with them). A notification of a
// lobby nobody here follows, without an event under the note key, leaves nothing behind in the
// listener's per-lobby maps, so they stay bounded however many arrive.
func TestForgedNotificationsKeepNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, Options{Service: fastService()})
	if _, err := s.CurrentSigningKey(ctx); err != nil { // the key notifications are MACed under
		t.Fatal(err)
	}
	followed := createLobby(t, s, admin(t, s), fastConfig(60_000))
	woken, cancel := s.Subscribe(followed)
	defer cancel()
	// The listener connects in the background: notify the followed lobby until it hears.
	marker := func(seq int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, EventsChannel, fmt.Sprintf("%s:%d:", followed, seq)); err != nil {
				t.Fatal(err)
			}
			select {
			case <-woken:
				return
			case <-time.After(200 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatal("the listener never heard the followed lobby")
			}
		}
	}
	marker(1)
	const forged = 20_000
	// Every shape a payload can take: the seq alone, a bogus MAC and event, no seq at all.
	if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, gen_random_uuid()::text || CASE i % 3
			WHEN 0 THEN ':' || i || ':'
			WHEN 1 THEN ':' || i || ':AAAAAAAAAAAAAAAAAAAAAA:{"t":"lobby_closed","a":1,"d":{},"p":"","h":""}'
			ELSE '' END)
		FROM generate_series(1, $2) i`, EventsChannel, forged); err != nil {
		t.Fatal(err)
	}
	// Notifications arrive in commit order and the listener takes them one at a time: once the
	// next marker is heard, every forged one was handled.
	for len(woken) > 0 {
		<-woken
	}
	marker(2)
	if kept := s.notify.lobbiesKept(); kept > 1 {
		t.Errorf("after %d forged notifications the listener keeps %d lobby entries, want at most 1 (the followed lobby)", forged, kept)
	}
}

// lobbiesKept is the number of entries in the notifier's per-lobby maps.
func (n *notifier) lobbiesKept() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return max(len(n.heads), len(n.recent), len(n.followers))
}

// TestNoteKeyFollowsRotation: the listener derives the note key from the current signing key, and
// switches to the new one when a rotation commits, before it takes any later notification; the
// events notified after it are still handed to followers without a read.
func TestNoteKeyFollowsRotation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, Options{Service: fastService()})
	first, err := s.CurrentSigningKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	adm := admin(t, s)
	lobby := createLobby(t, s, adm, fastConfig(60_000))
	_, cancel := s.Subscribe(lobby)
	defer cancel()
	waitNoteKey := func(k SigningKey) {
		t.Helper()
		want := sha256.Sum256(append([]byte("rps-event-note-v1\n"), k.Private.Seed()...))
		deadline := time.Now().Add(5 * time.Second)
		for got := s.noteKey.Load(); got == nil || *got != want; got = s.noteKey.Load() {
			if time.Now().After(deadline) {
				t.Fatalf("the note key is not derived from key %s", k.ID)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitNoteKey(first)
	second, err := s.RotateSigningKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitNoteKey(second)
	head, _, err := s.Head(ctx, lobby)
	if err != nil {
		t.Fatal(err)
	}
	if err := register(s, player(t, s, "p", 100), lobby); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(s.notify.recentAfter(lobby, head, 10)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the event notified after the rotation is not taken under the new key")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
