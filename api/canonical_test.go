package api

import (
	"bytes"
	"testing"

	"github.com/commitreveal/rps/tournament"
)

// TestCanonicalBodies: the bodies canonicalBody builds by hand are the ones tournament.Canonical
// makes (so an idempotency key's request hash does not depend on which one made it).
func TestCanonicalBodies(t *testing.T) {
	for _, s := range []string{"", "0pass12", `quote " and backslash \`, "\b\f\n\r\t\x01\x1f", "<>&", "é 中文 🎲",
		"\u2028\u2029", "\xff\xfe", "a\xc3", "\U0010ffff", "cb86442693864466112de9876585a7f068c7c0acfc4aae60b312a4ef297f44ae"} {
		for _, body := range []any{&CommitRequest{Commitment: s}, &RevealRequest{Reveal: s}, nil} {
			want, err := tournament.Canonical(body)
			if err != nil {
				t.Fatal(err)
			}
			got, err := canonicalBody(body)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%T %q: %s (%v), want %s", body, s, got, err, want)
			}
		}
	}
}
