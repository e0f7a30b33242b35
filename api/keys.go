package api

import (
	"context"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

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
}

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

// head signs the head of a lobby's log at seq with hash.
func (s *signer) head(ctx context.Context, lobby tournament.LobbyID, seq int64, hash [32]byte) (SignedHead, error) {
	k, err := s.current(ctx)
	if err != nil {
		return SignedHead{}, err
	}
	h := tournament.Head{LobbyID: lobby, Seq: seq, Hash: hash, At: time.Now().UnixMilli(), KeyID: k.ID}
	sig, err := h.Sign(k.Private)
	if err != nil {
		return SignedHead{}, err
	}
	return SignedHead{
		LobbyId: parseUUID(string(lobby)), Seq: seq, Hash: hex.EncodeToString(hash[:]),
		At: tournament.FormatTime(h.At), KeyId: k.ID, Signature: hex.EncodeToString(sig),
	}, nil
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
