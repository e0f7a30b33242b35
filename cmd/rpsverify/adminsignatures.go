package main

// This file checks the operator's own acts (issue 31: "every act of the operator is attributable
// too"): an event an admin's action wrote (a lobby created, its next config changed, the lobby
// closed, a game stopped, a player's keys recovered) records the admin's signature of the request
// (tournament.AdminAuth), which must verify under a key of that admin's own key log, active when
// the event happened, over a request that asked for what the event shows. An unsigned act is the
// operator's word, counted as such (the server's RPSD_ADMIN_KEYS=optional allows it for an admin
// without a key).

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/commitreveal/rps/tournament"
)

// adminEvents are the events an admin's act writes: the action whose signature each records, and
// the type of its data.
var adminEvents = map[tournament.EventType]struct {
	action tournament.ActionName
	data   reflect.Type
}{
	tournament.EventLobbyCreated:      {tournament.ActionCreateLobby, reflect.TypeFor[tournament.LobbyCreatedData]()},
	tournament.EventNextConfigChanged: {tournament.ActionSetNextConfig, reflect.TypeFor[tournament.NextConfigChangedData]()},
	tournament.EventLobbyClosed:       {tournament.ActionCloseLobby, reflect.TypeFor[tournament.LobbyClosedData]()},
	tournament.EventGameStopped:       {tournament.ActionStop, reflect.TypeFor[tournament.GameStoppedData]()},
}

// adminEventData is what an admin's event shows of the request it answered.
type adminEventData struct {
	Auth   *tournament.AdminAuth `json:"auth"`
	Name   string                `json:"name"`
	Config *tournament.Config    `json:"config"`
	Reason string                `json:"reason"`
}

// adminAct checks the admin's signature an event records, when the event is an admin's act: a
// failure is listed by event and the replay goes on.
func (r *lobbyRun) adminAct(e tournament.LoggedEvent) error {
	event, ok := adminEvents[e.Type]
	if !ok {
		return nil
	}
	action := event.action
	var d adminEventData
	if err := exactKeys(e.Data, event.data); err != nil {
		return r.fail("data of "+string(e.Type), "members named exactly as the contract names them", err)
	}
	if emptyGameID(e.Data) {
		return r.fail("auth.gameId of "+string(e.Type), "a game's id, or no member", `""`)
	}
	if err := json.Unmarshal(e.Data, &d); err != nil {
		return r.fail("data of "+string(e.Type), "an admin's act", string(e.Data))
	}
	rep := &r.res.Signatures
	fail := func(item string, expected, found any) error {
		f := Failure{Lobby: r.id, Seq: e.Seq, Game: string(e.GameID), Item: "admin's " + item, Expected: fmt.Sprint(expected), Found: fmt.Sprint(found)}
		if d.Auth != nil {
			f.Player = string(d.Auth.Admin)
		}
		rep.AdminFailures = append(rep.AdminFailures, f)
		return nil
	}
	if d.Auth == nil {
		switch {
		case e.Type == tournament.EventGameStopped && tournament.RulesStop(d.Reason):
			// The rules' own stop (rulesStop holds it to the rules).
		case r.v.sigs.requireAdmin:
			return fail("signature", "a signed act (--require-admin-signatures)", "no signature")
		default:
			rep.AdminUnsigned++
		}
		return nil
	}
	if d.Auth.Action != action {
		return fail("signed action", action, d.Auth.Action)
	}
	if asked, shown, ok := askedFor(d); !ok {
		return fail("request", "a request for what the event shows, "+shown, asked)
	}
	// A stop or a next config names the game it was signed for: the one stopped, or the one
	// whose end applies the config. A create or a close names none.
	var game tournament.GameID
	if tournament.AdminActionNamesGame(action) && r.game != nil {
		game = tournament.GameID(r.game.id)
	}
	if action == tournament.ActionCreateLobby {
		// The message names no lobby: the lobby's id is derived from the signature instead.
		if id, err := d.Auth.CreatedLobby(); err != nil || string(id) != r.id {
			return fail("lobby", fmt.Sprintf("the lobby the signed creation makes, %s", id), r.id)
		}
	}
	if d.Auth.GameID != game {
		return fail("game", fmt.Sprintf("the signature naming game %q, the lobby's current one", game), fmt.Sprintf("game %q", d.Auth.GameID))
	}
	l, err := r.v.sigs.keyLog(r.ctx, string(d.Auth.Admin))
	if err != nil {
		return err
	}
	if f := r.v.sigs.adminSignature(l, d.Auth, e.At, tournament.LobbyID(r.id), ""); f != "" {
		return fail("signature", "a signature by a key of admin "+string(d.Auth.Admin)+" active then", f)
	}
	a := signedAction{lobby: r.id, game: string(e.GameID), player: string(d.Auth.Admin), seq: e.Seq, at: e.At, typ: e.Type, auth: d.Auth.Audited()}
	if f := r.v.sigs.replayed(a); f != nil {
		rep.AdminFailures = append(rep.AdminFailures, *f)
		return nil
	}
	rep.AdminChecked++
	return nil
}

// emptyGameID reports whether data's auth has a gameId member that is empty: the message names no
// game for it here, where a reader that takes the member as it is would name "" (the contract: a
// UUID, or no member).
func emptyGameID(data []byte) bool {
	var d struct {
		Auth *struct {
			GameID *string `json:"gameId"`
		} `json:"auth"`
	}
	return json.Unmarshal(data, &d) == nil && d.Auth != nil && d.Auth.GameID != nil && *d.Auth.GameID == ""
}

// askedFor compares what the signed request asked for with what the event shows: the lobby's
// name and config, the next config, the stop's reason (each as the server reads a request: a
// config's omitted members take their defaults, a text is normalized). ok is false, with both
// sides, when they differ.
func askedFor(d adminEventData) (asked, shown string, ok bool) {
	var req struct {
		Name   string          `json:"name"`
		Config json.RawMessage `json:"config"`
		Reason string          `json:"reason"`
	}
	// Read as signed: the signature covers the request's RFC 8785 form.
	request, err := tournament.Canonical(d.Auth.Request)
	if err != nil {
		return string(d.Auth.Request), "a JSON request", false
	}
	if len(request) == 0 || bytes.Equal(request, []byte("null")) {
		request = []byte("{}")
	}
	if err := json.Unmarshal(request, &req); err != nil {
		return string(d.Auth.Request), "a JSON object", false
	}
	switch d.Auth.Action {
	case tournament.ActionCreateLobby:
		name, _, err := tournament.Name("name", req.Name, tournament.MaxLobbyNameLength)
		if err != nil || name != d.Name {
			return fmt.Sprintf("name %q", req.Name), fmt.Sprintf("name %q", d.Name), false
		}
		return sameConfig(req.Config, d.Config)
	case tournament.ActionSetNextConfig:
		// The request's body is the config itself.
		return sameConfig(request, d.Config)
	case tournament.ActionStop:
		reason, err := tournament.Text("reason", req.Reason, tournament.MaxStopReasonLength)
		if err != nil || reason != d.Reason {
			return fmt.Sprintf("reason %q", req.Reason), fmt.Sprintf("reason %q", d.Reason), false
		}
	}
	return "", "", true
}

// sameConfig compares the config a request asked for with the one its event shows.
func sameConfig(request json.RawMessage, shown *tournament.Config) (asked, shownText string, ok bool) {
	c, err := tournament.ConfigOfRequest(request)
	if err != nil || shown == nil || c != *shown {
		shownJSON, _ := json.Marshal(shown)
		return fmt.Sprintf("config %s", request), fmt.Sprintf("config %s", shownJSON), false
	}
	return "", "", true
}

// adminSignature checks an admin's signature of an act at instant at, on lobby or account, under
// the admin's key log l; it returns what is wrong ("" when it verifies). The message names the
// admin's account as its player, so a key of another account's log never verifies it.
func (s *signatures) adminSignature(l *keyLog, auth *tournament.AdminAuth, at int64, lobby tournament.LobbyID, account tournament.AccountID) string {
	k := l.keyAt(auth.KeyID, at)
	if k == nil {
		return fmt.Sprintf("key %s, not an active key of the admin's key log at %s", auth.KeyID, tournament.FormatTime(at))
	}
	if err := tournament.CheckSignedAt(auth.SignedAt, at); err != nil {
		return err.Error()
	}
	request, err := tournament.Canonical(auth.Request)
	if err != nil {
		return fmt.Sprintf("a request that is not JSON: %v", err)
	}
	m := auth.Message(s.origin, lobby, account)
	m.Payload.Request = request
	sig, err := hex.DecodeString(auth.Signature)
	if err != nil || !m.Verify(k.pub, sig) {
		msg, _ := m.Bytes()
		return fmt.Sprintf("signature %s does not verify over %q", auth.Signature, msg)
	}
	return ""
}

// checkRecoveries checks the admin's signature of each recovery in an account's key log that
// records one, against the admin's own key log: one that does not verify fails the key log; one
// that does names the admin key that made it.
func (s *signatures) checkRecoveries(ctx context.Context, l *keyLog) error {
	for i := range l.res.Recoveries {
		rec := &l.res.Recoveries[i]
		if rec.auth == nil {
			continue
		}
		admin, err := s.keyLog(ctx, rec.Admin)
		if err != nil {
			return err
		}
		var wrong string
		switch {
		case rec.auth.Action != tournament.ActionRecoverKeys || string(rec.auth.Admin) != rec.Admin:
			wrong = fmt.Sprintf("the signature of %s by admin %s", rec.auth.Action, rec.auth.Admin)
		case !recoveryAsked(rec):
			wrong = fmt.Sprintf("a signed request for another key or reason: %s", rec.auth.Request)
		default:
			wrong = s.adminSignature(admin, rec.auth, rec.at, "", tournament.AccountID(l.res.Account))
		}
		if wrong != "" {
			if l.res.Failure == nil {
				l.res.Failure = l.fail(rec.Seq, "admin's signature of the recovery", "a signature by a key of admin "+rec.Admin+" active then", wrong)
				l.res.OK = false
			}
			continue
		}
		rec.SignedBy = rec.auth.KeyID
	}
	return nil
}

// recoveryAsked reports whether a recovery's signed request asked for the key and reason its
// event shows.
func recoveryAsked(rec *Recovery) bool {
	var req struct {
		PublicKey string `json:"publicKey"`
		Reason    string `json:"reason"`
	}
	request, err := tournament.Canonical(rec.auth.Request)
	if err != nil || json.Unmarshal(request, &req) != nil {
		return false
	}
	reason, err := tournament.Text("reason", req.Reason, tournament.MaxStopReasonLength)
	return err == nil && reason == rec.Reason && req.PublicKey == rec.publicKey
}
