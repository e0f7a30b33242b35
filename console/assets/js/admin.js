// The admin's page: sign in with the admin token, then run lobbies (create, next config, stop,
// close), find accounts and move money (credit, debit), disable them, issue a token or recover a
// player's keys, check the ledger and read the audit log. Every form sends an Idempotency-Key that stays the same until the form's content
// changes or the server has answered, so a double click or a retry is one action. Refusals show next to the field the problem names.
// With the admin's own key loaded (generated and bound here, or pasted), every action is signed,
// and the admin's keys are listed, to add another or retire one.
import { adminAct, adminIdentity, adminKey, adminToken, allPages, api, ApiError, newIdempotencyKey } from './api.js';
import { clearProblems, el, endingText, formatAmount, formatSigned, formatTime, replace, showProblem, stageBadge } from './dom.js';
import { qrSvg, signInCode } from './qr.js';
import { keyIdOf, newSeed, signAction, signerOf } from './signed.js';

const SEARCH_PAGE = 20;
const AUDIT_PAGE = 25;

const root = el('div', { id: 'admin' });
document.title = 'Admin · rps';
replace(document.getElementById('page'), el('h1', { text: 'Admin' }), root);

// ---------------------------------------------------------------- forms

// A form whose submissions carry one Idempotency-Key per intended action. send(key, submitter)
// performs the request; done(result) shows its outcome; fieldFor names the field a refusal code
// without a field is about. confirm ({text(submitter, form), button(submitter)}, for what cannot be
// undone) makes a submission first ask, in the form, with text and a danger button that does it;
// a change to the form withdraws the question.
function actionForm({ id, title, fields, buttons, send, done, fieldFor = {}, confirm = null }) {
  let key = newIdempotencyKey();
  const note = el('p', { class: 'form-ok', role: 'status' });
  const asking = el('div', { class: 'confirm', role: 'alert', hidden: true });
  const withdraw = () => {
    asking.hidden = true;
    replace(asking);
  };
  const form = el('form', { id, class: 'card' },
    el('h2', { text: title }),
    el('p', { class: 'form-error', role: 'alert' }),
    fields,
    el('div', { class: 'buttons' }, buttons),
    asking,
    note);
  form.addEventListener('input', () => {
    key = newIdempotencyKey();
    withdraw();
  });
  form.addEventListener('reset', withdraw);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const submitter = event.submitter;
    clearProblems(form);
    note.textContent = '';
    if (confirm && !submitter?.hasAttribute('data-confirmed')) {
      const value = submitter?.value;
      replace(asking, el('p', { text: await confirm.text(value, form) }),
        el('div', { class: 'buttons' },
          el('button', { type: 'submit', class: 'danger', value, 'data-confirmed': true, text: confirm.button(value) }),
          el('button', { type: 'button', class: 'small', text: 'Cancel', onclick: withdraw })));
      asking.hidden = false;
      return;
    }
    withdraw();
    for (const b of form.querySelectorAll('button')) b.disabled = true;
    try {
      const result = await send(key, submitter?.value, form);
      key = newIdempotencyKey();
      note.textContent = done(result, submitter?.value);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      // A refusal that reached the game is stored with the key; a new attempt is a new action.
      if (err.status > 400 && err.status < 500) key = newIdempotencyKey();
      if (!err.field) err.field = fieldFor[err.code] ?? null;
      if (err.code === 'signature_required') err.message += ' Load your signing key (above) to act.';
      showProblem(form, err);
    } finally {
      for (const b of form.querySelectorAll('button')) b.disabled = false;
    }
  });
  return form;
}

function input(label, field, props = {}) {
  return el('label', {}, el('span', { text: label }), el('input', { 'data-field': field, name: field, ...props }));
}

function select(label, field, options, value) {
  return el('label', {}, el('span', { text: label }),
    el('select', { 'data-field': field, name: field }, options.map(([v, text]) => el('option', { value: v, text, selected: v === value }))));
}

// What the server applies to a config field left out (GameConfigInput in openapi.yaml): a blank
// field shows it, greyed, and is left out of the request. The browser test checks each against
// the config the server made.
const DEFAULTS = { entryTimeoutMs: 60000, moveTimeoutMs: 60000, revealTimeoutMs: 60000, maxExtensions: 3, maxRounds: 100 };

// The fields of a game config; prefix is the path the server names them by ('config.' when the
// config is nested in the request body).
function configFields(prefix, rulesetIds, c = {}) {
  const n = (label, name, props) => input(label, prefix + name,
    { type: 'number', inputmode: 'numeric', value: c[name] ?? null, placeholder: DEFAULTS[name] ?? null, ...props });
  return el('fieldset', { class: 'config' },
    el('legend', { text: 'Game config' }),
    n('Bet', 'betSize', { min: 0, required: true }),
    n('Players limit', 'playersCountLimit', { min: 2, required: true }),
    n('Entry timeout (ms)', 'entryTimeoutMs', { min: 1 }),
    n('Move timeout (ms)', 'moveTimeoutMs', { min: 1 }),
    n('Reveal timeout (ms)', 'revealTimeoutMs', { min: 1 }),
    select('Ruleset', prefix + 'ruleset', rulesetIds.map((r) => [r, r]), c.ruleset ?? 'rpsls'),
    select('Resolution', prefix + 'resolution', [['classic', 'classic'], ['weighted', 'weighted']], c.resolution ?? 'classic'),
    n('Max extensions (0 = unlimited)', 'maxExtensions', { min: 0 }),
    n('Max rounds (0 = unlimited)', 'maxRounds', { min: 0 }),
    el('label', { class: 'check' }, el('input', { type: 'checkbox', 'data-field': prefix + 'startWhenFull', name: prefix + 'startWhenFull', checked: c.startWhenFull ?? true }),
      el('span', { text: 'Start as soon as the game is full' })),
  );
}

// readConfig reads the config fields; empty numbers are left out so the server's defaults apply.
function readConfig(form, prefix) {
  const config = {};
  for (const name of ['betSize', 'playersCountLimit', 'entryTimeoutMs', 'moveTimeoutMs', 'revealTimeoutMs', 'maxExtensions', 'maxRounds']) {
    const v = form.elements[prefix + name].value.trim();
    if (v !== '') config[name] = Number(v);
  }
  config.ruleset = form.elements[prefix + 'ruleset'].value;
  config.resolution = form.elements[prefix + 'resolution'].value;
  config.startWhenFull = form.elements[prefix + 'startWhenFull'].checked;
  return config;
}

// ---------------------------------------------------------------- sections

function ledgerSection() {
  const body = el('div', {}, el('p', { class: 'muted', text: 'Loading…' }));
  const load = async () => {
    try {
      const r = await api('/admin/ledger', { admin: true });
      const checks = [
        ['Entries sum to zero', r.invariants.entriesSumToZero],
        ['Balances match entries', r.invariants.balancesMatchEntries],
        ['No negative balance', r.invariants.noNegativeBalance],
        ['Ended games hold no escrow', r.invariants.closedEscrowsZero],
      ];
      replace(body,
        el('p', { class: `ledger-ok ${r.ok ? 'ok' : 'bad'}`, text: r.ok ? '✓ Every invariant holds' : '✗ An invariant is broken' }),
        el('dl', { class: 'stats pairs' }, [['Treasury', r.treasury], ['Player balances', r.playerBalances], ['Escrows', r.escrows], ['Entries sum', r.entriesSum]]
          .map(([k, v]) => el('div', {}, el('dt', { text: k }), el('dd', { text: formatAmount(v) })))),
        el('ul', { class: 'checks' }, checks.map(([k, ok]) => el('li', { class: ok ? 'ok' : 'bad', text: `${ok ? '✓' : '✗'} ${k}` }))));
    } catch (err) {
      replace(body, el('p', { class: 'error', text: `The ledger cannot be read: ${err.message}` }));
    }
  };
  load();
  return { node: el('section', { id: 'ledger', class: 'card' }, el('h2', {}, 'Ledger ', el('button', { type: 'button', class: 'small', onclick: load, text: 'Refresh' })), body), load };
}

function createLobbyForm(rulesetIds, onCreated) {
  return actionForm({
    id: 'create-lobby',
    title: 'Create a lobby',
    fields: [input('Name', 'name', { required: true, maxlength: 100 }), configFields('config.', rulesetIds, { betSize: 100, playersCountLimit: 2 })],
    buttons: el('button', { type: 'submit', text: 'Create lobby' }),
    send: (key, _, form) => adminAct('/lobbies', {
      action: 'create_lobby', idempotencyKey: key,
      body: { name: form.elements.name.value, config: readConfig(form, 'config.') },
    }),
    done: (lobby) => {
      onCreated(lobby);
      return `Created “${lobby.name}”.`;
    },
  });
}

// The controls of one lobby: its state, next config, stop and close.
function manageLobby(lobbies, rulesetIds, changed) {
  const box = el('section', { id: 'manage', class: 'card' });
  const picker = el('select', { id: 'manage-lobby', 'aria-label': 'Lobby' }, lobbies.map((l) => el('option', { value: l.id, text: l.name })));
  const detail = el('div');
  const show = async () => {
    const id = picker.value;
    if (!id) {
      replace(detail, el('p', { class: 'muted', text: 'No lobby yet.' }));
      return;
    }
    let lobby;
    try {
      lobby = await api(`/lobbies/${id}`, { admin: true });
    } catch (err) {
      replace(detail, el('p', { class: 'error', text: err.message }));
      return;
    }
    const state = el('div', { class: 'lobby-state' });
    const renderState = (l) => {
      const g = l.game;
      replace(state,
        el('p', {},
          el('a', { href: `/lobbies/${l.id}`, class: 'lobby-name', text: l.name }), ' ',
          l.closed ? el('span', { class: 'badge closed', text: 'Closed' }) : null,
          g ? [' · game ', String(g.number), ' ', stageBadge(g.stage), ` · ${g.players} players · pot ${formatAmount(g.pot)}`] : ' · no game'),
        el('p', { class: 'muted', text: l.nextConfig ? 'A next config is set (shown below).' : 'The next game keeps the current config (shown below).' }));
    };
    const after = (l) => {
      renderState(l);
      changed();
    };
    renderState(lobby);
    replace(detail,
      state,
      actionForm({
        id: 'next-config', title: 'Next game’s config',
        fields: configFields('', rulesetIds, lobby.nextConfig ?? lobby.config),
        buttons: el('button', { type: 'submit', text: 'Set next config' }),
        send: (key, _, form) => adminAct(`/lobbies/${lobby.id}/next-config`, {
          method: 'PUT', action: 'set_next_config', lobbyId: lobby.id, idempotencyKey: key, body: readConfig(form, ''),
        }),
        done: (l) => { after(l); return 'The next game will use this config.'; },
      }),
      actionForm({
        id: 'stop-game', title: 'Stop the current game',
        fields: [el('p', { class: 'muted', text: 'In registration every bet is refunded; later the pot is split among the players still in.' }),
          input('Reason', 'reason', { required: true, maxlength: 500 })],
        buttons: el('button', { type: 'submit', class: 'danger', text: 'Stop game' }),
        send: (key, _, form) => adminAct(`/lobbies/${lobby.id}/stop`, {
          action: 'stop', lobbyId: lobby.id, idempotencyKey: key, body: { reason: form.elements.reason.value },
        }),
        done: (l) => { after(l); return 'Stopped.'; },
      }),
      actionForm({
        id: 'close-lobby', title: 'Close the lobby',
        fields: el('p', { class: 'muted', text: 'No new game starts after the current one.' }),
        buttons: el('button', { type: 'submit', class: 'danger', text: 'Close lobby', disabled: lobby.closed }),
        send: (key) => adminAct(`/lobbies/${lobby.id}/close`, { action: 'close_lobby', lobbyId: lobby.id, idempotencyKey: key }),
        done: (l) => { after(l); return 'Closed.'; },
      }),
    );
  };
  picker.addEventListener('change', show);
  replace(box, el('h2', { text: 'Manage a lobby' }), el('label', { class: 'picker' }, el('span', { text: 'Lobby' }), picker), detail);
  show();
  return {
    node: box,
    add(lobby) {
      picker.append(el('option', { value: lobby.id, text: lobby.name }));
      picker.value = lobby.id;
      show();
    },
  };
}

function statusBadge(account) {
  return el('span', { class: `badge status-${account.status}`, text: account.status === 'disabled' ? 'Disabled' : 'Active' });
}

// One account as the search finds it: balance, status, results and latest games.
function accountCard(found, onChoose) {
  const a = found.account;
  return el('li', { class: 'found', 'data-account': a.id },
    el('p', { class: 'found-head' }, el('strong', { class: 'player-name', text: a.name }), ' ', statusBadge(a),
      el('button', { type: 'button', class: 'small', text: 'Choose', 'aria-label': `Choose ${a.name}`, onclick: () => onChoose(found) })),
    el('p', { class: 'muted id', text: a.id }),
    el('p', { text: `Balance ${formatAmount(a.balance)} · ${found.gamesPlayed} games, ${found.gamesWon} won, net ${formatSigned(found.net)}` }),
    found.recentGames.length
      ? el('ul', { class: 'recent' }, found.recentGames.map((g) => el('li', {},
        el('a', { href: `/lobbies/${encodeURIComponent(g.lobbyId)}`, class: 'lobby-name', text: g.lobbyName }),
        ` game ${g.gameNumber}: ${endingText(g)}, ${formatSigned(g.net)}`)))
      : el('p', { class: 'muted', text: 'No game yet.' }));
}

// The account tools: search by name prefix or id (paged), choose an account, credit or debit it,
// disable or enable it. changed() runs after every action that reached the server.
function accountsSection(changed) {
  let chosen = null; // the chosen account (an Account)
  let lastQuery = '';
  const results = el('div', { id: 'results', 'aria-live': 'polite' });
  const more = el('div', { class: 'buttons' });

  const search = async (query, after = null) => {
    const page = await api(`/admin/accounts?query=${encodeURIComponent(query)}&limit=${SEARCH_PAGE}${after ? `&after=${encodeURIComponent(after)}` : ''}`, { admin: true });
    const list = after ? results.querySelector('ul.accounts') : el('ul', { class: 'accounts' });
    list.append(...page.accounts.map((f) => accountCard(f, choose)));
    if (!after) replace(results, page.accounts.length ? list : el('p', { class: 'muted', text: 'No account matches.' }));
    replace(more, page.next ? el('button', { type: 'button', class: 'small', text: 'More accounts', onclick: () => search(query, page.next).catch(showError) }) : null);
  };
  const showError = (err) => replace(more, el('p', { class: 'error', text: err.message }));
  const refresh = () => search(lastQuery).catch(showError);

  const finder = actionForm({
    id: 'find-account', title: 'Accounts and money',
    fields: input('Name or account id', 'query', { autocomplete: 'off', spellcheck: 'false', maxlength: 100, placeholder: 'empty lists every account' }),
    buttons: el('button', { type: 'submit', text: 'Search' }),
    send: async (_, __, form) => {
      lastQuery = form.elements.query.value.trim();
      await search(lastQuery);
    },
    done: () => '',
  });
  finder.append(results, more);

  const current = el('p', { class: 'account', role: 'status' });
  const showChosen = () => replace(current,
    el('strong', { class: 'player-name', text: chosen.name }), ' ', statusBadge(chosen),
    el('span', { class: 'muted id', text: ` ${chosen.id}` }), ` · balance ${formatAmount(chosen.balance)}`);
  const after = (account) => {
    chosen = account;
    showChosen();
    refresh();
    changed();
  };

  const transfer = actionForm({
    id: 'transfer', title: 'Credit or debit',
    fields: [input('Amount', 'amount', { type: 'number', min: 1, required: true, inputmode: 'numeric' }), input('Memo (optional)', 'memo', { maxlength: 200 })],
    buttons: [el('button', { type: 'submit', name: 'kind', value: 'credits', text: 'Credit' }), el('button', { type: 'submit', name: 'kind', value: 'debits', class: 'danger', text: 'Debit' })],
    send: (key, kind, form) => {
      const body = { amount: Number(form.elements.amount.value) };
      if (form.elements.memo.value) body.memo = form.elements.memo.value;
      return adminAct(`/admin/accounts/${chosen.id}/${kind}`, { action: kind === 'credits' ? 'credit' : 'debit', account: chosen.id, idempotencyKey: key, body });
    },
    fieldFor: { insufficient_funds: 'amount' },
    done: (acct, kind) => {
      after(acct);
      return `${kind === 'credits' ? 'Credited' : 'Debited'}: the balance is now ${formatAmount(acct.balance)}.`;
    },
  });
  const status = actionForm({
    id: 'account-status', title: 'Disable or enable',
    fields: [el('p', { class: 'muted', text: 'A disabled account’s requests are refused; its balance and the bets in its games stay its own.' }),
      input('Reason (to disable)', 'reason', { required: true, maxlength: 500 })],
    buttons: [el('button', { type: 'submit', name: 'op', value: 'disable', class: 'danger', text: 'Disable account' }),
      el('button', { type: 'submit', name: 'op', value: 'enable', formnovalidate: true, text: 'Enable account' })],
    send: (key, op, form) => adminAct(`/admin/accounts/${chosen.id}/${op}`, {
      action: `${op}_account`, account: chosen.id, idempotencyKey: key,
      body: op === 'disable' ? { reason: form.elements.reason.value } : undefined,
    }),
    fieldFor: { forbidden: 'reason' },
    done: (acct) => {
      after(acct);
      return acct.status === 'disabled' ? `${acct.name} is disabled.` : `${acct.name} is active.`;
    },
  });
  // A new token for a player who lost theirs, shown once with a QR code the Android app scans to
  // sign in (this server's address and the token).
  const issued = el('div', { class: 'issued-token' });
  const token = actionForm({
    id: 'issue-token', title: 'Sign-in token',
    fields: el('p', { class: 'muted', text: 'Issue a new token when a player lost theirs or it leaked: every token they had stops working at once.' }),
    buttons: el('button', { type: 'submit', class: 'danger', text: 'Issue a new token' }),
    send: (key) => adminAct(`/admin/accounts/${chosen.id}/token`, { action: 'issue_token', account: chosen.id, idempotencyKey: key }),
    done: (r) => {
      const code = signInCode(location.origin, r.token);
      replace(issued,
        qrSvg(code, `QR code to sign in as ${chosen.name}`),
        el('div', {},
          el('p', { text: `Show this to ${chosen.name}: in the app, “Scan a QR code”, or paste the token. It is shown only once.` }),
          el('code', { class: 'token', text: r.token })));
      return `${chosen.name} has a new token.`;
    },
  });
  token.append(issued);

  // A key recovery for a player who lost every device: every key the player has is retired and
  // the key made on the new device bound, in one keys_recovered event of the player's public key
  // log, which the admin's key signs when one is loaded (adminAct).
  const keyLogLink = el('p', { class: 'key-log-link' });
  const recovery = actionForm({
    id: 'recover-keys', title: 'Key recovery',
    fields: [el('p', { class: 'muted', text: 'For a player who lost every device: the key made on the player’s new device replaces every key the account has.' }),
      input('New public key (64 hex, from the player’s new device)', 'publicKey',
        { required: true, pattern: '[0-9a-fA-F]{64}', title: '64 hex characters', autocomplete: 'off', spellcheck: 'false' }),
      input('Reason (public in the key log: how you knew it was the player)', 'reason', { required: true, maxlength: 500 })],
    buttons: el('button', { type: 'submit', class: 'danger', text: 'Recover keys' }),
    confirm: {
      text: async (_, form) => {
        const seed = adminKey.get();
        const by = seed ? `signed by you (key ${(await signerOf(seed)).keyId})` : 'and unsigned: no key of yours is loaded';
        const name = chosen.name;
        return `Recover ${name}’s keys? Every key ${name} has now is retired at once: ${name}’s phones stop signing, and only key ` +
          `${keyIdOf(form.elements.publicKey.value.trim().toLowerCase())} signs for ${name} from now on. ` +
          `The recovery is public in ${name}’s key log, with your reason, ${by}.`;
      },
      button: () => `Yes, recover ${chosen.name}’s keys`,
    },
    send: (key, _, form) => adminAct(`/admin/accounts/${chosen.id}/keys`, {
      action: 'recover_keys', account: chosen.id, idempotencyKey: key,
      body: { publicKey: form.elements.publicKey.value.trim().toLowerCase(), reason: form.elements.reason.value },
    }),
    fieldFor: { key_taken: 'publicKey' },
    done: ({ keys }) => {
      const bound = keys.reduce((a, b) => (b.addedSeq > a.addedSeq ? b : a));
      const retired = keys.filter((k) => k.retiredSeq === bound.addedSeq).map((k) => k.keyId);
      replace(keyLogLink, el('a', { href: `/accounts/${encodeURIComponent(chosen.id)}`, text: `${chosen.name}’s key log` }), ' shows it to everyone.');
      changed();
      return `Recovered: key ${bound.keyId} is ${chosen.name}’s only key now${retired.length ? `; retired ${retired.join(', ')}` : ''}.`;
    },
  });
  recovery.append(keyLogLink);
  const panel = el('section', { id: 'chosen', class: 'card', hidden: true }, el('h2', { text: 'Chosen account' }), current, transfer, status, token, recovery);

  function choose(found) {
    chosen = found.account;
    showChosen();
    replace(issued);
    replace(keyLogLink);
    for (const form of [transfer, status, token, recovery]) {
      form.reset();
      clearProblems(form);
      form.querySelector('.form-ok').textContent = '';
    }
    panel.hidden = false;
    panel.scrollIntoView({ block: 'nearest' });
  }

  return el('div', { id: 'money' }, finder, panel);
}

const auditText = {
  credit: 'credit', debit: 'debit', create_lobby: 'create lobby', set_next_config: 'next config',
  close_lobby: 'close lobby', stop: 'stop game', disable_account: 'disable account', enable_account: 'enable account',
  issue_token: 'new token', recover_keys: 'key recovery',
};

// targetLink shows an audit entry's target by its name once read (ids until then), linking to the
// account's profile or the lobby's page. Names are read once per target.
const targetNames = new Map();
function targetLink(action, id) {
  const account = ['credit', 'debit', 'disable_account', 'enable_account', 'issue_token', 'recover_keys'].includes(action);
  const path = `/${account ? 'accounts' : 'lobbies'}/${encodeURIComponent(id)}`;
  const link = el('a', { href: path, class: 'id', title: id, text: id.slice(0, 8) });
  if (!targetNames.has(path)) targetNames.set(path, api(path).then((r) => r.name, () => null));
  targetNames.get(path).then((name) => {
    if (name == null) return;
    link.textContent = name;
    link.className = account ? 'player-name' : 'lobby-name';
  });
  return link;
}

// The audit log, newest first, a page at a time; load() starts again from the newest.
function auditSection() {
  const body = el('div', {}, el('p', { class: 'muted', text: 'Loading…' }));
  const more = el('div', { class: 'buttons' });
  const row = (e) => el('tr', {},
    el('td', { 'data-label': 'When', class: 'num', text: formatTime(e.at) }),
    el('td', { 'data-label': 'Action', class: 'action', text: auditText[e.action] ?? e.action }),
    el('td', { 'data-label': 'Target' }, e.target ? targetLink(e.action, e.target) : '—'),
    el('td', { 'data-label': 'Request', class: 'request', text: e.detail?.request ? JSON.stringify(e.detail.request) : '—' }),
    el('td', { 'data-label': 'Status', class: `num ${e.detail?.status >= 400 ? 'bad' : ''}`, text: e.detail?.status ?? '—' }));
  const load = async (after = null) => {
    try {
      const page = await api(`/admin/audit?limit=${AUDIT_PAGE}${after ? `&after=${encodeURIComponent(after)}` : ''}`, { admin: true });
      let rows = body.querySelector('tbody');
      if (!after || !rows) {
        rows = el('tbody');
        replace(body, page.entries.length
          ? el('table', { class: 'audit' }, el('thead', {}, el('tr', {}, ['When', 'Action', 'Target', 'Request', 'Status'].map((h) => el('th', { text: h })))), rows)
          : el('p', { class: 'muted', text: 'No admin action yet.' }));
      }
      rows.append(...page.entries.map(row));
      replace(more, page.next ? el('button', { type: 'button', class: 'small', text: 'Older entries', onclick: () => load(page.next) }) : null);
    } catch (err) {
      replace(body, el('p', { class: 'error', text: `The audit log cannot be read: ${err.message}` }));
    }
  };
  load();
  return {
    node: el('section', { id: 'audit', class: 'card' },
      el('h2', {}, 'Audit log ', el('button', { type: 'button', class: 'small', onclick: () => load(), text: 'Refresh' })),
      el('p', { class: 'hint', text: 'Every admin action, refusals included, newest first.' }), body, more),
    load,
  };
}

// ---------------------------------------------------------------- the admin's signing key

// seedKeeper gives the seed of the key a form binds: a new one per intended action, the same one
// for a retry after a lost response (while the form's Idempotency-Key stays), so that the retry
// binds the key the first attempt may have bound.
function seedKeeper() {
  let pending = null;
  return (key) => {
    if (pending?.key !== key) pending = { key, seed: newSeed() };
    return pending.seed;
  };
}

// bindKey binds the key of seed to the admin's account (POST /v1/me/keys, action add_key), signed
// by signer, the key in use, or (null) by the new key itself, as the account's first key is; it
// returns the new key's id and the account's keys (AccountKeys).
async function bindKey(seed, idempotencyKey, signer = null) {
  const [added, { admin, origin }] = await Promise.all([signerOf(seed), adminIdentity()]);
  const body = { publicKey: added.publicKey };
  const signature = await signAction(signer ?? added, { origin, action: 'add_key', player: admin, payload: body, idempotencyKey, signedAt: Date.now() });
  return { keyId: added.keyId, keys: await api('/me/keys', { method: 'POST', admin: true, body, idempotencyKey, signature }) };
}

// seedOnce shows a private key just made, once, with what it is for.
function seedOnce(seed, why) {
  return el('div', { class: 'seed-once', role: 'alert' },
    el('p', {}, el('strong', { text: 'Save this private key now: it is shown only once. ' }), why),
    el('code', { class: 'seed', text: seed }));
}

// The admin's keys, as GET /v1/accounts/{id}/keys lists them, with Retire (DELETE
// /v1/me/keys/{keyId}, action retire_key, after a confirmation) on each active key but the one in
// use, and another key made here and bound signed by the key in use (a second device, or a spare
// kept offline). signer is the key in use.
function keysOfAccount(signer) {
  const list = el('ul', { class: 'key-list' }, el('li', { class: 'muted', text: 'Reading your keys…' }));
  const show = ({ keys }) => replace(list, keys.map((k) => {
    const inUse = k.keyId === signer.keyId;
    const retired = k.retiredSeq != null;
    return el('li', { 'data-key': k.keyId, class: retired ? 'retired' : null },
      el('code', { class: 'listed-key', text: k.keyId }),
      inUse ? el('span', { class: 'badge in-use', text: 'In use in this tab' }) : null,
      retired ? el('span', { class: 'badge closed', text: 'Retired' }) : null,
      k.recovery ? el('span', { class: 'badge recovered', text: 'From a recovery' }) : null,
      retired || inUse ? null
        : el('button', { type: 'submit', class: 'small danger', name: 'keyId', value: k.keyId, text: 'Retire', 'aria-label': `Retire key ${k.keyId}` }),
      el('span', { class: 'muted when', text: retired ? `added ${formatTime(k.addedAt)}, retired ${formatTime(k.retiredAt)}` : `added ${formatTime(k.addedAt)}` }));
  }));
  const reload = async () => show(await api(`/accounts/${encodeURIComponent((await adminIdentity()).admin)}/keys`));
  reload().catch((err) => replace(list, el('li', { class: 'error', text: `Your keys cannot be read: ${err.message}` })));

  const retire = actionForm({
    id: 'admin-keys', title: 'Your account’s keys',
    fields: list,
    buttons: null,
    confirm: {
      text: (keyId) => `Retire key ${keyId}? It stops signing for your account at once, on whatever device holds it, and cannot be bound again; ` +
        `what it signed stays valid. The retirement is public in your key log, signed by key ${signer.keyId}.`,
      button: (keyId) => `Yes, retire key ${keyId}`,
    },
    send: async (key, keyId) => {
      const { admin, origin } = await adminIdentity();
      const signature = await signAction(signer, { origin, action: 'retire_key', player: admin, payload: { keyId }, idempotencyKey: key, signedAt: Date.now() });
      try {
        return { keyId, keys: await api(`/me/keys/${encodeURIComponent(keyId)}`, { method: 'DELETE', admin: true, idempotencyKey: key, signature }) };
      } catch (err) {
        // The list may be stale (a key retired from another tab or device): show the keys as they are.
        if (err instanceof ApiError && err.status === 404) reload().catch(() => {});
        throw err;
      }
    },
    done: ({ keyId, keys }) => {
      show(keys);
      return `Key ${keyId} is retired.`;
    },
  });

  const made = el('div');
  const seedFor = seedKeeper();
  const add = actionForm({
    id: 'add-key', title: 'Another key',
    fields: [el('p', { class: 'muted', text: 'For a second device, or a spare kept offline: made in this browser and bound to your account, signed by the key in use. This tab keeps signing with the key in use.' }), made],
    buttons: el('button', { type: 'submit', text: 'Add another key' }),
    send: async (key) => {
      const seed = seedFor(key);
      return { seed, ...await bindKey(seed, key, signer) };
    },
    done: ({ seed, keyId, keys }) => {
      show(keys);
      replace(made, seedOnce(seed, `It is key ${keyId}: load it on the other device (“A key you have”), or keep it offline to sign again if you lose the key in use.`));
      return `Key ${keyId} is bound to your account.`;
    },
  });
  return el('div', { class: 'key-forms' }, retire, add);
}

// The admin's own Ed25519 key, with which adminAct signs every action once it is loaded: made
// here and bound to the admin's account (as its first key, so signed by itself), or an existing
// one pasted. Like the token it stays in this tab (sessionStorage); only signatures leave it.
// With a key loaded, the account's keys are listed, to add another or retire one.
function keySection() {
  const box = el('section', { id: 'signing-key', class: 'card' });
  const title = el('h2', { text: 'Signing key' });
  const safe = 'The key stays in this tab only and is never sent to the server. Keep its seed safe: whoever holds it signs as you.';

  const seedFor = seedKeeper();
  const generate = actionForm({
    id: 'generate-key', title: 'A new key',
    fields: el('p', { class: 'muted', text: 'For an account with no key yet: make one in this browser and bind it to your account, signed by itself.' }),
    buttons: el('button', { type: 'submit', text: 'Generate and bind a key' }),
    send: async (key) => {
      const seed = seedFor(key);
      await bindKey(seed, key);
      return seed;
    },
    done: (seed) => {
      adminKey.set(seed);
      render(seed);
      return '';
    },
  });
  const load = actionForm({
    id: 'load-key', title: 'A key you have',
    fields: input('Private key (64 hex: the seed)', 'seed', { type: 'password', required: true, autocomplete: 'off', spellcheck: 'false' }),
    buttons: el('button', { type: 'submit', text: 'Load key' }),
    send: async (_, __, form) => {
      const seed = form.elements.seed.value.trim().toLowerCase();
      const signer = await signerOf(seed).catch((err) => { throw new ApiError(400, { code: 'validation_failed', field: 'seed', detail: err.message }); });
      const { admin } = await adminIdentity();
      const { keys } = await api(`/accounts/${encodeURIComponent(admin)}/keys`);
      if (!keys.some((k) => k.keyId === signer.keyId && k.retiredSeq == null)) {
        throw new ApiError(400, { code: 'not_bound', field: 'seed', detail: `Key ${signer.keyId} is not an active key of your account.` });
      }
      adminKey.set(seed);
    },
    done: () => {
      render();
      return '';
    },
  });

  // render shows the key in use, and its seed once when it was just made.
  async function render(newlyMade = null) {
    const seed = adminKey.get();
    if (!seed) {
      replace(box, title,
        el('p', { class: 'muted', text: 'No key loaded: your actions go unsigned, which the server takes only while your account has no key. Load one and every action on this page is signed by it, so the log shows which key made it.' }),
        el('div', { class: 'key-forms' }, generate, load));
      return;
    }
    let signer;
    try {
      signer = await signerOf(seed);
    } catch {
      adminKey.clear();
      render();
      return;
    }
    replace(box, title,
      el('p', { class: 'key-in-use' }, 'Every action on this page is signed with key ', el('code', { class: 'key-id', text: signer.keyId }), '.'),
      newlyMade ? seedOnce(newlyMade, 'You need it to sign from another tab or device; if you lose it, your account needs a key recovery to sign again.') : null,
      el('p', { class: 'muted', text: safe }),
      el('div', { class: 'buttons' }, el('button', { type: 'button', class: 'small', text: 'Forget the key in this tab', onclick: () => { adminKey.clear(); render(); } })),
      keysOfAccount(signer));
  }
  render();
  return box;
}

// ---------------------------------------------------------------- sign in

function signIn(message) {
  const form = el('form', { id: 'sign-in', class: 'card' },
    el('h2', { text: 'Sign in' }),
    el('p', { class: 'muted', text: 'Paste the admin token rpsd printed (or `rpsd admin token`). It stays in this tab only.' }),
    el('p', { class: 'form-error', role: 'alert', text: message ?? '' }),
    input('Admin token', 'token', { type: 'password', required: true, autocomplete: 'off' }),
    el('div', { class: 'buttons' }, el('button', { type: 'submit', text: 'Sign in' })));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearProblems(form);
    adminToken.set(form.elements.token.value.trim());
    try {
      await api('/admin/ledger', { admin: true });
      start();
    } catch (err) {
      adminToken.clear();
      const why = err.status === 401 ? 'This token is not valid.' : err.status === 403 ? 'This token is a player’s, not an admin’s.' : err.message;
      showProblem(form, new ApiError(err.status, { code: err.code, field: 'token', detail: why }));
    }
  });
  replace(root, form);
}

async function start() {
  if (!adminToken.get()) {
    signIn();
    return;
  }
  let lobbies;
  let rulesetIds;
  try {
    [lobbies, rulesetIds] = await Promise.all([
      allPages('/lobbies', 'lobbies'),
      api('/rulesets').then((r) => r.rulesets.map((s) => s.id)),
      api('/admin/ledger', { admin: true }),
    ]);
  } catch (err) {
    adminToken.clear();
    signIn(err.status === 401 || err.status === 403 ? 'Sign in again.' : err.message);
    return;
  }
  const ledger = ledgerSection();
  const audit = auditSection();
  const changed = () => {
    ledger.load();
    audit.load();
  };
  const manage = manageLobby(lobbies, rulesetIds, changed);
  replace(root,
    el('p', { class: 'signed-in' }, 'Signed in as admin. ',
      el('button', { type: 'button', class: 'small', onclick: () => { adminToken.clear(); adminKey.clear(); signIn(); }, text: 'Sign out' })),
    keySection(),
    el('div', { class: 'grid' },
      el('div', {}, ledger.node, accountsSection(changed)),
      el('div', {}, createLobbyForm(rulesetIds, (l) => { manage.add(l); audit.load(); }), manage.node)),
    audit.node);
}

start();
