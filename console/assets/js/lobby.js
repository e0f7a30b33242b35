// A lobby's page: its current game live, from the lobby's event stream (EventSource resumes with
// Last-Event-ID after a drop by itself), the lobby's past games with their transcripts, and a
// button that re-verifies the whole log in the browser. Events only say that something happened;
// what is shown is read from the public state and transcripts, so it is never built from guesses.
// The page follows the log from its last few events and reads the past games a page at a time, so
// a lobby with a long history opens as fast as a new one. Each player action says whether its
// player signed it and with which key, in words, and each act of an admin (the operator) which
// admin key signed it or that it is the operator's word alone; the verifier checks every
// signature.
import { adminActOf } from './adminacts.js';
import { allPages, api, events, keyLog, serverClock } from './api.js';
import { countdown, el, formatAmount, formatClock, formatDuration, formatTime, playerLink, replace, stageBadge } from './dom.js';
import { signatureChecker, verifyKeyLog } from './keys.js';
import { checkProof } from './translog.js';
import { verifyLog } from './verify.js';

const EVENT_TYPES = ['lobby_created', 'game_opened', 'player_registered', 'player_left', 'round_started',
  'move_committed', 'moves_closed', 'move_revealed', 'round_resolved', 'stage_extended', 'game_finished',
  'game_stopped', 'next_config_changed', 'lobby_closed', 'clock_shifted'];
const FEED_SIZE = 12;
// How far back the page reads the log once, to know who signed the moves of the games it shows.
const SIGNED_BACKLOG = 500;
const PAST_PAGE = 10;

const lobbyId = decodeURIComponent(location.pathname.split('/')[2] ?? '');
const root = document.getElementById('page');

const parts = {
  head: el('section', { id: 'head' }),
  now: el('section', { id: 'now', class: 'card', 'aria-live': 'polite' }),
  last: el('section', { id: 'last', class: 'card', hidden: true }),
  verify: el('section', { id: 'verify', class: 'card' }),
  log: el('section', { id: 'log', class: 'card' }),
  past: el('section', { id: 'past', class: 'card' }),
  feed: el('section', { id: 'feed', class: 'card' }),
};

let clock = () => Date.now();
let lobby = null;
let current = null; // {summary, players, rounds, ruleset} of the lobby's latest game
let lastEnded = null; // the same of the game that ended last, when it is not the latest
const closedRounds = new Map(); // `${gameId}/${round}` -> transcript; closed rounds never change
const rulesets = new Map();
const feed = [];
let pastGames = []; // the ended games read so far (GameSummary), newest first
let pastNext = null; // the cursor of the next page of the lobby's games, null once all are read
let pastError = null; // why the first page of past games could not be read
const expanded = new Map(); // gameId -> transcript node of an opened past game
let lastSeq = 0;
let missing = false; // the lobby does not exist: nothing to follow
// What each player action event says of its signature: `${gameId}/${action}/${round}/${player}`
// -> its data.auth, or null when the action is unsigned. Filled from every event the page reads.
const signers = new Map();
const keyLogs = new Map(); // accountId -> its keys, as its verified key log gives them, once read
let logOrigin = null; // the transparency log's origin, which every signed message names

// ---------------------------------------------------------------- reading

async function roundTranscript(gameId, round) {
  const key = `${gameId}/${round}`;
  if (closedRounds.has(key)) return closedRounds.get(key);
  const first = await api(`/games/${gameId}/rounds/${round}?limit=500`);
  const moves = [...first.moves];
  for (let after = first.next; after;) {
    const page = await api(`/games/${gameId}/rounds/${round}?limit=500&after=${encodeURIComponent(after)}`);
    moves.push(...page.moves);
    after = page.next;
  }
  const transcript = { ...first, moves };
  if (transcript.stage === 'closed') closedRounds.set(key, transcript);
  return transcript;
}

async function rulesetFor(id) {
  if (!rulesets.has(id)) rulesets.set(id, await api(`/rulesets/${encodeURIComponent(id)}`));
  return rulesets.get(id);
}

// A game's public transcript: summary, players and every round reached.
async function gameTranscript(gameId) {
  const summary = await api(`/games/${gameId}`);
  const [players, ruleset] = await Promise.all([
    allPages(`/games/${gameId}/players`, 'players'),
    rulesetFor(summary.config.ruleset),
  ]);
  const rounds = [];
  for (let n = 1; n <= summary.round; n++) rounds.push(await roundTranscript(gameId, n));
  return { summary, players, rounds, ruleset };
}

// ---------------------------------------------------------------- rendering

function nameOf(players, id) {
  return players.find((p) => p.accountId === id)?.name ?? id.slice(0, 8);
}

function weaponName(ruleset, move) {
  return ruleset.weapons.find((w) => w.move === move)?.name ?? `move ${move}`;
}

// The signed action an event records, with what names it among a game's actions.
const ACTION_OF = { player_registered: 'register', player_left: 'leave', move_committed: 'commit', move_revealed: 'reveal' };
const signerKey = (gameId, action, round, player) => `${gameId}/${action}/${round ?? 0}/${player}`;

function noteSigner(e) {
  const action = ACTION_OF[e.type];
  if (action) signers.set(signerKey(e.gameId, action, e.data.round, e.data.player), e.data.auth ?? null);
}

// keysOf is a player's keys once read and verified (null until then: the page is drawn again
// when they are).
function keysOf(player) {
  if (!keyLogs.has(player)) {
    keyLogs.set(player, null);
    logOrigin ??= api('/log').then((l) => l.origin);
    // A key log that cannot be read or does not verify only leaves out whether a key came from a
    // recovery; the verifier reads it again and says why.
    Promise.all([keyLog(player), logOrigin])
      .then(([log, origin]) => verifyKeyLog(player, log.events, origin, log.keys))
      .then((log) => [...log.keys.values()], () => [])
      .then((keys) => {
        keyLogs.set(player, keys);
        renderAll();
      });
  }
  return keyLogs.get(player);
}

// signedWords says, in words, how a player's action was signed. signed: true, false, or undefined
// when the page cannot tell (the event is older than what it read); keyId: the signing key when
// known; sealed: the signature stays sealed with the value until the round is over.
function signedWords(player, { signed, keyId, sealed }) {
  if (signed === false) return 'unsigned';
  const key = keyId ? keysOf(player)?.find((k) => k.keyId === keyId) : null;
  const operators = key?.recovery ? ' (recovered by the operator)' : key?.viaRecovery ? ' (added by a key the operator recovered)' : '';
  return [
    signed ? `signed${keyId ? `, key ${keyId}` : ''}${operators}` : null,
    sealed ? 'sealed until the round is over' : null,
  ].filter(Boolean).join(', ');
}

// moveSigned: how a commit or a reveal of a round was signed. Once the round is public its
// transcript shows the signature itself; until then only the event's sealed one exists.
function moveSigned(gameId, t, m, action) {
  const auth = signers.get(signerKey(gameId, action, t.round, m.accountId));
  if (t.stage !== 'closed') return signedWords(m.accountId, { signed: auth === undefined ? undefined : auth !== null, keyId: auth?.keyId, sealed: true });
  const signature = action === 'commit' ? m.commitSignature : m.revealSignature;
  return signedWords(m.accountId, { signed: signature != null, keyId: auth?.keyId });
}

// signedNote shows those words; an unsigned action, which the operator could have made, stands out.
function signedNote(words, unsigned = words === 'unsigned') {
  return el('span', { class: `signed${unsigned ? ' unsigned' : ''}`, text: words });
}

// adminNote: who made the admin's act an event records (null for other events), as the event
// says; "Verify the whole log" checks the signature against the admin's key log.
function adminNote(e) {
  if (!adminActOf(e)) return null;
  const keyId = e.data.auth?.keyId;
  return keyId == null ? signedNote('unsigned: the operator\u2019s word', true) : signedNote(`signed by admin key ${keyId}`);
}

// eventSigned: how the action an event records was signed, in words ('' for other events). A
// commit's or reveal's signature is sealed while its round is open in the current game.
function eventSigned(e) {
  if (!ACTION_OF[e.type]) return '';
  const auth = e.data.auth;
  const open = current?.summary.id === e.gameId && current.rounds.some((t) => t.round === e.data.round && t.stage !== 'closed');
  return signedWords(e.data.player, { signed: auth != null, keyId: auth?.keyId, sealed: auth?.sealedSignature != null && open });
}

function configLine(c) {
  return `bet ${formatAmount(c.betSize)} · up to ${c.playersCountLimit} players · ${c.ruleset} (${c.resolution}) · ` +
    `entry ${formatDuration(c.entryTimeoutMs)}, moves ${formatDuration(c.moveTimeoutMs)}, reveal ${formatDuration(c.revealTimeoutMs)}` +
    `${c.startWhenFull ? ' · starts when full' : ''}${c.maxRounds ? ` · at most ${c.maxRounds} rounds` : ''}`;
}

function renderHead() {
  replace(parts.head,
    el('p', { class: 'crumbs' }, el('a', { href: '/', text: '← All lobbies' })),
    el('h1', {}, el('span', { class: 'lobby-name', text: lobby.name }), lobby.closed ? el('span', { class: 'badge closed', text: 'Closed' }) : null),
    el('p', { class: 'muted config', text: configLine(lobby.config) }),
    lobby.nextConfig ? el('p', { class: 'muted config', text: `Next game: ${configLine(lobby.nextConfig)}` }) : null,
  );
}

function statusText(p, round) {
  switch (p.status) {
    case 'winner': return 'winner';
    case 'eliminated': return `out in round ${p.eliminatedInRound}`;
    default: return round > 0 ? 'in play' : 'registered';
  }
}

// One round: who committed and revealed (always public), and the moves once the round is closed.
function renderRound(gameId, t, players, ruleset, { open }) {
  const inRound = t.moves;
  const committed = inRound.filter((m) => m.committed);
  const revealed = inRound.filter((m) => m.revealed);
  const eliminated = players.filter((p) => p.eliminatedInRound === t.round);
  const heading = t.stage === 'closed'
    ? `Round ${t.round}: ${t.remaining == null ? 'closed' : `${t.remaining} of ${revealed.length} revealed survived`}`
    : `Round ${t.round}: ${t.stage === 'moves' ? 'committing' : 'revealing'}`;
  const counts = t.stage === 'closed' && t.counts.length
    ? el('p', { class: 'muted', text: t.counts.map((n, m) => (n ? `${weaponName(ruleset, m)} ×${n}` : null)).filter(Boolean).join(' · ') })
    : null;
  return el('div', { class: `round${open ? ' open' : ''}`, 'data-round': t.round },
    el('h3', { text: heading }),
    el('p', { class: 'tally', text: `Committed ${committed.length} of ${inRound.length} · Revealed ${revealed.length} of ${committed.length}` }),
    counts,
    el('table', { class: 'moves' },
      el('thead', {}, el('tr', {}, ['Player', 'Committed', 'Revealed', 'Move'].map((h) => el('th', { text: h })))),
      el('tbody', {}, inRound.map((m) => el('tr', {},
        el('td', { 'data-label': 'Player', class: 'player-name', text: nameOf(players, m.accountId) }),
        el('td', { 'data-label': 'Committed' }, m.committed ? ['✓ ', signedNote(moveSigned(gameId, t, m, 'commit'))] : '–'),
        el('td', { 'data-label': 'Revealed' }, m.revealed ? ['✓ ', signedNote(moveSigned(gameId, t, m, 'reveal'))] : '–'),
        el('td', { 'data-label': 'Move', text: m.move != null ? weaponName(ruleset, m.move) : m.committed ? 'sealed' : '—' }),
      ))),
    ),
    eliminated.length ? el('p', { class: 'muted', text: `Out: ${eliminated.map((p) => p.name).join(', ')}` }) : null,
  );
}

function renderOutcome(summary, players) {
  if (summary.stage === 'finished') {
    return el('p', { class: 'outcome winner' }, 'Winner: ', el('strong', {}, playerLink(summary.winner, nameOf(players, summary.winner))),
      ` takes ${formatAmount(summary.payout)}`);
  }
  if (summary.stage === 'stopped') {
    return el('p', { class: 'outcome stopped' }, 'Stopped: ', el('span', { text: summary.stopReason ?? '' }), ' (bets refunded or split)');
  }
  return null;
}

function renderPlayers(players, round) {
  if (players.length === 0) return el('p', { class: 'muted', text: 'Nobody has registered yet.' });
  return el('ul', { class: 'players' }, players.map((p) => el('li', { class: `player ${p.status}` },
    playerLink(p.accountId, p.name), ' ', el('span', { class: 'muted', text: statusText(p, round) }))));
}

function renderNow() {
  const g = lobby.game;
  if (!g || !current) {
    replace(parts.now, el('p', { class: 'muted', text: 'This lobby has no game.' }));
    return;
  }
  const { summary, players, rounds, ruleset } = current;
  const stats = [
    ['Stage', stageBadge(g.stage)],
    ['Round', g.round > 0 ? String(g.round) : '—'],
    ['Time left', el('span', { class: 'countdown', text: countdown(g, clock) })],
    ['Players', `${g.players} / ${summary.config.playersCountLimit}`],
    ['Still in', String(g.remaining)],
    ['Pot', formatAmount(g.pot)],
  ];
  replace(parts.now,
    el('h2', { text: `Game ${g.number}` }),
    el('dl', { class: 'stats' }, stats.map(([k, v]) => el('div', {}, el('dt', { text: k }), el('dd', {}, v)))),
    renderOutcome(summary, players),
    el('h3', { text: 'Players' }),
    renderPlayers(players, g.round),
    [...rounds].reverse().map((t) => renderRound(summary.id, t, players, ruleset, { open: t.stage !== 'closed' })),
  );
}

// The game that ended last: a lobby opens its next game at once, so without this a spectator would
// see the winner only in the list of past games.
function renderLast() {
  parts.last.hidden = !lastEnded;
  if (!lastEnded) return;
  const { summary, players, rounds, ruleset } = lastEnded;
  replace(parts.last,
    el('h2', { text: `Game ${summary.number}: result` }),
    renderOutcome(summary, players),
    renderPlayers(players, summary.round),
    [...rounds].reverse().map((t) => renderRound(summary.id, t, players, ruleset, { open: false })));
}

// How a game ended, in words.
function endText(g) {
  const rounds = `${g.round} round${g.round === 1 ? '' : 's'}`;
  if (g.stage === 'finished') return `won, ${formatAmount(g.payout)} paid out after ${rounds}`;
  return `stopped ${g.round > 0 ? `in round ${g.round}` : 'during registration'}: ${g.stopReason}`;
}

const ended = (g) => g.stage === 'finished' || g.stage === 'stopped';

// readPast reads the next page of the lobby's games (the first page when from is null) and adds
// the ended ones to the past games.
async function readPast(from) {
  const page = await api(`/lobbies/${encodeURIComponent(lobbyId)}/games?limit=${PAST_PAGE}${from ? `&after=${encodeURIComponent(from)}` : ''}`);
  const known = new Set(pastGames.map((g) => g.id));
  pastGames.push(...page.games.filter((g) => ended(g) && !known.has(g.id)));
  pastNext = page.next;
}

// gameEnded puts a game that has just ended first among the past games.
async function gameEnded(gameId) {
  if (pastGames.some((g) => g.id === gameId)) return;
  const g = await api(`/games/${gameId}`);
  if (!pastGames.some((p) => p.id === gameId)) pastGames.unshift(g);
}

function renderPast() {
  const shown = pastGames.filter((g) => g.id !== lobby?.game?.id);
  const older = el('button', {
    type: 'button', text: 'Show older games',
    onclick: async () => {
      older.disabled = true;
      try {
        await readPast(pastNext);
        renderPast();
      } catch (err) {
        older.disabled = false;
        older.after(el('p', { class: 'error', text: `Older games cannot be read: ${err.message}` }));
      }
    },
  });
  replace(parts.past,
    el('h2', { text: 'Past games' }),
    pastError ? el('p', { class: 'error', text: `The past games cannot be read: ${pastError}` }) : null,
    shown.length === 0 && !pastNext && !pastError ? el('p', { class: 'muted', text: 'No game has ended in this lobby yet.' }) : null,
    el('ul', { class: 'past' }, shown.map((g) => {
      const open = expanded.get(g.id);
      return el('li', {},
        el('button', { type: 'button', class: 'link', 'aria-expanded': open ? 'true' : 'false', onclick: () => togglePast(g.id) },
          `Game ${g.number}`),
        ' ', el('span', { class: 'muted', text: `${formatTime(g.endedAt)} · ${endText(g)}` }),
        open ?? null);
    })),
    pastNext ? older : null,
  );
}

async function togglePast(gameId) {
  if (expanded.has(gameId)) {
    expanded.delete(gameId);
    renderPast();
    return;
  }
  expanded.set(gameId, el('div', { class: 'transcript muted', text: 'Loading the transcript…' }));
  renderPast();
  try {
    const t = await gameTranscript(gameId);
    expanded.set(gameId, el('div', { class: 'transcript' },
      renderOutcome(t.summary, t.players),
      renderPlayers(t.players, t.summary.round),
      t.rounds.map((r) => renderRound(t.summary.id, r, t.players, t.ruleset, { open: false }))));
  } catch (err) {
    expanded.set(gameId, el('p', { class: 'error', text: `The transcript cannot be read: ${err.message}` }));
  }
  if (expanded.has(gameId)) renderPast();
}

// What an event means, in words; names are known for the players of the games on the page.
function describe(e) {
  const d = e.data ?? {};
  const who = (id) => {
    for (const g of [current, lastEnded]) {
      const p = g?.players.find((x) => x.accountId === id);
      if (p) return p.name;
    }
    return id ? id.slice(0, 8) : '';
  };
  switch (e.type) {
    case 'lobby_created': return 'lobby created';
    case 'game_opened': return `game ${d.number} opened`;
    case 'player_registered': return `${who(d.player)} registered (${d.players} in, pot ${formatAmount(d.pot)})`;
    case 'player_left': return `${who(d.player)} left`;
    case 'round_started': return `round ${d.round} started with ${d.players} players`;
    case 'move_committed': return `${who(d.player)} committed (${d.committed})`;
    case 'moves_closed': return `round ${d.round}: moves closed, ${d.committed} committed`;
    case 'move_revealed': return `${who(d.player)} revealed (${d.revealed})`;
    case 'round_resolved': return `round ${d.round} resolved: ${d.remaining} still in`;
    case 'stage_extended': return `${d.stage} extended: nobody acted`;
    case 'game_finished': return `${who(d.winner)} won ${formatAmount(d.amount)}`;
    case 'game_stopped': return `game stopped: ${d.reason}`;
    case 'next_config_changed': return 'next game\u2019s config changed';
    case 'lobby_closed': return 'lobby closed';
    case 'clock_shifted': return `deadlines moved by ${formatDuration(d.gapMs)} after an outage`;
    default: return e.type;
  }
}

let streamStatus = 'connecting';

function renderFeed(status = streamStatus) {
  streamStatus = status;
  replace(parts.feed,
    el('h2', {}, 'Event log ', el('span', { class: `live ${status}`, text: status === 'live' ? '● live' : status === 'reconnecting' ? '○ reconnecting…' : '○ connecting…' })),
    el('ol', { class: 'feed' }, [...feed].reverse().map((e) => el('li', {},
      el('span', { class: 'seq', text: `#${e.seq}` }), ' ',
      el('span', { class: 'muted', text: formatClock(e.at) }), ' ',
      el('span', { class: 'what', text: describe(e) }),
      eventSigned(e) ? [' · ', signedNote(eventSigned(e))] : null,
      adminNote(e) ? [' · ', adminNote(e)] : null,
      ' ', el('code', { class: 'type', text: e.type })))),
  );
}

// named replaces the account ids of the players on the page with their names.
function named(text) {
  for (const g of [current, lastEnded]) {
    for (const p of g?.players ?? []) text = text.replaceAll(`player ${p.accountId}`, `player ${p.name}`);
  }
  return text;
}

// What the signature checks found, in words.
function signaturesText(s) {
  const parts = [`${s.signed} signed action${s.signed === 1 ? '' : 's'} checked against ${s.signed === 1 ? 'its player\u2019s key' : 'their players\u2019 keys'}`];
  if (s.unsigned) parts.push(`${s.unsigned} unsigned, by players who held no key then`);
  if (s.sealed) parts.push(`${s.sealed} signature${s.sealed === 1 ? '' : 's'} sealed until ${s.sealed === 1 ? 'its' : 'their'} round is over`);
  // The operator's acts: each signed one checked, each unsigned one named.
  const unsigned = s.adminUnsigned;
  if (s.adminChecked) parts.push(`${s.adminChecked} admin act${s.adminChecked === 1 ? '' : 's'} checked against ${s.adminChecked === 1 ? 'its admin\u2019s key' : 'their admins\u2019 keys'}`);
  if (unsigned.length) {
    parts.push(`${unsigned.length} admin act${unsigned.length === 1 ? '' : 's'} unsigned: the operator\u2019s word alone (event${unsigned.length === 1 ? '' : 's'} ${unsigned.join(', ')})`);
  }
  return ` ${parts.join('; ')}.`;
}

function renderVerify() {
  const result = el('p', { class: 'verify-result', role: 'status' });
  const recoveries = el('ul', { class: 'recoveries', hidden: true });
  const button = el('button', {
    type: 'button', id: 'verify-button', text: 'Verify the whole log',
    onclick: async () => {
      button.disabled = true;
      result.className = 'verify-result';
      result.textContent = 'Verifying…';
      recoveries.hidden = true;
      try {
        const { origin } = await api('/log');
        const roundMoves = async (gameId, round) => (await roundTranscript(gameId, round)).moves;
        const checker = signatureChecker({ origin, keyLog, roundMoves });
        const r = await verifyLog(events(lobbyId), roundMoves, checker);
        result.classList.add(r.ok ? 'ok' : 'bad');
        const sealed = (r.sealed ?? []).map((s) => ` Round ${s.round}’s commitments stay sealed until it resolves: verify again then to check them too.`).join('');
        result.textContent = r.ok
          ? `✓ Verified through event ${r.through}: every hash, stage digest, reveal and signature checks out.${signaturesText(r.signatures)}${sealed}`
          : named(`✗ Event ${r.seq} fails: ${r.reason}.${r.through ? ` Events 1 to ${r.through} verified.` : ''}`);
        const found = r.signatures.recoveries;
        recoveries.hidden = found.length === 0;
        replace(recoveries, found.map((x) => el('li', { class: 'recovery' },
          named(`Key ${x.keyId} of player ${x.accountId} was recovered by the operator (key event ${x.seq}, ${formatTime(x.at)}): `),
          el('q', { text: x.reason ?? '' }),
          `. Not signed by the player; the keys it had before were retired. ${x.signedBy ? `Signed by admin key ${x.signedBy}.` : 'Signed by no admin: the operator\u2019s word alone.'}`)));
      } catch (err) {
        result.classList.add('bad');
        result.textContent = `The log cannot be read: ${err.message}`;
      } finally {
        button.disabled = false;
      }
    },
  });
  replace(parts.verify,
    el('h2', { text: 'Verify' }),
    el('p', { class: 'muted', text: 'Re-checks, in this browser, the hash chain of every event (blake2b-256 over RFC 8785 JSON), each stage digest against the public transcript, each reveal against its commitment, and each player\u2019s signature (Ed25519) against the key the player\u2019s own key log shows at that point, and each admin\u2019s signature of the operator\u2019s acts (creating the lobby, changing the next config, stopping a game, closing the lobby) against the admin\u2019s own key log and what the event shows.' }),
    button, result, recoveries);
}

// The transparency log: the latest checkpoint, who cosigned it, and whether it holds this
// lobby's newest logged event, checked in the browser (inclusion proof, and the log's signature
// where the browser has Ed25519).
async function renderLog() {
  const result = el('p', { class: 'log-result', role: 'status', text: 'Checking…' });
  const button = el('button', { type: 'button', id: 'log-button', text: 'Check again', onclick: () => renderLog() });
  replace(parts.log, el('h2', { text: 'Transparency log' }), result, button);
  try {
    const [info, view] = await Promise.all([api('/log'), api(`/lobbies/${encodeURIComponent(lobbyId)}?logProof=true`)]);
    const proof = view.logProof;
    const facts = [];
    if (!proof) {
      const cp = info.checkpoint.split('\n');
      facts.push(el('p', { class: 'log-checkpoint', text: `Checkpoint ${cp[0]} of ${cp[1]} events.` }));
      result.className = 'log-result';
      result.textContent = 'No event of this lobby is in a published checkpoint yet: the log runs about a second behind.';
    } else {
      const r = await checkProof(proof, info.verifierKeys.map((k) => k.verifierKey));
      const root = proof.checkpoint.split('\n')[2];
      facts.push(el('p', { class: 'log-checkpoint' },
        'Checkpoint ', el('code', { text: r.checkpoint.origin }), ` of ${r.checkpoint.size} events, root `, el('code', { text: root }), '.'));
      facts.push(el('p', { class: 'log-signed', text: r.signed === null
        ? 'Signed by the log (this browser cannot check Ed25519 signatures).'
        : r.signed ? '✓ Signed by the log\'s key (checked in this browser).' : '✗ The log\'s signature does not verify.' }));
      facts.push(el('p', { class: 'log-cosigners', text: r.cosigners.length
        ? `Cosigned by ${r.cosigners.length} witness${r.cosigners.length > 1 ? 'es' : ''}: ${r.cosigners.join(', ')}.`
        : 'Cosigned by no witness.' }));
      const ok = r.included && r.signed !== false;
      result.className = `log-result ${ok ? 'ok' : 'bad'}`;
      result.textContent = r.included
        ? `✓ Event #${proof.seq} of this lobby, and through its hash chain every event before it, is leaf ${proof.leafIndex} of this checkpoint: inclusion proof verified in this browser.`
        : `✗ The inclusion proof of event #${proof.seq} (leaf ${proof.leafIndex}) does not lead to the checkpoint's root.`;
    }
    replace(parts.log, el('h2', { text: 'Transparency log' }), ...facts, result, button);
  } catch (err) {
    result.className = 'log-result bad';
    result.textContent = `The log cannot be read: ${err.message}`;
  }
}

// ---------------------------------------------------------------- live

function renderAll() {
  if (!lobby) return;
  renderHead();
  renderNow();
  renderLast();
  renderPast();
  renderFeed();
}

let refreshing = null;
let again = false;

// refresh reads the lobby's state again; calls during a read are folded into one more read.
async function refresh() {
  if (refreshing) {
    again = true;
    return;
  }
  refreshing = (async () => {
    do {
      again = false;
      try {
        lobby = await api(`/lobbies/${lobbyId}`);
        clock = serverClock(lobby.serverTime);
        current = lobby.game ? await gameTranscript(lobby.game.id) : null;
        const last = pastGames.find((g) => g.id !== lobby.game?.id);
        if (last && lastEnded?.summary.id !== last.id) lastEnded = await gameTranscript(last.id);
        document.title = `${lobby.name} · rps`;
        renderAll();
      } catch (err) {
        missing = err.status === 404 || err.status === 400;
        if (missing) {
          replace(root, el('h1', { text: 'There is no such lobby' }), el('p', {}, el('a', { href: '/', text: '← All lobbies' })));
          return;
        }
        replace(parts.now, el('p', { class: 'error', role: 'alert', text: `The lobby cannot be read: ${err.message}` }));
      }
    } while (again);
  })();
  await refreshing;
  refreshing = null;
}

async function onEvent(message) {
  const e = JSON.parse(message.data);
  lastSeq = e.seq;
  noteSigner(e);
  feed.push(e);
  if (feed.length > FEED_SIZE) feed.shift();
  renderFeed('live');
  if (e.type === 'game_finished' || e.type === 'game_stopped') {
    try {
      await gameEnded(e.gameId);
    } catch {
      // The refresh below shows why the server cannot be read.
    }
  }
  refresh();
}

function follow() {
  const stream = new EventSource(`/v1/lobbies/${encodeURIComponent(lobbyId)}/events/stream?after=${lastSeq}`);
  for (const type of EVENT_TYPES) stream.addEventListener(type, onEvent);
  stream.onopen = () => renderFeed('live');
  stream.onerror = () => {
    if (stream.readyState === EventSource.CLOSED) {
      // Refused (rate limit, server gone): the browser will not retry by itself.
      renderFeed('reconnecting');
      setTimeout(follow, 3000);
    } else {
      renderFeed('reconnecting');
    }
  };
}

root.replaceChildren(parts.head, parts.now, parts.last, parts.verify, parts.log, parts.past, parts.feed);
renderVerify();
renderFeed('connecting');
setInterval(() => {
  const cell = parts.now.querySelector('.countdown');
  if (cell && lobby?.game) cell.textContent = countdown(lobby.game, clock);
}, 250);
// Start: the first page of past games (the last one ended gets its card), the lobby, then the log
// from its last few events.
readPast(null).catch((err) => { pastError = err.message; }).then(refresh).then(async () => {
  if (missing) return;
  const head = lobby?.head?.seq ?? 0;
  lastSeq = Math.max(0, head - FEED_SIZE);
  follow();
  renderLog();
  await readSigners(Math.max(0, head - SIGNED_BACKLOG), lastSeq);
});

// readSigners reads the log's events after from through to (the stream brings the later ones)
// for what they say of their signatures, and draws the page again.
async function readSigners(from, to) {
  try {
    for (let after = from; after < to;) {
      const page = await api(`/lobbies/${encodeURIComponent(lobbyId)}/events?after=${after}&limit=${Math.min(1000, to - after)}`);
      if (page.events.length === 0) break;
      for (const e of page.events) if (e.seq <= to) noteSigner(e);
      after = page.events.at(-1).seq;
    }
  } catch {
    // Without them the moves say only what their transcripts show; the verifier reads it all.
  }
  renderAll();
}
