package main

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"golang.org/x/crypto/blake2b"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/internal/apiclient"
	"github.com/commitreveal/rps/tournament"
)

// progressEvery is how many events pass between two progress lines of a long log.
const progressEvery = 1000

// verifier re-derives lobbies from the public API.
type verifier struct {
	c        *client
	keys     map[string]ed25519.PublicKey
	rulesets map[string]*engine.Ruleset
	// sigs checks the players' signatures and keeps their key logs.
	sigs *signatures
	// progress receives a line every progressEvery events (nil: none).
	progress io.Writer
}

// LobbyResult is the outcome for one lobby.
type LobbyResult struct {
	Lobby string `json:"lobby"`
	// From is the seq verification resumed after (0: from the first event); To the last seq verified.
	From     int64 `json:"from"`
	To       int64 `json:"to"`
	Games    int   `json:"games"`
	Finished int   `json:"finished"`
	Stopped  int   `json:"stopped"`
	Open     int   `json:"open"`
	// Receipts counts the receipts checked against the log.
	Receipts int      `json:"receipts"`
	OK       bool     `json:"ok"`
	Failure  *Failure `json:"failure,omitempty"`
	// Fork is set when a validly signed receipt is not on the log: proof of a rewrite.
	Fork *Fork `json:"fork,omitempty"`
	// Log is where the transparency log holds the lobby's newest event it covers.
	Log *LobbyLog `json:"log,omitempty"`
	// Signatures is the check of its players' signatures.
	Signatures SignatureReport `json:"signatures"`
	// logged are the events verified in this run, with their leaves.
	logged []loggedEvent
}

// Fork is the proof that the operator rewrote or forked a lobby's log: two heads, both validly
// signed by the server, that cannot lie on one chain.
type Fork struct {
	Receipt apiclient.SignedHead `json:"receipt"`
	// Current is the server's current signed head, whose chain has another hash at Receipt.Seq
	// (CurrentHashAtSeq) or is shorter than Receipt.Seq (CurrentHashAtSeq empty).
	Current          apiclient.SignedHead `json:"current"`
	CurrentHashAtSeq string               `json:"currentHashAtSeq"`
}

// Checkpoint is where a lobby's verification may resume: the log up to Seq (ending in Hash)
// verified, holding Games games, all of them ended.
type Checkpoint struct {
	Seq   int64  `json:"seq"`
	Hash  string `json:"hash"`
	Games int    `json:"games"`
}

// lobbyRun verifies one lobby's log event by event.
type lobbyRun struct {
	v     *verifier
	ctx   context.Context
	id    string
	res   *LobbyResult
	prev  [32]byte
	games int
	game  *gameState
	// checkpoint is the last point before the current open game.
	checkpoint Checkpoint
	// wanted maps seqs to the hashes signed heads say they have.
	wanted map[int64][]wantedHash
	// newest is the newest validly signed head seen, kept as a receipt.
	newest apiclient.SignedHead
	// cur is the event being verified, for failures.
	cur tournament.LoggedEvent
	// prevAt is the instant of the event before it (0: none verified in this run), prevType its
	// type.
	prevAt   int64
	prevType tournament.EventType
	// configs follows what the lobby's admin acts say its games are to be.
	configs lobbyConfigs
}

type wantedHash struct {
	head    apiclient.SignedHead
	receipt bool
}

// playerState is what the log says of a player in a game.
type playerState struct {
	id       string
	order    int
	left     bool
	active   bool
	outRound int
}

// gameState is a game replayed from the log.
type gameState struct {
	id      string
	number  int
	config  apiclient.GameConfig
	rs      *engine.Ruleset
	hash    string
	stage   tournament.Stage
	round   int
	players map[string]*playerState
	joined  int
	count   int // registered and not left
	pot     int64
	// deadline is the current stage's deadline as the log tells it (0: none), firstDeadline the
	// one it had when it began (extensions move deadline), both moved by clock shifts.
	deadline      int64
	firstDeadline int64
	// committed and revealed are the current round's actors, from the log.
	committed map[string]bool
	revealed  map[string]bool
	// roundPlayers are the players the current round started with.
	roundPlayers map[string]bool
	transcript   *apiclient.RoundTranscript
	// sealedDigest is the digest of the current round's moves_closed, to check once the event
	// that makes the commitments public (round_resolved, game_finished or game_stopped) reveals
	// the salt it was made with.
	sealedDigest string
	winner       string
	payout       int64
	// postings are the postings the log implies, in the order they happened.
	postings []posting
	// sealed are the current round's signed commits and reveals, checked once it is over.
	sealed []pendingSignature
}

type posting struct {
	Kind   string
	Player string
	Amount int64
}

func (p posting) String() string { return fmt.Sprintf("%s of %d to %s", p.Kind, p.Amount, p.Player) }

func (g *gameState) active() []*playerState {
	var out []*playerState
	for _, p := range g.players {
		if p.active && !p.left {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *playerState) int { return a.order - b.order })
	return out
}

// verifyLobby checks a lobby from a checkpoint (nil: from its first event), and the receipts
// given for it. It returns the result, and a network error when the server could not be read.
func (v *verifier) verifyLobby(ctx context.Context, id string, from *Checkpoint, receipts []apiclient.SignedHead) (LobbyResult, *Checkpoint, *apiclient.SignedHead, error) {
	res := LobbyResult{Lobby: id}
	r := &lobbyRun{v: v, ctx: ctx, id: id, res: &res, wanted: map[int64][]wantedHash{}}
	cp, err := r.run(from, receipts)
	res.To, res.Games = r.cur.Seq, r.games
	var f *Failure
	switch {
	case errors.As(err, &f):
		res.Failure = f
	case err != nil:
		return res, nil, nil, err
	default:
		res.OK = res.Fork == nil && len(res.Signatures.Failures) == 0 && len(res.Signatures.AdminFailures) == 0
	}
	var newest *apiclient.SignedHead
	if r.newest.KeyId != "" {
		newest = &r.newest
	}
	return res, cp, newest, nil
}

func (r *lobbyRun) fail(item string, expected, found any) *Failure {
	f := &Failure{Lobby: r.id, Seq: r.cur.Seq, Item: item, Expected: fmt.Sprint(expected), Found: fmt.Sprint(found)}
	if r.game != nil {
		f.Game, f.Round = r.game.id, r.game.round
	}
	return f
}

func (r *lobbyRun) run(from *Checkpoint, receipts []apiclient.SignedHead) (*Checkpoint, error) {
	lobby, err := r.v.c.lobby(r.ctx, r.id)
	if err != nil {
		return nil, err
	}
	if lobby.Head == nil {
		return nil, r.fail("signed head of the lobby", "a head", "none")
	}
	if err := r.head(*lobby.Head, false); err != nil {
		return nil, err
	}
	current := *lobby.Head
	for _, h := range receipts {
		if err := r.head(h, true); err != nil {
			return nil, err
		}
	}
	r.res.Receipts = len(receipts)
	if from != nil && len(receipts) == 0 {
		prev, err := hex.DecodeString(from.Hash)
		if err != nil || len(prev) != 32 {
			return nil, &networkError{fmt.Errorf("state: lobby %s: bad checkpoint hash %q", r.id, from.Hash)}
		}
		copy(r.prev[:], prev)
		r.cur.Seq, r.games = from.Seq, from.Games
		r.res.From = from.Seq
	}
	r.checkpoint = Checkpoint{Seq: r.cur.Seq, Hash: hex.EncodeToString(r.prev[:]), Games: r.games}
	for {
		page, err := r.v.c.events(r.ctx, r.id, r.cur.Seq)
		if err != nil {
			return nil, err
		}
		if err := r.head(page.Head, false); err != nil {
			return nil, err
		}
		for _, e := range page.Events {
			if err := r.event(e); err != nil {
				return nil, err
			}
			if r.cur.Seq%progressEvery == 0 && r.v.progress != nil {
				fmt.Fprintf(r.v.progress, "lobby %s: %d of %d events\n", r.id, r.cur.Seq, max(current.Seq, page.Head.Seq))
			}
		}
		if len(page.Events) == 0 && page.Head.Seq <= r.cur.Seq {
			break
		}
	}
	if r.game != nil && r.game.stage.Open() {
		r.res.Open++
		r.res.Signatures.SealedPending += len(r.game.sealed)
	} else {
		r.checkpoint = Checkpoint{Seq: r.cur.Seq, Hash: hex.EncodeToString(r.prev[:]), Games: r.games}
	}
	for seq, ws := range r.wanted {
		for _, w := range ws {
			if w.receipt {
				r.res.Fork = &Fork{Receipt: w.head, Current: current}
				continue
			}
			r.cur = tournament.LoggedEvent{Seq: seq}
			return nil, r.fail("signed head", "a head on the log", fmt.Sprintf("a head at seq %d, past the log's end %d", seq, r.res.To))
		}
	}
	if r.res.Fork != nil {
		r.res.Fork.Current = current
	}
	return &r.checkpoint, nil
}

// head checks a signed head's signature and remembers the hash it promises; receipts with a
// bad signature prove nothing and are reported as such.
func (r *lobbyRun) head(h apiclient.SignedHead, receipt bool) error {
	what := "signed head"
	if receipt {
		what = "receipt"
	}
	if h.LobbyId.String() != r.id {
		return r.fail(what, "lobby "+r.id, "lobby "+h.LobbyId.String())
	}
	key, err := r.v.key(r.ctx, h.KeyId)
	if err != nil {
		return err
	}
	hash, err1 := hex.DecodeString(h.Hash)
	sig, err2 := hex.DecodeString(h.Signature)
	at, err3 := parseTime(h.At)
	if key == nil || err1 != nil || err2 != nil || err3 != nil || len(hash) != 32 {
		return r.fail(what+" at seq "+fmt.Sprint(h.Seq), "a head signed by a published key", fmt.Sprintf("key %q, hash %q, at %q", h.KeyId, h.Hash, h.At))
	}
	head := tournament.Head{LobbyID: tournament.LobbyID(r.id), Seq: h.Seq, At: at, KeyID: h.KeyId}
	copy(head.Hash[:], hash)
	if !head.Verify(key, sig) {
		return r.fail(what+" at seq "+fmt.Sprint(h.Seq), "a valid signature", "a bad signature")
	}
	if !receipt && h.Seq >= r.newest.Seq {
		r.newest = h
	}
	if h.Seq <= r.cur.Seq {
		return r.checkWanted(h.Seq, wantedHash{head: h, receipt: receipt}, r.seenHash(h.Seq))
	}
	r.wanted[h.Seq] = append(r.wanted[h.Seq], wantedHash{head: h, receipt: receipt})
	return nil
}

// seenHash is the hash of an already verified event; only the last one (or the zero head) is
// kept, so an earlier head can only be checked by starting from the first event.
func (r *lobbyRun) seenHash(seq int64) *[32]byte {
	if seq == r.cur.Seq {
		return &r.prev
	}
	if seq == 0 {
		return &[32]byte{}
	}
	return nil
}

func (r *lobbyRun) checkWanted(seq int64, w wantedHash, got *[32]byte) error {
	if got == nil {
		return nil
	}
	if hex.EncodeToString(got[:]) == w.head.Hash {
		return nil
	}
	if w.receipt {
		r.res.Fork = &Fork{Receipt: w.head, CurrentHashAtSeq: hex.EncodeToString(got[:])}
		return nil
	}
	return r.fail(fmt.Sprintf("signed head at seq %d", seq), "the log's hash "+hex.EncodeToString(got[:]), w.head.Hash)
}

func (v *verifier) key(ctx context.Context, id string) (ed25519.PublicKey, error) {
	if k, ok := v.keys[id]; ok {
		return k, nil
	}
	// A key published since the last read (a rotation while verifying).
	list, err := v.c.keys(ctx)
	if err != nil {
		return nil, err
	}
	for _, k := range list.Keys {
		pub, err := hex.DecodeString(k.PublicKey)
		if err == nil && len(pub) == ed25519.PublicKeySize {
			v.keys[k.KeyId] = pub
		}
	}
	return v.keys[id], nil
}

// event verifies one event's place in the chain, then what it says.
func (r *lobbyRun) event(ev apiclient.Event) error {
	e := tournament.LoggedEvent{Seq: ev.Seq, Type: tournament.EventType(ev.Type), LobbyID: tournament.LobbyID(ev.LobbyId.String()), Data: ev.Data}
	if ev.GameId != nil {
		e.GameID = tournament.GameID(ev.GameId.String())
	}
	at, err := parseTime(ev.At)
	want := r.cur.Seq + 1
	r.cur = tournament.LoggedEvent{Seq: want}
	if ev.Seq != want {
		return r.fail("seq", want, ev.Seq)
	}
	if err != nil || tournament.FormatTime(at) != ev.At {
		return r.fail("at", "an RFC 3339 UTC instant with milliseconds", ev.At)
	}
	if at < r.prevAt {
		// Whether a player had a key when it acted is read from these instants: out of order, an
		// unsigned action appended now could be dated before the player's first key.
		return r.fail("at", "at or after the previous event's "+tournament.FormatTime(r.prevAt), ev.At)
	}
	e.At = at
	if string(e.LobbyID) != r.id {
		return r.fail("lobbyId", r.id, e.LobbyID)
	}
	if ev.PrevHash != hex.EncodeToString(r.prev[:]) {
		return r.fail("prevHash", hex.EncodeToString(r.prev[:]), ev.PrevHash)
	}
	e.PrevHash = r.prev
	hash, err := tournament.ChainHash(e)
	if err != nil {
		return r.fail("data", "canonical JSON", err)
	}
	if ev.Hash != hex.EncodeToString(hash[:]) {
		return r.fail("hash", hex.EncodeToString(hash[:]), ev.Hash)
	}
	e.Hash = hash
	r.cur = e
	r.prev, r.prevAt = hash, at
	leaf := int64(-1)
	if ev.LeafIndex != nil {
		leaf = *ev.LeafIndex
	}
	r.res.logged = append(r.res.logged, loggedEvent{seq: e.Seq, leaf: leaf, at: e.At, hash: ev.Hash})
	for _, w := range r.wanted[e.Seq] {
		if err := r.checkWanted(e.Seq, w, &hash); err != nil {
			return err
		}
	}
	delete(r.wanted, e.Seq)
	err = r.apply(e)
	r.prevType = e.Type
	return err
}

func decode[T any](r *lobbyRun, e tournament.LoggedEvent) (T, error) {
	var d T
	if err := exactKeys(e.Data, reflect.TypeFor[T]()); err != nil {
		return d, r.fail("data of "+string(e.Type), "members named exactly as the contract names them", err)
	}
	if err := json.Unmarshal(e.Data, &d); err != nil {
		return d, r.fail("data of "+string(e.Type), fmt.Sprintf("%T", d), string(e.Data))
	}
	return d, nil
}

// apply replays an event against the game it belongs to.
func (r *lobbyRun) apply(e tournament.LoggedEvent) error {
	if err := r.adminAct(e); err != nil {
		return err
	}
	if err := r.followConfigs(e); err != nil {
		return err
	}
	g := r.game
	if e.Type == tournament.EventGameOpened {
		return r.gameOpened(e)
	}
	if e.GameID == "" {
		if e.Type == tournament.EventClockShifted {
			d, err := decode[apiclient.ClockShiftedData](r, e)
			if err != nil {
				return err
			}
			if g != nil && g.deadline != 0 && g.stage.Open() {
				g.deadline += d.GapMs
				g.firstDeadline += d.GapMs
			}
		}
		return nil
	}
	if g == nil || string(e.GameID) != g.id {
		return r.fail("gameId", "the lobby's current game", e.GameID)
	}
	if !g.stage.Open() {
		return r.fail(string(e.Type), "no event after the game ended", "an event")
	}
	switch e.Type {
	case tournament.EventPlayerRegistered:
		return r.registered(e)
	case tournament.EventPlayerLeft:
		return r.left(e)
	case tournament.EventRoundStarted:
		return r.roundStarted(e)
	case tournament.EventMoveCommitted:
		return r.committed(e)
	case tournament.EventMovesClosed:
		return r.movesClosed(e)
	case tournament.EventMoveRevealed:
		return r.revealed(e)
	case tournament.EventRoundResolved:
		return r.resolved(e)
	case tournament.EventStageExtended:
		d, err := decode[apiclient.StageExtendedData](r, e)
		if err != nil {
			return err
		}
		if tournament.Stage(d.Stage) != g.stage || int(d.Round) != g.round {
			return r.fail("stage_extended", fmt.Sprintf("%s round %d", g.stage, g.round), fmt.Sprintf("%s round %d", d.Stage, int(d.Round)))
		}
		if err := r.atDeadline("extension"); err != nil {
			return err
		}
		g.deadline = d.Deadline
		return nil
	case tournament.EventGameFinished:
		return r.finished(e)
	case tournament.EventGameStopped:
		return r.stopped(e)
	}
	// Types this verifier does not know carry nothing it re-derives.
	return nil
}

// atDeadline fails unless the current event happened at or after the stage's deadline: only an
// expiry may eliminate a player or extend a stage.
func (r *lobbyRun) atDeadline(what string) error {
	if g := r.game; g.deadline == 0 || r.cur.At < g.deadline {
		return r.fail(what+" at the deadline", fmt.Sprintf("at or after %s", tournament.FormatTime(g.deadline)), tournament.FormatTime(r.cur.At))
	}
	return nil
}

func (r *lobbyRun) gameOpened(e tournament.LoggedEvent) error {
	if r.game != nil && r.game.stage.Open() {
		return r.fail("game_opened", "the previous game ended first", "game "+r.game.id+" still "+string(r.game.stage))
	}
	d, err := decode[apiclient.GameOpenedData](r, e)
	if err != nil {
		return err
	}
	r.checkpoint = Checkpoint{Seq: e.Seq - 1, Hash: hex.EncodeToString(e.PrevHash[:]), Games: r.games}
	r.games++
	r.game = &gameState{
		id: string(e.GameID), number: int(d.Number), config: d.Config, hash: d.RulesetHash,
		stage: tournament.StageRegistration, players: map[string]*playerState{},
	}
	if int(d.Number) != r.games {
		return r.fail("game number", r.games, int(d.Number))
	}
	rs, err := r.v.ruleset(r.ctx, d.RulesetHash)
	if err != nil {
		var f *Failure
		if errors.As(err, &f) {
			return r.fail(f.Item, f.Expected, f.Found)
		}
		return err
	}
	if rs.ID() != d.Config.Ruleset {
		return r.fail("ruleset", d.Config.Ruleset, rs.ID())
	}
	r.game.rs = rs
	return nil
}

// ruleset fetches a ruleset by content hash and checks that the content hashes to it.
func (v *verifier) ruleset(ctx context.Context, hash string) (*engine.Ruleset, error) {
	if rs, ok := v.rulesets[hash]; ok {
		return rs, nil
	}
	body, err := v.c.ruleset(ctx, hash)
	if errors.Is(err, errNotFound) {
		return nil, &Failure{Item: "ruleset " + hash, Expected: "served by GET /v1/rulesets/by-hash", Found: "404"}
	} else if err != nil {
		return nil, err
	}
	sum := blake2b.Sum256(body)
	rs, err := engine.LoadRuleset(hash, body)
	if err != nil || hex.EncodeToString(sum[:]) != hash || rs.HashHex() != hash {
		return nil, &Failure{Item: "ruleset " + hash, Expected: "a valid ruleset with that content hash", Found: fmt.Sprintf("hash %x (%v)", sum, err)}
	}
	v.rulesets[hash] = rs
	return rs, nil
}

func (r *lobbyRun) registered(e tournament.LoggedEvent) error {
	g := r.game
	d, err := decode[apiclient.PlayerRegisteredData](r, e)
	if err != nil {
		return err
	}
	id := d.Player.String()
	switch {
	case g.stage != tournament.StageRegistration:
		return r.fail("player_registered", "registration stage", g.stage)
	case g.players[id] != nil && !g.players[id].left:
		return r.fail("player_registered", "a new player", id+" already registered")
	case int(d.Order) != g.joined+1:
		return r.fail("registration order", g.joined+1, int(d.Order))
	case int(d.Players) != g.count+1:
		return r.fail("players", g.count+1, int(d.Players))
	case d.Pot != g.pot+g.config.BetSize:
		return r.fail("pot", g.pot+g.config.BetSize, d.Pot)
	}
	if err := r.action(e, id, 0); err != nil {
		return err
	}
	g.joined++
	g.count++
	g.pot = d.Pot
	g.players[id] = &playerState{id: id, order: int(d.Order), active: true}
	g.postings = append(g.postings, posting{"bet", id, g.config.BetSize})
	g.deadline = d.Deadline
	return nil
}

func (r *lobbyRun) left(e tournament.LoggedEvent) error {
	g := r.game
	d, err := decode[apiclient.PlayerLeftData](r, e)
	if err != nil {
		return err
	}
	p := g.players[d.Player.String()]
	switch {
	case g.stage != tournament.StageRegistration:
		return r.fail("player_left", "registration stage", g.stage)
	case p == nil || p.left:
		return r.fail("player_left", "a registered player", d.Player)
	case int(d.Players) != g.count-1:
		return r.fail("players", g.count-1, int(d.Players))
	case d.Pot != g.pot-g.config.BetSize:
		return r.fail("pot", g.pot-g.config.BetSize, d.Pot)
	}
	if err := r.action(e, p.id, 0); err != nil {
		return err
	}
	p.left, p.active = true, false
	g.count--
	g.pot = d.Pot
	g.postings = append(g.postings, posting{"refund", p.id, g.config.BetSize})
	return nil
}

func (r *lobbyRun) roundStarted(e tournament.LoggedEvent) error {
	g := r.game
	d, err := decode[apiclient.RoundStartedData](r, e)
	if err != nil {
		return err
	}
	if int(d.Round) != g.round+1 {
		return r.fail("round", g.round+1, int(d.Round))
	}
	if g.stage == tournament.StageRegistration {
		full := g.config.StartWhenFull && g.count == int(g.config.PlayersCountLimit)
		if !full {
			if err := r.atDeadline("start of round 1"); err != nil {
				return err
			}
		}
		if g.count < tournament.MinPlayers {
			return r.fail("players at the start", fmt.Sprintf("at least %d", tournament.MinPlayers), g.count)
		}
	} else if g.stage != tournament.StageReveal {
		return r.fail("round_started", "after registration or a resolved round", g.stage)
	}
	active := g.active()
	if int(d.Players) != len(active) {
		return r.fail("players in the round", len(active), int(d.Players))
	}
	g.round = int(d.Round)
	g.stage = tournament.StageMoves
	g.deadline, g.firstDeadline = d.Deadline, d.Deadline
	g.committed, g.revealed, g.transcript = map[string]bool{}, map[string]bool{}, nil
	g.roundPlayers = map[string]bool{}
	for _, p := range active {
		g.roundPlayers[p.id] = true
	}
	return nil
}

func (r *lobbyRun) committed(e tournament.LoggedEvent) error {
	g := r.game
	d, err := decode[apiclient.MoveCommittedData](r, e)
	if err != nil {
		return err
	}
	id := d.Player.String()
	switch {
	case g.stage != tournament.StageMoves || int(d.Round) != g.round:
		return r.fail("move_committed", fmt.Sprintf("moves of round %d", g.round), fmt.Sprintf("%s, round %d", g.stage, int(d.Round)))
	case !g.roundPlayers[id] || g.committed[id]:
		return r.fail("move_committed", "a player of the round committing once", id)
	case int(d.Committed) != len(g.committed)+1:
		return r.fail("committed", len(g.committed)+1, int(d.Committed))
	}
	g.committed[id] = true
	return r.action(e, id, g.round)
}

// transcriptOf reads the current round's transcript once and checks that it lists exactly the
// round's players, with the log's committed flags.
func (r *lobbyRun) transcriptOf() (*apiclient.RoundTranscript, error) {
	g := r.game
	if g.transcript != nil {
		return g.transcript, nil
	}
	t, err := r.v.c.round(r.ctx, g.id, g.round)
	if errors.Is(err, errNotFound) {
		return nil, r.fail("transcript", "the round's transcript", "404")
	} else if err != nil {
		return nil, err
	}
	if len(t.Moves) != len(g.roundPlayers) {
		return nil, r.fail("transcript players", len(g.roundPlayers), len(t.Moves))
	}
	for _, m := range t.Moves {
		id := m.AccountId.String()
		if !g.roundPlayers[id] {
			return nil, r.fail("transcript player", "a player of the round", id)
		}
		if m.Committed != g.committed[id] {
			return nil, r.fail("commit of "+id, g.committed[id], m.Committed)
		}
	}
	slices.SortFunc(t.Moves, func(a, b apiclient.RoundMove) int { return strings.Compare(a.AccountId.String(), b.AccountId.String()) })
	g.transcript = &t
	return g.transcript, nil
}

func (r *lobbyRun) movesClosed(e tournament.LoggedEvent) error {
	g := r.game
	d, err := decode[apiclient.MovesClosedData](r, e)
	if err != nil {
		return err
	}
	if g.stage != tournament.StageMoves || int(d.Round) != g.round {
		return r.fail("moves_closed", fmt.Sprintf("moves of round %d", g.round), fmt.Sprintf("%s, round %d", g.stage, int(d.Round)))
	}
	missing := len(g.roundPlayers) - len(g.committed)
	if missing > 0 {
		if err := r.atDeadline("elimination of players who did not commit"); err != nil {
			return err
		}
	}
	if int(d.Committed) != len(g.committed) {
		return r.fail("committed", len(g.committed), int(d.Committed))
	}
	if int(d.Eliminated) != missing {
		return r.fail("eliminated", missing, int(d.Eliminated))
	}
	if _, err := r.transcriptOf(); err != nil {
		return err
	}
	// The digest is salted with a salt revealed with the commitments: checked then.
	g.sealedDigest = d.Digest
	for _, p := range g.players {
		if p.active && !g.committed[p.id] {
			p.active, p.outRound = false, g.round
		}
	}
	g.stage = tournament.StageReveal
	g.deadline, g.firstDeadline = d.Deadline, d.Deadline
	return nil
}

// checkCommitments checks the commitments of a round's transcript against its moves_closed
// digest: blake2b-256(salt || array), or blake2b-256(array) for logs older than salts (salt nil).
func (r *lobbyRun) checkCommitments(t *apiclient.RoundTranscript, digest string, salt *tournament.Salt) error {
	dg := tournament.NewDigester()
	if salt != nil {
		dg = tournament.NewSaltedDigester(*salt)
	}
	for _, m := range t.Moves {
		if !m.Committed {
			continue
		}
		if m.Commitment == nil {
			return r.fail("commitment of "+m.AccountId.String(), "public once the round is over", "null")
		}
		if err := dg.Add(tournament.AccountID(m.AccountId.String()), *m.Commitment); err != nil {
			return err
		}
	}
	if sum, _ := dg.Sum(); sum != digest {
		return r.fail("commitments digest", sum+" (from the transcript and the salt)", digest)
	}
	return nil
}

// checkSealedCommitments checks the digest of the round's moves_closed now that an event made
// its commitments public and revealed, as salt (nil: none), the salt the digest was made with:
// every round_resolved does; game_finished or game_stopped does when the game ends before the
// round resolves, and no other. Only logs older than salts have a round_resolved without one.
func (r *lobbyRun) checkSealedCommitments(salt *string) error {
	g := r.game
	if g.sealedDigest == "" {
		if salt != nil {
			return r.fail("salt", "none (no moves_closed digest waits for one)", *salt)
		}
		return nil
	}
	digest := g.sealedDigest
	g.sealedDigest = ""
	var s *tournament.Salt
	if salt != nil {
		parsed, err := tournament.ParseSalt(*salt)
		if err != nil {
			return r.fail("salt", "64 lower-case hex characters", *salt)
		}
		s = &parsed
	}
	if g.transcript != nil && g.transcript.Stage != apiclient.RoundStageClosed {
		g.transcript = nil // read while the commitments were sealed: read again
	}
	t, err := r.transcriptOf()
	if err != nil {
		return err
	}
	if saltText(t.Salt) != saltText(salt) {
		return r.fail("the transcript's salt", saltText(salt), saltText(t.Salt))
	}
	return r.checkCommitments(t, digest, s)
}

// saltText renders an optional salt for a comparison or a failure.
func saltText(salt *string) string {
	if salt == nil {
		return "none"
	}
	return *salt
}

func (r *lobbyRun) revealed(e tournament.LoggedEvent) error {
	g := r.game
	d, err := decode[apiclient.MoveRevealedData](r, e)
	if err != nil {
		return err
	}
	id := d.Player.String()
	switch {
	case g.stage != tournament.StageReveal || int(d.Round) != g.round:
		return r.fail("move_revealed", fmt.Sprintf("reveal of round %d", g.round), fmt.Sprintf("%s, round %d", g.stage, int(d.Round)))
	case !g.committed[id] || g.revealed[id]:
		return r.fail("move_revealed", "a committer revealing once", id)
	case int(d.Revealed) != len(g.revealed)+1:
		return r.fail("revealed", len(g.revealed)+1, int(d.Revealed))
	}
	g.revealed[id] = true
	return r.action(e, id, g.round)
}

func (r *lobbyRun) resolved(e tournament.LoggedEvent) error {
	g := r.game
	d, err := decode[apiclient.RoundResolvedData](r, e)
	if err != nil {
		return err
	}
	if g.stage != tournament.StageReveal || int(d.Round) != g.round {
		return r.fail("round_resolved", fmt.Sprintf("reveal of round %d", g.round), fmt.Sprintf("%s, round %d", g.stage, int(d.Round)))
	}
	if len(g.revealed) < len(g.committed) {
		if err := r.atDeadline("elimination of players who did not reveal"); err != nil {
			return err
		}
	}
	if int(d.Revealed) != len(g.revealed) {
		return r.fail("revealed", len(g.revealed), int(d.Revealed))
	}
	if d.Resolution != g.config.Resolution {
		return r.fail("resolution", g.config.Resolution, d.Resolution)
	}
	if err := r.checkSealedCommitments(d.Salt); err != nil {
		return err
	}
	t, err := r.transcriptOf()
	if err != nil {
		return err
	}
	dg := tournament.NewDigester()
	var counts engine.Counts
	moves := map[string]engine.Move{}
	for _, m := range t.Moves {
		id := m.AccountId.String()
		if m.Revealed != g.revealed[id] {
			return r.fail("reveal of "+id, g.revealed[id], m.Revealed)
		}
		if !m.Revealed {
			continue
		}
		if m.Reveal == nil || m.Commitment == nil {
			return r.fail("reveal of "+id, "public once the round closed", "null")
		}
		c, err := engine.ParseCommitment(*m.Commitment)
		if err != nil || !c.Matches(*m.Reveal) {
			return r.fail("reveal of "+id, "a reveal matching commitment "+*m.Commitment, fmt.Sprintf("%q", *m.Reveal))
		}
		move, err := g.rs.ParseReveal(*m.Reveal)
		if err != nil {
			return r.fail("move of "+id, "a move of ruleset "+g.rs.ID(), fmt.Sprintf("%q", *m.Reveal))
		}
		if m.Move == nil || int(*m.Move) != int(move) {
			return r.fail("move of "+id, move, m.Move)
		}
		moves[id] = move
		counts[move]++
		if err := dg.Add(tournament.AccountID(id), *m.Reveal); err != nil {
			return err
		}
	}
	if sum, _ := dg.Sum(); sum != d.Digest {
		return r.fail("reveals digest", sum+" (from the transcript)", d.Digest)
	}
	out := g.rs.Resolve(engine.Resolution(g.config.Resolution), counts)
	for m, c := range d.Counts {
		if counts[m] != c {
			return r.fail(fmt.Sprintf("count of move %d", m), counts[m], c)
		}
	}
	if int(d.Present) != int(out.Present) {
		return r.fail("present weapons", fmt.Sprintf("%b", out.Present), fmt.Sprintf("%b", int(d.Present)))
	}
	if int(d.Survivors) != int(out.Survivors) {
		return r.fail("surviving weapons", fmt.Sprintf("%b", out.Survivors), fmt.Sprintf("%b", int(d.Survivors)))
	}
	if d.Scores != nil {
		for m, s := range *d.Scores {
			if out.Scores[m] != s {
				return r.fail(fmt.Sprintf("score of move %d", m), out.Scores[m], s)
			}
		}
	}
	remaining := 0
	for _, p := range g.players {
		if !p.active {
			continue
		}
		if move, ok := moves[p.id]; ok && out.Survivors.Has(move) {
			remaining++
		} else {
			p.active, p.outRound = false, g.round
		}
	}
	if int(d.Remaining) != remaining {
		return r.fail("remaining players", remaining, int(d.Remaining))
	}
	return r.sealedSignatures()
}

func (r *lobbyRun) finished(e tournament.LoggedEvent) error {
	g := r.game
	d, err := decode[apiclient.GameFinishedData](r, e)
	if err != nil {
		return err
	}
	active := g.active()
	if g.stage == tournament.StageRegistration || len(active) != 1 {
		return r.fail("game_finished", "one player left after a round", fmt.Sprintf("%d players in %s", len(active), g.stage))
	}
	if d.Winner.String() != active[0].id {
		return r.fail("winner in the log", active[0].id, d.Winner)
	}
	if d.Amount != g.pot || int(d.Round) != g.round {
		return r.fail("game_finished", fmt.Sprintf("%d paid in round %d", g.pot, g.round), fmt.Sprintf("%d paid in round %d", d.Amount, int(d.Round)))
	}
	if err := r.checkSealedCommitments(d.Salt); err != nil {
		return err
	}
	if err := r.sealedSignatures(); err != nil {
		return err
	}
	g.winner, g.payout = active[0].id, d.Amount
	if d.Amount > 0 {
		g.postings = append(g.postings, posting{"payout", g.winner, d.Amount})
	}
	g.stage = tournament.StageFinished
	r.res.Finished++
	return r.ended()
}

func (r *lobbyRun) stopped(e tournament.LoggedEvent) error {
	g := r.game
	d, err := decode[apiclient.GameStoppedData](r, e)
	if err != nil {
		return err
	}
	// Who shares the escrow: everyone registered in registration, the round's players still in
	// during moves, the round's committers during reveal (the others are already out).
	sharers := g.active()
	if tournament.Stage(d.Stage) != g.stage || int(d.Round) != g.round {
		return r.fail("game_stopped", fmt.Sprintf("%s round %d", g.stage, g.round), fmt.Sprintf("%s round %d", d.Stage, int(d.Round)))
	}
	if d.Amount != g.pot || int(d.Players) != len(sharers) {
		return r.fail("game_stopped", fmt.Sprintf("%d split among %d", g.pot, len(sharers)), fmt.Sprintf("%d split among %d", d.Amount, int(d.Players)))
	}
	if err := r.rulesStop(d.Reason); err != nil {
		return err
	}
	if err := r.checkSealedCommitments(d.Salt); err != nil {
		return err
	}
	if err := r.sealedSignatures(); err != nil {
		return err
	}
	if d.Amount > 0 {
		share, remainder := d.Amount/int64(len(sharers)), int(d.Amount%int64(len(sharers)))
		if d.Share != share || int(d.Remainder) != remainder {
			return r.fail("split", fmt.Sprintf("%d each, %d remainder", share, remainder), fmt.Sprintf("%d each, %d remainder", d.Share, int(d.Remainder)))
		}
		kind := "split"
		if g.stage == tournament.StageRegistration {
			kind = "refund"
		}
		for i, p := range sharers {
			amount := share
			if i < remainder {
				amount++
			}
			if amount > 0 {
				g.postings = append(g.postings, posting{kind, p.id, amount})
			}
		}
	}
	g.stage = tournament.StageStopped
	r.res.Stopped++
	return r.ended()
}

// rulesStop checks a stop whose reason is one the rules give (no admin may give it: see
// tournament.RulesStop) against the rules, so that no admin's stop passes for one: max_rounds
// after the game's last round, max_extensions once a moves or reveal stage in which nobody acted
// has expired MaxExtensions times in a row, lobby closed right after the lobby closed during
// registration.
func (r *lobbyRun) rulesStop(reason string) error {
	g := r.game
	switch reason {
	case tournament.ReasonMaxRounds:
		if g.config.MaxRounds == 0 || g.round < int(g.config.MaxRounds) {
			return r.fail("stop reason", fmt.Sprintf("no max_rounds stop before round %d", g.config.MaxRounds), reason)
		}
	case tournament.ReasonMaxExtensions:
		window, idle := g.config.MoveTimeoutMs, len(g.committed) == 0
		if g.stage == tournament.StageReveal {
			window, idle = g.config.RevealTimeoutMs, len(g.revealed) == 0
		}
		due := g.firstDeadline + int64(g.config.MaxExtensions)*window
		if g.config.MaxExtensions == 0 || g.stage == tournament.StageRegistration || !idle || r.cur.At < due {
			return r.fail("stop reason", fmt.Sprintf("a max_extensions stop of a %s stage nobody acted in, at %s (%d windows after its deadline)",
				g.stage, tournament.FormatTime(due), g.config.MaxExtensions), fmt.Sprintf("%s at %s", reason, tournament.FormatTime(r.cur.At)))
		}
	case tournament.ReasonLobbyClosed:
		if g.stage != tournament.StageRegistration || r.prevType != tournament.EventLobbyClosed {
			return r.fail("stop reason", "a lobby closed stop of a registration, right after lobby_closed", fmt.Sprintf("%s in %s after %s", reason, g.stage, r.prevType))
		}
	}
	return nil
}

// ended compares what the log implies for an ended game with the game's public summary, its
// players and its money.
func (r *lobbyRun) ended() error {
	g := r.game
	sum, err := r.v.c.game(r.ctx, g.id)
	if err != nil {
		return err
	}
	winner := ""
	if sum.Winner != nil {
		winner = sum.Winner.String()
	}
	switch {
	case string(sum.Stage) != string(g.stage):
		return r.fail("stage", g.stage, sum.Stage)
	case winner != g.winner:
		return r.fail("winner", orNone(g.winner), orNone(winner))
	case sum.Payout != g.payout:
		return r.fail("payout", g.payout, sum.Payout)
	case sum.Pot != 0:
		return r.fail("escrow", 0, sum.Pot)
	case sum.RulesetHash != g.hash:
		return r.fail("ruleset hash", g.hash, sum.RulesetHash)
	case int(sum.Round) != g.round:
		return r.fail("rounds", g.round, sum.Round)
	}
	players, err := r.v.c.players(r.ctx, g.id)
	if err != nil {
		return err
	}
	// The server lists the players still registered: those who left are not listed.
	if len(players) != g.count {
		return r.fail("players", g.count, len(players))
	}
	for _, p := range players {
		id := p.AccountId.String()
		want := g.players[id]
		if want == nil || want.left {
			return r.fail("player", "a player the log registered", id)
		}
		status, out := "active", 0
		switch {
		case id == g.winner:
			status = "winner"
		case want.outRound > 0:
			status, out = "eliminated", want.outRound
		}
		found := 0
		if p.EliminatedInRound != nil {
			found = int(*p.EliminatedInRound)
		}
		if string(p.Status) != status || found != out || int(p.Order) != want.order {
			return r.fail("player "+id, fmt.Sprintf("%s (out in round %d, order %d)", status, out, want.order),
				fmt.Sprintf("%s (out in round %d, order %d)", p.Status, found, p.Order))
		}
	}
	return r.money()
}

// money compares the game's postings with those the log implies, to the unit, and checks that
// the escrow comes out at zero.
func (r *lobbyRun) money() error {
	g := r.game
	ps, err := r.v.c.postings(r.ctx, g.id)
	if err != nil {
		return err
	}
	found := make([]posting, 0, len(ps))
	var escrow int64
	for _, p := range ps {
		found = append(found, posting{string(p.Kind), p.Player.String(), p.Amount})
		if p.Kind == apiclient.PostingKindBet {
			escrow += p.Amount
		} else {
			escrow -= p.Amount
		}
	}
	order := func(a, b posting) int {
		return strings.Compare(fmt.Sprint(a.Kind, a.Player, a.Amount), fmt.Sprint(b.Kind, b.Player, b.Amount))
	}
	want := slices.Clone(g.postings)
	slices.SortFunc(want, order)
	slices.SortFunc(found, order)
	for i := range max(len(want), len(found)) {
		switch {
		case i >= len(found):
			return r.fail(want[i].Kind+" to "+want[i].Player, want[i], "no such posting")
		case i >= len(want):
			return r.fail(found[i].Kind+" to "+found[i].Player, "no such posting", found[i])
		case want[i] != found[i]:
			w, f := want[i], found[i]
			if w.Kind == f.Kind && w.Player == f.Player {
				return r.fail(w.Kind+" to "+w.Player, w.Amount, f.Amount)
			}
			return r.fail("posting", w, f)
		}
	}
	if escrow != 0 {
		return r.fail("escrow", 0, escrow)
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
