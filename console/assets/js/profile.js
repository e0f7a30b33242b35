// An account's public profile: its name, its results over settled games and its games, newest
// first. Nothing private is shown (the API gives the balance only to the account itself, and the
// console never signs in players).
import { api } from './api.js';
import { el, endingText, formatAmount, formatSigned, formatTime, replace } from './dom.js';

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
    gamesSection());
}

show();
