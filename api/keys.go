package api

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/commitreveal/rps/store"
	"github.com/commitreveal/rps/tournament"
)

// keyRefresh is how often the server re-reads its current signing key, so that `rpsd key rotate`
// run elsewhere takes effect without a restart.
const keyRefresh = 5 * time.Second

// signer signs chain heads with the server's current key, read from the store (and created there
// on first use).
type signer struct {
	store    *store.Store
	mu       sync.Mutex
	key      store.SigningKey
	loadedAt time.Time
	// signed keeps the head last signed for each lobby: the followers of a lobby, woken by one
	// event, all show the head it made, which is signed once for them all (an Ed25519 signature
	// per response was a fifth of the long polls' CPU).
	signed map[tournament.LobbyID]signedHead
	// signing makes one signature of a head for all who ask for it at once.
	signing singleflight.Group
	// signatures counts the heads signed (for the tests).
	signatures atomic.Int64
}

// signedHead is a head as signed, and when.
type signedHead struct {
	head SignedHead
	seq  int64
	hash [32]byte
	at   time.Time
}

// Bounds of the signed heads kept: a head signed this long ago is signed again (its "at" says
// when it was signed), and at most this many lobbies' are kept.
const (
	signedHeadReuse = time.Second
	maxSignedHeads  = 4096
)

func (s *signer) current(ctx context.Context) (store.SigningKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key.ID != "" && time.Since(s.loadedAt) < keyRefresh {
		return s.key, nil
	}
	k, err := s.store.CurrentSigningKey(ctx)
	if err != nil {
		return store.SigningKey{}, fmt.Errorf("signing key: %w", err)
	}
	s.key, s.loadedAt = k, time.Now()
	return k, nil
}

// head signs the head of a lobby's log at seq with hash, or returns the signature made for the
// same head within signedHeadReuse under the current key. The followers woken by an event all ask
// for its head at once: one of them signs it, and the others wait for that signature (each signed
// one of its own before, when it found none kept yet).
func (s *signer) head(ctx context.Context, lobby tournament.LobbyID, seq int64, hash [32]byte) (SignedHead, error) {
	k, err := s.current(ctx)
	if err != nil {
		return SignedHead{}, err
	}
	if kept, ok := s.reusable(lobby, seq, hash, k.ID); ok {
		return kept, nil
	}
	signed, err, _ := s.signing.Do(string(lobby)+"/"+strconv.FormatInt(seq, 10)+"/"+string(hash[:]), func() (any, error) {
		// A head signed since this caller looked is as good.
		if kept, ok := s.reusable(lobby, seq, hash, k.ID); ok {
			return kept, nil
		}
		return s.sign(lobby, seq, hash, k)
	})
	if err != nil {
		return SignedHead{}, err
	}
	return signed.(SignedHead), nil
}

// reusable is the head kept for a lobby, if it is at seq with hash, signed by key keyID within
// signedHeadReuse.
func (s *signer) reusable(lobby tournament.LobbyID, seq int64, hash [32]byte, keyID string) (SignedHead, bool) {
	s.mu.Lock()
	kept, ok := s.signed[lobby]
	s.mu.Unlock()
	if ok && kept.seq == seq && kept.hash == hash && kept.head.KeyId == keyID && time.Since(kept.at) < signedHeadReuse {
		return kept.head, true
	}
	return SignedHead{}, false
}

// sign signs the head of a lobby's log at seq with hash now, with key k, and keeps it.
func (s *signer) sign(lobby tournament.LobbyID, seq int64, hash [32]byte, k store.SigningKey) (SignedHead, error) {
	s.signatures.Add(1)
	now := time.Now()
	h := tournament.Head{LobbyID: lobby, Seq: seq, Hash: hash, At: now.UnixMilli(), KeyID: k.ID}
	sig, err := h.Sign(k.Private)
	if err != nil {
		return SignedHead{}, err
	}
	signed := SignedHead{
		LobbyId: parseUUID(string(lobby)), Seq: seq, Hash: hex.EncodeToString(hash[:]),
		At: tournament.FormatTime(h.At), KeyId: k.ID, Signature: hex.EncodeToString(sig),
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.signed == nil {
		s.signed = make(map[tournament.LobbyID]signedHead)
	}
	if _, kept := s.signed[lobby]; !kept && len(s.signed) >= maxSignedHeads {
		for other := range s.signed { // an arbitrary one: map order is random
			delete(s.signed, other)
			break
		}
	}
	if old, kept := s.signed[lobby]; !kept || old.seq <= seq {
		s.signed[lobby] = signedHead{head: signed, seq: seq, hash: hash, at: now}
	}
	return signed, nil
}

// currentHead signs the last event a response shows (seen), or, when it shows none (a lobby view,
// an empty page), the lobby's head as stored now. Signing what was read costs no extra query on
// the hot paths (pages, long polls, streams), and any signed (seq, hash) of the chain is a receipt.
func (s *Server) currentHead(ctx context.Context, lobby tournament.LobbyID, seen *tournament.LoggedEvent) (SignedHead, error) {
	if seen != nil {
		return s.signer.head(ctx, lobby, seen.Seq, seen.Hash)
	}
	seq, hash, err := s.store.Head(ctx, lobby)
	if err != nil {
		return SignedHead{}, readErr(err, "lobby")
	}
	return s.signer.head(ctx, lobby, seq, hash)
}

func (h *handlers) ListSigningKeys(ctx context.Context, _ ListSigningKeysRequestObject) (ListSigningKeysResponseObject, error) {
	keys, err := h.s.store.SigningKeys(ctx)
	if err != nil {
		return nil, err
	}
	out := SigningKeyList{Keys: make([]SigningKey, 0, len(keys))}
	for _, k := range keys {
		v := SigningKey{KeyId: k.ID, PublicKey: hex.EncodeToString(k.Public), ValidFrom: millisToTime(k.CreatedAt)}
		if k.RetiredAt != 0 {
			until := millisToTime(k.RetiredAt)
			v.ValidUntil = &until
		}
		out.Keys = append(out.Keys, v)
	}
	return ListSigningKeys200JSONResponse(out), nil
}
