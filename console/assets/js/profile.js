// An account's public profile: its name, its results over settled games, its keys (its key log,
// verified in the browser, recoveries by the operator said as such) and its games, newest first.
// Nothing private is shown (the API gives the balance only to the account itself, and the console
// never signs in players).
import { api, keyLog } from './api.js';
import { el, endingText, formatAmount, formatSigned, formatTime, replace } from './dom.js';
import { checkRecoveries, KeyLogFailure, verifyKeyLog } from './keys.js';

const accountId = decodeURIComponent(location.pathname.split('/')[2] ?? '');
const root = document.getElementById('page');
document.title = 'Player · rps';
const GAMES_PAGE = 20;

// gamesSection lists the account's games a page at a time; "Older games" reads the next page.
function gamesSection() {
  const list = el('ul', { class: 'recent' });
  const status = el('div', { 'aria-live': 'polite' });
  const more = el('div', { class: 'buttons' });
  const load = async (after = null) => {
    replace(more);
    let page;
    try {
      const query = `limit=${GAMES_PAGE}${after ? `&after=${encodeURIComponent(after)}` : ''}`;
      page = await api(`/accounts/${encodeURIComponent(accountId)}/games?${query}`);
    } catch (err) {
      replace(status, el('p', { class: 'error', text: `The games cannot be read: ${err.message}` }));
      replace(more, el('button', { type: 'button', class: 'small', text: 'Try again', onclick: () => load(after) }));
      return;
    }
    replace(status, !after && page.games.length === 0 ? el('p', { class: 'muted', text: 'No game yet.' }) : null);
    list.append(...page.games.map((g) => el('li', { 'data-game': g.gameId },
      el('a', { href: `/lobbies/${encodeURIComponent(g.lobbyId)}`, class: 'lobby-name', text: g.lobbyName }),
      ` game ${g.gameNumber}: ${endingText(g)}, stake ${formatAmount(g.stake)}, net ${formatSigned(g.net)}`,
      el('span', { class: 'muted', text: ` · ${formatTime(g.endedAt ?? g.registeredAt)}` }))));
    if (page.next) replace(more, el('button', { type: 'button', class: 'small', text: 'Older games', onclick: () => load(page.next) }));
  };
  load();
  return el('section', { id: 'games', class: 'card' }, el('h2', { text: 'Games' }), status, list, more);
}

// What a key event did, in words; signedBy names the admin key that signed a recovery, once checked.
function keyEventText(e, signedBy) {
  const d = e.data;
  switch (e.type) {
    case 'key_added':
      if (d.via === 'sign_up') return `Key ${d.keyId} bound at sign-up, signed by itself.`;
      return d.signer === d.keyId ? `Key ${d.keyId} bound, signed by itself (the account's first key).` : `Key ${d.keyId} added, signed by key ${d.signer}.`;
    case 'key_retired': return `Key ${d.keyId} retired, signed by key ${d.signer}.`;
    case 'keys_recovered':
      return `Key ${d.keyId} given by the operator in a recovery, not signed by the player` +
        `${d.retired.length ? `; it retired key${d.retired.length > 1 ? 's' : ''} ${d.retired.join(', ')}` : ''}. Reason: “${d.reason}”.` +
        (signedBy ? ` Signed by admin key ${signedBy}, checked against the admin's key log.`
          : d.auth ? ` It carries a signature by admin key ${d.auth.keyId}, which does not check.` : ' Signed by no admin: the operator\u2019s word alone.');
    default: return e.type;
  }
}

// keysSection shows the account's key log, checked in the browser: its chain, every signature of
// a key change and the admin's signature of each recovery (against the admin's own key log).
function keysSection() {
  const section = el('section', { id: 'keys', class: 'card' }, el('h2', { text: 'Keys' }), el('p', { class: 'muted', text: 'Reading the key log…' }));
  (async () => {
    const [log, { origin }] = await Promise.all([keyLog(accountId), api('/log')]);
    if (log.events.length === 0) {
      replace(section, el('h2', { text: 'Keys' }), el('p', { class: 'muted', text: 'No key: this player\u2019s actions are unsigned.' }));
      return;
    }
    let verdict;
    let verified = new Map();
    const signedBy = new Map(); // a recovery's seq -> the admin key that signed it
    try {
      const checked = await verifyKeyLog(accountId, log.events, origin, log.keys);
      verified = checked.keys;
      const adminLog = async (adminId) => {
        const admin = await keyLog(adminId);
        return verifyKeyLog(adminId, admin.events, origin, admin.keys);
      };
      await checkRecoveries(accountId, checked, origin, adminLog);
      for (const r of checked.recoveries) if (r.signedBy) signedBy.set(r.seq, r.signedBy);
      verdict = el('p', { class: 'key-log-result ok', text: `✓ Key log verified in this browser through key event ${log.events.length}: its hash chain and the signature of every key change.` });
    } catch (err) {
      if (!(err instanceof KeyLogFailure)) throw err;
      verdict = el('p', { class: 'key-log-result bad', text: `✗ ${err.seq ? `Key event ${err.seq} fails` : 'The key log fails'}: ${err.message}.` });
    }
    const active = log.keys.filter((k) => k.retiredSeq == null).map((k) => k.keyId);
    replace(section, el('h2', { text: 'Keys' }),
      el('p', { text: `Active: ${active.join(', ') || 'none'}.` }),
      el('ol', { class: 'key-events' }, log.events.map((e) => {
        const operators = e.type === 'keys_recovered' || (e.type === 'key_added' && verified.get(e.data.keyId)?.viaRecovery);
        return el('li', { class: operators ? 'recovery' : null },
          el('span', { class: 'seq', text: `#${e.seq}` }), ' ',
          el('span', { text: `${keyEventText(e, signedBy.get(e.seq))}${operators && e.type === 'key_added' ? ' Its signer came from a recovery: the operator\u2019s word, as that recovery is.' : ''}` }),
          el('span', { class: 'muted', text: ` · ${formatTime(e.at)}` }));
      })),
      verdict);
  })().catch((err) => replace(section, el('h2', { text: 'Keys' }), el('p', { class: 'error', text: `The key log cannot be read: ${err.message}` })));
  return section;
}

async function show() {
  let p;
  try {
    p = await api(`/accounts/${encodeURIComponent(accountId)}`);
  } catch (err) {
    const missing = err.status === 404 || err.status === 400;
    replace(root, el('h1', { text: missing ? 'There is no such player' : 'The player cannot be read' }),
      el('p', { class: missing ? 'muted' : 'error', text: missing ? 'The link may be mistyped.' : err.message }),
      el('p', {}, el('a', { href: '/standings', text: 'Back to the standings' })));
    return;
  }
  document.title = `${p.name} · rps`;
  replace(root,
    el('p', { class: 'crumbs' }, el('a', { href: '/standings', text: 'Standings' }), ' ›'),
    el('h1', {}, el('span', { class: 'player-name', text: p.name }), p.role === 'admin' ? el('span', { class: 'badge', text: 'Admin' }) : null),
    el('section', { id: 'profile', class: 'card' },
      el('dl', { class: 'stats' }, [
        ['Games played', formatAmount(p.gamesPlayed)],
        ['Games won', formatAmount(p.gamesWon)],
        ['Net', formatSigned(p.net)],
      ].map(([k, v]) => el('div', {}, el('dt', { text: k }), el('dd', { text: v })))),
      el('p', { class: 'muted', text: `Member since ${formatTime(p.memberSince)}. Settled games only.` })),
    keysSection(),
    gamesSection());
}

show();
