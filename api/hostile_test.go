package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apiclient"
	"github.com/commitreveal/rps/internal/apitest"
)

// specOperation is one operation of openapi.yaml with what a request to it needs: its path
// template filled with the fixtures' ids, a body that passes validation (when it takes one), and
// every string it reads from the client.
type specOperation struct {
	method, template string
	// path is the template with every parameter filled with a fixture.
	path string
	// adminOnly: the operation refuses anyone but an admin before it judges the request.
	adminOnly bool
	// body is a valid request body (nil: the operation takes none).
	body map[string]any
	// strings are the string inputs: parameters (by where they go) and body fields (by their
	// path in the body).
	strings []stringInput
}

func (o specOperation) String() string { return o.method + " " + o.template }

// pathWith is the operation's path with the fixtures' values, but for parameter name, which gets
// value (escaped).
func (o specOperation) pathWith(values map[string]string, name, value string) string {
	path := strings.Replace(o.template, "{"+name+"}", url.PathEscape(value), 1)
	for k, v := range values {
		path = strings.ReplaceAll(path, "{"+k+"}", v)
	}
	return path
}

type stringInput struct {
	in   string // "path", "query", "header" or "body"
	name string
	// pointer is a body field's path ("config", "ruleset"); field is the name a problem gives it.
	pointer []string
}

func (s stringInput) field() string {
	if s.in == "body" {
		return strings.Join(s.pointer, ".")
	}
	return s.name
}

// fixtureLobby creates the lobby the spec's operations are called on, and returns the values of
// every path parameter: the account's id, the lobby's and its game's, and ones that exist for the
// rest.
func fixtureLobby(e *apitest.Env, account string) map[string]string {
	l := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 3})
	return map[string]string{
		"accountId": account, "lobbyId": l.Id.String(), "gameId": l.Game.Id.String(), "rulesetId": "rpsls", "round": "1", "seq": "1",
		"rulesetHash": strings.Repeat("a", 64), "keyId": "7849ac3049680be1",
	}
}

// specOperations walks openapi.yaml: every operation, with every string parameter and every
// string field of its body (nested objects included), so an operation or a field added to the
// spec is covered by the tests below without a change to them.
func specOperations(t *testing.T, pathValues map[string]string) []specOperation {
	t.Helper()
	spec, err := api.GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	var ops []specOperation
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			o := specOperation{method: method, template: path, path: path, adminOnly: api.AdminOperations()[op.OperationID]}
			for _, p := range append(slices.Clone(item.Parameters), op.Parameters...) {
				v := p.Value
				if v.In == "path" {
					value, ok := pathValues[v.Name]
					if !ok {
						t.Fatalf("%s %s: no fixture for the path parameter %s", method, path, v.Name)
					}
					o.path = strings.ReplaceAll(o.path, "{"+v.Name+"}", value)
				}
				if v.Schema != nil && v.Schema.Value.Type.Is("string") {
					o.strings = append(o.strings, stringInput{in: v.In, name: v.Name})
				}
			}
			if op.RequestBody != nil {
				schema := op.RequestBody.Value.Content.Get("application/json").Schema
				o.body = exampleOf(t, o, schema).(map[string]any)
				for _, ptr := range stringFields(schema.Value, nil) {
					o.strings = append(o.strings, stringInput{in: "body", pointer: ptr})
				}
			}
			ops = append(ops, o)
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].String() < ops[j].String() })
	return ops
}

// exampleOf is a value of schema: its example, or one built from its required properties.
func exampleOf(t *testing.T, o specOperation, s *openapi3.SchemaRef) any {
	t.Helper()
	if s.Value.Example != nil {
		// A copy, so that a test may change it.
		raw, _ := json.Marshal(s.Value.Example)
		var v any
		_ = json.Unmarshal(raw, &v)
		return v
	}
	if !s.Value.Type.Is("object") {
		t.Fatalf("%s: a %v schema without an example", o, s.Value.Type)
	}
	obj := map[string]any{}
	for _, name := range s.Value.Required {
		obj[name] = exampleOf(t, o, s.Value.Properties[name])
	}
	return obj
}

// stringFields lists the paths of the string fields of an object schema, nested objects
// included.
func stringFields(s *openapi3.Schema, prefix []string) [][]string {
	var out [][]string
	for name, p := range s.Properties {
		ptr := append(slices.Clone(prefix), name)
		switch {
		case p.Value.Type.Is("string"):
			out = append(out, ptr)
		case p.Value.Type.Is("object"):
			out = append(out, stringFields(p.Value, ptr)...)
		}
	}
	return out
}

// setField sets the field at ptr in body to a marker, creating the objects on the way.
func setField(body map[string]any, ptr []string, v any) {
	for _, k := range ptr[:len(ptr)-1] {
		next, ok := body[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			body[k] = next
		}
		body = next
	}
	body[ptr[len(ptr)-1]] = v
}

// hostile is a string no operation may take, as a JSON string literal (for bodies) and as the
// raw text of a parameter.
type hostile struct {
	name  string
	json  string
	param string
	// tooBig: refused for its size (413, or 431 for a parameter) rather than named as a field.
	tooBig bool
}

var hostiles = []hostile{
	{name: "NUL", json: `"a\u0000b"`, param: "a\x00b"},
	{name: "lone surrogate", json: `"\ud800"`, param: "\xed\xa0\x80"}, // what "\ud800" would be as bytes: not UTF-8
	{name: "1 MiB", json: `"` + strings.Repeat("a", 1<<20) + `"`, param: strings.Repeat("a", 1<<20), tooBig: true},
}

// TestHostileStrings sends NUL, a lone surrogate and 1 MiB of text to every string input of
// every operation of the spec (path, query and header parameters, every string field of a body),
// as an admin and as a player. Each is refused before anything reaches the database: 400
// validation_failed naming the input, or, for the 1 MiB, 413 (a body) or 431 (a parameter past
// what the server reads of a request's head).
// Never a 2xx, never internal.
func TestHostileStrings(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	p := e.NewPlayer("p", 1000)
	values := fixtureLobby(e, p.ID)
	ops := specOperations(t, values)
	var cases int
	for _, op := range ops {
		for _, in := range op.strings {
			for _, h := range hostiles {
				if in.in == "header" && h.name == "NUL" {
					// Go's client refuses to send it (and Go's server answers 400 before any handler).
					continue
				}
				for _, caller := range []struct{ name, token string }{{"admin", e.Admin}, {"player", p.Token}} {
					cases++
					name := fmt.Sprintf("%s/%s %s/%s/%s", op, in.in, in.field(), h.name, caller.name)
					t.Run(name, func(t *testing.T) {
						res := sendHostile(t, e, op, values, in, h, caller.token)
						if op.adminOnly && caller.token == p.Token && !(h.tooBig && in.in == "body") && res.Status != http.StatusRequestHeaderFieldsTooLarge {
							// Refused for who sends it, before what it sends is judged.
							res.WantProblem(t, http.StatusForbidden, "forbidden")
							return
						}
						wantRefused(t, res, in, h)
					})
				}
			}
		}
	}
	t.Logf("%d cases over %d operations", cases, len(ops))
}

func sendHostile(t *testing.T, e *apitest.Env, op specOperation, values map[string]string, in stringInput, h hostile, token string) apitest.Response {
	t.Helper()
	path := op.path
	var hdr []string
	var body any
	if op.body != nil {
		b := map[string]any{}
		raw, _ := json.Marshal(op.body)
		_ = json.Unmarshal(raw, &b)
		body = b
	}
	const marker = "\"HOSTILE-STRING-MARKER\""
	switch in.in {
	case "path":
		path = op.pathWith(values, in.name, h.param)
	case "query":
		path += "?" + url.Values{in.name: {h.param}}.Encode()
	case "header":
		hdr = []string{in.name, h.param}
	case "body":
		setField(body.(map[string]any), in.pointer, strings.Trim(marker, "\""))
	}
	if body != nil {
		raw, _ := json.Marshal(body)
		body = strings.Replace(string(raw), marker, h.json, 1)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	res, err := e.Request(ctx, op.method, path, token, body, hdr...)
	if err != nil {
		t.Fatalf("%s %s: %v (an event stream that opened would time out here)", op.method, in.field(), err)
	}
	return res
}

func wantRefused(t *testing.T, res apitest.Response, in stringInput, h hostile) {
	t.Helper()
	if res.Status < 400 || res.Status >= 500 {
		t.Fatalf("status %d, want 4xx; body %.300s", res.Status, res.Body)
	}
	var prob api.Problem
	isProblem := strings.HasPrefix(res.Header.Get("Content-Type"), "application/problem+json") && json.Unmarshal(res.Body, &prob) == nil
	if isProblem && prob.Code == "internal" {
		t.Fatalf("internal: %s", res.Body)
	}
	if h.tooBig && in.in == "body" {
		if res.Status != http.StatusRequestEntityTooLarge {
			t.Errorf("status %d, want 413; body %.300s", res.Status, res.Body)
		}
		return
	}
	if h.tooBig && res.Status == http.StatusRequestHeaderFieldsTooLarge {
		return // a parameter past what the server reads of a request's head
	}
	if res.Status != http.StatusBadRequest || !isProblem || prob.Code != "validation_failed" {
		t.Fatalf("status %d, want 400 validation_failed; body %.300s", res.Status, res.Body)
	}
	if prob.Field == nil || *prob.Field != in.field() {
		t.Errorf("field %v, want %q; body %s", apitest.JSONOf(prob.Field), in.field(), res.Body)
	}
}

// TestBodyIsOneJSONValue: a body is exactly one JSON value, whitespace after it allowed. What
// follows the value (a second object, a stray character, a closing bracket) is refused with 400
// for every operation that takes a body, as are a member named twice and a string that is not
// UTF-8; a body with only whitespace after it is not refused for it.
func TestBodyIsOneJSONValue(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	p := e.NewPlayer("p", 1000)
	values := fixtureLobby(e, p.ID)
	var withBody int
	for _, op := range specOperations(t, values) {
		if op.body == nil {
			continue
		}
		withBody++
		good, _ := json.Marshal(op.body)
		again, _ := json.Marshal(map[string]any{"amount": 900000, "name": "other"})
		for name, body := range map[string]string{
			"a second value":              string(good) + string(again),
			"a stray x":                   string(good) + "x",
			"a stray bracket":             string(good) + "]",
			"a stray brace":               string(good) + "}",
			"two values, a space between": string(good) + " " + string(good),
			"a member twice":              `{"a":1,"a":2}`,
			"a byte not UTF-8":            strings.Replace(string(good), `"`, "\"\xff", 1),
		} {
			t.Run(op.String()+"/"+name, func(t *testing.T) {
				for _, token := range []string{e.Admin, p.Token} {
					res := e.Do(op.method, op.path, token, body)
					if op.adminOnly && token == p.Token {
						// forbidden, or account_disabled once the admin's requests here disabled p
						res.Want(t, http.StatusForbidden)
						continue
					}
					if res.Status != http.StatusBadRequest {
						t.Fatalf("status %d, want 400; body %s", res.Status, res.Body)
					}
					if prob := res.Problem(t); prob.Code != "validation_failed" {
						t.Fatalf("code %s, want validation_failed", prob.Code)
					}
				}
			})
		}
		t.Run(op.String()+"/whitespace after the value", func(t *testing.T) {
			for _, token := range []string{e.Admin, p.Token} {
				// With the Idempotency-Key an operation may need to act at all (a key recovery).
				res := e.Do(op.method, op.path, token, string(good)+" \r\n\t ", "Idempotency-Key", apiclient.NewKey())
				if res.Status == http.StatusBadRequest {
					t.Fatalf("a valid body with white space after it is refused: %s", res.Body)
				}
			}
		})
	}
	if withBody < 5 {
		t.Fatalf("only %d operations with a body in the spec", withBody)
	}
}
