package engine

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// gearVectors are the commitments of Gear's program for password "pass12".
var gearVectors = []struct{ preimage, commitment string }{
	{"0pass12", "cb86442693864466112de9876585a7f068c7c0acfc4aae60b312a4ef297f44ae"},
	{"1pass12", "b34c1092cdce02200b7eaa684af4563d0644b46aa2ac115dec287bd62ca268de"},
	{"2pass12", "88e53c3a1200f7b4c3cbeca95ae266f64c623c6ee0e357fe570cfae2ad4f34c1"},
	{"3pass12", "c580388dad876ea2b7861889a6617cba2693c4765c7445b8eaea739ab4cdb127"},
	{"4pass12", "9ce58f3df7e4b407e7d421d2e310e69613ff26164c27d446f76ce0060ce93380"},
}

func TestCommitmentVectors(t *testing.T) {
	t.Parallel()
	for i, v := range gearVectors {
		if got := Commit(v.preimage).String(); got != v.commitment {
			t.Errorf("Commit(%q) = %s, want %s", v.preimage, got, v.commitment)
		}
		if got := CommitMove(Move(i), "pass12").String(); got != v.commitment {
			t.Errorf("CommitMove(%d, pass12) = %s", i, got)
		}
		c, err := ParseCommitment(v.commitment)
		if err != nil {
			t.Fatal(err)
		}
		if !c.Matches(v.preimage) || c.Matches(v.preimage+" ") || c.Matches(v.preimage[1:]) {
			t.Errorf("Matches is wrong for %q", v.preimage)
		}
	}
}

func TestParseCommitment(t *testing.T) {
	t.Parallel()
	good := gearVectors[0].commitment
	for _, s := range []string{"", good[:63], good + "0", "0x" + good[2:], "g" + good[1:], " " + good[1:], strings.ToUpper(good), "A" + good[1:]} {
		if _, err := ParseCommitment(s); !errors.Is(err, ErrBadCommitment) {
			t.Errorf("ParseCommitment(%q) error = %v, want ErrBadCommitment", s, err)
		}
	}
	var c Commitment
	if err := json.Unmarshal([]byte(`"`+good+`"`), &c); err != nil || c.String() != good {
		t.Errorf("json round trip: %v %s", err, c)
	}
	b, _ := json.Marshal(c)
	if string(b) != `"`+good+`"` {
		t.Errorf("json form %s", b)
	}
	if err := json.Unmarshal([]byte(`"abc"`), &c); !errors.Is(err, ErrBadCommitment) {
		t.Errorf("json of bad hex: %v", err)
	}
}

func TestParseReveal(t *testing.T) {
	t.Parallel()
	rs := rpsls(t)
	cases := []struct {
		reveal string
		move   Move
		err    error
	}{
		{"0pass12", 0, nil},
		{"4", 4, nil},                             // Gear allows an empty password
		{"2пароль🙂", 2, nil},                      // any UTF-8
		{"1\x00\xff", 1, nil},                     // or any bytes
		{"3" + strings.Repeat("a", 1023), 3, nil}, // exactly the limit
		{"", 0, ErrRevealEmpty},
		{"3" + strings.Repeat("a", 1024), 0, ErrRevealTooLong},
		{"x" + strings.Repeat("a", 1024), 0, ErrRevealTooLong}, // length is checked first
		{"a0", 0, ErrRevealNotDigit},
		{" 0", 0, ErrRevealNotDigit},
		{"٣pass", 0, ErrRevealNotDigit}, // Arabic-Indic three is a digit to unicode, not to us
		{"５pass", 0, ErrRevealNotDigit}, // fullwidth five
		{"5pass", 0, ErrUnknownMove},
		{"9", 0, ErrUnknownMove},
	}
	for _, c := range cases {
		m, err := rs.ParseReveal(c.reveal)
		if !errors.Is(err, c.err) || (c.err == nil && err != nil) || m != c.move {
			t.Errorf("ParseReveal(%.20q) = %d, %v; want %d, %v", c.reveal, m, err, c.move, c.err)
		}
	}
	_, err := rs.ParseReveal(strings.Repeat("1", 2000))
	if err == nil || !strings.Contains(err.Error(), "1024 bytes") {
		t.Errorf("too-long error %v does not state the limit", err)
	}
	_, err = rs.ParseReveal("7secret")
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("error %v must not quote the password", err)
	}
}

func FuzzParseReveal(f *testing.F) {
	for _, v := range gearVectors {
		f.Add(v.preimage)
	}
	for _, s := range []string{"", "4", "9x", "a", "٣", "\xff", strings.Repeat("0", 1025)} {
		f.Add(s)
	}
	rs, _ := Builtin().Get(DefaultRulesetID)
	f.Fuzz(func(t *testing.T, reveal string) {
		m, err := rs.ParseReveal(reveal)
		switch {
		case reveal == "":
			if !errors.Is(err, ErrRevealEmpty) {
				t.Fatalf("empty: %v", err)
			}
		case len(reveal) > MaxRevealBytes:
			if !errors.Is(err, ErrRevealTooLong) {
				t.Fatalf("too long: %v", err)
			}
		case reveal[0] < '0' || reveal[0] > '9':
			if !errors.Is(err, ErrRevealNotDigit) {
				t.Fatalf("not a digit: %v", err)
			}
		case !rs.Moves().Has(Move(reveal[0] - '0')):
			if !errors.Is(err, ErrUnknownMove) {
				t.Fatalf("unknown move: %v", err)
			}
		default:
			if err != nil || m.Digit() != reveal[0] {
				t.Fatalf("got %d, %v", m, err)
			}
			if !CommitMove(m, reveal[1:]).Matches(reveal) {
				t.Fatal("CommitMove disagrees with Commit")
			}
		}
		if err != nil && m != 0 {
			t.Fatalf("move %d returned with error", m)
		}
	})
}

func TestMoveSet(t *testing.T) {
	t.Parallel()
	s := MoveSetOf(4, 0, 9, 12)
	if !s.Has(0) || !s.Has(4) || !s.Has(9) || s.Has(1) || s.Has(12) || s.Count() != 3 {
		t.Errorf("MoveSetOf(4,0,9,12) = %b", s)
	}
	if got := s.Moves(); len(got) != 3 || got[0] != 0 || got[1] != 4 || got[2] != 9 {
		t.Errorf("Moves() = %v", got)
	}
	if Move(7).Digit() != '7' || Move(7).String() != "7" {
		t.Error("digit of 7")
	}
}
