package tournamenttest

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/tournament"
)

// property is a rapid test. It gets one backend for all its checks; every check works in its own
// lobby with its own accounts.
type property struct {
	name string
	run  func(t *testing.T, b Backend)
}

var properties = []property{
	{"RandomOperations", randomOperations},
}

// secretKey names a commitment the property test remembers.
type secretKey struct {
	game  tournament.GameID
	round int
	id    tournament.AccountID
}

// randomOperations runs random sequences of operations by random actors with random clock jumps
// and checks every invariant after each step: money is conserved, no balance is negative, an
// ended game's escrow is zero, the header's counters equal the rows, the log chains, the digests
// match, and no sealed value appears in an event before its stage closes. At the end every game
// has ended with exactly one winner paid all the bets, or was stopped.
func randomOperations(t *testing.T, b Backend) {
	rapid.Check(t, func(rt *rapid.T) {
		h := newHarness(rt, b)
		actors := append([]tournament.Actor{h.admin}, h.p[1:]...)
		poor := h.newAccount("poor", tournament.RolePlayer, rapid.Int64Range(0, 3*Bet).Draw(rt, "poorFunds"))
		actors = append(actors, poor)
		h.open(randomConfig(rt, "config"))
		secrets := map[secretKey]string{}

		steps := rapid.IntRange(1, 50).Draw(rt, "steps")
		for step := range steps {
			// Half the time the operation that moves the current stage on, by someone in the
			// game; otherwise any operation by anyone.
			g := h.game()
			var inGame []tournament.Actor
			for _, p := range h.playersOf(g.ID) {
				if p.Active {
					inGame = append(inGame, tournament.Actor{ID: p.AccountID, Role: tournament.RolePlayer})
				}
			}
			actor := rapid.SampledFrom(actors).Draw(rt, "actor")
			if len(inGame) > 0 && g.Stage != tournament.StageRegistration && rapid.IntRange(0, 4).Draw(rt, "player") > 0 {
				actor = rapid.SampledFrom(inGame).Draw(rt, "inGame")
			}
			op := rapid.IntRange(0, 99).Draw(rt, "op")
			if rapid.Bool().Draw(rt, "progress") {
				switch g.Stage {
				case tournament.StageRegistration:
					op = 0
				case tournament.StageMoves:
					op = 20
				case tournament.StageReveal:
					op = 40
				}
			}
			var err error
			var what string
			switch {
			case op < 16:
				what = "register"
				err = h.tryRegister(actor)
			case op < 20:
				what = "leave"
				err = h.tryLeave(actor)
			case op < 40:
				// Mostly the ruleset's moves, sometimes a digit outside it or a non-digit.
				digit := rapid.SampledFrom([]string{"0", "1", "2", "3", "4", "0", "1", "2", "3", "4", "5", "6", "9", "x"}).Draw(rt, "digit")
				reveal := digit + "pw-" + rapid.StringMatching(`[a-z]{0,3}`).Draw(rt, "password")
				what = "commit " + reveal
				err = h.tryCommit(actor, engine.Commit(reveal))
				if err == nil {
					g := h.game()
					secrets[secretKey{g.ID, g.Round, actor.ID}] = reveal
				}
			case op < 60:
				g := h.game()
				reveal, ok := secrets[secretKey{g.ID, g.Round, actor.ID}]
				if !ok || rapid.IntRange(0, 5).Draw(rt, "wrongReveal") == 0 {
					reveal = rapid.SampledFrom([]string{"0pw-", "1pw-a", "x", ""}).Draw(rt, "reveal")
				}
				what = "reveal " + reveal
				err = h.tryReveal(actor, reveal)
			case op < 64:
				what = "stop"
				err = h.tryStop(actor, "random stop")
			case op < 67:
				what = "next config"
				cfg := randomConfig(rt, "nextConfig")
				if rapid.IntRange(0, 3).Draw(rt, "invalidConfig") == 0 {
					cfg.MoveTimeoutMs = Timeout - 1
				}
				err = h.tryNextConfig(actor, cfg)
			case op < 70:
				who := rapid.SampledFrom(actors).Draw(rt, "account")
				amount := rapid.Int64Range(-Bet, 2*Bet).Draw(rt, "amount")
				what = fmt.Sprintf("move %d to or from the treasury", amount)
				err = h.do(func(tx tournament.Tx) error {
					var err error
					if amount >= 0 {
						_, err = h.svc.Credit(h.ctx, tx, h.now, actor, who.ID, amount, tournament.MoneyNote{})
					} else {
						_, err = h.svc.Debit(h.ctx, tx, h.now, actor, who.ID, -amount, tournament.MoneyNote{})
					}
					return err
				})
				if err == nil {
					h.credited += amount
				}
			case op < 90:
				jump := rapid.SampledFrom([]int64{0, 1, 100, Timeout - 1, Timeout, Timeout + 1, 3 * Timeout}).Draw(rt, "jump")
				if rapid.IntRange(0, 5).Draw(rt, "hugeJump") == 0 {
					jump = rapid.Int64Range(0, 30*24*3600*1000).Draw(rt, "huge")
				}
				what = fmt.Sprintf("advance %d and expire", jump)
				h.advance(jump)
				if rapid.Bool().Draw(rt, "expire") {
					err = h.do(func(tx tournament.Tx) error {
						_, err := h.svc.Expire(h.ctx, tx, h.now, h.lobby)
						return err
					})
				}
			case op < 97:
				// An outage: the service was last up now, then nothing ran for gap.
				gap := rapid.Int64Range(1, 7*24*3600*1000).Draw(rt, "gap")
				what = fmt.Sprintf("outage of %d ms", gap)
				err = h.do(func(tx tournament.Tx) error {
					_, err := h.svc.Expire(h.ctx, tx, h.now, h.lobby)
					return err
				})
				if err == nil {
					h.advance(gap)
					err = h.shift(gap)
				}
			default:
				what = "close lobby"
				if rapid.Bool().Draw(rt, "adminCloses") {
					actor = h.admin
				}
				err = h.tryClose(actor)
			}
			if _, refused := tournament.IsRefusal(err); err != nil && !refused {
				rt.Fatalf("step %d: %s by %s: not a refusal: %v", step, what, actor.Role, err)
			}
			h.verify()
		}

		// End every game: after a huge jump, an admin stop ends whatever is still open.
		h.advance(rapid.Int64Range(0, 1_000_000).Draw(rt, "lastJump"))
		h.expire()
		if g := h.game(); g.Stage.Open() {
			h.ok(h.tryStop(h.admin, "end of test"))
		}
		h.verify()
		es := h.events()
		for _, id := range gameIDs(es) {
			g := h.gameByID(id)
			if g.Stage.Open() && id != h.lobbyRow().GameID {
				rt.Fatalf("game %d is still %s", g.Number, g.Stage)
			}
		}
	})
}

// randomConfig draws a valid config.
func randomConfig(t *rapid.T, label string) tournament.Config {
	c := tournament.DefaultConfig()
	c.BetSize = rapid.Int64Range(0, 2*Bet).Draw(t, label+".bet")
	c.PlayersCountLimit = rapid.IntRange(2, 6).Draw(t, label+".limit")
	c.EntryTimeoutMs = rapid.SampledFrom([]int64{Timeout, 2 * Timeout}).Draw(t, label+".entry")
	c.MoveTimeoutMs = rapid.SampledFrom([]int64{Timeout, 3 * Timeout}).Draw(t, label+".move")
	c.RevealTimeoutMs = rapid.SampledFrom([]int64{Timeout, 7 * Timeout}).Draw(t, label+".reveal")
	c.Ruleset = rapid.SampledFrom([]string{"rps", "rpsls", "rps7"}).Draw(t, label+".ruleset")
	c.Resolution = rapid.SampledFrom([]engine.Resolution{engine.Classic, engine.Weighted}).Draw(t, label+".resolution")
	c.StartWhenFull = rapid.Bool().Draw(t, label+".startWhenFull")
	c.MaxExtensions = rapid.IntRange(0, 3).Draw(t, label+".maxExtensions")
	c.MaxRounds = rapid.IntRange(0, 3).Draw(t, label+".maxRounds")
	return c
}
