package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/commitreveal/rps/internal/apiclient"
)

// maxReceiptsPerLobby bounds the receipts kept per lobby: the oldest go first.
const maxReceiptsPerLobby = 16

// state is the --state file: where each lobby's verification may resume, and the signed heads
// seen (receipts), which `--receipts` checks against the logs later.
type state struct {
	Lobbies  map[string]*Checkpoint `json:"lobbies"`
	Receipts []apiclient.SignedHead `json:"receipts"`
	// LogCheckpoint is the transparency log's signed checkpoint verified last (a C2SP signed
	// note): the next run checks that the log's new checkpoint is consistent with it.
	LogCheckpoint string `json:"logCheckpoint,omitempty"`
	// QuickJoins are the quick joins of the last two days, for the next run's replay check.
	QuickJoins []SeenQuickJoin `json:"quickJoins,omitempty"`
}

func loadState(path string) (*state, error) {
	st := &state{Lobbies: map[string]*Checkpoint{}}
	if path == "" {
		return st, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	} else if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	if err := json.Unmarshal(data, st); err != nil {
		return nil, fmt.Errorf("state %s: %w", path, err)
	}
	if st.Lobbies == nil {
		st.Lobbies = map[string]*Checkpoint{}
	}
	return st, nil
}

// save writes the state atomically (a crash leaves the old file or the new one).
func (st *state) save(path string) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".rpsverify-state-*")
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	// After the rename there is nothing left to remove; before it, a failed write leaves no litter.
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	return os.Rename(tmp.Name(), path)
}

// addReceipt keeps a head, unless one with the same lobby and seq is kept already.
func (st *state) addReceipt(h apiclient.SignedHead) {
	n := 0
	for _, r := range st.Receipts {
		if r.LobbyId == h.LobbyId {
			if r.Seq == h.Seq && r.Hash == h.Hash {
				return
			}
			n++
		}
	}
	if n >= maxReceiptsPerLobby {
		for i, r := range st.Receipts {
			if r.LobbyId == h.LobbyId {
				st.Receipts = append(st.Receipts[:i], st.Receipts[i+1:]...)
				break
			}
		}
	}
	st.Receipts = append(st.Receipts, h)
}

func (st *state) receiptsByLobby() map[string][]apiclient.SignedHead {
	out := map[string][]apiclient.SignedHead{}
	for _, r := range st.Receipts {
		out[r.LobbyId.String()] = append(out[r.LobbyId.String()], r)
	}
	return out
}
