package tournament

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"strings"
	"time"

	"github.com/gowebpki/jcs"
	"golang.org/x/crypto/blake2b"
)

// EventType names an event.
type EventType string

// Event types. Their data are the structs below; none carries a list that grows with the lobby,
// and none carries a sealed value before its stage closes.
const (
	EventLobbyCreated      EventType = "lobby_created"
	EventGameOpened        EventType = "game_opened"
	EventPlayerRegistered  EventType = "player_registered"
	EventPlayerLeft        EventType = "player_left"
	EventRoundStarted      EventType = "round_started"
	EventMoveCommitted     EventType = "move_committed"
	EventMovesClosed       EventType = "moves_closed"
	EventMoveRevealed      EventType = "move_revealed"
	EventRoundResolved     EventType = "round_resolved"
	EventStageExtended     EventType = "stage_extended"
	EventGameFinished      EventType = "game_finished"
	EventGameStopped       EventType = "game_stopped"
	EventNextConfigChanged EventType = "next_config_changed"
	EventLobbyClosed       EventType = "lobby_closed"
	EventClockShifted      EventType = "clock_shifted"
)

// Event is something that happened, before the log gives it a sequence number and a hash.
type Event struct {
	Type    EventType
	LobbyID LobbyID
	// GameID is empty for lobby-level events.
	GameID GameID
	At     int64
	// Data is one of the *Data structs below; it names its type.
	Data EventData
}

// EventData is the data of an event: each *Data struct below names its event type, so that a new
// one cannot be emitted without a type.
type EventData interface {
	EventType() EventType
}

// LobbyCreatedData is the data of lobby_created. Auth, like that of every event an admin's action
// writes, is the admin's signature of the action (nil: unsigned).
type LobbyCreatedData struct {
	Auth   *AdminAuth `json:"auth,omitempty"`
	Name   string     `json:"name"`
	Config Config     `json:"config"`
}

// GameOpenedData is the data of game_opened: a new game accepts registrations.
type GameOpenedData struct {
	Number      int    `json:"number"`
	Config      Config `json:"config"`
	RulesetHash string `json:"rulesetHash"`
}

// PlayerRegisteredData is the data of player_registered.
type PlayerRegisteredData struct {
	Auth     *ActionAuth `json:"auth,omitempty"`
	Player   AccountID   `json:"player"`
	Order    int         `json:"order"`
	Players  int         `json:"players"`
	Pot      int64       `json:"pot"`
	Deadline int64       `json:"deadline"`
}

// PlayerLeftData is the data of player_left.
type PlayerLeftData struct {
	Auth    *ActionAuth `json:"auth,omitempty"`
	Player  AccountID   `json:"player"`
	Players int         `json:"players"`
	Pot     int64       `json:"pot"`
}

// RoundStartedData is the data of round_started: a moves stage opens.
type RoundStartedData struct {
	Round    int   `json:"round"`
	Players  int   `json:"players"`
	Deadline int64 `json:"deadline"`
}

// MoveCommittedData is the data of move_committed. It names who committed, never what.
type MoveCommittedData struct {
	Auth      *ActionAuth `json:"auth,omitempty"`
	Player    AccountID   `json:"player"`
	Round     int         `json:"round"`
	Committed int         `json:"committed"`
}

// MovesClosedData is the data of moves_closed. The round's commitments stay sealed until the round
// is over; Digest, salted (see NewSaltedDigester) with a salt revealed then, binds them meanwhile
// and lets anyone check the transcript's commitments against the log afterwards.
type MovesClosedData struct {
	Round      int    `json:"round"`
	Committed  int    `json:"committed"`
	Eliminated int    `json:"eliminated"`
	Digest     string `json:"digest"`
	Deadline   int64  `json:"deadline"`
}

// MoveRevealedData is the data of move_revealed. It names who revealed, never what.
type MoveRevealedData struct {
	Auth     *ActionAuth `json:"auth,omitempty"`
	Player   AccountID   `json:"player"`
	Round    int         `json:"round"`
	Revealed int         `json:"revealed"`
}

// RoundResolvedData is the data of round_resolved: the round's commitments and reveals become
// public, and Salt, the salt of its moves_closed digest, with them.
type RoundResolvedData struct {
	Round      int     `json:"round"`
	Resolution string  `json:"resolution"`
	Revealed   int     `json:"revealed"`
	Present    int     `json:"present"`
	Counts     []int64 `json:"counts"`
	Scores     []int64 `json:"scores,omitempty"`
	Survivors  int     `json:"survivors"`
	Remaining  int     `json:"remaining"`
	Digest     string  `json:"digest"`
	// Salt is empty only for a round whose moves closed before digests were salted.
	Salt string `json:"salt,omitempty"`
}

// StageExtendedData is the data of stage_extended, written for a stage's first extension only.
type StageExtendedData struct {
	Stage    Stage `json:"stage"`
	Round    int   `json:"round"`
	Deadline int64 `json:"deadline"`
}

// GameFinishedData is the data of game_finished. Salt is set when the game ends with its round's
// commitments still sealed (the last committer wins when moves close): the salt of that round's
// moves_closed digest, revealed as the commitments become public.
type GameFinishedData struct {
	Winner AccountID `json:"winner"`
	Amount int64     `json:"amount"`
	Round  int       `json:"round"`
	Salt   string    `json:"salt,omitempty"`
}

// GameStoppedData is the data of game_stopped: the escrow split among Players, Share each and one
// unit more to the first Remainder in registration order. Salt is set when the game stops in a
// reveal stage: the salt of the round's moves_closed digest, revealed as its commitments become
// public.
type GameStoppedData struct {
	// Auth is set for a stop by an admin's signed request (not for one the rules make).
	Auth      *AdminAuth `json:"auth,omitempty"`
	Reason    string     `json:"reason"`
	Stage     Stage      `json:"stage"`
	Round     int        `json:"round"`
	Amount    int64      `json:"amount"`
	Players   int        `json:"players"`
	Share     int64      `json:"share"`
	Remainder int        `json:"remainder"`
	Salt      string     `json:"salt,omitempty"`
}

// NextConfigChangedData is the data of next_config_changed.
type NextConfigChangedData struct {
	Auth   *AdminAuth `json:"auth,omitempty"`
	Config Config     `json:"config"`
}

// LobbyClosedData is the data of lobby_closed.
type LobbyClosedData struct {
	Auth *AdminAuth `json:"auth,omitempty"`
}

// ClockShiftedData is the data of clock_shifted: every open deadline moved by GapMs after an
// outage.
type ClockShiftedData struct {
	GapMs int64 `json:"gapMs"`
}

// Stop reasons the core gives itself.
const (
	ReasonMaxExtensions = "max_extensions"
	ReasonMaxRounds     = "max_rounds"
	// ReasonLobbyClosed stops the registration a lobby had open when it closed (every bet refunded).
	ReasonLobbyClosed = "lobby closed"
)

// RulesStop reports whether reason is that of a stop the rules make, which an admin's stop may
// not give: a game_stopped with one of them is the rules', with no admin's signature.
func RulesStop(reason string) bool {
	return reason == ReasonMaxExtensions || reason == ReasonMaxRounds || reason == ReasonLobbyClosed
}

// LoggedEvent is an event in a lobby's log.
type LoggedEvent struct {
	Seq     int64
	Type    EventType
	LobbyID LobbyID
	GameID  GameID
	At      int64
	// Data is the canonical JSON of the event's data.
	Data     json.RawMessage
	PrevHash [32]byte
	Hash     [32]byte
}

// canonicalEvent is the object whose RFC 8785 form is hashed into the chain.
type canonicalEvent struct {
	Seq     int64           `json:"seq"`
	Type    EventType       `json:"type"`
	LobbyID LobbyID         `json:"lobbyId"`
	GameID  *GameID         `json:"gameId"`
	At      string          `json:"at"`
	Data    json.RawMessage `json:"data"`
}

// Canonical returns the RFC 8785 canonical JSON of a value.
func Canonical(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	out, err := jcs.Transform(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("canonicalize: %w", err)
	}
	return out, nil
}

// FormatTime renders a Unix-millisecond instant as the log does: RFC 3339, UTC, milliseconds.
func FormatTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// Seal gives an event its place in the log: the sequence number after prev's, and
// hash = blake2b-256(prevHash || canonical). For seq 1, prev is the zero LoggedEvent.
func Seal(prev LoggedEvent, e Event) (LoggedEvent, error) {
	data, err := canonicalDataOf(e.Data)
	if err != nil {
		return LoggedEvent{}, fmt.Errorf("event %s data: %w", e.Type, err)
	}
	le := LoggedEvent{
		Seq: prev.Seq + 1, Type: e.Type, LobbyID: e.LobbyID, GameID: e.GameID, At: e.At,
		Data: data, PrevHash: prev.Hash,
	}
	if prev.Seq == 0 {
		le.PrevHash = [32]byte{}
	}
	envelope, ok := canonicalEnvelope(le)
	if !ok {
		le.Hash, err = ChainHash(le)
		return le, err
	}
	le.Hash = chainHashOf(le.PrevHash, envelope)
	return le, nil
}

// ChainHash recomputes a logged event's hash from its PrevHash and content; a verifier compares
// it with the stored Hash and with the next event's PrevHash.
func ChainHash(e LoggedEvent) ([32]byte, error) {
	ce := canonicalEvent{Seq: e.Seq, Type: e.Type, LobbyID: e.LobbyID, At: FormatTime(e.At), Data: e.Data}
	if e.GameID != "" {
		gid := e.GameID
		ce.GameID = &gid
	}
	canonical, err := Canonical(ce)
	if err != nil {
		return [32]byte{}, fmt.Errorf("event %d: %w", e.Seq, err)
	}
	return chainHashOf(e.PrevHash, canonical), nil
}

// chainHashOf is blake2b-256(prevHash || canonical envelope).
func chainHashOf(prev [32]byte, envelope []byte) [32]byte {
	h, _ := blake2b.New256(nil)
	h.Write(prev[:])
	h.Write(envelope)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// Digester computes a stage's digest: blake2b-256 of the canonical JSON array of
// {"player": id, "value": v}, salted or not, fed one element at a time (in bytewise order of id) so
// that a stage of any size is hashed in constant memory.
type Digester struct {
	h     hash.Hash
	count int
	// elem is the element being written, reused: a stage of 100,000 values is hashed without
	// an allocation each.
	elem []byte
}

// NewDigester starts an unsalted digest, for values published with it (a round's reveals, in
// round_resolved): blake2b-256(array).
func NewDigester() *Digester {
	return newDigester(nil)
}

// NewSaltedDigester starts a digest salted with s, for values that stay sealed after it is
// published (a round's commitments, in moves_closed): blake2b-256(s || array), unkeyed, over the
// salt's 32 bytes followed by the array. Unsalted, such a digest would be an offline oracle: whoever
// knows every other commitment of the round could test guesses of a player's move and password
// against it. The salt is revealed with the commitments, so that anyone can check it then.
func NewSaltedDigester(s Salt) *Digester {
	return newDigester(s[:])
}

func newDigester(prefix []byte) *Digester {
	h, _ := blake2b.New256(nil)
	h.Write(prefix)
	h.Write([]byte{'['})
	return &Digester{h: h}
}

// Salt is the 32 random bytes a salted digest starts with (see NewSaltedDigester); the zero
// Salt is none.
type Salt [32]byte

// IsZero reports whether s is the zero Salt (none).
func (s Salt) IsZero() bool { return s == Salt{} }

// String renders the salt as events carry it: 64 lower-case hex characters.
func (s Salt) String() string { return hex.EncodeToString(s[:]) }

// ParseSalt reads a salt as events carry it.
func ParseSalt(text string) (Salt, error) {
	var s Salt
	if len(text) != 2*len(s) || strings.ToLower(text) != text {
		return s, fmt.Errorf("salt %q: not %d lower-case hex characters", text, 2*len(s))
	}
	if _, err := hex.Decode(s[:], []byte(text)); err != nil {
		return s, fmt.Errorf("salt %q: %w", text, err)
	}
	return s, nil
}

// Add appends one player's sealed value: the element is Canonical's form of {player, value},
// built by hand (see canonical.go); with Canonical, sealing a stage of 100,000 players took 0.3 s
// of CPU.
func (d *Digester) Add(player AccountID, value string) error {
	b := d.elem[:0]
	if d.count > 0 {
		b = append(b, ',')
	}
	b = append(b, `{"player":`...)
	b = appendCanonicalString(b, string(player))
	b = append(b, `,"value":`...)
	b = appendCanonicalString(b, value)
	b = append(b, '}')
	d.h.Write(b)
	d.elem = b
	d.count++
	return nil
}

// Sum closes the array and returns the digest in lower-case hex with the number of elements.
func (d *Digester) Sum() (string, int) {
	d.h.Write([]byte{']'})
	return hex.EncodeToString(d.h.Sum(nil)), d.count
}

func (*LobbyCreatedData) EventType() EventType      { return EventLobbyCreated }
func (*GameOpenedData) EventType() EventType        { return EventGameOpened }
func (*PlayerRegisteredData) EventType() EventType  { return EventPlayerRegistered }
func (*PlayerLeftData) EventType() EventType        { return EventPlayerLeft }
func (*RoundStartedData) EventType() EventType      { return EventRoundStarted }
func (*MoveCommittedData) EventType() EventType     { return EventMoveCommitted }
func (*MovesClosedData) EventType() EventType       { return EventMovesClosed }
func (*MoveRevealedData) EventType() EventType      { return EventMoveRevealed }
func (*RoundResolvedData) EventType() EventType     { return EventRoundResolved }
func (*StageExtendedData) EventType() EventType     { return EventStageExtended }
func (*GameFinishedData) EventType() EventType      { return EventGameFinished }
func (*GameStoppedData) EventType() EventType       { return EventGameStopped }
func (*NextConfigChangedData) EventType() EventType { return EventNextConfigChanged }
func (*LobbyClosedData) EventType() EventType       { return EventLobbyClosed }
func (*ClockShiftedData) EventType() EventType      { return EventClockShifted }
