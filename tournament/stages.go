package tournament

import (
	"context"
	"errors"
	"fmt"
	"math/bits"

	"github.com/commitreveal/rps/engine"
)

// op is one operation on one locked lobby: the lobby and its current game's header, changed in
// memory and written back once at the end.
type op struct {
	s          *Service
	ctx        context.Context
	tx         Tx
	lobby      Lobby
	game       Game
	rs         *engine.Ruleset
	lobbyDirty bool
	gameDirty  bool
	// expired records that a deadline was applied.
	expired bool
}

// run locks the lobby, applies the expiries due by now, runs the action and writes the headers
// back. The headers are written back for a refusal too: a refusal commits (see Error).
func (s *Service) run(ctx context.Context, tx Tx, now int64, lobby LobbyID, action func(o *op) error) error {
	_, err := s.apply(ctx, tx, now, lobby, action)
	return err
}

// apply is run, returning the operation's state after the action (nil with any error, a refusal
// included).
func (s *Service) apply(ctx context.Context, tx Tx, now int64, lobby LobbyID, action func(o *op) error) (*op, error) {
	l, g, err := tx.LockLobby(ctx, lobby)
	if errors.Is(err, ErrNotFound) {
		return nil, refuse(CodeNotFound, "lobby %s not found", lobby)
	} else if err != nil {
		return nil, fmt.Errorf("lock lobby: %w", err)
	}
	o := &op{s: s, ctx: ctx, tx: tx, lobby: l, game: g}
	if err := o.expire(now); err != nil {
		return nil, err
	}
	actionErr := action(o)
	if _, refused := IsRefusal(actionErr); actionErr != nil && !refused {
		return nil, actionErr
	}
	if err := o.flush(); err != nil {
		return nil, err
	}
	if actionErr != nil {
		return nil, actionErr
	}
	return o, nil
}

func (o *op) flush() error {
	if o.gameDirty {
		if err := o.tx.UpdateGame(o.ctx, o.game); err != nil {
			return fmt.Errorf("update game: %w", err)
		}
		o.gameDirty = false
	}
	if o.lobbyDirty {
		if err := o.tx.UpdateLobby(o.ctx, o.lobby); err != nil {
			return fmt.Errorf("update lobby: %w", err)
		}
		o.lobbyDirty = false
	}
	return nil
}

func (o *op) emit(at int64, game GameID, data EventData) error {
	e := Event{Type: data.EventType(), LobbyID: o.lobby.ID, GameID: game, At: at, Data: data}
	if err := o.tx.Append(o.ctx, e); err != nil {
		return fmt.Errorf("append %s event: %w", e.Type, err)
	}
	return nil
}

func (o *op) transfer(from, to LedgerAccount, amount int64, kind PostingKind, at int64) error {
	if amount == 0 {
		return nil
	}
	p := Posting{From: from, To: to, Amount: amount, Kind: kind, GameID: o.game.ID, At: at}
	if err := o.tx.Transfer(o.ctx, p); err != nil {
		return fmt.Errorf("transfer %s: %w", kind, err)
	}
	return nil
}

func (o *op) player(id AccountID) (Player, error) {
	p, err := o.tx.Player(o.ctx, o.game.ID, id)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return p, fmt.Errorf("read player: %w", err)
	}
	return p, err
}

// requirePlaying refuses, in order, an action outside its stage, an admin, and a player who is
// not (or no longer) in the game.
func (o *op) requirePlaying(stage Stage, actor Actor) error {
	if o.game.Stage != stage {
		return refuse(CodeWrongStage, "%s is not open: the game is in the %s stage", stage, o.game.Stage)
	}
	if actor.Role == RoleAdmin {
		return refuse(CodeForbidden, "admins cannot play")
	}
	p, err := o.player(actor.ID)
	if errors.Is(err, ErrNotFound) {
		return refuse(CodeNotInGame, "not registered in this game")
	} else if err != nil {
		return err
	}
	if !p.Active {
		return refuse(CodeNotInGame, "out of the game since round %d", p.EliminatedRound)
	}
	return nil
}

func (o *op) ruleset() (*engine.Ruleset, error) {
	if o.rs == nil {
		rs, err := o.tx.Ruleset(o.ctx, o.game.RulesetHash)
		if err != nil {
			return nil, fmt.Errorf("read ruleset %s: %w", o.game.RulesetHash, err)
		}
		o.rs = rs
	}
	return o.rs, nil
}

// openWindow starts the current stage's window at the given instant.
func (o *op) openWindow(at int64) {
	g := &o.game
	g.StageStartedAt = at
	g.Deadline = at + g.Config.timeout(g.Stage)
	g.Extensions = 0
	o.gameDirty = true
}

// expire applies every deadline that has passed by now, in order, each at its own deadline. A
// stage expires when the time is strictly past its deadline.
func (o *op) expire(now int64) error {
	for o.game.Stage.Open() && Due(o.game.Deadline, now) {
		o.expired = true
		if err := o.expireStage(o.game.Deadline, now); err != nil {
			return err
		}
	}
	return nil
}

// expireStage applies the expiry of the current stage at its deadline t.
func (o *op) expireStage(t, now int64) error {
	g := &o.game
	switch g.Stage {
	case StageRegistration:
		if g.Players < MinPlayers {
			return o.extend(t, now)
		}
		return o.startRound(t, 1)
	case StageMoves:
		if g.Committed == 0 {
			return o.extend(t, now)
		}
		return o.closeMoves(t)
	case StageReveal:
		if g.Revealed == 0 {
			return o.extend(t, now)
		}
		if g.Active > g.Revealed {
			if err := o.eliminate(Keep{Kind: KeepRevealed}); err != nil {
				return err
			}
			g.Active = g.Revealed
		}
		return o.resolve(t)
	}
	return fmt.Errorf("expire: game %s has no window in stage %s", g.ID, g.Stage)
}

// extend handles a stage that expired with nobody to advance: a new window starts at the old
// deadline. Every expiry passed by now is applied at once, since nothing else changes between
// them. Only the first extension of a stage writes an event; MaxExtensions bounds the consecutive
// extensions of a moves or reveal stage.
func (o *op) extend(t, now int64) error {
	g := &o.game
	window := g.Config.timeout(g.Stage)
	n := (now-t-1)/window + 1 // the expiries at t, t+window, ... that are before now
	if g.Stage != StageRegistration && g.Config.MaxExtensions > 0 {
		left := int64(g.Config.MaxExtensions - g.Extensions)
		if n > left {
			if left > 0 {
				if err := o.extendBy(t, left); err != nil {
					return err
				}
			}
			return o.stop(t+left*window, ReasonMaxExtensions, nil)
		}
	}
	return o.extendBy(t, n)
}

func (o *op) extendBy(t, n int64) error {
	g := &o.game
	window := g.Config.timeout(g.Stage)
	first := g.Extensions == 0
	g.Extensions += int(n)
	g.Deadline = t + n*window
	g.StageStartedAt = g.Deadline - window
	o.gameDirty = true
	if !first {
		return nil
	}
	return o.emit(t, g.ID, &StageExtendedData{Stage: g.Stage, Round: g.Round, Deadline: t + window})
}

// startRound opens round r's moves stage at t with the players still in.
func (o *op) startRound(t int64, r int) error {
	g := &o.game
	g.Stage = StageMoves
	g.Round = r
	g.Committed, g.Revealed = 0, 0
	o.openWindow(t)
	return o.emit(t, g.ID, &RoundStartedData{Round: r, Players: g.Active, Deadline: g.Deadline})
}

// closeMoves ends the moves stage at t: the players who did not commit are out, and the event
// carries the digest of the commitments, salted with a fresh salt that the game keeps, sealed like
// them, until they become public. The reveal stage opens, unless a single committer is left, who
// wins.
func (o *op) closeMoves(t int64) error {
	g := &o.game
	eliminated := g.Active - g.Committed
	if eliminated > 0 {
		if err := o.eliminate(Keep{Kind: KeepCommitted}); err != nil {
			return err
		}
		g.Active = g.Committed
	}
	g.Salt = o.s.newSalt(g.ID, g.Round)
	if g.Salt.IsZero() {
		return fmt.Errorf("close moves of game %s round %d: the salt source gave the zero salt", g.ID, g.Round)
	}
	o.gameDirty = true
	digest, err := o.digest(NewSaltedDigester(g.Salt), SealedCommitments)
	if err != nil {
		return err
	}
	closed := &MovesClosedData{Round: g.Round, Committed: g.Committed, Eliminated: eliminated, Digest: digest}
	if g.Active == 1 {
		if err := o.emit(t, g.ID, closed); err != nil {
			return err
		}
		return o.finishWithLastPlayer(t)
	}
	g.Stage = StageReveal
	g.Revealed = 0
	o.openWindow(t)
	closed.Deadline = g.Deadline
	return o.emit(t, g.ID, closed)
}

// revealSalt returns the salt of the current round's moves_closed digest in hex, for the event
// that makes the round's commitments public, and forgets it; "" when no digest waits for its salt
// (the round was resolved, or moves never closed).
func (o *op) revealSalt() string {
	g := &o.game
	if g.Salt.IsZero() {
		return ""
	}
	salt := g.Salt.String()
	g.Salt = Salt{}
	o.gameDirty = true
	return salt
}

// resolve ends a round at t among the players who revealed: the engine names the surviving
// moves, the others are out, and the reveals become public. One survivor wins; several play
// another round, unless MaxRounds is reached.
func (o *op) resolve(t int64) error {
	g := &o.game
	rs, err := o.ruleset()
	if err != nil {
		return err
	}
	counts, err := o.tx.RevealCounts(o.ctx, g.ID, g.Round)
	if err != nil {
		return fmt.Errorf("count reveals: %w", err)
	}
	out := rs.Resolve(g.Config.Resolution, counts)
	var survivors int64
	for _, m := range out.Survivors.Moves() {
		survivors += counts[m]
	}
	if int(survivors) < g.Active {
		if err := o.eliminate(Keep{Kind: KeepMoves, Moves: out.Survivors}); err != nil {
			return err
		}
		g.Active = int(survivors)
	}
	// The reveals are published with their digest: it needs no salt.
	digest, err := o.digest(NewDigester(), SealedReveals)
	if err != nil {
		return err
	}
	span := bits.Len16(uint16(rs.Moves())) // counts and scores run up to the highest move
	resolved := &RoundResolvedData{
		Round: g.Round, Resolution: string(g.Config.Resolution), Revealed: g.Revealed,
		Present: int(out.Present), Counts: counts[:span], Survivors: int(out.Survivors),
		Remaining: g.Active, Digest: digest, Salt: o.revealSalt(),
	}
	if g.Config.Resolution == engine.Weighted {
		resolved.Scores = out.Scores[:span]
	}
	o.gameDirty = true
	if err := o.emit(t, g.ID, resolved); err != nil {
		return err
	}
	switch {
	case g.Active == 1:
		return o.finishWithLastPlayer(t)
	case g.Config.MaxRounds > 0 && g.Round >= g.Config.MaxRounds:
		return o.stop(t, ReasonMaxRounds, nil)
	default:
		return o.startRound(t, g.Round+1)
	}
}

func (o *op) eliminate(keep Keep) error {
	if err := o.tx.Eliminate(o.ctx, o.game.ID, o.game.Round, keep); err != nil {
		return fmt.Errorf("eliminate: %w", err)
	}
	return nil
}

func (o *op) digest(d *Digester, kind Sealed) (string, error) {
	err := o.tx.SealedValues(o.ctx, o.game.ID, o.game.Round, kind, d.Add)
	if err != nil {
		return "", fmt.Errorf("digest %s: %w", kind, err)
	}
	sum, _ := d.Sum()
	return sum, nil
}

// finishWithLastPlayer pays the whole escrow to the one player left and ends the game.
func (o *op) finishWithLastPlayer(t int64) error {
	g := &o.game
	winner, err := o.tx.FirstActive(o.ctx, g.ID)
	if err != nil {
		return fmt.Errorf("find winner: %w", err)
	}
	amount := g.Escrow
	if err := o.transfer(EscrowAccount(g.ID), PlayerAccount(winner), amount, PostingPayout, t); err != nil {
		return err
	}
	g.Escrow = 0
	g.Winner, g.Payout = winner, amount
	salt := o.revealSalt()
	if err := o.end(t, StageFinished); err != nil {
		return err
	}
	if err := o.emit(t, g.ID, &GameFinishedData{Winner: winner, Amount: amount, Round: g.Round, Salt: salt}); err != nil {
		return err
	}
	return o.next(t)
}

// stop ends the game at t and splits its escrow among the players still in (every registered
// player during registration): equal shares, the remainder one unit each in registration order.
// Stopped in a reveal stage, the round's commitments become public, and its salt with them. auth
// is the signature of the admin who stopped it (nil: unsigned, or the rules stopped it).
func (o *op) stop(t int64, reason string, auth *AdminAuth) error {
	g := &o.game
	data := &GameStoppedData{Auth: auth, Reason: reason, Stage: g.Stage, Round: g.Round, Amount: g.Escrow, Players: g.Active, Salt: o.revealSalt()}
	if g.Escrow > 0 {
		data.Share = g.Escrow / int64(g.Active)
		data.Remainder = int(g.Escrow % int64(g.Active))
		// Stopping a registration gives every bet back; later, the escrow is shared out.
		kind := PostingSplit
		if g.Stage == StageRegistration {
			kind = PostingRefund
		}
		if err := o.tx.SplitEscrow(o.ctx, g.ID, data.Share, data.Remainder, kind, t); err != nil {
			return fmt.Errorf("split escrow: %w", err)
		}
	}
	g.Escrow = 0
	g.StopReason = reason
	if err := o.end(t, StageStopped); err != nil {
		return err
	}
	if err := o.emit(t, g.ID, data); err != nil {
		return err
	}
	return o.next(t)
}

func (o *op) end(t int64, stage Stage) error {
	g := &o.game
	g.Stage = stage
	g.EndedAt = t
	g.StageStartedAt, g.Deadline = 0, 0
	if err := o.tx.UpdateGame(o.ctx, *g); err != nil {
		return fmt.Errorf("update game: %w", err)
	}
	o.gameDirty = false
	return nil
}

// next applies the pending config and, unless the lobby is closed, opens the next game at t.
func (o *op) next(t int64) error {
	if o.lobby.NextConfig != nil {
		o.lobby.Config = *o.lobby.NextConfig
		o.lobby.NextConfig = nil
		o.lobbyDirty = true
	}
	if o.lobby.Closed {
		return nil
	}
	return o.openGame(t)
}

// openGame opens a new game in registration with the lobby's config, recording its ruleset.
func (o *op) openGame(t int64) error {
	cfg := o.lobby.Config
	rs, ok := o.s.rules.Get(cfg.Ruleset)
	if !ok {
		return fmt.Errorf("open game: lobby %s names unknown ruleset %q", o.lobby.ID, cfg.Ruleset)
	}
	if err := o.tx.SaveRuleset(o.ctx, rs); err != nil {
		return fmt.Errorf("save ruleset: %w", err)
	}
	o.lobby.Games++
	o.game = Game{
		ID: GameID(o.s.newID()), LobbyID: o.lobby.ID, Number: o.lobby.Games, Config: cfg,
		RulesetHash: rs.HashHex(), Stage: StageRegistration, CreatedAt: t,
	}
	o.rs = rs
	if err := o.tx.InsertGame(o.ctx, o.game); err != nil {
		return fmt.Errorf("insert game: %w", err)
	}
	o.lobby.GameID = o.game.ID
	o.lobbyDirty = true
	return o.emit(t, o.game.ID, &GameOpenedData{Number: o.game.Number, Config: cfg, RulesetHash: o.game.RulesetHash})
}
