package store

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/commitreveal/rps/tournament"
)

// AccountsChannel is notified, on commit, with the id of every account whose row changed other
// than in its balance (a trigger of migration 0005 does it), so that every replica forgets the
// account's cached tokens.
const AccountsChannel = "rps_accounts"

// notifier fans the notifications of one LISTEN connection out to every local follower of a
// lobby (long polls and event streams), so that followers cost no connection each, and to the
// watchers of accounts.
type notifier struct {
	mu        sync.Mutex
	followers map[tournament.LobbyID]map[chan struct{}]struct{}
	// accountWatchers are told of every changed account; "" means any account may have changed.
	accountWatchers []func(tournament.AccountID)
	started         bool
	// heads are the highest seq notified of each lobby kept since the listener last
	// (re)connected: a follower further on has nothing to read.
	heads map[tournament.LobbyID]int64
	// recent holds, for each lobby kept, the last events the notifications brought, consecutive,
	// since the listener last (re)connected; at most maxRecentEvents each.
	recent map[tournament.LobbyID][]tournament.LoggedEvent
}

// maxRecentEvents bounds the events kept per lobby: a follower further behind reads the log.
const maxRecentEvents = 64

// maxRecentLobbies bounds the lobbies whose recent events are kept, and so the memory they take
// (typically under 200 bytes an event, at most maxNotePayload): past it, a lobby's run is dropped to
// make room, and its followers read the log.
const maxRecentLobbies = 4096

// maxKnownLobbies bounds the heads remembered; past it an arbitrary lobby's are
// forgotten to make room (which costs reads, not correctness).
const maxKnownLobbies = 100_000

// MayHaveEventsAfter reports whether the lobby's log may hold events after seq: false only when
// every notification since the listener connected says that the log ends at or before seq, so a
// follower that is ahead of the news need not read (a known head also means that the lobby
// exists). A follower subscribed before asking is woken by the next notification.
func (s *Store) MayHaveEventsAfter(lobby tournament.LobbyID, seq int64) bool {
	n := &s.notify
	n.mu.Lock()
	defer n.mu.Unlock()
	head, known := n.heads[lobby]
	return !known || head > seq
}

// Subscribe returns a channel that receives a value whenever the lobby's log may have grown, and
// a function to call when done. Wake-ups are coalesced: a follower reads the log after each one.
// After a lost database connection every follower is woken, since notifications may have been
// missed.
func (s *Store) Subscribe(lobby tournament.LobbyID) (<-chan struct{}, func()) {
	n := &s.notify
	ch := make(chan struct{}, 1)
	n.mu.Lock()
	if n.followers == nil {
		n.followers = map[tournament.LobbyID]map[chan struct{}]struct{}{}
	}
	if n.followers[lobby] == nil {
		n.followers[lobby] = map[chan struct{}]struct{}{}
	}
	n.followers[lobby][ch] = struct{}{}
	s.startListenerLocked()
	n.mu.Unlock()
	return ch, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		delete(n.followers[lobby], ch)
		if len(n.followers[lobby]) == 0 {
			delete(n.followers, lobby)
		}
	}
}

// WatchAccounts calls fn with the id of every account whose row changes other than in its balance,
// on any replica, soon after the change commits; and with "" whenever changes may have been
// missed (the listening connection was lost), meaning any account may have changed. fn must not
// block.
func (s *Store) WatchAccounts(fn func(tournament.AccountID)) {
	n := &s.notify
	n.mu.Lock()
	defer n.mu.Unlock()
	n.accountWatchers = append(n.accountWatchers, fn)
	s.startListenerLocked()
}

// startListenerLocked starts the LISTEN connection on first use; s.notify.mu is held.
func (s *Store) startListenerLocked() {
	if !s.notify.started {
		s.notify.started = true
		go s.listen(s.listenCtx)
	}
}

// accountChanged tells every account watcher.
func (n *notifier) accountChanged(id tournament.AccountID) {
	n.mu.Lock()
	watchers := n.accountWatchers
	n.mu.Unlock()
	for _, fn := range watchers {
		fn(id)
	}
}

// recentAfter returns up to limit events after seq from those the notifications brought, if
// they hold the one right after seq: consecutive events of the log, each exactly as committed.
// The slice is shared, not copied (every follower of a lobby asks for the same events when one
// commits), and must not be modified: a run only grows past its end (which the slice returned
// does not reach, its capacity clipped to its length) or is replaced, so what it holds is never
// written again.
func (n *notifier) recentAfter(lobby tournament.LobbyID, seq int64, limit int) []tournament.LoggedEvent {
	n.mu.Lock()
	defer n.mu.Unlock()
	run := n.recent[lobby]
	if len(run) == 0 || seq < run[0].Seq-1 || seq >= run[len(run)-1].Seq {
		return nil
	}
	from := int(seq - run[0].Seq + 1)
	to := min(len(run), from+limit)
	return run[from:to:to]
}

// keep adds notified events to their lobby's recent events: after them if they are the next
// ones, instead of them otherwise (a gap: events came without their content, or were missed).
func (n *notifier) keep(lobby tournament.LobbyID, seq int64, events []tournament.LoggedEvent) {
	if len(events) == 0 {
		n.keepOne(lobby, seq, nil)
	}
	for i := range events {
		n.keepOne(lobby, events[i].Seq, &events[i])
	}
}

// keepOne adds a notified event (nil: seq came without it) to its lobby's recent events.
func (n *notifier) keepOne(lobby tournament.LobbyID, seq int64, e *tournament.LoggedEvent) {
	if n.recent == nil {
		n.recent = map[tournament.LobbyID][]tournament.LoggedEvent{}
	}
	run, kept := n.recent[lobby]
	if !kept && e != nil {
		evictOne(n.recent, maxRecentLobbies)
	}
	switch {
	case e == nil:
		delete(n.recent, lobby)
	case len(run) > 0 && run[len(run)-1].Seq == seq-1:
		if len(run) == maxRecentEvents {
			run = run[1:]
		}
		n.recent[lobby] = append(run, *e)
	default:
		n.recent[lobby] = []tournament.LoggedEvent{*e}
	}
}

// evictOne deletes an arbitrary entry of m (map order is random) when it holds limit or more.
func evictOne[V any](m map[tournament.LobbyID]V, limit int) (V, bool) {
	var none V
	if len(m) < limit {
		return none, false
	}
	for lobby, v := range m {
		delete(m, lobby)
		return v, true
	}
	return none, false
}

// wake handles the notification of a lobby's events up to seq (events is nil when the
// notification did not carry them under the note key), or, with all, a time when notifications
// may have been missed.
//
// Any login can NOTIFY, with lobby ids of its choosing: what the listener keeps of a lobby (its
// head and recent events) comes only from events under the note key, or for lobbies
// followed here, and is bounded. A notification of any other lobby keeps nothing: it only makes
// what was known of the lobby unknown, so its next follower reads the log.
func (n *notifier) wake(lobby tournament.LobbyID, seq int64, events []tournament.LoggedEvent, all bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if all {
		// Notifications may have been missed: no head is known any more, and no event follows
		// those kept.
		n.heads, n.recent = nil, nil
		for _, chans := range n.followers {
			signal(chans)
		}
		return
	}
	if events == nil && len(n.followers[lobby]) == 0 {
		n.forget(lobby)
		return
	}
	n.keep(lobby, seq, events)
	if n.heads == nil {
		n.heads = map[tournament.LobbyID]int64{}
	}
	if _, known := n.heads[lobby]; !known {
		evictOne(n.heads, maxKnownLobbies)
	}
	if seq > n.heads[lobby] {
		n.heads[lobby] = seq
	}
	signal(n.followers[lobby])
}

// forget drops what is known of a lobby: its head and recent events.
func (n *notifier) forget(lobby tournament.LobbyID) {
	delete(n.heads, lobby)
	delete(n.recent, lobby)
}

func signal(chans map[chan struct{}]struct{}) {
	for ch := range chans {
		select {
		case ch <- struct{}{}:
		default: // already woken, not yet read
		}
	}
}

// listen holds the LISTEN connection until ctx ends, reconnecting after a failure.
func (s *Store) listen(ctx context.Context) {
	for ctx.Err() == nil {
		err := s.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("event listener lost its connection; reconnecting", "err", err)
		s.notify.wake("", 0, nil, true)
		s.notify.accountChanged("")
		select {
		case <-ctx.Done():
		case <-time.After(failureWait):
		}
	}
}

func (s *Store) listenOnce(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+EventsChannel+"; LISTEN "+AccountsChannel+"; LISTEN "+KeysChannel); err != nil {
		return err
	}
	// After LISTEN: a rotation committed since is notified.
	if err := s.loadNoteKey(ctx, conn); err != nil {
		return err
	}
	// Followers that subscribed, and accounts that changed, before this connection listened may
	// have missed a notification.
	s.notify.wake("", 0, nil, true)
	s.notify.accountChanged("")
	for {
		note, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		switch note.Channel {
		case AccountsChannel:
			s.notify.accountChanged(tournament.AccountID(note.Payload))
			continue
		case KeysChannel:
			// Before any later notification is taken (any login may send this one too; it costs
			// one read of the current key).
			if err := s.loadNoteKey(ctx, conn); err != nil {
				return err
			}
			continue
		}
		lobby, seq, events := parseEventNote(note.Payload, s.noteKey.Load())
		s.notify.wake(lobby, seq, events, false)
	}
}
