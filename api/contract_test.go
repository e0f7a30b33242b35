package api_test

import (
	"strings"
	"testing"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/engine"
)

// TestEveryOperationDocumentsLimits: every request passes the body cap (413) and, but for the
// health probes, the rate limits (429), so every operation documents both, with the problem
// schema.
func TestEveryOperationDocumentsLimits(t *testing.T) {
	spec, err := api.GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			want := []string{"413", "429"}
			if path == "/healthz" || path == "/readyz" {
				want = want[:1]
			}
			for _, code := range want {
				r := op.Responses.Value(code)
				if r == nil || r.Value == nil {
					t.Errorf("%s %s does not document %s", method, path, code)
					continue
				}
				if mt := r.Value.Content.Get("application/problem+json"); mt == nil || mt.Schema == nil || mt.Schema.Ref != "#/components/schemas/Problem" {
					t.Errorf("%s %s: %s is not a problem", method, path, code)
				}
			}
		}
	}
}

// TestRulesetPatternIsTheBuiltins: the spec's pattern lists the rulesets a config may name; it
// must be exactly the ones the server ships.
func TestRulesetPatternIsTheBuiltins(t *testing.T) {
	spec, err := api.GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	var shipped []string
	for _, rs := range engine.Builtin().All() {
		shipped = append(shipped, rs.ID())
	}
	want := "^(" + strings.Join(shipped, "|") + ")$"
	if got := spec.Components.Schemas["GameConfigInput"].Value.Properties["ruleset"].Value.Pattern; got != want {
		t.Errorf("GameConfigInput.ruleset's pattern is %q; the server ships %v (%q)", got, shipped, want)
	}
}
