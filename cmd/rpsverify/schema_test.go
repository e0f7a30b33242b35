package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	rps "github.com/commitreveal/rps"
)

// checkEventSchemas has the server emit the types of event playMany does not (a lobby closed, a
// clock shifted by an outage) and checks every event of the lobbies, as served, against `Event`
// and against its type's schema in `TypedEvent` (which forbids fields a schema does not list).
// Then the lobbies still verify.
func checkEventSchemas(t *testing.T, s *server, lobbies []string) {
	s.do("POST", "/v1/lobbies/"+lobbies[0]+"/close", s.Admin, nil, http.StatusOK)
	s.register(lobbies[1], s.player(1000))
	// A registration with a deadline, open through an outage: the last heartbeat is a minute old, so recovery shifts every open deadline. A
	// beat of the clock worker in between makes recovery find no gap; try again then.
	for try := 0; ; try++ {
		s.exec(`UPDATE heartbeats SET beat_at = beat_at - 60000`)
		gap, err := s.Store.Recover(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if gap > 0 {
			break
		}
		if try == 5 {
			t.Fatal("recovery found no outage")
		}
	}

	// The contract itself: the server's embedded copy keeps only the schemas its routes use.
	spec, err := openapi3.NewLoader().LoadFromData(rps.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	event, typed := spec.Components.Schemas["Event"].Value, spec.Components.Schemas["TypedEvent"].Value
	seen := map[string]int{}
	for _, lobby := range lobbies {
		for _, raw := range s.rawEvents(lobby) {
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
			typ := v.(map[string]any)["type"].(string)
			seen[typ]++
			if err := event.VisitJSON(v); err != nil {
				t.Errorf("%s does not match Event: %v\n%s", typ, err, raw)
			}
			if err := typed.VisitJSON(v); err != nil {
				t.Errorf("%s does not match TypedEvent: %v\n%s", typ, err, raw)
			}
		}
	}
	var types []string
	for typ := range typed.Discriminator.Mapping {
		types = append(types, typ)
		if seen[typ] == 0 {
			t.Errorf("no %s event was emitted", typ)
		}
	}
	for typ := range seen {
		if !slices.Contains(types, typ) {
			t.Errorf("%s events are not in TypedEvent's mapping", typ)
		}
	}
	t.Logf("events checked by type: %v", seen)
	if code, out, _ := s.verify(); code != exitOK {
		t.Errorf("verify after the outage: exit %d\n%s", code, out)
	}
}

// rawEvents reads a lobby's whole log, each event as served.
func (s *server) rawEvents(lobby string) []json.RawMessage {
	s.t.Helper()
	var out []json.RawMessage
	for after := int64(0); ; {
		resp, err := http.Get(fmt.Sprintf("%s/v1/lobbies/%s/events?after=%d&limit=1000", s.URL, lobby, after))
		if err != nil {
			s.t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var page struct {
			Events []json.RawMessage `json:"events"`
			Next   int64             `json:"next"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			s.t.Fatalf("events: %v: %s", err, body)
		}
		out = append(out, page.Events...)
		if len(page.Events) < 1000 {
			return out
		}
		after = page.Next
	}
}
