package api_test

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apitest"
)

// largestCursors are, for each cursor parameter of the spec, the extremes its pattern allows.
var largestCursors = map[string][]string{
	"LeaderboardAfter": {
		"999999999999999999_999999999999999999_ffffffff-ffff-ffff-ffff-ffffffffffff_999999999",
		"-999999999999999999_-999999999999999999_00000000-0000-0000-0000-000000000000_1",
	},
	"MyGamesAfter":  {"999999999999999999_ffffffff-ffff-ffff-ffff-ffffffffffff"},
	"AccountAfter":  {"ffffffff-ffff-ffff-ffff-ffffffffffff"},
	"LobbiesAfter":  {"1_999999999999999999_ffffffff-ffff-ffff-ffff-ffffffffffff", "0_-999999999999999999_ffffffff-ffff-ffff-ffff-ffffffffffff"},
	"OrderAfter":    {"999999999"},
	"LedgerAfter":   {"999999999999999999", "869208208239391456"},
	"EventsAfter":   {fmt.Sprint(int64(math.MaxInt64))},
	"StreamAfter":   {fmt.Sprint(int64(math.MaxInt64))},
	"LastEventId":   {fmt.Sprint(int64(math.MaxInt64))},
	"MyLedgerAfter": {"999999999999999999"},
}

// TestLargestCursors: every integer parameter of every operation at the largest value its schema
// allows, and every cursor at the extremes its pattern allows, with unknown parameters beside it,
// is answered without a 5xx, as an admin and as a player (issue 29: the audit log's cursor
// 869208208239391456 was 500 internal, bound to an int4 in its query).
func TestLargestCursors(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	p := e.NewPlayer("p", 1000)
	values := fixtureLobby(e, p.ID)
	spec, err := api.GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	var sent int
	for template, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			if method != http.MethodGet || template == "/v1/lobbies/{lobbyId}/events/stream" {
				continue // the stream never ends; its cursors are the events page's
			}
			for _, ref := range slices.Concat(item.Parameters, op.Parameters) {
				param := ref.Value
				var tries []string
				switch name := ref.Ref[strings.LastIndex(ref.Ref, "/")+1:]; {
				case param.Name == "after" && param.Schema.Value.Type.Is("string"):
					tries = largestCursors[name]
					if tries == nil {
						t.Fatalf("%s %s: no extreme values for the cursor %s", method, template, ref.Ref)
					}
				case param.Name == "wait":
					// A wait is bounded by its schema and holds the request open: nothing to overflow.
				case param.Schema.Value.Type.Is("integer"):
					largest := int64(math.MaxInt64)
					if param.Schema.Value.Format == "int32" {
						largest = math.MaxInt32
					}
					if m := param.Schema.Value.Max; m != nil {
						largest = int64(*m)
					}
					tries = []string{fmt.Sprint(largest)}
				}
				for _, v := range tries {
					path := template
					for k, fixture := range values {
						if k == param.Name && param.In == "path" {
							fixture = v
						}
						path = strings.ReplaceAll(path, "{"+k+"}", fixture)
					}
					var headers []string
					switch param.In {
					case "query":
						path += "?" + url.Values{param.Name: {v}, "x": {"1"}, "limit": {"55"}}.Encode()
					case "header":
						headers = []string{param.Name, v}
					}
					for _, token := range []string{e.Admin, p.Token} {
						sent++
						e.Do(method, path, token, nil, headers...) // Do fails the test on a 5xx
					}
				}
			}
		}
	}
	if sent < 40 {
		t.Fatalf("only %d requests sent", sent)
	}
}
