package translog

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// CheckOrigin accepts a checkpoint origin: a schema-less URL such as "rps.example.com/log", with
// neither spaces nor plus signs (C2SP tlog-checkpoint and signed-note), which also names the log's
// note keys.
func CheckOrigin(origin string) error {
	if origin == "" || len(origin) > 256 || strings.ContainsRune(origin, '+') || strings.Contains(origin, "://") ||
		strings.IndexFunc(origin, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 {
		return fmt.Errorf("log origin %q must be a schema-less URL such as rps.example.com/log, without spaces or '+'", origin)
	}
	return nil
}

// algEd25519 is the signed-note signature type of Ed25519.
const algEd25519 = 1

// signer signs checkpoints with an Ed25519 key under the log's origin (note.Signer).
type signer struct {
	name string
	hash uint32
	key  ed25519.PrivateKey
}

func (s *signer) Name() string                    { return s.name }
func (s *signer) KeyHash() uint32                 { return s.hash }
func (s *signer) Sign(msg []byte) ([]byte, error) { return ed25519.Sign(s.key, msg), nil }

// NewSigner is the note signer of the log: the server's Ed25519 key, named by the origin (C2SP
// signed-note: the key name of a checkpoint's log signature is its origin).
func NewSigner(origin string, key ed25519.PrivateKey) (note.Signer, error) {
	if err := CheckOrigin(origin); err != nil {
		return nil, err
	}
	pub, ok := key.Public().(ed25519.PublicKey)
	if !ok {
		return nil, errors.New("translog: not an Ed25519 key")
	}
	return &signer{name: origin, hash: keyHash(origin, append([]byte{algEd25519}, pub...)), key: key}, nil
}

// keyHash is signed-note's key id: the first 4 bytes of SHA-256(name, "\n", type and key).
func keyHash(name string, key []byte) uint32 {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte("\n"))
	h.Write(key)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// VerifierKey is the note verifier key ("vkey") of the log's key pub: what witnesses and clients
// are configured with.
func VerifierKey(origin string, pub ed25519.PublicKey) (string, error) {
	return note.NewEd25519VerifierKey(origin, pub)
}

// SignCheckpoint signs the C2SP checkpoint of tree under origin.
func SignCheckpoint(origin string, tree tlog.Tree, s note.Signer) ([]byte, error) {
	text := torchwood.Checkpoint{Origin: origin, Tree: tree}.String()
	signed, err := note.Sign(&note.Note{Text: text}, s)
	if err != nil {
		return nil, fmt.Errorf("sign checkpoint: %w", err)
	}
	return signed, nil
}

// ParseSigned splits a signed checkpoint into its checkpoint and its signature lines, without
// checking any signature.
func ParseSigned(signed []byte) (torchwood.Checkpoint, []byte, error) {
	text, sigs, ok := bytes.Cut(signed, []byte("\n\n"))
	if !ok {
		return torchwood.Checkpoint{}, nil, errors.New("malformed signed checkpoint")
	}
	c, err := torchwood.ParseCheckpoint(string(text) + "\n")
	return c, sigs, err
}

// AddCheckpointRequest is the body of a C2SP tlog-witness add-checkpoint request: the size the
// witness last cosigned, the consistency proof from there, and the signed checkpoint.
func AddCheckpointRequest(oldSize int64, proof tlog.TreeProof, signed []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "old %d\n", oldSize)
	for _, h := range proof {
		fmt.Fprintf(&b, "%s\n", h)
	}
	b.WriteString("\n")
	b.Write(signed)
	return b.Bytes()
}

// ParseWitnessSize reads a witness's 409 answer (text/x.tlog.size): the size it last cosigned.
func ParseWitnessSize(body []byte) (int64, error) {
	text, ok := strings.CutSuffix(string(body), "\n")
	n, err := strconv.ParseInt(text, 10, 64)
	if !ok || err != nil || n < 0 || strconv.FormatInt(n, 10) != text {
		return 0, fmt.Errorf("malformed witness size %q", body)
	}
	return n, nil
}

// Cosignatures checks a witness's add-checkpoint answer against the checkpoint it was asked to
// cosign and returns the answer's valid cosignature lines by the witness's key w (other lines are
// dropped, as C2SP tlog-witness asks).
func Cosignatures(signed, answer []byte, w note.Verifier) ([]byte, error) {
	n, err := note.Open(append(append([]byte(nil), signed...), answer...), note.VerifierList(w))
	if err != nil {
		return nil, fmt.Errorf("cosignature of %s: %w", w.Name(), err)
	}
	var lines []byte
	for _, s := range n.Sigs {
		if s.Name == w.Name() && s.Hash == w.KeyHash() {
			lines = append(lines, "— "+s.Name+" "+s.Base64+"\n"...)
		}
	}
	if lines == nil {
		return nil, fmt.Errorf("no cosignature of %s in the answer", w.Name())
	}
	return lines, nil
}

// Cosigned is the signed checkpoint with the witnesses' cosignature lines appended.
func Cosigned(signed []byte, cosignatures ...[]byte) []byte {
	out := append([]byte(nil), signed...)
	for _, c := range cosignatures {
		out = append(out, c...)
	}
	return out
}

// Receipt is the C2SP tlog-proof of leaf l at index in the signed (and cosigned) checkpoint: a
// file a client keeps and checks offline. Its extra data is the leaf's entry, for the reader's
// information only (a verifier recomputes the leaf from what it knows).
func Receipt(l Leaf, index int64, proof tlog.RecordProof, checkpoint []byte) []byte {
	return torchwood.FormatProofWithExtraData(index, l.Entry(), proof, checkpoint)
}
