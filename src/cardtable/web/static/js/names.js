// How games, bots and seats are named on every page: bot levels in words in the page's language (never a spec
// such as "ismcts:hard" or a name such as "bot-1"), and one word for guests whatever language named them.
import { t, tOr } from './i18n.js';

export function gameTitle(game) { return tOr(`game.${game}`, game); }

/** The level word of each bot spec, as GET /api/games gives it (`level`), for seats that carry only the spec. */
const LEVEL_OF = {
  'greedy:easy': 'beginner', 'greedy:medium': 'intermediate', 'greedy:hard': 'strong', greedy: 'instant',
  random: 'random', heuristic: 'simple', 'ismcts:easy': 'beginner', 'ismcts:medium': 'intermediate', 'ismcts:hard': 'strong',
};

/** A bot's level in words ("Beginner", "Strong"): the server's `level` word when given, else from its spec. */
export function botLabel(spec, level = null) {
  const lv = level || LEVEL_OF[spec] || LEVEL_OF[String(spec || '').split(':')[0]] || null;
  if (lv) return tOr(`bot.level.${lv}`, lv);
  return t('seat.bot');
}

/** The default names a guest gets in any of the three languages: shown as this page's word. */
const GUEST_WORDS = new Set(['Guest', '손님', 'ゲスト', 'guest']);

/** A seat's display name: a person's name, "Bot 2 (Beginner)", or "open seat". */
export function seatName(seat) {
  if (!seat) return '';
  if (seat.kind === 'open') return t('seat.open');
  if (seat.kind === 'bot') {
    const m = /^bot-(\d+)$/.exec(seat.name || '');
    const n = m ? Number(m[1]) : seat.seat + 1;
    if (!seat.name || m) return t('seat.bot_n', { n, level: botLabel(seat.bot, seat.level) });
    return seat.name;
  }
  if (!seat.name) return t('seat.player', { n: seat.seat + 1 });
  return GUEST_WORDS.has(seat.name) ? t('lobby.default_name') : seat.name;
}

/** Display names of a TABLE's seats, in seat order. */
export function seatNames(table) { return (table?.seats || []).map(seatName); }
