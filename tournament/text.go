package tournament

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/secure/precis"
)

// Free text and names: what a person types and others read. Both rules refuse what shows as
// nothing or changes how the text around it shows, so that a name cannot look like another, or
// like no name at all, and a reason cannot hide or reorder words.

// Text is the one rule for free-text inputs (reasons, memos), and the base of Name: it returns s
// without surrounding white space, or a validation_failed refusal on field when s is not valid
// UTF-8, is empty, holds a control character (PostgreSQL refuses a NUL in text), a format or
// bidi control character (a zero-width space, a right-to-left override), or a character that
// shows as nothing (a Hangul filler, a braille blank), has nothing visible, or is longer than max
// characters.
func Text(field, s string, max int) (string, error) {
	if !utf8.ValidString(s) {
		return "", invalid(field, "must be valid UTF-8")
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return "", invalid(field, "must not be empty")
	}
	if err := checkRunes(field, s); err != nil {
		return "", err
	}
	if n := utf8.RuneCountInString(s); n > max {
		return "", invalid(field, fmt.Sprintf("must be at most %d characters, got %d", max, n))
	}
	return s, nil
}

// checkRunes refuses the characters Text refuses, and text with nothing visible.
func checkRunes(field, s string) error {
	visible := false
	for _, r := range s {
		switch {
		case unicode.IsControl(r):
			return invalid(field, fmt.Sprintf("must not contain the control character %U", r))
		case unicode.Is(unicode.Cf, r):
			return invalid(field, fmt.Sprintf("must not contain %U, a format or bidi control character (it is invisible, or reorders the text around it)", r))
		case blank(r):
			return invalid(field, fmt.Sprintf("must not contain %U, which shows as nothing", r))
		case unicode.In(r, unicode.L, unicode.N, unicode.P, unicode.S):
			visible = true
		}
	}
	if !visible {
		return invalid(field, "must contain a visible character (a letter, digit, punctuation or symbol)")
	}
	return nil
}

// blank reports whether r shows as nothing though it is not white space: the default-ignorable
// characters that are not format characters (Hangul fillers, U+034F), and the braille blank.
func blank(r rune) bool {
	return unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || r == '\u2800'
}

// Name is the rule for names people tell each other apart by (accounts, lobbies). It is Text's
// rule over the PRECIS Nickname profile (RFC 8266, golang.org/x/text/secure/precis): the name is
// kept in the profile's form (NFKC, every space one ASCII space, none around it), may hold only
// what the profile allows (no default-ignorable character, no variation selector) and at most
// max characters, and must not mix scripts, but as a Japanese, Korean or Chinese name does (a
// Cyrillic "а" in a Latin name looks like "a": UTS #39's highly restrictive level). key is the
// profile's comparison key (lower case too): two names with one key are the same name.
func Name(field, s string, max int) (name, key string, err error) {
	if !utf8.ValidString(s) {
		return "", "", invalid(field, "must be valid UTF-8")
	}
	if err := checkRunes(field, strings.TrimSpace(s)); err != nil {
		return "", "", err
	}
	name, err = precis.Nickname.String(s)
	if err != nil {
		return "", "", invalid(field, "must not contain "+disallowedIn(s)+", which names may not hold (PRECIS Nickname profile, RFC 8266)")
	}
	if name, err = Text(field, name, max); err != nil {
		return "", "", err
	}
	if err := checkScripts(field, name); err != nil {
		return "", "", err
	}
	key, err = precis.Nickname.CompareKey(name)
	if err != nil {
		return "", "", fmt.Errorf("comparison key of %q: %w", name, err) // the name was just enforced
	}
	return name, key, nil
}

// disallowedIn names the first character of s that the Nickname profile refuses.
func disallowedIn(s string) string {
	for _, r := range s {
		if !unicode.IsSpace(r) {
			if _, err := precis.Nickname.String(string(r)); err != nil {
				return fmt.Sprintf("%U", r)
			}
		}
	}
	return "a character"
}

// scriptSets are the sets of scripts a name may mix (UTS #39, highly restrictive): the scripts
// written together in Japan, Korea and China, each with Latin.
var scriptSets = [][]string{
	{"Latin", "Han", "Hiragana", "Katakana"},
	{"Latin", "Han", "Hangul"},
	{"Latin", "Han", "Bopomofo"},
}

// scriptNames lists unicode.Scripts' names in order, so that the first script found is always
// the same.
var scriptNames = func() []string {
	names := make([]string, 0, len(unicode.Scripts))
	for name := range unicode.Scripts {
		if name != "Common" && name != "Inherited" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}()

// checkScripts refuses a name whose letters come from scripts not written together.
func checkScripts(field, name string) error {
	var used []string
	for _, r := range name {
		if unicode.In(r, unicode.Common, unicode.Inherited) {
			continue
		}
		for _, script := range scriptNames {
			if unicode.Is(unicode.Scripts[script], r) {
				if !slices.Contains(used, script) {
					used = append(used, script)
				}
				break
			}
		}
	}
	if len(used) <= 1 {
		return nil
	}
	for _, set := range scriptSets {
		if !slices.ContainsFunc(used, func(s string) bool { return !slices.Contains(set, s) }) {
			return nil
		}
	}
	return invalid(field, fmt.Sprintf("must not mix the %s scripts: letters of one look like letters of another", strings.Join(used, " and ")))
}
