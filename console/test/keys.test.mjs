// Key logs and the signature checks of "Verify the whole log", over logs built and signed here
// with the vectors' key (tournament/testdata/signed_actions.json) and others: a signed game
// verifies; a forged signature, a key not in the player's key log, a retired key, a replay, an
// unsigned action by a player with a key and a signature moved to another lobby, game or round
// are each named by event.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ed25519 } from '@noble/curves/ed25519.js';
import { checkRecoveries, heldAt, keyEventHash, KeyLogFailure, signatureChecker, verifyKeyLog } from '../assets/js/keys.js';
import { configOfRequest, DEFAULT_CONFIG, lobbyName, requestProblem } from '../assets/js/adminacts.js';
import { ADMIN_ACTIONS_NAMING_GAME, actionMessage, adminMessage, createdLobby, keyIdOf, sealSignature } from '../assets/js/signed.js';
import { commitmentOf, eventHash, sealedDigest, verifyLog, ZERO_HASH } from '../assets/js/verify.js';

const vectors = JSON.parse(readFileSync(new URL('../../tournament/testdata/signed_actions.json', import.meta.url)));
const hex = (b) => Buffer.from(b).toString('hex');
const utf8 = new TextEncoder();
const ORIGIN = 'rps.example.com/log';

// A player's key: the vectors' seed, or one made from a byte.
function keyPair(seed) {
  const secret = typeof seed === 'string' ? Buffer.from(seed, 'hex') : new Uint8Array(32).fill(seed);
  const publicKey = hex(ed25519.getPublicKey(secret));
  return { secret, publicKey, keyId: keyIdOf(publicKey) };
}
const sign = (key, fields) => hex(ed25519.sign(utf8.encode(actionMessage({ origin: ORIGIN, keyId: key.keyId, ...fields })), key.secret));

const alice = { id: '6f1c2a9e-3b7d-4c5e-8f10-2a3b4c5d6e7f', key: keyPair(vectors.seed) };
const bob = { id: '0c1d2e3f-4a5b-4c6d-8e7f-901a2b3c4d5e', key: keyPair(2) };
const carol = { id: '2b9c7e4a-3f61-4d2a-9c0e-8a5b1d7f3e20' }; // never had a key
const phone = keyPair(3); // alice's second device
const stranger = keyPair(4);
const recovered = keyPair(5);

const T0 = Date.parse('2026-01-01T12:00:00.000Z');
const iso = (ms) => new Date(ms).toISOString();

// keyChain links key events (type, data, ms) into an account's key log.
function keyChain(accountId, list) {
  let prevHash = ZERO_HASH;
  return list.map(([type, data, ms], i) => {
    const e = { seq: i + 1, type, accountId, at: iso(ms), data, prevHash };
    e.hash = keyEventHash(prevHash, e);
    prevHash = e.hash;
    return e;
  });
}

const signUp = (key, name, ms, signer = key) => ['key_added', {
  keyId: key.keyId, publicKey: key.publicKey, via: 'sign_up', signer: signer.keyId, signedAt: ms, name,
  signature: sign(signer, { action: 'sign_up', payload: { name, publicKey: key.publicKey }, signedAt: ms }), idempotencyKey: null,
}, ms];
const addKey = (player, key, signer, ms) => ['key_added', {
  keyId: key.keyId, publicKey: key.publicKey, via: 'add_key', signer: signer.keyId, signedAt: ms, idempotencyKey: `add-${ms}`,
  signature: sign(signer, { action: 'add_key', player, payload: { publicKey: key.publicKey }, idempotencyKey: `add-${ms}`, signedAt: ms }),
}, ms];
const retireKey = (player, keyId, signer, ms) => ['key_retired', {
  keyId, signer: signer.keyId, signedAt: ms, idempotencyKey: `retire-${ms}`,
  signature: sign(signer, { action: 'retire_key', player, payload: { keyId }, idempotencyKey: `retire-${ms}`, signedAt: ms }),
}, ms];
const recover = (key, retired, ms) => ['keys_recovered', {
  keyId: key.keyId, publicKey: key.publicKey, retired, admin: '9a8b7c6d-0000-4000-8000-000000000001', reason: 'lost phone',
}, ms];

test('a key log: sign-up, a second device, a retirement and a recovery by the operator', async () => {
  const log = keyChain(alice.id, [
    signUp(alice.key, 'Ålice "A"', T0),
    addKey(alice.id, phone, alice.key, T0 + 1000),
    retireKey(alice.id, alice.key.keyId, phone, T0 + 2000),
    recover(recovered, [phone.keyId], T0 + 3000),
  ]);
  const r = await verifyKeyLog(alice.id, log, ORIGIN);
  assert.deepEqual([...r.keys.values()].map((k) => [k.keyId, k.addedSeq, k.retiredSeq, k.recovery]), [
    [alice.key.keyId, 1, 3, false], [phone.keyId, 2, 4, false], [recovered.keyId, 4, null, true]]);
  assert.deepEqual(r.recoveries.map((x) => [x.seq, x.keyId, x.retired, x.reason]), [[4, recovered.keyId, [phone.keyId], 'lost phone']]);
  assert.deepEqual(heldAt(r, T0 + 1500).map((k) => k.keyId), [alice.key.keyId, phone.keyId]);
  assert.deepEqual(heldAt(r, T0 + 2500).map((k) => k.keyId), [phone.keyId]);

  // A key added by the key a recovery gave is the operator's word too.
  const after = keyChain(alice.id, [signUp(alice.key, 'Alice', T0), recover(recovered, [alice.key.keyId], T0 + 1), addKey(alice.id, phone, recovered, T0 + 2)]);
  assert.deepEqual([...(await verifyKeyLog(alice.id, after, ORIGIN)).keys.values()].map((k) => [k.keyId, k.recovery, k.viaRecovery]),
    [[alice.key.keyId, false, false], [recovered.keyId, true, false], [phone.keyId, false, true]]);

  // An account's first key added later is signed by itself.
  const late = keyChain(carol.id, [addKey(carol.id, stranger, stranger, T0)]);
  assert.equal((await verifyKeyLog(carol.id, late, ORIGIN)).keys.size, 1);
});

test('a key log that fails is named by key event', async () => {
  const fails = async (accountId, list, seq, why) => {
    await assert.rejects(verifyKeyLog(accountId, keyChain(accountId, list), ORIGIN), (err) => {
      assert.equal(err.seq, seq, err.message);
      assert.match(err.message, why);
      return true;
    });
  };
  const first = signUp(alice.key, 'Alice', T0);
  await fails(alice.id, [first, addKey(alice.id, phone, stranger, T0 + 1)], 2, /signer .* is not a key of this account/);
  await fails(alice.id, [first, addKey(alice.id, phone, phone, T0 + 1)], 2, /signer .* is not a key of this account/);
  await fails(alice.id, [signUp(alice.key, 'Alice', T0, stranger)], 1, /sign-up key is signed by another key/);
  await fails(carol.id, [addKey(carol.id, phone, stranger, T0)], 1, /first key is not signed by itself/);
  await fails(alice.id, [first, retireKey(alice.id, alice.key.keyId, alice.key, T0 + 1), retireKey(alice.id, alice.key.keyId, alice.key, T0 + 2)],
    3, /retired key .* was retired by key event 2/);
  await fails(alice.id, [first, addKey(alice.id, phone, alice.key, T0 + 1), recover(recovered, [phone.keyId], T0 + 2)], 3, /not every active key/);
  const forged = addKey(alice.id, phone, alice.key, T0 + 1);
  forged[1].publicKey = stranger.publicKey;
  forged[1].keyId = stranger.keyId;
  await fails(alice.id, [first, forged], 2, /add_key signature by key .* does not verify/);
  // Another origin's signature is worth nothing here.
  await assert.rejects(verifyKeyLog(alice.id, keyChain(alice.id, [first]), 'other.example.com/log'), /sign_up signature .* does not verify/);

  // An instant is hashed as the log writes it, with three digits of milliseconds, and in order.
  const trimmed = keyChain(alice.id, [signUp(alice.key, 'Alice', T0 + 160)]);
  trimmed[0].at = trimmed[0].at.replace('.160Z', '.16Z');
  trimmed[0].hash = keyEventHash(ZERO_HASH, trimmed[0]);
  await assert.rejects(verifyKeyLog(alice.id, trimmed, ORIGIN), /its at "2026-01-01T12:00:00.16Z" is not in the log's time format/);
  await fails(alice.id, [first, addKey(alice.id, phone, alice.key, T0 - 1)], 2, /dated .* before key event 1/);

  const log = keyChain(alice.id, [first, addKey(alice.id, phone, alice.key, T0 + 1)]);
  log[1].data.idempotencyKey = 'other';
  await assert.rejects(verifyKeyLog(alice.id, log, ORIGIN), (err) => err.seq === 2 && /hash does not match/.test(err.message));
  await assert.rejects(verifyKeyLog(bob.id, keyChain(alice.id, [first]), ORIGIN), /belongs to account/);
});

// ------------------------------------------------------------------ a lobby's signed game

const lobbyId = '0b8e7c6d-5a4f-4e3d-9c2b-1a0f9e8d7c6b';
const gameId = '7d6c5b4a-3f2e-4d1c-8b0a-9f8e7d6c5b4a';
const salt = '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f';
const BET = 100;

const keyLogs = {
  [alice.id]: keyChain(alice.id, [signUp(alice.key, 'Alice', T0)]),
  [bob.id]: keyChain(bob.id, [signUp(bob.key, 'Bob', T0)]),
  [carol.id]: [],
};

// A game between alice and bob, every action signed: the events' data and the round's
// transcript (what the server shows once the round is over).
function signedGame({ keys = keyLogs } = {}) {
  const at = T0 + 10_000;
  const moves = [[alice, '0alicepw'], [bob, '2bobpw']].map(([p, reveal], i) => {
    const commitment = commitmentOf(reveal);
    const common = { player: p.id, lobbyId, gameId, round: 1, signedAt: at };
    return {
      accountId: p.id, committed: true, revealed: true, commitment, reveal, move: Number(reveal[0]),
      commitSignature: sign(p.key, { ...common, action: 'commit', payload: { commitment }, idempotencyKey: `c${i}` }),
      revealSignature: sign(p.key, { ...common, action: 'reveal', payload: { reveal }, idempotencyKey: `r${i}` }),
    };
  });
  const auth = (p, action, idempotencyKey, signature) => ({ action, idempotencyKey, keyId: p.key.keyId, signedAt: at, signature });
  const sealed = (p, action, idempotencyKey, signature) => ({ action, idempotencyKey, keyId: p.key.keyId, signedAt: at, sealedSignature: sealSignature(signature) });
  const register = auth(alice, 'register', 'reg-a', sign(alice.key, { action: 'register', player: alice.id, lobbyId, gameId, payload: { bet: BET }, idempotencyKey: 'reg-a', signedAt: at }));
  const join = { ...auth(bob, 'quick_join', 'join-b', sign(bob.key, { action: 'quick_join', player: bob.id, payload: { betSize: BET, ruleset: 'rpsls' }, idempotencyKey: 'join-b', signedAt: at })), ruleset: 'rpsls' };
  const data = [
    ['game_opened', { number: 1, config: { betSize: BET, ruleset: 'rpsls' }, rulesetHash: 'ab'.repeat(32) }],
    ['player_registered', { player: alice.id, order: 0, players: 1, pot: BET, deadline: 0, auth: register }],
    ['player_registered', { player: bob.id, order: 1, players: 2, pot: 2 * BET, deadline: 0, auth: join }],
    ['round_started', { round: 1, players: 2 }],
    ['move_committed', { player: alice.id, round: 1, committed: 1, auth: sealed(alice, 'commit', 'c0', moves[0].commitSignature) }],
    ['move_committed', { player: bob.id, round: 1, committed: 2, auth: sealed(bob, 'commit', 'c1', moves[1].commitSignature) }],
    ['moves_closed', { round: 1, committed: 2, eliminated: 0, deadline: 0,
      digest: sealedDigest(moves.map((m) => ({ player: m.accountId, value: m.commitment })), salt) }],
    ['move_revealed', { player: alice.id, round: 1, revealed: 1, auth: sealed(alice, 'reveal', 'r0', moves[0].revealSignature) }],
    ['move_revealed', { player: bob.id, round: 1, revealed: 2, auth: sealed(bob, 'reveal', 'r1', moves[1].revealSignature) }],
    ['round_resolved', { round: 1, resolution: 'classic', revealed: 2, present: 5, counts: [1, 0, 1, 0, 0], survivors: 1, remaining: 1, salt,
      digest: sealedDigest(moves.map((m) => ({ player: m.accountId, value: m.reveal }))) }],
    ['game_finished', { winner: alice.id, amount: 2 * BET, round: 1, salt }],
  ];
  return { data, moves, keys, at };
}

// chain hashes a lobby's events, each at the game's instant (or its own, a third member), as a
// server (or an operator re-hashing the chain after a forgery) would.
function chain(data, at, lobby = lobbyId) {
  let prevHash = ZERO_HASH;
  return data.map(([type, d, ms], i) => {
    const e = { seq: i + 1, type, lobbyId: lobby, gameId, at: iso(ms ?? at), data: d, prevHash };
    e.hash = eventHash(prevHash, e);
    prevHash = e.hash;
    return e;
  });
}

async function* each(list) { yield* list; }

// listed: the server's list of an account's keys (AccountKey) for a key log.
async function listed(accountId, events) {
  const { keys } = await verifyKeyLog(accountId, events, ORIGIN);
  return [...keys.values()].map(({ keyId, publicKey, addedSeq, retiredSeq, recovery }) => ({ keyId, publicKey, addedSeq, recovery, ...(retiredSeq ? { retiredSeq } : {}) }));
}

async function verifyGame({ data, moves, keys, at, lobby }) {
  const roundMoves = async (g, round) => {
    assert.deepEqual([g, round], [gameId, 1]);
    return moves;
  };
  const keyLog = async (id) => {
    assert.ok(id in keys, `key log of ${id}`);
    return { events: keys[id], keys: await listed(id, keys[id]) };
  };
  return verifyLog(each(chain(data, at, lobby)), roundMoves, signatureChecker({ origin: ORIGIN, keyLog, roundMoves }));
}

test('a signed game verifies: every action against its player\'s key', async () => {
  const game = signedGame();
  assert.deepEqual(await verifyGame(game),
    { ok: true, through: 11, signatures: { signed: 6, unsigned: 0, sealed: 0, recoveries: [], adminChecked: 0, adminUnsigned: [] } });
  // Before the round is over, the commits' and reveals' signatures are sealed, waiting for it.
  assert.deepEqual((await verifyGame({ ...game, data: game.data.slice(0, 9) })).signatures,
    { signed: 2, unsigned: 0, sealed: 4, recoveries: [], adminChecked: 0, adminUnsigned: [] });
});

test('a forged signature is named by its event', async () => {
  const game = signedGame();
  // The operator registers bob in his name with a signature of its own key.
  game.data[2][1].auth.signature = sign(stranger, { action: 'quick_join', player: bob.id, payload: { betSize: BET, ruleset: 'rpsls' }, idempotencyKey: 'join-b', signedAt: game.at });
  const r = await verifyGame(game);
  assert.deepEqual([r.ok, r.seq, r.through], [false, 3, 2]);
  assert.match(r.reason, new RegExp(`player_registered of player ${bob.id}: the signature by key ${bob.key.keyId} does not verify over "rps-action-v1`));
});

test('a quick join put in a game of another ruleset than it asked for is named', async () => {
  const game = signedGame();
  game.data[0][1].config.ruleset = 'rps';
  const r = await verifyGame(game);
  assert.deepEqual([r.ok, r.seq], [false, 3]);
  assert.match(r.reason, /a quick join that asked for ruleset rpsls, in a game of rps/);
});

test('a signature moved to another lobby, game, round or payload is refused', async () => {
  const other = { lobbyId: '00000000-0000-4000-8000-000000000009', gameId: '00000000-0000-4000-8000-000000000008' };
  for (const [field, value] of Object.entries(other)) {
    // A register signature made for another lobby or game, put on this game's registration.
    const game = signedGame();
    game.data[1][1].auth.signature = sign(alice.key, { action: 'register', player: alice.id, lobbyId, gameId, payload: { bet: BET }, idempotencyKey: 'reg-a', signedAt: game.at, [field]: value });
    const r = await verifyGame(game);
    assert.deepEqual([r.ok, r.seq], [false, 2], field);
    assert.match(r.reason, /does not verify/);
  }
  // Another bet: the game's bet is what the message names.
  const bet = signedGame();
  bet.data[0][1].config.betSize = BET + 1;
  assert.deepEqual([(await verifyGame(bet)).seq], [2]);

  // A commit's signature made for round 2 (a valid seal of it in the event): named at the commit,
  // once round 1 is public.
  const round = signedGame();
  const m = round.moves[1];
  m.commitSignature = sign(bob.key, { action: 'commit', player: bob.id, lobbyId, gameId, round: 2, payload: { commitment: m.commitment }, idempotencyKey: 'c1', signedAt: round.at });
  round.data[5][1].auth.sealedSignature = sealSignature(m.commitSignature);
  const r = await verifyGame(round);
  assert.deepEqual([r.ok, r.seq, r.through], [false, 6, 5]);
  assert.match(r.reason, /move_committed of player .* in round 1: the signature by key .* does not verify/);

  // A transcript whose signature is not the one the event sealed.
  const swapped = signedGame();
  swapped.moves[0].revealSignature = swapped.moves[1].revealSignature;
  const s = await verifyGame(swapped);
  assert.equal(s.seq, 8);
  assert.match(s.reason, /the reveal signature in the transcript is not the one the event sealed/);
  const hidden = signedGame();
  hidden.moves[0].commitSignature = null;
  assert.match((await verifyGame(hidden)).reason, /transcript shows no commit signature/);
});

test('a key not in the player\'s key log, or retired before the action, is named', async () => {
  // The operator put a key of its own on alice's account without a key event, and signed with it.
  const game = signedGame();
  const auth = game.data[1][1].auth;
  Object.assign(auth, { keyId: stranger.keyId, signature: sign(stranger, { action: 'register', player: alice.id, lobbyId, gameId, payload: { bet: BET }, idempotencyKey: 'reg-a', signedAt: game.at }) });
  const r = await verifyGame(game);
  assert.deepEqual([r.ok, r.seq], [false, 2]);
  assert.match(r.reason, new RegExp(`signed with key ${stranger.keyId}, which is not in the player's key log`));

  const retired = signedGame({ keys: { ...keyLogs, [alice.id]: keyChain(alice.id, [signUp(alice.key, 'Alice', T0), addKey(alice.id, phone, alice.key, T0 + 1), retireKey(alice.id, alice.key.keyId, phone, T0 + 2)]) } });
  const r2 = await verifyGame(retired);
  assert.deepEqual([r2.ok, r2.seq], [false, 2]);
  assert.match(r2.reason, /retired before it \(key event 3\)/);

  // The operator put a key on alice's account without a key event: the server lists it.
  const hidden = signedGame();
  const keyLog = async (id) => {
    const events = keyLogs[id];
    const keys = await listed(id, events);
    if (id === alice.id) keys.push({ keyId: stranger.keyId, publicKey: stranger.publicKey, addedSeq: 1, recovery: false });
    return { events, keys };
  };
  const roundMoves = async () => hidden.moves;
  const r4 = await verifyLog(each(chain(hidden.data, hidden.at)), roundMoves, signatureChecker({ origin: ORIGIN, keyLog, roundMoves }));
  assert.deepEqual([r4.ok, r4.seq], [false, 2]);
  assert.match(r4.reason, new RegExp(`the server lists key ${stranger.keyId}, which no key event added`));

  const broken = keyChain(bob.id, [signUp(bob.key, 'Bob', T0)]);
  broken[0].data.name = 'Rob';
  const r3 = await verifyGame(signedGame({ keys: { ...keyLogs, [bob.id]: broken } }));
  assert.deepEqual([r3.seq], [3]);
  assert.match(r3.reason, /key log of player .* fails at its key event 1: its hash does not match/);
});

test('a signature made outside the window of its event is named', async () => {
  const game = signedGame();
  const auth = game.data[1][1].auth;
  const stale = game.at - 23 * 60 * 60 * 1000 - 1;
  Object.assign(auth, { signedAt: stale, signature: sign(alice.key, { action: 'register', player: alice.id, lobbyId, gameId, payload: { bet: BET }, idempotencyKey: 'reg-a', signedAt: stale }) });
  const r = await verifyGame(game);
  assert.deepEqual([r.ok, r.seq], [false, 2]);
  assert.match(r.reason, /its signature was signed at .*, more than 23 hours before the event/);

  const ahead = signUp(alice.key, 'Alice', T0 + 5 * 60 * 1000 + 1);
  ahead[2] = T0;
  await assert.rejects(verifyKeyLog(alice.id, keyChain(alice.id, [ahead]), ORIGIN), /sign_up signature was signed at .*, more than 5 minutes after the event/);
});

test('a key in two accounts\' key logs is named', async () => {
  // The operator copies alice's sign-up (which names no account) into bob's key log.
  const copied = keyChain(bob.id, keyLogs[alice.id].map((e) => [e.type, e.data, Date.parse(e.at)]));
  const r = await verifyGame(signedGame({ keys: { ...keyLogs, [bob.id]: copied } }));
  assert.deepEqual([r.ok, r.seq], [false, 3]);
  assert.match(r.reason, new RegExp(`key ${alice.key.keyId} is in the key logs of player ${alice.id} and of player ${bob.id}`));
});

test('a replay of a signed action is named', async () => {
  const game = signedGame();
  // alice leaves and comes back: the operator replays her first registration's signature.
  const leave = { action: 'leave', idempotencyKey: 'leave-a', keyId: alice.key.keyId, signedAt: game.at,
    signature: sign(alice.key, { action: 'leave', player: alice.id, lobbyId, gameId, payload: {}, idempotencyKey: 'leave-a', signedAt: game.at }) };
  game.data.splice(2, 0,
    ['player_left', { player: alice.id, players: 0, pot: 0, auth: leave }],
    ['player_registered', { ...game.data[1][1], auth: { ...game.data[1][1].auth } }]);
  const r = await verifyGame(game);
  assert.deepEqual([r.ok, r.seq, r.through], [false, 4, 3]);
  assert.match(r.reason, /a replay of event 2 \(the same player, action and idempotency key "reg-a"\)/);
});

test('an unsigned action is a failure when its player held a key, counted when not', async () => {
  // The operator writes a registration in alice's name with no signature at all.
  const game = signedGame();
  delete game.data[1][1].auth;
  const r = await verifyGame(game);
  assert.deepEqual([r.ok, r.seq], [false, 2]);
  assert.match(r.reason, new RegExp(`player_registered of player ${alice.id}: unsigned, though the player held key ${alice.key.keyId} \\(key event 1\\)`));

  // carol has no key (the server's keys optional): her unsigned registration is counted.
  const open = signedGame();
  open.data.splice(3, 0, ['player_registered', { player: carol.id, order: 2, players: 3, pot: 3 * BET, deadline: 0 }]);
  const r2 = await verifyGame(open);
  assert.equal(r2.ok, true, r2.reason);
  assert.deepEqual(r2.signatures, { signed: 6, unsigned: 1, sealed: 0, recoveries: [], adminChecked: 0, adminUnsigned: [] });

  // carol signed up with a key after the game: an unsigned action of hers in it is dated before
  // her account existed (a lobby the operator dated back).
  const later = keyPair(6);
  const backdated = signedGame({ keys: { ...keyLogs, [carol.id]: keyChain(carol.id, [signUp(later, 'Carol', T0 + 3_600_000)]) } });
  backdated.data.splice(3, 0, ['player_registered', { player: carol.id, order: 2, players: 3, pot: 3 * BET, deadline: 0 }]);
  const r3 = await verifyGame(backdated);
  assert.deepEqual([r3.ok, r3.seq], [false, 4]);
  assert.match(r3.reason, new RegExp(`player_registered of player ${carol.id}: unsigned, dated before the player signed up with a key at `));
});

test('recoveries by the operator are reported with the player\'s actions signed by the new key', async () => {
  const keys = { ...keyLogs, [alice.id]: keyChain(alice.id, [signUp(recovered, 'Alice', T0 - 5000), recover(alice.key, [recovered.keyId], T0)]) };
  const r = await verifyGame(signedGame({ keys }));
  assert.equal(r.ok, true, r.reason);
  assert.deepEqual(r.signatures.recoveries.map((x) => [x.accountId, x.seq, x.keyId, x.reason]), [[alice.id, 2, alice.key.keyId, 'lost phone']]);
});

// ------------------------------------------------------------------ the admins' acts

// An admin who bound a key of its own (POST /v1/me/keys: its first key, signed by itself).
const admin = { id: '9a8b7c6d-0000-4000-8000-000000000001', key: keyPair(7) };
const adminKeyLog = keyChain(admin.id, [addKey(admin.id, admin.key, admin.key, T0)]);
const full = (config) => ({ ...DEFAULT_CONFIG, ...config });

// adminAuth is an act's data.auth: the admin's signature of the request, on the lobby.
function adminAuth(action, request, idempotencyKey, at, { key = admin.key, on = lobbyId } = {}) {
  const auth = { action, admin: admin.id, idempotencyKey, keyId: key.keyId, request, signedAt: at };
  if (ADMIN_ACTIONS_NAMING_GAME.has(action)) auth.gameId = gameId;
  auth.signature = hex(ed25519.sign(utf8.encode(adminMessage(ORIGIN, auth, { lobbyId: on })), key.secret));
  return auth;
}

// A lobby's admin acts, each signed: created (its name with spaces the server normalizes, its
// config with members omitted), the next config changed, its first game stopped by the admin,
// then closed during the next game's registration, which the rules stop (no admin's act).
const STOPPED = { stage: 'registration', round: 0, amount: 0, players: 0, share: 0, remainder: 0 };
function adminLobby() {
  const at = T0 + 10_000;
  const next = full({ betSize: 50, playersCountLimit: 4, ruleset: 'rps' });
  // The lobby a signed creation makes has the id its signature derives.
  const created = adminAuth('create_lobby', { config: { betSize: BET, playersCountLimit: 2 }, name: ' Friday\u00a0 night' }, 'lobby-1', at);
  const on = createdLobby(created.signature);
  const data = [
    ['lobby_created', { auth: created, name: 'Friday night', config: full({ betSize: BET }) }],
    ['game_opened', { number: 1, config: full({ betSize: BET }), rulesetHash: 'ab'.repeat(32) }],
    ['next_config_changed', { auth: adminAuth('set_next_config', { betSize: 50, playersCountLimit: 4, ruleset: 'rps', maxRounds: null }, 'next-1', at, { on }), config: next }],
    ['game_stopped', { auth: adminAuth('stop', { reason: 'a player reported cheating\n' }, 'stop-1', at, { on }), reason: 'a player reported cheating', ...STOPPED }],
    ['game_opened', { number: 2, config: next, rulesetHash: 'cd'.repeat(32) }],
    ['lobby_closed', { auth: adminAuth('close_lobby', null, 'close-1', at, { on }) }],
    ['game_stopped', { reason: 'lobby closed', ...STOPPED }],
  ];
  return { data, moves: [], keys: { [admin.id]: adminKeyLog }, at, lobby: on };
}

test('an admin\'s signed acts verify against the admin\'s own key log', async () => {
  const r = await verifyGame(adminLobby());
  assert.equal(r.ok, true, r.reason);
  assert.deepEqual(r.signatures, { signed: 0, unsigned: 0, sealed: 0, recoveries: [], adminChecked: 4, adminUnsigned: [] });
});

test('an admin\'s act the operator rewrote under a valid signature is named', async () => {
  const fails = async (lobby, seq, why) => {
    const r = await verifyGame(lobby);
    assert.deepEqual([r.ok, r.seq, r.through], [false, seq, seq - 1], r.reason);
    assert.match(r.reason, why);
  };
  const notSigned = (type) => new RegExp(`^${type} of admin ${admin.id}: not signed by the admin: `);
  // The next game's bet raised after the admin signed another.
  const bet = adminLobby();
  bet.data[2][1].config = { ...bet.data[2][1].config, betSize: 5000 };
  await fails(bet, 3, notSigned('next_config_changed'));
  await fails(bet, 3, /the signed request asks for the config \{"betSize":50,.*\}, the event shows the config \{"betSize":5000,/);
  // An omitted member takes its default, not what the operator chose.
  const unlimited = adminLobby();
  unlimited.data[2][1].config = { ...unlimited.data[2][1].config, maxRounds: 0 };
  await fails(unlimited, 3, /the event shows the config .*"maxRounds":0/);
  // The request rewritten to match: the signature no longer verifies.
  const both = adminLobby();
  both.data[2][1].config = { ...both.data[2][1].config, betSize: 5000 };
  both.data[2][1].auth.request.betSize = 5000;
  await fails(both, 3, new RegExp(`the signature by key ${admin.key.keyId} does not verify over "rps-action-v1\\\\n\\{\\\\"action\\\\":\\\\"set_next_config\\\\"`));
  const name = adminLobby();
  name.data[0][1].name = 'Friday night!';
  await fails(name, 1, /asks for the name " Friday\u00a0 night", the event shows the name "Friday night!"/);
  const reason = adminLobby();
  reason.data[3][1].reason = 'maintenance';
  await fails(reason, 4, /asks for the reason "a player reported cheating\\n", the event shows the reason "maintenance"/);
  // A close's signature put on a stop.
  const moved = adminLobby();
  moved.data[3][1].auth = moved.data[5][1].auth;
  await fails(moved, 4, /its signature is for the action "close_lobby"/);
  // One signed stop shown twice.
  const replay = adminLobby();
  replay.data[6][1] = { ...replay.data[3][1] };
  await fails(replay, 7, /a replay of event 4 \(the same admin, action and idempotency key "stop-1"\)/);
});

test('an admin\'s signature holds for its own lobby and game only', async () => {
  // A creation's message names no lobby: its lobby's id is derived from the signature, as the
  // server derives it (tournament's TestCreatedLobby pins this value).
  assert.equal(createdLobby('01'.repeat(64)), '6d529377-b5dc-8297-8d50-545d173aec51');
  assert.equal(createdLobby('zz'), null);
  // Another lobby's signed creation, same name and config, shown as this one's.
  const copied = adminLobby();
  copied.data[0][1].auth = adminAuth('create_lobby', copied.data[0][1].auth.request, 'lobby-2', copied.at);
  let r = await verifyGame(copied);
  assert.deepEqual([r.ok, r.seq], [false, 1]);
  assert.match(r.reason, /lobby_created of admin .*: not signed by the admin: its signature makes lobby .*, not this one/);
  // A stop signed for another game of the lobby (one that ended before), shown on this one.
  const moved = adminLobby();
  const other = { ...adminAuth('stop', { reason: 'a player reported cheating\n' }, 'stop-0', moved.at, { on: moved.lobby }), gameId: '00000000-0000-4000-8000-000000000008' };
  other.signature = hex(ed25519.sign(utf8.encode(adminMessage(ORIGIN, other, { lobbyId: moved.lobby })), admin.key.secret));
  moved.data[3][1].auth = other;
  r = await verifyGame(moved);
  assert.deepEqual([r.ok, r.seq], [false, 4]);
  assert.match(r.reason, /game_stopped of admin .*: not signed by the admin: its signature names game 00000000-0000-4000-8000-000000000008, not the lobby's current one/);
});

test('an admin\'s act signed by a key not in the admin\'s key log is named', async () => {
  // The operator signs with a key of its own, which no key event gave the admin.
  const forged = adminLobby();
  forged.data[2][1].auth = adminAuth('set_next_config', forged.data[2][1].auth.request, 'next-1', forged.at, { key: stranger });
  let r = await verifyGame(forged);
  assert.deepEqual([r.ok, r.seq], [false, 3]);
  assert.match(r.reason, new RegExp(`not signed by the admin: signed with key ${stranger.keyId}, which is not in the admin's key log`));
  // A player's key (in the player's key log, not the admin's).
  const players = adminLobby();
  players.data[0][1].auth = adminAuth('create_lobby', players.data[0][1].auth.request, 'lobby-1', players.at, { key: alice.key });
  r = await verifyGame(players);
  assert.deepEqual([r.ok, r.seq], [false, 1]);
  assert.match(r.reason, /which is not in the admin's key log/);
  // A key the admin retired before the act.
  const retired = adminLobby();
  retired.keys[admin.id] = keyChain(admin.id, [addKey(admin.id, admin.key, admin.key, T0), addKey(admin.id, phone, admin.key, T0 + 1),
    retireKey(admin.id, admin.key.keyId, phone, T0 + 2)]);
  r = await verifyGame(retired);
  assert.deepEqual([r.ok, r.seq], [false, 1]);
  assert.match(r.reason, /not signed by the admin: signed with key .*, retired before it \(key event 3\)/);
  // A signature of another lobby's act.
  const elsewhere = adminLobby();
  elsewhere.data[5][1].auth = adminAuth('close_lobby', null, 'close-1', elsewhere.at, { on: '00000000-0000-4000-8000-000000000009' });
  r = await verifyGame(elsewhere);
  assert.deepEqual([r.ok, r.seq], [false, 6]);
  assert.match(r.reason, /lobby_closed of admin .*: not signed by the admin: the signature by key .* does not verify/);
});

test('an admin\'s unsigned act is counted as the operator\'s word, not a failure', async () => {
  const lobby = adminLobby();
  delete lobby.data[0][1].auth;
  delete lobby.data[3][1].auth;
  const r = await verifyGame(lobby);
  assert.equal(r.ok, true, r.reason);
  assert.deepEqual([r.signatures.adminChecked, r.signatures.adminUnsigned], [2, [1, 4]]);
});

test('a request is read as the server reads it: omitted or null members take their defaults', () => {
  assert.deepEqual(configOfRequest(null), DEFAULT_CONFIG);
  assert.deepEqual(configOfRequest({ betSize: 5, playersCountLimit: 3, maxRounds: null }), full({ betSize: 5, playersCountLimit: 3 }));
  // Go's encoding/json matches a member's name case-insensitively.
  assert.deepEqual(configOfRequest({ BetSize: 7, playersCountLimit: 2, '\u017ftartWhenFull': false }), full({ betSize: 7, startWhenFull: false }));
  assert.equal(configOfRequest({ betSize: '5' }), null);
  assert.equal(configOfRequest({ betSize: 1.5 }), null);
  assert.equal(configOfRequest([]), null);
  assert.equal(lobbyName('\u3000Ｆriday  \u2003night '), 'Friday night');
  assert.equal(requestProblem('stop', { reason: ' maintenance\n\u0085' }, { reason: 'maintenance' }), null);
  assert.equal(requestProblem('create_lobby', { name: 'Friday' }, { name: 'Friday', config: DEFAULT_CONFIG }),
    'the signed request asks for the config null, the event shows the config ' + JSON.stringify(DEFAULT_CONFIG));
  assert.equal(requestProblem('create_lobby', { name: 'Friday', config: null }, { name: 'Friday', config: DEFAULT_CONFIG }), null);
});

test('a recovery signed by an admin\'s key names that key; one the admin did not sign fails the player\'s key log', async () => {
  // The admin recovers alice's account to the vectors' key, signing the request with signer's key.
  const signedRecovery = (signer, request = { publicKey: alice.key.publicKey, reason: 'lost phone' }) => {
    const [type, data, ms] = recover(alice.key, [recovered.keyId], T0);
    const auth = { action: 'recover_keys', admin: admin.id, idempotencyKey: 'recover-1', keyId: signer.keyId, request, signedAt: ms };
    auth.signature = hex(ed25519.sign(utf8.encode(adminMessage(ORIGIN, auth, { account: alice.id })), signer.secret));
    return [type, { ...data, auth }, ms];
  };
  const withRecovery = (recovery) => ({ ...keyLogs, [admin.id]: adminKeyLog, [alice.id]: keyChain(alice.id, [signUp(recovered, 'Alice', T0 - 5000), recovery]) });
  const r = await verifyGame(signedGame({ keys: withRecovery(signedRecovery(admin.key)) }));
  assert.equal(r.ok, true, r.reason);
  assert.deepEqual(r.signatures.recoveries.map((x) => [x.accountId, x.seq, x.signedBy]), [[alice.id, 2, admin.key.keyId]]);

  const forged = await verifyGame(signedGame({ keys: withRecovery(signedRecovery(stranger)) }));
  assert.deepEqual([forged.ok, forged.seq], [false, 2]);
  assert.match(forged.reason, new RegExp(`the key log of player ${alice.id} fails at its key event 2: its recovery is not signed by admin ${admin.id}: ` +
    `signed with key ${stranger.keyId}, which is not in the admin's key log`));
  const otherKey = await verifyGame(signedGame({ keys: withRecovery(signedRecovery(admin.key, { publicKey: phone.publicKey, reason: 'lost phone' })) }));
  assert.deepEqual([otherKey.ok, otherKey.seq], [false, 2]);
  assert.match(otherKey.reason, /its recovery is not signed by admin .*: the signed request asks for the key "[0-9a-f]{64}", the event shows the key/);
});

test('checkRecoveries, as the profile calls it on one key log, names the admin key of each signed recovery', async () => {
  // alice's log: her sign-up, a recovery the operator made unsigned, then one the admin signed.
  const [type, data] = recover(phone, [recovered.keyId], T0);
  const unsigned = [type, data, T0];
  const request = { publicKey: alice.key.publicKey, reason: 'lost phone' };
  const signedBy = (signer) => {
    const auth = { action: 'recover_keys', admin: admin.id, idempotencyKey: 'recover-2', keyId: signer.keyId, request, signedAt: T0 + 1 };
    auth.signature = hex(ed25519.sign(utf8.encode(adminMessage(ORIGIN, auth, { account: alice.id })), signer.secret));
    return ['keys_recovered', { ...recover(alice.key, [phone.keyId], T0 + 1)[1], auth }, T0 + 1];
  };
  const adminLog = async (id) => {
    assert.equal(id, admin.id);
    return verifyKeyLog(id, adminKeyLog, ORIGIN);
  };
  const log = await verifyKeyLog(alice.id, keyChain(alice.id, [signUp(recovered, 'Alice', T0 - 5000), unsigned, signedBy(admin.key)]), ORIGIN);
  await checkRecoveries(alice.id, log, ORIGIN, adminLog);
  assert.deepEqual(log.recoveries.map((r) => [r.seq, r.signedBy]), [[2, undefined], [3, admin.key.keyId]]);

  const forged = await verifyKeyLog(alice.id, keyChain(alice.id, [signUp(recovered, 'Alice', T0 - 5000), unsigned, signedBy(stranger)]), ORIGIN);
  await assert.rejects(checkRecoveries(alice.id, forged, ORIGIN, adminLog), (err) => err instanceof KeyLogFailure && err.seq === 3 &&
    err.message === `its recovery is not signed by admin ${admin.id}: signed with key ${stranger.keyId}, which is not in the admin's key log`);
});

// schemaBlock is the text of a component schema of openapi.yaml (the spec's indentation: four
// spaces before a schema's name).
function schemaBlock(spec, name) {
  const start = spec.indexOf(`\n    ${name}:\n`);
  assert.ok(start >= 0, `openapi.yaml has the schema ${name}`);
  const rest = spec.slice(start + name.length + 7);
  return rest.slice(0, rest.search(/\n {4}\S/));
}

test('the defaults a request\'s omitted config members take are the contract\'s, member for member', () => {
  const spec = readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8');
  const input = schemaBlock(spec, 'GameConfigInput');
  const scalar = (text) => (/^-?\d+$/.test(text) ? Number(text) : text === 'true' ? true : text === 'false' ? false : text);
  // Each property (eight spaces in) and its default (ten spaces in), or the default of the schema
  // it refers to (six spaces in there).
  const members = [];
  for (const line of input.split('\n')) {
    const property = line.match(/^ {8}(\w+):$/);
    if (property) members.push([property[1], undefined]);
    const given = line.match(/^ {10}default: (.+)$/) ?? line.match(/^ {10}\$ref: '#\/components\/schemas\/(\w+)'$/);
    if (!given || !members.length) continue;
    const value = line.includes('$ref') ? schemaBlock(spec, given[1]).match(/\n {6}default: (.+)/)?.[1] : given[1];
    if (value !== undefined) members.at(-1)[1] = scalar(value.trim());
  }
  assert.deepEqual(members.map(([name]) => name), Object.keys(DEFAULT_CONFIG), 'the config\'s members');
  for (const [name, value] of members) {
    // betSize and playersCountLimit are required (no default in the contract): Go's zero value and
    // tournament.MinPlayers stand for a hostile request that omits them.
    if (value !== undefined) assert.equal(DEFAULT_CONFIG[name], value, name);
  }
  assert.deepEqual(members.filter(([, v]) => v === undefined).map(([n]) => n), ['betSize', 'playersCountLimit']);
});

test('a stop that gives a reason of the rules\' must be where the rules stop a game', async () => {
  // A game whose round 1 nobody commits in: the rules stop it once its moves stage has expired
  // maxExtensions (2) times, after an outage moved its deadline by 5 seconds.
  const config = full({ betSize: BET, maxExtensions: 2, moveTimeoutMs: 10_000, maxRounds: 3 });
  const at = T0 + 10_000;
  const due = at + 5000 + 2 * 10_000;
  const idle = (reason, stopAt, ...before) => ({ data: [
    ['lobby_created', { name: 'Idle', config }],
    ['game_opened', { number: 1, config, rulesetHash: 'ab'.repeat(32) }],
    ['player_registered', { player: carol.id, order: 0, players: 1, pot: BET, deadline: 0 }],
    ['round_started', { round: 1, players: 1, deadline: at }],
    ['clock_shifted', { gapMs: 5000 }],
    ...before,
    ['stage_extended', { stage: 'moves', round: 1, deadline: at + 15_000 }, due - 10_000],
    ['game_stopped', { ...STOPPED, stage: 'moves', round: 1, amount: BET, players: 1, share: BET, reason }, stopAt],
  ], moves: [], keys: keyLogs, at });
  const fine = await verifyGame(idle('max_extensions', due));
  assert.equal(fine.ok, true, fine.reason);
  assert.deepEqual([fine.signatures.adminChecked, fine.signatures.adminUnsigned], [0, [1]]);

  const fails = async (lobby, why) => {
    const r = await verifyGame(lobby);
    assert.deepEqual([r.ok, r.seq], [false, lobby.data.length], r.reason);
    assert.match(r.reason, /^game_stopped: its reason "[a-z_ ]+" is the rules', but the rules make no such stop here \(/);
    assert.match(r.reason, why);
  };
  // An admin's unsigned stop given as the rules': before the stage has expired twice, in a stage
  // a player acted in, in a round before the game's last, or a lobby closed stop without its close.
  await fails(idle('max_extensions', due - 1), /a max_extensions stop in the moves stage at .*expired 2 times \(at 2026-01-01T12:00:35.000Z\)/);
  await fails(idle('max_extensions', due, ['move_committed', { player: carol.id, round: 1, committed: 1 }]), /in the moves stage, which 1 player acted in/);
  await fails(idle('max_rounds', due), /a max_rounds stop in round 1 of a game of at most 3 rounds/);
  await fails(idle('lobby closed', due), /a lobby closed stop in the moves stage after stage_extended/);
});
