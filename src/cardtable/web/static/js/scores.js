// Scores shared by both games' tables: seat names, the per-hand score table and the end-of-hand dialog, with its
// score breakdown per seat and the ready step before the next hand (docs/protocol.md, "Between hands").
import { h, fill } from './util.js';
import { t } from './i18n.js';
import { navigate } from './nav.js';
import { nameOf, joinEls, tWith } from './names.js';

export { seatNames } from './names.js';

/**
 * Hands per deal with rotated deals (the `deals: "rotated"` option: each deal played once from every seat in turn,
 * one hand per seat, per team with Nerts partnerships), or 0 when every hand is dealt fresh.
 */
export function dealCycle(game, options, players) {
  if (options?.deals !== 'rotated') return 0;
  const seats = options.players ?? players;
  return game === 'nerts' && options.partnerships ? Math.floor(seats / 2) : seats;
}

/**
 * Scores per hand and totals, one column per seat. With rotated deals (`cycle`, from dealCycle, or a `deal` on the
 * results, as the replay route gives them) the hands are grouped by deal: a heading row per deal and, once a deal
 * has more than one hand, what each seat made of it in all.
 */
export function scoreTable(names, results, totals, highlight = -1, cycle = 0) {
  const dealOf = (r, i) => r.deal ?? (cycle ? Math.floor(i / cycle) : null);
  const row = (r, i) => h('tr' + (i === highlight ? '.hl' : ''), {}, h('td', { text: String(i + 1) }),
    (r.scores || []).map((s) => h('td', { text: String(s) })));
  const head = h('thead', {}, h('tr', {}, h('th', { text: t('table.hand') }), names.map((n, i) => h('th', {}, nameOf(names, i)))));
  const foot = h('tfoot', {}, h('tr', {}, h('th', { text: t('table.total') }), (totals || []).map((s) => h('th', { text: String(s) }))));
  if (!results.some((r, i) => dealOf(r, i) !== null)) return h('table.scores', {}, head, h('tbody', {}, results.map(row)), foot);
  const groups = [];
  results.forEach((r, i) => {
    const deal = dealOf(r, i) ?? 0;
    if (!groups.length || groups[groups.length - 1].deal !== deal) groups.push({ deal, rows: [] });
    groups[groups.length - 1].rows.push([r, i]);
  });
  return h('table.scores.bydeal', {}, head, groups.map((g) => h('tbody.deal', { dataset: { deal: String(g.deal) } },
    h('tr.dealhead', {}, h('th', { colspan: String(names.length + 1), scope: 'rowgroup', text: t('table.deal_n', { n: g.deal + 1 }) })),
    g.rows.map(([r, i]) => row(r, i)),
    g.rows.length > 1 ? h('tr.dealsum', {}, h('th', { scope: 'row', text: t('table.deal_total', { n: g.deal + 1 }) }),
      names.map((_, s) => h('td', { text: String(g.rows.reduce((n, [r]) => n + ((r.scores || [])[s] ?? 0), 0)) }))) : null)), foot);
}

/** A signed number as players write it: "+3", "−6" (a true minus sign), "0". */
function signed(n) { return n > 0 ? `+${n}` : n < 0 ? `\u2212${-n}` : '0'; }

/**
 * How each seat's Nerts hand score is made, from the hand's last view (over: every layout and foundation public):
 * per seat `{left, penalty, found, bonus}`: cards left in its Nerts pile, the points lost per card, its pack's
 * cards on the foundations and the caller's bonus (rules: "Scoring"). Partners share their layout's figures.
 */
export function nertsBreakdown(view, options, players) {
  const penalty = options?.nerts_penalty ?? 2;
  const bonus = options?.nerts_bonus ?? 0;
  const callerLayout = view?.called === null || view?.called === undefined ? null
    : (view.layouts || []).find((l) => (l.seats || []).includes(view.called));
  return Array.from({ length: players }, (_, s) => {
    const layout = (view?.layouts || []).find((l) => (l.seats || []).includes(s));
    if (!layout) return null;
    const found = (view.foundations || []).reduce((n, f) => n + (f.cards || []).filter((c) => c.pack === layout.pack).length, 0);
    return { left: layout.nerts?.count ?? 0, penalty, found, bonus: view.ended === 'nerts' && callerLayout === layout ? bonus : 0 };
  });
}

/** The dialog's table: one row per seat with how its hand score was made (Nerts), the hand and the running total. */
function breakdownTable(msg, names, parts, mySeat) {
  const nerts = Array.isArray(parts);
  const withBonus = nerts && parts.some((p) => p && p.bonus);
  const penalty = nerts ? (parts.find(Boolean)?.penalty ?? 2) : 0;
  const head = [t('table.player')];
  if (nerts) head.push(t('table.cards_left_times', { penalty: `\u2212${penalty}` }), t('table.on_foundations'));
  if (withBonus) head.push(t('table.nerts_bonus'));
  head.push(t('table.this_hand'), t('table.total'));
  return h('table.breakdown', {},
    h('thead', {}, h('tr', {}, head.map((x) => h('th', { scope: 'col', text: x })))),
    h('tbody', {}, (msg.scores || []).map((score, s) => {
      const p = nerts ? parts[s] : null;
      const cells = [];
      if (nerts) {
        cells.push(h('td.left', { text: p ? `${p.left} \u00d7 \u2212${p.penalty} = ${signed(-p.left * p.penalty)}` : '' }),
          h('td.found', { text: p ? signed(p.found) : '' }));
      }
      if (withBonus) cells.push(h('td.bonus', { text: p && p.bonus ? signed(p.bonus) : '' }));
      const total = (msg.totals || [])[s];
      cells.push(h('td.handpts', { text: signed(score) }), h('td.totalpts', { text: total === undefined ? '' : signed(total).replace('+', '') }));
      return h('tr' + (s === mySeat ? '.me' : ''), { dataset: { seat: String(s) } }, h('th', { scope: 'row' }, nameOf(names, s)), cells);
    })));
}

/** What the match plays to: Nerts' target score, or Enemy Anemone's rounds left after hand `hand` (0-based). */
function targetLine(game, options, hand) {
  if (game === 'nerts' && options?.target_score) return t('table.target_score', { n: options.target_score });
  if (game === 'anemone' && options?.rounds) {
    const left = Math.max(0, options.rounds - hand - 1);
    return left ? t('table.rounds_left', { n: left, rounds: options.rounds }) : t('table.last_round_done');
  }
  return null;
}

/** The game-over dialog's Play again button: runs `onAgain` (async) once at a time. */
function againButton(onAgain) {
  const button = h('button.primary#again', { type: 'button', text: t('table.play_again'), onclick: async () => {
    button.disabled = true;
    try { await onAgain(); } finally { button.disabled = false; }
  } });
  return button;
}

/**
 * The end-of-hand (or end-of-match) dialog for a `hand_over` message.
 * `hist` is every finished hand's result including this one; `note` an optional line under the title or table;
 * `game`, `options` (the table's) and `parts` (Nerts: nertsBreakdown) make the breakdown and the target line;
 * `seat` is this connection's seat (null: watching). Between hands, `onReady` is called when the player presses
 * Ready (the dialog then waits for the others and closes when the next hand starts); at the end of the match,
 * `onClose` when the player dismisses it, and `onAgain` (a seat's, async) when they press Play again. Returns the overlay element (not yet attached), with
 * `overlay.showReady(msg)` to show a `next_hand` message and `overlay.hand`, the hand it is about.
 */
export function handOverDialog(msg, names, hist, { note = null, noteBelow = false, onClose, onReady = null,
  game = null, options = null, parts = null, seat = null, onAgain = null }) {
  const winners = msg.winners;
  const noteEl = note ? h('p.muted', { text: note }) : null;
  const target = targetLine(game, options, msg.hand);
  const readyBox = h('div.readystep', { 'aria-live': 'polite' });
  let pressed = false;
  let timer = null;
  let last = null;
  const playing = !winners && seat !== null && seat !== undefined && onReady;
  const button = winners || !playing
    ? h('button' + (winners ? '' : '.primary') + '#continue', { type: 'button', text: t('common.close'), onclick: () => { clearInterval(timer); onClose(); } })
    : h('button.primary#continue', { type: 'button', text: t('table.ready'), onclick: () => press() });
  const history = h('details.allhands', { open: Boolean(winners) },
    h('summary', { text: t('table.all_hands') }), scoreTable(names, hist, msg.totals, msg.hand, dealCycle(game, options, names.length)));
  const overlay = h('div.overlay', { role: 'dialog', 'aria-modal': 'true', 'aria-labelledby': 'handover-title' },
    h('div.dialog.handover', {},
      h('h2#handover-title', { text: winners ? t('table.match_over') : t('table.hand_over', { n: msg.hand + 1 }) }),
      noteBelow ? null : noteEl,
      winners ? h('p.winner', {}, tWith('table.winner', 'names', joinEls(winners.map((s) => nameOf(names, s))))) : null,
      breakdownTable(msg, names, parts, seat),
      noteBelow ? noteEl : null,
      target ? h('p.target', { text: target }) : null,
      history,
      winners ? null : readyBox,
      h('div.row', {},
        winners && onAgain ? againButton(onAgain) : null,
        winners ? h('button' + (onAgain ? '' : '.primary'), { type: 'button', text: t('nav.lobby'), onclick: () => navigate('/') }) : null,
        button)));

  function press() {
    if (pressed) return;
    pressed = true;
    onReady();
    button.disabled = true;
    button.textContent = t('table.ready_done');
    if (last) draw();
  }

  function draw() {
    const msgNow = last;
    const left = Math.max(0, Math.ceil((msgNow.at - Date.now()) / 1000));
    const waiting = (msgNow.waiting || []).filter((s) => !(pressed && s === seat));
    const rows = [h('p.countdown', { text: t('table.next_hand_in', { s: left }) })];
    if (waiting.length) {
      rows.push(h('p.waitingfor', {}, tWith('table.waiting_for', 'names', joinEls(waiting.map((s) => nameOf(names, s))))));
    }
    const ready = new Set(msgNow.ready || []);
    if (pressed && seat !== null) ready.add(seat);
    rows.push(h('ul.readyseats', {}, names.map((_, s) => {
      const state = ready.has(s) ? 'ready' : (msgNow.waiting || []).includes(s) ? 'waiting' : 'away';
      return h(`li.${state}`, { dataset: { seat: String(s) } },
        h('span.mark', { 'aria-hidden': 'true', text: state === 'ready' ? '\u2713' : state === 'waiting' ? '\u2026' : '\u2013' }),
        nameOf(names, s), h('span.sr', { text: ` (${t(`table.seat_${state}`)})` }));
    })));
    fill(readyBox, rows);
  }

  overlay.hand = msg.hand;
  overlay.showReady = (next) => {
    if (winners || next.hand !== msg.hand + 1) return;
    last = { ...next, at: Date.now() + (next.starts_in_ms ?? 0) };
    if (seat !== null && (next.ready || []).includes(seat) && !pressed) {
      pressed = true;
      if (playing) { button.disabled = true; button.textContent = t('table.ready_done'); }
    }
    draw();
    clearInterval(timer);
    timer = setInterval(() => { if (!overlay.isConnected) { clearInterval(timer); return; } draw(); }, 250);
  };
  overlay.stop = () => clearInterval(timer);
  requestAnimationFrame(() => { if (overlay.isConnected) button.focus(); });
  return overlay;
}
