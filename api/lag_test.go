package api_test

import (
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apitest"
)

// TestLongPollBehindLaggingNotifications: a long poll whose notifications lag behind the log (the
// listener's database session is paused, so the notification of a committed event does not
// arrive) answers either the event, or an empty page whose head it read up to, with nothing new
// up to it. It answered an empty page with a head past it (issue 29), so a client could not tell
// "nothing new up to N" from "the server did not look".
func TestLongPollBehindLaggingNotifications(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	// A stream starts the store's listener, which then hears of the lobby's events from its
	// creation on.
	other := e.CreateLobby(map[string]any{"betSize": 1, "playersCountLimit": 5})
	e.OpenStream(other.Id.String(), "", "").Close()
	listener := listenerBackend(t, e)
	l := e.CreateLobby(map[string]any{"betSize": 1, "playersCountLimit": 5})
	lobby := l.Id.String()
	// A follower of the lobby, so that the store keeps the lobby's head as notified, and an event
	// notified while it follows.
	follower := e.OpenStream(lobby, "", "")
	e.Register(lobby, e.NewPlayer("q", 10)).Want(t, http.StatusCreated)
	var page api.EventPage
	e.Do("GET", "/v1/lobbies/"+lobby+"/events", "", nil).Want(t, http.StatusOK).Decode(t, &page)
	follower.Until(t, page.Next, 5*time.Second)

	if err := syscall.Kill(listener, syscall.SIGSTOP); err != nil {
		t.Skipf("cannot pause the listener's backend (pid %d): %v", listener, err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = syscall.Kill(listener, syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)
	p := e.NewPlayer("p", 10)
	e.Register(lobby, p).Want(t, http.StatusCreated)
	var polled api.EventPage
	e.Do("GET", fmt.Sprintf("/v1/lobbies/%s/events?wait=1&after=%d", lobby, page.Next), "", nil).Want(t, http.StatusOK).Decode(t, &polled)
	resume()
	t.Logf("listener %d; page next %d; polled %d events, next %d, head %d", listener, page.Next, len(polled.Events), polled.Next, polled.Head.Seq)
	if len(polled.Events) == 0 && polled.Head.Seq > polled.Next {
		t.Fatalf("an empty long poll answer with next %d names the head %d: it did not read up to it", polled.Next, polled.Head.Seq)
	}
	if len(polled.Events) == 0 || polled.Events[0].Seq != page.Next+1 || polled.Next != page.Next+1 || polled.Head.Seq != polled.Next {
		t.Fatalf("the long poll answered %d events, next %d, head %d; want event %d, next and head at it", len(polled.Events), polled.Next, polled.Head.Seq, page.Next+1)
	}
}

// listenerBackend is the process id of the database session the store listens on (the only one
// that reads the note key).
func listenerBackend(t *testing.T, e *apitest.Env) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var pids []int
		rows, err := e.Pool.Query(t.Context(), `SELECT pid FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()
			AND query = 'SELECT seed FROM signing_keys WHERE retired_at IS NULL'`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var pid int
			if err := rows.Scan(&pid); err != nil {
				t.Fatal(err)
			}
			pids = append(pids, pid)
		}
		rows.Close()
		if len(pids) == 1 {
			return pids[0]
		}
		if len(pids) > 1 || time.Now().After(deadline) {
			t.Fatalf("listener sessions: %v, want one", pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
