// An account's public profile: its name and results over settled games. Nothing private is shown
// (the API gives the balance only to the account itself, and the console never signs in players).
import { api } from './api.js';
import { el, formatAmount, formatSigned, formatTime, replace } from './dom.js';

const accountId = decodeURIComponent(location.pathname.split('/')[2] ?? '');
const root = document.getElementById('page');
document.title = 'Player · rps';

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
      el('p', { class: 'muted', text: `Member since ${formatTime(p.memberSince)}. Settled games only.` })));
}

show();
