// The spectators' front page: every lobby, open ones first, refreshed every two seconds (the API
// has no stream of the list; each lobby page follows its own log live).
import { allPages, serverClock } from './api.js';
import { countdown, el, formatAmount, replace, stageBadge } from './dom.js';

const REFRESH_MS = 2000;
const page = document.getElementById('page');
const root = el('div', { id: 'lobbies', 'aria-live': 'polite' }, el('p', { class: 'muted', text: 'Loading…' }));
document.title = 'Lobbies · rps';
replace(page,
  el('h1', { text: 'Lobbies' }),
  el('p', { class: 'hint', text: 'Open lobbies first. The list refreshes every two seconds; countdowns use the server’s clock.' }),
  root);
let now = () => Date.now();
let lobbies = [];

// Joinable games first (those with players waiting before empty ones), then games being played,
// then ended games and closed lobbies.
function rank(lobby) {
  const stage = lobby.game?.stage;
  if (stage === 'registration' && !lobby.closed) return 0;
  if (stage === 'moves' || stage === 'reveal') return 1;
  if (!lobby.closed) return 2;
  return 3;
}

function row(lobby) {
  const g = lobby.game;
  const href = `/lobbies/${encodeURIComponent(lobby.id)}`;
  return el('tr', { class: lobby.closed ? 'closed' : null },
    el('td', { 'data-label': 'Lobby' }, el('a', { href, class: 'lobby-name', text: lobby.name }),
      lobby.closed ? el('span', { class: 'badge closed', text: 'Closed' }) : null),
    el('td', { 'data-label': 'Bet', class: 'num', text: formatAmount(lobby.config.betSize) }),
    el('td', { 'data-label': 'Players', class: 'num', text: g ? `${g.players} / ${lobby.config.playersCountLimit}` : '—' }),
    el('td', { 'data-label': 'Stage' }, g ? stageBadge(g.stage) : '—'),
    el('td', { 'data-label': 'Round', class: 'num', text: g && g.round > 0 ? g.round : '—' }),
    el('td', { 'data-label': 'Time left', class: 'num countdown', 'data-lobby': lobby.id, text: countdown(g, now) }),
    el('td', { 'data-label': 'Pot', class: 'num', text: g ? formatAmount(g.pot) : '—' }),
  );
}

function render() {
  if (lobbies.length === 0) {
    replace(root, el('p', { class: 'muted', text: 'No lobby yet. An admin opens one from the Admin page.' }));
    return;
  }
  const waiting = (l) => (rank(l) === 0 ? l.game.players : 0);
  const sorted = lobbies.map((l, i) => [l, i])
    .sort(([a, i], [b, j]) => rank(a) - rank(b) || waiting(b) - waiting(a) || i - j)
    .map(([l]) => l);
  replace(root, el('table', { class: 'lobbies' },
    el('thead', {}, el('tr', {}, ['Lobby', 'Bet', 'Players', 'Stage', 'Round', 'Time left', 'Pot'].map((h) => el('th', { text: h })))),
    el('tbody', {}, sorted.map(row)),
  ));
}

function tick() {
  for (const cell of root.querySelectorAll('.countdown')) {
    const lobby = lobbies.find((l) => l.id === cell.dataset.lobby);
    if (lobby) cell.textContent = countdown(lobby.game, now);
  }
}

async function refresh() {
  try {
    const list = await allPages('/lobbies', 'lobbies');
    lobbies = list;
    const newest = Math.max(0, ...list.map((l) => l.serverTime));
    if (newest > 0) now = serverClock(newest);
    render();
  } catch (err) {
    replace(root, el('p', { class: 'error', role: 'alert', text: `The lobbies cannot be read: ${err.message}` }));
  } finally {
    setTimeout(refresh, REFRESH_MS);
  }
}

refresh();
setInterval(tick, 250);
