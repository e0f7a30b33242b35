// An attacker's review of the console's signature checks (issue 31): the dishonest operator moves
// a player's signed quick join into a game of another ruleset, which the player did not sign for.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ed25519 } from '@noble/curves/ed25519.js';
import { keyEventHash, signatureChecker, verifyKeyLog } from '../assets/js/keys.js';
import { actionMessage, keyIdOf } from '../assets/js/signed.js';
import { eventHash, verifyLog, ZERO_HASH } from '../assets/js/verify.js';

const hex = (b) => Buffer.from(b).toString('hex');
const ORIGIN = 'rps.example.com/log';
const secret = new Uint8Array(32).fill(7);
const key = { publicKey: hex(ed25519.getPublicKey(secret)) };
key.keyId = keyIdOf(key.publicKey);
const sign = (fields) => hex(ed25519.sign(new TextEncoder().encode(actionMessage({ origin: ORIGIN, keyId: key.keyId, ...fields })), secret));
const bob = '0c1d2e3f-4a5b-4c6d-8e7f-901a2b3c4d5e';
const lobbyId = '0b8e7c6d-5a4f-4e3d-9c2b-1a0f9e8d7c6b';
const gameId = '7d6c5b4a-3f2e-4d1c-8b0a-9f8e7d6c5b4a';
const T0 = Date.parse('2026-01-01T12:00:00.000Z');

function keyLog() {
  const e = { seq: 1, type: 'key_added', accountId: bob, at: new Date(T0).toISOString(), prevHash: ZERO_HASH, data: {
    keyId: key.keyId, publicKey: key.publicKey, via: 'sign_up', signer: key.keyId, signedAt: T0, name: 'Bob', idempotencyKey: null,
    signature: sign({ action: 'sign_up', payload: { name: 'Bob', publicKey: key.publicKey }, signedAt: T0 }),
  } };
  e.hash = keyEventHash(ZERO_HASH, e);
  return [e];
}

// recovery is a recovery by the operator appended to log at instant ms, retiring every key.
function recovery(log, ms) {
  const operator = hex(ed25519.getPublicKey(new Uint8Array(32).fill(9)));
  const prev = log[log.length - 1];
  const e = { seq: prev.seq + 1, type: 'keys_recovered', accountId: bob, at: new Date(ms).toISOString(), prevHash: prev.hash, data: {
    keyId: keyIdOf(operator), publicKey: operator, retired: [key.keyId], admin: '00000000-0000-4000-8000-000000000001', reason: 'lost phone',
  } };
  e.hash = keyEventHash(prev.hash, e);
  return [...log, e];
}

async function verifyJoin(gameRuleset) {
  const at = T0 + 10_000;
  const join = { action: 'quick_join', idempotencyKey: 'join-b', keyId: key.keyId, signedAt: at, ruleset: 'rpsls',
    signature: sign({ action: 'quick_join', player: bob, payload: { betSize: 100, ruleset: 'rpsls' }, idempotencyKey: 'join-b', signedAt: at }) };
  let prevHash = ZERO_HASH;
  const events = [
    ['game_opened', { number: 1, config: { betSize: 100, ruleset: gameRuleset }, rulesetHash: 'ab'.repeat(32) }],
    ['player_registered', { player: bob, order: 0, players: 1, pot: 100, deadline: 0, auth: join }],
  ].map(([type, data], i) => {
    const e = { seq: i + 1, type, lobbyId, gameId, at: new Date(at).toISOString(), data, prevHash };
    e.hash = eventHash(prevHash, e);
    prevHash = e.hash;
    return e;
  });
  const roundMoves = async () => assert.fail('no round is public');
  async function* each(list) { yield* list; }
  return verifyLog(each(events), roundMoves, signatureChecker({ origin: ORIGIN, keyLog: async () => ({ events: keyLog() }), roundMoves }));
}

test('a quick join moved to a game of another ruleset is named by its event', async () => {
  assert.equal((await verifyJoin('rpsls')).ok, true);
  const r = await verifyJoin('rps');
  assert.deepEqual([r.ok, r.seq], [false, 2]);
  assert.match(r.reason, /quick join .*ruleset/);
});

test('a key event dated before the one it follows is named', async () => {
  // In order, the recovery ends the player's key at its instant; dated before the sign-up, it
  // would make the operator's key the account's from before the player had one.
  assert.equal((await verifyKeyLog(bob, recovery(keyLog(), T0 + 1), ORIGIN)).recoveries.length, 1);
  await assert.rejects(verifyKeyLog(bob, recovery(keyLog(), T0 - 1), ORIGIN), (err) => err.seq === 2 && /dated .*, before key event 1/.test(err.message));
});

test('an unsigned action dated before the player\'s key, appended after later events, is named', async () => {
  // Bob bound his key at T0. The operator appends to the lobby, now, an unsigned registration in
  // his name, dated before T0: "no key then", unless the log must go forward in time.
  const events = [
    ['game_opened', { number: 1, config: { betSize: 100, ruleset: 'rpsls' }, rulesetHash: 'ab'.repeat(32) }, T0 + 10_000],
    ['player_registered', { player: bob, order: 0, players: 1, pot: 100, deadline: 0 }, T0 - 1],
  ];
  let prevHash = ZERO_HASH;
  const log = events.map(([type, data, ms], i) => {
    const e = { seq: i + 1, type, lobbyId, gameId, at: new Date(ms).toISOString(), data, prevHash };
    e.hash = eventHash(prevHash, e);
    prevHash = e.hash;
    return e;
  });
  async function* each(list) { yield* list; }
  const roundMoves = async () => assert.fail('no round is public');
  const r = await verifyLog(each(log), roundMoves, signatureChecker({ origin: ORIGIN, keyLog: async () => keyLog(), roundMoves }));
  assert.deepEqual([r.ok, r.seq], [false, 2]);
  assert.match(r.reason, /before event 1/);
});
