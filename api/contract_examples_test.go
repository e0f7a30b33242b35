package api_test

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/crypto/blake2b"

	rps "github.com/commitreveal/rps"
	"github.com/commitreveal/rps/api"
	"github.com/getkin/kin-openapi/openapi3"
)

// contract loads openapi.yaml as published (not the server's pruned, overlaid copy).
func contract(t *testing.T) *openapi3.T {
	t.Helper()
	spec, err := openapi3.NewLoader().LoadFromData(rps.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestProblemCodesAreDocumented: ProblemCode is an open string in the contract, so the codes the
// server sends are listed in prose; each must be there, in ProblemCode's description and in the
// table of the document's introduction.
func TestProblemCodesAreDocumented(t *testing.T) {
	spec := contract(t)
	where := map[string]string{
		"ProblemCode's description": spec.Components.Schemas["ProblemCode"].Value.Description,
		"the introduction":          spec.Info.Description,
	}
	for _, code := range api.ProblemCodes() {
		for name, text := range where {
			if !strings.Contains(text, "`"+code+"`") {
				t.Errorf("%s does not list the code %s", name, code)
			}
		}
	}
}

// TestSharedResponsesListTheirCodes: the responses every operation refers to (Conflict for
// 409, ...) describe their problems by code; each must name every code the introduction's table
// gives its status, so that a client reading one operation learns all of them.
func TestSharedResponsesListTheirCodes(t *testing.T) {
	spec := contract(t)
	responses := map[string]string{
		"400": "BadRequest", "401": "Unauthorized", "403": "Forbidden", "404": "NotFound", "409": "Conflict",
		"413": "PayloadTooLarge", "422": "Unprocessable", "429": "TooManyRequests", "500": "InternalError",
		"503": "ServiceUnavailable",
	}
	row := regexp.MustCompile(`(?m)^\| ([0-9]{3}) \| (.*) \|$`)
	code := regexp.MustCompile("`([a-z][a-z0-9_]*)`")
	rows := row.FindAllStringSubmatch(spec.Info.Description, -1)
	if len(rows) < len(responses) {
		t.Fatalf("the introduction's table of codes has %d rows", len(rows))
	}
	for _, r := range rows {
		name, shared := responses[r[1]]
		if !shared {
			continue // 405 is answered by the router, for no operation of its own
		}
		text := *spec.Components.Responses[name].Value.Description
		for _, c := range code.FindAllStringSubmatch(r[2], -1) {
			if !strings.Contains(text, "`"+c[1]+"`") {
				t.Errorf("the %s response (%s) does not name the code %s", name, r[1], c[1])
			}
		}
	}
}

// TestWorkedExamples recomputes the worked examples of the contract's byte-exact rules (chain
// hash, stage digest, ruleset canonical form, head signature) from the vector files they quote,
// and checks that the descriptions and examples quote them exactly.
func TestWorkedExamples(t *testing.T) {
	spec := contract(t)
	schema := func(name string) *openapi3.Schema { return spec.Components.Schemas[name].Value }
	quotes := func(where, text string, values ...string) {
		t.Helper()
		for _, v := range values {
			if !strings.Contains(text, v) {
				t.Errorf("%s does not quote %q", where, v)
			}
		}
	}
	sum := func(parts ...[]byte) string {
		h, _ := blake2b.New256(nil)
		for _, p := range parts {
			h.Write(p)
		}
		return hex.EncodeToString(h.Sum(nil))
	}

	var events struct {
		Events []struct {
			PrevHash, Hash, Canonical string
		}
		Digests []struct {
			Values       []struct{ Player, Value string }
			Salt, Digest string
		}
	}
	readJSON(t, "../store/testdata/events.json", &events)
	third := events.Events[2]
	prev, _ := hex.DecodeString(third.PrevHash)
	if got := sum(prev, []byte(third.Canonical)); got != third.Hash {
		t.Fatalf("the vector's third event hashes to %s, not %s", got, third.Hash)
	}
	event := schema("Event").Description
	quotes("Event's description", event, third.Canonical, third.PrevHash, third.Hash)
	for _, d := range events.Digests {
		elems := make([]string, 0, len(d.Values))
		for _, v := range d.Values {
			b, _ := json.Marshal(map[string]string{"player": v.Player, "value": v.Value})
			elems = append(elems, string(b))
		}
		salt, _ := hex.DecodeString(d.Salt) // blake2b-256(salt || array); no salt: blake2b-256(array)
		if got := sum(salt, []byte("["+strings.Join(elems, ",")+"]")); got != d.Digest {
			t.Fatalf("digest vector %s recomputes to %s", d.Digest, got)
		}
		quotes("Event's description", event, d.Digest)
	}

	var vectors struct {
		Rulesets []struct{ ID, Hash, Canonical string }
	}
	readJSON(t, "../engine/testdata/vectors.json", &vectors)
	rs := vectors.Rulesets[0]
	if got := sum([]byte(rs.Canonical)); got != rs.Hash {
		t.Fatalf("ruleset %s hashes to %s", rs.ID, got)
	}
	quotes("RulesetDocument's description", schema("RulesetDocument").Description, rs.Canonical, rs.Hash)

	// The head: the example key is RFC 8032's first test vector, whose secret is published.
	head, key := schema("SignedHead"), schema("SigningKey")
	ex := func(s *openapi3.Schema, prop string) string { return s.Properties[prop].Value.Example.(string) }
	seed, _ := hex.DecodeString("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
	priv := ed25519.NewKeyFromSeed(seed)
	pub := hex.EncodeToString(priv.Public().(ed25519.PublicKey))
	if ex(key, "publicKey") != pub {
		t.Errorf("SigningKey's example key is %s, want RFC 8032's %s", ex(key, "publicKey"), pub)
	}
	keyID := sum(priv.Public().(ed25519.PublicKey))[:16]
	if ex(key, "keyId") != keyID || ex(head, "keyId") != keyID {
		t.Errorf("example key ids %s and %s, want %s", ex(key, "keyId"), ex(head, "keyId"), keyID)
	}
	canonical, _ := json.Marshal(map[string]any{
		"at": ex(head, "at"), "hash": ex(head, "hash"), "keyId": keyID,
		"lobbyId": ex(head, "lobbyId"), "seq": head.Properties["seq"].Value.Example,
	})
	signed := "rps-signed-head-v1\n" + string(canonical)
	sig := hex.EncodeToString(ed25519.Sign(priv, []byte(signed)))
	if ex(head, "signature") != sig {
		t.Errorf("SignedHead's example signature is %s, want %s", ex(head, "signature"), sig)
	}
	if ex(head, "hash") != third.Hash {
		t.Errorf("SignedHead's example names hash %s, not the vector's third event", ex(head, "hash"))
	}
	quotes("SignedHead's description", head.Description, string(canonical), sig, pub, keyID)
	// The stream's example carries the same head.
	stream := spec.Paths.Find("/v1/lobbies/{lobbyId}/events/stream").Get.Responses.Value("200").Value.Content.Get("text/event-stream").Example.(string)
	quotes("the stream's example", stream, sig, third.Hash)
	if !regexp.MustCompile(`(?m)^data: \{"seq":3,.*"hash":"` + third.Hash + `"\}$`).MatchString(stream) {
		t.Errorf("the stream's example does not carry the third vector event")
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestResponsesDeclareTheirHeaders: every response declares the X-Request-Id the middleware sends
// with it, and the success of every operation that takes an Idempotency-Key declares
// Idempotent-Replayed, so that generated clients expose them (the Go server is generated without
// them: see oapi-codegen-overlay.yaml).
func TestResponsesDeclareTheirHeaders(t *testing.T) {
	spec := contract(t)
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			idempotent := false
			for _, p := range op.Parameters {
				idempotent = idempotent || p.Value.Name == "Idempotency-Key"
			}
			for status, r := range op.Responses.Map() {
				if r.Value.Headers["X-Request-Id"] == nil {
					t.Errorf("%s %s %s: no X-Request-Id header declared", method, path, status)
				}
				if idempotent && strings.HasPrefix(status, "2") && r.Value.Headers["Idempotent-Replayed"] == nil {
					t.Errorf("%s %s %s: no Idempotent-Replayed header declared", method, path, status)
				}
			}
		}
	}
}
