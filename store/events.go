package store

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/commitreveal/rps/tournament"
	"github.com/jackc/pgx/v5"
)

// EventsChannel is the channel notified, on commit, of the events a transaction appended to a
// lobby's log, once per lobby and statement, with "lobby:seq:mac:events" (seq the last event's,
// events the JSON array of eventNote, or "lobby:seq:" when they would not fit a notification or
// no note key is loaded), so that every replica can wake the readers following the lobby, and only
// those it is news for, and hand them the new events without reading them back (see
// recentEvents). Any role that can connect to the database may NOTIFY, so events are taken from a
// notification only when its MAC, under the note key every replica derives from the database's
// current signing key (see loadNoteKey), holds: forged ones could otherwise be served and signed.
const EventsChannel = "rps_events"

// maxNotePayload keeps a notification under Postgres's limit of 8,000 bytes.
const maxNotePayload = 7900

// eventNote is an event as a notification carries it.
type eventNote struct {
	Seq      int64                `json:"s"`
	Type     tournament.EventType `json:"t"`
	GameID   tournament.GameID    `json:"g,omitempty"`
	At       int64                `json:"a"`
	Data     json.RawMessage      `json:"d"`
	PrevHash []byte               `json:"p"`
	Hash     []byte               `json:"h"`
}

// noteMAC authenticates a notification's "lobby:seq:" and events under key.
func noteMAC(key *[32]byte, head, note string) string {
	m := hmac.New(sha256.New, key[:])
	m.Write([]byte(head))
	m.Write([]byte(note))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// notePayload is the notification of consecutive events of one lobby's log:
// "lobby:seq:mac:events", or "lobby:seq:" when they would not fit or key is nil (no note key
// loaded yet).
func notePayload(key *[32]byte, events ...tournament.LoggedEvent) (string, error) {
	last := events[len(events)-1]
	head := string(last.LobbyID) + ":" + strconv.FormatInt(last.Seq, 10) + ":"
	if key == nil {
		return head, nil
	}
	note := string(appendEventNotes(make([]byte, 0, 256*len(events)), events))
	mac := noteMAC(key, head, note)
	if len(head)+len(mac)+1+len(note) > maxNotePayload {
		return head, nil
	}
	return head + mac + ":" + note, nil
}

// appendEventNotes appends the events as the JSON array of eventNote, built by hand: a
// notification per batch, on every action.
func appendEventNotes(b []byte, events []tournament.LoggedEvent) []byte {
	b = append(b, '[')
	for i, e := range events {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"s":`...)
		b = strconv.AppendInt(b, e.Seq, 10)
		b = append(b, `,"t":`...)
		b = tournament.AppendJSONString(b, string(e.Type))
		if e.GameID != "" {
			b = append(b, `,"g":`...)
			b = tournament.AppendJSONString(b, string(e.GameID))
		}
		b = append(b, `,"a":`...)
		b = strconv.AppendInt(b, e.At, 10)
		// Data goes as it is, byte for byte (its hash covers those bytes): canonical JSON.
		b = append(b, `,"d":`...)
		b = append(b, e.Data...)
		b = append(b, `,"p":"`...)
		b = base64.StdEncoding.AppendEncode(b, e.PrevHash[:])
		b = append(b, `","h":"`...)
		b = base64.StdEncoding.AppendEncode(b, e.Hash[:])
		b = append(b, `"}`...)
	}
	return append(b, ']')
}

// parseEventNote reads an EventsChannel payload: the lobby, the seq of its last event and the
// events. A payload without a seq wakes the lobby's followers with the head unknown; one without
// the events (too large, from an older replica, or sent before a note key was loaded), whose MAC
// does not hold under key, or whose events are not consecutive up to seq gives no events, so
// followers read the log.
func parseEventNote(payload string, key *[32]byte) (lobby tournament.LobbyID, seq int64, events []tournament.LoggedEvent) {
	lobbyText, rest, _ := strings.Cut(payload, ":")
	seqText, body, _ := strings.Cut(rest, ":")
	lobby = tournament.LobbyID(lobbyText)
	seq, err := strconv.ParseInt(seqText, 10, 64)
	if err != nil {
		return lobby, math.MaxInt64, nil
	}
	mac, body, _ := strings.Cut(body, ":")
	if key == nil || body == "" || !hmac.Equal([]byte(mac), []byte(noteMAC(key, payload[:len(lobbyText)+len(seqText)+2], body))) {
		return lobby, seq, nil
	}
	var notes []eventNote
	if json.Unmarshal([]byte(body), &notes) != nil || len(notes) == 0 {
		return lobby, seq, nil
	}
	events = make([]tournament.LoggedEvent, len(notes))
	for i, note := range notes {
		if note.Seq != seq-int64(len(notes)-1-i) || len(note.PrevHash) != 32 || len(note.Hash) != 32 {
			return lobby, seq, nil
		}
		e := tournament.LoggedEvent{Seq: note.Seq, Type: note.Type, LobbyID: lobby, GameID: note.GameID, At: note.At, Data: note.Data}
		copy(e.PrevHash[:], note.PrevHash)
		copy(e.Hash[:], note.Hash)
		events[i] = e
	}
	return lobby, seq, events
}

// Append seals the event after its lobby's chain head and holds it, with the lobby's new head,
// for the transaction's next write of its held rows (see writeHeld). The head comes from the
// lock the caller took (LockLobby, InsertLobby, ShiftDeadlines); a lobby not yet locked is locked
// here.
func (t *pgTx) Append(ctx context.Context, e tournament.Event) error {
	prev, ok := t.heads[e.LobbyID]
	if !ok {
		var hash []byte
		err := queryRow(ctx, t.tx, `SELECT last_seq, last_hash FROM lobbies WHERE id = $1 FOR UPDATE`,
			e.LobbyID).Scan(&prev.Seq, &hash)
		if err != nil {
			return fmt.Errorf("lock lobby %s: %w", e.LobbyID, err)
		}
		copy(prev.Hash[:], hash)
	}
	le, err := tournament.Seal(prev, e)
	if err != nil {
		return err
	}
	t.held.events = append(t.held.events, le)
	t.held.lobby(e.LobbyID).moved = true
	t.heads[e.LobbyID] = le
	return nil
}

// eventRows writes the held events, in one insert, and notifies each lobby's.
func (t *pgTx) eventRows(b *setStatement) error {
	events := t.held.events
	n := len(events)
	lobby, seq, typ, game, at, data, prev, hash := make([]string, n), make([]int64, n), make([]string, n), make([]string, n),
		make([]int64, n), make([]string, n), make([][]byte, n), make([][]byte, n)
	for i, e := range events {
		lobby[i], seq[i], typ[i], game[i], at[i], data[i], prev[i], hash[i] = string(e.LobbyID), e.Seq, string(e.Type),
			string(e.GameID), e.At, string(e.Data), e.PrevHash[:], e.Hash[:]
	}
	// data is json, not jsonb: the exact bytes the hash covers.
	b.cte("events", `INSERT INTO events (lobby_id, seq, type, game_id, at, data, prev_hash, hash)
		SELECT e.lobby, e.seq, e.type, nullif(e.game, '')::uuid, e.at, e.data::json, e.prev, e.hash
		FROM `+b.arrays("e", col("lobby", "uuid", lobby), col("seq", "bigint", seq), col("type", "text", typ),
		col("game", "text", game), col("at", "bigint", at), col("data", "text", data), col("prev", "bytea", prev),
		col("hash", "bytea", hash)))
	key := t.s.noteKey.Load()
	for from := 0; from < n; {
		to := from + 1
		for to < n && events[to].LobbyID == events[from].LobbyID {
			to++
		}
		payload, err := notePayload(key, events[from:to]...)
		if err != nil {
			return err
		}
		b.notify(EventsChannel, payload)
		from = to
	}
	return nil
}

// NotifiedEvents is Events for a follower waiting for news (a long poll, an event stream): the
// events that the notifications brought, when they continue the log right after after, are
// returned without a read, so a follower at the head, woken by the next event, reads nothing (the
// profile of the mixed load showed one read of the log per poll). A page may then end before the
// log does, at the last event notified, whose own notification wakes the follower again.
// Otherwise, or after a gap in the notifications, it reads the log. Pages read without waiting
// (a verifier's) always come from the log.
func (s *Store) NotifiedEvents(ctx context.Context, lobby tournament.LobbyID, after int64, limit int) ([]tournament.LoggedEvent, error) {
	if recent := s.notify.recentAfter(lobby, after, limit); len(recent) > 0 {
		return recent, nil
	}
	return s.Events(ctx, lobby, after, limit)
}

// Events returns up to limit events of a lobby's log with a sequence number greater than after,
// in order. The slice may be shared with concurrent callers and must not be modified.
//
// A new event wakes every follower of its lobby at once, and they all ask for the events after
// the same seq: identical reads are made once for all the callers that asked before it began (see
// eventReads), so the database's work per event does not grow with the number of followers, and
// no caller gets a read that began before it asked, which could miss an event committed in
// between (a notification of it may come later, or not at all while the listener is away).
func (s *Store) Events(ctx context.Context, lobby tournament.LobbyID, after int64, limit int) ([]tournament.LoggedEvent, error) {
	if !validID(string(lobby)) {
		return nil, nil
	}
	// Followers asking for different page sizes share a read of the larger page.
	read := max(limit, sharedEventPage)
	events, err := s.eventReads.do(eventPage{lobby, after, read}, func() ([]tournament.LoggedEvent, error) {
		// Detached from the first caller's context, whose cancellation must not fail the others.
		return collect(context.WithoutCancel(ctx), s.pool, scanEvent, `SELECT seq, type, lobby_id::text,
				coalesce(game_id::text, ''), at, data::text, prev_hash, hash
			FROM events WHERE lobby_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, lobby, after, read)
	})
	if err != nil {
		return nil, err
	}
	return events[:min(limit, len(events))], nil
}

// eventPage names a read of a lobby's log: the events after a seq, up to a page size.
type eventPage struct {
	lobby tournament.LobbyID
	after int64
	limit int
}

// eventReads shares identical reads of the log among the callers that asked for one before it
// began. A caller that finds a read of its page running waits for it to end and then shares the
// next one with whoever came meanwhile: it never gets a read that began before it asked (a fault
// run caught the former sharing, keyed by the notifications heard so far, answering a follower
// with a page read more than a second before its request, across a pause of the replica, while the
// notifications of the newer events waited unread). At most two reads of a page are made at
// once: the running one and the next.
type eventReads struct {
	mu      sync.Mutex
	running map[eventPage]*sharedRead
	next    map[eventPage]*sharedRead
}

// sharedRead is one read of a page, for every caller it answers.
type sharedRead struct {
	done   chan struct{}
	events []tournament.LoggedEvent
	err    error
}

// errReadAbandoned answers the callers of a read whose function panicked.
var errReadAbandoned = errors.New("the shared read of the log did not finish")

// do returns the result of read for page, made at some moment after do was called, and shared.
func (g *eventReads) do(page eventPage, read func() ([]tournament.LoggedEvent, error)) ([]tournament.LoggedEvent, error) {
	g.mu.Lock()
	if r := g.next[page]; r != nil {
		g.mu.Unlock()
		<-r.done
		return r.events, r.err
	}
	r := &sharedRead{done: make(chan struct{}), err: errReadAbandoned}
	if running := g.running[page]; running != nil {
		// It may have begun before this call: the next read begins once it ends.
		if g.next == nil {
			g.next = map[eventPage]*sharedRead{}
		}
		g.next[page] = r
		g.mu.Unlock()
		<-running.done
		g.mu.Lock()
		delete(g.next, page)
	}
	if g.running == nil {
		g.running = map[eventPage]*sharedRead{}
	}
	g.running[page] = r
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.running, page)
		g.mu.Unlock()
		close(r.done)
	}()
	r.events, r.err = read()
	return r.events, r.err
}

// sharedEventPage is the smallest page a read of the log asks the database for.
const sharedEventPage = 100

func scanEvent(r pgx.CollectableRow) (tournament.LoggedEvent, error) {
	var e tournament.LoggedEvent
	var data string
	var prev, hash []byte
	if err := r.Scan(&e.Seq, &e.Type, &e.LobbyID, &e.GameID, &e.At, &data, &prev, &hash); err != nil {
		return e, err
	}
	e.Data = []byte(data)
	copy(e.PrevHash[:], prev)
	copy(e.Hash[:], hash)
	return e, nil
}
