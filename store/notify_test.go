package store

import (
	"context"
	"fmt"
	"reflect"
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
	for s.MayHaveEventsAfter(lobby, last-1) && !reflect.DeepEqual(s.notify.recentAfter(lobby, head, 100), want) {
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
}
