package api

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
)

// This file is the one place that shapes responses: it maps domain values to the generated API
// types, and handlers only read, call and return what these functions build. Sealing is applied
// here: a sealed value reaches a response only through the caller's own status (yourStatus).

func parseUUID(s string) uuid.UUID {
	id, _ := uuid.Parse(s)
	return id
}

// Timestamp is the contract's date-time as the server writes it: RFC 3339 in UTC with exactly
// three fraction digits, as events' `at` (time.Time's own encoding drops trailing zeros, so
// that a time on a whole second had no fraction, which strict parsers refuse). oapi-codegen.yaml
// maps every date-time to it.
type Timestamp struct{ time.Time }

// MarshalJSON writes the time in UTC to the millisecond.
func (t Timestamp) MarshalJSON() ([]byte, error) {
	return []byte(`"` + tournament.FormatTime(t.UnixMilli()) + `"`), nil
}

func millisToTime(ms int64) Timestamp { return Timestamp{time.UnixMilli(ms).UTC()} }

func optionalTime(ms int64) *Timestamp {
	if ms == 0 {
		return nil
	}
	t := millisToTime(ms)
	return &t
}

func configView(c tournament.Config) GameConfig {
	return GameConfig{
		BetSize: c.BetSize, PlayersCountLimit: int32(c.PlayersCountLimit),
		EntryTimeoutMs: c.EntryTimeoutMs, MoveTimeoutMs: c.MoveTimeoutMs, RevealTimeoutMs: c.RevealTimeoutMs,
		Ruleset: c.Ruleset, Resolution: Resolution(c.Resolution), StartWhenFull: c.StartWhenFull,
		MaxExtensions: int32(c.MaxExtensions), MaxRounds: int32(c.MaxRounds),
	}
}

// configInput fills the omitted fields of a requested config with their defaults.
func configInput(in GameConfigInput) tournament.Config {
	c := tournament.DefaultConfig()
	c.BetSize = in.BetSize
	c.PlayersCountLimit = int(in.PlayersCountLimit)
	if in.EntryTimeoutMs != nil {
		c.EntryTimeoutMs = *in.EntryTimeoutMs
	}
	if in.MoveTimeoutMs != nil {
		c.MoveTimeoutMs = *in.MoveTimeoutMs
	}
	if in.RevealTimeoutMs != nil {
		c.RevealTimeoutMs = *in.RevealTimeoutMs
	}
	if in.Ruleset != nil {
		c.Ruleset = *in.Ruleset
	}
	if in.Resolution != nil {
		c.Resolution = engine.Resolution(*in.Resolution)
	}
	if in.StartWhenFull != nil {
		c.StartWhenFull = *in.StartWhenFull
	}
	if in.MaxExtensions != nil {
		c.MaxExtensions = int(*in.MaxExtensions)
	}
	if in.MaxRounds != nil {
		c.MaxRounds = int(*in.MaxRounds)
	}
	return c
}

// lobbyView shows a lobby and its game to who, whose own rows in the game are yours (read with
// the lobby, or returned by the action that answers with it).
func lobbyView(l tournament.Lobby, g tournament.Game, who tournament.Account, yours store.Caller, now int64) Lobby {
	out := Lobby{
		Id: parseUUID(string(l.ID)), Name: l.Name, Closed: l.Closed, Config: configView(l.Config),
		CreatedAt: millisToTime(l.CreatedAt), ServerTime: now,
	}
	if l.NextConfig != nil {
		next := configView(*l.NextConfig)
		out.NextConfig = &next
	}
	// A closed lobby whose last game has ended shows that game.
	if g.ID != "" {
		state := gameState(g)
		state.You = yourStatus(who, g, yours)
		out.Game = &state
	}
	return out
}

func gameState(g tournament.Game) GameState {
	s := GameState{
		Id: parseUUID(string(g.ID)), Number: int32(g.Number), Stage: Stage(g.Stage), Round: int32(g.Round),
		StageStartedAt: optionalTime(g.StageStartedAt), Deadline: optionalTime(g.Deadline),
		Extensions: int32(g.Extensions), Players: int32(g.Players), Remaining: int32(g.Active),
		Committed: int32(g.Committed), Revealed: int32(g.Revealed), Pot: g.Escrow, RulesetHash: g.RulesetHash,
	}
	if g.Deadline != 0 {
		d := g.Deadline
		s.DeadlineMs = &d
	}
	return s
}

// yourStatus is the one rule of the caller's own status in a lobby's game, for a read of the lobby
// and an action's answer alike, and the one place a sealed value is shown: to its owner. A player
// sees its part in the game while the game is open (all false when not registered in it); anyone
// else (anonymous callers, admins) sees none, and nobody does once the game has ended (the store
// reads a player's rows with a lobby only while its game is open).
func yourStatus(who tournament.Account, g tournament.Game, yours store.Caller) *CallerStatus {
	if who.Role != tournament.RolePlayer || !g.Stage.Open() {
		return nil
	}
	c := &CallerStatus{}
	if yours.Player == nil {
		return c
	}
	c.Registered = true
	c.InGame = yours.Player.Active
	if m := yours.Move; m != nil && m.Round == g.Round {
		c.Committed = true
		hex := m.Commitment.String()
		c.Commitment = &hex
		if m.Revealed {
			c.Revealed = true
			move := int32(m.Move)
			c.Move = &move
		}
	}
	return c
}

func accountView(a tournament.Account) Account {
	out := Account{Id: parseUUID(string(a.ID)), Name: a.Name, Role: Role(a.Role), Balance: a.Balance,
		CreatedAt: millisToTime(a.CreatedAt), Status: AccountStatusActive}
	if a.DisabledAt != 0 {
		out.Status, out.DisabledAt = AccountStatusDisabled, optionalTime(a.DisabledAt)
	}
	return out
}

// gameRecordView shows a player's game. It carries nothing sealed: an open game's record holds
// only the stage, the stake and the player's own registration.
func gameRecordView(r store.Record) GameRecord {
	g := r.Game
	out := GameRecord{
		LobbyId: parseUUID(string(g.LobbyID)), LobbyName: r.LobbyName, GameId: parseUUID(string(g.ID)),
		GameNumber: int32(g.Number), Stage: Stage(g.Stage), RegisteredAt: millisToTime(r.Player.RegisteredAt),
		EndedAt: optionalTime(g.EndedAt), Stake: g.Config.BetSize, Ending: GameEnding(r.Ending), Net: r.Net,
	}
	if r.Ending == store.EndingEliminated {
		round := int32(r.Round)
		out.EliminatedRound = &round
	}
	if g.Winner != "" {
		winner, name := parseUUID(string(g.Winner)), r.WinnerName
		out.Winner, out.WinnerName = &winner, &name
	}
	return out
}

func gameRecordsView(recs []store.Record) []GameRecord {
	out := make([]GameRecord, len(recs))
	for i, r := range recs {
		out[i] = gameRecordView(r)
	}
	return out
}

func eventView(e tournament.LoggedEvent) Event {
	out := Event{
		Seq: e.Seq, Type: string(e.Type), LobbyId: parseUUID(string(e.LobbyID)), At: tournament.FormatTime(e.At),
		Data: e.Data, PrevHash: hexOf(e.PrevHash), Hash: hexOf(e.Hash),
	}
	if e.GameID != "" {
		id := parseUUID(string(e.GameID))
		out.GameId = &id
	}
	return out
}

func ledgerReportView(r tournament.LedgerReport) LedgerReport {
	return LedgerReport{
		Treasury: r.Treasury, PlayerBalances: r.PlayerBalances, Escrows: r.Escrows, EntriesSum: r.EntriesSum,
		Invariants: LedgerInvariants{
			EntriesSumToZero: r.EntriesSumToZero, BalancesMatchEntries: r.BalancesMatchEntries,
			NoNegativeBalance: r.NoNegativeBalance, ClosedEscrowsZero: r.ClosedEscrowsZero,
		},
		Ok: r.OK(),
	}
}

func gameSummaryView(g tournament.Game) GameSummary {
	out := GameSummary{
		Id: parseUUID(string(g.ID)), LobbyId: parseUUID(string(g.LobbyID)), Number: int32(g.Number),
		Config: configView(g.Config), RulesetHash: g.RulesetHash, Stage: Stage(g.Stage), Round: int32(g.Round),
		Players: int32(g.Players), Pot: g.Escrow, Payout: g.Payout, StartedAt: millisToTime(g.CreatedAt),
		EndedAt: optionalTime(g.EndedAt),
	}
	if g.Winner != "" {
		w := parseUUID(string(g.Winner))
		out.Winner = &w
	}
	if g.StopReason != "" {
		r := g.StopReason
		out.StopReason = &r
	}
	return out
}

func gamePlayerView(g tournament.Game, p store.GamePlayer) GamePlayer {
	out := GamePlayer{
		AccountId: parseUUID(string(p.AccountID)), Name: p.Name, Order: int32(p.Order),
		RegisteredAt: millisToTime(p.RegisteredAt), Status: GamePlayerStatusActive,
	}
	switch {
	case g.Winner == p.AccountID:
		out.Status = GamePlayerStatusWinner
	case !p.Active:
		out.Status = GamePlayerStatusEliminated
		r := int32(p.EliminatedRound)
		out.EliminatedInRound = &r
	}
	return out
}

// roundMoveView shows a player's part in a round, with its sealed parts only once they are public.
func roundMoveView(g tournament.Game, round int, p store.RoundPlayer) RoundMove {
	out := RoundMove{AccountId: parseUUID(string(p.AccountID))}
	m := p.Move
	if m == nil {
		return out
	}
	out.Committed, out.Revealed = true, m.Revealed
	if !tournament.SealedPublic(g, round) {
		return out
	}
	hex := m.Commitment.String()
	out.Commitment = &hex
	out.CommitSignature = signatureView(m.CommitSignature)
	if m.Revealed {
		reveal, move := m.Reveal, int32(m.Move)
		out.Reveal, out.Move = &reveal, &move
		out.RevealSignature = signatureView(m.RevealSignature)
	}
	return out
}

// signatureView shows a player's signature in hex (nil: unsigned).
func signatureView(sig []byte) *string {
	if sig == nil {
		return nil
	}
	s := hex.EncodeToString(sig)
	return &s
}

func rulesetView(rs *engine.Ruleset) Ruleset {
	out := Ruleset{Id: rs.ID(), Name: rs.Name(), Hash: rs.HashHex()}
	for _, w := range rs.Weapons() {
		beats := []int32{}
		for _, m := range w.Beats.Moves() {
			beats = append(beats, int32(m))
		}
		out.Weapons = append(out.Weapons, Weapon{
			Move: int32(w.Move), Digit: w.Move.String(), Name: w.Name, Layout: w.Layout, Rotations: w.Rotations, Beats: beats,
		})
	}
	out.Placements = placementsView(rs.Placements())
	return out
}

func placementsView(ps []engine.Placement) []Placement {
	out := make([]Placement, 0, len(ps))
	for _, p := range ps {
		out = append(out, Placement{Move: int32(p.Move), Rotation: int32(p.Rotation), Tiles: int32(p.Tiles)})
	}
	return out
}

func movesOf(s engine.MoveSet) []int32 {
	out := []int32{}
	for _, m := range s.Moves() {
		out = append(out, int32(m))
	}
	return out
}

func hexOf(b [32]byte) string { return hex.EncodeToString(b[:]) }

func ledgerEntryView(e store.LedgerEntry) (LedgerEntry, error) {
	out := LedgerEntry{
		Id: fmt.Sprint(e.ID), At: millisToTime(e.At), Amount: e.Amount, Kind: LedgerEntryKind(e.Kind),
		Counterparty: Escrow,
	}
	if e.Kind == tournament.PostingCredit || e.Kind == tournament.PostingDebit {
		out.Counterparty = Treasury
	}
	if e.GameID != "" {
		id := parseUUID(string(e.GameID))
		out.GameId = &id
	}
	if e.Note.Memo != "" {
		out.Memo = &e.Note.Memo
	}
	if e.Note.Auth != nil {
		auth, err := adminAuthView(e.Note.Auth)
		if err != nil {
			return LedgerEntry{}, fmt.Errorf("ledger entry %d: %w", e.ID, err)
		}
		out.Auth = &auth
	}
	return out, nil
}

// adminAuthView is an admin's signature as the contract shows it: the same members, so the JSON
// the store keeps is read into the contract's type.
func adminAuthView(a *tournament.AdminAuth) (AdminAuth, error) {
	var out AdminAuth
	b, err := json.Marshal(a)
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	if err != nil {
		return AdminAuth{}, fmt.Errorf("an admin's signature: %w", err)
	}
	return out, nil
}

// roundTranscriptView is a round's transcript: its stage, its result once resolved, the salt of
// its commitments' digest once revealed ("": not), and a page of its players' moves (players holds
// up to limit+1, the extra one telling that a next page exists).
func roundTranscriptView(g tournament.Game, round int, result *tournament.RoundResolvedData, salt string, players []store.RoundPlayer, limit int) RoundTranscript {
	out := RoundTranscript{Round: int32(round), Stage: RoundStageClosed, Counts: []int32{}, Moves: []RoundMove{}}
	if salt != "" {
		out.Salt = &salt
	}
	switch {
	case round == g.Round && g.Stage == tournament.StageMoves:
		out.Stage = RoundStageMoves
	case round == g.Round && g.Stage == tournament.StageReveal:
		out.Stage = RoundStageReveal
	}
	if result != nil {
		present, remaining := int32(result.Present), int32(result.Remaining)
		out.Present, out.Remaining = &present, &remaining
		for _, c := range result.Counts {
			out.Counts = append(out.Counts, int32(c))
		}
	}
	for i, p := range players {
		if i == limit {
			out.Next = int64CursorOf(int64(players[limit-1].Order))
			break
		}
		out.Moves = append(out.Moves, roundMoveView(g, round, p))
	}
	return out
}
