// Re-checks a lobby's log with nothing but its public events and transcripts: the hash chain
// (blake2b-256 over RFC 8785 canonical JSON), every stage digest against the round transcript,
// every reveal against its commitment, and (with a signature checker, keys.js) every player's
// signature. Pure functions over data, so node's test runner checks them against the same vectors
// as the Go and Kotlin code.
import { blake2b } from '../vendor/noble-hashes/blake2.js';
import canonicalize from '../vendor/canonicalize/canonicalize.js';

const utf8 = new TextEncoder();
export const ZERO_HASH = '0'.repeat(64);

export function toHex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

function fromHex(hex) {
  if (!/^[0-9a-f]{64}$/.test(hex)) throw new Error(`not 64 lower-case hex characters: ${hex}`);
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

const blake256 = (bytes) => toHex(blake2b(bytes, { dkLen: 32 }));

// The commitment of a reveal string: blake2b-256 of its UTF-8.
export function commitmentOf(reveal) {
  return blake256(utf8.encode(reveal));
}

// The canonical text an event's hash covers.
export function canonicalEvent(e) {
  return canonicalize({ seq: e.seq, type: e.type, lobbyId: e.lobbyId, gameId: e.gameId, at: e.at, data: e.data });
}

// hash = blake2b-256(prevHash || canonical), in lower-case hex.
export function eventHash(prevHash, e) {
  return chainHash(prevHash, canonicalEvent(e));
}

// chainHash links a canonical text to the hash before it, as lobby events and key events are.
export function chainHash(prevHash, canonical) {
  const prev = fromHex(prevHash);
  const body = utf8.encode(canonical);
  const input = new Uint8Array(prev.length + body.length);
  input.set(prev);
  input.set(body, prev.length);
  return blake256(input);
}

// The digest of a stage's sealed values: blake2b-256 of the canonical array of {player, value},
// sorted bytewise by player id (ids are ASCII, so code-unit order is byte order). With a salt (64
// hex characters: moves_closed's digest of the commitments), blake2b-256(salt || array): the salt
// is revealed with the commitments, by the event that makes them public.
export function sealedDigest(values, salt) {
  const sorted = [...values].sort((a, b) => (a.player < b.player ? -1 : a.player > b.player ? 1 : 0));
  const array = utf8.encode(canonicalize(sorted.map(({ player, value }) => ({ player, value }))));
  if (salt == null) return blake256(array);
  const prefix = fromHex(salt);
  const input = new Uint8Array(prefix.length + array.length);
  input.set(prefix);
  input.set(array, prefix.length);
  return blake256(input);
}

// Failure names the event a check fails at and why.
export class Failure extends Error {
  constructor(seq, reason) {
    super(reason);
    this.seq = seq;
  }
}

// Checks a moves_closed event against its round's public transcript and the salt revealed with the
// commitments by event at (undefined in logs older than salts: the digest is then unsalted).
function checkCommitments(e, moves, at, salt) {
  const { round } = e.data;
  if (salt != null && !/^[0-9a-f]{64}$/.test(salt)) throw new Failure(at, `round ${round}: the salt is not 64 lower-case hex characters`);
  const committed = moves.filter((m) => m.committed);
  for (const m of committed) {
    if (m.commitment == null) throw new Failure(at, `round ${round}: the commitment of ${m.accountId} is not public`);
  }
  if (committed.length !== e.data.committed) {
    throw new Failure(at, `round ${round}: the transcript has ${committed.length} commitments, the event says ${e.data.committed}`);
  }
  const digest = sealedDigest(committed.map((m) => ({ player: m.accountId, value: m.commitment })), salt);
  if (digest !== e.data.digest) {
    throw new Failure(at, `round ${round}: the commitments in the transcript and the salt do not match the digest of moves_closed (event ${e.seq})`);
  }
}

// Checks a round_resolved event against its round's public transcript.
function checkReveals(e, moves) {
  const { round } = e.data;
  const revealed = moves.filter((m) => m.revealed);
  for (const m of revealed) {
    if (m.reveal == null) throw new Failure(e.seq, `round ${round}: the reveal of ${m.accountId} is not public`);
    if (commitmentOf(m.reveal) !== m.commitment) {
      throw new Failure(e.seq, `round ${round}: the reveal of ${m.accountId} does not match its commitment`);
    }
    if (m.move !== m.reveal.charCodeAt(0) - 48) throw new Failure(e.seq, `round ${round}: the move of ${m.accountId} is not its reveal's first digit`);
  }
  if (revealed.length !== e.data.revealed) {
    throw new Failure(e.seq, `round ${round}: the transcript has ${revealed.length} reveals, the event says ${e.data.revealed}`);
  }
  const counts = e.data.counts.map(() => 0);
  for (const m of revealed) counts[m.move] = (counts[m.move] ?? 0) + 1;
  if (counts.join() !== e.data.counts.join()) throw new Failure(e.seq, `round ${round}: the moves in the transcript do not match the event's counts`);
  const digest = sealedDigest(revealed.map((m) => ({ player: m.accountId, value: m.reveal })));
  if (digest !== e.data.digest) throw new Failure(e.seq, `round ${round}: the reveals in the transcript do not match the event's digest`);
}

// verifyLog checks a whole log. events: an async iterable of events in order; roundMoves(gameId,
// round): every move of a round's transcript; signatures (optional): a checker of players'
// signatures (keys.js signatureChecker), which sees every event once its hash checks out.
// Returns {ok: true, through: N} or {ok: false, seq, reason, through: the last good event before
// seq}, with the checker's summary as signatures when there is one. A round's commitments stay
// sealed until it resolves (or its game ends), and its moves_closed digest is salted with a salt
// revealed then (by round_resolved, game_finished or game_stopped): it is checked then, and a log
// that ends before verifies with sealed: [{gameId, round}] naming the rounds whose commitments
// are not checked yet.
// configChecker follows what a lobby's admin acts say its games are to be (rpsverify's
// lobbyConfigs): the first game opens with the lobby's config, each next one with the next config
// set while the game before it ran, or else that game's own; no game opens and no next config is
// set once the lobby closed, which closes once. A member the expected config lacks is not
// compared (a config written before that member existed). It returns why an event breaks this,
// or null.
export function configChecker() {
  let created = null;
  let last = null;
  let pending = null;
  let closed = false;
  const differs = (want, got) => Object.keys(want).find((k) => !(k in got) || canonicalize(want[k]) !== canonicalize(got[k]));
  return (e) => {
    const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
    if (['lobby_created', 'next_config_changed', 'game_opened'].includes(e.type) && !isObject(e.data.config)) return `${e.type} has no config`;
    switch (e.type) {
      case 'lobby_created':
        created = e.data.config;
        return null;
      case 'next_config_changed':
        if (closed) return 'a next config set once the lobby closed';
        pending = e.data.config;
        return null;
      case 'lobby_closed':
        if (closed) return 'the lobby closed a second time';
        closed = true;
        return null;
      case 'game_opened': {
        if (closed) return 'a game opened once the lobby closed';
        const [want, from] = pending ? [pending, 'the next config set during the previous game'] : last ? [last, 'the previous game\'s config'] : [created, 'the lobby\'s config'];
        const member = want && differs(want, e.data.config);
        last = e.data.config;
        pending = null;
        return member ? `the game opened with ${member} ${canonicalize(e.data.config[member] ?? null)}, not ${from}'s ${canonicalize(want[member])}` : null;
      }
      default:
        return null;
    }
  };
}

export async function verifyLog(events, roundMoves, signatures = null) {
  const configs = configChecker();
  let prevHash = ZERO_HASH;
  let prevAt = -Infinity;
  let through = 0;
  const sealed = new Map(); // `${gameId}/${round}` -> its moves_closed, waiting for the commitments
  const checkSealed = async (e, round) => {
    for (const [key, closed] of sealed) {
      if (closed.gameId !== e.gameId || (round != null && closed.data.round !== round)) continue;
      sealed.delete(key);
      checkCommitments(closed, await roundMoves(closed.gameId, closed.data.round), e.seq, e.data.salt);
    }
  };
  try {
    for await (const e of events) {
      if (e.seq !== through + 1) throw new Failure(e.seq, `expected event ${through + 1} next, got ${e.seq}`);
      if (e.prevHash !== prevHash) throw new Failure(e.seq, 'its prevHash is not the previous event\'s hash');
      let hash;
      try {
        hash = eventHash(prevHash, e);
      } catch (err) {
        throw new Failure(e.seq, `it cannot be encoded canonically: ${err.message}`);
      }
      if (hash !== e.hash) throw new Failure(e.seq, 'its hash does not match its content');
      // Whether a player held a key when it acted is read from these instants: out of order, an
      // unsigned action appended now could be dated before the player's first key.
      const at = Date.parse(e.at);
      if (!(at >= prevAt)) throw new Failure(e.seq, `it is dated ${e.at}, before event ${e.seq - 1}`);
      prevAt = at;
      if (e.data === null || typeof e.data !== 'object' || Array.isArray(e.data)) throw new Failure(e.seq, 'its data is not a JSON object');
      const terms = configs(e);
      if (terms) throw new Failure(e.seq, terms);
      if (e.type === 'moves_closed') {
        sealed.set(`${e.gameId}/${e.data.round}`, e);
      } else if (e.type === 'round_resolved') {
        await checkSealed(e, e.data.round);
        checkReveals(e, await roundMoves(e.gameId, e.data.round));
      } else if (e.type === 'game_finished' || e.type === 'game_stopped') {
        await checkSealed(e, null);
      }
      await signatures?.event(e);
      prevHash = e.hash;
      through = e.seq;
    }
  } catch (err) {
    // A signature over a sealed value fails when its round is public, after the action's event.
    const failed = { ok: false, seq: err.seq, reason: err.message, through: Math.min(through, err.seq - 1) };
    if (err instanceof Failure) return signatures ? { ...failed, signatures: await signatures.summary() } : failed;
    throw err;
  }
  const result = sealed.size === 0
    ? { ok: true, through }
    : { ok: true, through, sealed: [...sealed.values()].map((e) => ({ gameId: e.gameId, round: e.data.round })) };
  return signatures ? { ...result, signatures: await signatures.summary() } : result;
}
