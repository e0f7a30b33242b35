// The signed-action message, key ids, sealed signatures and Ed25519 verification against the
// vectors the Go, Kotlin and generated clients check (tournament/testdata/signed_actions.json).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import canonicalize from '../assets/vendor/canonicalize/canonicalize.js';
import { adminAct, adminKey, adminToken } from '../assets/js/api.js';
import {
  actionMessage, actionPayload, adminMessage, createdLobby, ed25519Backend, keyIdOf, nobleSigner, nobleVerify, sealSignature, signAdminAction, signerOf,
  verifySignature, webCryptoSigner, webCryptoVerify,
} from '../assets/js/signed.js';

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
  for (const action of ['create_lobby', 'close_lobby', 'stop', 'set_next_config', 'credit', 'debit']) {
    assert.ok(adminVectors.vectors.some((v) => v.action === action), action);
  }
  for (const v of adminVectors.vectors) {
    const f = v.fields;
    // What an event's data.auth holds, and what the event says otherwise: its lobby (the lobby a
    // creation made, which its message does not name) and a recovery's account.
    const auth = { action: f.action, admin: f.player, idempotencyKey: f.idempotencyKey, keyId: f.keyId, request: f.payload.request, signedAt: f.signedAt };
    if (f.gameId !== null) auth.gameId = f.gameId;
    if (f.action === 'create_lobby') assert.equal(await createdLobby(v.signature), v.createdLobby, 'the lobby a signed creation makes');
    const lobbyId = f.action === 'create_lobby' ? '0b8e7c6d-5a4f-4e3d-9c2b-1a0f9e8d7c6b' : f.lobbyId;
    const message = adminMessage(f.origin, auth, { lobbyId, account: f.payload.account });
    assert.equal(message, v.message, v.action);
    assert.equal(await verifySignature(adminVectors.publicKey, message, v.signature), true, v.action);
    assert.equal(await nobleVerify(bytes(adminVectors.publicKey), utf8.encode(message), bytes(v.signature)), true, `${v.action}: noble`);
  }
});

// ---------------------------------------------------------------- the admin page's signing

test('the admin page\'s signer makes the vectors\' key and signatures, with WebCrypto and with the vendored library', async () => {
  const seed = bytes(adminVectors.seed);
  for (const make of [webCryptoSigner, nobleSigner]) {
    const signer = await make(seed);
    assert.equal(signer.publicKey, adminVectors.publicKey, make.name);
    const keyed = { ...signer, keyId: keyIdOf(signer.publicKey) };
    assert.equal(keyed.keyId, adminVectors.keyId, make.name);
    for (const v of adminVectors.vectors) {
      const f = v.fields;
      const headers = await signAdminAction(keyed, {
        origin: f.origin, admin: f.player, action: f.action, lobbyId: f.lobbyId, account: f.payload.account, gameId: f.gameId,
        request: f.payload.request ?? undefined, idempotencyKey: f.idempotencyKey, signedAt: f.signedAt,
      });
      // Ed25519 is deterministic: the same signature is the same message, byte for byte.
      const want = { 'Rps-Key-Id': adminVectors.keyId, 'Rps-Signed-At': String(f.signedAt), 'Rps-Signature': v.signature };
      if (f.gameId !== null) want['Rps-Game-Id'] = f.gameId;
      assert.deepEqual(headers, want, `${make.name} ${v.action}`);
    }
  }
  assert.equal((await signerOf(adminVectors.seed)).keyId, adminVectors.keyId);
  await assert.rejects(signerOf(adminVectors.seed.slice(2)), /64 hex characters/);
});

// adminPage stands in for the admin's tab: its sessionStorage and a server that answers the reads
// adminAct makes (who the admin is, the log's origin, a lobby's current game) and records the rest.
function adminPage(t, { admin, origin, games = {} }) {
  const stored = new Map();
  globalThis.sessionStorage = {
    getItem: (k) => stored.get(k) ?? null, setItem: (k, v) => stored.set(k, String(v)), removeItem: (k) => stored.delete(k),
  };
  t.after(() => { delete globalThis.sessionStorage; });
  const sent = [];
  t.mock.method(globalThis, 'fetch', async (url, init) => {
    const path = url.replace(/^\/v1/, '');
    let json;
    if (path === '/me') json = { id: admin };
    else if (path === '/log') json = { origin };
    else if (init.method === 'GET' && games[path]) json = { id: path.split('/')[2], game: { id: games[path] } };
    else {
      sent.push({ path, ...init });
      json = {};
    }
    return new Response(JSON.stringify(json), { status: 200 });
  });
  adminToken.set(`token-of-${admin}`);
  adminKey.set(adminVectors.seed);
  return sent;
}

// reversed is value with every object's members in reverse order.
const reversed = (value) => (value && typeof value === 'object' && !Array.isArray(value)
  ? Object.fromEntries(Object.entries(value).reverse().map(([k, v]) => [k, reversed(v)])) : value);

test('adminAct signs the body it sends, as the vectors sign it, and sends none when the action has none', async (t) => {
  const f0 = adminVectors.vectors[0].fields;
  const sent = adminPage(t, { admin: f0.player, origin: f0.origin });
  const paths = {
    credit: `/admin/accounts/${f0.payload.account}/credits`, debit: `/admin/accounts/${f0.payload.account}/debits`,
    create_lobby: '/lobbies', close_lobby: '/lobbies/0b8e7c6d-5a4f-4e3d-9c2b-1a0f9e8d7c6b/close',
  };
  // A stop and a next config read the lobby first: the next test.
  for (const v of adminVectors.vectors.filter((x) => x.action in paths)) {
    const f = v.fields;
    t.mock.method(Date, 'now', () => f.signedAt);
    // The body as a form builds it, its members in no particular order.
    const body = f.payload.request ? reversed(f.payload.request) : undefined;
    if (body && Object.keys(body).length > 1) assert.notEqual(JSON.stringify(body), canonicalize(body), `${v.action}: the form's body is out of order`);
    await adminAct(paths[v.action], { action: f.action, lobbyId: f.lobbyId, account: f.payload.account, body, idempotencyKey: f.idempotencyKey });
    const req = sent.at(-1);
    assert.equal(req.path, paths[v.action]);
    assert.equal(req.headers['Rps-Signature'], v.signature, v.action);
    assert.equal(req.headers['Rps-Key-Id'], adminVectors.keyId);
    assert.equal(req.headers['Idempotency-Key'], f.idempotencyKey);
    assert.equal(req.headers['Rps-Game-Id'], undefined);
    if (f.payload.request == null) {
      assert.equal(req.body, undefined, `${v.action}: no body`);
      assert.equal(req.headers['Content-Type'], undefined);
    } else {
      // The body sent is, byte for byte, the request the message names.
      assert.equal(req.body, canonicalize(f.payload.request), v.action);
      assert.ok(v.message.includes(`"request":${req.body}}`), v.action);
    }
  }
});

test('adminAct signs a stop and a next config for the lobby\'s current game, read just before, and names it', async (t) => {
  const f0 = adminVectors.vectors[0].fields;
  const lobbyId = '0b8e7c6d-5a4f-4e3d-9c2b-1a0f9e8d7c6b';
  const games = { [`/lobbies/${lobbyId}`]: '5c4b3a29-1807-4f6e-9d5c-4b3a29180706' };
  const sent = adminPage(t, { admin: f0.player, origin: f0.origin, games });
  t.mock.method(Date, 'now', () => f0.signedAt);
  for (const [action, method, path, body] of [['stop', 'POST', 'stop', { reason: 'table reset' }], ['set_next_config', 'PUT', 'next-config', { betSize: 50, playersCountLimit: 3 }]]) {
    await adminAct(`/lobbies/${lobbyId}/${path}`, { method, action, lobbyId, body, idempotencyKey: `${action}-1` });
    const req = sent.at(-1);
    assert.equal(req.method, method);
    assert.equal(req.headers['Rps-Game-Id'], games[`/lobbies/${lobbyId}`], action);
    const auth = { action, admin: f0.player, gameId: games[`/lobbies/${lobbyId}`], idempotencyKey: `${action}-1`, keyId: adminVectors.keyId, request: body, signedAt: f0.signedAt };
    assert.equal(await verifySignature(adminVectors.publicKey, adminMessage(f0.origin, auth, { lobbyId }), req.headers['Rps-Signature']), true, action);
    assert.equal(await verifySignature(adminVectors.publicKey, adminMessage(f0.origin, { ...auth, gameId: null }, { lobbyId }), req.headers['Rps-Signature']), false, `${action}: the game is signed`);
  }
});

test('adminAct without a key loaded sends the request unsigned', async (t) => {
  const sent = adminPage(t, { admin: adminVectors.vectors[0].fields.player, origin: 'rps.example.com/log' });
  adminKey.clear();
  await adminAct('/lobbies/x/close', { action: 'close_lobby', lobbyId: 'x', idempotencyKey: 'close-2' });
  assert.deepEqual(Object.keys(sent.at(-1).headers).filter((h) => h.startsWith('Rps-')), []);
});
