// The console's transparency-log checks against trees built here from RFC 6962's definition.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { leafEntry, recordHash, verifyInclusion, parseCheckpoint, verifySignature } from '../assets/js/translog.js';

const h = (...parts) => new Uint8Array(createHash('sha256').update(Buffer.concat(parts.map((p) => Buffer.from(p)))).digest());
const leafHash = (i) => h([0], `leaf ${i}`);

// mth is RFC 6962's Merkle tree hash of leaves [lo, hi).
function mth(lo, hi) {
  if (hi - lo === 1) return leafHash(lo);
  let k = 1;
  while (k * 2 < hi - lo) k *= 2;
  return h([1], mth(lo, lo + k), mth(lo + k, hi));
}

// path is RFC 6962's audit path of leaf m in [lo, hi).
function path(m, lo, hi) {
  if (hi - lo === 1) return [];
  let k = 1;
  while (k * 2 < hi - lo) k *= 2;
  return m - lo < k ? [...path(m, lo, lo + k), mth(lo + k, hi)] : [...path(m, lo + k, hi), mth(lo, lo + k)];
}

test('inclusion proofs of every leaf of trees up to 20 leaves verify, and altered ones do not', async () => {
  for (let size = 1; size <= 20; size++) {
    const root = mth(0, size);
    for (let i = 0; i < size; i++) {
      const proof = path(i, 0, size);
      assert.ok(await verifyInclusion(i, size, leafHash(i), proof, root), `leaf ${i} of ${size}`);
      assert.ok(!(await verifyInclusion(i, size, leafHash(i + 1), proof, root)), `another leaf at ${i} of ${size}`);
      if (size > 1) assert.ok(!(await verifyInclusion((i + 1) % size, size, leafHash(i), proof, root)), `leaf ${i} at another index`);
    }
  }
});

test('a leaf is the event line, hashed with 0x00 first', async () => {
  const entry = leafEntry('5a1f0c1e-8d4b-4c55-9a43-2f1d0e7b6c11', 7, 'ab'.repeat(32));
  assert.equal(new TextDecoder().decode(entry), `event 5a1f0c1e-8d4b-4c55-9a43-2f1d0e7b6c11 7 ${'ab'.repeat(32)}\n`);
  assert.deepEqual(await recordHash(entry), h([0], entry));
});

test('a signed checkpoint parses into its text, fields and signatures', () => {
  const sig = Buffer.concat([Buffer.from([1, 2, 3, 4]), Buffer.alloc(64, 9)]).toString('base64');
  const c = parseCheckpoint(`rps.example.com/log\n5\n${Buffer.alloc(32, 7).toString('base64')}\n\n\u2014 rps.example.com/log ${sig}\n\u2014 w.example/1 ${sig}\n`);
  assert.equal(c.origin, 'rps.example.com/log');
  assert.equal(c.size, 5);
  assert.equal(c.text, `rps.example.com/log\n5\n${Buffer.alloc(32, 7).toString('base64')}\n`);
  assert.deepEqual(c.signatures.map((s) => s.name), ['rps.example.com/log', 'w.example/1']);
  assert.throws(() => parseCheckpoint('no signatures'));
});

test('a checkpoint signed by a key whose base64 holds a \'+\' verifies (and not with another key)', async () => {
  const name = 'rps.example.com/log';
  const text = `${name}\n3\n${Buffer.alloc(32, 7).toString('base64')}\n`;
  // Keys until one's verifier key has a '+' in its base64 (about one in two).
  const keyOf = () => {
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const raw = Buffer.concat([Buffer.from([1]), publicKey.export({ format: 'der', type: 'spki' }).subarray(-32)]);
    const hash = createHash('sha256').update(Buffer.concat([Buffer.from(`${name}\n`), raw])).digest().subarray(0, 4);
    return { privateKey, hash, vkey: `${name}+${hash.toString('hex')}+${raw.toString('base64')}` };
  };
  let k = keyOf();
  while (k.vkey.split('+').length < 4) k = keyOf();
  const sig = Buffer.concat([k.hash, sign(null, Buffer.from(text), k.privateKey)]);
  const checkpoint = parseCheckpoint(`${text}\n\u2014 ${name} ${sig.toString('base64')}\n`);
  assert.equal(await verifySignature(checkpoint, [k.vkey]), true);
  let other = keyOf();
  other = { ...other, vkey: `${name}+${k.hash.toString('hex')}+${other.vkey.split('+').slice(2).join('+')}` };
  assert.equal(await verifySignature(checkpoint, [other.vkey]), false);
});
