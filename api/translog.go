package api

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
	"github.com/commitreveal/rps/translog"
)

// This file serves the transparency log's JSON side: the log's description, inclusion and
// consistency proofs, and the log fields of lobby views and event pages. The C2SP resources
// (checkpoint, tiles) are in logtiles.go.

// WitnessConfig is a witness the log asks to cosign, as GET /v1/log lists it.
type WitnessConfig struct {
	Name, VerifierKey, URL string
}

// errNotLogged answers for what no published checkpoint holds yet.
func errNotLogged(detail string) *problemError {
	return &problemError{status: http.StatusConflict, code: ProblemCodeNotLogged, detail: detail, retryAfter: 1}
}

var errNoLog = newProblem(http.StatusNotFound, ProblemCodeNotFound, "this server keeps no transparency log")

// publishedCheckpoint is the newest published checkpoint.
func (s *Server) publishedCheckpoint(ctx context.Context) (store.LogCheckpoint, error) {
	c, err := s.store.PublishedCheckpoint(ctx)
	if errors.Is(err, tournament.ErrNotFound) {
		return c, errNoLog
	}
	return c, err
}

// logHashes serves the stored tiles of the tree of checkpoint c, each checked against its root.
func (s *Server) logHashes(ctx context.Context, c store.LogCheckpoint) tlog.HashReader {
	return s.store.LogHashes(ctx, tlog.Tree{N: c.Size, Hash: c.Root})
}

func base64Hashes[T ~[]tlog.Hash](hashes T) []LogHash {
	out := make([]LogHash, len(hashes))
	for i, h := range hashes {
		out[i] = h.String()
	}
	return out
}

// logProof proves a lobby's event at leaf index in checkpoint c. hash is the event's chain hash
// (nil: read it).
func (s *Server) logProof(ctx context.Context, c store.LogCheckpoint, lobby tournament.LobbyID, seq, index int64, hash *[32]byte) (LogProof, error) {
	leaf := translog.Leaf{Lobby: string(lobby), Seq: seq}
	if hash != nil {
		leaf.Hash = *hash
	} else {
		h, err := s.store.EventHash(ctx, lobby, seq)
		if err != nil {
			return LogProof{}, readErr(err, "event")
		}
		leaf.Hash = h
	}
	return s.leafProof(ctx, c, leaf, index)
}

// leafProof proves leaf (a lobby's event or an account's key event) at leaf index in checkpoint c.
func (s *Server) leafProof(ctx context.Context, c store.LogCheckpoint, leaf translog.Leaf, index int64) (LogProof, error) {
	proof, err := tlog.ProveRecord(c.Size, index, s.logHashes(ctx, c))
	if err != nil {
		return LogProof{}, fmt.Errorf("prove leaf %d in the tree of %d: %w", index, c.Size, err)
	}
	if err := tlog.CheckRecord(proof, c.Size, c.Root, index, leaf.RecordHash()); err != nil {
		// The event as stored is not the event as logged: the events were changed after.
		return LogProof{}, fmt.Errorf("%s event %d is not the event logged at leaf %d: %w", leaf.Chain(), leaf.Seq, index, err)
	}
	signed := c.Signed()
	p := LogProof{
		Seq: leaf.Seq, Hash: hex.EncodeToString(leaf.Hash[:]), LeafIndex: index,
		TreeSize: c.Size, Proof: base64Hashes(proof), Checkpoint: string(signed),
		Receipt: string(translog.Receipt(leaf, index, proof, signed)),
	}
	if leaf.Account != "" {
		id := parseUUID(leaf.Account)
		p.AccountId = &id
	} else {
		id := parseUUID(leaf.Lobby)
		p.LobbyId = &id
	}
	return p, nil
}

// eventProof proves event seq of a lobby in the latest published checkpoint, or says why not.
func (s *Server) eventProof(ctx context.Context, lobby tournament.LobbyID, seq int64, hash *[32]byte) (LogProof, error) {
	c, err := s.publishedCheckpoint(ctx)
	if err != nil {
		return LogProof{}, err
	}
	ranges, err := s.store.LogRanges(ctx, lobby, seq, seq)
	if err != nil {
		return LogProof{}, err
	}
	index, ok := store.LeafOf(ranges, seq)
	if !ok || index >= c.Size {
		if hash == nil {
			if _, err := s.store.EventHash(ctx, lobby, seq); err != nil {
				return LogProof{}, readErr(err, "event")
			}
		}
		return LogProof{}, errNotLogged(fmt.Sprintf("event %d of lobby %s is not in the latest published checkpoint (size %d) yet", seq, lobby, c.Size))
	}
	return s.logProof(ctx, c, lobby, seq, index, hash)
}

func (h *handlers) GetInclusionProof(ctx context.Context, req GetInclusionProofRequestObject) (GetInclusionProofResponseObject, error) {
	var p LogProof
	var err error
	switch lobby, account := req.Params.LobbyId, req.Params.AccountId; {
	case (lobby == nil) == (account == nil):
		return nil, validationProblem("lobbyId", "name the event by lobbyId (a lobby's event) or by accountId (an account's key event), not both")
	case account != nil:
		p, err = h.s.keyEventProof(ctx, tournament.AccountID(account.String()), req.Params.Seq)
	default:
		p, err = h.s.eventProof(ctx, tournament.LobbyID(lobby.String()), req.Params.Seq, nil)
	}
	if err != nil {
		return nil, err
	}
	return GetInclusionProof200JSONResponse(p), nil
}

func (h *handlers) GetConsistencyProof(ctx context.Context, req GetConsistencyProofRequestObject) (GetConsistencyProofResponseObject, error) {
	c, err := h.s.publishedCheckpoint(ctx)
	if err != nil {
		return nil, err
	}
	to := c.Size
	if req.Params.To != nil {
		to = *req.Params.To
	}
	switch {
	case to > c.Size:
		return nil, errNotLogged(fmt.Sprintf("the latest published checkpoint has size %d, not %d", c.Size, to))
	case req.Params.From > to:
		return nil, validationProblem("from", fmt.Sprintf("must not be above to (%d)", to))
	}
	hashes := h.s.logHashes(ctx, c)
	fromRoot, err := tlog.TreeHash(req.Params.From, hashes)
	if err != nil {
		return nil, fmt.Errorf("tree hash of %d: %w", req.Params.From, err)
	}
	toRoot, err := tlog.TreeHash(to, hashes)
	if err != nil {
		return nil, fmt.Errorf("tree hash of %d: %w", to, err)
	}
	var proof tlog.TreeProof
	if req.Params.From > 0 && req.Params.From < to {
		if proof, err = tlog.ProveTree(to, req.Params.From, hashes); err != nil {
			return nil, fmt.Errorf("consistency proof %d -> %d: %w", req.Params.From, to, err)
		}
	}
	return GetConsistencyProof200JSONResponse(ConsistencyProof{
		From: req.Params.From, To: to, FromRoot: fromRoot.String(), ToRoot: toRoot.String(),
		Proof: base64Hashes(proof), Checkpoint: string(c.Signed()),
	}), nil
}

func (h *handlers) GetLog(ctx context.Context, _ GetLogRequestObject) (GetLogResponseObject, error) {
	st, err := h.s.store.LogState(ctx)
	if errors.Is(err, tournament.ErrNotFound) {
		return nil, errNoLog
	}
	if err != nil {
		return nil, err
	}
	c, err := h.s.publishedCheckpoint(ctx)
	if err != nil {
		return nil, err
	}
	keys, err := h.s.store.SigningKeys(ctx)
	if err != nil {
		return nil, err
	}
	out := LogInfo{Origin: st.Origin, Checkpoint: string(c.Signed()), TreeSize: c.Size, Tiles: logPrefix,
		VerifierKeys: make([]LogKey, 0, len(keys)), Witnesses: make([]LogWitness, 0, len(h.s.witnesses))}
	for _, k := range keys {
		vkey, err := translog.VerifierKey(st.Origin, k.Public)
		if err != nil {
			return nil, err
		}
		key := LogKey{KeyId: k.ID, VerifierKey: vkey, ValidFrom: millisToTime(k.CreatedAt), ValidUntil: optionalTime(k.RetiredAt)}
		if k.Rotation != nil {
			rotation := string(k.Rotation)
			key.Rotation = &rotation
		}
		out.VerifierKeys = append(out.VerifierKeys, key)
	}
	for _, w := range h.s.witnesses {
		out.Witnesses = append(out.Witnesses, LogWitness{Name: w.Name, VerifierKey: w.VerifierKey, Url: w.URL})
	}
	return GetLog200JSONResponse(out), nil
}

// lobbyLog fills a lobby view's log fields: its newest logged event and, when asked, the proof
// of its newest event in the published checkpoint.
func (s *Server) lobbyLog(ctx context.Context, view *Lobby, logged translog.Head, withProof bool) error {
	if logged.Seq > 0 {
		view.Log = &LogPosition{Seq: logged.Seq, LeafIndex: logged.LeafIndex}
	}
	if !withProof || logged.Seq == 0 {
		return nil
	}
	c, err := s.publishedCheckpoint(ctx)
	if err != nil {
		return err
	}
	lobby := tournament.LobbyID(view.Id.String())
	published, ok, err := s.store.LoggedBefore(ctx, lobby, c.Size)
	if err != nil || !ok {
		return err
	}
	p, err := s.logProof(ctx, c, lobby, published.Seq, published.LeafIndex, nil)
	if err != nil {
		return err
	}
	view.LogProof = &p
	return nil
}

// pageLog fills an events page's log fields: each event's leaf, when the page was read without
// waiting (a page handed to a waiting follower is newer than the log), and, when asked, the proof
// of the page's last event if it is published.
func (s *Server) pageLog(ctx context.Context, lobby tournament.LobbyID, page *EventPage, events []tournament.LoggedEvent, waited, withProof bool) error {
	if len(events) == 0 || (waited && !withProof) {
		return nil
	}
	first, last := events[0], events[len(events)-1]
	ranges, err := s.store.LogRanges(ctx, lobby, first.Seq, last.Seq)
	if err != nil || len(ranges) == 0 {
		return err
	}
	if !waited {
		for i := range page.Events {
			setLeaf(&page.Events[i], ranges)
		}
	}
	index, ok := store.LeafOf(ranges, last.Seq)
	if !withProof || !ok {
		return nil
	}
	c, err := s.publishedCheckpoint(ctx)
	if err != nil || index >= c.Size {
		return err
	}
	p, err := s.logProof(ctx, c, lobby, last.Seq, index, &last.Hash)
	if err != nil {
		return err
	}
	page.LogProof = &p
	return nil
}
