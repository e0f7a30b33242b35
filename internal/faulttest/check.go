package faulttest

import (
	"cmp"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/commitreveal/rps/tournament"
)

// Anomaly is something the history shows that the rules do not allow.
type Anomaly struct {
	// Check names the check that found it.
	Check string
	Lobby tournament.LobbyID
	// Detail says what, with the smallest part of the history that shows it.
	Detail string
	// Visualization is the path of porcupine's rendering of the lobby's history, if any.
	Visualization string
}

func (a Anomaly) String() string {
	s := fmt.Sprintf("[%s] lobby %s: %s", a.Check, a.Lobby, a.Detail)
	if a.Visualization != "" {
		s += "\n    visualization: " + a.Visualization
	}
	return s
}

// Resolution counts how the operations whose outcome a client could not know ended up known.
type Resolution struct {
	// Ambiguous counts the operations with at least one attempt whose outcome was unknown.
	Ambiguous int
	// Replayed and Fresh count those a retry resolved: with a replay of the first outcome, or
	// with a first execution.
	Replayed, Fresh int
	// Logged and Absent count those never answered: found in the log (done), or not (no effect).
	Logged, Absent int
}

// CheckOptions configure Check.
type CheckOptions struct {
	MinTimeoutMs int64
	// OutDir receives the visualizations of failing lobbies.
	OutDir string
	// Timeout bounds the linearizability check of one lobby, and MaxSteps (0: DefaultMaxSteps)
	// the model steps its search may take.
	Timeout  time.Duration
	MaxSteps int64
	// Outages are the times no replica could reach the database (the outage rule's business).
	Outages []Outage
	// OutageThreshold is the servers' RPSD_OUTAGE_THRESHOLD_MS.
	OutageThreshold time.Duration
	// DatabaseOutageRule: the servers apply the outage rule when the database was out of every
	// replica's reach too, not only when no replica ran.
	DatabaseOutageRule bool
	// Ledger is the admin's ledger report at the end.
	Ledger LedgerReport
}

// LedgerReport is GET /v1/admin/ledger.
type LedgerReport struct {
	Treasury       int64 `json:"treasury"`
	PlayerBalances int64 `json:"playerBalances"`
	Escrows        int64 `json:"escrows"`
	EntriesSum     int64 `json:"entriesSum"`
	OK             bool  `json:"ok"`
}

// Outage is a time when every replica was down or cut off from the database.
type Outage struct {
	Kind       string
	Start, End time.Time
}

// Result is what Check found.
type Result struct {
	Ops        int
	OpsByKind  map[Kind]int
	Resolution Resolution
	Games      int
	Events     int
	// Hedged counts the actions sent to two replicas at once with one key.
	Hedged    int
	Shifts    int
	Anomalies []Anomaly
	// Timeouts lists the lobbies whose linearizability check did not finish in time or within
	// its step budget: nothing is proven for them.
	Timeouts []tournament.LobbyID
	// Lobbies says what each lobby's linearizability check took.
	Lobbies []LobbyCheck
}

// LobbyCheck is what one lobby's linearizability check took: the shape of its history, the
// model's steps porcupine's search ran, and the time.
type LobbyCheck struct {
	Lobby    tournament.LobbyID
	Shape    historyShape
	Steps    int64
	Took     time.Duration
	TimedOut bool
	// OverBudget is set when the search reached CheckOptions.MaxSteps (TimedOut is set too).
	OverBudget bool
}

func (c LobbyCheck) String() string {
	s := fmt.Sprintf("lobby %s: %v, %d operations (%d open-ended, %d of them bounded; %d lost actions left out), %d model steps",
		short(string(c.Lobby)), c.Took.Round(time.Millisecond), c.Shape.Ops, c.Shape.Open, c.Shape.Bounded, c.Shape.Dropped, c.Steps)
	switch {
	case c.OverBudget:
		s += ", stopped at its step budget"
	case c.TimedOut:
		s += ", timed out"
	}
	return s
}

// Check checks a finished run: each lobby's history against the model, and the invariants of
// the logs and the ledger.
func Check(r *Run, o CheckOptions) Result {
	res := Result{OpsByKind: map[Kind]int{}}
	ops := r.history.Ops()
	res.Ops = len(ops)
	for _, op := range ops {
		res.OpsByKind[op.Input.Kind]++
	}
	res.Anomalies = append(res.Anomalies, resolve(r, ops, &res.Resolution)...)
	for _, l := range r.lobbies {
		log := r.Logs[l.id]
		res.Events += len(log)
		for _, e := range log {
			switch e.Type {
			case string(tournament.EventGameOpened):
				res.Games++
			case string(tournament.EventClockShifted):
				res.Shifts++
			}
		}
		res.Anomalies = append(res.Anomalies, checkLog(l.id, log)...)
	}
	for _, id := range r.Unended {
		res.Anomalies = append(res.Anomalies, Anomaly{Check: "every game ends", Lobby: id,
			Detail: fmt.Sprintf("the last game had not ended %v after the lobby was closed", endWait)})
	}
	res.Anomalies = append(res.Anomalies, checkReads(r, ops)...)
	for _, op := range ops {
		if op.Hedged {
			res.Hedged++
		}
		if op.Mismatch != "" {
			res.Anomalies = append(res.Anomalies, Anomaly{Check: "a retry is answered as the first attempt", Lobby: op.Lobby,
				Detail: fmt.Sprintf("%s sent twice at once with one key: %s", describeOp(op.Input, op.Output), op.Mismatch)})
		}
	}
	res.Anomalies = append(res.Anomalies, checkMoney(r, ops, o.Ledger)...)
	res.Anomalies = append(res.Anomalies, checkOutages(r, o)...)
	lin, lobbies := checkLinearizable(r, ops, o)
	res.Anomalies = append(res.Anomalies, lin...)
	res.Lobbies = lobbies
	for _, c := range lobbies {
		if c.TimedOut {
			res.Timeouts = append(res.Timeouts, c.Lobby)
		}
	}
	return res
}

// eventOf names the event an accepted action writes, and whether it is that action's.
func eventOf(op *Op, e LogEvent) bool {
	in := op.Input
	switch in.Kind {
	case KindRegister:
		return e.Type == string(tournament.EventPlayerRegistered) && e.str("player") == string(in.Actor)
	case KindLeave:
		return e.Type == string(tournament.EventPlayerLeft) && e.str("player") == string(in.Actor)
	case KindCommit:
		return e.Type == string(tournament.EventMoveCommitted) && e.str("player") == string(in.Actor)
	case KindReveal:
		return e.Type == string(tournament.EventMoveRevealed) && e.str("player") == string(in.Actor)
	case KindStop:
		return e.Type == string(tournament.EventGameStopped) && e.str("reason") == in.Reason
	case KindNextConfig:
		var d struct {
			Config tournament.Config `json:"config"`
		}
		return e.Type == string(tournament.EventNextConfigChanged) && json.Unmarshal(e.Data, &d) == nil && d.Config == in.Config
	case KindClose:
		return e.Type == string(tournament.EventLobbyClosed)
	}
	return false
}

// resolve finds every acknowledged action in the log (an anomaly when one is missing), gives
// each unanswered operation its outcome from the log or the ledger, and counts the resolutions.
func resolve(r *Run, ops []*Op, res *Resolution) []Anomaly {
	var anomalies []Anomaly
	claimed := map[tournament.LobbyID]map[int64]bool{}
	// Answered actions first: their instant names their event.
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	for _, op := range ops {
		if op.Ambiguous > 0 && op.Answered {
			res.Ambiguous++
			if op.Replayed {
				res.Replayed++
			} else {
				res.Fresh++
			}
		}
		if !op.Input.Kind.lobbyAction() || !op.Answered || op.Output.Outcome != OutcomeOK {
			continue
		}
		if claimed[op.Lobby] == nil {
			claimed[op.Lobby] = map[int64]bool{}
		}
		i := slices.IndexFunc(r.Logs[op.Lobby], func(e LogEvent) bool {
			return !claimed[op.Lobby][e.Seq] && e.atMs == op.Output.At && eventOf(op, e)
		})
		if i < 0 && op.Input.Kind == KindClose && closedBy(r.Logs[op.Lobby], op.Output.At) {
			// Closing a closed lobby changes nothing and logs nothing: a close sent again after
			// the first was given up, which had closed it. The model checks it was closed by then.
			continue
		}
		if i < 0 {
			anomalies = append(anomalies, Anomaly{Check: "acknowledged actions are logged", Lobby: op.Lobby,
				Detail: fmt.Sprintf("%s was acknowledged but the log has no such event at its instant", describeOp(op.Input, op.Output))})
			continue
		}
		claimed[op.Lobby][r.Logs[op.Lobby][i].Seq] = true
	}
	for _, op := range ops {
		in := op.Input
		if in.Kind == KindCredit || in.Kind == KindDebit {
			// The audit log has one entry per execution of a credit or a debit, with its status.
			entries := r.Audit[in.Reason]
			done := slices.IndexFunc(entries, func(e AuditEntry) bool { return e.Detail.Status == 200 })
			switch {
			case len(entries) > 1:
				anomalies = append(anomalies, Anomaly{Check: "money is moved once", Lobby: op.Lobby,
					Detail: fmt.Sprintf("%s was executed %d times", describeOp(in, op.Output), len(entries))})
			case op.Answered && op.Output.Outcome == OutcomeOK && done < 0:
				anomalies = append(anomalies, Anomaly{Check: "acknowledged actions are logged", Lobby: op.Lobby,
					Detail: fmt.Sprintf("%s was acknowledged but the audit log has no such credit or debit", describeOp(in, op.Output))})
			case op.Answered && op.Output.Outcome == OutcomeRefused && done >= 0:
				anomalies = append(anomalies, Anomaly{Check: "refusals change nothing", Lobby: op.Lobby,
					Detail: fmt.Sprintf("%s was refused but the audit log has it done", describeOp(in, op.Output))})
			case !op.Answered && done >= 0:
				op.Output = Output{Outcome: OutcomeLogged, At: entries[done].At.UnixMilli()}
				res.Logged++
			case !op.Answered:
				res.Absent++
			}
			continue
		}
		if op.Answered || !in.Kind.lobbyAction() {
			continue
		}
		if claimed[op.Lobby] == nil {
			claimed[op.Lobby] = map[int64]bool{}
		}
		i := slices.IndexFunc(r.Logs[op.Lobby], func(e LogEvent) bool {
			return !claimed[op.Lobby][e.Seq] && e.atMs >= in.FromMs && eventOf(op, e)
		})
		switch {
		case actedType(in.Kind) != "":
			// Which of a player's like events is this action's, the model decides; the count
			// of those the log may show is a first guess.
			op.Output = Output{Outcome: OutcomeUnknown}
			if i >= 0 {
				claimed[op.Lobby][r.Logs[op.Lobby][i].Seq] = true
				res.Logged++
			} else {
				res.Absent++
			}
		case i >= 0:
			// A stop's reason, a config and a close are the operation's own.
			e := r.Logs[op.Lobby][i]
			claimed[op.Lobby][e.Seq] = true
			op.Output = Output{Outcome: OutcomeLogged, At: e.atMs}
			res.Logged++
		default:
			res.Absent++
		}
	}
	return anomalies
}

// closedBy tells, from a lobby's log, whether it was closed at instant t.
func closedBy(log []LogEvent, t int64) bool {
	return slices.ContainsFunc(log, func(e LogEvent) bool { return e.Type == string(tournament.EventLobbyClosed) && e.atMs <= t })
}

// checkLog checks a lobby's whole log: numbered 1, 2, 3... with every hash the chain's; each
// stage change at most once and every game ended exactly once.
func checkLog(lobby tournament.LobbyID, log []LogEvent) []Anomaly {
	var anomalies []Anomaly
	bad := func(check, format string, args ...any) {
		anomalies = append(anomalies, Anomaly{Check: check, Lobby: lobby, Detail: fmt.Sprintf(format, args...)})
	}
	prev := strings.Repeat("0", 64)
	for i, e := range log {
		if e.Seq != int64(i+1) {
			bad("every event chain verifies", "event %d is at position %d", e.Seq, i+1)
			return anomalies
		}
		le := tournament.LoggedEvent{Seq: e.Seq, Type: tournament.EventType(e.Type), LobbyID: tournament.LobbyID(e.LobbyId.String()),
			GameID: e.game(), At: e.atMs, Data: e.Data}
		h, err := tournament.ChainHash(withPrev(le, prev))
		if err != nil || e.PrevHash != prev && !(e.Seq == 1 && e.PrevHash == "") || fmt.Sprintf("%x", h) != e.Hash {
			bad("every event chain verifies", "event %d (%s): prevHash %s hash %s, the chain gives %s after %s (%v)", e.Seq, e.Type, e.PrevHash, e.Hash, fmt.Sprintf("%x", h), prev, err)
			return anomalies
		}
		prev = e.Hash
	}
	seen := map[string]int64{}
	once := func(key string, e LogEvent) {
		if first, dup := seen[key]; dup {
			bad("no stage changes twice", "%s: events %d and %d", key, first, e.Seq)
			return
		}
		seen[key] = e.Seq
	}
	var games []tournament.GameID
	for _, e := range log {
		g := e.game()
		switch tournament.EventType(e.Type) {
		case tournament.EventGameOpened:
			once("game "+string(g)+" opened", e)
			games = append(games, g)
		case tournament.EventGameFinished, tournament.EventGameStopped:
			once("game "+string(g)+" ended", e)
		case tournament.EventRoundStarted:
			once(fmt.Sprintf("game %s round %d started", g, e.num("round")), e)
		case tournament.EventMovesClosed:
			once(fmt.Sprintf("game %s round %d moves closed", g, e.num("round")), e)
		case tournament.EventRoundResolved:
			once(fmt.Sprintf("game %s round %d resolved", g, e.num("round")), e)
		}
	}
	for _, g := range games {
		if _, ended := seen["game "+string(g)+" ended"]; !ended {
			bad("every game ends", "game %s never ended", g)
		}
	}
	return anomalies
}

func withPrev(e tournament.LoggedEvent, prevHex string) tournament.LoggedEvent {
	var prev [32]byte
	if b, err := decodeHex32(prevHex); err == nil {
		prev = b
	}
	if e.Seq == 1 {
		prev = [32]byte{}
	}
	e.PrevHash = prev
	return e
}

func decodeHex32(s string) ([32]byte, error) {
	var out [32]byte
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 32 {
		return out, fmt.Errorf("hash %q is not 64 hex digits", s)
	}
	copy(out[:], b)
	return out, nil
}

// checkReads checks that every event a client read is the log's event of that number: events
// never change, whichever replica serves them.
func checkReads(r *Run, ops []*Op) []Anomaly {
	var anomalies []Anomaly
	for _, op := range ops {
		if op.Input.Kind != KindReadEvents || !op.Answered {
			continue
		}
		log := r.Logs[op.Lobby]
		for _, e := range op.Output.Events {
			if e.Seq < 1 || e.Seq > int64(len(log)) || log[e.Seq-1].Hash != e.Hash {
				anomalies = append(anomalies, Anomaly{Check: "events never change", Lobby: op.Lobby,
					Detail: fmt.Sprintf("a read after %d saw event %d with hash %s, which the final log (%d events) does not have", op.Input.After, e.Seq, e.Hash, len(log))})
				break
			}
		}
	}
	return anomalies
}

// checkMoney checks the ledger at the end: every invariant holds, no escrow is left, the money
// in play is what the credits put in and the debits took out, and each player's balance is the
// sum of its ledger entries.
func checkMoney(r *Run, ops []*Op, report LedgerReport) []Anomaly {
	var anomalies []Anomaly
	bad := func(format string, args ...any) {
		anomalies = append(anomalies, Anomaly{Check: "money is conserved", Detail: fmt.Sprintf(format, args...)})
	}
	if !report.OK {
		bad("the admin ledger reports a broken invariant: %+v", report)
	}
	if report.Escrows != 0 {
		bad("%d is left in escrow after every game ended", report.Escrows)
	}
	if report.Treasury+report.PlayerBalances+report.Escrows != 0 {
		bad("treasury %d + balances %d + escrows %d is not 0", report.Treasury, report.PlayerBalances, report.Escrows)
	}
	var net int64
	for _, op := range ops {
		done := op.Output.Outcome == OutcomeOK || op.Output.Outcome == OutcomeLogged
		switch {
		case op.Input.Kind == KindCredit && done:
			net += op.Input.Amount
		case op.Input.Kind == KindDebit && done:
			net -= op.Input.Amount
		}
	}
	if net != report.PlayerBalances {
		bad("the credits less the debits done come to %d, the players hold %d", net, report.PlayerBalances)
	}
	for account, entries := range r.Ledgers {
		var sum int64
		for _, e := range entries {
			sum += e.Amount
		}
		if b, ok := r.Balances[account]; !ok {
			bad("player %s: no final balance could be read", account)
		} else if b != sum {
			bad("player %s: balance %d, ledger entries sum to %d", account, b, sum)
		}
	}
	return anomalies
}

// checkOutages checks the outage rule against the nemesis's record. A clock shift comes only
// after an outage longer than the threshold, by about its length. After an outage the rule
// covers (every replica down; with DatabaseOutageRule, also the database out of every replica's
// reach), every lobby with an open deadline when it began has a shift, and no event of any lobby
// is dated inside it: nothing ran then, and the deadlines that fell in it moved.
func checkOutages(r *Run, o CheckOptions) []Anomaly {
	var anomalies []Anomaly
	bad := func(lobby tournament.LobbyID, format string, args ...any) {
		anomalies = append(anomalies, Anomaly{Check: "deadlines fall where the rules say", Lobby: lobby, Detail: fmt.Sprintf(format, args...)})
	}
	// The last heartbeat before an outage is up to a beat (1 s) before it, and the replicas take
	// a moment to start or reconnect after it.
	const slack = 3 * time.Second
	// The end of an outage is when the nemesis saw it end: a replica may have reached the
	// database a moment before (the failover's end is found by polling).
	const endSlack = time.Second
	// The first transaction after an outage shifts the clock: within moments, unless the machine
	// is busy (a replica restarted after every one was killed takes seconds to start then).
	const recoverWithin = 20 * time.Second
	for _, l := range r.lobbies {
		log := r.Logs[l.id]
		for _, e := range log {
			if e.Type != string(tournament.EventClockShifted) {
				continue
			}
			at := time.UnixMilli(e.atMs)
			gap := time.Duration(e.num("gapMs")) * time.Millisecond
			i := slices.IndexFunc(o.Outages, func(out Outage) bool {
				length := out.End.Sub(out.Start)
				return !at.Before(out.End.Add(-endSlack)) && at.Sub(out.End) < recoverWithin && gap >= length-slack && gap <= length+recoverWithin
			})
			if i < 0 {
				bad(l.id, "clock shifted by %v at %s, after no outage of about that length (outages: %v)", gap, at.Format("15:04:05.000"), o.Outages)
			}
		}
		for _, out := range o.Outages {
			if out.Kind != FaultKillAll && !o.DatabaseOutageRule || out.End.Sub(out.Start) <= o.OutageThreshold {
				continue
			}
			// A moment after the outage began, nothing more can be written until it ends.
			from, to := out.Start.Add(200*time.Millisecond).UnixMilli(), out.End.Add(-endSlack).UnixMilli()
			for _, e := range log {
				if e.atMs > from && e.atMs < to {
					bad(l.id, "event %d (%s) is dated %s, inside the %s outage %s..%s", e.Seq, e.Type,
						time.UnixMilli(e.atMs).Format("15:04:05.000"), out.Kind, out.Start.Format("15:04:05.000"), out.End.Format("15:04:05.000"))
					break
				}
			}
			// The lobby's state when the writes stopped, a moment after the nemesis began (the
			// kill lands then): a deadline applied in that moment needs no shift.
			if !openDeadlineAt(log, from) {
				continue
			}
			shifted := slices.ContainsFunc(log, func(e LogEvent) bool {
				return e.Type == string(tournament.EventClockShifted) && e.atMs >= to && e.atMs < to+recoverWithin.Milliseconds()
			})
			if !shifted {
				bad(l.id, "no clock shift after the %s outage %s..%s, though a deadline was open when it began", out.Kind,
					out.Start.Format("15:04:05.000"), out.End.Format("15:04:05.000"))
			}
		}
	}
	return anomalies
}

// openDeadlineAt tells, from a lobby's log, whether its game had a deadline at instant t.
func openDeadlineAt(log []LogEvent, t int64) bool {
	var deadline int64
	for _, e := range log {
		if e.atMs > t {
			break
		}
		switch tournament.EventType(e.Type) {
		case tournament.EventPlayerRegistered, tournament.EventRoundStarted, tournament.EventMovesClosed, tournament.EventStageExtended:
			deadline = e.num("deadline")
		case tournament.EventPlayerLeft:
			if e.num("players") == 0 {
				deadline = 0
			}
		case tournament.EventGameOpened, tournament.EventGameFinished, tournament.EventGameStopped:
			deadline = 0
		}
	}
	return deadline != 0
}

// checkLinearizable checks each lobby's history against the model, in parallel.
func checkLinearizable(r *Run, ops []*Op, o CheckOptions) ([]Anomaly, []LobbyCheck) {
	byLobby := map[tournament.LobbyID][]*Op{}
	for _, op := range ops {
		byLobby[op.Lobby] = append(byLobby[op.Lobby], op)
	}
	var (
		mu        sync.Mutex
		anomalies []Anomaly
		checks    []LobbyCheck
		wg        sync.WaitGroup
		slots     = make(chan struct{}, 2)
	)
	for _, l := range r.lobbies {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			a, c := checkLobby(r, l, byLobby[l.id], o)
			mu.Lock()
			defer mu.Unlock()
			anomalies = append(anomalies, a...)
			checks = append(checks, c)
		})
	}
	wg.Wait()
	return anomalies, checks
}

// lobbySpec reads what the model needs of a lobby from its log.
func lobbySpec(r *Run, l *lobbyRun) (LobbySpec, error) {
	log := r.Logs[l.id]
	spec := LobbySpec{ID: l.id, Admin: r.admin, Keys: map[string]tournament.AccountID{}}
	for _, p := range l.players {
		spec.Players = append(spec.Players, p.account)
		spec.Keys[p.key.ID()] = p.account
	}
	if len(log) == 0 || log[0].Type != string(tournament.EventLobbyCreated) {
		return spec, fmt.Errorf("the log does not start with lobby_created")
	}
	var created tournament.LobbyCreatedData
	if err := json.Unmarshal(log[0].Data, &created); err != nil {
		return spec, fmt.Errorf("lobby_created: %w", err)
	}
	spec.Name, spec.Config, spec.CreatedAt = created.Name, created.Config, log[0].atMs
	spec.Acted = map[string][]int64{}
	spec.Salts = map[RoundRef]tournament.Salt{}
	for _, e := range log {
		spec.Log = append(spec.Log, EventRef{Seq: e.Seq, Hash: e.Hash})
		switch typ := tournament.EventType(e.Type); typ {
		case tournament.EventGameOpened:
			spec.GameIDs = append(spec.GameIDs, e.game())
		case tournament.EventRoundResolved, tournament.EventGameFinished, tournament.EventGameStopped:
			if e.str("salt") == "" {
				break
			}
			salt, err := tournament.ParseSalt(e.str("salt"))
			if err != nil {
				return spec, fmt.Errorf("event %d: %w", e.Seq, err)
			}
			spec.Salts[RoundRef{e.game(), int(e.num("round"))}] = salt
		case tournament.EventPlayerRegistered, tournament.EventPlayerLeft, tournament.EventMoveCommitted, tournament.EventMoveRevealed:
			key := actedKey(typ, tournament.AccountID(e.str("player")))
			spec.Acted[key] = append(spec.Acted[key], e.atMs)
		}
	}
	return spec, nil
}

// DefaultMaxSteps bounds one lobby's search, and with it the check's memory: each state the
// search reaches is a reference store of its own, which porcupine keeps (a self-test history of
// 160,000 steps took 370 MB; a 20-minute run's check once filled the machine's 24 GiB and swap).
// A lobby's check takes hundreds of steps, a few thousand at most: one past this bound is reported
// as unchecked, naming the lobby, rather than taking the machine down.
const DefaultMaxSteps = 500_000

// checkLobby checks one lobby's history; on failure it explains the first operation that
// cannot be linearized and writes porcupine's visualization.
func checkLobby(r *Run, l *lobbyRun, ops []*Op, o CheckOptions) ([]Anomaly, LobbyCheck) {
	began := time.Now()
	c := LobbyCheck{Lobby: l.id}
	spec, err := lobbySpec(r, l)
	if err != nil {
		return []Anomaly{{Check: "linearizable", Lobby: l.id, Detail: err.Error()}}, c
	}
	m := newLobbyModel(spec, o.MinTimeoutMs)
	m.maxSteps = cmp.Or(o.MaxSteps, DefaultMaxSteps)
	init, err := m.initial()
	if err != nil {
		return []Anomaly{{Check: "linearizable", Lobby: l.id, Detail: "the lobby's creation: " + err.Error()}}, c
	}
	history, shape := porcupineHistory(ops, r.Logs[l.id])
	model := m.porcupineModel(init)
	result, info := porcupine.CheckOperationsVerbose(model, history, o.Timeout)
	c.Shape, c.Steps, c.Took, c.OverBudget = shape, m.steps.Load(), time.Since(began), m.exhausted.Load()
	c.TimedOut = result == porcupine.Unknown || c.OverBudget
	if result != porcupine.Illegal || c.OverBudget {
		// Stopped at its budget, the search failed every step after it: no verdict.
		return nil, c
	}
	a := Anomaly{Check: "linearizable", Lobby: l.id, Detail: m.diagnose(init, history, info)}
	if o.OutDir != "" {
		path := filepath.Join(o.OutDir, "lobby-"+string(l.id)+".html")
		if err := os.MkdirAll(o.OutDir, 0o755); err == nil && porcupine.VisualizePath(model, info, path) == nil {
			a.Visualization = path
		}
	}
	return []Anomaly{a}, c
}

// porcupineHistory turns a lobby's operations into porcupine's, leaving out those that had no
// effect and no answer, and adding the log's clock shifts. It says how many operations it gave an
// open window and how many of those it could bound.
//
// An operation never answered, and a clock shift, took effect at some unknown moment after its
// call. Left open from its call to the end of the history, each can be linearized anywhere in
// between; porcupine's search, whose visited set holds every subset of operations taken with each
// state reached, multiplies with the number of them pending at once and with the length of their
// windows. A request whose answer was lost and that ran seconds after its call (a paused or
// cut-off replica held it) is the worst: the search takes it first, at its call, fails only where
// its event is due, and backtracks through every operation in between, for each such request (the
// self-test's history of such requests took 40,000-160,000 model steps a lobby, and 370 MB, and
// did not finish in a minute, where 600 steps now do). A 20-minute run's check ran out of memory.
// So each window is narrowed to where the operation can have taken effect if it did, which leaves
// the verdict as it was:
//
//   - Not before its instant (less a millisecond for the clocks' rounding): an action that took
//     effect at instant a did so after the server read a from the database's clock, which the
//     test shares, so whatever returned before then came before it. A lost action's instant is at
//     least the instant of the event that carries its signature's Idempotency-Key (a logged
//     one's is its event's). Not done, a lost action changes nothing, so where it is
//     linearized does not matter. This holds for an acknowledged action too, whose instant its
//     answer gives: one answered after retries through an outage was called seconds before it
//     ran, and taken at its call it set the model's clock ahead of everything in between, which
//     the search then undid one operation at a time.
//   - Not after an acknowledged lobby action of a later instant than its own latest possible
//     one: the model's lobby clock never goes back (an action sets it to its instant, and an
//     action or a shift before it is refused).
//   - Not after a read that saw the log at or beyond the last position of the events it can have
//     written (by kind, player, key or content, and instant): the model's log is the server's, event for
//     event, and only grows, so once it is there the operation can no longer write its event. An
//     accepted action writes its event, but for a close of a closed lobby, which is the same as a
//     close whose event another close wrote, taken where the event is.
//
// A lost register, leave, commit or reveal whose event (the one with its key) the log does not
// show in its window can only be "not done", a step that changes nothing: it is left out. Credits
// and debits never answered write no lobby event and stay open to the end, from their audit
// entries' instants.
func porcupineHistory(ops []*Op, log []LogEvent) ([]porcupine.Operation, historyShape) {
	var out []porcupine.Operation
	var shape historyShape
	var end int64
	for _, op := range ops {
		end = max(end, op.Return)
	}
	witnesses := witnessesOf(ops)
	// bound is the end of an operation called at call that can only take effect at an instant of
	// at most at and write events at positions of at most seq.
	bound := func(call, at, seq int64) int64 {
		ret := max(end, call) + 1
		for _, w := range witnesses {
			if w.ret > call && w.ret < ret && (w.at > at || w.seen >= seq) {
				ret = w.ret
			}
		}
		shape.Open++
		if ret <= end {
			shape.Bounded++
		}
		return ret
	}
	for _, op := range ops {
		if !op.Answered && op.Output.Outcome != OutcomeLogged && op.Output.Outcome != OutcomeUnknown {
			continue
		}
		call, ret := op.Call, op.Return
		if op.Answered && op.Input.Kind.lobbyAction() && op.Output.Outcome == OutcomeOK && op.Output.At != 0 {
			// Not before its instant either: a retry can run an action seconds after its call.
			call = max(call, (op.Output.At-1)*int64(time.Millisecond))
		}
		if !op.Answered {
			first, last, seq := candidateEvents(op, log)
			switch {
			case op.Output.Outcome == OutcomeUnknown && seq == 0:
				shape.Dropped++
				continue
			case seq == 0:
				// A credit or a debit: it wrote no lobby event, so it stays open to the end, but
				// not before the instant of its audit entry, written with it.
				call = max(call, (op.Output.At-1)*int64(time.Millisecond))
				ret = max(end, call) + 1
				shape.Open++
			default:
				call = max(call, (first-1)*int64(time.Millisecond))
				ret = bound(call, last, seq)
			}
		}
		out = append(out, porcupine.Operation{ClientId: op.Client, Input: op.Input, Output: op.Output, Call: call, Return: ret, Metadata: len(out)})
	}
	for _, e := range log {
		if e.Type != string(tournament.EventClockShifted) {
			continue
		}
		// The shift took effect when its transaction committed, at some moment after its instant
		// (reads that began after the instant may not see it yet).
		call := e.atMs * int64(time.Millisecond)
		out = append(out, porcupine.Operation{ClientId: 0, Input: Input{Kind: KindShift, GapMs: e.num("gapMs"), FromMs: e.atMs, ToMs: math.MaxInt64},
			Output: Output{Outcome: OutcomeOK, At: e.atMs}, Call: call, Return: bound(call, e.atMs, e.Seq), Metadata: len(out)})
	}
	shape.Ops = len(out)
	return out, shape
}

// historyShape counts a lobby's checked operations and those left open-ended.
type historyShape struct {
	Ops int
	// Open counts the operations never answered and the clock shifts; Bounded those of them
	// whose end an answered operation bounds; Dropped the lost actions left out as "not done".
	Open, Bounded, Dropped int
}

// witness is what an answered operation shows had taken effect before it returned: the lobby's
// clock had reached at (an acknowledged lobby action's instant), or the log had reached seen
// (0: nothing seen).
type witness struct {
	ret, at, seen int64
}

func witnessesOf(ops []*Op) []witness {
	var out []witness
	for _, op := range ops {
		if !op.Answered || op.Output.Outcome != OutcomeOK {
			continue
		}
		w := witness{ret: op.Return, at: math.MinInt64}
		switch {
		case op.Input.Kind.lobbyAction() && op.Output.At != 0:
			w.at = op.Output.At
		case op.Input.Kind == KindReadLobby && op.Output.View != nil && op.Output.View.Head != nil:
			w.seen = op.Output.View.Head.Seq
		case op.Input.Kind == KindReadEvents && len(op.Output.Events) > 0:
			w.seen = op.Input.After + int64(len(op.Output.Events))
		default:
			continue
		}
		out = append(out, w)
	}
	return out
}

// candidateEvents are the first and the latest instant and the last position of the log's events
// an unanswered lobby action can have written, if it took effect: the event resolve found for a
// logged one and every like event at its instant; for a lost register, leave, commit or reveal,
// the event of its kind by its player in its window (as the model's) that carries its signature's
// Idempotency-Key, which the model's event would carry too (seq 0: none).
func candidateEvents(op *Op, log []LogEvent) (first, last, seq int64) {
	for _, e := range log {
		ok := eventOf(op, e)
		if op.Output.Outcome == OutcomeUnknown {
			ok = ok && e.atMs >= op.Input.FromMs && e.atMs <= op.Input.FromMs+unknownWithin.Milliseconds() &&
				(op.Input.Signed == nil || e.authKey() == op.Input.Signed.IdempotencyKey)
		} else {
			ok = ok && e.atMs == op.Output.At
		}
		if !ok {
			continue
		}
		if seq == 0 {
			first = e.atMs
		}
		first, last, seq = min(first, e.atMs), max(last, e.atMs), max(seq, e.Seq)
	}
	return first, last, seq
}

// authKey is the Idempotency-Key of the signature a player's action event records ("" none).
func (e LogEvent) authKey() string {
	auth, _ := e.fields["auth"].(map[string]any)
	key, _ := auth["idempotencyKey"].(string)
	return key
}

// diagnose explains a failed check: the longest prefix of the history the model could take, the
// state it left, and for each operation that could come next, why the model cannot take it there
// nor at the earliest place the real-time order allows it (right after the prefix's last
// operation that returned before its call): an operation left behind is often wrong there.
func (m *lobbyModel) diagnose(init *modelState, history []porcupine.Operation, info porcupine.LinearizationInfo) string {
	var longest []porcupine.Operation
	for _, partition := range info.PartialLinearizationsOperations() {
		for _, lin := range partition {
			if len(lin) > len(longest) {
				longest = lin
			}
		}
	}
	states := []*modelState{init}
	// statesAfter[k] are the states after the prefix's first k operations.
	statesAfter := [][]*modelState{states}
	done := map[int]bool{}
	for _, op := range longest {
		done[op.Metadata.(int)] = true
		var next []*modelState
		for _, s := range states {
			n, _ := m.step(s, op.Input.(Input), op.Output.(Output))
			next = append(next, n...)
		}
		states = next
		statesAfter = append(statesAfter, states)
	}
	whyNot := func(states []*modelState, op porcupine.Operation) string {
		var why []string
		for _, s := range states {
			next, w := m.step(s, op.Input.(Input), op.Output.(Output))
			if len(next) > 0 {
				return "the model can take it there (what comes after it then fails)"
			}
			why = append(why, w)
		}
		return strings.Join(why, " | ")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "not linearizable: the model takes %d of %d operations", len(longest), len(history))
	for i := max(0, len(longest)-4); i < len(longest); i++ {
		op := longest[i]
		fmt.Fprintf(&b, "\n      took  [%s] %s", span(op), describeOp(op.Input.(Input), op.Output.(Output)))
	}
	for _, s := range states {
		fmt.Fprintf(&b, "\n      state %s", m.describeState(s))
	}
	minReturn := int64(math.MaxInt64)
	for _, op := range history {
		if !done[op.Metadata.(int)] {
			minReturn = min(minReturn, op.Return)
		}
	}
	for _, op := range history {
		if done[op.Metadata.(int)] || op.Call > minReturn {
			continue
		}
		fmt.Fprintf(&b, "\n      next? [%s] %s\n            %s", span(op), describeOp(op.Input.(Input), op.Output.(Output)), whyNot(states, op))
		earliest := 0
		for k, prior := range longest {
			if prior.Return < op.Call {
				earliest = k + 1
			}
		}
		if earliest < len(longest) {
			after := "at the start"
			if earliest > 0 {
				prior := longest[earliest-1]
				after = fmt.Sprintf("after [%s] %s", span(prior), describeOp(prior.Input.(Input), prior.Output.(Output)))
			}
			fmt.Fprintf(&b, "\n            at its earliest place, %s: %s", after, whyNot(statesAfter[earliest], op))
		}
	}
	return b.String()
}

// span is an operation's call and return, on the wall clock.
func span(op porcupine.Operation) string {
	ret := "never"
	if op.Return < math.MaxInt64/2 {
		ret = time.Unix(0, op.Return).Format("15:04:05.000")
	}
	return time.Unix(0, op.Call).Format("15:04:05.000") + ".." + ret
}
