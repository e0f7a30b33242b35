// Players' and admins' signed actions, as the browser checks them: the message a key signs (byte
// for byte what tournament.ActionMessage builds on the server, checked against the vectors in
// tournament/testdata/signed_actions.json and signed_admin_actions.json), key ids, sealed
// signatures, and Ed25519 verification with the browser's WebCrypto, or @noble/curves (vendored,
// loaded only then) where WebCrypto has no Ed25519. The admin page also signs with an admin's
// own key (signerOf, signAction, signAdminAction), with the same two implementations.
import { blake2b } from '../vendor/noble-hashes/blake2.js';
import canonicalize from '../vendor/canonicalize/canonicalize.js';

const utf8 = new TextEncoder();

// The domain that separates a player's action signature from anything else a key could sign.
export const ACTION_DOMAIN = 'rps-action-v1\n';

function hex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

// bytesOf decodes lower-case hex of exactly n bytes, or returns null.
function bytesOf(text, n) {
  if (typeof text !== 'string' || !new RegExp(`^[0-9a-f]{${2 * n}}$`).test(text)) return null;
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = parseInt(text.slice(2 * i, 2 * i + 2), 16);
  return out;
}

// keyIdOf names a public key (64 hex characters): the first 16 hex characters of its blake2b-256.
export function keyIdOf(publicKey) {
  const raw = bytesOf(publicKey, 32);
  if (!raw) throw new Error(`a public key is 64 lower-case hex characters, not ${JSON.stringify(publicKey)}`);
  return hex(blake2b(raw, { dkLen: 32 })).slice(0, 16);
}

// sealSignature is what an event shows of a signature over a sealed value (a commitment or a
// reveal) until the round is public: blake2b-256 of its 64 bytes, in hex.
export function sealSignature(signature) {
  const raw = bytesOf(signature, 64);
  if (!raw) throw new Error('a signature is 128 lower-case hex characters');
  return hex(blake2b(raw, { dkLen: 32 }));
}

// The payload each action signs (spec: "Payload per action").
export function actionPayload(action, p) {
  switch (action) {
    case 'sign_up': return { name: p.name, publicKey: p.publicKey };
    case 'add_key': return { publicKey: p.publicKey };
    case 'retire_key': return { keyId: p.keyId };
    case 'register': return { bet: p.bet };
    case 'leave': return {};
    case 'commit': return { commitment: p.commitment };
    case 'reveal': return { reveal: p.reveal };
    case 'quick_join': return { betSize: p.betSize, ruleset: p.ruleset ?? null };
    default: throw new Error(`no signed action is called ${JSON.stringify(action)}`);
  }
}

// actionMessage is the text a player's key signs: the domain, then the RFC 8785 JSON of every
// member, null where the action has none.
export function actionMessage({ origin, action, player, lobbyId, gameId, round, payload, idempotencyKey, keyId, signedAt }) {
  if (!Number.isSafeInteger(signedAt)) throw new Error(`signedAt ${signedAt} is not an exact JSON number`);
  return ACTION_DOMAIN + canonicalize({
    action,
    gameId: gameId ?? null,
    idempotencyKey: idempotencyKey ?? null,
    keyId,
    lobbyId: lobbyId ?? null,
    origin,
    payload,
    player: player ?? null,
    round: round ?? null,
    signedAt,
  });
}

// adminMessage is the text an admin's key signs for the act an event records, from the event's
// data.auth (tournament.AdminAuth): the player is the admin, the payload {account, request} (the
// account acted on, null but for a recovery's; the request's body as signed, null for none),
// taken on lobbyId (null for create_lobby, which makes the lobby, and for recover_keys), in the
// game auth.gameId names (a stop's or a next config's: the lobby's current game; null otherwise).
export function adminMessage(origin, auth, { lobbyId = null, account = null } = {}) {
  return actionMessage({
    origin, action: auth.action, player: auth.admin, lobbyId: auth.action === 'create_lobby' ? null : lobbyId,
    gameId: auth.gameId ?? null, payload: { account: account ?? null, request: auth.request ?? null },
    idempotencyKey: auth.idempotencyKey, keyId: auth.keyId, signedAt: auth.signedAt,
  });
}

// ADMIN_ACTIONS_NAMING_GAME are the admin actions whose signature names the lobby's current game
// (tournament.AdminActionNamesGame).
export const ADMIN_ACTIONS_NAMING_GAME = new Set(['stop', 'set_next_config']);

// createdLobby is the id of the lobby a signed create_lobby makes (tournament.CreatedLobby): the
// message names no lobby, so the id is derived from the signature, a version 8 UUID of
// blake2b-256("rps-lobby-v1\n" || the 64 signature bytes); null for a signature that is not hex.
export function createdLobby(signature) {
  const raw = bytesOf(signature, 64);
  if (!raw) return null;
  const id = blake2b(new Uint8Array([...utf8.encode('rps-lobby-v1\n'), ...raw]), { dkLen: 32 }).slice(0, 16);
  id[6] = (id[6] & 0x0f) | 0x80;
  id[8] = (id[8] & 0x3f) | 0x80;
  const h = hex(id);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

// A signature is accepted from 23 hours before the server's instant to 5 minutes after it
// (tournament.CheckSignedAt): signedAtProblem says why signedAt is outside that window around
// the instant at (Unix ms) of the event that records it, or returns null.
export const SIGNATURE_MAX_AGE = 23 * 60 * 60 * 1000;
export const SIGNATURE_MAX_SKEW = 5 * 60 * 1000;

export function signedAtProblem(signedAt, at) {
  if (!Number.isSafeInteger(signedAt)) return `signedAt ${JSON.stringify(signedAt)} is not an integer of Unix milliseconds`;
  if (signedAt < at - SIGNATURE_MAX_AGE) return `signed at ${new Date(signedAt).toISOString()}, more than 23 hours before the event`;
  if (signedAt > at + SIGNATURE_MAX_SKEW) return `signed at ${new Date(signedAt).toISOString()}, more than 5 minutes after the event`;
  return null;
}

// webCryptoVerify checks with the browser's own Ed25519; it throws NotSupportedError where the
// browser has none.
export async function webCryptoVerify(publicKey, message, signature) {
  const key = await crypto.subtle.importKey('raw', publicKey, { name: 'Ed25519' }, false, ['verify']);
  return crypto.subtle.verify({ name: 'Ed25519' }, key, signature, message);
}

// nobleVerify checks with the vendored @noble/curves, strictly as RFC 8032 (and Go) do.
export async function nobleVerify(publicKey, message, signature) {
  const { ed25519 } = await import('../vendor/noble-curves/ed25519.js');
  try {
    return ed25519.verify(signature, message, publicKey, { zip215: false });
  } catch {
    return false; // a key that is not a point
  }
}

// The base point's encoding: a valid key for asking WebCrypto whether it has Ed25519 at all.
const BASE_POINT = bytesOf('5866666666666666666666666666666666666666666666666666666666666666', 32);
let backend = null;

// ed25519Backend says which implementation this browser verifies with: 'webcrypto' or 'noble'.
export async function ed25519Backend() {
  backend ??= crypto.subtle.importKey('raw', BASE_POINT, { name: 'Ed25519' }, false, ['verify'])
    .then(() => 'webcrypto', () => 'noble');
  return backend;
}

// verifySignature reports whether signature (128 hex) is publicKey's (64 hex) over message (text).
export async function verifySignature(publicKey, message, signature) {
  const pub = bytesOf(publicKey, 32);
  const sig = bytesOf(signature, 64);
  if (!pub || !sig) return false;
  const msg = utf8.encode(message);
  if (await ed25519Backend() === 'noble') return nobleVerify(pub, msg, sig);
  try {
    return await webCryptoVerify(pub, msg, sig);
  } catch {
    return false; // a key WebCrypto refuses to import is no key of anyone's
  }
}

// ---------------------------------------------------------------- signing (the admin page's key)

// newSeed makes a private key: 32 random bytes, the Ed25519 seed, in hex.
export function newSeed() {
  return hex(crypto.getRandomValues(new Uint8Array(32)));
}

// An Ed25519 private key in PKCS #8 is this DER prefix (RFC 8410) and the 32-byte seed: the form
// WebCrypto imports a private key from.
const PKCS8_SEED_PREFIX = bytesOf('302e020100300506032b657004220420', 16);

// webCryptoSigner signs with the browser's own Ed25519; it throws NotSupportedError where the
// browser has none. The public key comes from the key's JWK export (its x).
export async function webCryptoSigner(seed) {
  const key = await crypto.subtle.importKey('pkcs8', new Uint8Array([...PKCS8_SEED_PREFIX, ...seed]), { name: 'Ed25519' }, true, ['sign']);
  const { x } = await crypto.subtle.exportKey('jwk', key);
  const publicKey = hex(Uint8Array.from(atob(x.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0)));
  return { publicKey, sign: async (message) => hex(new Uint8Array(await crypto.subtle.sign({ name: 'Ed25519' }, key, utf8.encode(message)))) };
}

// nobleSigner signs with the vendored @noble/curves.
export async function nobleSigner(seed) {
  const { ed25519 } = await import('../vendor/noble-curves/ed25519.js');
  return { publicKey: hex(ed25519.getPublicKey(seed)), sign: async (message) => hex(ed25519.sign(utf8.encode(message), seed)) };
}

// signerOf is the signing key of a seed (64 lower-case hex): {publicKey, keyId, sign(message)
// -> signature hex}, with the implementation this browser verifies with.
export async function signerOf(seedHex) {
  const seed = bytesOf(seedHex, 32);
  if (!seed) throw new Error('a private key is 64 hex characters: its 32-byte seed');
  const signer = await (await ed25519Backend() === 'noble' ? nobleSigner : webCryptoSigner)(seed);
  return { ...signer, keyId: keyIdOf(signer.publicKey) };
}

// signatureHeaders are the Rps-* headers that carry signer's signature of message.
async function signatureHeaders(signer, message, { signedAt, gameId, round }) {
  const headers = { 'Rps-Key-Id': signer.keyId, 'Rps-Signed-At': String(signedAt), 'Rps-Signature': await signer.sign(message) };
  if (gameId) headers['Rps-Game-Id'] = gameId;
  if (round) headers['Rps-Round'] = String(round);
  return headers;
}

// signAction signs an action of the signer's account (actionMessage's fields but keyId) and
// returns the request's Rps-* headers.
export async function signAction(signer, fields) {
  return signatureHeaders(signer, actionMessage({ ...fields, keyId: signer.keyId }), fields);
}

// signAdminAction signs an admin's request and returns its Rps-* headers: admin is the admin's
// account id, action the audit log's name of it, lobbyId the lobby acted on, account the account
// acted on, gameId the lobby's current game for a stop or a next config (null otherwise),
// request the body exactly as sent (undefined or null for none).
export async function signAdminAction(signer, { origin, admin, action, lobbyId = null, account = null, gameId = null, request, idempotencyKey, signedAt }) {
  const auth = { action, admin, gameId, idempotencyKey, keyId: signer.keyId, request: request ?? null, signedAt };
  return signatureHeaders(signer, adminMessage(origin, auth, { lobbyId, account }), { signedAt, gameId });
}
