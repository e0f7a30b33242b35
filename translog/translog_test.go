package translog

import (
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"testing"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// memoryHashes is the reference: every stored hash, kept by x/mod's own bookkeeping.
type memoryHashes []tlog.Hash

func (m memoryHashes) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		out[i] = m[x]
	}
	return out, nil
}

func record(i int) tlog.Hash { return tlog.RecordHash([]byte(fmt.Sprint("record ", i))) }

// TestAppendMatchesTheReference grows a tree in uneven batches across several tile levels,
// keeping only what Append returns as the stored tiles, and checks every tree hash and every
// tile against x/mod's reference computation.
func TestAppendMatchesTheReference(t *testing.T) {
	var ref memoryHashes
	stored := map[TileKey][]byte{}
	size := int64(0)
	rng := rand.New(rand.NewPCG(1, 2))
	for size < 70_000 {
		n := 1 + rng.IntN(3000)
		if rng.IntN(4) == 0 {
			n = 1 + rng.IntN(3)
		}
		records := make([]tlog.Hash, n)
		for i := range records {
			records[i] = record(int(size) + i)
			hashes, err := tlog.StoredHashesForRecordHash(size+int64(i), records[i], ref)
			if err != nil {
				t.Fatal(err)
			}
			ref = append(ref, hashes...)
		}
		var edge []Tile
		for _, key := range EdgeTiles(size) {
			edge = append(edge, Tile{TileKey: key, Hashes: stored[key]})
		}
		g, err := Append(size, edge, records)
		if err != nil {
			t.Fatalf("append %d to %d: %v", n, size, err)
		}
		for _, tile := range g.Tiles {
			stored[tile.TileKey] = tile.Hashes
		}
		size += int64(n)
		want, err := tlog.TreeHash(size, ref)
		if err != nil {
			t.Fatal(err)
		}
		if g.Tree != (tlog.Tree{N: size, Hash: want}) {
			t.Fatalf("size %d: tree %v, want %v", size, g.Tree, want)
		}
	}
	for _, tile := range tlog.NewTiles(TileHeight, 0, size) {
		want, err := tlog.ReadTileData(tile, ref)
		if err != nil {
			t.Fatal(err)
		}
		got := stored[TileKey{Level: tile.L, N: tile.N}]
		if string(got[:min(len(got), len(want))]) != string(want) || len(got) < len(want) {
			t.Fatalf("tile %s differs from the reference", tile.Path())
		}
	}
	// Proofs from the stored tiles, authenticated against the tree, check out.
	tree := tlog.Tree{N: size, Hash: mustTreeHash(t, size, ref)}
	hr := tlog.TileHashReader(tree, TileReader{Read: func(keys []TileKey) (map[TileKey][]byte, error) { return stored, nil }})
	for _, i := range []int64{0, 255, 256, 65535, 65536, size - 1} {
		p, err := tlog.ProveRecord(size, i, hr)
		if err != nil {
			t.Fatal(err)
		}
		if err := tlog.CheckRecord(p, size, tree.Hash, i, record(int(i))); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	for _, old := range []int64{1, 256, 257, 65536, size - 1} {
		p, err := tlog.ProveTree(size, old, hr)
		if err != nil {
			t.Fatal(err)
		}
		if err := tlog.CheckTree(p, size, tree.Hash, old, mustTreeHash(t, old, ref)); err != nil {
			t.Fatalf("consistency from %d: %v", old, err)
		}
	}
}

func mustTreeHash(t *testing.T, n int64, r tlog.HashReader) tlog.Hash {
	t.Helper()
	h, err := tlog.TreeHash(n, r)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestAppendRefusesAMissingEdge(t *testing.T) {
	if _, err := Append(300, nil, []tlog.Hash{record(0)}); err == nil {
		t.Fatal("appended to a tree of 300 without its edge tiles")
	}
	short := []Tile{{TileKey: TileKey{Level: 0, N: 1}, Hashes: make([]byte, 32)}, {TileKey: TileKey{Level: 1, N: 0}, Hashes: make([]byte, 32)}}
	if _, err := Append(300, short, []tlog.Hash{record(0)}); err == nil {
		t.Fatal("appended to a tree of 300 with a short edge tile")
	}
}

const lobbyA, lobbyB = "0b6f0a34-5f7e-4a43-9a0e-5d8c1b0f4c11", "7d2c3b5e-1a0f-4c7b-8e52-0f3d9a6b2e44"

func pending(lobby string, seqs ...int64) []Pending {
	var out []Pending
	for _, s := range seqs {
		out = append(out, Pending{Leaf: Leaf{Lobby: lobby, Seq: s, Hash: sha256.Sum256([]byte(fmt.Sprint(lobby, s)))}})
	}
	return out
}

func TestSequenceKeepsEachLobbysChainOrder(t *testing.T) {
	events := append(pending(lobbyB, 5, 3, 4, 7), pending(lobbyA, 2, 1, 3)...)
	b := Sequence(10, map[string]int64{"event " + lobbyB: 3}, events)
	var got []string
	for _, l := range b.Leaves {
		got = append(got, fmt.Sprint(l.Lobby[:1], l.Seq))
	}
	if fmt.Sprint(got) != "[01 02 03 74 75]" || !b.HeldBack {
		t.Fatalf("leaves %v, held back %v", got, b.HeldBack)
	}
	want := []Range{{FirstIndex: 10, Lobby: lobbyA, FirstSeq: 1, Count: 3}, {FirstIndex: 13, Lobby: lobbyB, FirstSeq: 4, Count: 2}}
	if fmt.Sprint(b.Ranges) != fmt.Sprint(want) {
		t.Fatalf("ranges %v, want %v", b.Ranges, want)
	}
	heads := []Head{{Lobby: lobbyA, Seq: 3, LeafIndex: 12}, {Lobby: lobbyB, Seq: 5, LeafIndex: 14}}
	if fmt.Sprint(b.Heads) != fmt.Sprint(heads) {
		t.Fatalf("heads %v, want %v", b.Heads, heads)
	}
	if b := Sequence(0, nil, pending(lobbyA, 2)); len(b.Leaves) != 0 || !b.HeldBack || len(b.Heads) != 0 {
		t.Fatalf("a lobby whose first event is missing: %+v", b)
	}
}

// TestSequenceKeepsKeyLogsApart: an account's key events are a chain of their own, beside a lobby
// with the same id: each follows its own logged prefix, lobbies first, and its ranges and heads
// name the account.
func TestSequenceKeepsKeyLogsApart(t *testing.T) {
	keys := func(account string, seqs ...int64) []Pending {
		out := pending(account, seqs...)
		for i := range out {
			out[i].Account, out[i].Lobby = account, ""
		}
		return out
	}
	events := append(append(keys(lobbyA, 2, 3), pending(lobbyA, 1, 2)...), keys(lobbyB, 2)...)
	b := Sequence(5, map[string]int64{"key " + lobbyA: 1, "event " + lobbyA: 0}, events)
	var got []string
	for _, l := range b.Leaves {
		got = append(got, fmt.Sprint(l.Chain()[:3], l.Seq))
	}
	if fmt.Sprint(got) != "[eve1 eve2 key2 key3]" || !b.HeldBack {
		t.Fatalf("leaves %v, held back %v", got, b.HeldBack)
	}
	want := []Range{{FirstIndex: 5, Lobby: lobbyA, FirstSeq: 1, Count: 2}, {FirstIndex: 7, Account: lobbyA, FirstSeq: 2, Count: 2}}
	if fmt.Sprint(b.Ranges) != fmt.Sprint(want) {
		t.Fatalf("ranges %v, want %v", b.Ranges, want)
	}
	heads := []Head{{Lobby: lobbyA, Seq: 2, LeafIndex: 6}, {Account: lobbyA, Seq: 3, LeafIndex: 8}}
	if fmt.Sprint(b.Heads) != fmt.Sprint(heads) {
		t.Fatalf("heads %v, want %v", b.Heads, heads)
	}
}

func TestEntryRoundTrip(t *testing.T) {
	l := pending(lobbyA, 42)[0].Leaf
	key := Leaf{Account: lobbyB, Seq: 3, Hash: l.Hash}
	if got, want := string(key.Entry()), "key "+lobbyB+" 3 "+fmt.Sprintf("%x", l.Hash)+"\n"; got != want {
		t.Fatalf("key leaf entry %q, want %q", got, want)
	}
	for _, l := range []Leaf{l, key} {
		back, err := ParseEntry(l.Entry())
		if err != nil || back != l {
			t.Fatalf("round trip: %+v, %v", back, err)
		}
	}
	for _, bad := range []string{"", "event x 1 00\n", "key x 1 00\n", "event key " + lobbyA + " 1 " + fmt.Sprintf("%x", l.Hash) + "\n",
		"keys " + lobbyA + " 1 " + fmt.Sprintf("%x", l.Hash) + "\n", string(l.Entry()[:len(l.Entry())-1]), "event " + lobbyA + " 01 " + fmt.Sprintf("%x", l.Hash) + "\n",
		"event " + lobbyA + " 0 " + fmt.Sprintf("%x", l.Hash) + "\n", "event " + lobbyA + " 1 " + fmt.Sprintf("%X", l.Hash) + "\n"} {
		if _, err := ParseEntry([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// TestCheckpointsVerifyWithTheStandardLibraries: a checkpoint signed here opens with x/mod's note
// and torchwood's policy for the vkey, and a witness's cosignature (torchwood's signer, as
// litewitness makes them) is kept while a stranger's is dropped.
func TestCheckpointsVerifyWithTheStandardLibraries(t *testing.T) {
	const origin = "rps.example.com/log"
	pub, priv, _ := ed25519.GenerateKey(nil)
	s, err := NewSigner(origin, priv)
	if err != nil {
		t.Fatal(err)
	}
	vkey, err := VerifierKey(origin, pub)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil || v.KeyHash() != s.KeyHash() || v.Name() != origin {
		t.Fatalf("vkey %q: %v", vkey, err)
	}
	tree := tlog.Tree{N: 5, Hash: record(7)}
	signed, err := SignCheckpoint(origin, tree, s)
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := torchwood.VerifyCheckpoint(signed, torchwood.ThresholdPolicy(2, torchwood.OriginPolicy(origin), torchwood.SingleVerifierPolicy(v)))
	if err != nil || c.Tree != tree || c.Origin != origin {
		t.Fatalf("checkpoint %+v: %v\n%s", c, err, signed)
	}

	_, wkey, _ := ed25519.GenerateKey(nil)
	w, err := torchwood.NewCosignatureSigner("witness.example/w1", wkey)
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(signed, note.VerifierList(v))
	if err != nil {
		t.Fatal(err)
	}
	witnessed, err := note.Sign(&note.Note{Text: n.Text}, w)
	if err != nil {
		t.Fatal(err)
	}
	_, stranger, _ := ed25519.GenerateKey(nil)
	other, _ := torchwood.NewCosignatureSigner("witness.example/w2", stranger)
	strangers, _ := note.Sign(&note.Note{Text: n.Text}, other)
	answer := append(witnessed[len(n.Text)+1:], strangers[len(n.Text)+1:]...)
	lines, err := Cosignatures(signed, answer, w.Verifier())
	if err != nil {
		t.Fatal(err)
	}
	cosigned := Cosigned(signed, lines)
	policy := torchwood.ThresholdPolicy(2, torchwood.ThresholdPolicy(2, torchwood.OriginPolicy(origin), torchwood.SingleVerifierPolicy(v)),
		torchwood.ThresholdPolicy(1, torchwood.SingleVerifierPolicy(w.Verifier())))
	if _, _, err := torchwood.VerifyCheckpoint(cosigned, policy); err != nil {
		t.Fatalf("cosigned checkpoint: %v\n%s", err, cosigned)
	}
	if _, err := Cosignatures(signed, strangers[len(n.Text)+1:], w.Verifier()); err == nil {
		t.Fatal("took a stranger's cosignature for the witness's")
	}
	if c, sigs, err := ParseSigned(cosigned); err != nil || c.Tree != tree || len(sigs) == 0 {
		t.Fatalf("ParseSigned: %+v %v", c, err)
	}
}
