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
// the lobby before it.
package translog

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

// Leaf is one event as the log records it: its lobby, its place in the lobby's chain and the
// chain's hash there.
type Leaf struct {
	Lobby string
	Seq   int64
	Hash  [32]byte
}

// entryPrefix starts every leaf's entry, and names its kind.
const entryPrefix = "event "

// Entry is the leaf's bytes in the log (a C2SP tlog-tiles entry): "event <lobby> <seq> <hash>\n".
func (l Leaf) Entry() []byte {
	return []byte(entryPrefix + l.Lobby + " " + strconv.FormatInt(l.Seq, 10) + " " + hex.EncodeToString(l.Hash[:]) + "\n")
}

// RecordHash is the leaf's hash in the Merkle tree (RFC 6962: SHA-256 of 0x00 and the entry).
func (l Leaf) RecordHash() tlog.Hash { return tlog.RecordHash(l.Entry()) }

// ParseEntry reads a leaf's entry back; it accepts exactly what Entry writes.
func ParseEntry(entry []byte) (Leaf, error) {
	text, ok := strings.CutSuffix(string(entry), "\n")
	fields := strings.Split(strings.TrimPrefix(text, entryPrefix), " ")
	if !ok || !strings.HasPrefix(text, entryPrefix) || len(fields) != 3 {
		return Leaf{}, fmt.Errorf("malformed log entry %q", entry)
	}
	var l Leaf
	seq, err := strconv.ParseInt(fields[1], 10, 64)
	hash, herr := hex.DecodeString(fields[2])
	if err != nil || seq < 1 || strconv.FormatInt(seq, 10) != fields[1] || herr != nil || len(hash) != 32 ||
		hex.EncodeToString(hash) != fields[2] || !validLobby(fields[0]) {
		return Leaf{}, fmt.Errorf("malformed log entry %q", entry)
	}
	l.Lobby, l.Seq = fields[0], seq
	copy(l.Hash[:], hash)
	return l, nil
}

// validLobby accepts a lobby id as the API writes it: a UUID in lower-case hex with dashes.
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
