package tournament

// Hand-built RFC 8785 objects for those made on every action and every page of events (an
// event's envelope in the chain, a signed head) and for each value of a sealed stage. Canonical encodes with
// encoding/json and then parses and re-encodes with jcs; for these objects of known shape,
// that double JSON work was most of sealing and signing (pprof of rpsd under the mixed load).
// The tests check them against Canonical.

import (
	"strconv"
	"unicode/utf8"
)

// maxExactInteger is the largest integer RFC 8785 (an IEEE 754 double) writes as itself.
const maxExactInteger = 1 << 53

// appendCanonicalString appends s as Canonical renders a string: '"', '\\' and the controls
// with a short escape escaped so, the other controls as \u00xx, everything else as is, and
// invalid UTF-8 as U+FFFD (encoding/json's replacement).
func appendCanonicalString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = utf8.AppendRune(b, utf8.RuneError)
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
			continue
		}
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			if c < 0x20 {
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			} else {
				b = append(b, c)
			}
		}
		i++
	}
	return append(b, '"')
}

// canonicalEnvelope is Canonical(canonicalEvent) for an event whose Data is canonical already
// (as Seal makes it), without encoding Data again; ok is false for a seq that RFC 8785 would
// not write as itself, which Canonical must handle.
func canonicalEnvelope(e LoggedEvent) (out []byte, ok bool) {
	if e.Seq < -maxExactInteger || e.Seq > maxExactInteger {
		return nil, false
	}
	// Keys in RFC 8785 order: at, data, gameId, lobbyId, seq, type.
	b := make([]byte, 0, 160+len(e.Data))
	b = append(b, `{"at":`...)
	b = appendCanonicalString(b, FormatTime(e.At))
	b = append(b, `,"data":`...)
	b = append(b, e.Data...)
	b = append(b, `,"gameId":`...)
	if e.GameID == "" {
		b = append(b, "null"...)
	} else {
		b = appendCanonicalString(b, string(e.GameID))
	}
	b = append(b, `,"lobbyId":`...)
	b = appendCanonicalString(b, string(e.LobbyID))
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, `,"type":`...)
	b = appendCanonicalString(b, string(e.Type))
	return append(b, '}'), true
}
