// Scores shared by both games' tables: seat names, the per-hand score table and the end-of-hand dialog.
import { h } from './util.js';
import { t } from './i18n.js';
import { navigate } from './nav.js';
import { nameOf, joinEls, tWith } from './names.js';

export { seatNames } from './names.js';

/** Scores per hand and totals, one column per seat. */
export function scoreTable(names, results, totals, highlight = -1) {
  return h('table.scores', {},
    h('thead', {}, h('tr', {}, h('th', { text: t('table.hand') }), names.map((n, i) => h('th', {}, nameOf(names, i))))),
    h('tbody', {}, results.map((r, i) => h('tr' + (i === highlight ? '.hl' : ''), {}, h('td', { text: String(i + 1) }),
      (r.scores || []).map((s) => h('td', { text: String(s) }))))),
    h('tfoot', {}, h('tr', {}, h('th', { text: t('table.total') }), (totals || []).map((s) => h('th', { text: String(s) })))));
}

/**
 * The end-of-hand (or end-of-match) dialog for a `hand_over` message.
 * `hist` is every finished hand's result including this one; `note` an optional line under the title or table;
 * `onClose` is called when the player dismisses it. Returns the overlay element (not yet attached).
 */
export function handOverDialog(msg, names, hist, { note = null, noteBelow = false, onClose }) {
  const winners = msg.winners;
  const noteEl = note ? h('p.muted', { text: note }) : null;
  return h('div.overlay', { role: 'dialog', 'aria-modal': 'true' },
    h('div.dialog.handover', {},
      h('h2', { text: winners ? t('table.match_over') : t('table.hand_over', { n: msg.hand + 1 }) }),
      noteBelow ? null : noteEl,
      winners ? h('p.winner', {}, tWith('table.winner', 'names', joinEls(winners.map((s) => nameOf(names, s))))) : null,
      scoreTable(names, hist, msg.totals, msg.hand),
      noteBelow ? noteEl : null,
      h('div.row', {},
        winners ? h('button.primary', { type: 'button', text: t('nav.lobby'), onclick: () => navigate('/') }) : null,
        h('button' + (winners ? '' : '.primary') + '#continue', { type: 'button', text: winners ? t('common.close') : t('table.continue'), onclick: onClose }))));
}
