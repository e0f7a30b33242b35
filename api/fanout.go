package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/commitreveal/rps/tournament"
	"github.com/commitreveal/rps/translog"
)

// An event wakes every follower of its lobby at once (in the mixed load, each of a lobby's ten
// players holds a stream or a long poll), and they all want the same bytes: the new event, then
// the head it made, signed. fanOut encodes them once per lobby and position and hands the bytes to
// every follower there, which only writes them (encoding and signing per follower was most of a
// wake-up's CPU after the HTTP writes themselves).
//
// What is kept is bounded: only for lobbies with a follower here now (dropped with the last one),
// at most maxSharedEvents encoded events and maxSharedBatches batches per lobby, and only batches
// of at most maxSharedEvents events (a follower that far behind is encoded for alone).
type fanOut struct {
	mu      sync.Mutex
	lobbies map[tournament.LobbyID]*lobbyFanOut
}

const (
	maxSharedEvents  = 64
	maxSharedBatches = 4
)

// lobbyFanOut is what the followers of one lobby share.
type lobbyFanOut struct {
	followers int // under fanOut.mu
	// mu is held while a batch is built: followers woken together wait for the first one's
	// encoding rather than each making their own.
	mu sync.Mutex
	// events are the lobby's newest events as encoded, ascending by seq.
	events []encodedEvent
	// batches are the newest batches built, oldest first.
	batches []sharedBatch
}

// encodedEvent is an event as a stream sends it (`id`, `event`, `data`) once it is live, without
// leafIndex; its data is the event's JSON, as a long poll's page holds it too.
type encodedEvent struct {
	seq   int64
	hash  [32]byte
	frame []byte
	// data is where the event's JSON is in frame.
	data []byte
}

// batchKey names the bytes that followers at one position are sent: the events after `after` up
// to `last` as a stream's frames or a long poll's page, and the head that follows them.
type batchKey struct {
	page        bool
	after, last int64
	head        SignedHead
}

type sharedBatch struct {
	key   batchKey
	bytes []byte
}

// follow counts a follower of a lobby in, for as long as it may ask for batches; the function
// returned counts it out.
func (f *fanOut) follow(lobby tournament.LobbyID) (*lobbyFanOut, func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lobbies == nil {
		f.lobbies = map[tournament.LobbyID]*lobbyFanOut{}
	}
	l := f.lobbies[lobby]
	if l == nil {
		l = &lobbyFanOut{}
		f.lobbies[lobby] = l
	}
	l.followers++
	return l, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if l.followers--; l.followers == 0 {
			delete(f.lobbies, lobby)
		}
	}
}

// streamBatch is what a stream at after sends for events (the events after it, consecutive) and
// the signed head at the last of them: each event's frame, then the head's.
func (l *lobbyFanOut) streamBatch(after int64, events []tournament.LoggedEvent, head SignedHead) ([]byte, error) {
	return l.batch(batchKey{after: after, last: events[len(events)-1].Seq, head: head}, events)
}

// pollPage is a long poll's answer at after for events (the events after it, consecutive) and the
// signed head at the last of them: the JSON of its EventPage, as the generated response encodes it.
func (l *lobbyFanOut) pollPage(after int64, events []tournament.LoggedEvent, head SignedHead) ([]byte, error) {
	return l.batch(batchKey{page: true, after: after, last: events[len(events)-1].Seq, head: head}, events)
}

func (l *lobbyFanOut) batch(key batchKey, events []tournament.LoggedEvent) ([]byte, error) {
	if len(events) > maxSharedEvents {
		return encodeBatch(key, events, func(e *tournament.LoggedEvent) (encodedEvent, error) { return encodeEvent(e, nil) })
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range l.batches {
		if b.key == key {
			return b.bytes, nil
		}
	}
	out, err := encodeBatch(key, events, l.event)
	if err != nil {
		return nil, err
	}
	if len(l.batches) == maxSharedBatches {
		l.batches = append(l.batches[:0], l.batches[1:]...)
	}
	l.batches = append(l.batches, sharedBatch{key: key, bytes: out})
	return out, nil
}

// event is e encoded, from the lobby's newest events when they hold it; l.mu is held.
func (l *lobbyFanOut) event(e *tournament.LoggedEvent) (encodedEvent, error) {
	for i := len(l.events) - 1; i >= 0 && l.events[i].seq >= e.Seq; i-- {
		if l.events[i].seq == e.Seq && l.events[i].hash == e.Hash {
			return l.events[i], nil
		}
	}
	enc, err := encodeEvent(e, nil)
	if err != nil {
		return enc, err
	}
	if n := len(l.events); n == 0 || l.events[n-1].seq < e.Seq {
		if n == maxSharedEvents {
			l.events = append(l.events[:0], l.events[1:]...)
		}
		l.events = append(l.events, enc)
	}
	return enc, nil
}

// encodeBatch builds the bytes of key from events, each encoded by encode.
func encodeBatch(key batchKey, events []tournament.LoggedEvent, encode func(*tournament.LoggedEvent) (encodedEvent, error)) ([]byte, error) {
	head, err := json.Marshal(key.head)
	if err != nil {
		return nil, fmt.Errorf("encode head: %w", err)
	}
	var out bytes.Buffer
	if key.page {
		out.WriteString(`{"events":[`)
	}
	for i := range events {
		enc, err := encode(&events[i])
		if err != nil {
			return nil, err
		}
		switch {
		case !key.page:
			out.Write(enc.frame)
		case i > 0:
			out.WriteByte(',')
			fallthrough
		default:
			out.Write(enc.data)
		}
	}
	if key.page {
		// The field order and the final line feed of json.Encoder on an EventPage without
		// logProof.
		out.WriteString(`],"head":`)
		out.Write(head)
		out.WriteString(`,"next":`)
		out.WriteString(strconv.FormatInt(key.last, 10))
		out.WriteString("}\n")
	} else {
		out.Write(headFrame(head))
	}
	return out.Bytes(), nil
}

// encodeEvent is e's stream frame and JSON, with its leaf when ranges (the lobby's log ranges
// around it) hold it.
func encodeEvent(e *tournament.LoggedEvent, ranges []translog.Range) (encodedEvent, error) {
	view := eventView(*e)
	setLeaf(&view, ranges)
	data, err := json.Marshal(view)
	if err != nil {
		return encodedEvent{}, fmt.Errorf("encode event %d: %w", e.Seq, err)
	}
	frame := make([]byte, 0, len(data)+len(e.Type)+40)
	frame = append(frame, "id: "...)
	frame = strconv.AppendInt(frame, e.Seq, 10)
	frame = append(frame, "\nevent: "...)
	frame = append(frame, e.Type...)
	frame = append(frame, "\ndata: "...)
	start := len(frame)
	frame = append(frame, data...)
	end := len(frame)
	frame = append(frame, "\n\n"...)
	return encodedEvent{seq: e.Seq, hash: e.Hash, frame: frame, data: frame[start:end:end]}, nil
}

// headFrame is a signed head's JSON as a stream sends it after a batch of events.
func headFrame(head []byte) []byte {
	return slices.Concat([]byte("event: head\ndata: "), head, []byte("\n\n"))
}
