package tournament

import (
	"context"
	"errors"
	"fmt"

	"github.com/commitreveal/rps/engine"
)

// Options configure a Service.
type Options struct {
	// Rules are the rulesets a config may name.
	Rules *engine.Registry
	// MinTimeoutMs is the shortest stage timeout a config may set (DefaultMinTimeoutMs if zero).
	MinTimeoutMs int64
	// NewID returns a fresh unique id for a lobby or a game. It is injected, like the time, so
	// that the core stays deterministic.
	NewID func() string
	// NewSalt returns a fresh random salt for the digest of a game's round's commitments. It is
	// injected too: rpsd draws it from crypto/rand (store.NewSalt), tests make it up from the game
	// and round, and a replay of a history gives the salts its log revealed.
	NewSalt func(game GameID, round int) Salt
	// RequireKeys refuses every unsigned player action (CodeKeyRequired, CodeSignatureRequired);
	// without it, an account that has no key may act unsigned (one that has a key never may).
	RequireKeys bool
}

// Service runs the game's rules. It holds no state of its own: every operation reads and writes
// through the Tx it is given, at the instant it is given (Unix milliseconds).
type Service struct {
	rules        *engine.Registry
	minTimeoutMs int64
	newID        func() string
	newSalt      func(GameID, int) Salt
	requireKeys  bool
}

// NewService returns a Service.
func NewService(o Options) *Service {
	if o.MinTimeoutMs == 0 {
		o.MinTimeoutMs = DefaultMinTimeoutMs
	}
	return &Service{rules: o.Rules, minTimeoutMs: o.MinTimeoutMs, newID: o.NewID, newSalt: o.NewSalt, requireKeys: o.RequireKeys}
}

// MaxLeavesPerGame bounds how often an account may leave one game: each register/leave cycle
// writes events and ledger postings for good, so past it the account cannot join that game
// again (CodeRejoinLimit). A player who changes their mind a few times is not hindered.
const MaxLeavesPerGame = 3

// Limits of free-text inputs, in characters.
const (
	MaxAccountNameLength = 100
	MaxLobbyNameLength   = 100
	MaxStopReasonLength  = 500
	MaxMemoLength        = 200
)

// CreateLobby creates a lobby (admins only) and opens its first game.
func (s *Service) CreateLobby(ctx context.Context, tx Tx, now int64, actor Actor, name string, cfg Config) (LobbyID, error) {
	o, err := s.createLobby(ctx, tx, now, actor, name, cfg, nil)
	if err != nil {
		return "", err
	}
	return o.lobby.ID, nil
}

func (s *Service) createLobby(ctx context.Context, tx Tx, now int64, actor Actor, name string, cfg Config, auth *AdminAuth) (*op, error) {
	if actor.Role != RoleAdmin {
		return nil, refuse(CodeForbidden, "only an admin can create a lobby")
	}
	// Lobbies are told apart by id (an admin names them all): their names follow Name's rule, and
	// two may share one.
	name, _, err := Name("name", name, MaxLobbyNameLength)
	if err != nil {
		return nil, err
	}
	if _, err := validateConfig(cfg, s.rules, s.minTimeoutMs); err != nil {
		return nil, err
	}
	id := LobbyID("")
	if auth == nil {
		id = LobbyID(s.newID())
	} else if id, err = auth.CreatedLobby(); err != nil {
		// The signature stands for this lobby alone (see CreatedLobby).
		return nil, fmt.Errorf("lobby of a signed creation: %w", err)
	}
	o := &op{s: s, ctx: ctx, tx: tx}
	o.lobby = Lobby{ID: id, Name: name, Config: cfg, CreatedAt: now}
	if err := tx.InsertLobby(ctx, o.lobby); err != nil {
		return nil, fmt.Errorf("insert lobby: %w", err)
	}
	if err := o.emit(now, "", &LobbyCreatedData{Auth: auth, Name: name, Config: cfg}); err != nil {
		return nil, err
	}
	if err := o.openGame(now); err != nil {
		return nil, err
	}
	return o, o.flush()
}

// CloseLobby stops the lobby from opening a new game after the current one (admins only). A
// current game that nobody has joined yet is stopped at once, since nobody would ever play it.
func (s *Service) CloseLobby(ctx context.Context, tx Tx, now int64, actor Actor, lobby LobbyID) error {
	return s.run(ctx, tx, now, lobby, func(o *op) error { return o.close(now, actor, nil) })
}

func (o *op) close(now int64, actor Actor, auth *AdminAuth) error {
	if actor.Role != RoleAdmin {
		return refuse(CodeForbidden, "only an admin can close a lobby")
	}
	if o.lobby.Closed {
		return nil
	}
	o.lobby.Closed = true
	o.lobbyDirty = true
	if err := o.emit(now, "", &LobbyClosedData{Auth: auth}); err != nil {
		return err
	}
	// A registration left open would never end (its players could wait forever, newcomers
	// keep joining): it is stopped now, every bet refunded.
	if o.game.Stage == StageRegistration {
		return o.stop(now, ReasonLobbyClosed, nil)
	}
	return nil
}

// Register joins the current game, moving the bet from the player's balance to the game's escrow.
// With StartWhenFull, the registration that fills the game starts round 1.
func (s *Service) Register(ctx context.Context, tx Tx, now int64, actor Actor, lobby LobbyID) error {
	return s.run(ctx, tx, now, lobby, func(o *op) error { return o.register(now, actor, nil) })
}

func (o *op) register(now int64, actor Actor, signed *Signed) error {
	g := &o.game
	if err := o.checkSigner(now, actor, signed, false); err != nil {
		return err
	}
	if g.Stage != StageRegistration {
		return refuse(CodeWrongStage, "registration is closed: the game is in the %s stage", g.Stage)
	}
	if actor.Role == RoleAdmin {
		return refuse(CodeForbidden, "admins run games and cannot play in them")
	}
	if _, err := o.player(actor.ID); err == nil {
		return refuse(CodeAlreadyRegistered, "already registered in this game")
	} else if !errors.Is(err, ErrNotFound) {
		return err
	}
	if left, err := o.tx.Leaves(o.ctx, g.ID, actor.ID); err != nil {
		return fmt.Errorf("read leaves: %w", err)
	} else if left >= MaxLeavesPerGame {
		return refuse(CodeRejoinLimit, "you left this game %d times, the most an account may: you cannot join it again (the lobby's next game is open to you)", left)
	}
	if !g.Joinable() {
		// In registration (checked above): the game is full.
		return refuse(CodeLobbyFull, "the game is full (%d players)", g.Config.PlayersCountLimit)
	}
	acct, err := o.tx.Account(o.ctx, actor.ID)
	if errors.Is(err, ErrNotFound) {
		return refuse(CodeNotFound, "account %s not found", actor.ID)
	} else if err != nil {
		return fmt.Errorf("read account: %w", err)
	}
	if acct.Balance < g.Config.BetSize {
		return refuse(CodeInsufficientFunds, "the bet is %d but the balance is %d", g.Config.BetSize, acct.Balance)
	}

	g.Joined++
	g.Players++
	g.Active++
	p := Player{GameID: g.ID, AccountID: actor.ID, Order: g.Joined, RegisteredAt: now, Active: true}
	if err := o.tx.InsertPlayer(o.ctx, p); err != nil {
		return fmt.Errorf("insert player: %w", err)
	}
	if err := o.transfer(PlayerAccount(actor.ID), EscrowAccount(g.ID), g.Config.BetSize, PostingBet, now); err != nil {
		return err
	}
	g.Escrow += g.Config.BetSize
	if g.Players == 1 {
		// The entry window of an empty registration opens with its first player.
		o.openWindow(now)
	}
	o.gameDirty = true
	if err := o.emit(now, g.ID, &PlayerRegisteredData{Player: actor.ID, Order: p.Order, Players: g.Players, Pot: g.Escrow, Deadline: g.Deadline,
		Auth: signed.auth()}); err != nil {
		return err
	}
	if g.Config.StartWhenFull && g.Players == g.Config.PlayersCountLimit {
		return o.startRound(now, 1)
	}
	return nil
}

// Leave withdraws from the current game during registration and refunds the bet.
func (s *Service) Leave(ctx context.Context, tx Tx, now int64, actor Actor, lobby LobbyID) error {
	return s.run(ctx, tx, now, lobby, func(o *op) error { return o.leave(now, actor, nil) })
}

func (o *op) leave(now int64, actor Actor, signed *Signed) error {
	g := &o.game
	if err := o.checkSigner(now, actor, signed, false); err != nil {
		return err
	}
	if g.Stage != StageRegistration {
		return refuse(CodeWrongStage, "players can leave only during registration; the game is in the %s stage", g.Stage)
	}
	if actor.Role == RoleAdmin {
		return refuse(CodeForbidden, "admins cannot play")
	}
	if _, err := o.player(actor.ID); errors.Is(err, ErrNotFound) {
		return refuse(CodeNotInGame, "not registered in this game")
	} else if err != nil {
		return err
	}
	if err := o.tx.DeletePlayer(o.ctx, g.ID, actor.ID); err != nil {
		return fmt.Errorf("delete player: %w", err)
	}
	if err := o.tx.CountLeave(o.ctx, g.ID, actor.ID); err != nil {
		return fmt.Errorf("count leave: %w", err)
	}
	if err := o.transfer(EscrowAccount(g.ID), PlayerAccount(actor.ID), g.Config.BetSize, PostingRefund, now); err != nil {
		return err
	}
	g.Escrow -= g.Config.BetSize
	g.Players--
	g.Active--
	if g.Players == 0 {
		// An empty registration has no deadline again.
		g.StageStartedAt, g.Deadline, g.Extensions = 0, 0, 0
	}
	o.gameDirty = true
	return o.emit(now, g.ID, &PlayerLeftData{Player: actor.ID, Players: g.Players, Pot: g.Escrow, Auth: signed.auth()})
}

// Commit records a player's commitment for the current round. When every player of the round has
// committed, the reveal stage opens at once.
func (s *Service) Commit(ctx context.Context, tx Tx, now int64, actor Actor, lobby LobbyID, c engine.Commitment) error {
	return s.run(ctx, tx, now, lobby, func(o *op) error { return o.commit(now, actor, c, nil) })
}

func (o *op) commit(now int64, actor Actor, c engine.Commitment, signed *Signed) error {
	g := &o.game
	if err := o.checkSigner(now, actor, signed, true); err != nil {
		return err
	}
	if err := o.requirePlaying(StageMoves, actor); err != nil {
		return err
	}
	if _, err := o.tx.RoundMove(o.ctx, g.ID, g.Round, actor.ID); err == nil {
		return refuse(CodeAlreadyCommitted, "already committed in round %d", g.Round)
	} else if !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("read move: %w", err)
	}
	m := RoundMove{GameID: g.ID, Round: g.Round, AccountID: actor.ID, Commitment: c, CommittedAt: now, CommitSignature: signed.signature()}
	if err := o.tx.InsertMove(o.ctx, m); err != nil {
		return fmt.Errorf("insert move: %w", err)
	}
	g.Committed++
	o.gameDirty = true
	if err := o.emit(now, g.ID, &MoveCommittedData{Player: actor.ID, Round: g.Round, Committed: g.Committed, Auth: signed.auth()}); err != nil {
		return err
	}
	if g.Committed == g.Active {
		return o.closeMoves(now)
	}
	return nil
}

// Reveal opens a player's commitment. A reveal that does not match is refused and changes nothing
// (the player may try again until the deadline). When every committer has revealed, the round is
// resolved at once.
func (s *Service) Reveal(ctx context.Context, tx Tx, now int64, actor Actor, lobby LobbyID, reveal string) error {
	// Checked first, so that an oversized reveal is never hashed.
	if err := engine.CheckRevealSize(reveal); err != nil {
		return invalid("reveal", err.Error())
	}
	return s.run(ctx, tx, now, lobby, func(o *op) error { return o.reveal(now, actor, reveal, nil) })
}

func (o *op) reveal(now int64, actor Actor, reveal string, signed *Signed) error {
	g := &o.game
	if err := o.checkSigner(now, actor, signed, true); err != nil {
		return err
	}
	if err := o.requirePlaying(StageReveal, actor); err != nil {
		return err
	}
	m, err := o.tx.RoundMove(o.ctx, g.ID, g.Round, actor.ID)
	if errors.Is(err, ErrNotFound) {
		return refuse(CodeNotInGame, "no commitment in round %d", g.Round)
	} else if err != nil {
		return fmt.Errorf("read move: %w", err)
	}
	if !m.Commitment.Matches(reveal) {
		return refuse(CodeCommitmentMismatch, "the reveal does not match the commitment")
	}
	rs, err := o.ruleset()
	if err != nil {
		return err
	}
	move, err := rs.ParseReveal(reveal)
	if err != nil {
		return refuse(CodeInvalidMove, "%v", err)
	}
	if m.Revealed {
		return refuse(CodeAlreadyRevealed, "already revealed in round %d", g.Round)
	}
	m.Revealed, m.Reveal, m.Move, m.RevealedAt, m.RevealSignature = true, reveal, move, now, signed.signature()
	if err := o.tx.UpdateMove(o.ctx, m); err != nil {
		return fmt.Errorf("update move: %w", err)
	}
	g.Revealed++
	o.gameDirty = true
	if err := o.emit(now, g.ID, &MoveRevealedData{Player: actor.ID, Round: g.Round, Revealed: g.Revealed, Auth: signed.auth()}); err != nil {
		return err
	}
	if g.Revealed == g.Active {
		return o.resolve(now)
	}
	return nil
}

// ChangeNextConfig sets the config of the lobby's next game (admins only); the last change before
// the current game ends wins.
func (s *Service) ChangeNextConfig(ctx context.Context, tx Tx, now int64, actor Actor, lobby LobbyID, cfg Config) error {
	return s.run(ctx, tx, now, lobby, func(o *op) error { return o.changeNextConfig(now, actor, cfg, nil) })
}

func (o *op) changeNextConfig(now int64, actor Actor, cfg Config, auth *AdminAuth) error {
	if actor.Role != RoleAdmin {
		return refuse(CodeForbidden, "only an admin can change the next game's config")
	}
	if err := o.checkAdminGame(auth); err != nil {
		return err
	}
	if o.lobby.Closed {
		return refuse(CodeWrongStage, "the lobby is closed: no next game will start")
	}
	if _, err := validateConfig(cfg, o.s.rules, o.s.minTimeoutMs); err != nil {
		return err
	}
	o.lobby.NextConfig = &cfg
	o.lobbyDirty = true
	return o.emit(now, "", &NextConfigChangedData{Auth: auth, Config: cfg})
}

// Stop ends the current game (admins only): in registration every bet is refunded; later the
// escrow is split among the players still in, the remainder one unit each in registration order.
func (s *Service) Stop(ctx context.Context, tx Tx, now int64, actor Actor, lobby LobbyID, reason string) error {
	return s.run(ctx, tx, now, lobby, func(o *op) error { return o.stopByAdmin(now, actor, reason, nil) })
}

func (o *op) stopByAdmin(now int64, actor Actor, reason string, auth *AdminAuth) error {
	if !o.game.Stage.Open() {
		return refuse(CodeWrongStage, "the lobby is closed and has no game in progress")
	}
	if actor.Role != RoleAdmin {
		return refuse(CodeForbidden, "only an admin can stop a game")
	}
	if err := o.checkAdminGame(auth); err != nil {
		return err
	}
	reason, err := Text("reason", reason, MaxStopReasonLength)
	if err != nil {
		return err
	}
	if RulesStop(reason) {
		// The log tells an admin's stop from the rules' by its reason alone.
		return invalid("reason", fmt.Sprintf("%q is the reason of a stop the rules make; give the admin's own", reason))
	}
	return o.stop(now, reason, auth)
}

// Expire applies every deadline of the lobby's games that has passed by now, in order, each at
// its own deadline. It reports whether anything changed.
func (s *Service) Expire(ctx context.Context, tx Tx, now int64, lobby LobbyID) (bool, error) {
	var changed bool
	err := s.run(ctx, tx, now, lobby, func(o *op) error {
		changed = o.expired
		return nil
	})
	return changed, err
}

// ShiftClock moves every open deadline later by gap milliseconds after an outage in which no
// replica ran, so that nobody is eliminated for the service's downtime; one event per lobby.
func (s *Service) ShiftClock(ctx context.Context, tx Tx, now int64, gap int64) error {
	if gap <= 0 {
		return nil
	}
	lobbies, err := tx.ShiftDeadlines(ctx, gap)
	if err != nil {
		return fmt.Errorf("shift deadlines: %w", err)
	}
	for _, l := range lobbies {
		if err := tx.Append(ctx, Event{Type: EventClockShifted, LobbyID: l, At: now, Data: &ClockShiftedData{GapMs: gap}}); err != nil {
			return fmt.Errorf("append event: %w", err)
		}
	}
	return nil
}
