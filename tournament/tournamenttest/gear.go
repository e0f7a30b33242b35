package tournamenttest

import (
	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/tournament"
)

// gearStart is the helper of Gear's tests: players p1..p4 register in a lobby with Gear's config
// and the entry deadline passes, so round 1's moves stage is open.
func gearStart(h *harness) {
	h.t.Helper()
	h.open(config())
	h.register(1, 2, 3, 4)
	h.passDeadline()
	h.wantStage(tournament.StageMoves)
}

// gearScenarios are Gear's test suite (contracts/rock-paper-scissors/tests/), as stories.
var gearScenarios = []scenario{
	// register.rs

	{"Register/Common", func(h *harness) {
		h.open(config())
		h.register(1, 2, 3, 4)
		g := h.game()
		if g.Stage != tournament.StageRegistration || g.Players != 4 || g.Escrow != 4*Bet {
			h.t.Fatalf("after 4 registrations: stage %s, %d players, escrow %d", g.Stage, g.Players, g.Escrow)
		}
		h.wantBalances(Funds-Bet, Funds-Bet, Funds-Bet, Funds-Bet, Funds)
		for k, p := range h.playersOf(g.ID) {
			if p.AccountID != h.p[k+1].ID || p.Order != k+1 || !p.Active {
				h.t.Errorf("player %d: %+v", k+1, p)
			}
		}
	}},
	{"Register/Twice", func(h *harness) {
		h.open(config())
		h.register(1)
		h.mustRefuse(tournament.CodeAlreadyRegistered, h.tryRegister(h.p[1]))
		h.wantBalances(Funds - Bet)
		if g := h.game(); g.Players != 1 || g.Escrow != Bet {
			h.t.Errorf("players %d escrow %d", g.Players, g.Escrow)
		}
	}},
	{"Register/BetLargerThanBalance", func(h *harness) {
		h.open(config())
		poor := h.newAccount("poor", tournament.RolePlayer, Bet-1)
		h.mustRefuse(tournament.CodeInsufficientFunds, h.tryRegister(poor))
		exact := h.newAccount("exact", tournament.RolePlayer, Bet)
		h.ok(h.tryRegister(exact))
		if g := h.game(); g.Players != 1 {
			h.t.Errorf("players %d, want 1", g.Players)
		}
	}},
	{"Register/MoreThanPossible/StartWhenFullOff", func(h *harness) {
		cfg := config()
		cfg.StartWhenFull = false
		h.open(cfg)
		h.register(1, 2, 3, 4, 5)
		h.wantStage(tournament.StageRegistration)
		h.mustRefuse(tournament.CodeLobbyFull, h.tryRegister(h.p[6]))
		h.passDeadline()
		h.wantStage(tournament.StageMoves)
		h.wantActive(1, 2, 3, 4, 5)
	}},
	{"Register/MoreThanPossible/StartWhenFullOn", func(h *harness) {
		h.open(config())
		h.register(1, 2, 3, 4, 5)
		h.wantStage(tournament.StageMoves)
		h.mustRefuse(tournament.CodeWrongStage, h.tryRegister(h.p[6]))
	}},
	{"Register/InProgress", func(h *harness) {
		gearStart(h)
		h.mustRefuse(tournament.CodeWrongStage, h.tryRegister(h.p[5]))
		h.mustRefuse(tournament.CodeWrongStage, h.tryRegister(h.p[1]))
	}},
	{"Register/OnRevealStage", func(h *harness) {
		gearStart(h)
		h.move(1, Rock)
		h.move(2, Paper)
		h.move(3, Scissors)
		h.move(4, Lizard)
		h.wantStage(tournament.StageReveal)
		h.mustRefuse(tournament.CodeWrongStage, h.tryRegister(h.p[5]))
	}},
	{"Register/AfterFirstRound", func(h *harness) {
		gearStart(h)
		h.round([]int{1, 2, 3, 4}, Lizard, Paper, Scissors, Rock) // a tie: everyone replays
		if g := h.game(); g.Stage != tournament.StageMoves || g.Round != 2 {
			h.t.Fatalf("after a tie: %s round %d", g.Stage, g.Round)
		}
		h.mustRefuse(tournament.CodeWrongStage, h.tryRegister(h.p[5]))
	}},
	{"Register/AfterGame", func(h *harness) {
		h.open(config())
		h.register(1, 2, 3)
		h.passDeadline()
		first := h.game().ID
		h.round([]int{1, 2, 3}, Paper, Rock, Rock)
		if g := h.gameByID(first); g.Stage != tournament.StageFinished || g.Winner != h.p[1].ID {
			h.t.Fatalf("game 1: %s won by %s", g.Stage, g.Winner)
		}
		h.wantStage(tournament.StageRegistration)
		h.register(1, 2, 3, 4)
		h.wantBalances(Funds+2*Bet-Bet, Funds-2*Bet, Funds-2*Bet, Funds-Bet)
	}},

	// timeout.rs, entry timer; register.rs prolongation

	{"EntryTimeout/NoPlayers", func(h *harness) {
		h.open(config())
		mark := h.mark()
		h.advance(100 * Timeout)
		if h.expire() {
			h.t.Errorf("an empty registration expired")
		}
		if g := h.game(); g.Deadline != 0 || g.Stage != tournament.StageRegistration || g.Number != 1 {
			h.t.Errorf("empty registration: %+v", g)
		}
		h.wantEvents(h.eventsSince(mark), nil, nil)
	}},
	{"EntryTimeout/OnePlayer", func(h *harness) {
		h.open(config())
		h.register(1)
		d := h.game().Deadline
		if d != Start+Timeout {
			h.t.Fatalf("deadline %d, want start + timeout", d)
		}
		mark := h.mark()
		h.passDeadline()
		h.wantStage(tournament.StageRegistration)
		h.wantActive(1)
		h.wantEvents(h.eventsSince(mark), []tournament.EventType{tournament.EventStageExtended}, []int64{d})
		var ext tournament.StageExtendedData
		h.lastEvent(tournament.EventStageExtended, &ext)
		if ext.Stage != tournament.StageRegistration || ext.Deadline != d+Timeout {
			h.t.Errorf("extension %+v, want registration until %d", ext, d+Timeout)
		}
	}},
	{"EntryTimeout/OnePlayerThenSecond", func(h *harness) {
		h.open(config())
		h.register(1)
		h.passDeadline() // extended
		h.wantActive(1)
		h.register(2)
		h.wantStage(tournament.StageRegistration)
		d := h.game().Deadline
		h.passDeadline()
		g := h.game()
		if g.Stage != tournament.StageMoves || g.StageStartedAt != d {
			h.t.Fatalf("after the extended deadline: %s started at %d, want moves at %d", g.Stage, g.StageStartedAt, d)
		}
		h.move(1, Rock)
		h.move(2, Scissors)
		h.wantStage(tournament.StageReveal)
	}},
	{"EntryTimeout/TwoPlayers", func(h *harness) {
		h.open(config())
		h.register(1, 2)
		d := h.game().Deadline
		mark := h.mark()
		h.passDeadline()
		h.wantEvents(h.eventsSince(mark), []tournament.EventType{tournament.EventRoundStarted}, []int64{d})
		var rs tournament.RoundStartedData
		h.lastEvent(tournament.EventRoundStarted, &rs)
		if rs.Round != 1 || rs.Players != 2 || rs.Deadline != d+Timeout {
			h.t.Errorf("round_started %+v", rs)
		}
	}},

	// init.rs check_all_users_bet; user_move.rs

	{"Move/EntryDeadlineBoundary", func(h *harness) {
		h.open(config())
		h.register(1, 2, 3, 4)
		d := h.game().Deadline
		h.now = d - 1
		h.mustRefuse(tournament.CodeWrongStage, h.tryMove(h.p[1], Rock, Password))
		h.now = d
		h.mustRefuse(tournament.CodeWrongStage, h.tryMove(h.p[1], Rock, Password))
		h.mustRefuse(tournament.CodeWrongStage, h.tryReveal(h.p[1], "0"+Password))
		h.wantStage(tournament.StageRegistration)
		h.now = d + 1
		h.move(1, Rock)
		if g := h.game(); g.Stage != tournament.StageMoves || g.StageStartedAt != d || g.Committed != 1 {
			h.t.Errorf("1 ms after the deadline: %s from %d with %d commits", g.Stage, g.StageStartedAt, g.Committed)
		}
	}},
	{"Move/Twice", func(h *harness) {
		gearStart(h)
		h.move(1, Rock)
		h.mustRefuse(tournament.CodeAlreadyCommitted, h.tryMove(h.p[1], Paper, Password))
		if g := h.game(); g.Committed != 1 {
			h.t.Errorf("committed %d", g.Committed)
		}
	}},
	{"Move/Outsider", func(h *harness) {
		gearStart(h)
		h.mustRefuse(tournament.CodeNotInGame, h.tryMove(h.p[5], Rock, Password))
	}},
	{"Move/OnRevealStage", func(h *harness) {
		gearStart(h)
		for i, m := range []engine.Move{Rock, Paper, Scissors, Lizard} {
			h.move(i+1, m)
		}
		h.wantStage(tournament.StageReveal)
		h.mustRefuse(tournament.CodeWrongStage, h.tryMove(h.p[1], Rock, Password))
		h.mustRefuse(tournament.CodeWrongStage, h.tryMove(h.p[5], Rock, Password))
		h.reveal(1)
		if g := h.game(); g.Revealed != 1 {
			h.t.Errorf("revealed %d", g.Revealed)
		}
	}},
	{"Move/SecondRoundWithoutBet", func(h *harness) {
		gearStart(h)
		h.round([]int{1, 2, 3, 4}, Lizard, Paper, Scissors, Rock)
		h.wantActive(1, 2, 3, 4)
		h.move(1, Rock)
		h.move(2, Spock)
		h.wantBalances(Funds-Bet, Funds-Bet, Funds-Bet, Funds-Bet)
		if g := h.game(); g.Round != 2 || g.Escrow != 4*Bet || g.Committed != 2 {
			h.t.Errorf("round 2: round %d escrow %d committed %d", g.Round, g.Escrow, g.Committed)
		}
	}},
	{"Move/EliminatedPlayer", func(h *harness) {
		gearStart(h)
		h.round([]int{1, 2, 3, 4}, Rock, Rock, Scissors, Scissors)
		h.wantActive(1, 2)
		h.mustRefuse(tournament.CodeNotInGame, h.tryMove(h.p[3], Rock, Password))
	}},

	// timeout.rs, move and reveal timers

	{"MoveTimeout/NoMoves", func(h *harness) {
		gearStart(h)
		d := h.game().Deadline
		mark := h.mark()
		h.passDeadline()
		h.wantEvents(h.eventsSince(mark), []tournament.EventType{tournament.EventStageExtended}, []int64{d})
		if g := h.game(); g.Stage != tournament.StageMoves || g.Deadline != d+Timeout || g.Round != 1 {
			h.t.Errorf("after an empty move timeout: %s round %d until %d", g.Stage, g.Round, g.Deadline)
		}
		h.wantActive(1, 2, 3, 4)
	}},
	{"MoveTimeout/OneMove", func(h *harness) {
		gearStart(h)
		first := h.game()
		h.move(1, Rock)
		h.now = first.Deadline + 1
		h.register(1) // as in Gear, an action observes the timeout: p1 wins and joins the next game
		g := h.gameByID(first.ID)
		if g.Stage != tournament.StageFinished || g.Winner != h.p[1].ID || g.Payout != 4*Bet || g.EndedAt != first.Deadline {
			h.t.Fatalf("game 1: %s won by %s (%d) at %d", g.Stage, g.Winner, g.Payout, g.EndedAt)
		}
		h.wantBalances(Funds+3*Bet-Bet, Funds-Bet, Funds-Bet, Funds-Bet)
		if n := h.game().Number; n != 2 {
			h.t.Errorf("current game %d", n)
		}
	}},
	{"MoveTimeout/TwoOfThree", func(h *harness) {
		h.open(config())
		h.register(1, 2, 3)
		h.passDeadline()
		h.move(1, Rock)
		h.move(2, Paper)
		h.passDeadline()
		h.wantStage(tournament.StageReveal)
		h.wantActive(1, 2)
		var mc tournament.MovesClosedData
		h.lastEvent(tournament.EventMovesClosed, &mc)
		if mc.Committed != 2 || mc.Eliminated != 1 {
			h.t.Errorf("moves_closed %+v", mc)
		}
		h.mustRefuse(tournament.CodeNotInGame, h.tryReveal(h.p[3], "0"+Password))
		h.mustRefuse(tournament.CodeWrongStage, h.tryMove(h.p[3], Rock, Password))
		h.reveal(1, 2)
		if g := h.game(); g.Number != 2 {
			h.t.Errorf("the round did not end the game")
		}
		h.wantBalances(Funds-Bet, Funds+2*Bet, Funds-Bet)
	}},

	// reveal.rs

	{"Reveal/WrongPassword", func(h *harness) {
		gearStart(h)
		for i, m := range []engine.Move{Rock, Paper, Scissors, Lizard} {
			h.move(i+1, m)
		}
		before, mark := h.game(), h.mark()
		h.mustRefuse(tournament.CodeCommitmentMismatch, h.tryReveal(h.p[1], "0wrong"))
		h.mustRefuse(tournament.CodeCommitmentMismatch, h.tryReveal(h.p[1], "1"+Password))
		if after := h.game(); after != before {
			h.t.Errorf("a refused reveal changed the game:\n%+v\n%+v", before, after)
		}
		h.wantEvents(h.eventsSince(mark), nil, nil)
		for _, m := range h.moves(before.Round) {
			if m.Revealed {
				h.t.Errorf("%s revealed after a refused reveal", m.AccountID)
			}
		}
		h.reveal(1) // the player may try again
		if g := h.game(); g.Revealed != 1 {
			h.t.Errorf("revealed %d", g.Revealed)
		}
	}},
	{"Reveal/Twice", func(h *harness) {
		gearStart(h)
		for i, m := range []engine.Move{Rock, Paper, Scissors, Lizard} {
			h.move(i+1, m)
		}
		h.reveal(1)
		h.mustRefuse(tournament.CodeAlreadyRevealed, h.tryReveal(h.p[1], h.secrets[h.p[1].ID]))
		if g := h.game(); g.Revealed != 1 {
			h.t.Errorf("revealed %d", g.Revealed)
		}
	}},
	{"Reveal/WithoutCommitment", func(h *harness) {
		h.open(config())
		h.register(1, 2, 3, 4)
		h.passDeadline()
		h.move(1, Rock)
		h.move(2, Paper)
		h.move(3, Scissors)
		h.passDeadline()
		h.wantStage(tournament.StageReveal)
		h.mustRefuse(tournament.CodeNotInGame, h.tryReveal(h.p[4], "0"+Password))
		h.mustRefuse(tournament.CodeNotInGame, h.tryReveal(h.p[5], "0"+Password))
	}},
	{"Reveal/InMoveStage", func(h *harness) {
		gearStart(h)
		h.move(1, Rock)
		h.mustRefuse(tournament.CodeWrongStage, h.tryReveal(h.p[1], h.secrets[h.p[1].ID]))
		h.mustRefuse(tournament.CodeWrongStage, h.tryReveal(h.p[2], "0"+Password))
	}},
	{"Reveal/DigitOutsideRuleset", func(h *harness) {
		gearStart(h)
		h.ok(h.tryCommit(h.p[1], engine.Commit("7"+Password)))
		h.ok(h.tryCommit(h.p[2], engine.Commit("x"+Password)))
		h.move(3, Rock)
		h.move(4, Scissors)
		h.mustRefuse(tournament.CodeInvalidMove, h.tryReveal(h.p[1], "7"+Password))
		h.mustRefuse(tournament.CodeInvalidMove, h.tryReveal(h.p[2], "x"+Password))
		h.reveal(3, 4)
		h.wantStage(tournament.StageReveal) // p1 and p2 can never reveal
		h.passDeadline()
		if g := h.game(); g.Number != 2 {
			h.t.Fatalf("the reveal timeout did not end game 1")
		}
		h.wantBalances(Funds-Bet, Funds-Bet, Funds+3*Bet, Funds-Bet)
	}},
	{"RevealTimeout/NoReveals", func(h *harness) {
		gearStart(h)
		for i, m := range []engine.Move{Rock, Paper, Scissors, Lizard} {
			h.move(i+1, m)
		}
		d := h.game().Deadline
		mark := h.mark()
		h.passDeadline()
		h.wantEvents(h.eventsSince(mark), []tournament.EventType{tournament.EventStageExtended}, []int64{d})
		if g := h.game(); g.Stage != tournament.StageReveal || g.Deadline != d+Timeout {
			h.t.Errorf("after an empty reveal timeout: %s until %d", g.Stage, g.Deadline)
		}
		h.wantActive(1, 2, 3, 4)
	}},
	{"RevealTimeout/OneReveal", func(h *harness) {
		gearStart(h)
		for i, m := range []engine.Move{Rock, Paper, Scissors, Lizard} {
			h.move(i+1, m)
		}
		h.reveal(3)
		h.passDeadline()
		h.wantStage(tournament.StageRegistration)
		var f tournament.GameFinishedData
		h.lastEvent(tournament.EventGameFinished, &f)
		if f.Winner != h.p[3].ID || f.Amount != 4*Bet {
			h.t.Errorf("game_finished %+v", f)
		}
		h.wantBalances(Funds-Bet, Funds-Bet, Funds+3*Bet, Funds-Bet)
	}},
	{"RevealTimeout/TwoRocks", func(h *harness) {
		h.open(config())
		h.register(1, 2, 3)
		h.passDeadline()
		h.move(1, Rock)
		h.move(2, Rock)
		h.move(3, Paper)
		h.reveal(1, 2)
		h.passDeadline()
		if g := h.game(); g.Stage != tournament.StageMoves || g.Round != 2 {
			h.t.Fatalf("after (Rock, Rock): %s round %d", g.Stage, g.Round)
		}
		h.wantActive(1, 2)
		h.mustRefuse(tournament.CodeWrongStage, h.tryReveal(h.p[3], "1"+Password))
		h.mustRefuse(tournament.CodeNotInGame, h.tryMove(h.p[3], Rock, Password))
	}},
	{"Reveal/GameOver", func(h *harness) {
		gearStart(h)
		h.round([]int{1, 2, 3, 4}, Spock, Lizard, Spock, Spock)
		h.wantStage(tournament.StageRegistration)
		h.wantBalances(Funds-Bet, Funds+3*Bet, Funds-Bet, Funds-Bet)
	}},
	{"Reveal/Outcomes", func(h *harness) {
		for _, c := range []struct {
			moves []engine.Move
			want  []int // the active players afterwards; one means that player won
		}{
			{[]engine.Move{Lizard, Paper, Scissors, Rock}, []int{1, 2, 3, 4}},
			{[]engine.Move{Rock, Rock, Spock, Rock}, []int{3}},
			{[]engine.Move{Rock, Rock, Spock, Scissors}, []int{3}},
			{[]engine.Move{Spock, Lizard, Lizard, Spock}, []int{2, 3}},
			{[]engine.Move{Spock, Lizard, Lizard, Paper}, []int{2, 3}},
			{[]engine.Move{Rock, Paper, Scissors, Lizard, Spock}, []int{1, 2, 3, 4, 5}},
			{[]engine.Move{Rock, Rock, Rock, Rock, Rock}, []int{1, 2, 3, 4, 5}},
			{[]engine.Move{Paper, Rock, Spock}, []int{1}},
			{[]engine.Move{Scissors, Rock, Lizard}, []int{2}},
			{[]engine.Move{Rock, Paper, Scissors}, []int{1, 2, 3}},
		} {
			h.open(config())
			var ps []int
			for i := range c.moves {
				ps = append(ps, i+1)
			}
			h.register(ps...)
			if h.stage() == tournament.StageRegistration {
				h.passDeadline()
			}
			game := h.game().ID
			h.round(ps, c.moves...)
			var got []int
			for _, p := range h.playersOf(game) {
				if p.Active {
					got = append(got, h.num(p.AccountID))
				}
			}
			if !equalInts(got, c.want) {
				h.t.Errorf("%v: active %v, want %v", c.moves, got, c.want)
			}
			g := h.gameByID(game)
			if len(c.want) == 1 && (g.Stage != tournament.StageFinished || g.Winner != h.p[c.want[0]].ID) {
				h.t.Errorf("%v: %s won by %s", c.moves, g.Stage, g.Winner)
			}
			if len(c.want) > 1 && (g.Stage != tournament.StageMoves || g.Round != 2) {
				h.t.Errorf("%v: %s round %d, want round 2", c.moves, g.Stage, g.Round)
			}
		}
	}},
	{"MultiRound/SeveralRounds", func(h *harness) {
		gearStart(h)
		h.round([]int{1, 2, 3, 4}, Spock, Lizard, Lizard, Spock)
		h.wantActive(2, 3)
		h.round([]int{2, 3}, Scissors, Scissors)
		h.wantActive(2, 3)
		if g := h.game(); g.Round != 3 {
			h.t.Fatalf("round %d, want 3", g.Round)
		}
		h.round([]int{2, 3}, Rock, Scissors)
		var f tournament.GameFinishedData
		h.lastEvent(tournament.EventGameFinished, &f)
		if f.Winner != h.p[2].ID || f.Amount != 4*Bet || f.Round != 3 {
			h.t.Errorf("game_finished %+v", f)
		}
		h.wantBalances(Funds-Bet, Funds+3*Bet, Funds-Bet, Funds-Bet)
	}},

	// stop_the_game.rs

	{"Stop/InRegistration", func(h *harness) {
		h.open(config())
		h.register(1, 2, 3)
		first := h.game().ID
		h.stop()
		h.wantBalances(Funds, Funds, Funds, Funds)
		var s tournament.GameStoppedData
		h.lastEvent(tournament.EventGameStopped, &s)
		if s.Stage != tournament.StageRegistration || s.Amount != 3*Bet || s.Players != 3 || s.Share != Bet || s.Remainder != 0 || s.Reason != "test stop" {
			h.t.Errorf("game_stopped %+v", s)
		}
		if g := h.gameByID(first); g.Stage != tournament.StageStopped || g.StopReason != "test stop" {
			h.t.Errorf("game 1 %s (%q)", g.Stage, g.StopReason)
		}
		if g := h.game(); g.Number != 2 || g.Stage != tournament.StageRegistration {
			h.t.Errorf("game %d %s after the stop", g.Number, g.Stage)
		}
	}},
	{"Stop/Round1Moves", func(h *harness) {
		gearStart(h)
		h.move(1, Rock)
		h.stop()
		h.wantBalances(Funds, Funds, Funds, Funds)
	}},
	{"Stop/RevealNoReveals", func(h *harness) {
		gearStart(h)
		for i, m := range []engine.Move{Rock, Paper, Scissors, Lizard} {
			h.move(i+1, m)
		}
		h.stop()
		h.wantBalances(Funds, Funds, Funds, Funds)
	}},
	{"Stop/RevealTwoReveals", func(h *harness) {
		gearStart(h)
		for i, m := range []engine.Move{Rock, Paper, Scissors, Lizard} {
			h.move(i+1, m)
		}
		h.reveal(1, 2)
		h.stop()
		h.wantBalances(Funds, Funds, Funds, Funds)
	}},
	{"Stop/RevealOnlyCommitters", func(h *harness) {
		gearStart(h)
		h.move(1, Rock)
		h.move(2, Paper)
		h.move(3, Scissors)
		h.passDeadline() // p4 is out
		h.reveal(2)
		h.stop()
		// 4B among the 3 committers, revealed or not: 1333 each, 1 unit to the first registered.
		h.wantBalances(Funds-Bet+1334, Funds-Bet+1333, Funds-Bet+1333, Funds-Bet)
	}},
	{"Stop/Round2Start", func(h *harness) {
		gearStart(h)
		h.round([]int{1, 2, 3, 4}, Lizard, Paper, Scissors, Rock)
		h.stop()
		h.wantBalances(Funds, Funds, Funds, Funds)
	}},
	{"Stop/Round2Middle", func(h *harness) {
		gearStart(h)
		h.round([]int{1, 2, 3, 4}, Lizard, Paper, Scissors, Rock)
		h.move(1, Rock)
		h.move(3, Rock)
		h.stop()
		h.wantBalances(Funds, Funds, Funds, Funds)
	}},
	{"Stop/ThreeLizards", func(h *harness) {
		// Bet 1001: 4B = 4004 = 3 x 1334 + 2. The players register in the reverse of their ids'
		// order, so the remainder's order (registration) differs from the bytewise id order.
		cfg := config()
		cfg.BetSize = 1001
		h.open(cfg)
		h.register(4, 3, 2, 1)
		h.passDeadline()
		h.round([]int{4, 3, 2, 1}, Lizard, Paper, Lizard, Lizard)
		h.wantActive(4, 2, 1)
		h.move(4, Rock)
		h.stop()
		var s tournament.GameStoppedData
		h.lastEvent(tournament.EventGameStopped, &s)
		if s.Amount != 4004 || s.Players != 3 || s.Share != 1334 || s.Remainder != 2 || s.Round != 2 {
			h.t.Errorf("game_stopped %+v", s)
		}
		h.wantBalances(Funds-1001+1334, Funds-1001+1335, Funds-1001, Funds-1001+1335)
	}},
	{"Stop/NotAdmin", func(h *harness) {
		gearStart(h)
		h.mustRefuse(tournament.CodeForbidden, h.tryStop(h.p[1], "mine"))
		h.wantStage(tournament.StageMoves)
	}},

	// change_config.rs

	{"NextConfig/AppliedWhenGameEnds", func(h *harness) {
		h.open(config())
		h.register(1, 2)
		next := config()
		next.BetSize = 2 * Bet
		next.PlayersCountLimit = 3
		h.ok(h.tryNextConfig(h.admin, next))
		if l := h.lobbyRow(); l.NextConfig == nil || *l.NextConfig != next || l.Config != config() {
			h.t.Fatalf("lobby after the change: config %+v next %+v", l.Config, l.NextConfig)
		}
		h.register(3)
		h.passDeadline()
		if g := h.game(); g.Config != config() || g.Escrow != 3*Bet {
			h.t.Fatalf("the current game changed: %+v", g.Config)
		}
		h.round([]int{1, 2, 3}, Paper, Rock, Rock)
		g := h.game()
		if g.Number != 2 || g.Config != next {
			h.t.Fatalf("game %d config %+v, want %+v", g.Number, g.Config, next)
		}
		if l := h.lobbyRow(); l.NextConfig != nil || l.Config != next {
			h.t.Errorf("lobby after the game: config %+v next %+v", l.Config, l.NextConfig)
		}
		h.register(1, 2, 3)
		h.wantStage(tournament.StageMoves) // limit 3, full
		h.wantBalances(Funds+2*Bet-2*Bet, Funds-Bet-2*Bet, Funds-Bet-2*Bet)
	}},
	{"NextConfig/LastChangeWins", func(h *harness) {
		h.open(config())
		for _, bet := range []int64{2 * Bet, 3 * Bet} {
			next := config()
			next.BetSize = bet
			h.ok(h.tryNextConfig(h.admin, next))
		}
		h.register(1, 2)
		h.stop()
		if g := h.game(); g.Config.BetSize != 3*Bet {
			h.t.Errorf("next game's bet %d, want %d", g.Config.BetSize, 3*Bet)
		}
	}},
	{"NextConfig/Validation", func(h *harness) {
		h.open(config())
		for _, c := range []struct {
			field string
			edit  func(c *tournament.Config)
		}{
			{"entryTimeoutMs", func(c *tournament.Config) { c.EntryTimeoutMs = Timeout - 1 }},
			{"moveTimeoutMs", func(c *tournament.Config) { c.MoveTimeoutMs = Timeout - 1 }},
			{"revealTimeoutMs", func(c *tournament.Config) { c.RevealTimeoutMs = Timeout - 1 }},
			{"revealTimeoutMs", func(c *tournament.Config) { c.RevealTimeoutMs = tournament.MaxTimeoutMs + 1 }},
			{"playersCountLimit", func(c *tournament.Config) { c.PlayersCountLimit = 1 }},
			{"playersCountLimit", func(c *tournament.Config) { c.PlayersCountLimit = tournament.MaxPlayers + 1 }},
			{"ruleset", func(c *tournament.Config) { c.Ruleset = "chess" }},
			{"resolution", func(c *tournament.Config) { c.Resolution = "random" }},
			{"betSize", func(c *tournament.Config) { c.BetSize = -1 }},
			{"betSize", func(c *tournament.Config) { c.BetSize = 1 << 53 / 4; c.PlayersCountLimit = 5 }},
			{"maxExtensions", func(c *tournament.Config) { c.MaxExtensions = -1 }},
			{"maxRounds", func(c *tournament.Config) { c.MaxRounds = -1 }},
		} {
			cfg := config()
			c.edit(&cfg)
			h.mustInvalid(c.field, h.tryNextConfig(h.admin, cfg))
		}
		if l := h.lobbyRow(); l.NextConfig != nil {
			h.t.Errorf("a refused config was kept: %+v", l.NextConfig)
		}
		two := config()
		two.PlayersCountLimit = 2
		h.ok(h.tryNextConfig(h.admin, two))
		if l := h.lobbyRow(); l.NextConfig == nil || *l.NextConfig != two {
			h.t.Errorf("limit 2 not accepted: %+v", l.NextConfig)
		}
	}},
	{"NextConfig/NotAdmin", func(h *harness) {
		h.open(config())
		h.mustRefuse(tournament.CodeForbidden, h.tryNextConfig(h.p[1], config()))
	}},
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
