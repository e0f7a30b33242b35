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

// AppendJSONString appends s as a JSON string, as Canonical writes it.
func AppendJSONString(b []byte, s string) []byte { return appendCanonicalString(b, s) }

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

// canonicalData is event data that writes its own RFC 8785 form: the events every action
// appends, so that sealing one costs no JSON encoding and parsing (Canonical). ok is false when
// a figure is not an integer RFC 8785 writes as itself; Canonical then handles it. The tests
// check each against Canonical.
type canonicalData interface {
	appendCanonical(b []byte) (out []byte, ok bool)
}

// canonicalObject writes an object of integer and string members whose keys are given in RFC
// 8785 order (all keys here are ASCII, so byte order is that order).
type canonicalObject struct {
	b  []byte
	ok bool
	n  int
}

func newCanonicalObject(b []byte) *canonicalObject {
	return &canonicalObject{b: append(b, '{'), ok: true}
}

func (o *canonicalObject) key(k string) {
	if o.n > 0 {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = append(o.b, '"')
	o.b = append(o.b, k...)
	o.b = append(o.b, '"', ':')
}

func (o *canonicalObject) int(k string, v int64) *canonicalObject {
	if v < -maxExactInteger || v > maxExactInteger {
		o.ok = false
	}
	o.key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
	return o
}

func (o *canonicalObject) str(k, v string) *canonicalObject {
	o.key(k)
	o.b = appendCanonicalString(o.b, v)
	return o
}

// optAuth writes the auth member of an action's event, left out when the action was unsigned.
func (o *canonicalObject) optAuth(a *ActionAuth) *canonicalObject {
	if a == nil {
		return o
	}
	o.key("auth")
	var ok bool
	o.b, ok = a.appendCanonical(o.b)
	o.ok = o.ok && ok
	return o
}

// optStr writes a string member that is left out when empty (omitempty).
func (o *canonicalObject) optStr(k, v string) *canonicalObject {
	if v == "" {
		return o
	}
	return o.str(k, v)
}

func (o *canonicalObject) end() ([]byte, bool) {
	return append(o.b, '}'), o.ok
}

func (d *PlayerRegisteredData) appendCanonical(b []byte) ([]byte, bool) {
	return newCanonicalObject(b).optAuth(d.Auth).int("deadline", d.Deadline).int("order", int64(d.Order)).str("player", string(d.Player)).
		int("players", int64(d.Players)).int("pot", d.Pot).end()
}

func (d *PlayerLeftData) appendCanonical(b []byte) ([]byte, bool) {
	return newCanonicalObject(b).optAuth(d.Auth).str("player", string(d.Player)).int("players", int64(d.Players)).int("pot", d.Pot).end()
}

func (d *RoundStartedData) appendCanonical(b []byte) ([]byte, bool) {
	return newCanonicalObject(b).int("deadline", d.Deadline).int("players", int64(d.Players)).int("round", int64(d.Round)).end()
}

func (d *MoveCommittedData) appendCanonical(b []byte) ([]byte, bool) {
	return newCanonicalObject(b).optAuth(d.Auth).int("committed", int64(d.Committed)).str("player", string(d.Player)).int("round", int64(d.Round)).end()
}

func (d *MovesClosedData) appendCanonical(b []byte) ([]byte, bool) {
	return newCanonicalObject(b).int("committed", int64(d.Committed)).int("deadline", d.Deadline).str("digest", d.Digest).
		int("eliminated", int64(d.Eliminated)).int("round", int64(d.Round)).end()
}

func (d *MoveRevealedData) appendCanonical(b []byte) ([]byte, bool) {
	return newCanonicalObject(b).optAuth(d.Auth).str("player", string(d.Player)).int("revealed", int64(d.Revealed)).int("round", int64(d.Round)).end()
}

func (d *StageExtendedData) appendCanonical(b []byte) ([]byte, bool) {
	return newCanonicalObject(b).int("deadline", d.Deadline).int("round", int64(d.Round)).str("stage", string(d.Stage)).end()
}

func (d *GameFinishedData) appendCanonical(b []byte) ([]byte, bool) {
	return newCanonicalObject(b).int("amount", d.Amount).int("round", int64(d.Round)).optStr("salt", d.Salt).
		str("winner", string(d.Winner)).end()
}

// canonicalDataOf is the RFC 8785 form of event data: built by hand for the types that can,
// else by Canonical.
func canonicalDataOf(d EventData) ([]byte, error) {
	if c, ok := d.(canonicalData); ok {
		if out, ok := c.appendCanonical(make([]byte, 0, 128)); ok {
			return out, nil
		}
	}
	return Canonical(d)
}
