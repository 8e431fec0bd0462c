// The stand-in bot on a seat: a person who left, or stayed away past the table's grace, is played by a bot
// (TABLE seats' `standin`, docs/protocol.md); both games say so on the seat, for the other players and spectators.
import { h } from './util.js';
import { t } from './i18n.js';
import { nameOf, tWith } from './names.js';

/**
 * Per seat of a TABLE (seat order): `null`, or `{ back }` when the stand-in bot plays that person's seat; `back`
 * is true while the person may still return to it (the table is in play: their token keeps the seat), false once
 * the match is over.
 */
export function standins(table) {
  const playing = table?.status === 'playing';
  return (table?.seats || []).map((s) => (s && s.kind === 'person' && s.standin ? { back: playing } : null));
}

/**
 * "Bot playing for 지우, until they return" (`back`), or "Bot played for 지우", as an element of class `standin`
 * whose name is linked as `nameOf` links it; `title` holds the whole sentence (a short seat header clips it).
 */
export function standinEl(names, s, { back = true } = {}) {
  const key = back ? 'seat.standin_until' : 'seat.standin_played';
  const name = names?.[s] ?? t('seat.player', { n: s + 1 });
  return h('span.standin', { title: t(key, { name }), dataset: { standin: String(s) } }, tWith(key, 'name', nameOf(names, s, name)));
}
