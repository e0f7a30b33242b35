package store

import (
	"context"
	"fmt"

	"github.com/commitreveal/rps/tournament"
	"github.com/jackc/pgx/v5"
)

// EventsChannel is the channel notified, on commit, with "lobby:seq" for every event appended,
// so that every replica can wake the readers following the lobby, and only those it is news for.
const EventsChannel = "rps_events"

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
	t.tx.later(`WITH event AS (
			INSERT INTO events (lobby_id, seq, type, game_id, at, data, prev_hash, hash)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)),
		head AS (UPDATE lobbies SET last_seq = $2, last_hash = $8 WHERE id = $1)
		SELECT pg_notify($9, $1::uuid::text || ':' || $2::bigint)`,
		le.LobbyID, le.Seq, le.Type, nullID(le.GameID), le.At, string(le.Data), le.PrevHash[:], le.Hash[:],
		EventsChannel)
	t.heads[e.LobbyID] = le
	return nil
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
