package tournamenttest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/tournament"
)

// VerifyLobby checks the invariants of one lobby as a third party could: its log is gap-free and
// its hash chain verifies, the events' instants never go back, no event carries a list longer than
// the weapons, every digest matches the transcript, no sealed value appears in an event before its
// stage closes, and every game's header agrees with its rows (counters, escrow, winner).
func VerifyLobby(t TB, ctx context.Context, b Backend, lobby tournament.LobbyID) {
	t.Helper()
	v := &verifier{t: t, ctx: ctx, b: b}
	v.lobby(lobby)
}

// VerifyLedger checks the ledger's invariants and that the given accounts' balances plus the
// escrows of the given lobbies' games add up to what was credited to those accounts.
func VerifyLedger(t TB, ctx context.Context, b Backend, accounts []tournament.AccountID, credited int64, lobbies []tournament.LobbyID) {
	t.Helper()
	v := &verifier{t: t, ctx: ctx, b: b}
	v.money(accounts, credited, lobbies)
}

type verifier struct {
	t   TB
	ctx context.Context
	b   Backend
}

func (v *verifier) must(err error, what string) {
	v.t.Helper()
	if err != nil {
		v.t.Fatalf("%s: %v", what, err)
	}
}

func decode(e tournament.LoggedEvent, data any) error {
	if err := json.Unmarshal(e.Data, data); err != nil {
		return fmt.Errorf("event %d (%s): %w", e.Seq, e.Type, err)
	}
	return nil
}

// gameIDs lists a lobby's games from its game_opened events.
func gameIDs(es []tournament.LoggedEvent) []tournament.GameID {
	var out []tournament.GameID
	for _, e := range es {
		if e.Type == tournament.EventGameOpened {
			out = append(out, e.GameID)
		}
	}
	return out
}

// money checks the ledger's invariants and conservation over the given accounts and lobbies.
func (v *verifier) money(accounts []tournament.AccountID, credited int64, lobbies []tournament.LobbyID) {
	v.t.Helper()
	rep, err := v.b.Ledger(v.ctx)
	v.must(err, "ledger")
	if !rep.OK() {
		v.t.Errorf("ledger invariants fail: %+v", rep)
	}
	var total int64
	for _, a := range accounts {
		bal, err := v.b.Balance(v.ctx, a)
		v.must(err, "balance")
		if bal < 0 {
			v.t.Errorf("account %s has a negative balance %d", a, bal)
		}
		total += bal
	}
	for _, l := range lobbies {
		es, err := v.b.Events(v.ctx, l)
		v.must(err, "events")
		for _, id := range gameIDs(es) {
			g, err := v.b.Game(v.ctx, id)
			v.must(err, "game")
			total += g.Escrow
		}
	}
	if total != credited {
		v.t.Errorf("money not conserved: balances + escrows = %d, credited %d", total, credited)
	}
}

func (v *verifier) lobby(id tournament.LobbyID) {
	v.t.Helper()
	l, err := v.b.Lobby(v.ctx, id)
	v.must(err, "lobby")
	es, err := v.b.Events(v.ctx, id)
	v.must(err, "events")
	v.chain(id, es)
	v.eventShapes(es)
	ids := gameIDs(es)
	strs := stringIndex(es)
	if len(ids) != l.Games {
		v.t.Errorf("lobby has %d game_opened events, header says %d games", len(ids), l.Games)
	}
	if len(ids) == 0 || ids[len(ids)-1] != l.GameID {
		v.t.Errorf("lobby's game %s is not its last opened game %v", l.GameID, ids)
	}
	for i, gid := range ids {
		g, err := v.b.Game(v.ctx, gid)
		v.must(err, "game")
		if g.LobbyID != id || g.Number != i+1 {
			v.t.Errorf("game %s: lobby %s number %d, want %s number %d", gid, g.LobbyID, g.Number, id, i+1)
		}
		if gid != l.GameID && g.Stage.Open() {
			v.t.Errorf("game %d is %s but a later game was opened", g.Number, g.Stage)
		}
		if gid == l.GameID && !l.Closed && !g.Stage.Open() {
			v.t.Errorf("open lobby's current game %d is %s", g.Number, g.Stage)
		}
		v.game(g, es, strs)
	}
}

// chain checks that the log is gap-free, hash-chained and in time order.
func (v *verifier) chain(lobby tournament.LobbyID, es []tournament.LoggedEvent) {
	v.t.Helper()
	var prev tournament.LoggedEvent
	for i, e := range es {
		if e.Seq != int64(i+1) {
			v.t.Errorf("event %d has seq %d", i+1, e.Seq)
		}
		if e.LobbyID != lobby {
			v.t.Errorf("event %d belongs to lobby %s", e.Seq, e.LobbyID)
		}
		if e.PrevHash != prev.Hash {
			v.t.Errorf("event %d: prevHash %x, want %x", e.Seq, e.PrevHash, prev.Hash)
		}
		h, err := tournament.ChainHash(e)
		v.must(err, "chain hash")
		if h != e.Hash {
			v.t.Errorf("event %d (%s): stored hash %x, recomputed %x", e.Seq, e.Type, e.Hash, h)
		}
		if i > 0 && e.At < prev.At {
			v.t.Errorf("event %d (%s) at %d is before event %d at %d", e.Seq, e.Type, e.At, prev.Seq, prev.At)
		}
		prev = e
	}
}

// eventShapes checks that no event carries a list that grows with the lobby and that the events
// naming who acted carry nothing else.
func (v *verifier) eventShapes(es []tournament.LoggedEvent) {
	v.t.Helper()
	for _, e := range es {
		var data any
		if err := json.Unmarshal(e.Data, &data); err != nil {
			v.t.Errorf("event %d (%s): data is not JSON: %v", e.Seq, e.Type, err)
			continue
		}
		if n := longestArray(data); n > engine.MaxWeapons {
			v.t.Errorf("event %d (%s) carries a list of %d elements", e.Seq, e.Type, n)
		}
		var allowed []string
		switch e.Type {
		case tournament.EventMoveCommitted:
			allowed = []string{"committed", "player", "round"}
		case tournament.EventMoveRevealed:
			allowed = []string{"player", "revealed", "round"}
		default:
			continue
		}
		m, _ := data.(map[string]any)
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, allowed) {
			v.t.Errorf("event %d (%s) has fields %v, want only %v", e.Seq, e.Type, keys, allowed)
		}
	}
}

func longestArray(x any) int {
	n := 0
	switch x := x.(type) {
	case []any:
		n = len(x)
		for _, y := range x {
			n = max(n, longestArray(y))
		}
	case map[string]any:
		for _, y := range x {
			n = max(n, longestArray(y))
		}
	}
	return n
}

// game checks a game's header against its rows, and its round events against its transcript.
func (v *verifier) game(g tournament.Game, es []tournament.LoggedEvent, strs map[string]int64) {
	v.t.Helper()
	name := fmt.Sprintf("game %d (%s)", g.Number, g.ID)
	ps, err := v.b.Players(v.ctx, g.ID)
	v.must(err, "players")
	active := 0
	var lastActive tournament.AccountID
	for i, p := range ps {
		if i > 0 && p.Order <= ps[i-1].Order {
			v.t.Errorf("%s: players not in registration order: %d after %d", name, p.Order, ps[i-1].Order)
		}
		if p.Order < 1 || p.Order > g.Joined {
			v.t.Errorf("%s: player %s has order %d, joined %d", name, p.AccountID, p.Order, g.Joined)
		}
		if p.Active {
			active++
			lastActive = p.AccountID
			if p.EliminatedRound != 0 {
				v.t.Errorf("%s: active player %s eliminated in round %d", name, p.AccountID, p.EliminatedRound)
			}
		} else if p.EliminatedRound < 1 || p.EliminatedRound > g.Round {
			v.t.Errorf("%s: player %s out in round %d of %d", name, p.AccountID, p.EliminatedRound, g.Round)
		}
	}
	if g.Players != len(ps) || g.Active != active {
		v.t.Errorf("%s: header says %d players, %d active; rows say %d, %d", name, g.Players, g.Active, len(ps), active)
	}
	switch g.Stage {
	case tournament.StageRegistration:
		if g.Round != 0 || g.Active != g.Players {
			v.t.Errorf("%s: registration with round %d, %d active of %d", name, g.Round, g.Active, g.Players)
		}
		if (g.Players == 0) != (g.Deadline == 0) {
			v.t.Errorf("%s: registration with %d players has deadline %d", name, g.Players, g.Deadline)
		}
	case tournament.StageMoves, tournament.StageReveal:
		if g.Active < 2 {
			v.t.Errorf("%s: %s stage with %d active players", name, g.Stage, g.Active)
		}
	case tournament.StageFinished:
		if g.Winner == "" || g.Payout != g.Config.BetSize*int64(g.Players) {
			v.t.Errorf("%s: finished with winner %q payout %d, want one winner and all %d bets", name, g.Winner, g.Payout, g.Players)
		}
		if active != 1 || lastActive != g.Winner {
			v.t.Errorf("%s: winner %s but %d active players (last %s)", name, g.Winner, active, lastActive)
		}
		if g.StopReason != "" {
			v.t.Errorf("%s: finished with a stop reason %q", name, g.StopReason)
		}
	case tournament.StageStopped:
		if g.Winner != "" || g.Payout != 0 || g.StopReason == "" {
			v.t.Errorf("%s: stopped with winner %q payout %d reason %q", name, g.Winner, g.Payout, g.StopReason)
		}
	default:
		v.t.Errorf("%s: unknown stage %q", name, g.Stage)
	}
	// A salt waits in the header only while its round's commitments are sealed: its reveal stage.
	if (g.Stage == tournament.StageReveal) == g.Salt.IsZero() {
		v.t.Errorf("%s: %s stage with salt %s", name, g.Stage, g.Salt)
	}
	if g.Stage.Open() {
		if g.Escrow != g.Config.BetSize*int64(g.Players) {
			v.t.Errorf("%s: escrow %d, want %d bets of %d", name, g.Escrow, g.Players, g.Config.BetSize)
		}
		if g.Deadline != 0 && g.Deadline != g.StageStartedAt+stageTimeout(g.Config, g.Stage) {
			v.t.Errorf("%s: %s deadline %d is not its start %d + timeout", name, g.Stage, g.Deadline, g.StageStartedAt)
		}
	} else if g.Escrow != 0 || g.Deadline != 0 {
		v.t.Errorf("%s: %s with escrow %d deadline %d", name, g.Stage, g.Escrow, g.Deadline)
	}
	rs, ok := engine.Builtin().Get(g.Config.Ruleset)
	if !ok || rs.HashHex() != g.RulesetHash {
		v.t.Errorf("%s: ruleset hash %s does not match ruleset %q", name, g.RulesetHash, g.Config.Ruleset)
	}

	// Rounds: counters, digests and sealing.
	for r := 1; r <= g.Round; r++ {
		moves, err := v.b.Moves(v.ctx, g.ID, r)
		v.must(err, "moves")
		slices.SortFunc(moves, func(a, b tournament.RoundMove) int { return strings.Compare(string(a.AccountID), string(b.AccountID)) })
		revealed := 0
		for _, m := range moves {
			if m.Revealed {
				revealed++
			}
		}
		if r == g.Round && g.Stage != tournament.StageRegistration && (g.Committed != len(moves) || g.Revealed != revealed) {
			v.t.Errorf("%s round %d: header says %d committed, %d revealed; rows say %d, %d", name, r, g.Committed, g.Revealed, len(moves), revealed)
		}
		v.round(name, g, r, moves, es, strs)
	}
}

func stageTimeout(c tournament.Config, s tournament.Stage) int64 {
	switch s {
	case tournament.StageRegistration:
		return c.EntryTimeoutMs
	case tournament.StageMoves:
		return c.MoveTimeoutMs
	}
	return c.RevealTimeoutMs
}

// round checks a round's closing events against its transcript and that its sealed values appear
// in no event before the event that closes their stage.
func (v *verifier) round(name string, g tournament.Game, r int, moves []tournament.RoundMove, es []tournament.LoggedEvent, strs map[string]int64) {
	v.t.Helper()
	var closedAt, resolvedAt int64 = 1 << 62, 1 << 62
	for _, e := range es {
		if e.GameID != g.ID {
			continue
		}
		switch e.Type {
		case tournament.EventMovesClosed:
			var d tournament.MovesClosedData
			v.must(decode(e, &d), "decode")
			if d.Round != r {
				continue
			}
			closedAt = min(closedAt, e.Seq)
			salt, revealedAt := v.salt(name, g, r, es)
			// The salt is as sealed as the commitments: in no event before the one revealing it.
			v.sealed(name, r, "salt", salt.String(), revealedAt, strs)
			dg := tournament.NewSaltedDigester(salt)
			for _, m := range moves {
				v.must(dg.Add(m.AccountID, m.Commitment.String()), "digest")
			}
			sum, n := dg.Sum()
			if d.Digest != sum || d.Committed != n {
				v.t.Errorf("%s round %d: moves_closed says %d commitments, digest %s; transcript has %d, %s", name, r, d.Committed, d.Digest, n, sum)
			}
		case tournament.EventRoundResolved:
			var d tournament.RoundResolvedData
			v.must(decode(e, &d), "decode")
			if d.Round != r {
				continue
			}
			resolvedAt = min(resolvedAt, e.Seq)
			dg := tournament.NewDigester()
			var counts [engine.MaxWeapons]int64
			present := 0
			for _, m := range moves {
				if m.Revealed {
					v.must(dg.Add(m.AccountID, m.Reveal), "digest")
					counts[m.Move]++
					present |= 1 << m.Move
				}
			}
			sum, n := dg.Sum()
			if d.Digest != sum || d.Revealed != n {
				v.t.Errorf("%s round %d: round_resolved says %d reveals, digest %s; transcript has %d, %s", name, r, d.Revealed, d.Digest, n, sum)
			}
			if d.Present != present {
				v.t.Errorf("%s round %d: present mask %b, transcript %b", name, r, d.Present, present)
			}
			for m, c := range d.Counts {
				if counts[m] != c {
					v.t.Errorf("%s round %d: count of move %d is %d, transcript %d", name, r, m, c, counts[m])
				}
			}
			if d.Survivors&^d.Present != 0 || (d.Present != 0 && d.Survivors == 0) {
				v.t.Errorf("%s round %d: survivors %b not a non-empty subset of present %b", name, r, d.Survivors, d.Present)
			}
		}
	}
	for _, m := range moves {
		if m.Round != r || m.GameID != g.ID {
			v.t.Errorf("%s round %d: move row of game %s round %d", name, r, m.GameID, m.Round)
		}
		if m.Revealed && !m.Commitment.Matches(m.Reveal) {
			v.t.Errorf("%s round %d: %s's reveal does not match the commitment", name, r, m.AccountID)
		}
		v.sealed(name, r, "commitment", m.Commitment.String(), closedAt, strs)
		if m.Revealed {
			v.sealed(name, r, "reveal", m.Reveal, resolvedAt, strs)
		}
	}
}

// salt returns the salt of round r's moves_closed digest and the event that revealed it: the
// round's round_resolved, or the game's game_finished or game_stopped when the round ended the
// game unresolved; while the round's reveal stage is open, the header's (and no event).
func (v *verifier) salt(name string, g tournament.Game, r int, es []tournament.LoggedEvent) (tournament.Salt, int64) {
	v.t.Helper()
	for _, e := range es {
		if e.GameID != g.ID {
			continue
		}
		var d struct {
			Round int    `json:"round"`
			Salt  string `json:"salt"`
		}
		switch e.Type {
		case tournament.EventRoundResolved, tournament.EventGameFinished, tournament.EventGameStopped:
			v.must(decode(e, &d), "decode")
		default:
			continue
		}
		if d.Round != r || (d.Salt == "" && e.Type != tournament.EventRoundResolved) {
			continue
		}
		salt, err := tournament.ParseSalt(d.Salt)
		if err != nil {
			v.t.Errorf("%s round %d: %s (event %d) reveals no salt of the moves_closed digest: %v", name, r, e.Type, e.Seq, err)
		}
		return salt, e.Seq
	}
	if g.Stage != tournament.StageReveal || g.Round != r || g.Salt.IsZero() {
		v.t.Errorf("%s round %d: moves closed, the round is over (%s, round %d), and no event revealed the salt", name, r, g.Stage, g.Round)
	}
	return g.Salt, 1 << 62
}

// stringIndex maps every string value in the events' data to the first event that carries it.
func stringIndex(es []tournament.LoggedEvent) map[string]int64 {
	idx := map[string]int64{}
	var walk func(seq int64, x any)
	walk = func(seq int64, x any) {
		switch x := x.(type) {
		case string:
			if _, ok := idx[x]; !ok {
				idx[x] = seq
			}
		case []any:
			for _, y := range x {
				walk(seq, y)
			}
		case map[string]any:
			for k, y := range x {
				walk(seq, k)
				walk(seq, y)
			}
		}
	}
	for _, e := range es {
		var data any
		if json.Unmarshal(e.Data, &data) == nil {
			walk(e.Seq, data)
		}
	}
	return idx
}

// sealed fails if value is a string in an event before the event that closed its stage.
func (v *verifier) sealed(name string, r int, kind, value string, closedAt int64, strs map[string]int64) {
	v.t.Helper()
	if seq, ok := strs[value]; ok && seq < closedAt {
		v.t.Errorf("%s round %d: %s %q appears in event %d before its stage closed", name, r, kind, value, seq)
	}
}
