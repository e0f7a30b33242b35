// Command rpsverify checks an rpsd server's lobbies from public data only, as anyone can: it
// downloads each lobby's log and its games' transcripts, players and postings through the
// anonymous endpoints, and re-derives with the engine the hash chain, every stage digest, every
// reveal against its commitment, the eliminations at each deadline, each round's survivors, the
// winners, payouts, refunds and splits to the unit, and that every ended game's escrow is zero.
// It checks every signed head the server gives out and keeps the newest as receipts, and every
// player action against the key its player had then, by the player's key log.
//
//	rpsverify --server URL [--lobby ID ...] [--account ID ...] [--require-signatures] [--json] [--state FILE] [--receipts FILE]
//
// Exit status: 0 when everything verifies, 1 when anything does not (the first failing item of
// each lobby is named), 2 on usage or network errors.
package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/commitreveal/rps/engine"
	"github.com/commitreveal/rps/internal/apiclient"
	"github.com/commitreveal/rps/translog"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailed  = 1
	exitUsage   = 2
	exitNetwork = 2
	timeLayout  = "2006-01-02T15:04:05.000Z07:00"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// stringList is a repeatable flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

// Report is what --json prints.
type Report struct {
	Server  string        `json:"server"`
	OK      bool          `json:"ok"`
	Lobbies []LobbyResult `json:"lobbies"`
	// Log is the transparency log's check (absent when the server keeps none).
	Log *LogReport `json:"log,omitempty"`
	// Accounts are the key logs checked: every player of the lobbies verified, and --account's.
	Accounts []AccountResult `json:"accounts"`
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rpsverify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", "", "base URL of the rpsd server (required), such as http://127.0.0.1:8080")
	var lobbies, accounts, logKeys, witnesses stringList
	fs.Var(&lobbies, "lobby", "a lobby to verify (repeatable; default: every lobby)")
	fs.Var(&accounts, "account", "an account whose key log to verify besides those of the lobbies' players (repeatable)")
	requireSignatures := fs.Bool("require-signatures", false, "fail on an action its player did not sign, even by a player who had no key then (the server's RPSD_PLAYER_KEYS=required)")
	requireAdminSignatures := fs.Bool("require-admin-signatures", false, "fail on an admin's act in a lobby's log that records no admin's signature (the server's RPSD_ADMIN_KEYS=required)")
	fs.Var(&logKeys, "log-key", "a trusted note verifier key of the transparency log, followed through the key rotations it signs (repeatable; default: the keys GET /v1/log lists)")
	fs.Var(&witnesses, "witness", "a trusted witness's cosignature verifier key (repeatable)")
	quorum := fs.Int("witness-quorum", 0, "how many of the --witness keys must have cosigned the log's checkpoint (default: all of them)")
	maxLag := fs.Duration("max-log-lag", 2*time.Minute, "how old an event may be and still be missing from the log's checkpoint")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	statePath := fs.String("state", "", "checkpoint file: resume each lobby from it and save the new checkpoints and receipts to it")
	receiptsPath := fs.String("receipts", "", "a state file whose receipts (signed heads) to check against the current logs")
	quiet := fs.Bool("quiet", false, "no progress lines on standard error")
	maxKeyEvents := fs.Int("max-key-events", defaultMaxKeyEvents, "the longest key log of one account to read: a longer one ends the run (exit 2) rather than being read without end")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: rpsverify --server URL [--lobby ID ...] [--account ID ...] [--require-signatures] [--json] [--state FILE] [--receipts FILE] [--log-key VKEY ...] [--witness VKEY ... [--witness-quorum K]]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if *server == "" || fs.NArg() > 0 || *maxKeyEvents < 1 {
		fs.Usage()
		return exitUsage
	}
	st, err := loadState(*statePath)
	if err != nil {
		fmt.Fprintln(stderr, "rpsverify:", err)
		return exitUsage
	}
	var receipts map[string][]apiclient.SignedHead
	if *receiptsPath != "" {
		rs, err := loadState(*receiptsPath)
		if err != nil {
			fmt.Fprintln(stderr, "rpsverify:", err)
			return exitUsage
		}
		receipts = rs.receiptsByLobby()
		if len(lobbies) == 0 {
			for id := range receipts {
				lobbies = append(lobbies, id)
			}
		}
	}
	c, err := newClient(*server)
	if err != nil {
		fmt.Fprintln(stderr, "rpsverify:", err)
		return exitNetwork
	}
	c.maxKeyEvents = *maxKeyEvents
	lc, err := newLogChecker(ctx, c, *server, logOptions{logKeys: logKeys, witnesses: witnesses, quorum: *quorum, maxLag: *maxLag})
	if err != nil {
		fmt.Fprintln(stderr, "rpsverify:", err)
		var nerr *networkError
		if errors.As(err, &nerr) {
			return exitNetwork
		}
		if errors.Is(err, translog.ErrRotationFork) {
			return exitFailed
		}
		return exitUsage
	}
	sigs := &signatures{c: c, require: *requireSignatures, requireAdmin: *requireAdminSignatures, logs: map[string]*keyLog{}, seen: map[replayKey]Failure{}}
	sigs.remember(st.QuickJoins)
	if lc != nil {
		sigs.origin = lc.origin
	}
	v := &verifier{c: c, keys: map[string]ed25519.PublicKey{}, rulesets: map[string]*engine.Ruleset{}, sigs: sigs}
	if !*quiet {
		v.progress = stderr
	}
	if len(lobbies) == 0 {
		if lobbies, err = c.lobbies(ctx); err != nil {
			fmt.Fprintln(stderr, "rpsverify:", err)
			return exitNetwork
		}
	}
	report := Report{Server: *server, OK: true, Lobbies: make([]LobbyResult, 0, len(lobbies))}
	checkpoints := make([]*Checkpoint, 0, len(lobbies))
	for _, id := range lobbies {
		res, cp, newest, err := v.verifyLobby(ctx, id, st.Lobbies[id], receipts[id])
		if errors.Is(err, errNotFound) {
			res.Failure = &Failure{Lobby: id, Item: "lobby", Expected: "a lobby", Found: "404"}
		} else if err != nil {
			fmt.Fprintln(stderr, "rpsverify:", err)
			return exitNetwork
		}
		report.Lobbies = append(report.Lobbies, res)
		checkpoints = append(checkpoints, cp)
		if newest != nil {
			st.addReceipt(*newest)
		}
	}
	for _, id := range accounts {
		if _, err := sigs.keyLog(ctx, id); err != nil {
			fmt.Fprintln(stderr, "rpsverify:", err)
			return exitNetwork
		}
	}
	report.Accounts = sigs.accounts()
	// The log last: its checkpoint, read after the events, covers what they showed.
	if lc != nil {
		results := make([]*LobbyResult, len(report.Lobbies))
		for i := range report.Lobbies {
			results[i] = &report.Lobbies[i]
		}
		keyLogs := make([]*AccountResult, len(report.Accounts))
		for i := range report.Accounts {
			keyLogs[i] = &report.Accounts[i]
		}
		rep, verified, err := lc.check(ctx, st.LogCheckpoint, results, keyLogs)
		if err != nil {
			fmt.Fprintln(stderr, "rpsverify:", err)
			return exitNetwork
		}
		report.Log = rep
		report.OK = report.OK && rep.OK
		if verified != nil {
			st.LogCheckpoint = string(verified)
		}
	}
	for i, res := range report.Lobbies {
		report.OK = report.OK && res.OK
		if res.OK {
			st.Lobbies[res.Lobby] = checkpoints[i]
		}
		if !*asJSON {
			printResult(stdout, res)
		}
	}
	for _, a := range report.Accounts {
		report.OK = report.OK && a.OK
	}
	if !*asJSON {
		printAccounts(stdout, report.Accounts)
	}
	if report.Log != nil && !*asJSON {
		printLog(stdout, report.Log, *statePath)
	}
	if *statePath != "" {
		st.QuickJoins = sigs.keptQuickJoins(time.Now())
		if err := st.save(*statePath); err != nil {
			fmt.Fprintln(stderr, "rpsverify:", err)
			return exitUsage
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(report)
	}
	if !report.OK {
		return exitFailed
	}
	return exitOK
}

func printResult(w io.Writer, r LobbyResult) {
	status := "ok"
	if !r.OK {
		status = "FAILED"
	}
	fmt.Fprintf(w, "lobby %s: %s: events %d..%d, %d games (%d finished, %d stopped, %d open)",
		r.Lobby, status, r.From+1, r.To, r.Games, r.Finished, r.Stopped, r.Open)
	if r.Receipts > 0 {
		fmt.Fprintf(w, ", %d receipts", r.Receipts)
	}
	if r.Log != nil {
		fmt.Fprintf(w, ", in the log up to event %d (leaf %d)", r.Log.Seq, r.Log.LeafIndex)
	}
	fmt.Fprintln(w)
	if r.Failure != nil {
		fmt.Fprintf(w, "  %s\n", r.Failure)
	}
	printSignatures(w, r.Signatures)
	if f := r.Fork; f != nil {
		fmt.Fprintf(w, "  FORK: the server signed two heads that cannot lie on one log\n")
		receipt, _ := json.Marshal(f.Receipt)
		current, _ := json.Marshal(f.Current)
		fmt.Fprintf(w, "  receipt: %s\n  current: %s\n", receipt, current)
		if f.CurrentHashAtSeq != "" {
			fmt.Fprintf(w, "  the current log has hash %s at seq %d, the receipt %s\n", f.CurrentHashAtSeq, f.Receipt.Seq, f.Receipt.Hash)
		} else {
			fmt.Fprintf(w, "  the current log ends before seq %d\n", f.Receipt.Seq)
		}
	}
}

// parseTime reads an instant as the API serves it, to Unix milliseconds.
func parseTime(s string) (int64, error) {
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		return 0, err
	}
	return t.UnixMilli(), nil
}
