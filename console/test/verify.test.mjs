// The console's hashing and canonical encoding against the vectors the Go and Kotlin code check.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { canonicalEvent, commitmentOf, configChecker, eventHash, sealedDigest, verifyLog, ZERO_HASH } from '../assets/js/verify.js';

const repo = new URL('../../', import.meta.url);
const events = JSON.parse(readFileSync(new URL('store/testdata/events.json', repo))).events;
const storeVectors = JSON.parse(readFileSync(new URL('store/testdata/events.json', repo)));
const engineVectors = JSON.parse(readFileSync(new URL('engine/testdata/vectors.json', repo)));

async function* each(list) { yield* list; }
const noRounds = () => { throw new Error('no stage events in these vectors'); };

test('events: canonical text and chained hashes match the vectors', () => {
  let prev = ZERO_HASH;
  for (const e of events) {
    assert.equal(canonicalEvent(e), e.canonical, `canonical of event ${e.seq}`);
    assert.equal(e.prevHash, prev);
    assert.equal(eventHash(prev, e), e.hash, `hash of event ${e.seq}`);
    prev = e.hash;
  }
});

test('digests of sealed values match the vectors, salted or not', () => {
  assert.ok(storeVectors.digests.some((d) => d.salt), 'the vectors have a salted digest');
  for (const d of storeVectors.digests) {
    assert.equal(sealedDigest(d.values ?? [], d.salt), d.digest);
    assert.equal(sealedDigest([...(d.values ?? [])].reverse(), d.salt), d.digest, 'order of input does not matter');
    if (d.salt) {
      assert.notEqual(sealedDigest(d.values ?? []), d.digest, 'the salt is part of the digest');
      assert.notEqual(sealedDigest(d.values ?? [], '5a'.repeat(32)), d.digest, 'another salt gives another digest');
    }
  }
});

test('commitments match the engine vectors', () => {
  for (const c of engineVectors.commitments) assert.equal(commitmentOf(c.preimage), c.commitment, c.preimage);
});

test('verifyLog passes the vector log and names the first altered event', async () => {
  assert.deepEqual(await verifyLog(each(events), noRounds), { ok: true, through: events.length });
  const altered = structuredClone(events);
  altered[2].data.pot += 1;
  const result = await verifyLog(each(altered), noRounds);
  assert.equal(result.ok, false);
  assert.equal(result.seq, 3);
  assert.equal(result.through, 2);
  assert.match(result.reason, /hash does not match/);
});

test('verifyLog refuses a gap and a broken link', async () => {
  const gap = events.filter((e) => e.seq !== 2);
  assert.equal((await verifyLog(each(gap), noRounds)).seq, 3);
  const relinked = structuredClone(events);
  relinked[1].prevHash = ZERO_HASH;
  assert.match((await verifyLog(each(relinked), noRounds)).reason, /prevHash/);
});

test('verifyLog checks stage digests and reveals against the round transcript', async () => {
  const lobbyId = '5a1f0c1e-8d4b-4c55-9a43-2f1d0e7b6c11';
  const gameId = '9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b';
  const moves = [
    { accountId: '2b9c7e4a-3f61-4d2a-9c0e-8a5b1d7f3e20', reveal: '0pass12', move: 0 },
    { accountId: '0c1d2e3f-4a5b-4c6d-8e7f-901a2b3c4d5e', reveal: '2pass12', move: 2 },
  ].map((m) => ({ ...m, committed: true, revealed: true, commitment: commitmentOf(m.reveal) }));
  const chain = (datas) => {
    let prevHash = ZERO_HASH;
    return datas.map(([type, data], i) => {
      const e = { seq: i + 1, type, lobbyId, gameId, at: '2025-01-01T12:00:00.000Z', data, prevHash };
      e.hash = eventHash(prevHash, e);
      prevHash = e.hash;
      return e;
    });
  };
  const salt = '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f';
  const commitments = moves.map((m) => ({ player: m.accountId, value: m.commitment }));
  const resolved = { round: 1, resolution: 'classic', revealed: 2, present: 5, counts: [1, 0, 1, 0, 0], survivors: 1, remaining: 1,
    digest: sealedDigest(moves.map((m) => ({ player: m.accountId, value: m.reveal }))) };
  const log = chain([
    ['moves_closed', { round: 1, committed: 2, eliminated: 0, deadline: 0, digest: sealedDigest(commitments, salt) }],
    ['round_resolved', { ...resolved, salt }],
  ]);
  const transcript = (list) => async (g, round) => {
    assert.deepEqual([g, round], [gameId, 1]);
    return list;
  };
  assert.deepEqual(await verifyLog(each(log), transcript(moves)), { ok: true, through: 2 });

  const otherCommitment = moves.map((m, i) => (i ? { ...m, commitment: commitmentOf('2other') } : m));
  const r1 = await verifyLog(each(log), transcript(otherCommitment));
  assert.deepEqual([r1.seq, r1.through], [2, 1]);
  assert.match(r1.reason, /commitments in the transcript and the salt do not match the digest of moves_closed \(event 1\)/);

  // The salt round_resolved reveals is the one moves_closed's digest was made with: another one,
  // none, or one that is not hex fails there.
  for (const [wrong, why] of [[{ ...resolved, salt: '5a'.repeat(32) }, /do not match the digest/], [resolved, /do not match the digest/],
    [{ ...resolved, salt: salt.toUpperCase() }, /salt is not 64 lower-case hex/]]) {
    const r = await verifyLog(each(chain([['moves_closed', log[0].data], ['round_resolved', wrong]])), transcript(moves));
    assert.deepEqual([r.ok, r.seq, r.through], [false, 2, 1], JSON.stringify(wrong.salt));
    assert.match(r.reason, why);
  }
  // A log older than salts: an unsalted digest and a round_resolved without salt verify.
  const legacy = chain([['moves_closed', { ...log[0].data, digest: sealedDigest(commitments) }], ['round_resolved', resolved]]);
  assert.deepEqual(await verifyLog(each(legacy), transcript(moves)), { ok: true, through: 2 });
  // A game ending before its round resolves reveals the salt in game_finished or game_stopped.
  for (const [type, data] of [['game_finished', { winner: moves[0].accountId, amount: 20, round: 1, salt }],
    ['game_stopped', { reason: 'test', stage: 'reveal', round: 1, amount: 20, players: 2, share: 10, remainder: 0, salt }]]) {
    const ended = chain([['moves_closed', log[0].data], [type, data]]);
    assert.deepEqual(await verifyLog(each(ended), transcript(moves)), { ok: true, through: 2 }, type);
    const forged = chain([['moves_closed', log[0].data], [type, { ...data, salt: '5a'.repeat(32) }]]);
    assert.match((await verifyLog(each(forged), transcript(moves))).reason, /do not match the digest of moves_closed/, type);
  }

  const forgedReveal = moves.map((m, i) => (i ? { ...m, reveal: '3pass12', move: 3 } : m));
  const r2 = await verifyLog(each(log), transcript(forgedReveal));
  assert.equal(r2.seq, 2);
  assert.match(r2.reason, /does not match its commitment/);

  const missing = moves.slice(0, 1);
  assert.match((await verifyLog(each(log), transcript(missing))).reason, /1 commitments, the event says 2/);

  // While the reveal stage is open the commitments stay sealed and the salt unknown: moves_closed
  // is checked once the round resolves (or its game ends), and a log that ends before verifies
  // with the round named, without reading the transcript.
  assert.deepEqual(await verifyLog(each(log.slice(0, 1)), noRounds), { ok: true, through: 1, sealed: [{ gameId, round: 1 }] });
  const sealed = moves.map((m) => ({ ...m, commitment: null, revealed: false, reveal: null, move: null }));
  const stillSealed = await verifyLog(each(log), transcript(sealed));
  assert.deepEqual([stillSealed.ok, stillSealed.seq, stillSealed.through], [false, 2, 1]);
  assert.match(stillSealed.reason, /commitment of .* is not public/);
});

test('a game opens with the config the admin\'s acts gave it, and none once the lobby closed', () => {
  const check = (...events) => {
    const next = configChecker();
    return events.map(([type, data]) => next({ type, data }));
  };
  const lobby = ['lobby_created', { name: 'x', config: { betSize: 10, playersCountLimit: 2 } }];
  const game = (betSize) => ['game_opened', { number: 1, config: { betSize, playersCountLimit: 2, maxRounds: 100 } }];
  // A member the lobby's config lacks (written before it existed) is not compared.
  assert.deepEqual(check(lobby, game(10)), [null, null]);
  assert.match(check(lobby, game(500))[1], /the game opened with betSize 500, not the lobby's config's 10/);
  const next = ['next_config_changed', { config: { betSize: 20, playersCountLimit: 2 } }];
  assert.deepEqual(check(lobby, game(10), next, game(20), game(20)), [null, null, null, null, null]);
  assert.match(check(lobby, game(10), next, game(10))[3], /betSize 10, not the next config set during the previous game's 20/);
  const closed = ['lobby_closed', {}];
  assert.match(check(lobby, game(10), closed, game(10))[3], /a game opened once the lobby closed/);
  assert.match(check(lobby, game(10), closed, closed)[3], /the lobby closed a second time/);
  assert.match(check(lobby, game(10), closed, next)[3], /a next config set once the lobby closed/);
  assert.match(check(['lobby_created', { name: 'x', config: null }])[0], /lobby_created has no config/);
});

test('an event whose data is not an object fails at that event', async () => {
  const e = { seq: 1, type: 'lobby_closed', lobbyId: '0b8e7c6d-5a4f-4e3d-9c2b-1a0f9e8d7c6b', gameId: null, at: '2026-11-18T11:11:40.000Z', data: null, prevHash: ZERO_HASH };
  e.hash = eventHash(ZERO_HASH, e);
  const r = await verifyLog(each([e]), async () => []);
  assert.deepEqual([r.ok, r.seq, r.reason], [false, 1, 'its data is not a JSON object']);
});
