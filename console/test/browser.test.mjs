// The console in a real browser (Debian's chromium through playwright-core) against a real rpsd
// that scripts/test-console.sh starts: RPS_BASE_URL, RPS_ADMIN_TOKEN, RPS_SCREENSHOTS.
// Players act through the API, as bots do, each signing its actions with a key of its own;
// the browser only watches, verifies and administers.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { chromium } from 'playwright-core';
import { adminActOf } from '../assets/js/adminacts.js';
import { actionMessage, keyIdOf } from '../assets/js/signed.js';
import { commitmentOf, eventHash } from '../assets/js/verify.js';

const base = process.env.RPS_BASE_URL;
const adminToken = process.env.RPS_ADMIN_TOKEN;
const shots = process.env.RPS_SCREENSHOTS ?? 'console/test/output';
const HOSTILE = '<img src=x onerror=alert(1)>';
// Account names are unique (the standings' test has a player named HOSTILE): another one for
// the hostile names' test.
const HOSTILE_PLAYER = '<img src=y onerror=alert(2)>';
const DESKTOP = { width: 1280, height: 860 };
const PHONE = { width: 390, height: 844 };
const WAIT = { timeout: 15000 };

// ---------------------------------------------------------------- the API, as a bot speaks it

async function call(method, path, { token, body, key, signature } = {}) {
  const headers = { ...signature };
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (key) headers['Idempotency-Key'] = key;
  const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

// ---------------------------------------------------------------- players' keys and signatures

const hex = (bytes) => Buffer.from(bytes).toString('hex');
let origin; // the transparency log's origin, which every signed message names

// sign returns the Rps-* headers of an action signed by the player's key (spec-31), and the
// Idempotency-Key the message binds.
async function sign(key, fields) {
  origin ??= (await call('GET', '/v1/log')).origin;
  const signedAt = Date.now();
  const message = actionMessage({ origin, keyId: key.keyId, signedAt, ...fields });
  const signature = { 'Rps-Key-Id': key.keyId, 'Rps-Signed-At': String(signedAt), 'Rps-Signature': hex(ed25519.sign(Buffer.from(message), key.secret)) };
  if (fields.gameId) signature['Rps-Game-Id'] = fields.gameId;
  if (fields.round) signature['Rps-Round'] = String(fields.round);
  return { signature, key: fields.idempotencyKey ?? undefined };
}

// A player signs up with a key made here, as the app makes one on the phone.
async function newPlayer(name, credit = 1000) {
  const secret = ed25519.utils.randomSecretKey();
  const key = { secret, publicKey: hex(ed25519.getPublicKey(secret)) };
  key.keyId = keyIdOf(key.publicKey);
  const body = { name, publicKey: key.publicKey };
  const { account, token } = await call('POST', '/v1/accounts', { body, ...await sign(key, { action: 'sign_up', payload: body }) });
  if (credit > 0) await call('POST', `/v1/admin/accounts/${account.id}/credits`, { token: adminToken, body: { amount: credit } });
  return { id: account.id, name, token, key };
}

// signedPlay signs a player's action in the lobby's current game (and round, for a move).
async function signedPlay(lobby, p, action, path, payload, body) {
  const { game } = await call('GET', `/v1/lobbies/${lobby.id}`);
  const { config } = await call('GET', `/v1/games/${game.id}`);
  const fields = {
    action, player: p.id, lobbyId: lobby.id, gameId: game.id, idempotencyKey: randomUUID(),
    round: action === 'commit' || action === 'reveal' ? game.round : null,
    payload: payload ?? { bet: config.betSize },
  };
  return call('POST', `/v1/lobbies/${lobby.id}/${path}`, { token: p.token, body, ...await sign(p.key, fields) });
}

const createLobby = (name, config = {}) =>
  call('POST', '/v1/lobbies', { token: adminToken, body: { name, config: { betSize: 100, playersCountLimit: 2, ...config } } });
const register = (lobby, p) => signedPlay(lobby, p, 'register', 'players');
const commit = (lobby, p, reveal) => {
  const body = { commitment: commitmentOf(reveal) };
  return signedPlay(lobby, p, 'commit', 'commitments', body, body);
};
const reveal = (lobby, p, text) => signedPlay(lobby, p, 'reveal', 'reveals', { reveal: text }, { reveal: text });
const balance = async (p) => (await call('GET', '/v1/me', { token: p.token })).balance;

// ---------------------------------------------------------------- the browser

let browser;

// Playwright gives each launch a fresh temporary profile (it refuses --user-data-dir here).
before(async () => {
  mkdirSync(shots, { recursive: true });
  browser = await chromium.launch({
    executablePath: execFileSync('sh', ['-c', 'command -v chromium']).toString().trim(),
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  await browser?.close();
});

// open returns a page that records console errors, uncaught exceptions and dialogs; check(t)
// fails the test on any, except the failed requests the test causes on purpose (Chromium logs
// every 4xx response and every aborted request as a console error), matched by expectErrors.
async function open(t, path, { viewport = DESKTOP, expectErrors = [], colorScheme = 'light' } = {}) {
  const context = await browser.newContext({ viewport, baseURL: base, colorScheme });
  const page = await context.newPage();
  const problems = [];
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    if (expectErrors.some((re) => re.test(m.text()))) return;
    problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`exception: ${e.message}`));
  page.on('dialog', async (d) => {
    problems.push(`dialog: ${d.message()}`);
    await d.dismiss();
  });
  t.after(async () => {
    // Route handlers may be midway through a request when the test ends.
    await page.unrouteAll({ behavior: 'ignoreErrors' });
    await context.close();
    assert.deepEqual(problems, [], 'the page logged errors or opened a dialog');
  });
  await page.goto(path);
  return page;
}

// waitText waits for selector to show text; when it never does, the failure says what it shows
// (or, with nothing matching the selector, what the page says).
async function waitText(page, selector, text) {
  try {
    await page.locator(selector, { hasText: text }).first().waitFor(WAIT);
  } catch (err) {
    const shown = await page.locator(selector).allTextContents().catch(() => []);
    const said = shown.length ? shown : (await page.locator('#page').innerText().catch(() => '')).slice(0, 3000);
    throw new Error(`${selector} never showed ${JSON.stringify(text)}; it shows ${JSON.stringify(said)}`, { cause: err });
  }
}
// shot captures the whole page; fullPage false captures what the window shows (for the README).
const shot = (page, name, { fullPage = true } = {}) => page.screenshot({ path: join(shots, `${name}.png`), fullPage });

// ---------------------------------------------------------------- the tests

let finishedLobby; // a lobby whose first game was played to its end, for the verifier
let finishedPlayers; // its players, alice and bob, with their keys

test('a spectator follows a game live to its winner without reloading', async (t) => {
  const lobby = await createLobby('Friday final');
  const [alice, bob] = await Promise.all([newPlayer('alice'), newPlayer('bob')]);
  const page = await open(t, '/');
  await page.locator(`a[href="/lobbies/${lobby.id}"]`).click();
  await page.waitForURL(`**/lobbies/${lobby.id}`);
  await page.evaluate(() => { window.stillTheSamePage = true; });
  await waitText(page, '.live', 'live');
  await waitText(page, '#now', 'Nobody has registered yet');
  // The lobby was created by an admin without a key: the operator's word, said so.
  await waitText(page, '#feed li .signed.unsigned', 'unsigned: the operator’s word');

  await register(lobby, alice);
  await waitText(page, '#now .player', 'alice');
  await register(lobby, bob); // full: round 1 starts at once
  await waitText(page, '#now .tally', 'Committed 0 of 2');
  await commit(lobby, alice, '0alice-secret');
  await waitText(page, '#now .tally', 'Committed 1 of 2');
  // Who signed is public at once; the signature itself stays sealed with the commitment.
  await waitText(page, '#now .moves .signed', `signed, key ${alice.key.keyId}, sealed until the round is over`);
  await waitText(page, '#feed .signed', `signed, key ${alice.key.keyId}, sealed until the round is over`);
  await shot(page, 'lobby-live-desktop');
  assert.equal(await page.locator('#now').getByText('alice-secret').count(), 0, 'no sealed value is shown');
  await commit(lobby, bob, '2bob-secret');
  await waitText(page, '#now h3', 'Round 1: revealing');
  await reveal(lobby, alice, '0alice-secret');
  await waitText(page, '#now .tally', 'Revealed 1 of 2');
  await reveal(lobby, bob, '2bob-secret'); // Rock beats Scissors: alice takes both bets

  await waitText(page, '#last .outcome.winner', 'alice');
  await waitText(page, '#last .outcome.winner', 'takes 200');
  await waitText(page, '#last .moves', 'Scissors');
  for (const p of [alice, bob]) await waitText(page, '#last .moves .signed', `signed, key ${p.key.keyId}`);
  assert.equal(await page.locator('#last .moves .signed', { hasText: 'sealed' }).count(), 0, 'the round is over: nothing is sealed');
  await waitText(page, '#feed', 'game 2 opened');
  assert.equal(await page.locator('#feed .signed', { hasText: 'sealed' }).count(), 0, 'nor in the event log');
  await waitText(page, '#now h2', 'Game 2');
  await waitText(page, '#past', 'Game 1');
  assert.equal(await page.evaluate(() => window.stillTheSamePage), true, 'the page was not reloaded');
  await waitText(page, '#feed', 'alice won 200');
  await shot(page, 'lobby-desktop');
  await shot(page, 'lobby-window-desktop', { fullPage: false });
  await page.locator('#past').getByRole('button', { name: 'Game 1' }).click();
  await waitText(page, '#past .transcript .moves', 'Scissors');
  finishedLobby = lobby;
  finishedPlayers = { alice, bob };

  const phone = await open(t, `/lobbies/${lobby.id}`, { viewport: PHONE });
  await waitText(phone, '#last .outcome.winner', 'alice');
  await shot(phone, 'lobby-phone');
});

test('the verifier passes a real log and names the first altered event', async (t) => {
  assert.ok(finishedLobby, 'needs the lobby played by the previous test');
  const lobby = finishedLobby;
  const log = await call('GET', `/v1/lobbies/${lobby.id}/events?limit=1000`);
  const last = log.events.at(-1).seq;

  const page = await open(t, `/lobbies/${lobby.id}`);
  await page.getByRole('button', { name: 'Verify the whole log' }).click();
  await waitText(page, '.verify-result.ok', `Verified through event ${last}: every hash, stage digest, reveal and signature checks out`);
  // Two registrations, two commits and two reveals, each against its player's key; the lobby
  // was created by an admin without a key.
  await waitText(page, '.verify-result.ok', '6 signed actions checked against their players’ keys; 1 admin act unsigned: the operator’s word alone (event 1).');
  await shot(page, 'verify-ok-desktop');

  // The same log with one event's data altered (a player's registration claims a bigger pot).
  const altered = log.events.find((e) => e.type === 'player_registered');
  await page.route(`**/v1/lobbies/${lobby.id}/events?**`, async (route) => {
    const response = await route.fetch();
    const page = await response.json();
    for (const e of page.events) if (e.seq === altered.seq) e.data.pot += 1;
    await route.fulfill({ response, json: page });
  });
  await page.getByRole('button', { name: 'Verify the whole log' }).click();
  await waitText(page, '.verify-result.bad', `Event ${altered.seq} fails: its hash does not match its content`);
  await waitText(page, '.verify-result.bad', `Events 1 to ${altered.seq - 1} verified`);
  await page.locator('#verify').scrollIntoViewIfNeeded();
  await shot(page, 'verify-bad-desktop');

  // A transcript whose reveal differs from what was committed fails at the round's resolution.
  const resolved = log.events.find((e) => e.type === 'round_resolved');
  // The route goes in before the lobby page opens: the page reads (and keeps) round 1's closed
  // transcript for its last game's card as it loads.
  const fresh = await open(t, '/');
  await fresh.route('**/v1/games/*/rounds/1**', async (route) => {
    const response = await route.fetch();
    const round = await response.json();
    round.moves[0].reveal = `${round.moves[0].reveal}x`;
    await route.fulfill({ response, json: round });
  });
  await fresh.goto(`/lobbies/${lobby.id}`);
  await fresh.getByRole('button', { name: 'Verify the whole log' }).click();
  await waitText(fresh, '.verify-result.bad', `Event ${resolved.seq} fails: round 1: the reveal of`);
});

// operatorRewrites serves the lobby's log with one event changed by change(event) and the chain
// hashed again from there, as an operator with the database could rewrite it (the transparency
// log's check is another section's).
async function operatorRewrites(page, lobby, seq, change) {
  await page.route(`**/v1/lobbies/${lobby.id}/events?**`, async (route) => {
    const response = await route.fetch();
    const body = await response.json();
    let prevHash = null;
    for (const e of body.events) {
      if (e.seq === seq) change(e);
      if (e.seq >= seq) {
        e.prevHash = prevHash ?? e.prevHash;
        e.hash = eventHash(e.prevHash, e);
      }
      prevHash = e.seq >= seq ? e.hash : null;
    }
    await route.fulfill({ response, json: body });
  });
}

test('the verifier names an action written in a player\'s name without the player\'s key', async (t) => {
  assert.ok(finishedLobby, 'needs the lobby played by the first test');
  const lobby = finishedLobby;
  const { alice } = finishedPlayers;
  const log = await call('GET', `/v1/lobbies/${lobby.id}/events?limit=1000`);
  const registered = log.events.find((e) => e.type === 'player_registered' && e.data.player === alice.id);
  const verify = async (page, text) => {
    // Failures name the players of the games on the page, once it has read them.
    await waitText(page, '#last .outcome.winner', 'alice');
    await page.getByRole('button', { name: 'Verify the whole log' }).click();
    await waitText(page, '.verify-result.bad', text);
  };

  // alice's registration with its signature taken off: she holds a key, so it is not hers.
  const unsigned = await open(t, '/');
  await operatorRewrites(unsigned, lobby, registered.seq, (e) => { delete e.data.auth; });
  await unsigned.goto(`/lobbies/${lobby.id}`);
  await verify(unsigned, `Event ${registered.seq} fails: player_registered of player alice: unsigned, though the player held key ${alice.key.keyId}`);
  await unsigned.locator('#verify').scrollIntoViewIfNeeded();
  await shot(unsigned, 'verify-forged-desktop');

  // The same registration signed by a key of the operator's own, which alice's key log lacks.
  const secret = ed25519.utils.randomSecretKey();
  const operatorKey = { secret, publicKey: hex(ed25519.getPublicKey(secret)) };
  operatorKey.keyId = keyIdOf(operatorKey.publicKey);
  const { auth } = registered.data;
  const { signature } = await sign(operatorKey, {
    action: 'register', player: alice.id, lobbyId: lobby.id, gameId: registered.gameId, payload: { bet: 100 }, idempotencyKey: auth.idempotencyKey,
  });
  const forged = await open(t, '/');
  await operatorRewrites(forged, lobby, registered.seq, (e) => {
    Object.assign(e.data.auth, { keyId: operatorKey.keyId, signedAt: Number(signature['Rps-Signed-At']), signature: signature['Rps-Signature'] });
  });
  await forged.goto(`/lobbies/${lobby.id}`);
  await verify(forged, `Event ${registered.seq} fails: player_registered of player alice: signed with key ${operatorKey.keyId}, which is not in the player's key log`);

  // That key put on alice's account without a key event: the server lists it, the log lacks it.
  const listed = await open(t, '/');
  await listed.route(`**/v1/accounts/${alice.id}/keys**`, async (route) => {
    const response = await route.fetch();
    const body = await response.json();
    body.keys.push({ keyId: operatorKey.keyId, publicKey: operatorKey.publicKey, addedAt: body.keys[0].addedAt, addedSeq: 1, recovery: false });
    await route.fulfill({ response, json: body });
  });
  await listed.goto(`/accounts/${alice.id}`);
  await waitText(listed, '#keys .key-log-result.bad', `The key log fails: the server lists key ${operatorKey.keyId}, which no key event added`);
  await listed.goto(`/lobbies/${lobby.id}`);
  await verify(listed, `Event ${registered.seq} fails: the key log of player alice fails: the server lists key ${operatorKey.keyId}, which no key event added`);
});

test('a key the operator gave in a recovery is said so on the profile, the lobby page and by the verifier', async (t) => {
  const lobby = await createLobby('After the recovery');
  const [rita, sam] = await Promise.all([newPlayer('rita'), newPlayer('sam')]);
  // rita lost her phone: the operator binds a new key to her account, retiring the old one.
  const secret = ed25519.utils.randomSecretKey();
  const key = { secret, publicKey: hex(ed25519.getPublicKey(secret)) };
  key.keyId = keyIdOf(key.publicKey);
  await call('POST', `/v1/admin/accounts/${rita.id}/keys`, { token: adminToken, key: randomUUID(), body: { publicKey: key.publicKey, reason: 'lost her phone' } });
  const lost = rita.key.keyId;
  rita.key = key;
  await register(lobby, rita);
  await register(lobby, sam);
  await commit(lobby, rita, '1rita');
  await commit(lobby, sam, '0sam');
  await reveal(lobby, rita, '1rita');
  await reveal(lobby, sam, '0sam'); // Paper covers Rock

  const profile = await open(t, `/accounts/${rita.id}`);
  await waitText(profile, '#keys li', `Key ${lost} bound at sign-up, signed by itself.`);
  await waitText(profile, '#keys li.recovery', `Key ${key.keyId} given by the operator in a recovery, not signed by the player; it retired key ${lost}. Reason: “lost her phone”.`);
  await waitText(profile, '#keys .key-log-result.ok', 'Key log verified in this browser through key event 2');
  await shot(profile, 'profile-keys-desktop');

  const page = await open(t, `/lobbies/${lobby.id}`);
  await waitText(page, '#last .moves .signed', `signed, key ${key.keyId} (recovered by the operator)`);
  await page.getByRole('button', { name: 'Verify the whole log' }).click();
  await waitText(page, '.verify-result.ok', '6 signed actions checked');
  await waitText(page, '#verify .recovery', `Key ${key.keyId} of player rita was recovered by the operator (key event 2,`);
  await page.locator('#verify').scrollIntoViewIfNeeded();
  await shot(page, 'verify-recovery-desktop');
});

test('a browser without Ed25519 in WebCrypto checks the signatures with the vendored library', async (t) => {
  assert.ok(finishedLobby, 'needs the lobby played by the first test');
  const page = await open(t, '/');
  const loaded = [];
  page.on('request', (r) => loaded.push(new URL(r.url()).pathname));
  await page.addInitScript(() => {
    const importKey = crypto.subtle.importKey.bind(crypto.subtle);
    crypto.subtle.importKey = (format, data, algorithm, ...rest) => ((algorithm?.name ?? algorithm) === 'Ed25519'
      ? Promise.reject(new DOMException('Ed25519 is not supported', 'NotSupportedError'))
      : importKey(format, data, algorithm, ...rest));
  });
  await page.goto(`/lobbies/${finishedLobby.id}`);
  // Once the page shows the game's signed moves its scripts have run, so the click is heard (a
  // click before that was lost under CI's load, and no check ever began).
  await waitText(page, '#last .moves .signed', 'signed, key');
  await page.getByRole('button', { name: 'Verify the whole log' }).click();
  await waitText(page, '.verify-result.ok', '6 signed actions checked against their players’ keys;');
  assert.ok(loaded.includes('/assets/vendor/noble-curves/ed25519.js'), 'the vendored Ed25519 was loaded');
});

test('the lobby page shows the log\'s checkpoint and proves the lobby is in it, in the browser', async (t) => {
  assert.ok(finishedLobby, 'needs the lobby played by the first test');
  const page = await open(t, `/lobbies/${finishedLobby.id}`);
  // The log runs about a second behind; Check again until this lobby's last event is in it.
  // Each check is judged once it has finished (a click starts a new one, showing 'Checking…').
  const log = await call('GET', `/v1/lobbies/${finishedLobby.id}/events?limit=1000`);
  const last = log.events.at(-1).seq;
  const result = page.locator('#log .log-result');
  let text = '';
  for (const until = Date.now() + 15_000; ; ) {
    await page.waitForFunction(() => document.querySelector('#log .log-result')?.textContent !== 'Checking…', null, WAIT);
    text = await result.textContent();
    if (text.includes(`Event #${last} of this lobby`) || Date.now() > until) break;
    await page.waitForTimeout(250);
    await page.getByRole('button', { name: 'Check again' }).click();
  }
  assert.match(text, new RegExp(`Event #${last} of this lobby`), `the log's check of event #${last}`);
  await waitText(page, '#log .log-result.ok', `Event #${last} of this lobby`);
  await waitText(page, '#log .log-result.ok', 'inclusion proof verified in this browser');
  await waitText(page, '#log .log-checkpoint', 'Checkpoint');
  await waitText(page, '#log .log-cosigners', 'Cosigned by no witness');
  await page.locator('#log').scrollIntoViewIfNeeded();
  await shot(page, 'log-desktop');

  // A proof altered on the way fails in the browser.
  await page.route(`**/v1/lobbies/${finishedLobby.id}?logProof=true`, async (route) => {
    const response = await route.fetch();
    const view = await response.json();
    view.logProof.hash = view.logProof.hash.replace(/^./, (c) => (c === '0' ? '1' : '0'));
    await route.fulfill({ response, json: view });
  });
  await page.getByRole('button', { name: 'Check again' }).click();
  await waitText(page, '#log .log-result.bad', 'does not lead to the checkpoint\'s root');
});

test('an admin runs a lobby and moves money, and sees refusals at their fields', async (t) => {
  const page = await open(t, '/admin', {
    expectErrors: [/status of (400|401|409) /, /ERR_CONNECTION_RESET/],
  });
  await page.getByLabel('Admin token').fill('not-a-token');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await waitText(page, '#sign-in .field-error', 'This token is not valid');
  await page.getByLabel('Admin token').fill(adminToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await waitText(page, '#ledger .ledger-ok.ok', 'Every invariant holds');
  assert.equal(await page.evaluate(() => document.cookie), '', 'no cookie holds the token');
  assert.ok(!page.url().includes(adminToken), 'the token is not in the URL');

  // Create a lobby: a timeout below the server's minimum is refused at its field, then fixed.
  const create = page.locator('#create-lobby');
  await create.getByLabel('Name').fill('Admin’s table');
  await create.getByLabel('Move timeout (ms)').fill('100');
  await create.getByRole('button', { name: 'Create lobby' }).click();
  await waitText(page, '#create-lobby label:has([data-field="config.moveTimeoutMs"]) .field-error', 'validation_failed');
  await shot(page, 'admin-refusal-desktop');
  await create.getByLabel('Move timeout (ms)').fill('5000');
  await create.getByRole('button', { name: 'Create lobby' }).click();
  await waitText(page, '#create-lobby .form-ok', 'Created “Admin’s table”');
  const lobbyId = await page.locator('#manage-lobby').inputValue();
  const created = await call('GET', `/v1/lobbies/${lobbyId}`);
  assert.equal(created.name, 'Admin’s table');
  assert.equal(created.config.moveTimeoutMs, 5000);
  // A field left blank shows, greyed, the default the server then applied.
  for (const [label, field] of [['Entry timeout (ms)', 'entryTimeoutMs'], ['Reveal timeout (ms)', 'revealTimeoutMs'],
    ['Max extensions (0 = unlimited)', 'maxExtensions'], ['Max rounds (0 = unlimited)', 'maxRounds']]) {
    const shown = await create.getByLabel(label).getAttribute('placeholder');
    assert.equal(Number(shown), created.config[field], `a blank ${field} shows ${shown}, the server applied ${created.config[field]}`);
  }

  // Next config.
  const next = page.locator('#next-config');
  await next.getByLabel('Bet').fill('250');
  await next.getByRole('button', { name: 'Set next config' }).click();
  await waitText(page, '#next-config .form-ok', 'The next game will use this config');
  assert.equal((await call('GET', `/v1/lobbies/${lobbyId}`)).nextConfig.betSize, 250);

  // Stop a game in which a player has paid the bet: the bet comes back.
  const dora = await newPlayer('dora', 1000);
  await register({ id: lobbyId }, dora);
  assert.equal(await balance(dora), 900);
  await page.locator('#stop-game').getByLabel('Reason').fill('table reset');
  await page.getByRole('button', { name: 'Stop game' }).click();
  await waitText(page, '#stop-game .form-ok', 'Stopped');
  assert.equal(await balance(dora), 1000);
  const stoppedLobby = await call('GET', `/v1/lobbies/${lobbyId}`);
  assert.equal(stoppedLobby.game.number, 2);
  assert.equal(stoppedLobby.config.betSize, 250, 'the next game took the next config');
  await page.getByRole('button', { name: 'Close lobby' }).click();
  await waitText(page, '#close-lobby .form-ok', 'Closed');
  assert.equal((await call('GET', `/v1/lobbies/${lobbyId}`)).closed, true);

  // Money: an account found by name prefix and by id, a credit whose first response is lost and
  // which is sent again, a double-clicked debit, and a debit larger than the balance.
  const carol = await newPlayer('carol-the-tester', 0);
  const finder = page.locator('#find-account');
  await finder.getByLabel('Name or account id').fill('CAROL-the');
  await finder.getByRole('button', { name: 'Search' }).click();
  await waitText(page, `#results .found[data-account="${carol.id}"]`, 'Balance 0');
  assert.equal(await page.locator('#results .found').count(), 1, 'the name prefix finds carol alone');
  await finder.getByLabel('Name or account id').fill(carol.id);
  await finder.getByRole('button', { name: 'Search' }).click();
  await waitText(page, '#results .found', carol.id);
  assert.equal(await page.locator('#results .found').count(), 1);
  await page.getByRole('button', { name: 'Choose carol-the-tester' }).click();
  const transfer = page.locator('#transfer');
  await transfer.waitFor({ state: 'visible' });
  await transfer.getByLabel('Amount').fill('500');
  await transfer.getByLabel('Memo (optional)').fill('deposit');
  let lost = false;
  await page.route('**/v1/admin/accounts/*/credits', async (route) => {
    if (lost) return route.continue();
    lost = true;
    await route.fetch(); // the server credits the account; the browser never hears of it
    await route.abort('connectionreset');
  });
  await transfer.getByRole('button', { name: 'Credit' }).click();
  await waitText(page, '#transfer .form-error', 'the server cannot be reached');
  assert.equal(await balance(carol), 500);
  await transfer.getByRole('button', { name: 'Credit' }).click();
  await waitText(page, '#transfer .form-ok', 'Credited: the balance is now 500');
  assert.equal(await balance(carol), 500, 'the retry replayed the credit instead of paying twice');

  await transfer.getByLabel('Amount').fill('200');
  await transfer.getByRole('button', { name: 'Debit' }).dblclick();
  await waitText(page, '#transfer .form-ok', 'Debited: the balance is now 300');
  assert.equal(await balance(carol), 300);

  await transfer.getByLabel('Amount').fill('1000');
  await transfer.getByRole('button', { name: 'Debit' }).click();
  await waitText(page, '#transfer label:has([data-field="amount"]) .field-error', 'insufficient_funds');
  assert.equal(await balance(carol), 300);
  await waitText(page, `#results .found[data-account="${carol.id}"]`, 'Balance 300');

  // A new sign-in token, shown once with a QR code for the app: the code holds this server's
  // address and the token, its drawing is that text's QR code, the new token works and the old
  // one no longer does.
  await page.locator('#issue-token').getByRole('button', { name: 'Issue a new token' }).click();
  await waitText(page, '#issue-token .form-ok', 'carol-the-tester has a new token');
  const issuedToken = (await page.locator('#issue-token code.token').textContent()).trim();
  const qr = page.locator('#issue-token svg.qr');
  const signIn = await qr.getAttribute('data-text');
  assert.equal(signIn, `rps://sign-in?server=${encodeURIComponent(new URL(base).origin)}&token=${encodeURIComponent(issuedToken)}`);
  const { qrMatrix } = await import('../assets/js/qr.js');
  let modules = '';
  qrMatrix(signIn).forEach((row, r) => row.forEach((dark, c) => { if (dark) modules += `M${c + 4} ${r + 4}h1v1h-1z`; }));
  assert.equal(await qr.locator('path').getAttribute('d'), modules, 'the drawing is the QR code of the sign-in text');
  assert.equal((await fetch(`${base}/v1/me`, { headers: { Authorization: `Bearer ${carol.token}` } })).status, 401);
  carol.token = issuedToken;
  assert.equal(await balance(carol), 300, 'the issued token signs in');
  await shot(page, 'admin-token-desktop');

  // Disabling: the status shows, the player's next action is refused, the money stays; enabling
  // lets the player act again.
  const status = page.locator('#account-status');
  await status.getByRole('button', { name: 'Disable account' }).click(); // no reason: the browser asks for one
  assert.equal(await status.getByLabel('Reason (to disable)').evaluate((i) => i.validity.valueMissing), true);
  await status.getByLabel('Reason (to disable)').fill('chargeback under review');
  await status.getByRole('button', { name: 'Disable account' }).click();
  await waitText(page, '#account-status .form-ok', 'carol-the-tester is disabled');
  await waitText(page, '#chosen .account .badge', 'Disabled');
  await waitText(page, `#results .found[data-account="${carol.id}"] .badge`, 'Disabled');
  const refused = await fetch(`${base}/v1/me`, { headers: { Authorization: `Bearer ${carol.token}` } });
  assert.equal(refused.status, 403);
  assert.equal((await refused.json()).code, 'account_disabled');
  await shot(page, 'admin-disabled-desktop');
  await status.getByRole('button', { name: 'Enable account' }).click();
  await waitText(page, '#account-status .form-ok', 'carol-the-tester is active');
  assert.equal(await balance(carol), 300, 'the money stayed and the player acts again');

  // The audit log lists what this admin did, newest first.
  await waitText(page, '#audit tbody tr:first-child .action', 'enable account');
  const actions = await page.locator('#audit tbody .action').allTextContents();
  for (const a of ['enable account', 'disable account', 'new token', 'debit', 'credit', 'close lobby', 'stop game', 'next config', 'create lobby']) {
    assert.ok(actions.includes(a), `the audit log shows ${a}: ${actions}`);
  }
  assert.ok(actions.indexOf('enable account') < actions.indexOf('disable account'), 'newest first');
  await waitText(page, '#audit tbody tr', 'chargeback under review');
  await waitText(page, '#ledger .ledger-ok.ok', 'Every invariant holds');
  await shot(page, 'admin-desktop');
  await page.evaluate(() => window.scrollTo(0, 0));
  await shot(page, 'admin-window-desktop', { fullPage: false });

  const phone = await open(t, '/admin', { viewport: PHONE });
  await phone.evaluate((token) => sessionStorage.setItem('rps.adminToken', token), adminToken);
  await phone.reload();
  await waitText(phone, '#ledger .ledger-ok.ok', 'Every invariant holds');
  await shot(phone, 'admin-phone');
});

// illegible lists the texts of page whose colour stands out from the background behind them by
// less than WCAG AA's 4.5:1 (3:1 for large text), each with its colours and ratio.
async function illegible(page) {
  return page.evaluate(() => {
    const rgba = (c) => (c.match(/[\d.]+/g) ?? []).map(Number);
    const lum = ([r, g, b]) => {
      const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const behind = (el) => {
      for (let e = el; e; e = e.parentElement) {
        const c = rgba(getComputedStyle(e).backgroundColor);
        if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) return c;
      }
      return [255, 255, 255];
    };
    const out = [];
    for (const el of document.querySelectorAll('body *')) {
      const own = [...el.childNodes].some((n) => n.nodeType === Node.TEXT_NODE && n.textContent.trim());
      const style = getComputedStyle(el);
      if (!own || style.visibility === 'hidden' || el.getClientRects().length === 0 || el.closest('svg')) continue;
      const [fg, bg] = [rgba(style.color), behind(el)];
      const [a, b] = [lum(fg), lum(bg)];
      const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
      const size = parseFloat(style.fontSize);
      const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
      if (ratio < (large ? 3 : 4.5)) {
        out.push(`${el.tagName.toLowerCase()}.${el.className} "${el.textContent.trim().slice(0, 30)}": ${style.color} on rgb(${bg.join(', ')}), ${ratio.toFixed(2)}:1`);
      }
    }
    return out;
  });
}

test('the console follows the system\'s theme, light or dark, and every text in it is legible', async (t) => {
  assert.ok(finishedLobby, 'needs the lobby played by the first test');
  for (const colorScheme of ['light', 'dark']) {
    const lobby = await open(t, `/lobbies/${finishedLobby.id}`, { colorScheme });
    await waitText(lobby, '#last .outcome.winner', 'alice');
    await lobby.getByRole('button', { name: 'Verify the whole log' }).click();
    await waitText(lobby, '.verify-result.ok', 'Verified through event');
    const admin = await open(t, '/admin', { colorScheme });
    await admin.evaluate((token) => sessionStorage.setItem('rps.adminToken', token), adminToken);
    await admin.reload();
    await waitText(admin, '#ledger .ledger-ok.ok', 'Every invariant holds');
    const front = await open(t, '/', { colorScheme, viewport: PHONE });
    await front.locator('table.lobbies').first().waitFor(WAIT);
    for (const [name, page] of [['lobby', lobby], ['admin', admin], ['front', front]]) {
      const background = await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
      const dark = background === 'rgb(17, 22, 28)';
      assert.equal(dark, colorScheme === 'dark', `the ${name} page's background in the ${colorScheme} theme: ${background}`);
      assert.deepEqual(await illegible(page), [], `texts of the ${name} page hard to read in the ${colorScheme} theme`);
    }
    if (colorScheme === 'dark') {
      await shot(lobby, 'lobby-dark-desktop');
      await shot(admin, 'admin-dark-desktop');
      await shot(front, 'front-dark-phone');
    }
  }
});

// duel plays one game of a two-player lobby to its end: winner plays Rock, loser Scissors.
async function duel(lobby, winner, loser) {
  await register(lobby, winner);
  await register(lobby, loser);
  await commit(lobby, winner, '0win');
  await commit(lobby, loser, '2lose');
  await reveal(lobby, winner, '0win');
  await reveal(lobby, loser, '2lose');
}

test('the standings rank finished games by wins or net, and link to profiles', async (t) => {
  // ivan wins twice at 100 (most wins); a hostile-named player wins once at 1000 (best net).
  const [ivan, judy, whale, leo] = await Promise.all([newPlayer('ivan'), newPlayer('judy'), newPlayer(HOSTILE, 1000), newPlayer('leo', 1000)]);
  const small = await createLobby('Standings duel');
  await duel(small, ivan, judy);
  await duel(small, ivan, judy);
  await duel(await createLobby('High roller', { betSize: 1000 }), whale, leo);

  const page = await open(t, '/');
  await page.getByRole('link', { name: 'Standings', exact: true }).click(); // not the lobby 'Standings duel'
  await page.waitForURL('**/standings');
  const firstRow = () => page.locator('table.standings tbody tr').first();
  await waitText(page, 'table.standings tbody tr:first-child', 'ivan');
  assert.equal(await firstRow().locator('td').nth(2).textContent(), '2', 'ivan played 2 games');
  assert.equal(await firstRow().locator('td').nth(3).textContent(), '2', 'and won both');
  await shot(page, 'standings-desktop');

  await page.getByLabel('Rank by').selectOption('net');
  await waitText(page, 'table.standings.by-net tbody tr:first-child .player-name', HOSTILE);
  assert.equal(await firstRow().locator('td').nth(4).textContent(), '+1,000');
  assert.match(page.url(), /by=net&period=all$/);
  await page.getByLabel('Period').selectOption('7d');
  await waitText(page, 'table.standings.by-net tbody tr:first-child .player-name', HOSTILE);
  assert.match(page.url(), /by=net&period=7d$/);
  const last = await page.locator('table.standings tbody tr').last().textContent();
  assert.match(last, /leo.*-1,000/, 'the biggest loser is last');
  assert.equal(await page.locator('img').count(), 0, 'no element was made from a name');

  // A reload keeps the choice; a name opens the public profile.
  await page.reload();
  await waitText(page, 'table.standings.by-net tbody tr:first-child .player-name', HOSTILE);
  assert.equal(await page.getByLabel('Period').inputValue(), '7d');
  await page.locator('table.standings').getByRole('link', { name: 'ivan' }).click();
  await page.waitForURL(`**/accounts/${ivan.id}`);
  await waitText(page, 'h1 .player-name', 'ivan');
  await page.locator('#profile').waitFor(WAIT);
  assert.deepEqual(await page.locator('#profile dd').allTextContents(), ['2', '2', '+200']);
  await page.locator('#games li').nth(1).waitFor(WAIT);
  const games = await page.locator('#games li').allTextContents();
  assert.equal(games.length, 2, 'ivan played two games');
  assert.match(games[0], /^Standings duel game 2: won, stake 100, net \+100 · /, 'newest first');
  assert.match(games[1], /^Standings duel game 1: won, stake 100, net \+100 · /);
  await shot(page, 'profile-desktop');

  const phone = await open(t, '/standings?by=wins&period=30d', { viewport: PHONE });
  await waitText(phone, 'table.standings tbody tr:first-child', 'ivan');
  await shot(phone, 'standings-phone');
  const profile = await open(t, `/accounts/${whale.id}`, { viewport: PHONE });
  await waitText(profile, 'h1 .player-name', HOSTILE);
  await waitText(profile, '#games li', 'High roller game 1: won, stake 1,000, net +1,000');
  assert.equal(await profile.locator('img').count(), 0);
  await shot(profile, 'profile-phone');
});

test('a lobby with a long history opens at its last events and pages its past games', async (t) => {
  const lobby = await createLobby('Long history');
  const [kim, lee] = await Promise.all([newPlayer('kim', 5000), newPlayer('lee', 5000)]);
  for (let i = 0; i < 12; i++) await duel(lobby, i % 2 ? lee : kim, i % 2 ? kim : lee);

  const { head } = await call('GET', `/v1/lobbies/${lobby.id}`);
  const page = await open(t, '/');
  const stream = page.waitForRequest(/\/events\/stream/);
  await page.goto(`/lobbies/${lobby.id}`);
  const after = Number(new URL((await stream).url()).searchParams.get('after'));
  assert.equal(after, head.seq - 12, 'the page follows the log from its last 12 events, not from event 1');
  await waitText(page, '#now h2', 'Game 13');
  await waitText(page, '#last h2', 'Game 12: result');
  await waitText(page, '#last .outcome.winner', 'lee');
  await waitText(page, '.live', 'live');
  await page.locator('#feed li').nth(11).waitFor(WAIT);
  const seqs = (await page.locator('#feed .seq').allTextContents()).map((x) => Number(x.slice(1)));
  assert.deepEqual(seqs, Array.from({ length: 12 }, (_, i) => head.seq - i), 'the last 12 events, newest first');

  // The first page of the lobby's games holds the open game and the last 9 ended ones.
  const pastButtons = () => page.locator('#past ul.past > li > button');
  await waitText(page, '#past', 'Game 4');
  assert.equal(await pastButtons().count(), 9);
  assert.equal(await pastButtons().first().textContent(), 'Game 12', 'newest first');
  await page.getByRole('button', { name: 'Show older games' }).click();
  await pastButtons().nth(11).waitFor(WAIT);
  assert.equal(await pastButtons().count(), 12);
  assert.equal(await pastButtons().last().textContent(), 'Game 1', 'oldest last');
  assert.equal(await page.getByRole('button', { name: 'Show older games' }).count(), 0, 'every game is read');
  await page.locator('#past').getByRole('button', { name: 'Game 1', exact: true }).click();
  await waitText(page, '#past .transcript .moves', 'Scissors');
});

test('hostile names render as text', async (t) => {
  const lobby = await createLobby(HOSTILE, { playersCountLimit: 3 });
  const mallory = await newPlayer(HOSTILE_PLAYER);
  await register(lobby, mallory);

  const list = await open(t, '/');
  await waitText(list, 'table.lobbies .lobby-name', HOSTILE);
  const lobbyPage = await open(t, `/lobbies/${lobby.id}`);
  await waitText(lobbyPage, 'h1 .lobby-name', HOSTILE);
  await waitText(lobbyPage, '#now .player', HOSTILE_PLAYER);
  await lobbyPage.getByRole('button', { name: 'Verify the whole log' }).click();
  await waitText(lobbyPage, '.verify-result.ok', 'Verified through event');
  const admin = await open(t, '/admin');
  await admin.evaluate((token) => sessionStorage.setItem('rps.adminToken', token), adminToken);
  await admin.reload();
  await admin.locator('#manage-lobby').selectOption(lobby.id);
  await waitText(admin, '#manage .lobby-name', HOSTILE);
  await admin.locator('#find-account').getByLabel('Name or account id').fill('<img');
  await admin.getByRole('button', { name: 'Search' }).click();
  await waitText(admin, `#results .found[data-account="${mallory.id}"] .player-name`, HOSTILE_PLAYER);
  await waitText(admin, '#audit tbody tr', HOSTILE);
  for (const page of [list, lobbyPage, admin]) {
    assert.equal(await page.locator('img').count(), 0, 'no element was made from a name');
  }
  await shot(lobbyPage, 'hostile-names-desktop');
});

test('the front page lists joinable lobbies first, then games in play, then closed lobbies', async (t) => {
  const league = await createLobby('Sunday league', { playersCountLimit: 4, betSize: 50 });
  const duel = await createLobby('Quick duel', { betSize: 20 });
  const [erin, frank, grace] = await Promise.all([newPlayer('erin'), newPlayer('frank'), newPlayer('grace')]);
  await register(league, erin);
  await register(league, grace);
  await register(duel, erin);
  await register(duel, frank); // full: in play
  await commit(duel, frank, '1frank-secret');

  for (const [viewport, name] of [[DESKTOP, 'lobbies-desktop'], [PHONE, 'lobbies-phone']]) {
    const page = await open(t, '/', { viewport });
    await page.locator(`table.lobbies a[href="/lobbies/${duel.id}"]`).waitFor(WAIT);
    const rows = await page.locator('table.lobbies tbody tr').evaluateAll((trs) => trs.map((tr) => ({
      id: tr.querySelector('.countdown').dataset.lobby,
      stage: tr.querySelector('.badge[class*=stage-]').textContent,
      closed: tr.classList.contains('closed'),
    })));
    const firstInPlay = rows.findIndex((r) => r.stage === 'Moves' || r.stage === 'Reveal');
    const firstClosed = rows.findIndex((r) => r.closed);
    assert.ok(rows.slice(0, firstInPlay).every((r) => r.stage === 'Registration' && !r.closed), JSON.stringify(rows));
    assert.ok(firstInPlay < firstClosed && rows.slice(firstClosed).every((r) => r.closed), JSON.stringify(rows));
    assert.equal(rows[firstInPlay].id, duel.id);
    await waitText(page, `table.lobbies .countdown[data-lobby="${league.id}"]`, 's');
    await shot(page, name);
  }
});

test('a lobby that does not exist says so and follows nothing', async (t) => {
  const page = await open(t, '/lobbies/00000000-0000-4000-8000-000000000000', { expectErrors: [/status of 404 /] });
  await waitText(page, 'h1', 'There is no such lobby');
});

test('the console is served with a strict Content-Security-Policy and the API keeps its 404', async () => {
  for (const path of ['/', '/admin', '/standings', `/accounts/${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}`, `/lobbies/${finishedLobby?.id ?? '00000000-0000-0000-0000-000000000000'}`, '/assets/js/lobby.js']) {
    const res = await fetch(base + path);
    await res.arrayBuffer();
    assert.equal(res.status, 200, path);
    const csp = res.headers.get('content-security-policy');
    assert.match(csp, /script-src 'self'/, path);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/, path);
  }
  const missing = await fetch(`${base}/v1/nothing-here`);
  assert.equal(missing.status, 404);
  assert.equal((await missing.json()).code, 'not_found');
});

// Last: once the admin has a key, every admin action must be signed (the tests above act unsigned).
let adminSeed; // the admin's key, bound by the next test, for the one after it
test('an admin binds a key on the admin page, whose forms then sign its acts, which the lobby page shows and verifies', async (t) => {
  const page = await open(t, '/admin', { expectErrors: [/status of 409 /] });
  await page.evaluate((token) => sessionStorage.setItem('rps.adminToken', token), adminToken);
  await page.reload();
  await waitText(page, '#ledger .ledger-ok.ok', 'Every invariant holds');
  await waitText(page, '#signing-key', 'No key loaded');

  // The admin makes a key in the browser and binds it: its first key, signed by itself. The seed
  // is shown once, and is the key in use.
  await page.getByRole('button', { name: 'Generate and bind a key' }).click();
  await waitText(page, '#signing-key .key-in-use', 'Every action on this page is signed with key');
  const keyId = (await page.locator('#signing-key code.key-id').textContent()).trim();
  const seed = (await page.locator('#signing-key .seed-once code.seed').textContent()).trim();
  assert.match(seed, /^[0-9a-f]{64}$/);
  assert.equal(keyIdOf(hex(ed25519.getPublicKey(Buffer.from(seed, 'hex')))), keyId, 'the seed shown is the key in use');
  const admin = (await call('GET', '/v1/me', { token: adminToken })).id;
  const bound = await call('GET', `/v1/accounts/${admin}/keys`);
  assert.deepEqual(bound.keys.map((k) => k.keyId), [keyId], 'the key is the admin\'s');
  assert.equal(bound.events[0].data.signer, keyId, 'signed by itself');
  adminSeed = seed;
  assert.equal(await page.evaluate(() => document.cookie), '', 'no cookie holds the key');
  for (const colorScheme of ['light', 'dark']) {
    await page.emulateMedia({ colorScheme });
    assert.deepEqual(await illegible(page), [], `texts of the admin page with a key hard to read in the ${colorScheme} theme`);
    await page.evaluate(() => window.scrollTo(0, 0));
    await shot(page, `admin-key-${colorScheme}-desktop`, { fullPage: false });
  }
  await page.emulateMedia({ colorScheme: 'light' });

  // The page's forms create a lobby, set its next config, stop its game and close it, each signed.
  const create = page.locator('#create-lobby');
  await create.getByLabel('Name').fill('Signed by its admin');
  await create.getByRole('button', { name: 'Create lobby' }).click();
  await waitText(page, '#create-lobby .form-ok', 'Created “Signed by its admin”');
  const lobbyId = await page.locator('#manage-lobby').inputValue();
  const next = page.locator('#next-config');
  await next.getByLabel('Bet').fill('50');
  await next.getByLabel('Players limit').fill('3');
  await next.getByLabel('Ruleset').selectOption('rps');
  await next.getByRole('button', { name: 'Set next config' }).click();
  await waitText(page, '#next-config .form-ok', 'The next game will use this config');
  // A stop signed for a game that is no longer the lobby's current one (as if another admin's act
  // came between the read and the stop) is refused, and says so at the form; sent again, it is
  // signed for the current game.
  const stop = page.locator('#stop-game');
  await stop.getByLabel('Reason').fill('a test of signed stops');
  await page.route(`**/v1/lobbies/${lobbyId}`, async (route) => {
    const response = await route.fetch();
    const view = await response.json();
    view.game.id = randomUUID();
    await route.fulfill({ response, json: view });
  }, { times: 1 });
  await stop.getByRole('button', { name: 'Stop game' }).click();
  await waitText(page, '#stop-game .form-error', 'stale_signature');
  await stop.getByRole('button', { name: 'Stop game' }).click();
  await waitText(page, '#stop-game .form-ok', 'Stopped');
  await page.getByRole('button', { name: 'Close lobby' }).click();
  await waitText(page, '#close-lobby .form-ok', 'Closed');

  const log = await call('GET', `/v1/lobbies/${lobbyId}/events?limit=1000`);
  // Closing stops the registration the stop opened: the rules' stop, no admin's act.
  const acts = log.events.filter(adminActOf);
  assert.deepEqual(acts.map((e) => [e.type, e.data.auth?.keyId]), [['lobby_created', keyId], ['next_config_changed', keyId],
    ['game_stopped', keyId], ['lobby_closed', keyId]]);
  assert.deepEqual(acts[1].data.auth.request, { betSize: 50, entryTimeoutMs: 60000, maxExtensions: 3, maxRounds: 100, moveTimeoutMs: 60000,
    playersCountLimit: 3, resolution: 'classic', revealTimeoutMs: 60000, ruleset: 'rps', startWhenFull: true }, 'the next config as the form sent it');

  // Another tab, without the key: its unsigned act is refused, saying how to sign; a key that is
  // not the admin's is refused; the admin's own seed, pasted, signs again.
  const other = await open(t, '/admin', { expectErrors: [/status of 401 /] });
  await other.evaluate((token) => sessionStorage.setItem('rps.adminToken', token), adminToken);
  await other.reload();
  await waitText(other, '#ledger .ledger-ok.ok', 'Every invariant holds');
  await other.locator('#create-lobby').getByLabel('Name').fill('Unsigned');
  await other.locator('#create-lobby').getByRole('button', { name: 'Create lobby' }).click();
  await waitText(other, '#create-lobby .form-error', 'Load your signing key');
  const loadKey = other.locator('#load-key');
  await loadKey.getByLabel('Private key').fill(hex(ed25519.utils.randomSecretKey()));
  await loadKey.getByRole('button', { name: 'Load key' }).click();
  await waitText(other, '#load-key .field-error', 'is not an active key of your account');
  await loadKey.getByLabel('Private key').fill(seed.toUpperCase());
  await loadKey.getByRole('button', { name: 'Load key' }).click();
  await waitText(other, '#signing-key .key-in-use', keyId);
  assert.equal(await other.locator('#signing-key .seed-once').count(), 0, 'a pasted seed is not shown again');
  await other.locator('#create-lobby').getByRole('button', { name: 'Create lobby' }).click();
  await waitText(other, '#create-lobby .form-ok', 'Created “Unsigned”');

  for (const colorScheme of ['light', 'dark']) {
    const lobby = await open(t, `/lobbies/${lobbyId}`, { colorScheme });
    await waitText(lobby, '#feed li', `signed by admin key ${keyId}`);
    assert.equal(await lobby.locator('#feed li', { hasText: `signed by admin key ${keyId}` }).count(), 4);
    await lobby.getByRole('button', { name: 'Verify the whole log' }).click();
    await waitText(lobby, '.verify-result.ok', `Verified through event ${log.events.at(-1).seq}`);
    await waitText(lobby, '.verify-result.ok', '4 admin acts checked against their admins’ keys.');
    assert.deepEqual(await illegible(lobby), [], `texts of the lobby page hard to read in the ${colorScheme} theme`);
    await shot(lobby, `lobby-admin-signed-${colorScheme}`);
  }
});

// keyOf is the Ed25519 key of a seed (hex), as the browser test's players hold one.
function keyOf(seed) {
  const secret = Buffer.from(seed, 'hex');
  const publicKey = hex(ed25519.getPublicKey(secret));
  return { seed, secret, publicKey, keyId: keyIdOf(publicKey) };
}

// After the admin bound a key: its key card adds and retires keys, and the chosen account's key
// recovery is signed by it.
test('an admin adds a second key and retires it on the key card, and recovers a player\'s keys signed by its own', async (t) => {
  assert.ok(adminSeed, 'needs the key the previous test bound');
  const key = keyOf(adminSeed);
  const admin = (await call('GET', '/v1/me', { token: adminToken })).id;
  const keyLogOf = (id) => call('GET', `/v1/accounts/${id}/keys`);
  const page = await open(t, '/admin', { expectErrors: [/status of (404|409) /] });
  await page.evaluate(([token, seed]) => {
    sessionStorage.setItem('rps.adminToken', token);
    sessionStorage.setItem('rps.adminKey', seed);
  }, [adminToken, adminSeed]);
  await page.reload();
  const keys = page.locator('#admin-keys');
  await waitText(page, `#admin-keys li[data-key="${key.keyId}"]`, 'In use in this tab');
  assert.equal(await keys.locator(`li[data-key="${key.keyId}"] button`).count(), 0, 'the key in use cannot be retired here');

  // Another key, made in the browser and bound signed by the key in use; its seed is shown once.
  await page.getByRole('button', { name: 'Add another key' }).click();
  await page.locator('#add-key .seed-once code.seed').waitFor(WAIT);
  const second = keyOf((await page.locator('#add-key .seed-once code.seed').textContent()).trim());
  await waitText(page, '#add-key .form-ok', `Key ${second.keyId} is bound to your account`);
  await waitText(page, `#admin-keys li[data-key="${second.keyId}"]`, 'added');
  const added = (await keyLogOf(admin)).events.at(-1);
  assert.deepEqual([added.type, added.data.keyId, added.data.via, added.data.signer], ['key_added', second.keyId, 'add_key', key.keyId]);
  await waitText(page, '#signing-key .key-in-use', key.keyId);

  // Retire it: the page asks first, in the danger's colours; Cancel leaves it; confirmed, it is
  // retired, signed by the key in use.
  await keys.getByRole('button', { name: `Retire key ${second.keyId}` }).click();
  await waitText(page, '#admin-keys .confirm', `Retire key ${second.keyId}? It stops signing for your account at once`);
  for (const colorScheme of ['light', 'dark']) {
    await page.emulateMedia({ colorScheme });
    assert.deepEqual(await illegible(page), [], `texts of the admin's keys hard to read in the ${colorScheme} theme`);
    await keys.screenshot({ path: join(shots, `admin-keys-confirm-${colorScheme}.png`) });
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await keys.getByRole('button', { name: 'Cancel' }).click();
  assert.equal(await keys.locator('.confirm').isHidden(), true);
  assert.equal((await keyLogOf(admin)).events.at(-1).seq, added.seq, 'cancelled: nothing sent');
  await keys.getByRole('button', { name: `Retire key ${second.keyId}` }).click();
  await keys.getByRole('button', { name: `Yes, retire key ${second.keyId}` }).click();
  await waitText(page, '#admin-keys .form-ok', `Key ${second.keyId} is retired`);
  await waitText(page, `#admin-keys li.retired[data-key="${second.keyId}"]`, 'Retired');
  const retired = (await keyLogOf(admin)).events.at(-1);
  assert.deepEqual([retired.type, retired.data.keyId, retired.data.signer], ['key_retired', second.keyId, key.keyId]);

  // A third key, for the picture README shows: the admin page with a key loaded, as the window
  // shows it (reloaded: the seed is shown only once).
  await page.getByRole('button', { name: 'Add another key' }).click();
  await page.waitForFunction((prev) => document.querySelector('#add-key code.seed')?.textContent !== prev, second.seed);
  await waitText(page, '#add-key .form-ok', 'is bound to your account');
  const third = keyOf((await page.locator('#add-key .seed-once code.seed').textContent()).trim());
  await page.reload();
  await waitText(page, `#admin-keys li[data-key="${third.keyId}"]`, 'added');
  await waitText(page, '#ledger .ledger-ok.ok', 'Every invariant holds');
  for (const colorScheme of ['light', 'dark']) {
    await page.emulateMedia({ colorScheme });
    await page.evaluate(() => window.scrollTo(0, 0));
    await shot(page, `admin-keys-window-${colorScheme}`, { fullPage: false });
  }
  await page.emulateMedia({ colorScheme: 'light' });

  // That key retired meanwhile from elsewhere (here through the API, signed by itself): the
  // page's Retire is refused at the form, and the list shows the key as it is.
  await call('DELETE', `/v1/me/keys/${third.keyId}`, { token: adminToken, ...await sign(third, { action: 'retire_key', player: admin, payload: { keyId: third.keyId }, idempotencyKey: randomUUID() }) });
  await keys.getByRole('button', { name: `Retire key ${third.keyId}` }).click();
  await keys.getByRole('button', { name: `Yes, retire key ${third.keyId}` }).click();
  await waitText(page, '#admin-keys .form-error', '(not_found)');
  await waitText(page, `#admin-keys li.retired[data-key="${third.keyId}"]`, 'Retired');

  // A player lost their phone: the admin recovers the account to the key of the new one. A key
  // bound already is refused at its field; the confirmation says what the recovery does.
  const quinn = await newPlayer('quinn', 0);
  const phone = keyOf(hex(ed25519.utils.randomSecretKey()));
  await page.locator('#find-account').getByLabel('Name or account id').fill(quinn.id);
  await page.getByRole('button', { name: 'Search' }).click();
  await page.getByRole('button', { name: 'Choose quinn' }).click();
  const recovery = page.locator('#recover-keys');
  await recovery.getByLabel('New public key').fill(quinn.key.publicKey);
  await recovery.getByLabel('Reason').fill('lost phone; identity checked by video call');
  await recovery.getByRole('button', { name: 'Recover keys' }).click();
  await recovery.getByRole('button', { name: 'Yes, recover quinn’s keys' }).click();
  await waitText(page, '#recover-keys label:has([data-field="publicKey"]) .field-error', 'key_taken');
  await recovery.getByLabel('New public key').fill(phone.publicKey.toUpperCase());
  await recovery.getByRole('button', { name: 'Recover keys' }).click();
  await waitText(page, '#recover-keys .confirm', `Recover quinn’s keys? Every key quinn has now is retired at once: quinn’s phones stop signing, and only key ${phone.keyId} signs for quinn from now on. ` +
    `The recovery is public in quinn’s key log, with your reason, signed by you (key ${key.keyId}).`);
  assert.equal(await recovery.evaluate((form) => getComputedStyle(form.querySelector('.confirm button.danger')).backgroundColor), 'rgb(179, 38, 30)', 'the confirming button is a danger button');
  await recovery.locator('.confirm').scrollIntoViewIfNeeded();
  await recovery.screenshot({ path: join(shots, 'admin-recovery-confirm-light.png') });
  await recovery.getByRole('button', { name: 'Yes, recover quinn’s keys' }).click();
  await waitText(page, '#recover-keys .form-ok', `Recovered: key ${phone.keyId} is quinn’s only key now; retired ${quinn.key.keyId}.`);
  await waitText(page, '#audit tbody tr:first-child .action', 'key recovery');

  // The player's key log holds the recovery, signed by the admin's key, and the profile says so,
  // checked in the browser against the admin's own key log.
  const log = await keyLogOf(quinn.id);
  const recovered = log.events.at(-1);
  assert.deepEqual([recovered.type, recovered.data.keyId, recovered.data.retired, recovered.data.admin, recovered.data.reason],
    ['keys_recovered', phone.keyId, [quinn.key.keyId], admin, 'lost phone; identity checked by video call']);
  assert.deepEqual([recovered.data.auth.action, recovered.data.auth.keyId, recovered.data.auth.request],
    ['recover_keys', key.keyId, { publicKey: phone.publicKey, reason: 'lost phone; identity checked by video call' }]);
  assert.deepEqual(log.keys.filter((k) => k.retiredSeq == null).map((k) => [k.keyId, k.recovery]), [[phone.keyId, true]]);
  await page.locator('#recover-keys').getByRole('link', { name: 'quinn’s key log' }).click();
  await page.waitForURL(`**/accounts/${quinn.id}`);
  await waitText(page, '#keys li.recovery', `Key ${phone.keyId} given by the operator in a recovery, not signed by the player; it retired key ${quinn.key.keyId}. ` +
    `Reason: “lost phone; identity checked by video call”. Signed by admin key ${key.keyId}, checked against the admin's key log.`);
  await waitText(page, '#keys .key-log-result.ok', 'Key log verified in this browser through key event 2');
  await shot(page, 'profile-recovery-signed-desktop');

  const phoneView = await open(t, '/admin', { viewport: PHONE });
  await phoneView.evaluate(([token, seed]) => {
    sessionStorage.setItem('rps.adminToken', token);
    sessionStorage.setItem('rps.adminKey', seed);
  }, [adminToken, adminSeed]);
  await phoneView.reload();
  await waitText(phoneView, `#admin-keys li.retired[data-key="${third.keyId}"]`, 'Retired');
  await shot(phoneView, 'admin-keys-phone', { fullPage: false });
});
