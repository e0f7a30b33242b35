// Package translog is the deployment's transparency log: one RFC 6962 Merkle tree over every event
// of every lobby, in the formats of the transparency-log ecosystem (C2SP tlog-checkpoint,
// signed-note, tlog-tiles, tlog-witness, tlog-cosignature, tlog-proof), so that any of its tools
// can audit the operator. It is pure: leaves, tiles, tree growth, checkpoints, cosignatures and
// proofs are computed here from values passed in; storing them (package store), running the
// integration and talking to witnesses (package logpublish) happen elsewhere.
//
// Each event is a leaf. A leaf is the text line
//
//	event <lobbyId> <seq> <hash>
//
// (the lobby's UUID, the event's decimal sequence number and its chain hash in lower-case hex),
// so its inclusion vouches for the event and, through the lobby's hash chain, for every event of
// the lobby before it. An account's key events (its key log, a hash chain of its own) are leaves
// too, as
//
//	key <accountId> <seq> <hash>
//
// so that every key an account ever had, and who added it, is in the one log everyone sees.
package translog

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

// Leaf is one event as the log records it: its chain (a lobby's events, or an account's key
// events when Account is set), its place in the chain and the chain's hash there.
type Leaf struct {
	Lobby string
	// Account, when set, makes the leaf the account's key event (Lobby is then empty).
	Account string
	Seq     int64
	Hash    [32]byte
}

// The prefixes that start a leaf's entry, and name its kind.
const (
	entryPrefix    = "event "
	keyEntryPrefix = "key "
)

// Chain names the leaf's hash chain as its entry does: "event <lobby>" or "key <account>".
func (l Leaf) Chain() string {
	if l.Account != "" {
		return keyEntryPrefix + l.Account
	}
	return entryPrefix + l.Lobby
}

// Entry is the leaf's bytes in the log (a C2SP tlog-tiles entry): "event <lobby> <seq> <hash>\n"
// or "key <account> <seq> <hash>\n".
func (l Leaf) Entry() []byte {
	return []byte(l.Chain() + " " + strconv.FormatInt(l.Seq, 10) + " " + hex.EncodeToString(l.Hash[:]) + "\n")
}

// RecordHash is the leaf's hash in the Merkle tree (RFC 6962: SHA-256 of 0x00 and the entry).
func (l Leaf) RecordHash() tlog.Hash { return tlog.RecordHash(l.Entry()) }

// ParseEntry reads a leaf's entry back; it accepts exactly what Entry writes.
func ParseEntry(entry []byte) (Leaf, error) {
	text, ok := strings.CutSuffix(string(entry), "\n")
	rest, isEvent := strings.CutPrefix(text, entryPrefix)
	rest, isKey := strings.CutPrefix(rest, keyEntryPrefix)
	fields := strings.Split(rest, " ")
	if !ok || isEvent == isKey || len(fields) != 3 {
		return Leaf{}, fmt.Errorf("malformed log entry %q", entry)
	}
	var l Leaf
	seq, err := strconv.ParseInt(fields[1], 10, 64)
	hash, herr := hex.DecodeString(fields[2])
	if err != nil || seq < 1 || strconv.FormatInt(seq, 10) != fields[1] || herr != nil || len(hash) != 32 ||
		hex.EncodeToString(hash) != fields[2] || !validLobby(fields[0]) {
		return Leaf{}, fmt.Errorf("malformed log entry %q", entry)
	}
	if isKey {
		l.Account = fields[0]
	} else {
		l.Lobby = fields[0]
	}
	l.Seq = seq
	copy(l.Hash[:], hash)
	return l, nil
}

// validLobby accepts a lobby or account id as the API writes it: a UUID in lower-case hex with dashes.
func validLobby(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}
