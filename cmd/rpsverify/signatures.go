package main

// This file checks who took each action (README: "Checking the operator: rpsverify", issue 31):
// every player action in a lobby's log against the key its account had at that point of the
// account's key log, and every key log against itself. The server's word is worth nothing here:
// an operator with the database can write any event and re-hash any chain, but it cannot sign
// with a player's key, so an action that does not verify under a key the player added is one
// the player did not take. A key the operator installed by a recovery is the operator's word,
// allowed and reported as exactly that.

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/commitreveal/rps/internal/apiclient"
	"github.com/commitreveal/rps/tournament"
)

// SignatureReport is what a lobby's actions show of their signatures.
type SignatureReport struct {
	// Checked counts the actions whose signature verified under a key of their player.
	Checked int `json:"checked"`
	// Unsigned counts the actions of players who had no key then (allowed unless
	// --require-signatures: the server's RPSD_PLAYER_KEYS=optional).
	Unsigned int `json:"unsigned"`
	// SealedPending counts the commits and reveals whose signature is still sealed (their round
	// is not over): the log binds them by hash, checked once the transcript shows them.
	SealedPending int `json:"sealedPending"`
	// ByRecoveredKey counts the checked actions signed by a key the operator installed by a
	// recovery, or one that such a key added: the player's only on the operator's word.
	ByRecoveredKey int `json:"byRecoveredKey"`
	// Failures are the actions not signed by their player, one per event.
	Failures []Failure `json:"failures,omitempty"`
	// AdminChecked counts the admins' acts whose signature verified under a key of their admin
	// (see adminAct); AdminUnsigned those that record no signature: the operator's word alone.
	AdminChecked  int `json:"adminChecked"`
	AdminUnsigned int `json:"adminUnsigned"`
	// AdminFailures are the admins' acts whose recorded signature does not hold, one per event.
	AdminFailures []Failure `json:"adminFailures,omitempty"`
}

// AccountResult is the check of one account's key log.
type AccountResult struct {
	Account string `json:"account"`
	// Events is the length of its key log; Keys how many keys it ever had.
	Events int `json:"events"`
	Keys   int `json:"keys"`
	// Recoveries are the key changes the operator made (keys_recovered): not a failure by
	// itself, but every action signed by their keys is the player's only on the operator's word.
	Recoveries []Recovery `json:"recoveries,omitempty"`
	OK         bool       `json:"ok"`
	Failure    *Failure   `json:"failure,omitempty"`
	// Log is where the transparency log holds the account's newest key event.
	Log *LobbyLog `json:"log,omitempty"`
	// logged are its key events, with their leaves.
	logged []loggedEvent
}

// Recovery is a keys_recovered event: the operator replaced every key of the account.
type Recovery struct {
	Seq     int64    `json:"seq"`
	At      string   `json:"at"`
	KeyID   string   `json:"keyId"`
	Retired []string `json:"retired"`
	Admin   string   `json:"admin"`
	Reason  string   `json:"reason"`
	// SignedBy is the admin's key whose signature of the recovery verified ("": unsigned).
	SignedBy string `json:"signedBy,omitempty"`
	// auth, at and publicKey are what checkRecoveries checks the signature with.
	auth      *tournament.AdminAuth
	at        int64
	publicKey string
}

// actionsOf are the signed actions each action event may carry.
var actionsOf = map[tournament.EventType][]tournament.ActionName{
	tournament.EventPlayerRegistered: {tournament.ActionRegister, tournament.ActionQuickJoin},
	tournament.EventPlayerLeft:       {tournament.ActionLeave},
	tournament.EventMoveCommitted:    {tournament.ActionCommit},
	tournament.EventMoveRevealed:     {tournament.ActionReveal},
}

// keySpan is one key of an account, from its key log: when it was added and retired.
type keySpan struct {
	id       string
	pub      ed25519.PublicKey
	addedSeq int64
	addedAt  int64
	// retiredSeq is 0 while the key is active.
	retiredSeq int64
	retiredAt  int64
	// recovery is set for a key the operator installed.
	recovery bool
	// operators is set for a key that is the player's only on the operator's word: installed by a
	// recovery, or added by such a key (which the operator held).
	operators bool
}

// activeAt reports whether the key was the account's at instant at: added at or before it and
// not retired before it.
func (k *keySpan) activeAt(at int64) bool {
	return k.addedAt <= at && (k.retiredSeq == 0 || k.retiredAt >= at)
}

// keyLog is an account's key log, replayed.
type keyLog struct {
	res *AccountResult
	// keys are every key the log added, by id, in the order added.
	keys  map[string]*keySpan
	order []*keySpan
	prev  [32]byte
	seq   int64
	// at is the newest key event's instant: the next one is not dated before it.
	at int64
	// signedUpAt is the instant of the account's sign-up when its key log begins with it (0: an
	// account that had no key when it was made).
	signedUpAt int64
	// origin is the transparency log's origin the signatures name.
	origin string
}

// keyAt is the key id the account had active at instant at, or nil.
func (l *keyLog) keyAt(id string, at int64) *keySpan {
	if k := l.keys[id]; k != nil && k.activeAt(at) {
		return k
	}
	return nil
}

// hadKeyAt reports whether the account had any active key at instant at.
func (l *keyLog) hadKeyAt(at int64) bool {
	for _, k := range l.order {
		if k.activeAt(at) {
			return true
		}
	}
	return false
}

// active are the keys active at this point of the log.
func (l *keyLog) active() []*keySpan {
	var out []*keySpan
	for _, k := range l.order {
		if k.retiredSeq == 0 {
			out = append(out, k)
		}
	}
	return out
}

// replayKeyLog checks an account's key log (the events in order from seq 1) and the server's
// list of its keys against it. The first event that does not hold ends the replay: the keys
// added before it stay, and every action signed by a later one is then not the player's.
func replayKeyLog(account, origin string, events []apiclient.KeyEvent, keys []apiclient.AccountKey) *keyLog {
	l := &keyLog{res: &AccountResult{Account: account}, keys: map[string]*keySpan{}, origin: origin}
	for _, e := range events {
		if f := l.apply(e); f != nil {
			l.res.Failure = f
			break
		}
	}
	if l.res.Failure == nil {
		l.res.Failure = l.compare(keys)
	}
	l.res.Events, l.res.Keys, l.res.OK = int(l.seq), len(l.order), l.res.Failure == nil
	return l
}

func (l *keyLog) fail(seq int64, item string, expected, found any) *Failure {
	return &Failure{Account: l.res.Account, Seq: seq, Item: item, Expected: fmt.Sprint(expected), Found: fmt.Sprint(found)}
}

// apply checks one key event's place in the account's chain, then what it does.
func (l *keyLog) apply(e apiclient.KeyEvent) *Failure {
	want := l.seq + 1
	at, err := parseTime(e.At)
	switch {
	case e.Seq != want:
		return l.fail(want, "key event seq", want, e.Seq)
	case e.AccountId.String() != l.res.Account:
		return l.fail(e.Seq, "key event accountId", l.res.Account, e.AccountId)
	case e.PrevHash != hex.EncodeToString(l.prev[:]):
		return l.fail(e.Seq, "key event prevHash", hex.EncodeToString(l.prev[:]), e.PrevHash)
	case err != nil || tournament.FormatTime(at) != e.At:
		return l.fail(e.Seq, "key event at", "an instant in the log's time format, as hashed", e.At)
	case at < l.at:
		// Out of order, a key's span would not be where the log puts it: a recovery made after a
		// player's actions could be dated before them.
		return l.fail(e.Seq, "key event at", "at or after key event "+fmt.Sprint(l.seq)+"'s "+tournament.FormatTime(l.at), e.At)
	}
	ke := tournament.KeyEvent{Seq: e.Seq, Type: tournament.KeyEventType(e.Type), AccountID: tournament.AccountID(l.res.Account), At: at,
		Data: e.Data, PrevHash: l.prev}
	hash, err := tournament.KeyEventHash(ke)
	if err != nil {
		return l.fail(e.Seq, "key event data", "canonical JSON", err)
	}
	if e.Hash != hex.EncodeToString(hash[:]) {
		return l.fail(e.Seq, "key event hash", hex.EncodeToString(hash[:]), e.Hash)
	}
	l.seq, l.prev, l.at = e.Seq, hash, at
	leaf := int64(-1)
	if e.LeafIndex != nil {
		leaf = *e.LeafIndex
	}
	l.res.logged = append(l.res.logged, loggedEvent{seq: e.Seq, leaf: leaf, at: at, hash: e.Hash})
	switch ke.Type {
	case tournament.KeyAdded:
		return decodeKeyData(l, ke, l.added)
	case tournament.KeyRetired:
		return decodeKeyData(l, ke, l.retired)
	case tournament.KeysRecovered:
		return decodeKeyData(l, ke, l.recovered)
	}
	return l.fail(e.Seq, "key event type", "key_added, key_retired or keys_recovered", e.Type)
}

// decodeKeyData decodes a key event's data as its type's and applies it.
func decodeKeyData[T any](l *keyLog, e tournament.KeyEvent, apply func(tournament.KeyEvent, T) *Failure) *Failure {
	var d T
	if err := exactKeys(e.Data, reflect.TypeFor[T]()); err != nil {
		return l.fail(e.Seq, "data of "+string(e.Type), "members named exactly as the contract names them", err)
	}
	if err := json.Unmarshal(e.Data, &d); err != nil {
		return l.fail(e.Seq, "data of "+string(e.Type), fmt.Sprintf("%T", d), string(e.Data))
	}
	return apply(e, d)
}

// newKey checks a key the log adds: well formed, named by its id, never added before.
func (l *keyLog) newKey(e tournament.KeyEvent, id, public string, recovery bool) (*keySpan, *Failure) {
	pub, err := hex.DecodeString(public)
	switch {
	case err != nil || len(pub) != ed25519.PublicKeySize || hex.EncodeToString(pub) != public:
		return nil, l.fail(e.Seq, "public key", "64 lower-case hex characters", public)
	case tournament.KeyID(pub) != id:
		return nil, l.fail(e.Seq, "key id of "+public, tournament.KeyID(pub), id)
	case l.keys[id] != nil:
		return nil, l.fail(e.Seq, "key "+id, "a key not added before", "added again")
	}
	return &keySpan{id: id, pub: pub, addedSeq: e.Seq, addedAt: e.At, recovery: recovery, operators: recovery}, nil
}

// keySignature is a player's signature of a key change, as its event records it.
type keySignature struct {
	signedAt       int64
	signature      string
	idempotencyKey *string
}

// signed checks a key change's signature by signer over the message m.
func (l *keyLog) signed(e tournament.KeyEvent, signer *keySpan, m tournament.ActionMessage, s keySignature) *Failure {
	if err := tournament.CheckSignedAt(s.signedAt, e.At); err != nil {
		return l.fail(e.Seq, "signedAt of "+string(m.Action), "within the window of the event's instant", err)
	}
	m.Origin, m.KeyID, m.SignedAt = l.origin, signer.id, s.signedAt
	if s.idempotencyKey != nil {
		m.IdempotencyKey = *s.idempotencyKey
	}
	sig, err := hex.DecodeString(s.signature)
	if err != nil || !m.Verify(signer.pub, sig) {
		msg, _ := m.Bytes()
		return l.fail(e.Seq, "signature of "+string(m.Action), fmt.Sprintf("a signature by key %s of %q", signer.id, msg), s.signature)
	}
	return nil
}

func (l *keyLog) added(e tournament.KeyEvent, d tournament.KeyAddedData) *Failure {
	k, f := l.newKey(e, d.KeyID, d.PublicKey, false)
	if f != nil {
		return f
	}
	m := tournament.ActionMessage{Payload: tournament.ActionPayload{PublicKey: d.PublicKey}}
	s := keySignature{signedAt: d.SignedAt, signature: d.Signature, idempotencyKey: d.IdempotencyKey}
	switch d.Via {
	case tournament.ViaSignUp:
		if e.Seq != 1 || d.IdempotencyKey != nil {
			return l.fail(e.Seq, "key_added via sign_up", "the first key event, without an idempotency key", fmt.Sprintf("event %d", e.Seq))
		}
		m.Action, m.Payload.Name = tournament.ActionSignUp, d.Name
		l.signedUpAt = e.At
	case tournament.ViaAddKey:
		m.Action, m.Player = tournament.ActionAddKey, tournament.AccountID(l.res.Account)
	default:
		return l.fail(e.Seq, "key_added via", "sign_up or add_key", d.Via)
	}
	// A key is added by a key the account has, or, for its first key, by itself (proof of
	// possession): after that only a recovery adds a key without one.
	signer := l.keys[d.Signer]
	switch {
	case len(l.order) == 0 && d.Signer == d.KeyID:
		signer = k
	case signer == nil || signer.retiredSeq != 0:
		return l.fail(e.Seq, "signer of key "+d.KeyID, "an active key of the account", d.Signer)
	}
	if f := l.signed(e, signer, m, s); f != nil {
		return f
	}
	k.operators = signer.operators
	l.keys[k.id] = k
	l.order = append(l.order, k)
	return nil
}

func (l *keyLog) retired(e tournament.KeyEvent, d tournament.KeyRetiredData) *Failure {
	k, signer := l.keys[d.KeyID], l.keys[d.Signer]
	switch {
	case k == nil || k.retiredSeq != 0:
		return l.fail(e.Seq, "key_retired "+d.KeyID, "an active key of the account", "none")
	case signer == nil || signer.retiredSeq != 0:
		return l.fail(e.Seq, "signer of the retirement of "+d.KeyID, "an active key of the account", d.Signer)
	}
	m := tournament.ActionMessage{Action: tournament.ActionRetireKey, Player: tournament.AccountID(l.res.Account),
		Payload: tournament.ActionPayload{KeyID: d.KeyID}}
	if f := l.signed(e, signer, m, keySignature{signedAt: d.SignedAt, signature: d.Signature, idempotencyKey: d.IdempotencyKey}); f != nil {
		return f
	}
	k.retiredSeq, k.retiredAt = e.Seq, e.At
	return nil
}

// recovered applies a recovery: every active key retired, the operator's key added.
func (l *keyLog) recovered(e tournament.KeyEvent, d tournament.KeysRecoveredData) *Failure {
	if emptyGameID(e.Data) {
		return l.fail(e.Seq, "auth.gameId of keys_recovered", "no member", `""`)
	}
	var active []string
	for _, k := range l.active() {
		active = append(active, k.id)
	}
	retired := slices.Clone(d.Retired)
	slices.Sort(active)
	slices.Sort(retired)
	if !slices.Equal(active, retired) {
		return l.fail(e.Seq, "keys retired by the recovery", fmt.Sprint(active), fmt.Sprint(retired))
	}
	k, f := l.newKey(e, d.KeyID, d.PublicKey, true)
	if f != nil {
		return f
	}
	for _, old := range l.active() {
		old.retiredSeq, old.retiredAt = e.Seq, e.At
	}
	l.keys[k.id] = k
	l.order = append(l.order, k)
	l.res.Recoveries = append(l.res.Recoveries, Recovery{Seq: e.Seq, At: tournament.FormatTime(e.At), KeyID: d.KeyID, Retired: d.Retired,
		Admin: string(d.Admin), Reason: d.Reason, auth: d.Auth, at: e.At, publicKey: d.PublicKey})
	return nil
}

// compare checks the server's list of the account's keys against the log: a key listed that
// no key event added is one the operator put there behind the log's back; a key of the log
// that is not listed is hidden. Keys the log has not reached yet (changed while it was read)
// are left out.
func (l *keyLog) compare(served []apiclient.AccountKey) *Failure {
	listed := map[string]bool{}
	for _, s := range served {
		if s.AddedSeq > l.seq {
			continue
		}
		listed[s.KeyId] = true
		k := l.keys[s.KeyId]
		if k == nil || k.addedSeq != s.AddedSeq || hex.EncodeToString(k.pub) != s.PublicKey {
			return l.fail(s.AddedSeq, "key "+s.KeyId, "a key the key log added",
				fmt.Sprintf("key %s (public key %s) listed, added at key event %d", s.KeyId, s.PublicKey, s.AddedSeq))
		}
		retired := int64(0)
		if s.RetiredSeq != nil && *s.RetiredSeq <= l.seq {
			retired = *s.RetiredSeq
		}
		if k.retiredSeq != retired || k.recovery != s.Recovery {
			return l.fail(s.AddedSeq, "key "+s.KeyId, fmt.Sprintf("retired at key event %d, recovery %t", k.retiredSeq, k.recovery),
				fmt.Sprintf("retired at key event %d, recovery %t", retired, s.Recovery))
		}
	}
	for _, k := range l.order {
		if !listed[k.id] {
			return l.fail(k.addedSeq, "key "+k.id, "listed among the account's keys", "not listed")
		}
	}
	return nil
}

// signedAction is a player's action as a lobby's log shows it.
type signedAction struct {
	lobby, game, player string
	seq, at             int64
	round               int
	typ                 tournament.EventType
	auth                *tournament.ActionAuth
	// bet is the game's bet (register, quick_join).
	bet int64
	// ruleset is the game's ruleset, which a quick join that named one must have.
	ruleset string
}

// failure names the action's event.
func (a signedAction) fail(item string, expected, found any) Failure {
	return Failure{Lobby: a.lobby, Seq: a.seq, Game: a.game, Round: a.round, Player: a.player,
		Item: item, Expected: fmt.Sprint(expected), Found: fmt.Sprint(found)}
}

// message rebuilds the message the player signed for the action, with payload's value for a
// commit or a reveal (from the round's transcript).
func (a signedAction) message(origin, value string) tournament.ActionMessage {
	m := tournament.ActionMessage{Origin: origin, Action: a.auth.Action, Player: tournament.AccountID(a.player),
		LobbyID: tournament.LobbyID(a.lobby), GameID: tournament.GameID(a.game),
		IdempotencyKey: a.auth.IdempotencyKey, KeyID: a.auth.KeyID, SignedAt: a.auth.SignedAt}
	switch a.auth.Action {
	case tournament.ActionRegister:
		m.Payload.Bet = a.bet
	case tournament.ActionQuickJoin:
		// The server chose the lobby: the player signed only the bet and the ruleset.
		m.LobbyID, m.GameID = "", ""
		m.Payload.BetSize, m.Payload.Ruleset = a.bet, a.auth.Ruleset
	case tournament.ActionCommit:
		m.Round, m.Payload.Commitment = a.round, value
	case tournament.ActionReveal:
		m.Round, m.Payload.Reveal = a.round, value
	}
	return m
}

// sealed reports whether the action's signature stays sealed until its round is over.
func (a signedAction) sealed() bool {
	return a.auth.Action == tournament.ActionCommit || a.auth.Action == tournament.ActionReveal
}

// checkKey checks what can be checked of an action before its payload is public: that it is
// signed when its player had a key, the action its event is, by a key of the player active at
// the event, in the signature's window. The key is nil for an unsigned action a keyless player
// was allowed to take.
func checkKey(l *keyLog, a signedAction) (*keySpan, *Failure) {
	if a.auth == nil {
		switch {
		case l.hadKeyAt(a.at):
			f := a.fail("signature", "the action signed by a key the player had then", "no signature")
			return nil, &f
		case l.signedUpAt != 0 && a.at < l.signedUpAt:
			// An account made with its key has had a key since it was made: an action before it
			// is one of a lobby dated back by the operator, to pass as a player's with no key then.
			f := a.fail("signature", "an action after the account's sign-up, at "+tournament.FormatTime(l.signedUpAt)+", signed", "an unsigned action before it")
			return nil, &f
		}
		return nil, nil
	}
	var f Failure
	k := l.keyAt(a.auth.KeyID, a.at)
	switch {
	case !slices.Contains(actionsOf[a.typ], a.auth.Action):
		f = a.fail("signed action", fmt.Sprint(actionsOf[a.typ]), a.auth.Action)
	case a.auth.Action == tournament.ActionQuickJoin && a.auth.Ruleset != "" && a.auth.Ruleset != a.ruleset:
		// The server chooses the game, but not its ruleset: the player signed the one it would play.
		f = a.fail("quick join's ruleset", "a game of the ruleset the player signed, "+a.auth.Ruleset, a.ruleset)
	case l.keys[a.auth.KeyID] == nil:
		f = a.fail("signing key", "a key of the player's key log", "key "+a.auth.KeyID)
	case k == nil:
		s, retired := l.keys[a.auth.KeyID], "never retired"
		if s.retiredSeq != 0 {
			retired = fmt.Sprintf("retired at key event %d, %s", s.retiredSeq, tournament.FormatTime(s.retiredAt))
		}
		f = a.fail("signing key", fmt.Sprintf("key %s active then (added at key event %d, %s; %s)", s.id, s.addedSeq, tournament.FormatTime(s.addedAt), retired),
			"an action at "+tournament.FormatTime(a.at))
	default:
		if err := tournament.CheckSignedAt(a.auth.SignedAt, a.at); err != nil {
			f = a.fail("signedAt", "within the signature's window of the event", err)
		} else {
			return k, nil
		}
	}
	return nil, &f
}

// checkSignature checks an action's signature under key k (value: the commitment or reveal of a
// sealed action, from the transcript; sig: its signature there, nil when not shown).
func checkSignature(origin string, k *keySpan, a signedAction, value string, sig *string) *Failure {
	text := a.auth.Signature
	if a.sealed() {
		if sig == nil {
			f := a.fail("signature of the "+string(a.auth.Action), "public with the "+string(a.auth.Action)+" in the transcript", "null")
			return &f
		}
		raw, err := hex.DecodeString(*sig)
		if sum := tournament.SealSignature(raw); err != nil || hex.EncodeToString(sum[:]) != a.auth.SealedSignature {
			f := a.fail("sealed signature", "blake2b-256 of the transcript's signature "+*sig, a.auth.SealedSignature)
			return &f
		}
		text = *sig
	}
	m := a.message(origin, value)
	raw, err := hex.DecodeString(text)
	if err != nil || !m.Verify(k.pub, raw) {
		msg, _ := m.Bytes()
		f := a.fail("signature", fmt.Sprintf("a signature by key %s of %q", k.id, msg), text)
		return &f
	}
	return nil
}

// replayKey names an action for the replay check: one signed request, one event.
type replayKey struct {
	player string
	action tournament.ActionName
	key    string
}

// signatures checks the run's signed actions and keeps each account's key log, read once.
type signatures struct {
	c *client
	// origin is the transparency log's origin ("": the server keeps no log).
	origin  string
	require bool
	// requireAdmin fails an admin's act that records no signature (see adminAct).
	requireAdmin bool
	logs         map[string]*keyLog
	// owners are the accounts of the keys of the key logs read, by key id.
	owners map[string]string
	// seen is where each signed request was first seen, to find a replay.
	seen map[replayKey]Failure
	// quickJoins are the quick joins seen, this run's and those the state kept (see
	// SeenQuickJoin).
	quickJoins map[replayKey]SeenQuickJoin
}

// SeenQuickJoin is a quick join kept in the --state file. A quick join's signature names no lobby
// or game (the server chooses them), so the operator could register the player a second time with
// it, in another game, as long as the signature is fresh (tournament.CheckSignedAt: 23 hours); a
// later run that resumes after the first game would not read the first event again. So the state
// keeps each quick join for quickJoinMemory after its event.
type SeenQuickJoin struct {
	Player         string `json:"player"`
	IdempotencyKey string `json:"idempotencyKey"`
	Lobby          string `json:"lobby"`
	Seq            int64  `json:"seq"`
	At             int64  `json:"at"`
}

// quickJoinMemory is how long the state keeps a quick join: longer than a signature stays fresh.
const quickJoinMemory = 48 * time.Hour

// remember adds the quick joins a --state file kept to what the run has seen.
func (s *signatures) remember(kept []SeenQuickJoin) {
	for _, q := range kept {
		k := replayKey{q.Player, tournament.ActionQuickJoin, q.IdempotencyKey}
		if _, ok := s.seen[k]; !ok {
			s.seen[k] = Failure{Lobby: q.Lobby, Seq: q.Seq, Player: q.Player}
			s.keepQuickJoin(k, q)
		}
	}
}

func (s *signatures) keepQuickJoin(k replayKey, q SeenQuickJoin) {
	if s.quickJoins == nil {
		s.quickJoins = map[replayKey]SeenQuickJoin{}
	}
	s.quickJoins[k] = q
}

// keptQuickJoins are the quick joins for the state to keep: those of events less than
// quickJoinMemory before now, in a stable order.
func (s *signatures) keptQuickJoins(now time.Time) []SeenQuickJoin {
	out := []SeenQuickJoin{}
	for _, q := range s.quickJoins {
		if q.At >= now.Add(-quickJoinMemory).UnixMilli() {
			out = append(out, q)
		}
	}
	slices.SortFunc(out, func(a, b SeenQuickJoin) int {
		return cmp.Or(cmp.Compare(a.At, b.At), strings.Compare(a.Player, b.Player), strings.Compare(a.IdempotencyKey, b.IdempotencyKey))
	})
	return out
}

// keyLog reads and replays an account's key log, once per run.
func (s *signatures) keyLog(ctx context.Context, account string) (*keyLog, error) {
	if l := s.logs[account]; l != nil {
		return l, nil
	}
	events, keys, err := s.c.accountKeys(ctx, account)
	if err != nil {
		return nil, err
	}
	l := replayKeyLog(account, s.origin, events, keys)
	s.bindOnce(l)
	s.logs[account] = l
	// Kept before its recoveries are checked: an admin's own key log is read once too.
	if err := s.checkRecoveries(ctx, l); err != nil {
		return nil, err
	}
	return l, nil
}

// bindOnce fails a key log that has a key another account's log has too: a key belongs to one
// account. A sign-up's message names no account (it makes one), so its event verifies in any
// key log: a copy of it is how the operator would bind a player's key to another account.
func (s *signatures) bindOnce(l *keyLog) {
	if s.owners == nil {
		s.owners = map[string]string{}
	}
	for _, k := range l.order {
		owner, ok := s.owners[k.id]
		switch {
		case !ok:
			s.owners[k.id] = l.res.Account
		case owner != l.res.Account && l.res.Failure == nil:
			l.res.Failure, l.res.OK = l.fail(k.addedSeq, "key "+k.id, "a key of this account only", "a key of account "+owner+" too"), false
		}
	}
}

// accounts are the results of the key logs read, in account order.
func (s *signatures) accounts() []AccountResult {
	out := make([]AccountResult, 0, len(s.logs))
	for _, l := range s.logs {
		out = append(out, *l.res)
	}
	slices.SortFunc(out, func(a, b AccountResult) int { return strings.Compare(a.Account, b.Account) })
	return out
}

// replayed reports the earlier event of a signed request seen twice.
func (s *signatures) replayed(a signedAction) *Failure {
	if a.auth == nil {
		return nil
	}
	k := replayKey{a.player, a.auth.Action, a.auth.IdempotencyKey}
	first, ok := s.seen[k]
	if !ok {
		s.seen[k] = a.fail("", "", "")
		if a.auth.Action == tournament.ActionQuickJoin {
			s.keepQuickJoin(k, SeenQuickJoin{Player: a.player, IdempotencyKey: a.auth.IdempotencyKey, Lobby: a.lobby, Seq: a.seq, At: a.at})
		}
		return nil
	}
	if first.Lobby == a.lobby && first.Seq == a.seq {
		return nil // the event a --state file kept, read again in its game
	}
	f := a.fail("replay", "one event per signed request", fmt.Sprintf("the %s of lobby %s event %d again (idempotency key %q)",
		a.auth.Action, first.Lobby, first.Seq, a.auth.IdempotencyKey))
	return &f
}

// pendingSignature is a commit or reveal whose signature waits for its round to be over.
type pendingSignature struct {
	action signedAction
	key    *keySpan
}

// action checks the signature of an action event of the current game by player (round: the
// round it names, 0 for none). A failure is listed by event and the replay goes on: every action
// not signed by its player is named.
func (r *lobbyRun) action(e tournament.LoggedEvent, player string, round int) error {
	var d struct {
		Auth *tournament.ActionAuth `json:"auth"`
	}
	if err := json.Unmarshal(e.Data, &d); err != nil {
		return r.fail("auth of "+string(e.Type), "an action's signature", string(e.Data))
	}
	g, sigs, rep := r.game, r.v.sigs, &r.res.Signatures
	a := signedAction{lobby: r.id, game: g.id, player: player, seq: e.Seq, at: e.At, round: round, typ: e.Type,
		auth: d.Auth, bet: g.config.BetSize, ruleset: g.config.Ruleset}
	l, err := sigs.keyLog(r.ctx, player)
	if err != nil {
		return err
	}
	k, f := checkKey(l, a)
	if f == nil {
		f = sigs.replayed(a)
	}
	switch {
	case f != nil:
		rep.Failures = append(rep.Failures, *f)
	case k == nil && sigs.require:
		rep.Failures = append(rep.Failures, a.fail("signature", "a signed action (--require-signatures)", "no signature"))
	case k == nil:
		rep.Unsigned++
	case a.sealed():
		g.sealed = append(g.sealed, pendingSignature{a, k})
	default:
		r.signature(a, k, "", nil)
	}
	return nil
}

// signature checks an action's signature and counts it.
func (r *lobbyRun) signature(a signedAction, k *keySpan, value string, sig *string) {
	rep := &r.res.Signatures
	if f := checkSignature(r.v.sigs.origin, k, a, value, sig); f != nil {
		rep.Failures = append(rep.Failures, *f)
		return
	}
	rep.Checked++
	if k.operators {
		rep.ByRecoveredKey++
	}
}

// sealedSignatures checks the signatures of the current round's commits and reveals that the
// round's transcript now shows (its round over or its game ended); those it still seals stay
// counted as pending.
func (r *lobbyRun) sealedSignatures() error {
	g := r.game
	if len(g.sealed) == 0 {
		return nil
	}
	if g.transcript != nil && g.transcript.Stage != apiclient.RoundStageClosed {
		g.transcript = nil // read while the round was sealed: read again
	}
	t, err := r.transcriptOf()
	if err != nil {
		return err
	}
	for _, p := range g.sealed {
		i := slices.IndexFunc(t.Moves, func(m apiclient.RoundMove) bool { return m.AccountId.String() == p.action.player })
		if i < 0 {
			r.res.Signatures.Failures = append(r.res.Signatures.Failures, p.action.fail("transcript", "a move of the player", "none"))
			continue
		}
		value, sig := t.Moves[i].Commitment, t.Moves[i].CommitSignature
		if p.action.auth.Action == tournament.ActionReveal {
			value, sig = t.Moves[i].Reveal, t.Moves[i].RevealSignature
		}
		if value == nil {
			r.res.Signatures.SealedPending++
			continue
		}
		r.signature(p.action, p.key, *value, sig)
	}
	g.sealed = nil
	return nil
}

// printSignatures prints a lobby's signature summary and every action not signed by its player.
func printSignatures(w io.Writer, s SignatureReport) {
	fmt.Fprintf(w, "  signatures: %d actions signed by their players, %d unsigned (no key then), %d sealed (checked once the round is over), %d by a key from a recovery by the operator\n",
		s.Checked, s.Unsigned, s.SealedPending, s.ByRecoveredKey)
	fmt.Fprintf(w, "  admins' acts: %d signed by their admin's key, %d unsigned (the operator's word alone)\n", s.AdminChecked, s.AdminUnsigned)
	for _, f := range s.Failures {
		fmt.Fprintf(w, "  NOT SIGNED BY THE PLAYER: %s\n", &f)
	}
	for _, f := range s.AdminFailures {
		fmt.Fprintf(w, "  NOT SIGNED BY THE ADMIN: %s\n", &f)
	}
}

// printAccounts prints a line for the key logs, then each failing one and every recovery.
func printAccounts(w io.Writer, accounts []AccountResult) {
	if len(accounts) == 0 {
		return
	}
	events, keys, recoveries, failed := 0, 0, 0, 0
	for _, a := range accounts {
		events, keys, recoveries = events+a.Events, keys+a.Keys, recoveries+len(a.Recoveries)
		if !a.OK {
			failed++
		}
	}
	status := "ok"
	if failed > 0 {
		status = fmt.Sprintf("FAILED (%d)", failed)
	}
	fmt.Fprintf(w, "key logs of %d accounts: %s: %d key events, %d keys, %d recoveries by the operator\n", len(accounts), status, events, keys, recoveries)
	for _, a := range accounts {
		if a.Failure != nil {
			fmt.Fprintf(w, "  %s\n", a.Failure)
		}
		for _, r := range a.Recoveries {
			signed := "unsigned"
			if r.SignedBy != "" {
				signed = "signed by the admin's key " + r.SignedBy
			}
			fmt.Fprintf(w, "  account %s key event %d: RECOVERY BY THE OPERATOR at %s (admin %s, %s, reason %q): key %s installed, keys %v retired; actions signed by it are the player's only on the operator's word\n",
				a.Account, r.Seq, r.At, r.Admin, signed, r.Reason, r.KeyID, r.Retired)
		}
	}
}
