package api

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/commitreveal/rps/tournament"
	"github.com/commitreveal/rps/translog"
)

// vectorEvents are the events of store/testdata/events.json (their data holds what JSON escapes:
// <, >, &, quotes, U+2028, non-ASCII), with seqs moved by shift.
func vectorEvents(t *testing.T, shift int64) []tournament.LoggedEvent {
	t.Helper()
	var vectors struct {
		Events []struct {
			Seq                       int64
			Type, LobbyID, GameID, At string
			Data                      json.RawMessage
			PrevHash, Hash            string
		}
	}
	raw, err := os.ReadFile("../store/testdata/events.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &vectors); err != nil {
		t.Fatal(err)
	}
	out := make([]tournament.LoggedEvent, 0, len(vectors.Events))
	for _, v := range vectors.Events {
		at, err := time.Parse(time.RFC3339Nano, v.At)
		if err != nil {
			t.Fatal(err)
		}
		e := tournament.LoggedEvent{Seq: v.Seq + shift, Type: tournament.EventType(v.Type), LobbyID: tournament.LobbyID(v.LobbyID),
			GameID: tournament.GameID(v.GameID), At: at.UnixMilli(), Data: v.Data}
		if _, err := hex.Decode(e.PrevHash[:], []byte(v.PrevHash)); err != nil {
			t.Fatal(err)
		}
		if _, err := hex.Decode(e.Hash[:], []byte(v.Hash)); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func exampleHead(last tournament.LoggedEvent) SignedHead {
	return SignedHead{LobbyId: parseUUID(string(last.LobbyID)), Seq: last.Seq, Hash: hex.EncodeToString(last.Hash[:]),
		At: "2025-01-01T12:00:00.050Z", KeyId: "7849ac3049680be1", Signature: strings.Repeat("5c", 64)}
}

// oldStreamBatch is how a stream wrote a batch before its bytes were shared: each event's frame,
// formatted, then the head's.
func oldStreamBatch(t *testing.T, events []tournament.LoggedEvent, ranges []translog.Range, head SignedHead) string {
	t.Helper()
	var out strings.Builder
	for _, e := range events {
		view := eventView(e)
		setLeaf(&view, ranges)
		data, err := json.Marshal(view)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Type, data)
	}
	data, err := json.Marshal(head)
	if err != nil {
		t.Fatal(err)
	}
	out.WriteString("event: head\ndata: " + string(data) + "\n\n")
	return out.String()
}

// oldPollPage is how a long poll's answer was encoded: the generated response of its EventPage.
func oldPollPage(t *testing.T, after int64, events []tournament.LoggedEvent, head SignedHead) string {
	t.Helper()
	page := EventPage{Events: []Event{}, Next: after, Head: head}
	for _, e := range events {
		page.Events = append(page.Events, eventView(e))
		page.Next = e.Seq
	}
	rec := httptest.NewRecorder()
	if err := ListEvents200JSONResponse(page).VisitListEventsResponse(rec); err != nil {
		t.Fatal(err)
	}
	return rec.Body.String()
}

// TestFanOutBytesAreTheOldEncodings: the shared stream batches and long-poll pages, and a
// catching-up stream's batch with its leaves, are byte for byte what the encoders before them
// wrote, for every run of the vector log's events.
func TestFanOutBytesAreTheOldEncodings(t *testing.T) {
	var f fanOut
	l, unfollow := f.follow("5a1f0c1e-8d4b-4c55-9a43-2f1d0e7b6c11")
	defer unfollow()
	events := vectorEvents(t, 0)
	ranges := []translog.Range{{Lobby: string(events[0].LobbyID), FirstSeq: 1, Count: 2, FirstIndex: 40}}
	for from := range events {
		for to := from + 1; to <= len(events); to++ {
			run, after := events[from:to], events[from].Seq-1
			head := exampleHead(run[len(run)-1])
			stream, err := l.streamBatch(after, run, head)
			if err != nil {
				t.Fatal(err)
			}
			if want := oldStreamBatch(t, run, nil, head); string(stream) != want {
				t.Errorf("stream batch after %d:\n%s\nwant\n%s", after, stream, want)
			}
			page, err := l.pollPage(after, run, head)
			if err != nil {
				t.Fatal(err)
			}
			if want := oldPollPage(t, after, run, head); string(page) != want {
				t.Errorf("page after %d:\n%s\nwant\n%s", after, page, want)
			}
			catchUp, err := encodeBatch(batchKey{after: after, last: run[len(run)-1].Seq, head: head}, run, func(e *tournament.LoggedEvent) (encodedEvent, error) {
				return encodeEvent(e, ranges)
			})
			if err != nil {
				t.Fatal(err)
			}
			if want := oldStreamBatch(t, run, ranges, head); string(catchUp) != want {
				t.Errorf("catching-up batch after %d:\n%s\nwant\n%s", after, catchUp, want)
			}
		}
	}
	if !strings.Contains(oldStreamBatch(t, events, ranges, exampleHead(events[0])), `"leafIndex":41`) {
		t.Fatal("the catching-up batches carried no leafIndex: the test compares nothing")
	}
}

// TestFanOutSharesOneEncoding: followers of a lobby asking at once for the same batch all get the
// same bytes, built once; a lobby's batches and events are bounded, the oldest going first, and
// nothing is kept of a lobby once its last follower is gone.
func TestFanOutSharesOneEncoding(t *testing.T) {
	var f fanOut
	const lobby = "5a1f0c1e-8d4b-4c55-9a43-2f1d0e7b6c11"
	events := vectorEvents(t, 0)
	head := exampleHead(events[len(events)-1])

	const followers = 20
	got := make([][]byte, followers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range followers {
		wg.Go(func() {
			l, unfollow := f.follow(lobby)
			defer unfollow()
			<-start
			var err error
			if i%2 == 0 {
				got[i], err = l.streamBatch(0, events, head)
			} else {
				got[i], err = l.pollPage(0, events, head)
			}
			if err != nil {
				t.Error(err)
			}
		})
	}
	// Every follower counted in before any asks, so that the lobby's encodings live throughout.
	for {
		f.mu.Lock()
		n := 0
		if l := f.lobbies[lobby]; l != nil {
			n = l.followers
		}
		f.mu.Unlock()
		if n == followers {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(start)
	wg.Wait()
	for i := range followers {
		if &got[i][0] != &got[i%2][0] {
			t.Fatalf("follower %d got bytes of its own: the batch was encoded more than once", i)
		}
	}
	if len(f.lobbies) != 0 {
		t.Fatalf("%d lobbies kept after their last follower left", len(f.lobbies))
	}

	l, unfollow := f.follow(lobby)
	defer unfollow()
	// A long log, followed event by event: the lobby keeps its newest events and batches only.
	var log []tournament.LoggedEvent
	for shift := int64(0); len(log) < 3*maxSharedEvents; shift += int64(len(events)) {
		log = append(log, vectorEvents(t, shift)...)
	}
	first, err := l.streamBatch(log[0].Seq-1, log[:1], exampleHead(log[0]))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(log); i++ {
		if _, err := l.streamBatch(log[i].Seq-1, log[i:i+1], exampleHead(log[i])); err != nil {
			t.Fatal(err)
		}
		if len(l.events) > maxSharedEvents || len(l.batches) > maxSharedBatches {
			t.Fatalf("after %d events: %d events and %d batches kept", i+1, len(l.events), len(l.batches))
		}
	}
	if l.events[len(l.events)-1].seq != log[len(log)-1].Seq || l.events[0].seq != log[len(log)-maxSharedEvents].Seq {
		t.Fatalf("kept events %d..%d, want the newest %d", l.events[0].seq, l.events[len(l.events)-1].seq, maxSharedEvents)
	}
	again, err := l.streamBatch(log[0].Seq-1, log[:1], exampleHead(log[0]))
	if err != nil {
		t.Fatal(err)
	}
	if &again[0] == &first[0] || string(again) != string(first) {
		t.Fatal("an evicted batch was still served from memory, or rebuilt differently")
	}
	// A batch longer than what is kept is encoded for its follower alone.
	if _, err := l.streamBatch(log[0].Seq-1, log, exampleHead(log[len(log)-1])); err != nil || len(l.events) > maxSharedEvents {
		t.Fatalf("a long batch: %v, %d events kept", err, len(l.events))
	}
}
