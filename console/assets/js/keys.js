// Who signed what: a player's key log (one hash chain per account: keys added, retired, and
// recovered by the operator) and the check of every player's signed action in a lobby's log
// against the key the player had at that point of it (spec-31, "Signed actions in the lobby log").
// Pure functions over data, checked by node's test runner.
import canonicalize from '../vendor/canonicalize/canonicalize.js';
import { adminActOf, requestProblem, rulesStops } from './adminacts.js';
import {
  ADMIN_ACTIONS_NAMING_GAME, actionMessage, actionPayload, adminMessage, createdLobby, keyIdOf, sealSignature, signedAtProblem, verifySignature,
} from './signed.js';
import { chainHash, Failure, ZERO_HASH } from './verify.js';

const HEX64 = /^[0-9a-f]{64}$/;
// The log's time format (tournament.FormatTime): UTC, always three digits of milliseconds. The
// hash covers this text, so an instant written otherwise is not the one hashed.
const LOG_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

// KeyLogFailure names the key event an account's key log fails at (null: the log holds, but the
// server's list of the account's keys does not match it) and why.
export class KeyLogFailure extends Error {
  constructor(seq, reason) {
    super(reason);
    this.seq = seq;
  }
}

// keyEventHash: blake2b-256(prevHash || RFC 8785 of {accountId, at, data, seq, type}).
export function keyEventHash(prevHash, e) {
  return chainHash(prevHash, canonicalize({ accountId: e.accountId, at: e.at, data: e.data, seq: e.seq, type: e.type }));
}

// verifyKeyLog checks an account's key log (its KeyEvents from seq 1, in order) and returns the
// keys it gives the account, {keys: Map keyId -> {keyId, publicKey, addedSeq, addedAt, retiredSeq,
// retiredAt, recovery, viaRecovery}} (instants in Unix ms), and its recoveries by the operator,
// [{seq, at, keyId, retired, admin, reason}]. A key added is signed by a key the account had (its
// first key by itself); a key retired by an active key; a recovery carries no player's signature:
// it is the operator's word, reported as such, and so is every key added by a key that came from
// one (viaRecovery). listed (optional): the server's list of the account's keys
// (AccountKey), which must be what the log gives, so that a key put on the account without a key
// event is named. Throws KeyLogFailure.
export async function verifyKeyLog(accountId, events, origin, listed = null) {
  const keys = new Map();
  const recoveries = [];
  const activeKey = (seq, keyId, role) => {
    const k = keys.get(keyId);
    if (!k) throw new KeyLogFailure(seq, `its ${role} ${keyId} is not a key of this account`);
    if (k.retiredSeq != null) throw new KeyLogFailure(seq, `its ${role} ${keyId} was retired by key event ${k.retiredSeq}`);
    return k;
  };
  const newKey = (seq, d) => {
    if (!HEX64.test(d.publicKey ?? '') || keyIdOf(d.publicKey) !== d.keyId) {
      throw new KeyLogFailure(seq, `key ${d.keyId} is not the id of the public key ${d.publicKey}`);
    }
    if (keys.has(d.keyId)) throw new KeyLogFailure(seq, `key ${d.keyId} is added a second time`);
  };
  const checkSignature = async (seq, at, action, d, payload, signerKey) => {
    const late = signedAtProblem(d.signedAt, at);
    if (late) throw new KeyLogFailure(seq, `its ${action} signature was ${late}`);
    const message = actionMessage({
      origin, action, player: action === 'sign_up' ? null : accountId, payload,
      idempotencyKey: action === 'sign_up' ? null : d.idempotencyKey, keyId: d.signer, signedAt: d.signedAt,
    });
    if (!await verifySignature(signerKey, message, d.signature)) {
      throw new KeyLogFailure(seq, `its ${action} signature by key ${d.signer} does not verify over ${JSON.stringify(message)}`);
    }
  };
  let prevHash = ZERO_HASH;
  let prevAt = -Infinity;
  // The instant of the account's sign-up when its key log begins with it (null: an account made
  // before keys were, its first key added later).
  let signedUpAt = null;
  for (const [i, e] of events.entries()) {
    if (e.seq !== i + 1) throw new KeyLogFailure(e.seq, `expected key event ${i + 1} next, got ${e.seq}`);
    if (e.accountId !== accountId) throw new KeyLogFailure(e.seq, `it belongs to account ${e.accountId}`);
    if (e.prevHash !== prevHash) throw new KeyLogFailure(e.seq, 'its prevHash is not the previous key event\'s hash');
    // The hash covers the instant as the log writes it: another writing of it is not what was hashed.
    const at = Date.parse(e.at);
    if (!LOG_TIME.test(e.at) || Number.isNaN(at)) {
      throw new KeyLogFailure(e.seq, `its at ${JSON.stringify(e.at)} is not in the log's time format (2026-01-02T15:04:05.000Z)`);
    }
    let hash;
    try {
      hash = keyEventHash(prevHash, e);
    } catch (err) {
      throw new KeyLogFailure(e.seq, `it cannot be encoded canonically: ${err.message}`);
    }
    if (hash !== e.hash) throw new KeyLogFailure(e.seq, 'its hash does not match its content');
    const d = e.data ?? {};
    // Out of order, a key's span is not where the log puts it: a recovery made after a player's
    // actions could be dated before them.
    if (!(at >= prevAt)) throw new KeyLogFailure(e.seq, `it is dated ${e.at}, before key event ${e.seq - 1}`);
    prevAt = at;
    switch (e.type) {
      case 'key_added': {
        newKey(e.seq, d);
        let signer = null;
        if (d.via === 'sign_up') {
          if (e.seq !== 1) throw new KeyLogFailure(e.seq, 'a sign-up key comes after the account\'s first key event');
          signedUpAt = at;
          if (d.signer !== d.keyId) throw new KeyLogFailure(e.seq, 'a sign-up key is signed by another key');
        } else if (d.via !== 'add_key') {
          throw new KeyLogFailure(e.seq, `a key added via ${JSON.stringify(d.via)}`);
        } else if (keys.size === 0) {
          if (d.signer !== d.keyId) throw new KeyLogFailure(e.seq, 'the account\'s first key is not signed by itself');
        } else {
          signer = activeKey(e.seq, d.signer, 'signer');
        }
        await checkSignature(e.seq, at, d.via, d, actionPayload(d.via, d), signer?.publicKey ?? d.publicKey);
        keys.set(d.keyId, {
          keyId: d.keyId, publicKey: d.publicKey, addedSeq: e.seq, addedAt: at, retiredSeq: null, retiredAt: null,
          recovery: false, viaRecovery: Boolean(signer && (signer.recovery || signer.viaRecovery)),
        });
        break;
      }
      case 'key_retired': {
        const retired = activeKey(e.seq, d.keyId, 'retired key');
        await checkSignature(e.seq, at, 'retire_key', d, actionPayload('retire_key', d), activeKey(e.seq, d.signer, 'signer').publicKey);
        Object.assign(retired, { retiredSeq: e.seq, retiredAt: at });
        break;
      }
      case 'keys_recovered': {
        newKey(e.seq, d);
        const active = [...keys.values()].filter((k) => k.retiredSeq == null).map((k) => k.keyId).sort();
        if (!Array.isArray(d.retired) || [...d.retired].sort().join() !== active.join()) {
          throw new KeyLogFailure(e.seq, `a recovery retires ${JSON.stringify(d.retired)}, not every active key (${active.join(', ') || 'none'})`);
        }
        for (const id of active) Object.assign(keys.get(id), { retiredSeq: e.seq, retiredAt: at });
        keys.set(d.keyId, { keyId: d.keyId, publicKey: d.publicKey, addedSeq: e.seq, addedAt: at, retiredSeq: null, retiredAt: null, recovery: true, viaRecovery: false });
        recoveries.push({ seq: e.seq, at: e.at, keyId: d.keyId, publicKey: d.publicKey, retired: active, admin: d.admin, reason: d.reason, auth: d.auth ?? null });
        break;
      }
      default:
        throw new KeyLogFailure(e.seq, `unknown key event type ${JSON.stringify(e.type)}`);
    }
    prevHash = e.hash;
  }
  if (listed) compareListed(keys, listed);
  return { keys, recoveries, signedUpAt };
}

// compareListed checks the server's list of an account's keys against the keys its log gives.
function compareListed(keys, listed) {
  const state = (k) => `${k.publicKey} ${k.addedSeq} ${k.retiredSeq ?? '-'} ${k.recovery}`;
  for (const k of listed) {
    const logged = keys.get(k.keyId);
    if (!logged) throw new KeyLogFailure(null, `the server lists key ${k.keyId}, which no key event added: the operator put it on the account outside the log`);
    if (state(logged) !== state(k)) throw new KeyLogFailure(null, `the server lists key ${k.keyId} otherwise than the key log gives it`);
  }
  if (listed.length !== keys.size) throw new KeyLogFailure(null, `the server lists ${listed.length} keys, the key log gives ${keys.size}`);
}

// heldAt: the keys an account's key log gives it at instant at (added at or before it, not
// retired before it).
export function heldAt(log, at) {
  return [...log.keys.values()].filter((k) => k.addedAt <= at && (k.retiredAt == null || k.retiredAt >= at));
}

// signingKey is the key of an account's key log that signed auth, checked active at instant at
// (added at or before it, not retired before it) and auth's signedAt within the window around
// it; fail(why) is the Failure to throw, role names the account ('player', 'admin').
function signingKey(log, auth, at, fail, role) {
  const key = log.keys.get(auth.keyId);
  if (!key) throw fail(`signed with key ${auth.keyId}, which is not in the ${role}'s key log`);
  if (key.addedAt > at) throw fail(`signed with key ${auth.keyId}, added only later (key event ${key.addedSeq})`);
  if (key.retiredAt != null && key.retiredAt < at) throw fail(`signed with key ${auth.keyId}, retired before it (key event ${key.retiredSeq})`);
  const late = signedAtProblem(auth.signedAt, at);
  if (late) throw fail(`its signature was ${late}`);
  return key;
}

// checkRecoveries checks the admin's signature each recovery in an account's verified key log
// (verifyKeyLog's result) records (rpsverify's checkRecoveries) against the admin's own key log,
// as an admin's act in a lobby is, and names the key that made it (recovery.signedBy); one that
// does not verify fails the account's key log (KeyLogFailure). An unsigned recovery stays the
// operator's word (no signedBy). adminLog(adminId) is a Promise of the admin's verified key log.
// The lobby's verifier checks the admin's own recoveries when the admin acts in the lobby, not
// here: two admins may have recovered each other.
export async function checkRecoveries(accountId, log, origin, adminLog) {
  for (const r of log.recoveries) {
    const { auth } = r;
    if (auth == null) continue;
    const fail = (why) => new KeyLogFailure(r.seq, `its recovery is not signed by admin ${r.admin}: ${why}`);
    if (auth.action !== 'recover_keys' || auth.admin !== r.admin) throw fail(`it carries the signature of ${JSON.stringify(auth.action)} by admin ${auth.admin}`);
    const asked = requestProblem('recover_keys', auth.request ?? null, r);
    if (asked) throw fail(asked);
    let admin;
    try {
      admin = await adminLog(auth.admin);
    } catch (err) {
      if (err instanceof KeyLogFailure) throw fail(`the admin's key log fails${err.seq ? ` at its key event ${err.seq}` : ''}: ${err.message}`);
      throw err;
    }
    const key = signingKey(admin, auth, Date.parse(r.at), fail, 'admin');
    const message = adminMessage(origin, auth, { account: accountId });
    if (!await verifySignature(key.publicKey, message, auth.signature)) throw fail(`the signature by key ${key.keyId} does not verify over ${JSON.stringify(message)}`);
    r.signedBy = key.keyId;
  }
}

// The signed actions each event type records.
const ACTIONS = {
  player_registered: ['register', 'quick_join'],
  player_left: ['leave'],
  move_committed: ['commit'],
  move_revealed: ['reveal'],
};

// signatureChecker checks, for verifyLog, every player action in a lobby's log: signed (data.auth)
// by a key in the player's key log, held at the event, over the message rebuilt from the log
// (origin: GET /v1/log's), and no (player, action, idempotency key) twice; unsigned only while
// the player held no key. A commit's or reveal's signature is sealed in the event and checked
// once its round is public, from the transcript (roundMoves, as verifyLog's). Every act of an
// admin in the log (adminacts.js) is checked the same way against the admin's own key log, and
// its signed request against what the event shows (as rpsverify does); an unsigned one is the
// operator's word, counted. keyLog(accountId) reads an account's key log ({keys, events}, as
// GET /v1/accounts/{id}/keys with every event); each is read and verified once.
export function signatureChecker({ origin, keyLog, roundMoves }) {
  const logs = new Map(); // accountId -> Promise of its verified key log
  const recoveriesChecked = new Map(); // accountId -> Promise of its recoveries' admin signatures checked
  const owners = new Map(); // keyId -> the account whose key log added it, as {id, role}
  const configs = new Map(); // gameId -> its config, from game_opened
  let currentGame = null; // the newest game_opened's
  const seen = new Map(); // player, action and idempotency key -> the event's seq
  let pending = []; // sealed commits and reveals, waiting for their round
  const counts = { signed: 0, unsigned: 0 };
  const admin = { checked: 0, unsigned: [] }; // admin acts signed and checked; the seqs of unsigned ones
  const stops = rulesStops();

  // verified is an account's key log, read and verified once.
  const verified = (accountId) => {
    if (!logs.has(accountId)) logs.set(accountId, keyLog(accountId).then((log) => verifyKeyLog(accountId, log.events, origin, log.keys)));
    return logs.get(accountId);
  };

  // keysOf reads an account's key log; role ('player', 'admin') names the account in a failure.
  const keysOf = async (player, seq, role = 'player') => {
    try {
      const log = await verified(player);
      if (!recoveriesChecked.has(player)) recoveriesChecked.set(player, checkRecoveries(player, log, origin, verified));
      await recoveriesChecked.get(player);
      for (const keyId of log.keys.keys()) {
        // A key belongs to one account: a sign-up (which names no account) copied into another
        // account's log would make that account's actions look signed.
        const owner = owners.get(keyId) ?? { id: player, role };
        if (owner.id !== player) throw new Failure(seq, `key ${keyId} is in the key logs of ${owner.role} ${owner.id} and of ${role} ${player}`);
        owners.set(keyId, owner);
      }
      return log;
    } catch (err) {
      if (err instanceof KeyLogFailure) throw new Failure(seq, `the key log of ${role} ${player} fails${err.seq ? ` at its key event ${err.seq}` : ''}: ${err.message}`);
      throw err;
    }
  };

  const verify = async (seq, fields, key, signature, what) => {
    const message = actionMessage(fields);
    if (!await verifySignature(key.publicKey, message, signature)) {
      throw new Failure(seq, `${what}: the signature by key ${key.keyId} does not verify over ${JSON.stringify(message)}`);
    }
    counts.signed++;
  };

  const action = async (e) => {
    const { player, auth } = e.data;
    const what = `${e.type} of player ${player}`;
    const log = await keysOf(player, e.seq);
    const at = Date.parse(e.at);
    if (auth == null) {
      const held = heldAt(log, at);
      if (held.length) throw new Failure(e.seq, `${what}: unsigned, though the player held key ${held[0].keyId} (key event ${held[0].addedSeq})`);
      // An account made with its key has had one since: an action before its sign-up is one of a
      // lobby the operator dated back, to pass it as a keyless player's.
      if (log.signedUpAt != null && at < log.signedUpAt) {
        throw new Failure(e.seq, `${what}: unsigned, dated before the player signed up with a key at ${new Date(log.signedUpAt).toISOString()}`);
      }
      counts.unsigned++;
      return;
    }
    if (!ACTIONS[e.type].includes(auth.action)) throw new Failure(e.seq, `${what}: its signature is for the action ${JSON.stringify(auth.action)}`);
    const once = `${player}\n${auth.action}\n${auth.idempotencyKey}`;
    if (seen.has(once)) {
      throw new Failure(e.seq, `${what}: a replay of event ${seen.get(once)} (the same player, action and idempotency key ${JSON.stringify(auth.idempotencyKey)})`);
    }
    seen.set(once, e.seq);
    const key = signingKey(log, auth, at, (why) => new Failure(e.seq, `${what}: ${why}`), 'player');
    const fields = {
      origin, action: auth.action, player, lobbyId: e.lobbyId, gameId: e.gameId, round: null,
      idempotencyKey: auth.idempotencyKey, keyId: auth.keyId, signedAt: auth.signedAt,
    };
    const config = configs.get(e.gameId);
    switch (auth.action) {
      case 'register':
      case 'quick_join':
        if (config == null) throw new Failure(e.seq, `${what}: its game ${e.gameId} was not opened in this log`);
        if (auth.action === 'register') return verify(e.seq, { ...fields, payload: { bet: config.betSize } }, key, auth.signature, what);
        // The player asked for a game of that ruleset: a game of another is not what it signed.
        if (auth.ruleset != null && auth.ruleset !== config.ruleset) {
          throw new Failure(e.seq, `${what}: a quick join that asked for ruleset ${auth.ruleset}, in a game of ${config.ruleset}`);
        }
        return verify(e.seq, { ...fields, lobbyId: null, gameId: null, payload: actionPayload('quick_join', { betSize: config.betSize, ruleset: auth.ruleset }) },
          key, auth.signature, what);
      case 'leave':
        return verify(e.seq, { ...fields, payload: {} }, key, auth.signature, what);
      default: // commit, reveal
        pending.push({ seq: e.seq, what, player, gameId: e.gameId, round: e.data.round, key, sealed: auth.sealedSignature, fields: { ...fields, round: e.data.round } });
    }
  };

  // adminAct checks the admin's signature of the act an event records (action: adminActOf's).
  const adminAct = async (e, action) => {
    const { auth } = e.data;
    if (auth == null) {
      admin.unsigned.push(e.seq);
      return;
    }
    const fail = (why) => new Failure(e.seq, `${e.type} of admin ${auth.admin}: not signed by the admin: ${why}`);
    if (auth.action !== action) throw fail(`its signature is for the action ${JSON.stringify(auth.action)}`);
    const asked = requestProblem(action, auth.request ?? null, e.data);
    if (asked) throw fail(asked);
    const key = signingKey(await keysOf(auth.admin, e.seq, 'admin'), auth, Date.parse(e.at), fail, 'admin');
    const message = adminMessage(origin, auth, { lobbyId: e.lobbyId });
    if (!await verifySignature(key.publicKey, message, auth.signature)) {
      throw fail(`the signature by key ${key.keyId} does not verify over ${JSON.stringify(message)}`);
    }
    // What the message cannot name is bound otherwise: a creation's lobby id is derived from its
    // signature, and a stop or a next config names the lobby's current game.
    if (action === 'create_lobby' && createdLobby(auth.signature) !== e.lobbyId) {
      throw fail(`its signature makes lobby ${createdLobby(auth.signature)}, not this one`);
    }
    const game = ADMIN_ACTIONS_NAMING_GAME.has(action) ? currentGame : null;
    if ((auth.gameId ?? null) !== game) throw fail(`its signature names game ${auth.gameId ?? 'none'}, not the lobby's current one (${game ?? 'none'})`);
    // One signed request makes one act: the operator cannot show it twice.
    const once = `${auth.admin}\n${auth.action}\n${auth.idempotencyKey}`;
    if (seen.has(once)) throw fail(`a replay of event ${seen.get(once)} (the same admin, action and idempotency key ${JSON.stringify(auth.idempotencyKey)})`);
    seen.set(once, e.seq);
    admin.checked++;
  };

  // roundPublic checks the sealed signatures of the rounds now public.
  const roundPublic = async (isPublic) => {
    const due = pending.filter(isPublic);
    pending = pending.filter((p) => !isPublic(p));
    for (const p of due) {
      const { action } = p.fields;
      const move = (await roundMoves(p.gameId, p.round)).find((m) => m.accountId === p.player);
      const signature = action === 'commit' ? move?.commitSignature : move?.revealSignature;
      const where = `${p.what} in round ${p.round}`;
      if (signature == null) throw new Failure(p.seq, `${where}: the round is over and its transcript shows no ${action} signature`);
      if (!HEX64.test(p.sealed ?? '') || sealSignature(signature) !== p.sealed) {
        throw new Failure(p.seq, `${where}: the ${action} signature in the transcript is not the one the event sealed`);
      }
      const payload = action === 'commit' ? { commitment: move.commitment } : { reveal: move.reveal };
      await verify(p.seq, { ...p.fields, payload }, p.key, signature, where);
    }
  };

  return {
    async event(e) {
      // A stop with a reason of the rules' is no admin's act, so it must be where the rules put it.
      const notTheRules = e.type === 'game_stopped' ? stops.problem(e) : null;
      stops.follow(e);
      if (notTheRules) throw new Failure(e.seq, `game_stopped: its reason ${JSON.stringify(e.data.reason)} is the rules', but the rules make no such stop here (${notTheRules}): an admin's stop given as theirs`);
      if (e.type === 'game_opened') {
        configs.set(e.gameId, e.data.config);
        currentGame = e.gameId;
      }
      if (e.type === 'round_resolved') await roundPublic((p) => p.gameId === e.gameId && p.round === e.data.round);
      if (e.type === 'game_finished' || e.type === 'game_stopped') await roundPublic((p) => p.gameId === e.gameId);
      if (ACTIONS[e.type]) return action(e);
      const act = adminActOf(e);
      if (act) return adminAct(e, act);
    },
    // summary: signed actions checked, unsigned ones (their players held no key), sealed ones
    // still waiting for their round, every recovery by the operator in the key logs read (with
    // signedBy, the admin key that signed it, once checked), and the admins' acts: how many were
    // signed and checked, and the events of those unsigned.
    async summary() {
      const recoveries = [];
      // The key logs of the accounts that acted in the lobby (an admin's read only for the key
      // that signed a recovery is not one of them).
      for (const [accountId, checked] of recoveriesChecked) {
        try {
          await checked;
          for (const r of (await logs.get(accountId)).recoveries) recoveries.push({ accountId, ...r });
        } catch {
          // A key log that fails is the failure already reported.
        }
      }
      return { ...counts, sealed: pending.length, recoveries, adminChecked: admin.checked, adminUnsigned: [...admin.unsigned] };
    },
  };
}
