// How games, bots and seats are named on every page: bot levels in words in the page's language (never a spec
// such as "ismcts:hard" or a name such as "bot-1"), and one word for guests whatever language named them.
import { t, tOr } from './i18n.js';
import { h } from './util.js';
import { navigate } from './nav.js';

export function gameTitle(game) { return tOr(`game.${game}`, game); }

/** The level word of each bot spec, as GET /api/games gives it (`level`), for seats that carry only the spec. */
const LEVEL_OF = {
  'greedy:easy': 'beginner', 'greedy:medium': 'intermediate', 'greedy:hard': 'strong', greedy: 'instant',
  'expert:easy': 'beginner', 'expert:medium': 'intermediate', 'expert:hard': 'strong',
  random: 'random', heuristic: 'simple', 'ismcts:easy': 'beginner', 'ismcts:medium': 'intermediate', 'ismcts:hard': 'strong',
};

/** A bot's level in words ("Beginner", "Strong"): the server's `level` word when given, else from its spec.
 * The planning Nerts bots (`expert:*`) say so ("Beginner planner"), to tell them from the greedy ones. */
export function botLabel(spec, level = null) {
  const lv = level || LEVEL_OF[spec] || LEVEL_OF[String(spec || '').split(':')[0]] || null;
  if (!lv) return t('seat.bot');
  const word = tOr(`bot.level.${lv}`, lv);
  return String(spec || '').startsWith('expert') ? t('bot.planner', { level: word }) : word;
}

/** What a bot level does, in one sentence of the page's language ('' for a bot without one). */
export function botSentence(spec) { return spec ? tOr(`bot.desc.${spec}`, '') : ''; }

/** The default names a guest gets in any of the three languages: shown as this page's word. */
const GUEST_WORDS = new Set(['Guest', '손님', 'ゲスト', 'guest']);

/**
 * A bot's display name, the one every page uses (table, waiting room, scores, replays, leaderboard, player pages):
 * "Bot 2 (Intermediate)" for the bot on seat `seat` (0-based: the number shown is seat + 1, as "Seat 2"), or
 * "Bot (Intermediate)" for a bot level as a player (`seat` null: the leaderboard, a bot level's own page).
 * `spec` is the bot's spec as the server gives it (`greedy:medium`, `ismcts:hard`, a bot account's name), `level`
 * the server's level word when it gives one (GET /api/games, TABLE seats).
 */
export function botName(spec, { seat = null, level = null } = {}) {
  const known = level || LEVEL_OF[spec] || LEVEL_OF[String(spec || '').split(':')[0]];
  const word = known ? botLabel(spec, level) : null;
  if (seat === null || seat === undefined) return word ? t('seat.bot_level', { level: word }) : t('seat.bot');
  return word ? t('seat.bot_n', { n: seat + 1, level: word }) : `${t('seat.bot')} ${seat + 1}`;
}

/** A seat's display name: a person's name, "Bot 2 (Beginner)" (botName), or "open seat". */
export function seatName(seat) {
  if (!seat) return '';
  if (seat.kind === 'open') return t('seat.open');
  if (seat.kind === 'bot') {
    if (!seat.name || /^bot-\d+$/.test(seat.name)) return botName(seat.bot, { seat: seat.seat, level: seat.level });
    return seat.name;
  }
  if (!seat.name) return t('seat.player', { n: seat.seat + 1 });
  return GUEST_WORDS.has(seat.name) ? t('lobby.default_name') : seat.name;
}

/** The display names of a `cardtable/1` record's seats (`[{name, bot}]`, a replay's), in seat order: bots as
 * botName, people by name. */
export function recordSeatNames(seats) {
  return (seats || []).map((s, k) => seatName({ seat: k, kind: s.bot ? 'bot' : 'person', name: s.name, bot: s.bot }));
}

/** The player-page name of a seat tied to an account (`account` in TABLE: a person's account, or at a finished
 * table a bot level's player), else null: guests, open seats and deleted players have no page. */
export function seatAccount(seat) { return seat && seat.account ? String(seat.account) : null; }

/** The address of a player's page. */
export function playerHref(name) { return `/?player=${encodeURIComponent(name)}`; }

/**
 * A name as text isolated from what stands around it (`<bdi>`): a right-to-left name, or one that ends in digits,
 * never reorders the rest of its line.
 */
export function bdi(text) { return h('bdi', { text }); }

/**
 * A name as an element: a link to the player's page when `account` is set, else plain text; isolated (`<bdi>`)
 * either way.
 * `newTab`: open the page in a new tab (at a table, so a click does not leave the game).
 */
export function nameEl(text, account, { newTab = false } = {}) {
  if (!account) return h('bdi.pname', { text });
  const href = playerHref(account);
  return h('a.pname.playerlink', newTab
    ? { href, target: '_blank', rel: 'noopener', dataset: { player: account } }
    : { href, dataset: { player: account },
      onclick: (e) => { if (e.button === 0 && !e.ctrlKey && !e.metaKey && !e.shiftKey) { e.preventDefault(); navigate(href); } } },
    bdi(text));
}

/** A seat's display name as an element (see nameEl). */
export function seatNameEl(seat, opts = {}) { return nameEl(seatName(seat), seatAccount(seat), opts); }

/** Display names of a TABLE's seats, in seat order; the array's `accounts` holds each seat's seatAccount. */
export function seatNames(table) {
  const seats = table?.seats || [];
  const names = seats.map(seatName);
  names.accounts = seats.map(seatAccount);
  return names;
}

/** Seat `s` of a seatNames() array as an element, linked when the seat has an account (opened in a new tab). */
export function nameOf(names, s, fallback = '') {
  return nameEl(names?.[s] ?? fallback, names?.accounts?.[s] ?? null, { newTab: true });
}

/** Elements joined by `sep` (text), for a list of names in a sentence. */
export function joinEls(els, sep = ', ') { return els.flatMap((el, i) => (i ? [sep, el] : [el])); }

/** Catalogue text `key` with its `{var}` replaced by the element(s) `els` (a sentence that holds links). */
export function tWith(key, name, els, vars = {}) {
  const mark = '\u0001';
  const [before, after = ''] = t(key, { ...vars, [name]: mark }).split(mark);
  return [before, els, after];
}
