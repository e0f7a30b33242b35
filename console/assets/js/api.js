// The console's only way to the server: the public /v1 API, as any third-party client speaks it.
// An admin's token lives in sessionStorage (gone with the tab), is sent only as a bearer header,
// and is never put in a URL, a cookie or a log. So does an admin's private key (its seed), which
// is never sent at all: only the signatures it makes are.
import canonicalize from '../vendor/canonicalize/canonicalize.js';
import { ADMIN_ACTIONS_NAMING_GAME, signAdminAction, signerOf } from './signed.js';

function tabItem(name) {
  return {
    get: () => sessionStorage.getItem(name),
    set: (value) => sessionStorage.setItem(name, value),
    clear: () => sessionStorage.removeItem(name),
  };
}

export const adminToken = tabItem('rps.adminToken');
export const adminKey = tabItem('rps.adminKey');

// A refusal from the server: the problem+json body's code, field and detail.
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.code = problem.code || 'internal';
    this.field = problem.field || null;
  }
}

// api calls /v1 + path. admin sends the admin's token; idempotencyKey makes a retry safe;
// signature holds the Rps-* headers of a signed request. A body is sent in its RFC 8785 form,
// the form a signature covers it in.
export async function api(path, { method = 'GET', body, admin = false, idempotencyKey, signature } = {}) {
  const headers = { Accept: 'application/json', ...signature };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (admin) headers.Authorization = `Bearer ${adminToken.get() ?? ''}`;
  if (idempotencyKey) headers['Idempotency-Key'] = idempotencyKey;
  let res;
  try {
    res = await fetch(`/v1${path}`, { method, headers, body: body === undefined ? undefined : canonicalize(body), cache: 'no-store' });
  } catch {
    throw new ApiError(0, { code: 'network', detail: 'the server cannot be reached' });
  }
  const text = await res.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  if (!res.ok) throw new ApiError(res.status, json ?? { detail: `HTTP ${res.status}` });
  return json;
}

// adminIdentity is the signed-in admin's account id and the log's origin, which every message it
// signs names: {admin, origin}, read once per token.
let identity = null;
export function adminIdentity() {
  const token = adminToken.get();
  if (identity?.token !== token) {
    identity = {
      token,
      read: Promise.all([api('/me', { admin: true }), api('/log')]).then(([me, log]) => ({ admin: me.id, origin: log.origin })),
    };
    identity.read.catch(() => { identity = null; });
  }
  return identity.read;
}

// adminAct sends an admin action (action: its name in the audit log) on lobbyId or account, with
// body (undefined: none) and idempotencyKey. With a key loaded (adminKey) it is signed, over
// the body as sent and, for a stop or a next config, the lobby's current game read just before
// (sent as Rps-Game-Id); without one it goes unsigned, which the server takes only from an admin
// that has no key.
export async function adminAct(path, { method = 'POST', action, lobbyId = null, account = null, body, idempotencyKey }) {
  const seed = adminKey.get();
  if (!seed) return api(path, { method, admin: true, body, idempotencyKey });
  const [signer, { admin, origin }] = await Promise.all([signerOf(seed), adminIdentity()]);
  const gameId = ADMIN_ACTIONS_NAMING_GAME.has(action) ? (await api(`/lobbies/${lobbyId}`, { admin: true })).game?.id ?? null : null;
  const signature = await signAdminAction(signer, {
    origin, admin, action, lobbyId, account, gameId, request: body, idempotencyKey, signedAt: Date.now(),
  });
  return api(path, { method, admin: true, body, idempotencyKey, signature });
}

// allPages follows a cursor-paged list to its end and returns the items under key.
export async function allPages(path, key) {
  const items = [];
  const sep = path.includes('?') ? '&' : '?';
  let after = null;
  do {
    const page = await api(`${path}${sep}limit=500${after ? `&after=${encodeURIComponent(after)}` : ''}`);
    items.push(...page[key]);
    after = page.next;
  } while (after);
  return items;
}

// events yields a lobby's whole log in order, a page at a time.
export async function* events(lobbyId) {
  let after = 0;
  for (;;) {
    const page = await api(`/lobbies/${lobbyId}/events?after=${after}&limit=1000`);
    yield* page.events;
    if (page.events.length === 0 || page.next === after) return;
    after = page.next;
  }
}

// keyLog reads an account's keys and its whole key log: {accountId, keys, events (from seq 1),
// head}, following the log a page at a time up to its head.
export async function keyLog(accountId) {
  const path = `/accounts/${encodeURIComponent(accountId)}/keys`;
  const first = await api(path);
  const events = [...first.events];
  while (first.head && events.length && events.at(-1).seq < first.head.seq) {
    const page = await api(`${path}?after=${events.at(-1).seq}`);
    if (page.events.length === 0) break;
    events.push(...page.events);
  }
  return { ...first, events };
}

// A fresh key for one intended action. crypto.randomUUID needs a secure context, which
// http://<host>:8080 is not; getRandomValues works everywhere.
export function newIdempotencyKey() {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');
}

// serverClock maps the server's time onto the local clock from one response's serverTime, so a
// countdown is right even when the local clock is not.
export function serverClock(serverTime) {
  const offset = serverTime - Date.now();
  return () => Date.now() + offset;
}
