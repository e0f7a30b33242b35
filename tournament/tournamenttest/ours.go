package tournamenttest

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/tournament"
)

// eventsContain reports whether any event's data contains s.
func (h *harness) eventsContain(s string) bool {
	h.t.Helper()
	for _, e := range h.events() {
		if bytes.Contains(e.Data, []byte(s)) {
			return true
		}
	}
	return false
}

// ourScenarios test every deliberate difference from Gear and the rules Gear does not have.
var ourScenarios = []scenario{
	{"FullLobbyStartsAtOnce", func(h *harness) {
		cfg := config()
		cfg.PlayersCountLimit = 2
		h.open(cfg)
		h.register(1)
		h.advance(1000)
		mark := h.mark()
		h.register(2)
		h.wantEvents(h.eventsSince(mark),
			[]tournament.EventType{tournament.EventPlayerRegistered, tournament.EventRoundStarted},
			[]int64{h.now, h.now})
		g := h.game()
		if g.Stage != tournament.StageMoves || g.Round != 1 || g.StageStartedAt != h.now || g.Deadline != h.now+Timeout {
			h.t.Errorf("after the filling registration: %s round %d from %d to %d", g.Stage, g.Round, g.StageStartedAt, g.Deadline)
		}
		h.move(1, Rock)
	}},
	{"LeaveWithRefund", func(h *harness) {
		h.open(config())
		h.register(1, 2, 3)
		h.ok(h.tryLeave(h.p[2]))
		h.wantBalances(Funds-Bet, Funds, Funds-Bet)
		var left tournament.PlayerLeftData
		h.lastEvent(tournament.EventPlayerLeft, &left)
		if left.Player != h.p[2].ID || left.Players != 2 || left.Pot != 2*Bet {
			h.t.Errorf("player_left %+v", left)
		}
		h.mustRefuse(tournament.CodeNotInGame, h.tryLeave(h.p[2]))
		h.mustRefuse(tournament.CodeNotInGame, h.tryLeave(h.p[5]))
		h.mustRefuse(tournament.CodeForbidden, h.tryLeave(h.admin))
		h.register(2) // joins again, last in registration order
		h.wantActive(1, 3, 2)
		if g := h.game(); g.Players != 3 || g.Joined != 4 || g.Escrow != 3*Bet {
			h.t.Errorf("after leaving and joining again: %d players, %d joined, escrow %d", g.Players, g.Joined, g.Escrow)
		}
		h.passDeadline()
		h.mustRefuse(tournament.CodeWrongStage, h.tryLeave(h.p[1]))
		h.wantBalances(Funds-Bet, Funds-Bet, Funds-Bet)
	}},
	{"LeaveAndJoinAgainIsBounded", func(h *harness) {
		// Issue 21: each register/leave cycle writes events and ledger postings for good, so an
		// account may leave one game at most MaxLeavesPerGame times; then it cannot join that game
		// again. Other players, and the next game, are not affected.
		h.open(config())
		h.register(2)
		for range tournament.MaxLeavesPerGame {
			h.register(1)
			h.ok(h.tryLeave(h.p[1]))
		}
		mark, before := h.mark(), h.game()
		r := h.mustRefuse(tournament.CodeRejoinLimit, h.tryRegister(h.p[1]))
		if !strings.Contains(r.Message, fmt.Sprint(tournament.MaxLeavesPerGame)) {
			h.t.Errorf("the refusal does not say the limit: %q", r.Message)
		}
		if g := h.game(); len(h.eventsSince(mark)) != 0 || g.Players != before.Players || g.Escrow != before.Escrow {
			h.t.Errorf("the refused registration changed the game: %+v", g)
		}
		h.wantBalances(Funds, Funds-Bet)
		// The refusal comes after the stage's and after "already registered", before "full".
		h.mustRefuse(tournament.CodeAlreadyRegistered, h.tryRegister(h.p[2]))
		h.register(3)
		h.ok(h.tryLeave(h.p[3]))
		h.register(3) // another account's leaves are its own
		h.stop()
		h.register(1) // the next game is a new one
		h.wantActive(1)
	}},
	{"EmptyRegistrationHasNoDeadline", func(h *harness) {
		h.open(config())
		h.advance(7 * 24 * 3600 * 1000)
		h.ok(h.shift(3_600_000))
		if h.expire() {
			h.t.Errorf("an empty registration expired")
		}
		if g := h.game(); g.Deadline != 0 || g.StageStartedAt != 0 || g.Extensions != 0 {
			h.t.Fatalf("empty registration: window %d..%d, %d extensions", g.StageStartedAt, g.Deadline, g.Extensions)
		}
		h.register(1) // the window opens with the first player, a week after the game opened
		if g := h.game(); g.StageStartedAt != h.now || g.Deadline != h.now+Timeout {
			h.t.Errorf("window %d..%d, want from the first registration at %d", g.StageStartedAt, g.Deadline, h.now)
		}
		if n := h.countEvents(tournament.EventStageExtended); n != 0 {
			h.t.Errorf("%d stage_extended events", n)
		}
	}},
	{"LeaveLastPlayerClearsDeadline", func(h *harness) {
		h.open(config())
		h.register(1)
		h.advance(Timeout + 1)
		h.expire() // extended once
		h.ok(h.tryLeave(h.p[1]))
		if g := h.game(); g.Deadline != 0 || g.Players != 0 || g.Escrow != 0 {
			h.t.Fatalf("after the last player left: %+v", g)
		}
		h.advance(100 * Timeout)
		if h.expire() {
			h.t.Errorf("an empty registration expired")
		}
		h.register(2)
		if g := h.game(); g.Deadline != h.now+Timeout {
			h.t.Errorf("deadline %d, want a window from the first registration", g.Deadline)
		}
	}},
	{"AdminsCannotPlay", func(h *harness) {
		h.open(config())
		h.mustRefuse(tournament.CodeForbidden, h.tryRegister(h.admin))
		h.register(1, 2)
		h.passDeadline()
		h.mustRefuse(tournament.CodeWrongStage, h.tryRegister(h.admin)) // the stage is checked first
		h.mustRefuse(tournament.CodeForbidden, h.tryMove(h.admin, Rock, Password))
		h.move(1, Rock)
		h.move(2, Paper)
		h.mustRefuse(tournament.CodeForbidden, h.tryReveal(h.admin, "0"+Password))
		if g := h.game(); g.Players != 2 {
			h.t.Errorf("players %d", g.Players)
		}
	}},
	{"DuplicateCommitmentsAccepted", func(h *harness) {
		gearStart(h)
		same := engine.CommitMove(Rock, "weak")
		h.ok(h.tryCommit(h.p[1], same))
		h.ok(h.tryCommit(h.p[2], same))
		h.move(3, Scissors)
		h.move(4, Scissors)
		for _, m := range h.moves(1)[:2] {
			if m.Commitment != same {
				h.t.Errorf("%s committed %s", m.AccountID, m.Commitment)
			}
		}
		h.ok(h.tryReveal(h.p[1], "0weak"))
		h.ok(h.tryReveal(h.p[2], "0weak"))
		h.reveal(3, 4)
		h.wantActive(1, 2)
	}},
	{"SealedUntilRoundResolves", func(h *harness) {
		gearStart(h)
		moves := []engine.Move{Rock, Paper, Scissors, Lizard}
		var commits []string
		for i := range 3 {
			h.ok(h.tryMove(h.p[i+1], moves[i], "sealed-secret"))
			commits = append(commits, engine.CommitMove(moves[i], "sealed-secret").String())
			for _, c := range commits {
				if h.eventsContain(c) {
					h.t.Fatalf("commitment %s is in the log before the moves stage closed", c)
				}
			}
		}
		if g := h.game(); tournament.SealedPublic(g, 1) {
			h.t.Errorf("round 1's commitments or reveals are public during its moves stage")
		}
		mark := h.mark()
		h.ok(h.tryMove(h.p[4], Lizard, "sealed-secret"))
		if g := h.game(); g.Stage != tournament.StageReveal || tournament.SealedPublic(g, 1) {
			h.t.Errorf("after the moves stage closed (%s): round 1's commitments are public before it resolves", g.Stage)
		}
		closed := h.eventsSince(mark)
		h.wantEvents(closed, []tournament.EventType{tournament.EventMoveCommitted, tournament.EventMovesClosed}, nil)
		var mc tournament.MovesClosedData
		h.ok(decode(closed[1], &mc))
		d := tournament.NewSaltedDigester(h.game().Salt)
		for _, m := range h.moves(1) {
			h.ok(d.Add(m.AccountID, m.Commitment.String()))
		}
		if sum, n := d.Sum(); mc.Digest != sum || mc.Committed != n || n != 4 {
			h.t.Errorf("moves_closed digest %s (%d), transcript %s (%d)", mc.Digest, mc.Committed, sum, n)
		}
		for i := 1; i <= 3; i++ {
			h.reveal(i)
			for j := 1; j <= i; j++ {
				if s := h.secrets[h.p[j].ID]; h.eventsContain(s) {
					h.t.Fatalf("reveal %q is in the log before the round was resolved", s)
				}
			}
		}
		if strings.Contains(string(h.events()[len(h.events())-1].Data), "sealed-secret") {
			h.t.Errorf("a password is in the log")
		}
		h.reveal(4)
		if g := h.game(); !tournament.SealedPublic(g, 1) || tournament.SealedPublic(g, 2) {
			h.t.Errorf("after round 1 was resolved (round %d): round 1 public %v, round 2 public %v", g.Round,
				tournament.SealedPublic(g, 1), tournament.SealedPublic(g, 2))
		}
		var rr tournament.RoundResolvedData
		h.lastEvent(tournament.EventRoundResolved, &rr)
		if rr.Revealed != 4 || rr.Present != 0b1111 || rr.Survivors != 0b1111 || len(rr.Counts) != 5 {
			h.t.Errorf("round_resolved %+v", rr)
		}
	}},
	{"DigestSaltRevealedWithTheCommitments", func(h *harness) {
		// sealedSalt checks, once moves closed, that the header keeps a salt and moves_closed's
		// digest is the salted one (not the unsalted oracle), and returns the salt.
		sealedSalt := func(round int) tournament.Salt {
			h.t.Helper()
			g := h.game()
			var mc tournament.MovesClosedData
			h.lastEvent(tournament.EventMovesClosed, &mc)
			salted, unsalted := tournament.NewSaltedDigester(g.Salt), tournament.NewDigester()
			for _, m := range h.moves(round) {
				h.ok(salted.Add(m.AccountID, m.Commitment.String()))
				h.ok(unsalted.Add(m.AccountID, m.Commitment.String()))
			}
			sum, _ := salted.Sum()
			plain, _ := unsalted.Sum()
			if g.Salt.IsZero() || mc.Digest != sum || mc.Digest == plain {
				h.t.Fatalf("round %d: salt %s, moves_closed digest %s, salted %s, unsalted %s", round, g.Salt, mc.Digest, sum, plain)
			}
			if h.eventsContain(g.Salt.String()) {
				h.t.Fatalf("round %d: the salt is in the log while the commitments are sealed", round)
			}
			return g.Salt
		}
		// A resolved round: round_resolved reveals the salt, and the header forgets it.
		gearStart(h)
		h.round([]int{1, 2, 3, 4}, Rock, Paper, Scissors, Scissors) // everyone replays
		h.move(1, Rock)
		h.move(2, Paper)
		h.move(3, Scissors)
		h.move(4, Scissors)
		salt1 := sealedSalt(2)
		h.reveal(1, 2, 3, 4)
		var rr tournament.RoundResolvedData
		h.lastEvent(tournament.EventRoundResolved, &rr)
		if rr.Round != 2 || rr.Salt != salt1.String() || !h.game().Salt.IsZero() {
			h.t.Errorf("round_resolved of round %d reveals salt %q, want %s; header keeps %s", rr.Round, rr.Salt, salt1, h.game().Salt)
		}
		// Stopped in the reveal stage: game_stopped reveals the salt of round 3.
		h.round([]int{1, 2, 3, 4}, Rock, Paper, Scissors, Scissors)
		h.move(1, Rock)
		h.move(2, Paper)
		h.passDeadline() // 3 and 4 are out; 1 and 2 go on to reveal
		salt3 := sealedSalt(4)
		if salt3 == salt1 {
			h.t.Errorf("rounds 2 and 4 share the salt %s", salt3)
		}
		h.stop()
		var st tournament.GameStoppedData
		h.lastEvent(tournament.EventGameStopped, &st)
		if st.Stage != tournament.StageReveal || st.Salt != salt3.String() {
			h.t.Errorf("game_stopped in %s reveals salt %q, want %s", st.Stage, st.Salt, salt3)
		}
		// The last committer wins when moves close: game_finished reveals the salt.
		h.register(5, 6)
		h.passDeadline()
		h.move(5, Rock)
		h.passDeadline()
		var f tournament.GameFinishedData
		h.lastEvent(tournament.EventGameFinished, &f)
		if f.Winner != h.p[5].ID || f.Salt == "" || h.countEvents(tournament.EventMovesClosed) != 5 {
			h.t.Errorf("game_finished %+v after %d moves_closed: the winner by default reveals the salt", f, h.countEvents(tournament.EventMovesClosed))
		}
		// A stop outside a reveal stage reveals no salt: none waits.
		h.register(5, 6)
		h.passDeadline()
		h.stop()
		st = tournament.GameStoppedData{}
		h.lastEvent(tournament.EventGameStopped, &st)
		if st.Stage != tournament.StageMoves || st.Salt != "" {
			h.t.Errorf("game_stopped in %s reveals salt %q", st.Stage, st.Salt)
		}
	}},
	{"PayoutIsTheEscrowNothingRollsOver", func(h *harness) {
		cfg := config()
		cfg.BetSize = 1001
		h.open(cfg)
		h.register(1, 2, 3, 4)
		h.passDeadline()
		h.move(1, Rock)
		h.move(2, Paper)
		h.move(3, Scissors)
		h.passDeadline()
		h.stop() // 4004 among 3: 1335, 1335, 1334; nothing stays behind
		first := h.gameByID(h.lobbyRow().GameID)
		if first.Number != 2 || first.Escrow != 0 {
			h.t.Fatalf("next game %d opens with escrow %d", first.Number, first.Escrow)
		}
		h.wantBalances(Funds-1001+1335, Funds-1001+1335, Funds-1001+1334, Funds-1001)
		h.register(5, 6)
		h.passDeadline()
		h.round([]int{5, 6}, Rock, Scissors)
		var f tournament.GameFinishedData
		h.lastEvent(tournament.EventGameFinished, &f)
		if f.Amount != 2*1001 {
			h.t.Errorf("payout %d, want exactly the two bets", f.Amount)
		}
		if b := h.balance(5); b != Funds+1001 {
			h.t.Errorf("winner's balance %d", b)
		}
	}},
	{"OnlyFirstExtensionWritesEvent", func(h *harness) {
		gearStart(h)
		d := h.game().Deadline
		mark := h.mark()
		h.now = d + 3*Timeout + 1 // expiries at d, d+T, d+2T, d+3T
		h.expire()
		h.wantEvents(h.eventsSince(mark), []tournament.EventType{tournament.EventStageExtended}, []int64{d})
		if g := h.game(); g.Deadline != d+4*Timeout || g.StageStartedAt != d+3*Timeout || g.Extensions != 4 {
			h.t.Errorf("after 4 extensions: from %d to %d, %d extensions", g.StageStartedAt, g.Deadline, g.Extensions)
		}
		mark = h.mark()
		h.passDeadline()
		h.passDeadline()
		h.wantEvents(h.eventsSince(mark), nil, nil)
		h.move(1, Rock) // the window is still open and the stage is the same
		h.move(2, Rock)
		h.passDeadline()
		h.wantStage(tournament.StageReveal)
		h.wantActive(1, 2)
		mark = h.mark()
		h.passDeadline()
		h.passDeadline()
		h.wantEvents(h.eventsSince(mark), []tournament.EventType{tournament.EventStageExtended}, nil)
	}},
	{"MaxExtensions/Moves", func(h *harness) {
		cfg := config()
		cfg.MaxExtensions = 2
		h.open(cfg)
		h.register(1, 2, 3)
		h.passDeadline()
		d := h.game().Deadline
		mark := h.mark()
		h.now = d + 100*Timeout
		h.expire()
		h.wantEvents(h.eventsSince(mark),
			[]tournament.EventType{tournament.EventStageExtended, tournament.EventGameStopped, tournament.EventGameOpened},
			[]int64{d, d + 2*Timeout, d + 2*Timeout})
		var s tournament.GameStoppedData
		h.lastEvent(tournament.EventGameStopped, &s)
		if s.Reason != tournament.ReasonMaxExtensions || s.Stage != tournament.StageMoves || s.Players != 3 {
			h.t.Errorf("game_stopped %+v", s)
		}
		h.wantBalances(Funds, Funds, Funds)
	}},
	{"MaxExtensions/RevealStepByStep", func(h *harness) {
		cfg := config()
		cfg.MaxExtensions = 2
		h.open(cfg)
		h.register(1, 2, 3, 4)
		h.passDeadline()
		h.move(1, Rock)
		h.move(2, Rock)
		h.move(3, Paper)
		h.passDeadline() // p4 out
		h.passDeadline() // extension 1
		h.passDeadline() // extension 2
		h.wantStage(tournament.StageReveal)
		h.passDeadline() // stop
		var s tournament.GameStoppedData
		h.lastEvent(tournament.EventGameStopped, &s)
		if s.Reason != tournament.ReasonMaxExtensions || s.Stage != tournament.StageReveal || s.Players != 3 || s.Amount != 4*Bet {
			h.t.Errorf("game_stopped %+v", s)
		}
		if n := h.countEvents(tournament.EventStageExtended); n != 1 {
			h.t.Errorf("%d stage_extended events, want 1", n)
		}
		h.wantBalances(Funds-Bet+1334, Funds-Bet+1333, Funds-Bet+1333, Funds-Bet)
	}},
	{"MaxExtensions/RegistrationUnbounded", func(h *harness) {
		cfg := config()
		cfg.MaxExtensions = 1
		h.open(cfg)
		h.register(1)
		h.advance(50 * Timeout)
		h.expire()
		h.wantStage(tournament.StageRegistration)
		h.wantActive(1)
	}},
	{"MaxRounds/FourWeaponsForever", func(h *harness) {
		cfg := config()
		cfg.MaxRounds = 3
		h.open(cfg)
		h.register(1, 2, 3, 4)
		h.passDeadline()
		for r := 1; r <= 3; r++ {
			h.advance(10)
			h.round([]int{1, 2, 3, 4}, Rock, Paper, Scissors, Lizard) // four weapons: everyone replays
		}
		var s tournament.GameStoppedData
		e := h.lastEvent(tournament.EventGameStopped, &s)
		if s.Reason != tournament.ReasonMaxRounds || s.Round != 3 || s.Players != 4 || e.At != h.now {
			h.t.Errorf("game_stopped %+v at %d", s, e.At)
		}
		if g := h.game(); g.Number != 2 {
			h.t.Errorf("game %d after the stop", g.Number)
		}
		h.wantBalances(Funds, Funds, Funds, Funds)
	}},
	{"MaxRounds/DefaultEndsThreeColluders", func(h *harness) {
		// Issue 21's attack: under the default config (what POST /v1/lobbies gives a config of
		// only betSize and playersCountLimit), three accounts play Rock, Paper and Scissors every
		// round, so classic replays every round whatever the fourth plays. The game still ends,
		// split, after DefaultMaxRounds rounds.
		cfg := tournament.DefaultConfig()
		cfg.BetSize, cfg.PlayersCountLimit = Bet, 4
		h.open(cfg)
		h.register(1, 2, 3, 4)
		game := h.game().ID
		honest := []engine.Move{Rock, Paper, Scissors, Lizard, Spock}
		for r := 1; h.gameByID(game).Stage.Open(); r++ {
			if r > tournament.DefaultMaxRounds {
				h.t.Fatalf("round %d of a default game is still open", r)
			}
			h.advance(10)
			h.round([]int{1, 2, 3, 4}, Rock, Paper, Scissors, honest[r%len(honest)])
		}
		var s tournament.GameStoppedData
		h.lastEvent(tournament.EventGameStopped, &s)
		if s.Reason != tournament.ReasonMaxRounds || s.Round != tournament.DefaultMaxRounds || s.Players != 4 || s.Share != Bet {
			h.t.Errorf("game_stopped %+v", s)
		}
		h.wantBalances(Funds, Funds, Funds, Funds)
		cfg.MaxRounds = 0 // unlimited stays possible, as an explicit choice
		h.ok(h.tryNextConfig(h.admin, cfg))
	}},
	{"MaxRounds/DecisiveRoundStillWins", func(h *harness) {
		cfg := config()
		cfg.MaxRounds = 1
		h.open(cfg)
		h.register(1, 2)
		h.passDeadline()
		h.round([]int{1, 2}, Rock, Scissors)
		var f tournament.GameFinishedData
		h.lastEvent(tournament.EventGameFinished, &f)
		if f.Winner != h.p[1].ID {
			h.t.Errorf("game_finished %+v", f)
		}
	}},
	{"ExtensionStartsAtOldDeadline", func(h *harness) {
		h.open(config())
		h.register(1)
		d := h.game().Deadline
		h.now = d + 1234
		h.expire()
		if g := h.game(); g.StageStartedAt != d || g.Deadline != d+Timeout {
			h.t.Errorf("extension from %d to %d, want from the old deadline %d", g.StageStartedAt, g.Deadline, d)
		}
	}},
	{"ExpiryAtDeadlineNotAtRequest", func(h *harness) {
		h.open(config())
		h.register(1, 2)
		d := h.game().Deadline
		h.now = d + 3000
		mark := h.mark()
		h.move(1, Rock) // the request that observes the expiry comes 3 s late
		h.wantEvents(h.eventsSince(mark),
			[]tournament.EventType{tournament.EventRoundStarted, tournament.EventMoveCommitted},
			[]int64{d, d + 3000})
		if g := h.game(); g.StageStartedAt != d || g.Deadline != d+Timeout {
			h.t.Errorf("moves from %d to %d, want from %d", g.StageStartedAt, g.Deadline, d)
		}
	}},
	{"ExpiriesKeptWhenActionRefused", func(h *harness) {
		gearStart(h)
		first := h.game()
		h.move(1, Rock)
		h.now = first.Deadline + 1
		h.mustRefuse(tournament.CodeWrongStage, h.tryMove(h.p[2], Paper, Password))
		g := h.gameByID(first.ID)
		if g.Stage != tournament.StageFinished || g.Winner != h.p[1].ID || g.EndedAt != first.Deadline {
			h.t.Fatalf("game 1 after a refused late move: %s won by %q at %d", g.Stage, g.Winner, g.EndedAt)
		}
		h.wantBalances(Funds+3*Bet, Funds-Bet, Funds-Bet, Funds-Bet)
		// The same with a refusal for another reason: a player's stop after the entry deadline.
		h.register(1, 2)
		h.now = h.game().Deadline + 1
		h.mustRefuse(tournament.CodeForbidden, h.tryStop(h.p[1], "mine"))
		h.wantStage(tournament.StageMoves)
	}},
	{"SeveralDeadlinesAtOnce", func(h *harness) {
		cfg := config()
		cfg.MaxExtensions = 1
		h.open(cfg)
		h.register(1, 2, 3)
		d := h.game().Deadline
		mark := h.mark()
		h.now = d + 1_000_000
		if !h.expire() {
			h.t.Errorf("expire reported no change")
		}
		h.wantEvents(h.eventsSince(mark),
			[]tournament.EventType{tournament.EventRoundStarted, tournament.EventStageExtended, tournament.EventGameStopped, tournament.EventGameOpened},
			[]int64{d, d + Timeout, d + 2*Timeout, d + 2*Timeout})
		h.wantBalances(Funds, Funds, Funds)
		if h.expire() {
			h.t.Errorf("a second expire changed something")
		}
	}},
	{"SeveralDeadlinesAtOnce/MovesThenReveal", func(h *harness) {
		gearStart(h)
		h.move(1, Rock)
		h.move(2, Paper)
		d := h.game().Deadline
		mark := h.mark()
		h.now = d + 3*Timeout
		h.expire()
		h.wantEvents(h.eventsSince(mark),
			[]tournament.EventType{tournament.EventMovesClosed, tournament.EventStageExtended},
			[]int64{d, d + Timeout})
		if g := h.game(); g.Stage != tournament.StageReveal || g.Deadline != d+3*Timeout {
			h.t.Errorf("%s until %d, want reveal until %d", g.Stage, g.Deadline, d+3*Timeout)
		}
		h.reveal(1, 2) // the window is still open at its deadline
		var f tournament.GameFinishedData
		h.lastEvent(tournament.EventGameFinished, &f)
		if f.Winner != h.p[2].ID {
			h.t.Errorf("game_finished %+v", f)
		}
	}},
	{"ShiftAfterOutageKeepsEveryoneIn", func(h *harness) {
		other := h.open(config())
		h.register(5)
		lonely := h.game()
		h.open(config())
		emptyGame := h.game()
		gearStart(h)
		h.advance(1000)
		h.move(1, Rock)
		h.move(2, Paper)
		before := h.game()
		h.advance(1000)
		h.expire() // the last instant the service was up
		const gap = 3_600_000
		h.advance(gap)
		mark := h.mark()
		h.ok(h.shift(gap))
		h.wantEvents(h.eventsSince(mark), []tournament.EventType{tournament.EventClockShifted}, []int64{h.now})
		var cs tournament.ClockShiftedData
		h.lastEvent(tournament.EventClockShifted, &cs)
		if cs.GapMs != gap {
			h.t.Errorf("clock_shifted %+v", cs)
		}
		g := h.game()
		if g.Deadline != before.Deadline+gap || g.StageStartedAt != before.StageStartedAt+gap {
			h.t.Errorf("shifted from %d to %d, want %d to %d", g.StageStartedAt, g.Deadline, before.StageStartedAt+gap, before.Deadline+gap)
		}
		if h.expire() {
			h.t.Errorf("a deadline expired right after the shift")
		}
		h.wantActive(1, 2, 3, 4)
		h.move(3, Scissors)
		h.move(4, Lizard)
		h.wantStage(tournament.StageReveal)
		if g := h.gameByID(lonely.ID); g.Deadline != lonely.Deadline+gap {
			h.t.Errorf("another lobby's registration deadline %d, want %d", g.Deadline, lonely.Deadline+gap)
		}
		if g := h.gameByID(emptyGame.ID); g.Deadline != 0 || g.StageStartedAt != 0 {
			h.t.Errorf("an empty registration got a window %d..%d", g.StageStartedAt, g.Deadline)
		}
		h.lobby = other
		if n := h.countEvents(tournament.EventClockShifted); n != 1 {
			h.t.Errorf("the other lobby has %d clock_shifted events, want 1", n)
		}
	}},
	{"CloseLobby", func(h *harness) {
		h.open(config())
		h.register(1, 2)
		h.passDeadline()
		h.mustRefuse(tournament.CodeForbidden, h.tryClose(h.p[1]))
		h.ok(h.tryClose(h.admin))
		if !h.lobbyRow().Closed {
			h.t.Fatalf("lobby not closed")
		}
		// A game past registration plays on.
		h.round([]int{1, 2}, Rock, Scissors)
		g := h.game()
		if g.Number != 1 || g.Stage != tournament.StageFinished {
			h.t.Fatalf("closed lobby: game %d %s", g.Number, g.Stage)
		}
		h.mustRefuse(tournament.CodeWrongStage, h.tryRegister(h.p[3]))
		h.mustRefuse(tournament.CodeWrongStage, h.tryStop(h.admin, "again"))
		h.ok(h.tryClose(h.admin))
		if n := h.countEvents(tournament.EventLobbyClosed); n != 1 {
			h.t.Errorf("%d lobby_closed events", n)
		}
	}},
	{"CloseLobby/RegistrationStopsAtOnce", func(h *harness) {
		h.open(config())
		h.register(1)
		h.ok(h.tryClose(h.admin))
		if g := h.game(); g.Number != 1 || g.Stage != tournament.StageStopped {
			h.t.Errorf("closed lobby in registration: game %d %s", g.Number, g.Stage)
		}
		if b := h.balance(1); b != Funds {
			h.t.Errorf("the bet was not refunded: balance %d", b)
		}
		h.mustRefuse(tournament.CodeWrongStage, h.tryRegister(h.p[2]))
	}},
	{"CloseLobby/EmptyGameStopsAtOnce", func(h *harness) {
		h.open(config())
		h.ok(h.tryClose(h.admin))
		g := h.game()
		if g.Number != 1 || g.Stage != tournament.StageStopped {
			h.t.Errorf("closed empty lobby: game %d %s", g.Number, g.Stage)
		}
		h.mustRefuse(tournament.CodeWrongStage, h.tryRegister(h.p[1]))
	}},
	{"CreateLobby", func(h *harness) {
		var err error
		h.ok(h.do(func(tx tournament.Tx) error {
			_, err = h.svc.CreateLobby(h.ctx, tx, h.now, h.p[1], "mine", config())
			return nil
		}))
		h.mustRefuse(tournament.CodeForbidden, err)
		bad := config()
		bad.PlayersCountLimit = 1
		h.ok(h.do(func(tx tournament.Tx) error {
			_, err = h.svc.CreateLobby(h.ctx, tx, h.now, h.admin, "bad", bad)
			return nil
		}))
		h.mustInvalid("playersCountLimit", err)
		h.ok(h.do(func(tx tournament.Tx) error {
			_, err = h.svc.CreateLobby(h.ctx, tx, h.now, h.admin, " ", config())
			return nil
		}))
		h.mustInvalid("name", err)
		cfg := config()
		cfg.Ruleset = "rps7"
		h.open(cfg)
		h.wantEvents(h.events(), []tournament.EventType{tournament.EventLobbyCreated, tournament.EventGameOpened}, []int64{Start, Start})
		rs, _ := engine.Builtin().Get("rps7")
		var opened tournament.GameOpenedData
		h.lastEvent(tournament.EventGameOpened, &opened)
		if g := h.game(); g.RulesetHash != rs.HashHex() || opened.RulesetHash != rs.HashHex() || g.Number != 1 || opened.Config != cfg {
			h.t.Errorf("game %d records ruleset %s (event %s), want %s", g.Number, g.RulesetHash, opened.RulesetHash, rs.HashHex())
		}
	}},
	{"UnknownLobby", func(h *harness) {
		h.open(config())
		h.lobby = tournament.LobbyID(NewID())
		h.mustRefuse(tournament.CodeNotFound, h.tryRegister(h.p[1]))
		h.lobby = h.lobbies[0]
	}},
	{"RefusalOrder", func(h *harness) {
		cfg := config()
		cfg.StartWhenFull = false
		cfg.PlayersCountLimit = 2
		h.open(cfg)
		h.register(1, 2)
		h.mustRefuse(tournament.CodeAlreadyRegistered, h.tryRegister(h.p[1]))
		poor := h.newAccount("poor", tournament.RolePlayer, 0)
		h.mustRefuse(tournament.CodeLobbyFull, h.tryRegister(poor))
		h.mustRefuse(tournament.CodeWrongStage, h.tryMove(h.admin, Rock, Password))
		h.passDeadline()
		h.ok(h.tryCommit(h.p[1], engine.Commit("9"+Password)))
		h.move(2, Rock)
		h.mustRefuse(tournament.CodeCommitmentMismatch, h.tryReveal(h.p[1], "8"+Password)) // both wrong
		h.mustRefuse(tournament.CodeInvalidMove, h.tryReveal(h.p[1], "9"+Password))
		h.mustRefuse(tournament.CodeNotInGame, h.tryReveal(h.p[3], "9"+Password))
		h.ok(h.tryReveal(h.p[2], "0"+Password))
		h.mustRefuse(tournament.CodeCommitmentMismatch, h.tryReveal(h.p[2], "1"+Password))
		h.mustRefuse(tournament.CodeAlreadyRevealed, h.tryReveal(h.p[2], "0"+Password))
		h.mustInvalid("reason", h.tryStop(h.admin, " "))
		for _, rules := range []string{tournament.ReasonMaxExtensions, tournament.ReasonMaxRounds, tournament.ReasonLobbyClosed, " max_rounds "} {
			h.mustInvalid("reason", h.tryStop(h.admin, rules))
		}
	}},
	{"Rulesets", func(h *harness) {
		cfg := config()
		cfg.Ruleset = "rps"
		h.open(cfg)
		h.register(1, 2)
		h.passDeadline()
		h.move(1, Lizard) // a digit of RPSLS but not of RPS
		h.move(2, Rock)
		h.mustRefuse(tournament.CodeInvalidMove, h.tryReveal(h.p[1], "3"+Password))
		h.reveal(2)
		h.passDeadline()
		h.wantBalances(Funds-Bet, Funds+Bet)

		cfg.Ruleset = "rps7"
		h.open(cfg)
		h.register(1, 2)
		h.passDeadline()
		h.move(1, 6) // Water beats Rock
		h.move(2, 0)
		h.reveal(1, 2)
		var f tournament.GameFinishedData
		h.lastEvent(tournament.EventGameFinished, &f)
		if f.Winner != h.p[1].ID {
			h.t.Errorf("rps7: game_finished %+v", f)
		}
		var rr tournament.RoundResolvedData
		h.lastEvent(tournament.EventRoundResolved, &rr)
		if len(rr.Counts) != 7 || rr.Counts[6] != 1 || rr.Counts[0] != 1 {
			h.t.Errorf("rps7: round_resolved %+v", rr)
		}
	}},
	{"RevealTooLong", func(h *harness) {
		h.open(config())
		h.register(1, 2)
		h.passDeadline()
		long := "0" + strings.Repeat("x", engine.MaxRevealBytes)
		h.ok(h.tryCommit(h.p[1], engine.Commit(long)))
		h.move(2, Rock)
		h.mustInvalid("reveal", h.tryReveal(h.p[1], long))
	}},
	{"Weighted", func(h *harness) {
		// Rock, Paper and three Scissors: classic sees a cycle and replays everyone; weighted
		// scores Rock +3-1, Paper +1-3, Scissors +1-1, and Rock wins.
		for _, c := range []struct {
			res  engine.Resolution
			want []int
		}{{engine.Classic, []int{1, 2, 3, 4, 5}}, {engine.Weighted, []int{1}}} {
			cfg := config()
			cfg.Resolution = c.res
			h.open(cfg)
			h.register(1, 2, 3, 4, 5)
			game := h.game().ID
			h.round([]int{1, 2, 3, 4, 5}, Rock, Paper, Scissors, Scissors, Scissors)
			var got []int
			for _, p := range h.playersOf(game) {
				if p.Active {
					got = append(got, h.num(p.AccountID))
				}
			}
			if !equalInts(got, c.want) {
				h.t.Errorf("%s: active %v, want %v", c.res, got, c.want)
			}
			var rr tournament.RoundResolvedData
			h.lastEvent(tournament.EventRoundResolved, &rr)
			if c.res == engine.Weighted && (len(rr.Scores) != 5 || rr.Scores[0] != 2 || rr.Scores[1] != -2 || rr.Scores[2] != 0) {
				h.t.Errorf("weighted scores %v", rr.Scores)
			}
			if c.res == engine.Classic && rr.Scores != nil {
				h.t.Errorf("classic round has scores %v", rr.Scores)
			}
		}
	}},
	{"StopEmptyRegistration", func(h *harness) {
		h.open(config())
		h.stop()
		var s tournament.GameStoppedData
		h.lastEvent(tournament.EventGameStopped, &s)
		if s.Amount != 0 || s.Players != 0 {
			h.t.Errorf("game_stopped %+v", s)
		}
		h.wantStage(tournament.StageRegistration)
	}},
	{"Treasury", func(h *harness) {
		credit := func(a tournament.Actor, id tournament.AccountID, amount int64) error {
			return h.do(func(tx tournament.Tx) error {
				_, err := h.svc.Credit(h.ctx, tx, h.now, a, id, amount, tournament.MoneyNote{})
				return err
			})
		}
		debit := func(a tournament.Actor, id tournament.AccountID, amount int64) error {
			return h.do(func(tx tournament.Tx) error {
				_, err := h.svc.Debit(h.ctx, tx, h.now, a, id, amount, tournament.MoneyNote{})
				return err
			})
		}
		h.ok(credit(h.admin, h.p[1].ID, 500))
		h.credited += 500
		h.ok(debit(h.admin, h.p[2].ID, 700))
		h.credited -= 700
		h.wantBalances(Funds+500, Funds-700)
		h.mustRefuse(tournament.CodeInsufficientFunds, debit(h.admin, h.p[2].ID, Funds))
		h.mustRefuse(tournament.CodeForbidden, credit(h.p[1], h.p[1].ID, 500))
		h.mustRefuse(tournament.CodeForbidden, credit(h.admin, h.admin.ID, 500))
		h.mustRefuse(tournament.CodeNotFound, credit(h.admin, newAccountID(), 500))
		h.mustInvalid("amount", credit(h.admin, h.p[1].ID, 0))
		h.mustInvalid("amount", debit(h.admin, h.p[1].ID, -1))
		h.wantBalances(Funds+500, Funds-700)
		// Money held in an escrow cannot be withdrawn.
		h.open(config())
		h.register(3)
		h.mustRefuse(tournament.CodeInsufficientFunds, debit(h.admin, h.p[3].ID, Funds))
	}},
	{"FreeGame", func(h *harness) {
		cfg := config()
		cfg.BetSize = 0
		h.open(cfg)
		h.register(1, 2)
		h.passDeadline()
		h.round([]int{1, 2}, Paper, Rock)
		h.wantBalances(Funds, Funds)
		var f tournament.GameFinishedData
		h.lastEvent(tournament.EventGameFinished, &f)
		if f.Winner != h.p[1].ID || f.Amount != 0 {
			h.t.Errorf("game_finished %+v", f)
		}
	}},
	{"JoinableIsRegistrationsRule", func(h *harness) {
		// A game is Joinable exactly when Register would not refuse a fresh, funded player with
		// wrong_stage or lobby_full: the one definition the store's lobby lists are held to.
		cfg := config()
		cfg.PlayersCountLimit = 3
		cfg.StartWhenFull = false
		h.open(cfg)
		newcomer := 0
		check := func(step string) {
			h.t.Helper()
			joinable := h.game().Joinable()
			newcomer++
			a := h.newAccount(fmt.Sprint("newcomer", newcomer), tournament.RolePlayer, Funds)
			err := h.tryRegister(a)
			refusal, refused := tournament.IsRefusal(err)
			gameWide := refused && (refusal.Code == tournament.CodeWrongStage || refusal.Code == tournament.CodeLobbyFull)
			if joinable == gameWide || (err != nil && !refused) {
				h.t.Errorf("%s: Joinable %v, a newcomer's registration: %v", step, joinable, err)
			}
			if err == nil {
				h.ok(h.tryLeave(a)) // keeps the game as it was
			}
		}
		check("empty registration")
		h.register(1, 2)
		check("two of three")
		h.register(3)
		check("full")
		h.passDeadline()
		check("moves")
		h.stop()
		check("the next game")
	}},
	{"JoinIsTentative", func(h *harness) {
		// A quick join's registration in a game that is no longer joinable is a tentative
		// refusal: not the request's answer, so not kept under its idempotency key.
		cfg := config()
		cfg.PlayersCountLimit = 2
		h.open(cfg)
		h.ok(h.apply(h.p[1], tournament.Join{LobbyID: h.lobby, BetSize: cfg.BetSize}))
		err := h.apply(h.p[1], tournament.Join{LobbyID: h.lobby, BetSize: cfg.BetSize})
		if r, ok := tournament.IsRefusal(err); !ok || r.Code != tournament.CodeAlreadyRegistered || !r.Tentative() || r.Replayable() {
			h.t.Errorf("joining twice: %v, want a tentative already_registered", err)
		}
		h.register(2) // full: the game starts
		err = h.apply(h.p[3], tournament.Join{LobbyID: h.lobby, BetSize: cfg.BetSize})
		if r, ok := tournament.IsRefusal(err); !ok || r.Code != tournament.CodeWrongStage || !r.Tentative() || r.Replayable() {
			h.t.Errorf("joining a started game: %v, want a tentative wrong_stage", err)
		}
		err = h.tryRegister(h.p[3])
		if r, ok := tournament.IsRefusal(err); !ok || r.Tentative() || !r.Replayable() {
			h.t.Errorf("registering in a started game: %v, want a refusal kept under the key", err)
		}
	}},
}
