// The score strip both games' tables keep on screen: the goal (Nerts: the target score; Enemy Anemone: the rounds
// left), then every seat's name and total, in seat order, your own seat marked. Names shrink (ellipsis) so that
// every seat stays visible at every window size; the full name and total are in each entry's title.
import { h } from './util.js';
import { t } from './i18n.js';
import { bdi } from './names.js';

/**
 * The strip for `names` (a seatNames() array, one per seat) and `totals` (points per seat; missing ones read 0).
 * `goal` is the first entry's text (or null), `me` your seat (or null). Returns a `div.scorestrip` element.
 */
export function scoreStrip(names, totals, { goal = null, me = null } = {}) {
  const items = names.length + (goal ? 1 : 0);
  // a narrow window lays the strip out as a grid of at most two rows: the first column as wide as the goal, then
  // --strip-cols shared ones (css)
  const cols = items > 5 ? Math.ceil(items / 2) : items;
  return h('div.scorestrip', { role: 'group', 'aria-label': t('table.strip_label'), style: { '--strip-cols': String(Math.max(1, cols - 1)) } },
    goal ? h('span.stripgoal', { text: goal }) : null,
    names.map((name, s) => {
      const total = (totals || [])[s] ?? 0;
      return h('span.stripseat' + (s === me ? '.me' : ''), { dataset: { seat: String(s) }, title: t('table.strip_seat', { name, n: total }) },
        h('span.sname', {}, bdi(name)), h('b.sscore', { text: String(total) }));
    }));
}
