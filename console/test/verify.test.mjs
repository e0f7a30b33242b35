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
