// The public standings: accounts ranked over settled games by wins or by net amount, over all
// time or the last 30 or 7 days, a page at a time. The choice lives in the URL (?by=&period=), so
// a view can be linked to and the back button returns to it.
import { api } from './api.js';
import { el, formatAmount, formatSigned, playerLink, replace } from './dom.js';

const PAGE = 50;
const BY = [['wins', 'Games won'], ['net', 'Net amount']];
const PERIOD = [['all', 'All time'], ['30d', 'Last 30 days'], ['7d', 'Last 7 days']];

const params = new URLSearchParams(location.search);
const pick = (options, value) => (options.some(([v]) => v === value) ? value : options[0][0]);
let by = pick(BY, params.get('by'));
let period = pick(PERIOD, params.get('period'));

const choice = (label, id, options, value) => el('label', {}, el('span', { text: label }),
  el('select', { id, name: id }, options.map(([v, text]) => el('option', { value: v, text, selected: v === value }))));
const controls = el('form', { class: 'filters', 'aria-label': 'Standings' },
  choice('Rank by', 'by', BY, by), choice('Period', 'period', PERIOD, period));
const table = el('div', { id: 'standings', 'aria-live': 'polite' });
const more = el('div', { class: 'buttons' });
document.title = 'Standings · rps';
replace(document.getElementById('page'),
  el('h1', { text: 'Standings' }),
  el('p', { class: 'hint', text: 'Settled games only; a registration stopped with every bet refunded does not count. Ties go by the other measure, then by account.' }),
  controls, table, more);

function row(s) {
  return el('tr', {},
    el('td', { 'data-label': '#', class: 'num rank', text: s.position }),
    el('td', { 'data-label': 'Player' }, playerLink(s.accountId, s.name)),
    el('td', { 'data-label': 'Games', class: 'num', text: formatAmount(s.games) }),
    el('td', { 'data-label': 'Won', class: `num${by === 'wins' ? ' ranked' : ''}`, text: formatAmount(s.wins) }),
    el('td', { 'data-label': 'Net', class: `num${by === 'net' ? ' ranked' : ''}`, text: formatSigned(s.net) }));
}

// load reads a page; a new choice starts over, "More" appends after the cursor. A stale answer
// (the choice changed meanwhile) is dropped.
let generation = 0;
async function load(after = null) {
  const mine = ++generation;
  if (!after) replace(table, el('p', { class: 'muted', text: 'Loading…' }));
  replace(more);
  let page;
  try {
    page = await api(`/leaderboard?by=${by}&period=${period}&limit=${PAGE}${after ? `&after=${encodeURIComponent(after)}` : ''}`);
  } catch (err) {
    if (mine === generation) replace(table, el('p', { class: 'error', role: 'alert', text: `The standings cannot be read: ${err.message}` }));
    return;
  }
  if (mine !== generation) return;
  let body = table.querySelector('tbody');
  if (!after || !body) {
    if (page.standings.length === 0) {
      replace(table, el('p', { class: 'muted', text: 'No settled game in this period yet.' }));
      return;
    }
    body = el('tbody');
    replace(table, el('table', { class: `standings by-${by}` },
      el('thead', {}, el('tr', {}, ['#', 'Player', 'Games', 'Won', 'Net'].map((h, i) => el('th', { class: i === 1 ? null : 'num', text: h })))),
      body));
  }
  body.append(...page.standings.map(row));
  if (page.next) replace(more, el('button', { type: 'button', class: 'small', text: 'More', onclick: () => load(page.next) }));
}

controls.addEventListener('change', () => {
  by = controls.elements.by.value;
  period = controls.elements.period.value;
  history.replaceState(null, '', `/standings?by=${by}&period=${period}`);
  load();
});
load();
