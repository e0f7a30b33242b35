// Plays whole games against a real rpsd with the client openapi-generator's typescript-fetch
// generated from openapi.yaml, unchanged, and verifies them as a third party would.
//
// scripts/test-generated-clients.sh generates the client into ./generated beside the compiled
// copy of this file, compiles both with the pinned TypeScript and runs
//
//     node play_game.js URL ADMIN_TOKEN DEADLINE_MS
//
// Accounts with their own Ed25519 keys, a lobby, registrations, commitments and reveals each
// signed by its player (issue 31: the message checked against
// tournament/testdata/signed_actions.json first, the signatures sent in the operations' Rps-*
// header parameters), an unsigned action refused, a refusal read as a problem, a stage that
// expires at its deadline, the event stream followed live with a dropped connection resumed
// from Last-Event-ID, the hash chain, the stage digests and the signed heads checked with
// @noble/hashes (blake2b) and @noble/curves (Ed25519, which also signs: the verifier's library,
// already pinned, rather than node:crypto, whose types this test does without), the ruleset
// fetched by content hash. Test code, not a library.

import { blake2b } from '@noble/hashes/blake2.js';
import { bytesToHex, hexToBytes, randomBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import { ed25519 } from '@noble/curves/ed25519.js';
import canonicalize from 'canonicalize';
import {
  AccountsApi, AdminApi, Configuration, EventsApi, GamesApi, LobbiesApi, LogApi, OperationsApi, PlayApi,
  RulesetsApi, ResponseError, EventToJSON, ProblemFromJSON, SignedHeadToJSON,
  type Lobby, type MovesClosedEvent, type RoundResolvedEvent, type SignedHead, type Problem,
} from './generated/index.js';

// Node's globals, without @types/node for the one use.
declare const process: { argv: string[]; exit(code: number): never };

const [url, adminToken, deadlineArg] = process.argv.slice(2);
const deadlineMs = Number(deadlineArg);
let checks = 0;

function check(ok: unknown, what: string): void {
  if (!ok) throw new Error(`check failed: ${what}`);
  checks++;
}

type Json = Record<string, any>;

const hash = (data: Uint8Array): Uint8Array => blake2b(data, { dkLen: 32 });
const canonical = (value: unknown): Uint8Array => utf8ToBytes(canonicalize(value) as string);
const hex = (bytes: Uint8Array): string => bytesToHex(bytes);
const secret = (): string => hex(randomBytes(16));

/** Recomputes every hash of a log from its first event, as the contract's `Event` says. */
function verifyChain(events: Json[]): void {
  let prev: Uint8Array = new Uint8Array(32);
  events.forEach((e, i) => {
    check(e.seq === i + 1, `event ${i + 1} has seq ${e.seq}`);
    check(e.prevHash === hex(prev), `event ${e.seq}: prevHash is not the previous hash`);
    const body = { seq: e.seq, type: e.type, lobbyId: e.lobbyId, gameId: e.gameId, at: e.at, data: e.data };
    const bytes = canonical(body);
    const joined = new Uint8Array(32 + bytes.length);
    joined.set(prev);
    joined.set(bytes, 32);
    prev = hash(joined);
    check(e.hash === hex(prev), `event ${e.seq} (${e.type}): hash does not recompute`);
  });
}

/** A signed head: its signature over the contract's bytes, and that it names a chained event. */
function verifyHead(head: Json, keys: Map<string, string>, events: Json[]): void {
  const { at, hash: h, keyId, lobbyId, seq } = head;
  const signed = new Uint8Array([...utf8ToBytes('rps-signed-head-v1\n'), ...canonical({ at, hash: h, keyId, lobbyId, seq })]);
  const key = keys.get(keyId);
  check(key && ed25519.verify(hexToBytes(head.signature), signed, hexToBytes(key)), `head ${seq}: signature`);
  check(events[seq - 1].hash === h, `head ${seq} is not on the chain`);
}

/**
 * The digest of a stage's sealed values: the canonical array of {player, value} by player, after
 * the round's salt for the commitments (revealed with the round, never before it).
 */
function digest(values: [string, string][], salt: Uint8Array = new Uint8Array()): string {
  const elems = values.map(([player, value]) => ({ player, value }))
    .sort((a, b) => (a.player < b.player ? -1 : a.player > b.player ? 1 : 0));
  return hex(hash(new Uint8Array([...salt, ...canonical(elems)])));
}

/** What a player's key signs for an action: the domain line, then the RFC 8785 JSON of every
 * member (null where the action has none). */
const actionMessage = (fields: Json): Uint8Array => new Uint8Array([...utf8ToBytes('rps-action-v1\n'), ...canonical(fields)]);

interface Where { player?: string | null; lobby?: string | null; game?: string | null; round?: number | null;
  idempotencyKey?: string | null; signedAt?: number }

/** A player's Ed25519 key, made here; the server only ever sees its public half. */
class PlayerKey {
  readonly publicKey: string;
  readonly keyId: string;
  constructor(readonly secretKey: Uint8Array = ed25519.utils.randomSecretKey()) {
    const pub = ed25519.getPublicKey(secretKey);
    this.publicKey = hex(pub);
    this.keyId = hex(hash(pub).slice(0, 8));
  }

  fields(origin: string, action: string, payload: Json, w: Where = {}): Json {
    return {
      action, gameId: w.game ?? null, idempotencyKey: w.idempotencyKey ?? null, keyId: this.keyId, lobbyId: w.lobby ?? null,
      origin, payload, player: w.player ?? null, round: w.round ?? null, signedAt: w.signedAt ?? Date.now(),
    };
  }

  sign(fields: Json): string { return hex(ed25519.sign(actionMessage(fields), this.secretKey)); }

  /** The parameters of a signed operation: its Idempotency-Key (fresh, except for sign_up, which
   * takes none) and the Rps-* headers. */
  headers(origin: string, action: string, payload: Json, w: Where = {}) {
    const f = this.fields(origin, action, payload, { idempotencyKey: action === 'sign_up' ? null : secret(), ...w });
    return {
      rpsKeyId: this.keyId, rpsSignedAt: f.signedAt as number, rpsSignature: this.sign(f),
      ...(f.gameId !== null ? { rpsGameId: f.gameId as string } : {}),
      ...(f.round !== null ? { rpsRound: f.round as number } : {}),
      ...(f.idempotencyKey !== null ? { idempotencyKey: f.idempotencyKey as string } : {}),
    };
  }
}

/** The message builder and the key against the vectors every client checks, before playing. */
async function checkVectors(): Promise<void> {
  // Read without @types/node: the module's name is not a literal, so its type is `any`.
  const fsName: string = 'node:fs';
  const fs = await import(fsName);
  const vectors = JSON.parse(fs.readFileSync(new URL('../../../../tournament/testdata/signed_actions.json', import.meta.url), 'utf8'));
  const key = new PlayerKey(hexToBytes(vectors.seed));
  check(key.publicKey === vectors.publicKey && key.keyId === vectors.keyId, 'the vectors\' key and key id');
  for (const v of vectors.vectors) {
    const f = v.fields;
    const rebuilt = key.fields(f.origin, f.action, f.payload,
      { player: f.player, lobby: f.lobbyId, game: f.gameId, round: f.round, idempotencyKey: f.idempotencyKey, signedAt: f.signedAt });
    check(new TextDecoder().decode(actionMessage(rebuilt)) === v.message, `vector ${v.action}: the message`);
    check(key.sign(rebuilt) === v.signature, `vector ${v.action}: the signature`);
  }
  check(hex(hash(hexToBytes(vectors.sealedSignature.signature))) === vectors.sealedSignature.sealed, 'the sealed signature');
}

interface Message { id?: string; event: string; data: string }

/** The messages of an event stream's text, comments skipped. */
function* sseMessages(lines: Iterable<string>): Generator<Message> {
  let msg: Json = {};
  let data: string[] = [];
  for (const line of lines) {
    if (line === '') {
      if (data.length || Object.keys(msg).length) yield { id: msg.id, event: msg.event ?? 'message', data: data.join('\n') };
      msg = {};
      data = [];
    } else if (!line.startsWith(':')) {
      const at = line.indexOf(':');
      const field = at < 0 ? line : line.slice(0, at);
      const value = at < 0 ? '' : line.slice(at + 1).replace(/^ /, '');
      if (field === 'data') data.push(value);
      else msg[field] = value;
    }
  }
}

/** The lines of a streamed body as they arrive. */
async function* lines(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of body as any as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true });
    let nl;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      yield buffered.slice(0, nl).replace(/\r$/, '');
      buffered = buffered.slice(nl + 1);
    }
  }
}

/** Follows a lobby's stream live until `until` is streamed, dropping the connection once after
 * `dropAfter` and resuming from the last id received, as a client on a bad network does. */
async function follow(lobbyId: string, dropAfter: string, until: string) {
  const events: Json[] = [];
  const heads: Json[] = [];
  let last: string | undefined;
  let dropped = false;
  let connections = 0;
  for (;;) {
    connections++;
    const res = await fetch(`${url}/v1/lobbies/${lobbyId}/events/stream`, { headers: last ? { 'Last-Event-ID': last } : {} });
    check(res.status === 200 && res.body, `stream: ${res.status}`);
    const pending: string[] = [];
    let reconnect = false;
    for await (const line of lines(res.body!)) {
      pending.push(line);
      if (line !== '') continue;
      for (const m of sseMessages(pending.splice(0))) {
        if (m.event === 'head') { heads.push(JSON.parse(m.data)); continue; }
        const e = JSON.parse(m.data);
        check(m.id === String(e.seq) && m.event === e.type, `stream message ${m.id} ${m.event} carries ${e.seq}`);
        events.push(e);
        last = m.id;
        // Leaving the loop over the body cancels it, which closes the connection.
        if (m.event === until) return { events, heads, connections };
        if (m.event === dropAfter && !dropped) { dropped = true; reconnect = true; }
      }
      if (reconnect) break;
    }
  }
}

/** The problem of a refused call: typescript-fetch throws a ResponseError holding the response. */
async function refusal(call: Promise<unknown>): Promise<{ problem: Problem; status: number; requestId: string | null }> {
  try {
    await call;
  } catch (err) {
    check(err instanceof ResponseError, `a refusal, not ${err}`);
    const res = (err as ResponseError).response;
    return { problem: ProblemFromJSON(await res.json()), status: res.status, requestId: res.headers.get('X-Request-Id') };
  }
  throw new Error('the call was not refused');
}

const config = (token?: string) => new Configuration({ basePath: url, accessToken: token });

async function player(name: string, admin: Configuration, origin: string) {
  const key = new PlayerKey();
  const created = await new AccountsApi(config()).createAccount({
    createAccountRequest: { name, publicKey: key.publicKey },
    ...key.headers(origin, 'sign_up', { name, publicKey: key.publicKey }),
  });
  await new AdminApi(admin).creditAccount({ accountId: created.account.id, moneyTransferRequest: { amount: 1000 } });
  const cfg = config(created.token);
  check((await new AccountsApi(cfg).getMe()).balance === 1000, `${name}'s balance after the credit`);
  const id = created.account.id;
  const signed = (action: string, payload: Json, lobby: string, game: string, round?: number) =>
    key.headers(origin, action, payload, { player: id, lobby, game, round });
  const api = new PlayApi(cfg);
  return {
    id, cfg, key,
    register: (lobbyId: string, game: string, bet: number) =>
      api.registerPlayer({ lobbyId, ...signed('register', { bet }, lobbyId, game) }),
    commit: (lobbyId: string, game: string, round: number, commitment: string) =>
      api.commitMove({ lobbyId, commitRequest: { commitment }, ...signed('commit', { commitment }, lobbyId, game, round) }),
    reveal: (lobbyId: string, game: string, round: number, reveal: string) =>
      api.revealMove({ lobbyId, revealRequest: { reveal }, ...signed('reveal', { reveal }, lobbyId, game, round) }),
  };
}

type Player = Awaited<ReturnType<typeof player>>;

/** Every registration, commitment and reveal of the game signed by its player's key, over the
 * message rebuilt from the log and the transcript, as a third party checks it. */
function verifySignedMoves(events: Json[], moves: Json[], players: Player[], origin: string, bet: number): void {
  const keys = new Map(players.map((p) => [p.id, hexToBytes(p.key.publicKey)]));
  const byPlayer = new Map(moves.map((m) => [m.accountId, m]));
  let signed = 0;
  for (const e of events) {
    if (!['player_registered', 'move_committed', 'move_revealed'].includes(e.type)) continue;
    const { auth, player: who } = e.data;
    check(auth, `event ${e.seq} (${e.type}) carries its player's signature`);
    const fields: Json = {
      action: auth.action, gameId: e.gameId, idempotencyKey: auth.idempotencyKey, keyId: auth.keyId, lobbyId: e.lobbyId, origin,
      player: who, round: null, signedAt: auth.signedAt,
    };
    let signature: string;
    if (e.type === 'player_registered') {
      fields.payload = { bet };
      signature = auth.signature;
    } else {
      const m = byPlayer.get(who)!;
      const commit = e.type === 'move_committed';
      fields.round = e.data.round;
      fields.payload = commit ? { commitment: m.commitment } : { reveal: m.reveal };
      signature = commit ? m.commitSignature : m.revealSignature;
      check(hex(hash(hexToBytes(signature))) === auth.sealedSignature, `event ${e.seq}: the sealed signature`);
    }
    check(ed25519.verify(hexToBytes(signature), actionMessage(fields), keys.get(who)!), `event ${e.seq} (${e.type}): the player's signature`);
    signed++;
  }
  check(signed === 6, `two registrations, commitments and reveals signed (${signed})`);
}

async function main(): Promise<void> {
  await checkVectors();
  const anon = config();
  const admin = config(adminToken);
  const keys = new Map((await new OperationsApi(anon).listSigningKeys()).keys.map((k) => [k.keyId, k.publicKey]));
  const origin = (await new LogApi(anon).getLog()).origin;
  const alice = await player('alice (typescript)', admin, origin);
  const bob = await player('bob (typescript)', admin, origin);

  // A lobby: its nullable fields (no next config; an admin is not in the game) read as null.
  const lobby = await new LobbiesApi(admin).createLobby({
    createLobbyRequest: { name: 'typescript', config: { betSize: 100, playersCountLimit: 2 } },
  });
  check(lobby.nextConfig === null && lobby.game?.you === null && lobby.game?.stage === 'registration', 'a new lobby');
  const followed = follow(lobby.id, 'round_started', 'game_finished');

  // An unsigned action of an account with a key is refused, and the problem says what to do.
  const unsigned = await refusal(new PlayApi(alice.cfg).registerPlayer({ lobbyId: lobby.id, idempotencyKey: secret() }));
  check(unsigned.status === 401 && unsigned.problem.code === 'signature_required', `unsigned: ${JSON.stringify(unsigned)}`);
  // A signature names its game: one made for another game is refused, and changes nothing.
  const stale = await refusal(alice.register(lobby.id, '00000000-0000-4000-8000-000000000000', 100));
  check(stale.status === 409 && stale.problem.code === 'stale_signature', `a signature for another game: ${JSON.stringify(stale)}`);

  const gameId = lobby.game!.id;
  await alice.register(lobby.id, gameId, 100);
  const started: Lobby = await bob.register(lobby.id, gameId, 100);
  check(started.game?.stage === 'moves' && started.game.round === 1, 'the full game starts round 1');
  const game = started.game!;

  // Commit (blake2b-256 of digit + password), each seeing only its own commitment.
  const reveals = new Map([[alice.id, '0' + secret()], [bob.id, '2' + secret()]]); // Rock, Scissors
  const commitments = new Map([...reveals].map(([p, r]) => [p, hex(hash(utf8ToBytes(r)))]));
  const after = await alice.commit(lobby.id, gameId, 1, commitments.get(alice.id)!);
  check(after.game?.you?.commitment === commitments.get(alice.id), 'alice sees her own commitment');

  // A refusal is a problem: its code, status and request id (also in the X-Request-Id header).
  const again = await refusal(alice.commit(lobby.id, gameId, 1, commitments.get(alice.id)!));
  check(again.status === 409 && again.problem.code === 'already_committed' && again.problem.status === 409, `refusal ${JSON.stringify(again)}`);
  check(again.requestId !== null && again.requestId === again.problem.requestId, 'the problem\'s requestId is the X-Request-Id header');

  const moved = await bob.commit(lobby.id, gameId, 1, commitments.get(bob.id)!);
  check(moved.game?.stage === 'reveal', 'every commitment opens the reveal stage');
  const wrong = await refusal(bob.reveal(lobby.id, gameId, 1, '1' + reveals.get(bob.id)!.slice(1)));
  check(wrong.problem.code === 'commitment_mismatch' && wrong.status === 422, `wrong reveal: ${JSON.stringify(wrong)}`);
  await alice.reveal(lobby.id, gameId, 1, reveals.get(alice.id)!);
  await bob.reveal(lobby.id, gameId, 1, reveals.get(bob.id)!);

  const games = new GamesApi(anon);
  const summary = await games.getGame({ gameId: game.id });
  check(summary.stage === 'finished' && summary.winner === alice.id && summary.payout === 200, `Rock beats Scissors: ${JSON.stringify(summary)}`);
  check((await new AccountsApi(alice.cfg).getMe()).balance === 1100 && (await new AccountsApi(bob.cfg).getMe()).balance === 900,
    'the winner took both bets');

  // The log: a page, read with the generated types, hashes into a chain; the live stream saw the
  // same events across its dropped connection, without a gap or a duplicate.
  const stream = await followed;
  const eventsApi = new EventsApi(anon);
  const page = await eventsApi.listEvents({ lobbyId: lobby.id, after: 0, limit: 1000 });
  const events: Json[] = page.events.map(EventToJSON);
  verifyChain(events);
  // An event carries its place in the transparency log (leafIndex) wherever it is sent once
  // logged: in a page read without waiting, and in a stream catching up; events streamed as they
  // commit come before the log has them. Where two copies both have it, it is the same.
  const unlogged = (copies: Json[]) => copies.map((c) => {
    const rest = { ...c };
    delete rest.leafIndex;
    return rest;
  });
  const sameLeaves = (copies: Json[]) =>
    copies.every((c, i) => c.leafIndex === undefined || events[i].leafIndex === undefined || c.leafIndex === events[i].leafIndex);
  check(stream.connections === 2, `the stream was resumed once (${stream.connections} connections)`);
  check(canonicalize(unlogged(stream.events)) === canonicalize(unlogged(events.slice(0, stream.events.length))) && sameLeaves(stream.events),
    'streamed events');
  check(stream.events[stream.events.length - 1].type === 'game_finished', 'the stream followed to the end of the game');
  const lobbyHead = (await new LobbiesApi(alice.cfg).getLobby({ lobbyId: lobby.id })).head as SignedHead;
  for (const head of [SignedHeadToJSON(page.head), SignedHeadToJSON(lobbyHead), ...stream.heads]) verifyHead(head, keys, events);

  // The stage digests against the round's transcript, and one event read typed.
  const transcript = await games.getRound({ gameId: game.id, round: 1 });
  const closed = events.find((e) => e.type === 'moves_closed')!;
  const resolved = events.find((e) => e.type === 'round_resolved')!;
  const salt: string = resolved.data.salt;
  check(closed.data.salt === undefined && transcript.salt === salt, 'the salt is revealed with the round, in its transcript too');
  check(closed.data.digest === digest(transcript.moves.map((m) => [m.accountId, m.commitment!]), hexToBytes(salt)),
    'the commitments\' digest');
  check(resolved.data.digest === digest(transcript.moves.map((m) => [m.accountId, m.reveal!])), 'the reveals\' digest');
  verifySignedMoves(events, transcript.moves.map((m) => m as Json), [alice, bob], origin, 100);
  const typedClosed = await eventsApi.getEvent({ lobbyId: lobby.id, seq: closed.seq });
  check(typedClosed.type === 'moves_closed' && (typedClosed as MovesClosedEvent).data.digest === closed.data.digest, 'typed moves_closed');
  const typedResolved = await eventsApi.getEvent({ lobbyId: lobby.id, seq: resolved.seq }) as RoundResolvedEvent;
  check(typedResolved.data.present === 0b101 && typedResolved.data.survivors === 0b001, 'Rock and Scissors present, Rock survives');

  // The exact ruleset of the game, by its content hash.
  const ruleset = await new RulesetsApi(anon).getRulesetByHashRaw({ rulesetHash: summary.rulesetHash });
  check(hex(hash(new Uint8Array(await ruleset.raw.arrayBuffer()))) === summary.rulesetHash, 'the ruleset hashes to the game\'s rulesetHash');

  // The stream as a generated client can read it: follow=false ends at the head.
  const snapshot = await eventsApi.streamEvents({ lobbyId: lobby.id, follow: false });
  const messages = [...sseMessages(snapshot.split('\n'))];
  const snapshotEvents: Json[] = messages.filter((m) => m.event !== 'head').map((m) => JSON.parse(m.data));
  check(canonicalize(unlogged(snapshotEvents)) === canonicalize(unlogged(events)) && sameLeaves(snapshotEvents),
    'the snapshot stream is the log');
  const lastMessage = messages[messages.length - 1];
  check(lastMessage.event === 'head' && JSON.parse(lastMessage.data).seq === events.length, 'the snapshot ends with its head');

  // A deadline: only alice commits; when the moves stage expires she wins by default.
  const timed = await new LobbiesApi(admin).createLobby({
    createLobbyRequest: { name: 'typescript deadline', config: { betSize: 10, playersCountLimit: 2, moveTimeoutMs: deadlineMs } },
  });
  await alice.register(timed.id, timed.game!.id, 10);
  await bob.register(timed.id, timed.game!.id, 10);
  await alice.commit(timed.id, timed.game!.id, 1, commitments.get(alice.id)!);
  let seen = 0;
  let finished: Json | undefined;
  const until = Date.now() + 30_000;
  while (!finished && Date.now() < until) {
    const polled = await eventsApi.listEvents({ lobbyId: timed.id, after: seen, wait: 5 });
    finished = polled.events.map(EventToJSON).find((e) => e.type === 'game_finished');
    seen = polled.next;
  }
  check(finished && finished.data.winner === alice.id, `the deadline passed: ${JSON.stringify(finished)}`);
  verifyChain((await eventsApi.listEvents({ lobbyId: timed.id, limit: 1000 })).events.map(EventToJSON));

  const report = await new AdminApi(admin).getAdminLedger();
  check(report.ok && report.entriesSum === 0, 'the ledger balances');
  const spec = await new OperationsApi(anon).getOpenApiSpecRaw();
  check(spec.raw.status === 200 && (await spec.raw.text()).startsWith('openapi: 3.0.3'), 'GET /openapi.yaml');
  console.log(`typescript (openapi-generator typescript-fetch): a signed game played and verified, ${checks} checks passed`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
