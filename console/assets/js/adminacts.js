// The operator's acts in a lobby's log (issue 31: "every act of the operator is attributable
// too"): which events an admin's action wrote, and whether the request the admin signed
// (data.auth.request) asked for what the event shows, read as the server reads a request
// (rpsverify's askedFor). Pure functions over data, checked by node's test runner; keys.js checks
// the signatures themselves.

// The action an admin signs for each event type an admin's act writes (rpsverify's adminActionOf).
const ADMIN_ACTS = {
  lobby_created: 'create_lobby',
  next_config_changed: 'set_next_config',
  lobby_closed: 'close_lobby',
  game_stopped: 'stop',
};

// The reasons of the stops the rules make, which no admin signs (tournament.ReasonMaxExtensions,
// ReasonMaxRounds, ReasonLobbyClosed).
const RULES_STOPS = new Set(['max_extensions', 'max_rounds', 'lobby closed']);

// adminActOf is the admin action an event records (null: not an admin's act). A stop the rules
// made carries no signature; one that carries a signature is an admin's, whatever its reason.
export function adminActOf(e) {
  const action = ADMIN_ACTS[e.type] ?? null;
  if (action === 'stop' && e.data?.auth == null && RULES_STOPS.has(e.data?.reason)) return null;
  return action;
}

// The config whose members a request's omitted (or null) ones take (tournament.DefaultConfig),
// with the JSON type of each member. A test holds it to the contract's GameConfigInput, member for
// member: a member added there and not here would go unchecked.
export const DEFAULT_CONFIG = {
  betSize: 0,
  playersCountLimit: 2,
  entryTimeoutMs: 60_000,
  moveTimeoutMs: 60_000,
  revealTimeoutMs: 60_000,
  ruleset: 'rpsls',
  resolution: 'classic',
  startWhenFull: true,
  maxExtensions: 3,
  maxRounds: 100,
};

// Go's encoding/json, which reads the request on the server, matches a member to a field by its
// name or case-insensitively (bytes.EqualFold: K, the Kelvin sign, folds to k and ſ to s), the
// last such member of the object winning.
const fold = (name) => name.replace(/\u017f/g, 's').replace(/\u212a/g, 'k').toLowerCase();
const byCodeUnits = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

function isObject(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

// membersOf reads obj as Go decodes it into a struct of fields: {field: value} for each field a
// member matches, in the order the object's RFC 8785 text has its members. A null member leaves
// a field as it was, unless keepNull (a json.RawMessage field takes the null).
function membersOf(obj, fields, keepNull = false) {
  const out = {};
  for (const key of Object.keys(obj).sort(byCodeUnits)) {
    const field = fields.find((f) => fold(f) === fold(key));
    if (field !== undefined && (keepNull || obj[key] !== null)) out[field] = obj[key];
  }
  return out;
}

const isType = (value, like) => (typeof like === 'number' ? Number.isSafeInteger(value) : typeof value === typeof like);

// configOfRequest is the config a request's config object asks for (tournament.ConfigOfRequest):
// DEFAULT_CONFIG with each member the request sets. null when the server would refuse it.
export function configOfRequest(request) {
  if (request === null) return { ...DEFAULT_CONFIG };
  if (!isObject(request)) return null;
  const set = membersOf(request, Object.keys(DEFAULT_CONFIG));
  for (const [field, value] of Object.entries(set)) if (!isType(value, DEFAULT_CONFIG[field])) return null;
  return { ...DEFAULT_CONFIG, ...set };
}

// A lobby's name as the server keeps it (tournament.Name): the PRECIS Nickname profile (RFC 8266:
// every Unicode space a single U+0020, none at either end, then NFKC, until it no longer changes),
// then trimmed of white space. The server also refuses some names; one it refused is in no event.
export function lobbyName(text) {
  let name = text;
  for (let prev = null; name !== prev;) {
    prev = name;
    name = name.replace(/\p{Zs}+/gu, ' ').replace(/^ | $/g, '').normalize('NFKC');
  }
  return trimSpace(name);
}

// trimSpace is Go's strings.TrimSpace: white space (the Unicode property) off both ends.
export function trimSpace(text) {
  return text.replace(/^\p{White_Space}+|\p{White_Space}+$/gu, '');
}

const sameConfig = (a, b) => isObject(b) && Object.keys(DEFAULT_CONFIG).every((k) => a[k] === b[k]);

// requestProblem says how the request an admin signed (auth.request, RFC 8785 JSON as parsed)
// asks for something other than what its event shows: the name and config of a lobby created,
// the next config, the reason of a stop, the key and reason of a recovery (null when it asks for
// just that).
export function requestProblem(action, request, data) {
  const shown = (what, value) => `${what} ${JSON.stringify(value)}`;
  const mismatch = (asked, event) => `the signed request asks for ${asked}, the event shows ${event}`;
  if (request !== null && !isObject(request)) return `the signed request ${JSON.stringify(request)} is not a JSON object`;
  const req = membersOf(request ?? {}, ['name', 'config', 'reason', 'publicKey'], true);
  switch (action) {
    case 'create_lobby': {
      const name = typeof req.name === 'string' ? lobbyName(req.name) : null;
      if (name !== data.name) return mismatch(shown('the name', req.name ?? null), shown('the name', data.name));
      // A creation without a config member asks for none (a null one for the defaults).
      const config = 'config' in req ? configOfRequest(req.config) : null;
      if (!config || !sameConfig(config, data.config)) return mismatch(shown('the config', req.config ?? null), shown('the config', data.config));
      return null;
    }
    case 'set_next_config': {
      // The request's body is the config itself.
      const config = configOfRequest(request);
      if (!config || !sameConfig(config, data.config)) return mismatch(shown('the config', request), shown('the config', data.config));
      return null;
    }
    case 'recover_keys':
      if (req.publicKey !== data.publicKey) return mismatch(shown('the key', req.publicKey ?? null), shown('the key', data.publicKey));
    // falls through: a recovery's reason is read as a stop's
    case 'stop': {
      const reason = typeof req.reason === 'string' ? trimSpace(req.reason) : null;
      if (reason !== data.reason) return mismatch(shown('the reason', req.reason ?? null), shown('the reason', data.reason));
      return null;
    }
    default: // close_lobby asks for nothing but the lobby, which the message names
      return null;
  }
}

// rulesStops holds the stops that give a reason of the rules' (which no admin's stop may give,
// and which carry no admin's signature) to the rules, as rpsverify's rulesStop does, so that no
// admin's unsigned stop passes for the rules': max_rounds once the game has reached its last
// round, max_extensions once a moves or reveal stage nobody acted in has expired maxExtensions
// times in a row, "lobby closed" right after the lobby closed during registration. It follows
// the lobby's current game through the log: follow(e) every event, in order; problem(e) says
// why a game_stopped is not where the rules put it (null: it is, or it is not the rules').
export function rulesStops() {
  let game = null; // {config, round, stage, firstDeadline (the stage's own, moved by clock shifts), acted}
  let prevType = null;
  const open = () => game?.stage === 'moves' || game?.stage === 'reveal';
  return {
    follow(e) {
      const d = e.data ?? {};
      switch (e.type) {
        case 'game_opened': game = { config: d.config ?? {}, round: 0, stage: 'registration', firstDeadline: 0, acted: 0 }; break;
        case 'round_started': if (game) Object.assign(game, { round: d.round, stage: 'moves', firstDeadline: d.deadline, acted: 0 }); break;
        case 'moves_closed': if (game) Object.assign(game, { stage: 'reveal', firstDeadline: d.deadline, acted: 0 }); break;
        case 'move_committed':
        case 'move_revealed': if (game) game.acted++; break;
        case 'clock_shifted': if (open()) game.firstDeadline += d.gapMs; break;
        case 'game_finished':
        case 'game_stopped': if (game) game.stage = 'ended'; break;
        default:
      }
      prevType = e.type;
    },
    problem(e) {
      const c = game?.config ?? {};
      const stage = game?.stage ?? 'no game';
      switch (e.data?.reason) {
        case 'max_rounds':
          if (!c.maxRounds || game.round < c.maxRounds) return `a max_rounds stop in round ${game?.round ?? 0} of a game of at most ${c.maxRounds || 'unlimited'} rounds`;
          return null;
        case 'max_extensions': {
          const window = stage === 'reveal' ? c.revealTimeoutMs : c.moveTimeoutMs;
          const due = game?.firstDeadline + c.maxExtensions * window;
          if (!c.maxExtensions || !open() || game.acted > 0 || !(Date.parse(e.at) >= due)) {
            return `a max_extensions stop in the ${stage} stage${game?.acted ? `, which ${game.acted} player${game.acted === 1 ? '' : 's'} acted in` : ''} at ${e.at}, ` +
              `where the rules stop only a moves or reveal stage nobody acted in once it has expired ${c.maxExtensions || 'unlimited'} times` +
              `${Number.isFinite(due) ? ` (at ${new Date(due).toISOString()})` : ''}`;
          }
          return null;
        }
        case 'lobby closed':
          if (stage !== 'registration' || prevType !== 'lobby_closed') return `a lobby closed stop in the ${stage} stage after ${prevType}, where the rules make one only in registration, right after lobby_closed`;
          return null;
        default:
          return null;
      }
    },
  };
}
