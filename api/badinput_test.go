package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apitest"
	"github.com/commitreveal/rps/tournament"
)

// badCase is one bad request and the problem it must get.
type badCase struct {
	// op is the operation as "METHOD /path/template" of openapi.yaml.
	op   string
	name string
	// path overrides the op's template filled with the fixtures' ids.
	path string
	// token names the caller: "admin", "p", "q", "r" (players), "wrong" (an unknown token) or "".
	token  string
	body   any
	hdr    []string
	status int
	code   string
	// field, when set, is the problem's expected field.
	field string
}

// chunked sends a body without a Content-Length.
type chunked struct{ io.Reader }

// bodyCases are the usual bad bodies of an operation that takes a JSON object: good is a valid
// body, wrongType one with a field of the wrong type.
func bodyCases(op, token string, good map[string]any, wrongType string) []badCase {
	extra := map[string]any{"surprise": 1}
	for k, v := range good {
		extra[k] = v
	}
	big := `{"pad":"` + strings.Repeat("a", api.MaxBodyBytes) + `"}`
	return []badCase{
		{op: op, name: "malformed JSON", token: token, body: `{"x":`, status: 400, code: "validation_failed"},
		{op: op, name: "not an object", token: token, body: `[1,2]`, status: 400, code: "validation_failed"},
		{op: op, name: "wrong type", token: token, body: wrongType, status: 400, code: "validation_failed"},
		{op: op, name: "missing fields", token: token, body: `{}`, status: 400, code: "validation_failed"},
		{op: op, name: "extra field", token: token, body: extra, status: 400, code: "validation_failed", field: "surprise"},
		{op: op, name: "no body", token: token, body: nil, status: 400, code: "validation_failed"},
		{op: op, name: "oversized", token: token, body: big, status: 413, code: "payload_too_large"},
		{op: op, name: "oversized chunked", token: token, body: chunked{strings.NewReader(big)}, status: 413, code: "payload_too_large"},
	}
}

// authCases: no token and an unknown token are 401; a malformed Authorization header too.
func authCases(op string, body any) []badCase {
	return []badCase{
		{op: op, name: "no token", body: body, status: 401, code: "unauthorized"},
		{op: op, name: "wrong token", token: "wrong", body: body, status: 401, code: "unauthorized"},
		{op: op, name: "basic auth", body: body, hdr: []string{"Authorization", "Basic YWRtaW46YWRtaW4="}, status: 401, code: "unauthorized"},
		{op: op, name: "empty bearer", body: body, hdr: []string{"Authorization", "Bearer "}, status: 401, code: "unauthorized"},
	}
}

// adminCases: a player calling an admin operation is 403, besides the auth cases.
func adminCases(op string, body any) []badCase {
	return append(authCases(op, body), badCase{op: op, name: "player", token: "p", body: body, status: 403, code: "forbidden"})
}

// idCases: a malformed id is 400 naming the parameter, an unknown one 404.
func idCases(op, param, token string, body any) []badCase {
	tmpl := op[strings.Index(op, " ")+1:]
	return []badCase{
		{op: op, name: "malformed " + param, path: strings.Replace(tmpl, "{"+param+"}", "not-a-uuid", 1), token: token, body: body, status: 400, code: "validation_failed", field: param},
		{op: op, name: "unknown " + param, path: strings.Replace(tmpl, "{"+param+"}", apitest.RandomID(), 1), token: token, body: body, status: 404, code: "not_found"},
	}
}

// signedHeaders signs a player's lobby action or quick join as the player would (the game, and
// the round of a commit or a reveal, as the lobby reads now: round 1 before it has one), so
// that the game's own refusals are reached; nil for any other request, or a body or lobby too
// malformed to sign (the validator refuses those before a signature is looked at).
func signedHeaders(t *testing.T, e *apitest.Env, p apitest.Player, method, path string, body any) []string {
	t.Helper()
	if p.ID == "" {
		return nil
	}
	var payload map[string]any
	switch b := body.(type) {
	case map[string]any:
		payload = b
	case string:
		if json.Unmarshal([]byte(b), &payload) != nil {
			return nil
		}
	}
	str := func(k string) string { s, _ := payload[k].(string); return s }
	if method == "POST" && path == "/v1/matchmaking" {
		bet, ok := payload["betSize"].(float64)
		if !ok {
			if n, isInt := payload["betSize"].(int); isInt {
				bet, ok = float64(n), true
			}
		}
		if !ok {
			return nil
		}
		return e.Signed(p, apitest.Act{Action: tournament.ActionQuickJoin, Payload: tournament.ActionPayload{BetSize: int64(bet), Ruleset: str("ruleset")}})
	}
	rest, ok := strings.CutPrefix(path, "/v1/lobbies/")
	if !ok {
		return nil
	}
	lobby, route, _ := strings.Cut(rest, "/")
	if _, err := uuid.Parse(lobby); err != nil || e.Do("GET", "/v1/lobbies/"+lobby, "", nil).Status != http.StatusOK {
		return nil
	}
	var act apitest.Act
	switch method + " " + route {
	case "POST players":
		act = e.Current(lobby, p, tournament.ActionRegister)
	case "DELETE players/me":
		act = e.Current(lobby, p, tournament.ActionLeave)
	case "POST commitments":
		act = e.Current(lobby, p, tournament.ActionCommit)
		act.Payload.Commitment, act.Round = str("commitment"), max(act.Round, 1)
	case "POST reveals":
		act = e.Current(lobby, p, tournament.ActionReveal)
		act.Payload.Reveal, act.Round = str("reveal"), max(act.Round, 1)
	default:
		return nil
	}
	return e.Signed(p, act)
}

// TestNoLogIsNotFound: a server that keeps no transparency log (rpsd always makes one) answers
// its log's reads 404.
func TestNoLogIsNotFound(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t, apitest.WithoutLog())
	lobby := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 2}).Id.String()
	for _, path := range []string{"/v1/log", "/v1/log/inclusion?seq=1&lobbyId=" + lobby, "/v1/log/consistency?from=0"} {
		e.Do("GET", path, "", nil).WantProblem(t, http.StatusNotFound, "not_found")
	}
}

// TestBadInput sends bad requests to every operation of openapi.yaml and checks each gets its
// documented status and code as a problem, changes nothing, and is never a 500.
func TestBadInput(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t)
	p, q, r := e.NewPlayer("p", 1000), e.NewPlayer("q", 1000), e.NewPlayer("r", 0)
	// Lobby L is in its reveal stage: p committed to a reveal whose digit names no move.
	l := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 2})
	lobby, game := l.Id.String(), l.Game.Id.String()
	const invalidDigit, qReveal = "9p-no-such-weapon", "0q-rock"
	e.Register(lobby, p).Want(t, http.StatusCreated)
	e.Register(lobby, q).Want(t, http.StatusCreated)
	e.Commit(lobby, p, invalidDigit).Want(t, http.StatusOK)
	e.Commit(lobby, q, qReveal).Want(t, http.StatusOK)
	if g := e.Lobby(lobby, "").Game; g.Stage != "reveal" {
		t.Fatalf("fixture lobby in %s", g.Stage)
	}
	// Lobby L2 is in registration, empty; r has no money.
	lobby2 := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 4}).Id.String()

	players := map[string]apitest.Player{"p": p, "q": q, "r": r}
	tokens := map[string]string{"admin": e.Admin, "p": p.Token, "q": q.Token, "r": r.Token,
		"wrong": "Zm9vYmFyYmF6cXV1eGZvb2JhcmJhenF1dXhmb29iYXI"}
	fill := strings.NewReplacer("{accountId}", p.ID, "{lobbyId}", lobby, "{gameId}", game, "{rulesetId}", "rpsls", "{round}", "1",
		"{keyId}", "7849ac3049680be1")
	L2 := "/v1/lobbies/" + lobby2

	goodConfig := map[string]any{"betSize": 1, "playersCountLimit": 2}
	var cases []badCase
	add := func(cs ...badCase) { cases = append(cases, cs...) }

	// ---- operations
	add(badCase{op: "GET /healthz", name: "POST", path: "/healthz", hdr: []string{"X-Method", "POST"}, status: 405, code: "method_not_allowed"})
	add(badCase{op: "GET /readyz", name: "DELETE", path: "/readyz", hdr: []string{"X-Method", "DELETE"}, status: 405, code: "method_not_allowed"})
	add(badCase{op: "GET /openapi.yaml", name: "PUT", path: "/openapi.yaml", hdr: []string{"X-Method", "PUT"}, status: 405, code: "method_not_allowed"})

	// ---- accounts
	add(bodyCases("POST /v1/accounts", "", map[string]any{"name": "x"}, `{"name":5}`)...)
	add(
		badCase{op: "POST /v1/accounts", name: "empty name", body: map[string]any{"name": ""}, status: 400, code: "validation_failed", field: "name"},
		badCase{op: "POST /v1/accounts", name: "blank name", body: map[string]any{"name": "   "}, status: 400, code: "validation_failed", field: "name"},
		badCase{op: "POST /v1/accounts", name: "long name", body: map[string]any{"name": strings.Repeat("n", 65)}, status: 400, code: "validation_failed", field: "name"},
		badCase{op: "POST /v1/accounts", name: "null name", body: `{"name":null}`, status: 400, code: "validation_failed"},
		badCase{op: "POST /v1/accounts", name: "NUL in name", body: `{"name":"a\u0000b"}`, status: 400, code: "validation_failed", field: "name"},
		badCase{op: "POST /v1/accounts", name: "control character in name", body: `{"name":"a\u001bb"}`, status: 400, code: "validation_failed", field: "name"},
		// Issue 21: names that show as nothing, or as another name.
		badCase{op: "POST /v1/accounts", name: "Hangul filler", body: `{"name":"\u3164"}`, status: 400, code: "validation_failed", field: "name"},
		badCase{op: "POST /v1/accounts", name: "zero-width space", body: `{"name":"\u200b"}`, status: 400, code: "validation_failed", field: "name"},
		badCase{op: "POST /v1/accounts", name: "braille blanks", body: `{"name":"\u2800\u2800"}`, status: 400, code: "validation_failed", field: "name"},
		badCase{op: "POST /v1/accounts", name: "right-to-left override", body: `{"name":"ad\u202emin"}`, status: 400, code: "validation_failed", field: "name"},
		badCase{op: "POST /v1/accounts", name: "bidi isolates", body: `{"name":"alice\u2066\u2069"}`, status: 400, code: "validation_failed", field: "name"},
		badCase{op: "POST /v1/accounts", name: "mixed scripts", body: `{"name":"\u0430lice"}`, status: 400, code: "validation_failed", field: "name"},
		badCase{op: "POST /v1/accounts", name: "text/plain", body: `{"name":"x"}`, hdr: []string{"Content-Type", "text/plain"}, status: 400, code: "validation_failed"},
	)
	add(authCases("GET /v1/me", nil)...)
	add(authCases("POST /v1/me/token", nil)...)
	add(badCase{op: "POST /v1/me/token", name: "non-UTF-8 Idempotency-Key", token: "p", hdr: []string{"Idempotency-Key", "k\xff\xfe"}, status: 400, code: "validation_failed", field: "Idempotency-Key"})
	add(badCase{op: "POST /v1/me/token", name: "non-printable Idempotency-Key", token: "p", hdr: []string{"Idempotency-Key", "k\tk"}, status: 400, code: "validation_failed", field: "Idempotency-Key"})
	add(badCase{op: "POST /v1/me/token", name: "long Idempotency-Key", token: "p", hdr: []string{"Idempotency-Key", strings.Repeat("k", 256)}, status: 400, code: "validation_failed", field: "Idempotency-Key"})
	add(adminCases("POST /v1/admin/accounts/{accountId}/token", nil)...)
	add(idCases("POST /v1/admin/accounts/{accountId}/token", "accountId", "admin", nil)...)
	// ---- player keys (this server keeps no log, whose origin a signature covers: the cases stop
	// before a signature is verified)
	{
		const pub = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
		addKey, retire, recover := "POST /v1/me/keys", "DELETE /v1/me/keys/{keyId}", "POST /v1/admin/accounts/{accountId}/keys"
		good := map[string]any{"publicKey": pub}
		idem := []string{"Idempotency-Key", "k1"}
		signed := append([]string{"Rps-Key-Id", "0123456789abcdef", "Rps-Signed-At", "1795000000123", "Rps-Signature", strings.Repeat("ab", 64)}, idem...)
		add(authCases(addKey, good)...)
		add(bodyCases(addKey, "p", good, `{"publicKey":5}`)...)
		add(
			badCase{op: addKey, name: "short key", token: "p", body: map[string]any{"publicKey": pub[:62]}, hdr: idem, status: 400, code: "validation_failed", field: "publicKey"},
			badCase{op: addKey, name: "upper-case key", token: "p", body: map[string]any{"publicKey": strings.ToUpper(pub)}, hdr: idem, status: 400, code: "validation_failed", field: "publicKey"},
			badCase{op: addKey, name: "signed, no Idempotency-Key", token: "p", body: good, hdr: signed[:6], status: 401, code: "bad_signature"},
			badCase{op: addKey, name: "unsigned, no Idempotency-Key", token: "p", body: good, status: 401, code: "signature_required"},
			badCase{op: addKey, name: "unsigned", token: "p", body: good, hdr: idem, status: 401, code: "signature_required"},
			badCase{op: addKey, name: "only a key id", token: "p", body: good, hdr: append([]string{"Rps-Key-Id", "0123456789abcdef"}, idem...), status: 401, code: "bad_signature"},
			badCase{op: addKey, name: "short signature", token: "p", body: good, hdr: append(slices.Clone(signed[:4]), append([]string{"Rps-Signature", "abcd"}, idem...)...), status: 400, code: "validation_failed", field: "Rps-Signature"},
			badCase{op: addKey, name: "unknown key id", token: "p", body: good, hdr: signed, status: 401, code: "bad_signature"},
		)
		add(authCases(retire, nil)...)
		add(
			badCase{op: retire, name: "malformed keyId", path: "/v1/me/keys/XYZ", token: "p", hdr: idem, status: 400, code: "validation_failed", field: "keyId"},
			badCase{op: retire, name: "signed, no Idempotency-Key", token: "p", hdr: signed[:6], status: 401, code: "bad_signature"},
			badCase{op: retire, name: "unsigned", token: "p", hdr: idem, status: 401, code: "signature_required"},
			badCase{op: retire, name: "unknown key id", token: "p", hdr: signed, status: 401, code: "bad_signature"},
		)
		goodRecovery := map[string]any{"publicKey": pub, "reason": "lost phone"}
		add(adminCases(recover, goodRecovery)...)
		add(bodyCases(recover, "admin", goodRecovery, `{"publicKey":5,"reason":"x"}`)...)
		// A recovery needs an Idempotency-Key before anything else is judged of it.
		add(badCase{op: recover, name: "no Idempotency-Key", token: "admin", body: goodRecovery, status: 400, code: "validation_failed", field: "Idempotency-Key"})
		for _, c := range idCases(recover, "accountId", "admin", goodRecovery) {
			c.hdr = []string{"Idempotency-Key", "recover-" + strings.ReplaceAll(c.name, " ", "-")}
			add(c)
		}
		add(
			badCase{op: recover, name: "bad key", token: "admin", body: map[string]any{"publicKey": "zz", "reason": "x"}, status: 400, code: "validation_failed", field: "publicKey"},
			badCase{op: recover, name: "blank reason", token: "admin", body: map[string]any{"publicKey": pub, "reason": "   "}, status: 400, code: "validation_failed", field: "reason"},
			badCase{op: recover, name: "an admin's account", path: "/v1/admin/accounts/ADMIN/keys", token: "admin", body: goodRecovery, hdr: []string{"Idempotency-Key", "recover-an-admin"}, status: 403, code: "forbidden"},
		)
		add(idCases("GET /v1/accounts/{accountId}/keys", "accountId", "", nil)...)
		for _, qs := range []string{"after=-1", "after=x"} {
			add(badCase{op: "GET /v1/accounts/{accountId}/keys", name: qs, path: "/v1/accounts/" + p.ID + "/keys?" + qs, status: 400, code: "validation_failed", field: "after"})
		}
	}
	add(authCases("GET /v1/me/ledger", nil)...)
	for _, qs := range []string{"limit=0", "limit=501", "limit=x", "after=-1", "after=abc", "after="} {
		add(badCase{op: "GET /v1/me/ledger", name: qs, path: "/v1/me/ledger?" + qs, token: "p", status: 400, code: "validation_failed"})
	}

	// ---- admin
	for _, op := range []string{"POST /v1/admin/accounts/{accountId}/credits", "POST /v1/admin/accounts/{accountId}/debits"} {
		good := map[string]any{"amount": 5}
		add(adminCases(op, good)...)
		add(bodyCases(op, "admin", good, `{"amount":"5"}`)...)
		add(idCases(op, "accountId", "admin", good)...)
		for name, body := range map[string]string{
			"zero amount": `{"amount":0}`, "negative amount": `{"amount":-5}`, "fractional amount": `{"amount":1.5}`,
			"huge amount": `{"amount":9007199254740992}`, "long memo": `{"amount":1,"memo":"` + strings.Repeat("m", 201) + `"}`,
		} {
			add(badCase{op: op, name: name, token: "admin", body: body, status: 400, code: "validation_failed"})
		}
		// Issue 21: data after the JSON value was ignored, and 5 (not 900000) was moved.
		for name, body := range map[string]string{
			"a second value": `{"amount":5}{"amount":900000}`, "a stray x": `{"amount":5}x`, "a stray bracket": `{"amount":5}]`,
			"amount twice": `{"amount":5,"amount":900000}`,
		} {
			add(badCase{op: op, name: name, token: "admin", body: body, status: 400, code: "validation_failed"})
		}
		// An integer is a JSON number, and 1.0 and 1e3 are numbers: the spec takes them, the typed
		// request cannot (the answer named the whole body, in Go's words).
		for name, body := range map[string]string{"amount written 1.0": `{"amount":1.0}`, "amount written 1e3": `{"amount":1e3}`} {
			add(badCase{op: op, name: name, token: "admin", body: body, status: 400, code: "validation_failed", field: "amount"})
		}
		for name, memo := range map[string]string{"blank memo": `"   "`, "NUL in memo": `"m\u0000"`, "lone surrogate in memo": `"\udc00m"`, "control character in memo": `"m\u001b"`} {
			add(badCase{op: op, name: name, token: "admin", body: `{"amount":5,"memo":` + memo + `}`, status: 400, code: "validation_failed", field: "memo"})
		}
		add(badCase{op: op, name: "an admin's account", path: strings.Replace(op[5:], "{accountId}", "ADMIN", 1), token: "admin", body: good, status: 403, code: "forbidden"})
	}
	add(badCase{op: "POST /v1/admin/accounts/{accountId}/debits", name: "more than the balance", token: "admin", body: map[string]any{"amount": 5000}, status: 409, code: "insufficient_funds"})
	add(badCase{op: "POST /v1/admin/accounts/{accountId}/credits", name: "money in play beyond 2^53-1", token: "admin", body: map[string]any{"amount": int64(1<<53 - 1)}, status: 409, code: "money_limit"})
	add(adminCases("GET /v1/admin/ledger", nil)...)

	// ---- rulesets
	add(badCase{op: "GET /v1/rulesets", name: "DELETE", path: "/v1/rulesets", hdr: []string{"X-Method", "DELETE"}, status: 405, code: "method_not_allowed"})
	add(badCase{op: "GET /v1/keys", name: "POST", path: "/v1/keys", hdr: []string{"X-Method", "POST"}, status: 405, code: "method_not_allowed"})

	// ---- the transparency log (empty: nothing is integrated without its sequencer; a server
	// without a log is TestNoLogIsNotFound's)
	inclusion, consistency := "GET /v1/log/inclusion", "GET /v1/log/consistency"
	add(
		badCase{op: "GET /v1/log", name: "POST", path: "/v1/log", hdr: []string{"X-Method", "POST"}, status: 405, code: "method_not_allowed"},
		badCase{op: inclusion, name: "no lobby", path: "/v1/log/inclusion?seq=1", status: 400, code: "validation_failed", field: "lobbyId"},
		badCase{op: inclusion, name: "malformed lobby", path: "/v1/log/inclusion?seq=1&lobbyId=x", status: 400, code: "validation_failed", field: "lobbyId"},
		badCase{op: inclusion, name: "no seq", path: "/v1/log/inclusion?lobbyId=" + lobby, status: 400, code: "validation_failed", field: "seq"},
		badCase{op: inclusion, name: "seq 0", path: "/v1/log/inclusion?seq=0&lobbyId=" + lobby, status: 400, code: "validation_failed", field: "seq"},
		badCase{op: inclusion, name: "not logged yet", path: "/v1/log/inclusion?seq=1&lobbyId=" + lobby, status: 409, code: "not_logged"},
		badCase{op: consistency, name: "no from", path: "/v1/log/consistency", status: 400, code: "validation_failed", field: "from"},
		badCase{op: consistency, name: "negative from", path: "/v1/log/consistency?from=-1", status: 400, code: "validation_failed", field: "from"},
		badCase{op: consistency, name: "malformed to", path: "/v1/log/consistency?from=1&to=x", status: 400, code: "validation_failed", field: "to"},
	)
	byHashOp := "GET /v1/rulesets/by-hash/{rulesetHash}"
	add(
		badCase{op: byHashOp, name: "short hash", path: "/v1/rulesets/by-hash/abc", status: 400, code: "validation_failed", field: "rulesetHash"},
		badCase{op: byHashOp, name: "upper-case hash", path: "/v1/rulesets/by-hash/" + strings.Repeat("A", 64), status: 400, code: "validation_failed", field: "rulesetHash"},
		badCase{op: byHashOp, name: "unknown hash", path: "/v1/rulesets/by-hash/" + strings.Repeat("a", 64), status: 404, code: "not_found"},
	)
	add(
		badCase{op: "GET /v1/rulesets/{rulesetId}", name: "unknown ruleset", path: "/v1/rulesets/nope", status: 404, code: "not_found"},
		badCase{op: "GET /v1/rulesets/{rulesetId}", name: "malformed ruleset id", path: "/v1/rulesets/Not%20Valid!", status: 400, code: "validation_failed", field: "rulesetId"},
	)
	add(bodyCases("POST /v1/rulesets/{rulesetId}/grid", "", map[string]any{"grid": 3}, `{"grid":"3"}`)...)
	add(
		badCase{op: "POST /v1/rulesets/{rulesetId}/grid", name: "negative grid", body: `{"grid":-1}`, status: 400, code: "validation_failed", field: "grid"},
		badCase{op: "POST /v1/rulesets/{rulesetId}/grid", name: "grid beyond 25 bits", body: `{"grid":33554432}`, status: 400, code: "validation_failed", field: "grid"},
		badCase{op: "POST /v1/rulesets/{rulesetId}/grid", name: "unknown ruleset", path: "/v1/rulesets/nope/grid", body: `{"grid":3}`, status: 404, code: "not_found"},
		badCase{op: "POST /v1/rulesets/{rulesetId}/grid", name: "malformed ruleset id", path: "/v1/rulesets/BAD!/grid", body: `{"grid":3}`, status: 400, code: "validation_failed", field: "rulesetId"},
	)

	// ---- lobbies
	createOp := "POST /v1/lobbies"
	goodLobby := map[string]any{"name": "x", "config": goodConfig}
	add(adminCases(createOp, goodLobby)...)
	add(bodyCases(createOp, "admin", goodLobby, `{"name":"x","config":"big"}`)...)
	for name, c := range map[string]struct {
		body  string
		field string
	}{
		"missing config":        {`{"name":"x"}`, "config"},
		"missing name":          {`{"config":{"betSize":1,"playersCountLimit":2}}`, "name"},
		"empty name":            {`{"name":"","config":{"betSize":1,"playersCountLimit":2}}`, "name"},
		"NUL in name":           {`{"name":"a\u0000b","config":{"betSize":1,"playersCountLimit":2}}`, "name"},
		"invisible name":        {`{"name":"\u3164\u200b","config":{"betSize":1,"playersCountLimit":2}}`, "name"},
		"bidi override in name": {`{"name":"lob\u202eby","config":{"betSize":1,"playersCountLimit":2}}`, "name"},
		"config extra field":    {`{"name":"x","config":{"betSize":1,"playersCountLimit":2,"bonus":true}}`, ""},
		"config missing bet":    {`{"name":"x","config":{"playersCountLimit":2}}`, ""},
		"limit 1":               {`{"name":"x","config":{"betSize":1,"playersCountLimit":1}}`, ""},
		"limit beyond 100000":   {`{"name":"x","config":{"betSize":1,"playersCountLimit":100001}}`, ""},
		"negative bet":          {`{"name":"x","config":{"betSize":-1,"playersCountLimit":2}}`, ""},
		"bet x limit > 2^53":    {`{"name":"x","config":{"betSize":4503599627370495,"playersCountLimit":3}}`, "config.betSize"},
		"timeout below minimum": {`{"name":"x","config":{"betSize":1,"playersCountLimit":2,"moveTimeoutMs":50}}`, "config.moveTimeoutMs"},
		"timeout beyond 7 days": {`{"name":"x","config":{"betSize":1,"playersCountLimit":2,"revealTimeoutMs":604800001}}`, ""},
		"unknown ruleset":       {`{"name":"x","config":{"betSize":1,"playersCountLimit":2,"ruleset":"nope"}}`, "config.ruleset"},
		"unknown resolution":    {`{"name":"x","config":{"betSize":1,"playersCountLimit":2,"resolution":"chaos"}}`, ""},
		"string bet":            {`{"name":"x","config":{"betSize":"1","playersCountLimit":2}}`, ""},
		"negative maxRounds":    {`{"name":"x","config":{"betSize":1,"playersCountLimit":2,"maxRounds":-1}}`, ""},
	} {
		add(badCase{op: createOp, name: name, token: "admin", body: c.body, status: 400, code: "validation_failed", field: c.field})
	}
	for _, qs := range []string{"limit=0", "limit=501", "after=not-a-cursor", "after=" + apitest.RandomID() + "x"} {
		add(badCase{op: "GET /v1/lobbies", name: qs, path: "/v1/lobbies?" + qs, status: 400, code: "validation_failed"})
	}
	add(badCase{op: "GET /v1/lobbies", name: "wrong token", token: "wrong", status: 401, code: "unauthorized"})
	add(badCase{op: "GET /v1/lobbies", name: "DELETE", path: "/v1/lobbies", hdr: []string{"X-Method", "DELETE"}, status: 405, code: "method_not_allowed"})
	add(idCases("GET /v1/lobbies/{lobbyId}", "lobbyId", "", nil)...)
	add(badCase{op: "GET /v1/lobbies/{lobbyId}", name: "wrong token", token: "wrong", status: 401, code: "unauthorized"})

	nextOp := "PUT /v1/lobbies/{lobbyId}/next-config"
	add(adminCases(nextOp, goodConfig)...)
	add(bodyCases(nextOp, "admin", goodConfig, `{"betSize":true,"playersCountLimit":2}`)...)
	add(idCases(nextOp, "lobbyId", "admin", goodConfig)...)
	add(badCase{op: nextOp, name: "timeout below minimum", token: "admin", body: `{"betSize":1,"playersCountLimit":2,"entryTimeoutMs":99}`, status: 400, code: "validation_failed", field: "entryTimeoutMs"})

	add(adminCases("POST /v1/lobbies/{lobbyId}/close", nil)...)
	add(idCases("POST /v1/lobbies/{lobbyId}/close", "lobbyId", "admin", nil)...)

	stopOp := "POST /v1/lobbies/{lobbyId}/stop"
	goodStop := map[string]any{"reason": "test"}
	add(adminCases(stopOp, goodStop)...)
	add(bodyCases(stopOp, "admin", goodStop, `{"reason":7}`)...)
	add(idCases(stopOp, "lobbyId", "admin", goodStop)...)
	add(
		badCase{op: stopOp, name: "empty reason", token: "admin", body: `{"reason":""}`, status: 400, code: "validation_failed", field: "reason"},
		badCase{op: stopOp, name: "NUL in reason", token: "admin", body: `{"reason":"a\u0000b"}`, status: 400, code: "validation_failed", field: "reason"},
		badCase{op: stopOp, name: "invisible reason", token: "admin", body: `{"reason":"\u2800\u200b"}`, status: 400, code: "validation_failed", field: "reason"},
		badCase{op: stopOp, name: "bidi override in reason", token: "admin", body: `{"reason":"refund\u202e"}`, status: 400, code: "validation_failed", field: "reason"},
		badCase{op: stopOp, name: "long reason", token: "admin", body: map[string]any{"reason": strings.Repeat("r", 501)}, status: 400, code: "validation_failed", field: "reason"},
	)

	// ---- play
	regOp := "POST /v1/lobbies/{lobbyId}/players"
	add(authCases(regOp, nil)...)
	add(idCases(regOp, "lobbyId", "r", nil)...)
	add(
		badCase{op: regOp, name: "admin", path: L2 + "/players", token: "admin", status: 403, code: "forbidden"},
		badCase{op: regOp, name: "game started", token: "r", status: 409, code: "wrong_stage"},
		badCase{op: regOp, name: "no money", path: L2 + "/players", token: "r", status: 409, code: "insufficient_funds"},
		badCase{op: regOp, name: "oversized", path: L2 + "/players", token: "p", body: strings.Repeat(" ", api.MaxBodyBytes+1), status: 413, code: "payload_too_large"},
	)
	leaveOp := "DELETE /v1/lobbies/{lobbyId}/players/me"
	add(authCases(leaveOp, nil)...)
	add(idCases(leaveOp, "lobbyId", "p", nil)...)
	add(
		badCase{op: leaveOp, name: "after registration", token: "p", status: 409, code: "wrong_stage"},
		badCase{op: leaveOp, name: "not registered", path: L2 + "/players/me", token: "r", status: 409, code: "not_in_game"},
		badCase{op: leaveOp, name: "admin", path: L2 + "/players/me", token: "admin", status: 403, code: "forbidden"},
	)
	commitOp := "POST /v1/lobbies/{lobbyId}/commitments"
	goodCommit := map[string]any{"commitment": apitest.CommitmentOf("1late")}
	add(authCases(commitOp, goodCommit)...)
	add(bodyCases(commitOp, "p", goodCommit, `{"commitment":12}`)...)
	add(idCases(commitOp, "lobbyId", "p", goodCommit)...)
	for name, c := range map[string]string{
		"non-hex":                   strings.Repeat("zz", 32),
		"63 hex digits":             strings.Repeat("a", 63),
		"65 hex digits":             strings.Repeat("a", 65),
		"66 hex digits":             strings.Repeat("ab", 33),
		"empty":                     "",
		"0x prefix":                 "0x" + strings.Repeat("a", 62),
		"0x + 64 hex (blake2AsHex)": "0x" + strings.Repeat("a", 64),
		// Lower case only, as the chain's hashes and digests: a commitment has one spelling.
		"upper-case hex": strings.ToUpper(apitest.CommitmentOf("1late")),
		"mixed-case hex": "A" + apitest.CommitmentOf("1late")[1:],
	} {
		add(badCase{op: commitOp, name: name, token: "p", body: map[string]any{"commitment": c}, status: 400, code: "validation_failed", field: "commitment"})
	}
	add(
		badCase{op: commitOp, name: "reveal stage", token: "p", body: goodCommit, status: 409, code: "wrong_stage"},
		// A game in registration has no round yet: a commit signed for round 1 names another round.
		badCase{op: commitOp, name: "registration", path: L2 + "/commitments", token: "p", body: goodCommit, status: 409, code: "stale_signature"},
	)
	revealOp := "POST /v1/lobbies/{lobbyId}/reveals"
	goodReveal := map[string]any{"reveal": qReveal}
	add(authCases(revealOp, goodReveal)...)
	add(bodyCases(revealOp, "q", goodReveal, `{"reveal":0}`)...)
	add(idCases(revealOp, "lobbyId", "q", goodReveal)...)
	add(
		badCase{op: revealOp, name: "empty reveal", token: "q", body: `{"reveal":""}`, status: 400, code: "validation_failed", field: "reveal"},
		badCase{op: revealOp, name: "1025 bytes", token: "q", body: map[string]any{"reveal": "0" + strings.Repeat("x", 1024)}, status: 400, code: "validation_failed", field: "reveal"},
		badCase{op: revealOp, name: "1024 characters, 2047 bytes", token: "q", body: map[string]any{"reveal": "0" + strings.Repeat("é", 1023)}, status: 400, code: "validation_failed", field: "reveal"},
		badCase{op: revealOp, name: "unknown digit", token: "p", body: map[string]any{"reveal": invalidDigit}, status: 422, code: "invalid_move"},
		badCase{op: revealOp, name: "mismatch", token: "p", body: map[string]any{"reveal": "0p-something-else"}, status: 422, code: "commitment_mismatch"},
		badCase{op: revealOp, name: "not a player of the game", token: "r", body: goodReveal, status: 409, code: "not_in_game"},
		badCase{op: revealOp, name: "admin", token: "admin", body: goodReveal, status: 403, code: "forbidden"},
		badCase{op: revealOp, name: "registration", path: L2 + "/reveals", token: "q", body: goodReveal, status: 409, code: "stale_signature"},
	)

	// ---- events
	eventsOp := "GET /v1/lobbies/{lobbyId}/events"
	add(idCases(eventsOp, "lobbyId", "", nil)...)
	for _, qs := range []string{"after=-1", "after=x", "limit=0", "limit=1001", "wait=31", "wait=-1", "wait=x"} {
		add(badCase{op: eventsOp, name: qs, path: "/v1/lobbies/" + lobby + "/events?" + qs, status: 400, code: "validation_failed"})
	}
	eventOp := "GET /v1/lobbies/{lobbyId}/events/{seq}"
	for _, c := range idCases(eventOp, "lobbyId", "", nil) {
		c.path = strings.Replace(c.path, "{seq}", "1", 1)
		add(c)
	}
	for _, seq := range []string{"0", "-1", "x", "9223372036854775808"} {
		add(badCase{op: eventOp, name: "seq=" + seq, path: "/v1/lobbies/" + lobby + "/events/" + seq, status: 400, code: "validation_failed", field: "seq"})
	}
	add(badCase{op: eventOp, name: "seq past the head", path: "/v1/lobbies/" + lobby + "/events/1000", status: 404, code: "not_found"})
	streamOp := "GET /v1/lobbies/{lobbyId}/events/stream"
	add(idCases(streamOp, "lobbyId", "", nil)...)
	add(
		badCase{op: streamOp, name: "Last-Event-ID not a number", hdr: []string{"Last-Event-ID", "abc"}, status: 400, code: "validation_failed", field: "Last-Event-ID"},
		badCase{op: streamOp, name: "negative Last-Event-ID", hdr: []string{"Last-Event-ID", "-3"}, status: 400, code: "validation_failed", field: "Last-Event-ID"},
		badCase{op: streamOp, name: "after=-1", path: "/v1/lobbies/" + lobby + "/events/stream?after=-1", status: 400, code: "validation_failed", field: "after"},
		badCase{op: streamOp, name: "follow=maybe", path: "/v1/lobbies/" + lobby + "/events/stream?follow=maybe", status: 400, code: "validation_failed", field: "follow"},
	)

	// ---- transcript
	add(idCases("GET /v1/games/{gameId}", "gameId", "", nil)...)
	add(idCases("GET /v1/games/{gameId}/players", "gameId", "", nil)...)
	for _, qs := range []string{"after=x", "after=-1", "after=2147483648", "limit=0", "limit=501"} {
		add(badCase{op: "GET /v1/games/{gameId}/players", name: qs, path: "/v1/games/" + game + "/players?" + qs, status: 400, code: "validation_failed"})
	}
	add(idCases("GET /v1/games/{gameId}/postings", "gameId", "", nil)...)
	for _, qs := range []string{"after=x", "after=-1", "limit=0", "limit=501"} {
		add(badCase{op: "GET /v1/games/{gameId}/postings", name: qs, path: "/v1/games/" + game + "/postings?" + qs, status: 400, code: "validation_failed"})
	}
	roundOp := "GET /v1/games/{gameId}/rounds/{round}"
	add(idCases(roundOp, "gameId", "", nil)...)
	add(
		badCase{op: roundOp, name: "round 0", path: "/v1/games/" + game + "/rounds/0", status: 400, code: "validation_failed", field: "round"},
		badCase{op: roundOp, name: "round x", path: "/v1/games/" + game + "/rounds/x", status: 400, code: "validation_failed", field: "round"},
		badCase{op: roundOp, name: "round not reached", path: "/v1/games/" + game + "/rounds/2", status: 404, code: "not_found"},
		badCase{op: roundOp, name: "after not a cursor", path: "/v1/games/" + game + "/rounds/1?after=x", status: 400, code: "validation_failed", field: "after"},
		badCase{op: roundOp, name: "after past int32", path: "/v1/games/" + game + "/rounds/1?after=2147483648", status: 400, code: "validation_failed", field: "after"},
	)

	// ---- records, standings, quick join and admin account tools
	add(authCases("GET /v1/me/games", nil)...)
	for _, qs := range []string{"limit=0", "limit=501", "after=x", "after=1_not-a-uuid", "after=-1_" + game} {
		add(badCase{op: "GET /v1/me/games", name: qs, path: "/v1/me/games?" + qs, token: "p", status: 400, code: "validation_failed"})
	}
	add(idCases("GET /v1/accounts/{accountId}", "accountId", "", nil)...)
	add(idCases("GET /v1/accounts/{accountId}/games", "accountId", "", nil)...)
	add(idCases("GET /v1/lobbies/{lobbyId}/games", "lobbyId", "", nil)...)
	for _, qs := range []string{"limit=0", "limit=501", "after=x", "after=-1", "after=1000000000"} {
		add(badCase{op: "GET /v1/lobbies/{lobbyId}/games", name: qs, path: "/v1/lobbies/" + lobby + "/games?" + qs, status: 400, code: "validation_failed"})
	}
	for _, qs := range []string{"limit=0", "limit=501", "after=x", "after=1_not-a-uuid", "after=-1_" + game} {
		add(badCase{op: "GET /v1/accounts/{accountId}/games", name: qs, path: "/v1/accounts/" + p.ID + "/games?" + qs, status: 400, code: "validation_failed"})
	}
	add(badCase{op: "GET /v1/accounts/{accountId}", name: "wrong token", token: "wrong", status: 401, code: "unauthorized"})
	for qs, field := range map[string]string{"by=losses": "by", "period=1y": "period", "after=x": "after", "after=1_2_" + game: "after", "limit=0": "limit"} {
		add(badCase{op: "GET /v1/leaderboard", name: qs, path: "/v1/leaderboard?" + qs, status: 400, code: "validation_failed", field: field})
	}
	for qs, field := range map[string]string{"stage=done": "stage", "open=maybe": "open", "minBet=-1": "minBet", "minBet=5&maxBet=4": "maxBet", "ruleset=": "ruleset", "after=x": "after"} {
		add(badCase{op: "GET /v1/lobbies", name: qs, path: "/v1/lobbies?" + qs, status: 400, code: "validation_failed", field: field})
	}
	matchOp := "POST /v1/matchmaking"
	goodMatch := map[string]any{"betSize": 10}
	add(authCases(matchOp, goodMatch)...)
	add(bodyCases(matchOp, "r", goodMatch, `{"betSize":"10"}`)...)
	add(
		badCase{op: matchOp, name: "negative bet", token: "p", body: `{"betSize":-1}`, status: 400, code: "validation_failed", field: "betSize"},
		badCase{op: matchOp, name: "unknown ruleset", token: "p", body: `{"betSize":10,"ruleset":"chess"}`, status: 400, code: "validation_failed", field: "ruleset"},
		badCase{op: matchOp, name: "no such bet", token: "p", body: `{"betSize":7777}`, status: 409, code: "no_match"},
		badCase{op: matchOp, name: "no money", token: "r", body: goodMatch, status: 409, code: "insufficient_funds"},
		badCase{op: matchOp, name: "admin", token: "admin", body: goodMatch, status: 403, code: "forbidden"},
	)
	searchOp := "GET /v1/admin/accounts"
	add(adminCases(searchOp, nil)...)
	add(
		badCase{op: searchOp, name: "long query", path: "/v1/admin/accounts?query=" + strings.Repeat("q", 101), token: "admin", status: 400, code: "validation_failed", field: "query"},
		badCase{op: searchOp, name: "after not a cursor", path: "/v1/admin/accounts?after=x", token: "admin", status: 400, code: "validation_failed", field: "after"},
		badCase{op: searchOp, name: "NUL in query", path: "/v1/admin/accounts?query=%00", token: "admin", status: 400, code: "validation_failed", field: "query"},
		badCase{op: searchOp, name: "query not UTF-8", path: "/v1/admin/accounts?query=%FF", token: "admin", status: 400, code: "validation_failed", field: "query"},
	)
	disableOp := "POST /v1/admin/accounts/{accountId}/disable"
	goodDisable := map[string]any{"reason": "test"}
	add(adminCases(disableOp, goodDisable)...)
	add(bodyCases(disableOp, "admin", goodDisable, `{"reason":5}`)...)
	add(idCases(disableOp, "accountId", "admin", goodDisable)...)
	add(
		badCase{op: disableOp, name: "empty reason", token: "admin", body: `{"reason":""}`, status: 400, code: "validation_failed", field: "reason"},
		badCase{op: disableOp, name: "blank reason", token: "admin", body: `{"reason":"   "}`, status: 400, code: "validation_failed", field: "reason"},
		badCase{op: disableOp, name: "NUL in reason", token: "admin", body: `{"reason":"x\u0000"}`, status: 400, code: "validation_failed", field: "reason"},
		badCase{op: disableOp, name: "control character in reason", token: "admin", body: `{"reason":"x\u0007"}`, status: 400, code: "validation_failed", field: "reason"},
		badCase{op: disableOp, name: "invisible reason", token: "admin", body: `{"reason":"\u3164"}`, status: 400, code: "validation_failed", field: "reason"},
		badCase{op: disableOp, name: "bidi isolate in reason", token: "admin", body: `{"reason":"x\u2067y"}`, status: 400, code: "validation_failed", field: "reason"},
		badCase{op: disableOp, name: "self", path: "/v1/admin/accounts/ADMIN/disable", token: "admin", body: goodDisable, status: 403, code: "forbidden"},
	)
	enableOp := "POST /v1/admin/accounts/{accountId}/enable"
	add(adminCases(enableOp, nil)...)
	add(idCases(enableOp, "accountId", "admin", nil)...)
	add(badCase{op: enableOp, name: "self", path: "/v1/admin/accounts/ADMIN/enable", token: "admin", status: 403, code: "forbidden"})
	add(adminCases("GET /v1/admin/audit", nil)...)
	for _, qs := range []string{"after=x", "after=-1", "limit=0"} {
		add(badCase{op: "GET /v1/admin/audit", name: qs, path: "/v1/admin/audit?" + qs, token: "admin", status: 400, code: "validation_failed"})
	}

	// ---- routes that do not exist
	add(badCase{op: "", name: "unknown route", path: "/v1/nothing-here", status: 404, code: "not_found"})
	add(badCase{op: "", name: "unknown nested route", path: "/v1/lobbies/" + lobby + "/nothing", status: 404, code: "not_found"})

	// Every operation of the spec has cases.
	spec, err := api.GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.op] = true
	}
	var missing []string
	for path, item := range spec.Paths.Map() {
		for method := range item.Operations() {
			if op := method + " " + path; !covered[op] {
				missing = append(missing, op)
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("operations without bad-input cases: %v", missing)
	}

	// The state a bad request must leave as it was.
	snapshot := func() string {
		t.Helper()
		var b strings.Builder
		rep := e.Ledger()
		fmt.Fprintf(&b, "ledger %s\n", apitest.JSONOf(rep))
		for _, id := range []string{lobby, lobby2} {
			l := e.Lobby(id, "")
			l.ServerTime = 0
			l.Head = nil // signed anew at every read
			fmt.Fprintf(&b, "lobby %s\nevents %d\n", apitest.JSONOf(l), e.Events(id, 0).Next)
		}
		var page api.LobbyPage
		e.Do("GET", "/v1/lobbies", "", nil).Want(t, http.StatusOK).Decode(t, &page)
		fmt.Fprintf(&b, "lobbies %d\n", len(page.Lobbies))
		for _, tok := range []string{p.Token, q.Token, r.Token, e.Admin} {
			var a api.Account
			e.Do("GET", "/v1/me", tok, nil).Want(t, http.StatusOK).Decode(t, &a)
			fmt.Fprintf(&b, "account %s\n", apitest.JSONOf(a))
		}
		var rnd api.RoundTranscript
		e.Do("GET", "/v1/games/"+game+"/rounds/1", "", nil).Want(t, http.StatusOK).Decode(t, &rnd)
		fmt.Fprintf(&b, "round %s\n", apitest.JSONOf(rnd))
		return b.String()
	}

	var adminID string
	{
		var a api.Account
		e.Do("GET", "/v1/me", e.Admin, nil).Want(t, http.StatusOK).Decode(t, &a)
		adminID = a.Id.String()
	}
	before := snapshot()
	state := before
	for _, c := range cases {
		name := c.op + " " + c.name
		if c.op == "" {
			name = c.name
		}
		t.Run(name, func(t *testing.T) {
			method, path, _ := strings.Cut(c.op, " ")
			if c.path != "" {
				path = c.path
			}
			if c.op == "" {
				method = "GET"
			}
			path = strings.ReplaceAll(fill.Replace(path), "ADMIN", adminID)
			var hdr []string
			for i := 0; i+1 < len(c.hdr); i += 2 {
				if c.hdr[i] == "X-Method" {
					method = c.hdr[i+1]
					continue
				}
				hdr = append(hdr, c.hdr[i], c.hdr[i+1])
			}
			hdr = append(hdr, signedHeaders(t, e, players[c.token], method, path, c.body)...)
			res, err := e.Request(t.Context(), method, path, tokens[c.token], c.body, hdr...)
			if err != nil {
				t.Fatal(err)
			}
			apitest.CheckResponse(t, res, false)
			if res.Status != c.status {
				t.Fatalf("%s %s: status %d, want %d (%s); body %s", method, path, res.Status, c.status, c.code, res.Body)
			}
			var prob api.Problem
			if err := json.Unmarshal(res.Body, &prob); err != nil {
				t.Fatalf("body %s: %v", res.Body, err)
			}
			if prob.Code != c.code {
				t.Fatalf("code %q, want %q; body %s", prob.Code, c.code, res.Body)
			}
			if c.field != "" && (prob.Field == nil || *prob.Field != c.field) {
				t.Errorf("field %v, want %q; body %s", apitest.JSONOf(prob.Field), c.field, res.Body)
			}
			if method != "GET" {
				if now := snapshot(); now != state {
					t.Errorf("the request changed the state:\nbefore:\n%s\nafter:\n%s", state, now)
					state = now
				}
			}
		})
	}
	if after := snapshot(); after != before {
		t.Errorf("bad requests changed the state:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	t.Logf("%d bad-input cases", len(cases))
}
