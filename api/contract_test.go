package api_test

import (
	"testing"

	"github.com/commitreveal/rps/api"
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
