package tournament_test

import (
	"strings"
	"testing"

	"golang.org/x/text/secure/precis"

	"github.com/commitreveal/rps/tournament"
)

// TestNameRefusesImpersonation: the names of issue 21 that look like nothing, or like another
// name, are refused naming the field; what a person would type is kept, in the PRECIS Nickname
// profile's form.
func TestNameRefusesImpersonation(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"\u3164",                // Hangul filler: shows as nothing
		"\u200b",                // zero-width space
		"\u2800\u2800",          // braille blanks
		"alice\u2800",           // looks like "alice"
		"ad\u202emin",           // right-to-left override: shows as "adnim"
		"alice\u2066\u2069",     // bidi isolates
		"al\u00adice",           // soft hyphen
		"\u0301",                // a combining mark alone
		"x\u0600y",              // a format character outside the default-ignorables
		"name\ufe0f",            // a variation selector
		"\u0430lice",            // Cyrillic а among Latin letters
		"p\u0430ypal",           // the same, inside
		"   ",                   // blank
		"a\tb",                  // a control character
		"a\u2028b",              // a line separator
		strings.Repeat("n", 65), // too long for an account name
		"",
	} {
		if _, _, err := tournament.Name("name", s, 64); !isInvalid(err, "name") {
			t.Errorf("Name(%q) = %v, want validation_failed on name", s, err)
		}
	}
	for in, want := range map[string]string{
		"alice":          "alice",
		"  Alice  Bob ":  "Alice Bob",
		"ａｌｉｃｅ":          "alice",
		"alice\u00a0bob": "alice bob",
		"Zoë":            "Zoë",
		"Zoe\u0308":      "Zoë",
		"Łukasz":         "Łukasz",
		"Дмитрий":        "Дмитрий",
		"山田太郎":           "山田太郎",
		"やまだ タロウ":        "やまだ タロウ",
		"김민준":            "김민준",
		"O'Brien-2":      "O'Brien-2",
		"❤ rock ❤":       "❤ rock ❤",
		"R2-D2 🤖":        "R2-D2 🤖",
	} {
		got, key, err := tournament.Name("name", in, 64)
		if err != nil || got != want {
			t.Errorf("Name(%q) = %q, %v; want %q", in, got, err, want)
			continue
		}
		if pk, _ := precis.Nickname.CompareKey(in); key != pk {
			t.Errorf("Name(%q) key %q, the profile's comparison key is %q", in, key, pk)
		}
	}
	// Names equal under the profile's comparison have one key.
	for _, same := range [][]string{{"Alice", "alice", "ALICE", "ａｌｉｃｅ", " alice "}, {"Zoë", "zoe\u0308"}, {"ΣΑΣ", "σασ"}} {
		_, first, err := tournament.Name("name", same[0], 64)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range same[1:] {
			if _, key, err := tournament.Name("name", s, 64); err != nil || key != first {
				t.Errorf("Name(%q) key %q, %v; want %q as for %q", s, key, err, first, same[0])
			}
		}
	}
}

// TestTextRefusesInvisibleAndReordering: free text (reasons, memos) may say anything visible,
// but not only blanks, and no format or bidi control character.
func TestTextRefusesInvisibleAndReordering(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"\u3164", "\u200b", "\u2800 \u2800", "refund\u202e", "a\u2066b\u2069", "x\u0000", "   ", "\t", "a\u001bb", "\ufeffx"} {
		if _, err := tournament.Text("reason", s, 500); !isInvalid(err, "reason") {
			t.Errorf("Text(%q) = %v, want validation_failed on reason", s, err)
		}
	}
	for in, want := range map[string]string{" table reset ": "table reset", "chargeback: ❤️ 200 €": "chargeback: ❤️ 200 €", "Ωmega 2": "Ωmega 2"} {
		if got, err := tournament.Text("reason", in, 500); err != nil || got != want {
			t.Errorf("Text(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func isInvalid(err error, field string) bool {
	r, ok := tournament.IsRefusal(err)
	return ok && r.Code == tournament.CodeValidationFailed && r.Field == field
}
