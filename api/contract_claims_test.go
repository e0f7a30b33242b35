package api_test

// Claims of openapi.yaml's prose held to what the server does, through the HTTP API.

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/commitreveal/rps/api"
	"github.com/commitreveal/rps/internal/apiclient"
	"github.com/commitreveal/rps/internal/apitest"
	"github.com/commitreveal/rps/tournament"
)

// TestAuditActionsAreTheContracts: every action the audit log records is one that
// AuditEntry.action lists, the token an admin issues and a key recovery included (both
// operations say they are recorded there).
func TestAuditActionsAreTheContracts(t *testing.T) {
	e := apitest.Start(t)
	alice := e.NewPlayer("alice", 100)
	e.Do("POST", "/v1/admin/accounts/"+alice.ID+"/token", e.Admin, nil, "Idempotency-Key", apiclient.NewKey()).Want(t, http.StatusOK)
	e.Do("POST", "/v1/admin/accounts/"+alice.ID+"/keys", e.Admin,
		map[string]any{"publicKey": apiclient.NewPlayerKey().PublicKey(), "reason": "lost phone"},
		"Idempotency-Key", apiclient.NewKey()).Want(t, http.StatusCreated)

	var page api.AuditPage
	e.Do("GET", "/v1/admin/audit", e.Admin, nil).Want(t, http.StatusOK).Decode(t, &page)
	listed := contract(t).Components.Schemas["AuditEntry"].Value.Properties["action"].Value.Description
	seen := map[string]bool{}
	for _, entry := range page.Entries {
		seen[entry.Action] = true
		if !strings.Contains(listed, "`"+entry.Action+"`") {
			t.Errorf("the audit log records the action %q, which AuditEntry.action does not list", entry.Action)
		}
	}
	if !seen["issue_token"] || !seen["recover_keys"] {
		t.Errorf("the audit log's actions %v lack issue_token or recover_keys", seen)
	}
}

// TestEachOperationSaysWhoMayCall: every operation's description opens with who may call it,
// in one of the contract's phrases, and the key operations, which admins use for their own keys,
// say so (they said "Player."): an admin adds a second key and retires the first.
func TestEachOperationSaysWhoMayCall(t *testing.T) {
	spec := contract(t)
	phrases := []string{"Anonymous", "Anyone (authentication optional", "Player only", "Player or admin", "Admin only"}
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			if path == "/healthz" || path == "/readyz" || path == "/openapi.yaml" {
				continue // probes and the contract itself, which say "Anonymous" at their end
			}
			says := false
			for _, p := range phrases {
				says = says || strings.HasPrefix(op.Description, p)
			}
			if !says {
				t.Errorf("%s %s (%s) does not open with who may call it: %.40q", method, path, op.OperationID, op.Description)
			}
		}
	}

	e := apitest.Start(t)
	admin := e.BindAdminKey()
	second := apiclient.NewPlayerKey()
	e.Do("POST", "/v1/me/keys", admin.Token, map[string]any{"publicKey": second.PublicKey()},
		e.Signed(admin, apitest.Act{Action: tournament.ActionAddKey, Payload: tournament.ActionPayload{PublicKey: second.PublicKey()}})...).
		Want(t, http.StatusCreated)
	first := admin.Key.ID()
	e.Do("DELETE", "/v1/me/keys/"+first, admin.Token, nil,
		e.Signed(admin, apitest.Act{Action: tournament.ActionRetireKey, Payload: tournament.ActionPayload{KeyID: first}})...).
		Want(t, http.StatusOK)
}

// TestSignatureRefusalsAreNotStored: a refusal of the signature, stale_signature (409) too, is
// not stored under the request's Idempotency-Key, as the contract says: the player reads the
// lobby, signs again for its current game and retries under the same key, and is registered.
func TestSignatureRefusalsAreNotStored(t *testing.T) {
	e := apitest.Start(t)
	alice := e.NewPlayer("alice", 100)
	l := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 3})
	lobby, old := l.Id.String(), l.Game.Id.String()
	e.Do("POST", "/v1/lobbies/"+lobby+"/stop", e.Admin, map[string]any{"reason": "next game"}).Want(t, http.StatusOK)

	path, key := "/v1/lobbies/"+lobby+"/players", apiclient.NewKey()
	stale := apitest.Act{Action: tournament.ActionRegister, Lobby: lobby, Game: old, Payload: tournament.ActionPayload{Bet: 10}, Key: key}
	e.Do("POST", path, alice.Token, nil, e.Signed(alice, stale)...).WantProblem(t, http.StatusConflict, api.ProblemCodeStaleSignature)
	current := e.Current(lobby, alice, tournament.ActionRegister)
	current.Key = key
	r := e.Do("POST", path, alice.Token, nil, e.Signed(alice, current)...).Want(t, http.StatusCreated)
	if r.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("the registration signed again was answered as a replay")
	}
}

// TestTimestampsHaveMilliseconds: every date-time the server writes is RFC 3339 in UTC with
// exactly three fraction digits, as the contract's examples show: time.Time's encoding wrote a
// time on a whole second without a fraction ("12:00:00Z") and dropped trailing zeros
// ("12:00:00.5Z"), which a parser set for fractional seconds refuses.
func TestTimestampsHaveMilliseconds(t *testing.T) {
	e := apitest.Start(t)
	alice, bob := e.NewPlayer("alice", 0), e.NewPlayer("bob", 0)
	for id, ms := range map[string]int64{alice.ID: 1_735_732_800_000, bob.ID: 1_735_732_800_500} {
		if _, err := e.Pool.Exec(t.Context(), `UPDATE accounts SET created_at = $2 WHERE id = $1`, id, ms); err != nil {
			t.Fatal(err)
		}
	}
	for token, want := range map[string]string{alice.Token: "2025-01-01T12:00:00.000Z", bob.Token: "2025-01-01T12:00:00.500Z"} {
		var raw struct{ CreatedAt string }
		e.Do("GET", "/v1/me", token, nil).Want(t, http.StatusOK).Decode(t, &raw)
		if raw.CreatedAt != want {
			t.Errorf("createdAt %q, want %q", raw.CreatedAt, want)
		}
	}
}

// TestACompleteWeaponCanStillGrow: GridAnalysis.validTiles said 0 for a complete drawing, but a
// weapon that a larger one contains can still grow: rpsls's finished Rock matches Rock and can
// become Paper.
func TestACompleteWeaponCanStillGrow(t *testing.T) {
	e := apitest.Start(t)
	var a api.GridAnalysis
	e.Do("POST", "/v1/rulesets/rpsls/grid", "", map[string]any{"grid": 99}).Want(t, http.StatusOK).Decode(t, &a)
	if len(a.Matches) != 1 || a.Matches[0].Move != 0 || a.ValidTiles == 0 || apitest.JSONOf(a.Candidates) != "[0,1]" {
		t.Errorf("a finished Rock: %s; want it matched, with Paper still possible", apitest.JSONOf(a))
	}
}

// TestMaxExtensionsCountsExtensions: maxExtensions is the most extensions of a stage that
// expires empty, and the empty expiry after them stops the game (the contract said the stop came
// after that many expiries, one window early): with 1, the moves stage is extended once, and the
// stop ends its second window.
func TestMaxExtensionsCountsExtensions(t *testing.T) {
	e := apitest.Start(t, apitest.WithClock())
	p1, p2 := e.NewPlayer("p1", 100), e.NewPlayer("p2", 100)
	l := timedLobby(e, 2, "maxExtensions", 1)
	lobby := l.Id.String()
	e.Register(lobby, p1).Want(t, http.StatusCreated)
	e.Register(lobby, p2).Want(t, http.StatusCreated)
	stop, seen := e.WaitEvent(lobby, 0, 5*time.Second, apitest.OfType("game_stopped"))
	var started, extended int64
	for _, ev := range seen {
		data := apitest.EventData(t, ev)
		switch {
		case ev.Type == "round_started":
			started = int64(data["deadline"].(float64)) - stageTimeout
		case ev.Type == "stage_extended" && data["stage"] == "moves":
			extended = int64(data["deadline"].(float64))
		}
	}
	at, err := time.Parse(time.RFC3339Nano, stop.At)
	if err != nil {
		t.Fatal(err)
	}
	if apitest.EventData(t, stop)["reason"] != "max_extensions" || extended != started+2*stageTimeout || at.UnixMilli() != extended {
		t.Errorf("moves opened at %d, extended to %d, stopped at %d (%s); want one extension and the stop at its end",
			started, extended, at.UnixMilli(), apitest.EventTypes(seen))
	}
}

// TestReplayedProblemNamesTheFirstRequest: a refusal replayed under its Idempotency-Key is the
// stored answer, body and all: its requestId and instance are those of the request that was
// performed (in the server's log lines for it), not the retry's X-Request-Id, as Problem.requestId
// and the X-Request-Id header now say.
func TestReplayedProblemNamesTheFirstRequest(t *testing.T) {
	e := apitest.Start(t)
	poor := e.NewPlayer("poor", 1)
	l := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 3})
	act := e.Current(l.Id.String(), poor, tournament.ActionRegister)
	act.Key = apiclient.NewKey()
	path := "/v1/lobbies/" + l.Id.String() + "/players"
	first := e.Do("POST", path, poor.Token, nil, e.Signed(poor, act)...)
	retry := e.Do("POST", path, poor.Token, nil, e.Signed(poor, act)...)
	p, r := first.WantProblem(t, http.StatusConflict, "insufficient_funds"), retry.WantProblem(t, http.StatusConflict, "insufficient_funds")
	if retry.Header.Get("Idempotent-Replayed") != "true" || string(retry.Body) != string(first.Body) {
		t.Fatalf("the retry is not the stored answer: %s", retry.Body)
	}
	if *p.RequestId != first.Header.Get("X-Request-Id") || *r.RequestId != *p.RequestId ||
		retry.Header.Get("X-Request-Id") == *r.RequestId {
		t.Errorf("first %s (header %s), replay %s (header %s)", *p.RequestId, first.Header.Get("X-Request-Id"),
			*r.RequestId, retry.Header.Get("X-Request-Id"))
	}
}

// TestAccountsAreFoundInNameOrderCaseAside: an admin's search lists accounts by name in lower
// case (so "alan" comes before "Bob", which bytewise it would not), as the contract now says.
func TestAccountsAreFoundInNameOrderCaseAside(t *testing.T) {
	e := apitest.Start(t)
	e.NewPlayer("Bob", 0)
	e.NewPlayer("alan", 0)
	var page api.AdminAccountPage
	e.Do("GET", "/v1/admin/accounts", e.Admin, nil).Want(t, http.StatusOK).Decode(t, &page)
	var names []string
	for _, a := range page.Accounts {
		if a.Account.Role == api.Player {
			names = append(names, a.Account.Name)
		}
	}
	if strings.Join(names, ",") != "alan,Bob" {
		t.Errorf("players found in the order %v, want alan, Bob", names)
	}
}

// TestClosedLobbysConfigAfterItsLastGame: once a closed lobby's last game has ended, the lobby's
// config is the pending next config (applied as the game ended), not the ended game's, which is
// in the game's summary, as the Lobby schema now says.
func TestClosedLobbysConfigAfterItsLastGame(t *testing.T) {
	e := apitest.Start(t)
	a, b := e.NewPlayer("a", 100), e.NewPlayer("b", 100)
	l := e.CreateLobby(map[string]any{"betSize": 10, "playersCountLimit": 2})
	lobby := l.Id.String()
	e.Do("PUT", "/v1/lobbies/"+lobby+"/next-config", e.Admin, map[string]any{"betSize": 5, "playersCountLimit": 2}).Want(t, http.StatusOK)
	e.Register(lobby, a).Want(t, http.StatusCreated)
	e.Register(lobby, b).Want(t, http.StatusCreated)
	e.Do("POST", "/v1/lobbies/"+lobby+"/close", e.Admin, nil).Want(t, http.StatusOK)
	e.Do("POST", "/v1/lobbies/"+lobby+"/stop", e.Admin, map[string]any{"reason": "closing time"}).Want(t, http.StatusOK)
	after := e.Lobby(lobby, "")
	var game api.GameSummary
	e.Do("GET", "/v1/games/"+l.Game.Id.String(), "", nil).Want(t, http.StatusOK).Decode(t, &game)
	if after.Game.Id != l.Game.Id || after.Config.BetSize != 5 || after.NextConfig != nil || game.Config.BetSize != 10 {
		t.Errorf("closed lobby after its last game: game %s, config bet %d, next %v; the game's own bet %d",
			after.Game.Id, after.Config.BetSize, after.NextConfig, game.Config.BetSize)
	}
}

// TestKeyRecoveryNeedsAnIdempotencyKey: recoverKeys "needs an Idempotency-Key"; an admin acting
// unsigned (RPSD_ADMIN_KEYS=optional, the default) recovered a player's keys without one.
func TestKeyRecoveryNeedsAnIdempotencyKey(t *testing.T) {
	e := apitest.Start(t)
	alice := e.NewPlayer("alice", 0)
	path, body := "/v1/admin/accounts/"+alice.ID+"/keys", map[string]any{"publicKey": apiclient.NewPlayerKey().PublicKey(), "reason": "lost phone"}
	p := e.Do("POST", path, e.Admin, body).WantProblem(t, http.StatusBadRequest, "validation_failed")
	if p.Field == nil || *p.Field != "Idempotency-Key" {
		t.Errorf("the refusal names %v, not Idempotency-Key", p.Field)
	}
	var keys api.AccountKeys
	e.Do("GET", "/v1/accounts/"+alice.ID+"/keys", "", nil).Want(t, http.StatusOK).Decode(t, &keys)
	if len(keys.Keys) != 1 {
		t.Fatalf("the refused recovery changed the keys: %s", apitest.JSONOf(keys.Keys))
	}
	e.Do("POST", path, e.Admin, body, "Idempotency-Key", apiclient.NewKey()).Want(t, http.StatusCreated)
}
