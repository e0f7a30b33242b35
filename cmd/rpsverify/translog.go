package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/commitreveal/rps/internal/apiclient"
	"github.com/commitreveal/rps/translog"
)

// This file checks the transparency log (README: "The transparency log") with the ecosystem's
// libraries: the checkpoint's signature by the log's key and the witness policy, its consistency
// with the checkpoint saved last time (from the tiles), and the inclusion of every lobby's
// latest event. A checkpoint that is not consistent with the saved one is proof that the
// operator showed two histories: rpsverify prints both and the failing proof, as Go's checksum
// database client does.

// logOptions are the flags about the log.
type logOptions struct {
	// logKeys are the trusted verifier keys of the log (none: those GET /v1/log lists).
	logKeys []string
	// witnesses are the trusted witnesses' verifier keys; quorum how many must have cosigned.
	witnesses []string
	quorum    int
	// maxLag is how old an event may be and still be missing from the checkpoint.
	maxLag time.Duration
}

// LogReport is what --json prints about the log.
type LogReport struct {
	Origin    string   `json:"origin"`
	Size      int64    `json:"size"`
	Root      string   `json:"root"`
	Cosigners []string `json:"cosigners"`
	// Consistent is set when a saved checkpoint was checked against this one.
	ConsistentWith *int64       `json:"consistentWith,omitempty"`
	OK             bool         `json:"ok"`
	Failure        string       `json:"failure,omitempty"`
	Misbehavior    *Misbehavior `json:"misbehavior,omitempty"`
}

// Misbehavior is the proof that the log forked: two checkpoints validly signed by the log that
// cannot both be true, and the consistency proof that fails between them.
type Misbehavior struct {
	Reason string   `json:"reason"`
	Old    string   `json:"old"`
	New    string   `json:"new"`
	Proof  []string `json:"proof,omitempty"`
}

// LobbyLog is where the log holds a lobby's latest event.
type LobbyLog struct {
	Seq       int64 `json:"seq"`
	LeafIndex int64 `json:"leafIndex"`
	TreeSize  int64 `json:"treeSize"`
}

// loggedEvent is a verified event and its leaf (-1: the page gave none).
type loggedEvent struct {
	seq, leaf, at int64
	hash          string
}

// logChecker checks one server's log.
type logChecker struct {
	opts      logOptions
	origin    string
	logPolicy torchwood.Policy
	policy    torchwood.Policy
	witnesses []*torchwood.CosignatureVerifier
	tiles     *torchwood.TileFetcher
	client    *torchwood.Client
}

// newLogChecker reads GET /v1/log and builds the policy; nil when the server keeps no log.
func newLogChecker(ctx context.Context, c *client, server string, opts logOptions) (*logChecker, error) {
	info, err := get[apiclient.LogInfo](ctx, c, "log", func(ctx context.Context) (*http.Response, error) {
		return c.api.GetLog(ctx)
	})
	if errors.Is(err, errNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	lc := &logChecker{opts: opts, origin: info.Origin}
	keys := opts.logKeys
	if len(keys) == 0 {
		for _, k := range info.VerifierKeys {
			keys = append(keys, k.VerifierKey)
		}
	} else {
		// Keys given are followed through the log's key rotations, each signed by a key trusted
		// already (README: "Key rotation"), and through nothing else.
		var rotations [][]byte
		for _, k := range info.VerifierKeys {
			if k.Rotation != nil {
				rotations = append(rotations, []byte(*k.Rotation))
			}
		}
		if keys, err = translog.FollowRotations(info.Origin, keys, rotations); err != nil {
			// A trusted key that handed the log over twice: the two statements are the evidence.
			return nil, err
		}
	}
	var logPolicies []torchwood.Policy
	for _, k := range keys {
		v, err := note.NewVerifier(k)
		if err != nil {
			return nil, fmt.Errorf("log key %q: %w", k, err)
		}
		if v.Name() != info.Origin {
			return nil, fmt.Errorf("log key %q names %q, the log's origin is %q", k, v.Name(), info.Origin)
		}
		logPolicies = append(logPolicies, torchwood.SingleVerifierPolicy(v))
	}
	if len(logPolicies) == 0 {
		return nil, fmt.Errorf("the log lists no verifier key")
	}
	lc.logPolicy = torchwood.ThresholdPolicy(2, torchwood.OriginPolicy(info.Origin), torchwood.ThresholdPolicy(1, logPolicies...))
	lc.policy = lc.logPolicy
	if len(opts.witnesses) > 0 {
		var wp []torchwood.Policy
		for _, k := range opts.witnesses {
			v, err := torchwood.NewCosignatureVerifier(k)
			if err != nil {
				return nil, fmt.Errorf("witness key %q: %w", k, err)
			}
			lc.witnesses = append(lc.witnesses, v)
			wp = append(wp, torchwood.SingleVerifierPolicy(v))
		}
		quorum := opts.quorum
		if quorum <= 0 || quorum > len(wp) {
			quorum = len(wp)
		}
		lc.policy = torchwood.ThresholdPolicy(2, lc.logPolicy, torchwood.ThresholdPolicy(quorum, wp...))
	}
	httpClient := &http.Client{Timeout: 60 * time.Second}
	if lc.tiles, err = torchwood.NewTileFetcher(strings.TrimSuffix(server, "/")+info.Tiles, torchwood.WithHTTPClient(httpClient),
		torchwood.WithUserAgent("rpsverify"), torchwood.WithConcurrencyLimit(4)); err != nil {
		return nil, err
	}
	if lc.client, err = torchwood.NewClient(lc.tiles); err != nil {
		return nil, err
	}
	return lc, nil
}

// check verifies the current checkpoint against the policy and against saved (the checkpoint
// saved last time, "" for none), and the inclusion of each lobby's latest logged event and each
// account's latest logged key event. It
// returns the report and the checkpoint to save (nil when it must not be saved).
func (lc *logChecker) check(ctx context.Context, saved string, lobbies []*LobbyResult, accounts []*AccountResult) (*LogReport, []byte, error) {
	signed, err := lc.tiles.ReadEndpoint(ctx, "checkpoint")
	if err != nil {
		return nil, nil, &networkError{fmt.Errorf("checkpoint: %w", err)}
	}
	rep := &LogReport{Origin: lc.origin, OK: true}
	// The log's own signature first: a checkpoint it signed is evidence even without the
	// witnesses.
	c, _, err := torchwood.VerifyCheckpoint(signed, lc.logPolicy)
	if err != nil {
		rep.OK, rep.Failure = false, fmt.Sprintf("the checkpoint is not signed by the log's key: %v", err)
		return rep, nil, nil
	}
	rep.Size, rep.Root = c.N, c.Hash.String()
	if _, n, err := torchwood.VerifyCheckpoint(signed, lc.policy); err != nil {
		rep.OK, rep.Failure = false, fmt.Sprintf("the checkpoint does not satisfy the witness policy: %v", err)
	} else {
		// The cosigners the policy knows and whose cosignatures verified.
		for _, s := range n.Sigs {
			if s.Name != lc.origin {
				rep.Cosigners = append(rep.Cosigners, s.Name)
			}
		}
	}
	if saved != "" {
		if m := lc.consistent(ctx, []byte(saved), signed, c); m != nil {
			rep.OK, rep.Misbehavior = false, m
			return rep, nil, nil
		}
		old, _, _ := torchwood.VerifyCheckpoint([]byte(saved), lc.logPolicy)
		rep.ConsistentWith = &old.N
	}
	for _, res := range lobbies {
		log, f := lc.included(ctx, c, res.logged, translog.Leaf{Lobby: res.Lobby})
		if f != nil {
			f.Lobby = res.Lobby
		}
		settle(log, f, &res.Log, &res.Failure, &res.OK)
	}
	for _, res := range accounts {
		log, f := lc.included(ctx, c, res.logged, translog.Leaf{Account: res.Account})
		if f != nil {
			f.Account = res.Account
		}
		settle(log, f, &res.Log, &res.Failure, &res.OK)
	}
	if !rep.OK {
		return rep, nil, nil
	}
	return rep, signed, nil
}

// consistent checks that the saved checkpoint's tree is a prefix of c's, with a consistency
// proof computed from c's tiles (each checked against c's root on the way); nil when it is.
func (lc *logChecker) consistent(ctx context.Context, saved, signed []byte, c torchwood.Checkpoint) *Misbehavior {
	old, _, err := torchwood.VerifyCheckpoint(saved, lc.logPolicy)
	m := &Misbehavior{Old: string(saved), New: string(signed)}
	switch {
	case err != nil:
		// A saved checkpoint the log's keys no longer verify proves nothing; say so.
		m.Reason = fmt.Sprintf("the saved checkpoint does not verify with the log's keys: %v", err)
		return m
	case old.N > c.N:
		m.Reason = fmt.Sprintf("the log shrank from %d to %d leaves", old.N, c.N)
		return m
	case old.N == c.N && old.Hash != c.Hash:
		m.Reason = fmt.Sprintf("two trees of %d leaves with different roots", c.N)
		return m
	case old.N == c.N || old.N == 0:
		return nil
	}
	proof, err := tlog.ProveTree(c.N, old.N, torchwood.TileHashReaderWithContext(ctx, c.Tree, lc.tiles))
	if err != nil {
		m.Reason = fmt.Sprintf("no consistency proof from %d to %d can be had from the log's tiles: %v", old.N, c.N, err)
		return m
	}
	if err := tlog.CheckTree(proof, c.N, c.Hash, old.N, old.Hash); err != nil {
		m.Reason = fmt.Sprintf("the consistency proof from %d to %d fails: %v", old.N, c.N, err)
		for _, h := range proof {
			m.Proof = append(m.Proof, h.String())
		}
		return m
	}
	return nil
}

// included checks that the log holds the newest of a chain's events (a lobby's log or an
// account's key log: chain's Lobby or Account) the checkpoint covers, entry and inclusion proof
// (torchwood's client checks the proof against the tree), and that no event older than the
// allowed lag is missing from it. A failure names the event by its seq only.
func (lc *logChecker) included(ctx context.Context, c torchwood.Checkpoint, logged []loggedEvent, chain translog.Leaf) (*LobbyLog, *Failure) {
	var newest *loggedEvent
	for i := range logged {
		e := &logged[i]
		if e.leaf >= 0 && e.leaf < c.N {
			newest = e
			continue
		}
		if age := time.Since(time.UnixMilli(e.at)); age > lc.opts.maxLag {
			return nil, &Failure{Seq: e.seq, Item: "transparency log",
				Expected: fmt.Sprintf("the event in the checkpoint of %d leaves (it is %s old)", c.N, age.Round(time.Second)), Found: "not there"}
		}
	}
	if newest == nil {
		return nil, nil
	}
	leaf := chain
	leaf.Seq = newest.seq
	// The hash was checked against the chain, as lower-case hex, when the event was verified.
	hash, _ := hex.DecodeString(newest.hash)
	copy(leaf.Hash[:], hash)
	got, _, err := lc.client.Entry(ctx, c.Tree, newest.leaf)
	if want := leaf.Entry(); err != nil || string(got) != string(want) {
		return nil, &Failure{Seq: newest.seq, Item: fmt.Sprintf("leaf %d of the transparency log", newest.leaf),
			Expected: strings.TrimSpace(string(want)), Found: foundEntry(got, err)}
	}
	return &LobbyLog{Seq: newest.seq, LeafIndex: newest.leaf, TreeSize: c.N}, nil
}

// settle keeps where the log holds a chain, or its failure unless it failed before.
func settle(log *LobbyLog, f *Failure, where **LobbyLog, failure **Failure, ok *bool) {
	switch {
	case f == nil:
		*where = log
	case *failure == nil:
		*ok, *failure = false, f
	}
}

func foundEntry(entry []byte, err error) string {
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(string(entry))
}

// printLog prints the log's report; a misbehavior as Go's checksum database client does.
func printLog(w io.Writer, r *LogReport, statePath string) {
	if m := r.Misbehavior; m != nil {
		fmt.Fprintf(w, "SECURITY ERROR\ntransparency log %s: misbehavior detected!\n%s\n\n", r.Origin, m.Reason)
		fmt.Fprintf(w, "saved checkpoint (%s):\n%s\nnew checkpoint:\n%s\n", statePath, indent(m.Old), indent(m.New))
		if len(m.Proof) > 0 {
			fmt.Fprintf(w, "proof of misbehavior (the consistency proof that fails):\n%s\n", indent(strings.Join(m.Proof, "\n")))
		}
		return
	}
	status := "ok"
	if !r.OK {
		status = "FAILED"
	}
	fmt.Fprintf(w, "log %s: %s: checkpoint of %d leaves, root %s", r.Origin, status, r.Size, r.Root)
	if len(r.Cosigners) > 0 {
		fmt.Fprintf(w, ", cosigned by %s", strings.Join(r.Cosigners, ", "))
	}
	if r.ConsistentWith != nil {
		fmt.Fprintf(w, ", consistent with the saved checkpoint of %d", *r.ConsistentWith)
	}
	fmt.Fprintln(w)
	if r.Failure != "" {
		fmt.Fprintf(w, "  %s\n", r.Failure)
	}
}

func indent(s string) string {
	return "\t" + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n\t")
}
