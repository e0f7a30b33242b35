// Checks the transparency log's proof for a lobby in the browser: the checkpoint (a C2SP signed
// note: origin, size, root hash, then signature lines), the log's Ed25519 signature on it against
// the verifier keys GET /v1/log lists (where the browser's WebCrypto has Ed25519), and the RFC
// 6962 inclusion proof of the lobby's event (SHA-256 from WebCrypto). Pure functions over data,
// checked by node's test runner too.

const utf8 = new TextEncoder();

export function fromBase64(s) {
  const bin = atob(s);
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

async function sha256(bytes) {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
}

// The leaf of a lobby's event: "event <lobbyId> <seq> <hash>\n" (README: The transparency log).
export function leafEntry(lobbyId, seq, hash) {
  return utf8.encode(`event ${lobbyId} ${seq} ${hash}\n`);
}

export const recordHash = (entry) => sha256(concat(Uint8Array.of(0), entry));
const nodeHash = (left, right) => sha256(concat(Uint8Array.of(1), left, right));

function equal(a, b) {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

// verifyInclusion runs an RFC 6962 inclusion proof (RFC 9162, 2.1.3.2) of the leaf hash at index
// in a tree of size, and says whether it leads to root. Sizes stay below 2^53: halving is
// arithmetic, not 32-bit bit operations.
export async function verifyInclusion(index, size, leaf, proof, root) {
  if (index < 0 || index >= size) return false;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of proof) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = await nodeHash(p, r);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      r = await nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && equal(r, root);
}

// parseCheckpoint splits a signed checkpoint into its text, origin, size, root and signatures
// ({name, keyHash, signature}).
export function parseCheckpoint(note) {
  const split = note.indexOf('\n\n');
  if (split < 0) throw new Error('not a signed note');
  const text = note.slice(0, split + 1);
  const [origin, size, root] = text.split('\n');
  if (!/^[0-9]+$/.test(size)) throw new Error('malformed checkpoint size');
  const signatures = note.slice(split + 2).split('\n').filter((l) => l).map((line) => {
    const m = /^\u2014 (\S+) (\S+)$/.exec(line);
    if (!m) throw new Error(`malformed signature line: ${line}`);
    const raw = fromBase64(m[2]);
    return { name: m[1], keyHash: raw.slice(0, 4), signature: raw.slice(4) };
  });
  return { text, origin, size: Number(size), root: fromBase64(root), signatures };
}

// verifySignature checks the log's signature on a checkpoint with one of its verifier keys
// ("<name>+<hash>+<base64 of 0x01 and the Ed25519 key>"): true, false, or null when this browser
// has no Ed25519.
export async function verifySignature(checkpoint, verifierKeys) {
  for (const vkey of verifierKeys) {
    // The name and the hash never hold a '+'; the key's base64 may.
    const [name, hash] = vkey.split('+', 2);
    const raw = fromBase64(vkey.slice(name.length + hash.length + 2));
    if (name !== checkpoint.origin || raw[0] !== 1) continue;
    const sig = checkpoint.signatures.find((s) => s.name === name && Array.from(s.keyHash, (b) => b.toString(16).padStart(2, '0')).join('') === hash);
    if (!sig) continue;
    let pub;
    try {
      pub = await crypto.subtle.importKey('raw', raw.slice(1), { name: 'Ed25519' }, false, ['verify']);
    } catch {
      return null;
    }
    return crypto.subtle.verify({ name: 'Ed25519' }, pub, sig.signature, utf8.encode(checkpoint.text));
  }
  return false;
}

// checkProof checks a LogProof (GET /v1/lobbies/{id}?logProof=true) against the log's verifier
// keys: {included, signed, checkpoint, cosigners}.
export async function checkProof(proof, verifierKeys) {
  const checkpoint = parseCheckpoint(proof.checkpoint);
  const leaf = await recordHash(leafEntry(proof.lobbyId, proof.seq, proof.hash));
  const included = checkpoint.size === proof.treeSize &&
    await verifyInclusion(proof.leafIndex, checkpoint.size, leaf, proof.proof.map(fromBase64), checkpoint.root);
  const signed = await verifySignature(checkpoint, verifierKeys);
  const cosigners = [...new Set(checkpoint.signatures.map((s) => s.name).filter((n) => n !== checkpoint.origin))];
  return { included, signed, checkpoint, cosigners };
}
