// The console's hashing and canonical encoding against the vectors the Go and Kotlin code check.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { canonicalEvent, commitmentOf, eventHash, sealedDigest, verifyLog, ZERO_HASH } from '../assets/js/verify.js';

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

test('digests of sealed values match the vectors', () => {
  for (const d of storeVectors.digests) {
    assert.equal(sealedDigest(d.values ?? []), d.digest);
    assert.equal(sealedDigest([...(d.values ?? [])].reverse()), d.digest, 'order of input does not matter');
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
  const log = chain([
    ['moves_closed', { round: 1, committed: 2, eliminated: 0, deadline: 0,
      digest: sealedDigest(moves.map((m) => ({ player: m.accountId, value: m.commitment }))) }],
    ['round_resolved', { round: 1, resolution: 'classic', revealed: 2, present: 5, counts: [1, 0, 1, 0, 0], survivors: 1, remaining: 1,
      digest: sealedDigest(moves.map((m) => ({ player: m.accountId, value: m.reveal }))) }],
  ]);
  const transcript = (list) => async (g, round) => {
    assert.deepEqual([g, round], [gameId, 1]);
    return list;
  };
  assert.deepEqual(await verifyLog(each(log), transcript(moves)), { ok: true, through: 2 });

  const otherCommitment = moves.map((m, i) => (i ? { ...m, commitment: commitmentOf('2other') } : m));
  const r1 = await verifyLog(each(log), transcript(otherCommitment));
  assert.deepEqual([r1.seq, r1.through], [1, 0]);
  assert.match(r1.reason, /commitments in the transcript do not match/);

  const forgedReveal = moves.map((m, i) => (i ? { ...m, reveal: '3pass12', move: 3 } : m));
  const r2 = await verifyLog(each(log), transcript(forgedReveal));
  assert.equal(r2.seq, 2);
  assert.match(r2.reason, /does not match its commitment/);

  const missing = moves.slice(0, 1);
  assert.match((await verifyLog(each(log), transcript(missing))).reason, /1 commitments, the event says 2/);

  // While the reveal stage is open the commitments stay sealed: moves_closed is checked once the
  // round resolves (or its game ends), and a log that ends before verifies with the round named.
  const sealed = moves.map((m) => ({ ...m, commitment: null, revealed: false, reveal: null, move: null }));
  assert.deepEqual(await verifyLog(each(log.slice(0, 1)), transcript(sealed)),
    { ok: true, through: 1, sealed: [{ gameId, round: 1 }] });
  let reads = 0;
  const resolvesLater = async (g, round) => (reads++ ? moves : sealed);
  assert.deepEqual(await verifyLog(each(log), resolvesLater), { ok: true, through: 2 });
  const stillSealed = await verifyLog(each(log), transcript(sealed));
  assert.deepEqual([stillSealed.ok, stillSealed.seq, stillSealed.through], [false, 2, 1]);
  assert.match(stillSealed.reason, /commitment of .* is not public/);
  reads = 0;
  const forgedLater = async (g, round) => (reads++ ? otherCommitment : sealed);
  const r3 = await verifyLog(each(log), forgedLater);
  assert.deepEqual([r3.seq, r3.through], [2, 1]);
  assert.match(r3.reason, /commitments in the transcript do not match the digest of moves_closed \(event 1\)/);
});
