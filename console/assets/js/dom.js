// Building the page from data. Every piece of text goes in through text nodes, never as HTML, so a
// name such as <img src=x onerror=alert(1)> shows as those characters.

// el(tag, props, ...children): props sets class, text, attributes and on<event> listeners;
// children are nodes, strings (as text), arrays of them, or null (skipped).
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value == null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = String(value);
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else if (key === 'value') node.value = value;
    else if (key === 'checked') node.checked = value;
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children) {
    if (child == null || child === false) continue;
    if (Array.isArray(child)) append(node, child);
    else node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

// replace swaps a container's content.
export function replace(node, ...children) {
  node.replaceChildren();
  append(node, children);
}

// playerLink is a player's name linking to their public profile.
export function playerLink(id, name) {
  return el('a', { class: 'player-name', href: `/accounts/${encodeURIComponent(id)}`, text: name });
}

// endingText says how a game went for a player (a GameRecord's ending).
export function endingText(g) {
  switch (g.ending) {
    case 'playing': return 'playing';
    case 'won': return 'won';
    case 'eliminated': return `out in round ${g.eliminatedRound}`;
    case 'refunded': return 'refunded';
    case 'share': return 'share of a stop';
    default: return g.ending;
  }
}

export const formatSigned = (n) => (n > 0 ? `+${formatAmount(n)}` : formatAmount(n));

export const formatAmount = (n) => Number(n).toLocaleString('en-US');

export function formatDuration(ms) {
  if (ms <= 0) return '0s';
  const s = Math.ceil(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  if (h > 0) return `${h}h ${String(m).padStart(2, '0')}m`;
  if (m > 0) return `${m}m ${String(sec).padStart(2, '0')}s`;
  return `${sec}s`;
}

export function formatClock(iso) {
  return new Date(iso).toLocaleTimeString('en-GB', { timeZone: 'UTC' });
}

export function formatTime(iso) {
  return new Date(iso).toLocaleString('en-GB', { dateStyle: 'medium', timeStyle: 'medium', timeZone: 'UTC' }) + ' UTC';
}

const stageNames = {
  registration: 'Registration',
  moves: 'Moves',
  reveal: 'Reveal',
  finished: 'Finished',
  stopped: 'Stopped',
};

export function stageBadge(stage) {
  return el('span', { class: `badge stage-${stage}`, text: stageNames[stage] ?? stage });
}

// countdown text for a game: time left to its deadline on the server's clock.
export function countdown(game, now) {
  if (!game || game.deadlineMs == null) {
    return game?.stage === 'registration' ? 'waits for a player' : '—';
  }
  const left = game.deadlineMs - now();
  return left > 0 ? formatDuration(left) : 'closing…';
}

// Shows a problem next to the form control it names (data-field), or at the form's top.
export function showProblem(form, err) {
  clearProblems(form);
  const field = err.field ? form.querySelector(`[data-field="${CSS.escape(err.field)}"]`) : null;
  const text = `${err.message}${err.code ? ` (${err.code})` : ''}`;
  if (field) {
    field.classList.add('invalid');
    field.setAttribute('aria-invalid', 'true');
    const note = el('p', { class: 'field-error', role: 'alert', text });
    field.closest('label')?.append(note) ?? field.after(note);
    field.focus();
    return;
  }
  form.querySelector('.form-error')?.append(text);
}

export function clearProblems(form) {
  for (const n of form.querySelectorAll('.field-error')) n.remove();
  for (const n of form.querySelectorAll('.invalid')) {
    n.classList.remove('invalid');
    n.removeAttribute('aria-invalid');
  }
  const top = form.querySelector('.form-error');
  if (top) top.textContent = '';
}
