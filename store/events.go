package store

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/commitreveal/rps/tournament"
	"github.com/jackc/pgx/v5"
)

// EventsChannel is the channel notified, on commit, for every event appended, with
// "lobby:seq:mac:event" (the event as eventNote, or "lobby:seq:" when it would not fit a
// notification or no note key is loaded), so that every replica can wake the readers following
// the lobby, and only those it is news for, and hand them the new events without reading them
// back (see recentEvents). Any role that can connect to the database may NOTIFY, so an event is
// taken from a notification only when its MAC, under the note key every replica derives from the
// database's current signing key (see loadNoteKey), holds: a forged one could otherwise be served
// and signed.
const EventsChannel = "rps_events"

// maxNotePayload keeps a notification under Postgres's limit of 8,000 bytes.
const maxNotePayload = 7900

// eventNote is an event as a notification carries it, after "lobby:seq:".
type eventNote struct {
	Type     tournament.EventType `json:"t"`
	GameID   tournament.GameID    `json:"g,omitempty"`
	At       int64                `json:"a"`
	Data     json.RawMessage      `json:"d"`
	PrevHash []byte               `json:"p"`
	Hash     []byte               `json:"h"`
}

// noteMAC authenticates a notification's "lobby:seq:" and event under key.
func noteMAC(key *[32]byte, head, note string) string {
	m := hmac.New(sha256.New, key[:])
	m.Write([]byte(head))
	m.Write([]byte(note))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// notePayload is the notification of a logged event: "lobby:seq:mac:event", or "lobby:seq:" when
// the event would not fit or key is nil (no note key loaded yet).
func notePayload(e tournament.LoggedEvent, key *[32]byte) (string, error) {
	head := string(e.LobbyID) + ":" + strconv.FormatInt(e.Seq, 10) + ":"
	if key == nil {
		return head, nil
	}
	var body strings.Builder
	enc := json.NewEncoder(&body)
	// Data goes as it is, byte for byte (its hash covers those bytes): no HTML escapes.
	enc.SetEscapeHTML(false)
	err := enc.Encode(eventNote{Type: e.Type, GameID: e.GameID, At: e.At, Data: e.Data, PrevHash: e.PrevHash[:], Hash: e.Hash[:]})
	if err != nil {
		return "", fmt.Errorf("event note: %w", err)
	}
	note := strings.TrimSuffix(body.String(), "\n")
	mac := noteMAC(key, head, note)
	if len(head)+len(mac)+1+len(note) > maxNotePayload {
		return head, nil
	}
	return head + mac + ":" + note, nil
}

// parseEventNote reads an EventsChannel payload. A payload without a seq (from an older replica)
// wakes the lobby's followers with the head unknown; one without the event (too large, from an
// older replica, or sent before a note key was loaded) or whose MAC does not hold under key gives
// no event, so followers read the log.
func parseEventNote(payload string, key *[32]byte) (lobby tournament.LobbyID, seq int64, event *tournament.LoggedEvent) {
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
	var note eventNote
	if json.Unmarshal([]byte(body), &note) != nil || len(note.PrevHash) != 32 || len(note.Hash) != 32 {
		return lobby, seq, nil
	}
	e := &tournament.LoggedEvent{Seq: seq, Type: note.Type, LobbyID: lobby, GameID: note.GameID, At: note.At, Data: note.Data}
	copy(e.PrevHash[:], note.PrevHash)
	copy(e.Hash[:], note.Hash)
	return lobby, seq, e
}

// Append seals the event after its lobby's chain head, inserts it, advances the head on the lobby
// row and notifies EventsChannel, in one statement. The head comes from the lock the caller took
// (LockLobby, InsertLobby, ShiftDeadlines); a lobby not yet locked is locked here.
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
	note, err := notePayload(le, t.s.noteKey.Load())
	if err != nil {
		return err
	}
	t.tx.later(`WITH event AS (
			INSERT INTO events (lobby_id, seq, type, game_id, at, data, prev_hash, hash)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)),
		head AS (UPDATE lobbies SET last_seq = $2, last_hash = $8 WHERE id = $1)
		SELECT pg_notify($9, $10)`,
		le.LobbyID, le.Seq, le.Type, nullID(le.GameID), le.At, string(le.Data), le.PrevHash[:], le.Hash[:],
		EventsChannel, note)
	t.heads[e.LobbyID] = le
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
// the same seq: identical reads in flight are made once and shared (events never change), so
// the database's work per event does not grow with the number of followers. A read is shared
// only by callers that saw the same number of wake-ups, so a follower woken by a newer event
// never gets the result of a read that began before that event was committed.
func (s *Store) Events(ctx context.Context, lobby tournament.LobbyID, after int64, limit int) ([]tournament.LoggedEvent, error) {
	if !validID(string(lobby)) {
		return nil, nil
	}
	// Followers asking for different page sizes share a read of the larger page.
	read := sharedEventPage
	if limit > read {
		read = limit
	}
	key := fmt.Sprintf("%s/%d/%d/%d", lobby, after, read, s.notify.generation(lobby))
	shared, err, _ := s.eventReads.Do(key, func() (any, error) {
		// Detached from the first caller's context, whose cancellation must not fail the others.
		return collect(context.WithoutCancel(ctx), s.pool, scanEvent, `SELECT seq, type, lobby_id::text,
				coalesce(game_id::text, ''), at, data::text, prev_hash, hash
			FROM events WHERE lobby_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, lobby, after, read)
	})
	if err != nil {
		return nil, err
	}
	events := shared.([]tournament.LoggedEvent)
	return events[:min(limit, len(events))], nil
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
