// The signed-action message, key ids, sealed signatures and Ed25519 verification against the
// vectors the Go, Kotlin and generated clients check (tournament/testdata/signed_actions.json).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { actionMessage, actionPayload, adminMessage, ed25519Backend, keyIdOf, nobleVerify, sealSignature, verifySignature, webCryptoVerify } from '../assets/js/signed.js';

const vectors = JSON.parse(readFileSync(new URL('../../tournament/testdata/signed_actions.json', import.meta.url)));
const adminVectors = JSON.parse(readFileSync(new URL('../../tournament/testdata/signed_admin_actions.json', import.meta.url)));
const utf8 = new TextEncoder();
const bytes = (hex) => Uint8Array.from(hex.match(/../g), (b) => parseInt(b, 16));

// The players' actions, which the console checks (an admin's are in signed_admin_actions.json).
const PLAYER_ACTIONS = ['add_key', 'commit', 'leave', 'quick_join', 'register', 'retire_key', 'reveal', 'sign_up'];
const playerVectors = vectors.vectors.filter((v) => PLAYER_ACTIONS.includes(v.action));

test('the vectors cover every player action', () => {
  assert.deepEqual([...new Set(playerVectors.map((v) => v.action))].sort(), PLAYER_ACTIONS);
});

test('key id of the vectors\' key', () => {
  assert.equal(keyIdOf(vectors.publicKey), vectors.keyId);
  assert.throws(() => keyIdOf(vectors.publicKey.toUpperCase()), /64 lower-case hex/);
});

test('messages are rebuilt byte for byte from each vector\'s fields', () => {
  for (const v of playerVectors) {
    const f = v.fields;
    // The payload as the console rebuilds it from a log, from the action's inputs only.
    const payload = actionPayload(f.action, f.payload);
    assert.deepEqual(payload, f.payload, v.action);
    const message = actionMessage({ ...f, payload });
    assert.equal(message, v.message, v.action);
    assert.ok(Buffer.from(utf8.encode(message)).equals(Buffer.from(v.message, 'utf8')), `${v.action}: bytes`);
  }
});

test('every vector\'s signature verifies, with WebCrypto and with the vendored library', async () => {
  assert.equal(await ed25519Backend(), 'webcrypto', 'node has Ed25519 in WebCrypto');
  for (const v of playerVectors) {
    const [pub, msg, sig] = [bytes(vectors.publicKey), utf8.encode(v.message), bytes(v.signature)];
    assert.equal(await webCryptoVerify(pub, msg, sig), true, `${v.action}: webcrypto`);
    assert.equal(await nobleVerify(pub, msg, sig), true, `${v.action}: noble`);
    assert.equal(await verifySignature(vectors.publicKey, v.message, v.signature), true, v.action);
  }
});

test('a signature does not verify over another lobby, game, round, payload or idempotency key', async () => {
  const commit = vectors.vectors.find((v) => v.action === 'commit');
  const changes = {
    lobbyId: '00000000-0000-4000-8000-000000000000',
    gameId: '00000000-0000-4000-8000-000000000001',
    round: 2,
    payload: { commitment: '9ce58f3d'.padEnd(64, '0') },
    idempotencyKey: 'commit-2',
    origin: 'other.example.com/log',
    player: '00000000-0000-4000-8000-000000000002',
    signedAt: commit.fields.signedAt + 1,
  };
  for (const [field, value] of Object.entries(changes)) {
    const message = actionMessage({ ...commit.fields, [field]: value });
    assert.notEqual(message, commit.message);
    for (const verify of [webCryptoVerify, nobleVerify]) {
      assert.equal(await verify(bytes(vectors.publicKey), utf8.encode(message), bytes(commit.signature)), false, `${field}: ${verify.name}`);
    }
  }
  const flipped = commit.signature.replace(/^./, (c) => (c === '0' ? '1' : '0'));
  assert.equal(await verifySignature(vectors.publicKey, commit.message, flipped), false);
  assert.equal(await verifySignature(vectors.publicKey, commit.message, 'zz'), false, 'not hex');
  assert.equal(await verifySignature('00'.repeat(32), commit.message, commit.signature), false, 'another key');
});

test('the sealed signature of the commit vector', () => {
  assert.equal(sealSignature(vectors.sealedSignature.signature), vectors.sealedSignature.sealed);
});

test('signedAt must be an exact JSON number', () => {
  assert.throws(() => actionMessage({ ...vectors.vectors[0].fields, signedAt: 2 ** 53 }), /exact JSON number/);
});

test('an admin\'s message is rebuilt byte for byte from an event\'s auth, and its signature verifies', async () => {
  assert.ok(adminVectors.vectors.some((v) => v.action === 'create_lobby') && adminVectors.vectors.some((v) => v.action === 'close_lobby'));
  for (const v of adminVectors.vectors) {
    const f = v.fields;
    // What an event's data.auth holds, and what the event says otherwise: its lobby (the lobby a
    // creation made, which its message does not name) and a recovery's account.
    const auth = { action: f.action, admin: f.player, idempotencyKey: f.idempotencyKey, keyId: f.keyId, request: f.payload.request, signedAt: f.signedAt };
    const lobbyId = f.action === 'create_lobby' ? '0b8e7c6d-5a4f-4e3d-9c2b-1a0f9e8d7c6b' : f.lobbyId;
    const message = adminMessage(f.origin, auth, { lobbyId, account: f.payload.account });
    assert.equal(message, v.message, v.action);
    assert.equal(await verifySignature(adminVectors.publicKey, message, v.signature), true, v.action);
    assert.equal(await nobleVerify(bytes(adminVectors.publicKey), utf8.encode(message), bytes(v.signature)), true, `${v.action}: noble`);
  }
});
