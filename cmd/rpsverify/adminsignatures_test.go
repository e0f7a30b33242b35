package main

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/commitreveal/rps/internal/apiclient"
	"github.com/commitreveal/rps/internal/apitest"
	"github.com/commitreveal/rps/tournament"
)

// adminLobby has an admin with a key create a lobby, change its next config, stop its game and
// close it, each signed, and returns the lobby.
func (s *server) adminLobby(admin apitest.Player) string {
	s.t.Helper()
	create := []byte(`{"config":{"betSize":10,"playersCountLimit":2,"ruleset":"rpsls"},"name":"  Signed  lobby "}`)
	var l struct {
		ID string `json:"id"`
	}
	s.Do("POST", "/v1/lobbies", s.Admin, json.RawMessage(create), s.AdminSigned(admin, tournament.ActionCreateLobby, "", "", create)...).
		Want(s.t, http.StatusCreated).Decode(s.t, &l)
	next := []byte(`{"betSize":20,"playersCountLimit":3,"moveTimeoutMs":null}`)
	s.Do("PUT", "/v1/lobbies/"+l.ID+"/next-config", s.Admin, json.RawMessage(next),
		s.AdminSigned(admin, tournament.ActionSetNextConfig, l.ID, "", next)...).Want(s.t, http.StatusOK)
	stop := []byte(`{"reason":"maintenance"}`)
	s.Do("POST", "/v1/lobbies/"+l.ID+"/stop", s.Admin, json.RawMessage(stop),
		s.AdminSigned(admin, tournament.ActionStop, l.ID, "", stop)...).Want(s.t, http.StatusOK)
	s.Do("POST", "/v1/lobbies/"+l.ID+"/close", s.Admin, nil, s.AdminSigned(admin, tournament.ActionCloseLobby, l.ID, "", nil)...).
		Want(s.t, http.StatusOK)
	s.waitPublished()
	return l.ID
}

// twoSignedStops has admin create a lobby and stop its first two games, each signed, and returns
// the lobby.
func (s *server) twoSignedStops(admin apitest.Player) string {
	s.t.Helper()
	create := []byte(`{"config":{"betSize":10,"playersCountLimit":2},"name":"stopped twice"}`)
	var l struct {
		ID string `json:"id"`
	}
	s.Do("POST", "/v1/lobbies", s.Admin, json.RawMessage(create), s.AdminSigned(admin, tournament.ActionCreateLobby, "", "", create)...).
		Want(s.t, http.StatusCreated).Decode(s.t, &l)
	for _, reason := range []string{"first", "second"} {
		stop := []byte(`{"reason":"` + reason + `"}`)
		s.Do("POST", "/v1/lobbies/"+l.ID+"/stop", s.Admin, json.RawMessage(stop), s.AdminSigned(admin, tournament.ActionStop, l.ID, "", stop)...).
			Want(s.t, http.StatusOK)
	}
	s.waitPublished()
	return l.ID
}

// editData rewrites the data of the lobby's first event of type typ.
func (s *server) editData(lobby string, typ tournament.EventType, edit func(d map[string]any)) int64 {
	s.t.Helper()
	var seq int64
	s.rewriteLog(lobby, func(es []tournament.LoggedEvent) []tournament.LoggedEvent {
		for i := range es {
			if es[i].Type == typ {
				d := authOf(s.t, es[i])
				edit(d)
				es[i].Data, _ = tournament.Canonical(d)
				seq = es[i].Seq
				return es
			}
		}
		s.t.Fatalf("no %s in lobby %s", typ, lobby)
		return es
	})
	return seq
}

// TestVerifierChecksTheAdminsSignatures: an admin with a key signs its acts, and rpsverify checks
// each one the log records against the admin's own key log: a lobby created, its next config,
// a stop and the close in the lobby's log, a recovery in the player's key log (reported as signed
// by the admin's key). Then the operator rewrites the log (chain re-hashed, transparency log
// rebuilt): a config other than the one the admin signed, a signature by a key not the
// admin's, one admin's signed close copied onto another lobby; rpsverify names each event.
func TestVerifierChecksTheAdminsSignatures(t *testing.T) {
	s := newSigningServer(t)
	p := s.signUp(1)
	// Made before the admin has a key: the operator's word alone.
	unsignedLobby := s.lobby(map[string]any{"betSize": 10, "playersCountLimit": 2})
	admin := s.BindAdminKey()
	lobby := s.adminLobby(admin)
	recovery := []byte(`{"publicKey":"` + apiclient.NewPlayerKey().PublicKey() + `","reason":"lost phone"}`)
	s.Do("POST", "/v1/admin/accounts/"+p.ID+"/keys", s.Admin, json.RawMessage(recovery),
		s.AdminSigned(admin, tournament.ActionRecoverKeys, "", p.ID, recovery)...).Want(t, http.StatusCreated)
	s.waitPublished()

	code, out, rep := s.verify("--account", p.ID, "--json")
	if code != exitOK {
		t.Fatalf("the admin's signed acts: exit %d\n%s", code, out)
	}
	for _, l := range rep.Lobbies {
		want := SignatureReport{AdminChecked: 4}
		if l.Lobby == unsignedLobby {
			want = SignatureReport{AdminUnsigned: 1}
		}
		if l.Signatures.AdminChecked != want.AdminChecked || l.Signatures.AdminUnsigned != want.AdminUnsigned || len(l.Signatures.AdminFailures) != 0 {
			t.Errorf("lobby %s: %+v, want %d admin's acts checked and %d unsigned", l.Lobby, l.Signatures, want.AdminChecked, want.AdminUnsigned)
		}
	}
	var recovered *AccountResult
	for i, a := range rep.Accounts {
		if a.Account == p.ID {
			recovered = &rep.Accounts[i]
		}
	}
	if recovered == nil || !recovered.OK || len(recovered.Recoveries) != 1 || recovered.Recoveries[0].SignedBy != admin.Key.ID() {
		t.Fatalf("the signed recovery: %+v", recovered)
	}
	_, text, _ := s.verify("--account", p.ID)
	for _, want := range []string{"admins' acts: 4 signed by their admin's key, 0 unsigned", "signed by the admin's key " + admin.Key.ID()} {
		if !strings.Contains(text, want) {
			t.Errorf("the report lacks %q:\n%s", want, text)
		}
	}

	operatorKey := apiclient.NewPlayerKey()
	cases := []struct {
		name string
		// forge rewrites a lobby's log and returns the lobby and event the verifier must name,
		// with the failure's item.
		forge func() (lobby string, seq int64, item string)
	}{
		{"a next config the admin did not sign", func() (string, int64, string) {
			// The next game opens with it too, as the operator would have it.
			var seq int64
			s.rewriteLog(lobby, func(es []tournament.LoggedEvent) []tournament.LoggedEvent {
				for i := range es {
					switch {
					case es[i].Type == tournament.EventNextConfigChanged:
						seq = es[i].Seq
					case es[i].Type == tournament.EventGameOpened && seq != 0:
					default:
						continue
					}
					d := authOf(t, es[i])
					d["config"].(map[string]any)["betSize"] = 1
					es[i].Data, _ = tournament.Canonical(d)
				}
				return es
			})
			return lobby, seq, "admin's request"
		}},
		{"a stop signed by a key not the admin's", func() (string, int64, string) {
			lobby := s.adminLobby(admin)
			seq := s.editData(lobby, tournament.EventGameStopped, func(d map[string]any) {
				auth := d["auth"].(map[string]any)
				raw, _ := json.Marshal(auth)
				var a tournament.AdminAuth
				_ = json.Unmarshal(raw, &a)
				sig, err := operatorKey.Sign(a.Message(logOrigin, tournament.LobbyID(lobby), ""), time.Now())
				if err != nil {
					t.Fatal(err)
				}
				auth["keyId"], auth["signature"] = sig.KeyID, sig.Value
			})
			return lobby, seq, "admin's signature"
		}},
		{"a signed stop moved to the next game's stop", func() (string, int64, string) {
			lobby := s.twoSignedStops(admin)
			var seq int64
			s.rewriteLog(lobby, func(es []tournament.LoggedEvent) []tournament.LoggedEvent {
				var stops []int
				for i, e := range es {
					if e.Type == tournament.EventGameStopped {
						stops = append(stops, i)
					}
				}
				first, second := authOf(t, es[stops[0]]), authOf(t, es[stops[1]])
				second["auth"], second["reason"] = first["auth"], first["reason"]
				delete(first, "auth")
				es[stops[0]].Data, _ = tournament.Canonical(first)
				es[stops[1]].Data, _ = tournament.Canonical(second)
				seq = es[stops[1]].Seq
				return es
			})
			return lobby, seq, "admin's game"
		}},
		{"a signed creation copied onto another lobby", func() (string, int64, string) {
			// Same name and config: only the lobby's id, derived from the signature, tells them apart.
			a, b := s.adminLobby(admin), s.adminLobby(admin)
			var created any
			s.rewriteLog(a, func(es []tournament.LoggedEvent) []tournament.LoggedEvent {
				created = authOf(t, es[0])["auth"]
				return es
			})
			seq := s.editData(b, tournament.EventLobbyCreated, func(d map[string]any) { d["auth"] = created })
			return b, seq, "admin's lobby"
		}},
		{"a signed close copied onto another lobby", func() (string, int64, string) {
			lobby, other := s.adminLobby(admin), unsignedLobby
			var closeAuth any
			var closedAt int64
			s.rewriteLog(lobby, func(es []tournament.LoggedEvent) []tournament.LoggedEvent {
				for _, e := range es {
					if e.Type == tournament.EventLobbyClosed {
						closeAuth, closedAt = authOf(t, e)["auth"], e.At
					}
				}
				return es
			})
			var seq int64
			s.rewriteLog(other, func(es []tournament.LoggedEvent) []tournament.LoggedEvent {
				last := es[len(es)-1]
				data, _ := tournament.Canonical(map[string]any{"auth": closeAuth})
				seq = last.Seq + 1
				// At the instant of the close it copies, when the admin's key was active.
				return append(es, tournament.LoggedEvent{Type: tournament.EventLobbyClosed, LobbyID: last.LobbyID, At: closedAt, Data: data})
			})
			return other, seq, "admin's signature"
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forged, seq, item := c.forge()
			s.rebuildLog()
			code, out, rep := s.verify("--lobby", forged, "--json")
			if code != exitFailed || len(rep.Lobbies) != 1 || rep.Lobbies[0].OK || rep.Log == nil || !rep.Log.OK {
				t.Fatalf("after the forgery: exit %d, want %d, with the rebuilt log verifying\n%s", code, exitFailed, out)
			}
			fs := rep.Lobbies[0].Signatures.AdminFailures
			if rep.Lobbies[0].Failure != nil || len(fs) != 1 || fs[0].Lobby != forged || fs[0].Seq != seq || fs[0].Item != item ||
				fs[0].Player != admin.ID {
				t.Fatalf("admin's failures %+v (lobby failure %v), want one at lobby %s event %d, %q by admin %s", fs, rep.Lobbies[0].Failure, forged, seq, item, admin.ID)
			}
			_, text, _ := s.verify("--lobby", forged)
			if !strings.Contains(text, "NOT SIGNED BY THE ADMIN: lobby "+forged) {
				t.Errorf("the report does not name the event:\n%s", text)
			}
			t.Logf("%s", text)
		})
	}
}

// TestSignedRecoveries: a recovery that records its admin's signature is reported as signed by
// that admin's key when the signature verifies under the admin's key log, at the recovery's
// instant, over a request for the key and reason the event shows; otherwise the player's key log
// fails at the recovery, whatever else is right.
func TestSignedRecoveries(t *testing.T) {
	const adminAccount = "00000000-0000-4000-8000-000000000001"
	adminKey, stranger, lost, given := testKey(10), testKey(11), testKey(12), testKey(13)
	ab := &keyLogBuilder{t: t, account: adminAccount}
	ab.signUp(adminKey, "admin")
	adminLog := replayKeyLog(adminAccount, logOrigin, ab.events, listed(listing{adminKey, 1, 0, false}))

	request := []byte(`{"publicKey":"` + pubHex(given) + `","reason":"lost phone"}`)
	// sign is the admin's signature of the recovery, by key, over request, edited by edit.
	sign := func(key ed25519.PrivateKey, request []byte, edit func(*tournament.AdminAuth)) *tournament.AdminAuth {
		a := &tournament.AdminAuth{Action: tournament.ActionRecoverKeys, Admin: adminAccount, IdempotencyKey: "recover-1", KeyID: idOf(key),
			Request: request, SignedAt: keyEventAt(2) - 1000}
		sig, err := a.Message(logOrigin, "", testAccount).Sign(key)
		if err != nil {
			t.Fatal(err)
		}
		a.Signature = hex.EncodeToString(sig)
		if edit != nil {
			edit(a)
		}
		return a
	}
	cases := []struct {
		name     string
		auth     *tournament.AdminAuth
		signedBy string
	}{
		{"signed by the admin's key", sign(adminKey, request, nil), idOf(adminKey)},
		{"unsigned", nil, ""},
		{"signed by a key not the admin's", sign(stranger, request, nil), ""},
		{"signed for another reason", sign(adminKey, []byte(`{"publicKey":"`+pubHex(given)+`","reason":"asked nicely"}`), nil), ""},
		{"signed for another key", sign(adminKey, []byte(`{"publicKey":"`+pubHex(stranger)+`","reason":"lost phone"}`), nil), ""},
		{"signed by another admin", sign(adminKey, request, func(a *tournament.AdminAuth) { a.Admin = testAccount }), ""},
		{"signed as another action", sign(adminKey, request, func(a *tournament.AdminAuth) { a.Action = tournament.ActionStop }), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &keyLogBuilder{t: t}
			b.signUp(lost, "player")
			b.append(&tournament.KeysRecoveredData{Auth: c.auth, KeyID: idOf(given), PublicKey: pubHex(given), Retired: []string{idOf(lost)},
				Admin: adminAccount, Reason: "lost phone"})
			l := replayKeyLog(testAccount, logOrigin, b.events, listed(listing{lost, 1, 2, false}, listing{given, 2, 0, true}))
			s := &signatures{origin: logOrigin, logs: map[string]*keyLog{adminAccount: adminLog}}
			if err := s.checkRecoveries(t.Context(), l); err != nil {
				t.Fatal(err)
			}
			rec := l.res.Recoveries[0]
			wantOK := c.auth == nil || c.signedBy != ""
			if l.res.OK != wantOK || rec.SignedBy != c.signedBy {
				t.Fatalf("ok %t (failure %v), signed by %q; want ok %t, signed by %q", l.res.OK, l.res.Failure, rec.SignedBy, wantOK, c.signedBy)
			}
			if !wantOK && (l.res.Failure.Seq != 2 || l.res.Failure.Item != "admin's signature of the recovery") {
				t.Errorf("failure %+v, want one at the recovery, key event 2", l.res.Failure)
			}
		})
	}
}

// TestVerifierTellsAnAdminsStopFromTheRules: a stop whose reason is one the rules give (no
// admin's may give it) must be where the rules would make it, so that the operator cannot pass
// an admin's stop off as the rules', with no admin's signature to show: a stop in moves rewritten
// as max_extensions (players had committed) or as lobby closed (the lobby was not closed) is
// named. With --require-admin-signatures, an admin's act that records no signature fails.
func TestVerifierTellsAnAdminsStopFromTheRules(t *testing.T) {
	s := newServer(t)
	cases := []struct {
		reason string
		// inMoves has the admin stop the game after a commit, not in registration.
		inMoves bool
	}{
		{tournament.ReasonMaxExtensions, true},
		{tournament.ReasonLobbyClosed, false},
		{tournament.ReasonMaxRounds, true},
	}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			ps := s.players(2)
			lobby := s.lobby(map[string]any{"betSize": 10, "playersCountLimit": 2, "maxExtensions": 2})
			if c.inMoves {
				s.register(lobby, ps...) // full: round 1 starts
				s.commit(lobby, ps[0], "1")
			} else {
				s.register(lobby, ps[0])
			}
			s.do("POST", "/v1/lobbies/"+lobby+"/stop", s.Admin, map[string]any{"reason": "the admin's own"}, http.StatusOK)
			if code, out, _ := s.verify("--lobby", lobby); code != exitOK {
				t.Fatalf("the admin's stop: exit %d\n%s", code, out)
			}
			if code, out, _ := s.verify("--lobby", lobby, "--require-admin-signatures"); code != exitFailed ||
				!strings.Contains(out, "admin's signature: expected a signed act (--require-admin-signatures), found no signature") {
				t.Fatalf("an unsigned admin's stop with --require-admin-signatures: exit %d\n%s", code, out)
			}
			seq := s.editData(lobby, tournament.EventGameStopped, func(d map[string]any) { d["reason"] = c.reason })
			code, out, rep := s.verify("--lobby", lobby, "--json")
			if code != exitFailed || rep.Lobbies[0].Failure == nil || rep.Lobbies[0].Failure.Seq != seq || rep.Lobbies[0].Failure.Item != "stop reason" {
				t.Fatalf("a stop passed off as %s: exit %d, want the stop's event %d named\n%s", c.reason, code, seq, out)
			}
		})
	}
}

// TestVerifierReadsMembersExactly: encoding/json matches "reaſon" to a field named reason, so an
// operator who wrote both {"reason": shown to readers, "reaſon": the admin's signed one} would
// have passed; a member the contract does not name, at any depth, or one named twice now fails
// the lobby at that event.
func TestVerifierReadsMembersExactly(t *testing.T) {
	s := newSigningServer(t)
	admin := s.BindAdminKey()
	for _, c := range []struct {
		typ  tournament.EventType
		edit func(d map[string]any)
	}{
		{tournament.EventGameStopped, func(d map[string]any) { d["reaſon"], d["reason"] = d["reason"], "cheating players banned" }},
		{tournament.EventNextConfigChanged, func(d map[string]any) {
			c := d["config"].(map[string]any)
			c["betſize"], c["betSize"] = c["betSize"], 1
		}},
		{tournament.EventLobbyCreated, func(d map[string]any) { d["Name"] = "another name" }},
		// An empty gameId is no game here, and a game "" to a reader that takes the member as is.
		{tournament.EventLobbyClosed, func(d map[string]any) { d["auth"].(map[string]any)["gameId"] = "" }},
	} {
		t.Run(string(c.typ), func(t *testing.T) {
			lobby := s.adminLobby(admin)
			seq := s.editData(lobby, c.typ, c.edit)
			code, out, rep := s.verify("--lobby", lobby, "--json")
			item := "data of " + string(c.typ)
			if c.typ == tournament.EventLobbyClosed {
				item = "auth.gameId of lobby_closed"
			}
			if f := rep.Lobbies[0].Failure; code != exitFailed || f == nil || f.Seq != seq || f.Item != item {
				t.Fatalf("exit %d, want event %d named\n%s", code, seq, out)
			}
		})
	}
}

// TestExactKeys: members are matched by their exact names, at every depth, once each; values a
// field leaves open are not looked into.
func TestExactKeys(t *testing.T) {
	type inner struct {
		BetSize int64 `json:"betSize"`
	}
	type data struct {
		Reason string          `json:"reason"`
		Config *inner          `json:"config"`
		List   []inner         `json:"list"`
		Open   json.RawMessage `json:"open"`
	}
	for body, want := range map[string]string{
		`{"reason":"x","config":{"betSize":1},"list":[{"betSize":2}],"open":{"anything":[1]}}`: "",
		`{"config":null,"list":null}`:            "",
		`{"Reason":"x"}`:                         `member "Reason"`,
		`{"reaſon":"x"}`:                         `member "reaſon"`,
		`{"config":{"betSize":1,"betſize":2}}`:   `member "config.betſize"`,
		`{"list":[{"betSize":1},{"BETSIZE":2}]}`: `member "list[1].BETSIZE"`,
		`{"reason":"x","reason":"y"}`:            `member "reason" twice`,
		`{"reason":"x","extra":1}`:               `member "extra"`,
		`["reason"]`:                             "an object",
		`null`:                                   "an object, not null",
		`{"config":{"betSize":null}}`:            "",
	} {
		err := exactKeys([]byte(body), reflect.TypeFor[data]())
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
}

// TestVerifierHoldsGamesToTheAdminsConfigs: a game opens with the config the admin's acts gave
// it (the lobby's own for its first game, the last next config set while the game before it ran,
// or else that game's), and none opens once the lobby closed, which closes once; an operator who
// rewrote a game's bet, or appended a game or a close, is named at that event (found by the
// second review: every signature held, and the games ran on other terms).
func TestVerifierHoldsGamesToTheAdminsConfigs(t *testing.T) {
	s := newServer(t)
	// played is a lobby whose first game stops after a next config of bet 20, whose second game
	// then opens with it, and which closes in that game's registration.
	played := func() string {
		lobby := s.lobby(map[string]any{"betSize": 10, "playersCountLimit": 2})
		s.do("PUT", "/v1/lobbies/"+lobby+"/next-config", s.Admin, map[string]any{"betSize": 20, "playersCountLimit": 2}, http.StatusOK)
		s.do("POST", "/v1/lobbies/"+lobby+"/stop", s.Admin, map[string]any{"reason": "test"}, http.StatusOK)
		s.do("POST", "/v1/lobbies/"+lobby+"/close", s.Admin, nil, http.StatusOK)
		return lobby
	}
	lobby := played()
	if code, out, _ := s.verify("--lobby", lobby); code != exitOK {
		t.Fatalf("the lobby as played: exit %d\n%s", code, out)
	}
	bet := func(n int, betSize int) func(es []tournament.LoggedEvent) ([]tournament.LoggedEvent, int64) {
		return func(es []tournament.LoggedEvent) ([]tournament.LoggedEvent, int64) {
			i := seqOf(es, tournament.EventGameOpened, n)
			d := authOf(t, es[i])
			d["config"].(map[string]any)["betSize"] = betSize
			es[i].Data, _ = tournament.Canonical(d)
			return es, es[i].Seq
		}
	}
	appended := func(typ tournament.EventType, data string) func(es []tournament.LoggedEvent) ([]tournament.LoggedEvent, int64) {
		return func(es []tournament.LoggedEvent) ([]tournament.LoggedEvent, int64) {
			last := es[len(es)-1]
			e := tournament.LoggedEvent{Type: typ, LobbyID: last.LobbyID, At: last.At, Data: json.RawMessage(data)}
			if typ == tournament.EventGameOpened {
				e.GameID = tournament.GameID(uuid.NewString())
			}
			return append(es, e), last.Seq + 1
		}
	}
	for _, c := range []struct {
		name string
		edit func(es []tournament.LoggedEvent) ([]tournament.LoggedEvent, int64)
		item string
	}{
		{"the first game's bet, not the lobby's", bet(1, 500), "config of game_opened"},
		{"the second game's bet, not the next config's", bet(2, 10), "config of game_opened"},
		{"a game opened once the lobby closed", appended(tournament.EventGameOpened, `{"config":{},"number":3,"rulesetHash":"00"}`), "game_opened"},
		{"the lobby closed twice", appended(tournament.EventLobbyClosed, `{}`), "lobby_closed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			lobby := played()
			var seq int64
			s.rewriteLog(lobby, func(es []tournament.LoggedEvent) []tournament.LoggedEvent {
				es, seq = c.edit(es)
				return es
			})
			code, out, rep := s.verify("--lobby", lobby, "--json")
			if f := rep.Lobbies[0].Failure; code != exitFailed || f == nil || f.Seq != seq || f.Item != c.item {
				t.Fatalf("exit %d, want event %d named for %q\n%s", code, seq, c.item, out)
			}
		})
	}
}
