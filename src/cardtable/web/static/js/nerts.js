// The Nerts table: your layout large, the foundations in the middle, the other layouts small and live.
// Cards move by drag and drop (pointer events: mouse, pen and touch); a double-click (mouse) or a tap (touch)
// sends a card to a foundation when `legal` has one; keys: space flip, 1-6 work pile to foundation,
// n Nerts pile, w waste, s stuck, c cycle. Moves show at once; a rejected one slides back with its reason.
//
// Board places (CSS grid areas on .nboard, see css/app.css "Nerts board"): `others` (the other seats, compact),
// `found` (the foundations, a bounded area whose cards shrink as it fills, with room kept for every ace at 36 px)
// and `mine` (your layout). fit() sizes them once per hand (and on a window resize) from the window, the seat count
// and the work pile count, never from the cards in play, so your layout keeps its place and size for the whole hand.
import { h, fill, toast, flipBefore, flipAfter, sameAction } from './util.js';
import { t, wordRefusal, cardName, pileName } from './i18n.js';
import { standardCard, emptySlot, parseCard, SUIT_SYMBOL } from './cards.js';
import { seatNames, scoreTable, handOverDialog, nertsBreakdown, dealCycle } from './scores.js';
import { hintsFor, hintBubble, touchScreen } from './hints.js';
import { api } from './api.js';
import { navigate } from './nav.js';
import { nameOf, joinEls } from './names.js';
import { Roving, holdFocus, navItems } from './keys.js';
import { announce, clearAnnouncements } from './announce.js';
import { scoreStrip } from './strip.js';
import { cue, soundToggle } from './sound.js';
import { standins, standinEl } from './standin.js';

const clone = (x) => JSON.parse(JSON.stringify(x));

/** An event that restarts the server's stall guard: a card to a foundation or off a Nerts pile, or a rotate. */
function isProgress(e) {
  if (e.type === 'rotated') return true;
  if (e.type !== 'moved' && e.type !== 'slid_under') return false;
  return e.from === 'nerts' || String(e.to).startsWith('foundation:');
}

/** A layout's seat names as elements (linked to player pages where the seat has an account), joined by " & ";
 * a seat the stand-in bot plays (`names.standins`, standin.js) reads "Bot playing for 지우, until they return". */
function layoutNameEls(layout, names) {
  return joinEls((layout.seats || []).map((s) => (names.standins?.[s] ? standinEl(names, s, names.standins[s])
    : nameOf(names, s, t('seat.player', { n: s + 1 })))), ' & ');
}

function layoutName(layout, names) {
  return (layout.seats || []).map((s) => (names.standins?.[s]
    ? t(names.standins[s].back ? 'seat.standin_until' : 'seat.standin_played', { name: names[s] ?? t('seat.player', { n: s + 1 }) })
    : names[s] ?? t('seat.player', { n: s + 1 }))).join(' & ');
}

function countBadge(n, label) { return h('span.count', { title: label, 'aria-hidden': 'true', text: String(n) }); }

/** A pile's accessible name: "work pile 2: 3 cards, top 6 of spades". */
function pileLabel(kind, number, count, top) {
  const name = pileName({ kind, number });
  return top ? t('nerts.pile_label_top', { pile: name, n: count, card: cardName(top, 'nerts') })
    : t('nerts.pile_label', { pile: name, n: count });
}

/** A small face for another seat's top card: rank and suit only. */
function miniCard(code, pack) {
  if (!code) return h('span.mcard.empty', { 'aria-hidden': 'true' });
  const c = parseCard(code);
  const red = c.suit === 'H' || c.suit === 'D';
  return h('span.mcard' + (red ? '.red' : '') + (c.joker ? '.joker' : ''), {
    dataset: { card: code }, style: { '--pack-hue': (Number(pack) * 67 + 210) % 360 },
  }, c.joker ? '★' : h('span.mr', { text: c.rank }), c.joker ? null : h('span.ms', { text: SUIT_SYMBOL[c.suit] }));
}

/** Another seat's layout in its compact form: name, Nerts count, and the top cards one can race for. */
function compactLayout(layout, names) {
  const pack = layout.pack;
  const nerts = layout.nerts || { count: 0, top: null };
  const waste = layout.waste || { count: 0, top: null };
  const tops = (layout.work || []).map((p) => p[p.length - 1] || null);
  const label = t('nerts.other_label', { name: layoutName(layout, names), n: nerts.count });
  return h('section.layout.other.compact' + (layout.stuck ? '.stuck' : ''), {
    dataset: { pack: String(pack), seats: (layout.seats || []).join(',') }, style: { '--pack-hue': (Number(pack) * 67 + 210) % 360 },
    'aria-label': label,
  },
  h('header.lhead', {}, h('span.backswatch'), h('strong.lname', {}, layoutNameEls(layout, names)),
    layout.stuck ? h('span.badge.stuckbadge', { text: t('nerts.stuck_badge') }) : null),
  h('div.mrow', {},
    h('span.mpile.mnerts', { dataset: { pile: 'nerts' }, title: t('nerts.nerts_count', { n: nerts.count }) },
      miniCard(nerts.top, pack), h('span.count', { text: String(nerts.count) })),
    h('span.mpile.mwaste', { dataset: { pile: 'waste' }, title: t('nerts.waste') }, miniCard(waste.top, pack)),
    h('span.msep'),
    tops.map((c, i) => h('span.mpile', { dataset: { pile: `work:${i}` } }, miniCard(c, pack)))));
}

/** One layout (a pack's piles). mine: your own (large, fixed places); otherwise a small full layout (watchers, replay). */
function renderLayout(layout, names, { mine = false, seat = null } = {}) {
  const pack = layout.pack;
  const key = (c) => `${pack}:${c}`;
  const nerts = layout.nerts || { count: 0, top: null };
  const waste = layout.waste || { count: 0, top: null };
  const stock = layout.stock || { count: 0 };
  const pile = (name, extra, label, ...kids) => h(`div.pile.${extra}`, {
    dataset: { pile: name, pack: String(pack) }, role: 'group', 'aria-label': label,
  }, kids);

  const nertsEl = pile('nerts', 'nertspile', pileLabel('nerts', null, nerts.count, nerts.top),
    nerts.count > 0 ? standardCard(nerts.top, { key: nerts.top ? key(nerts.top) : undefined, faceDown: !nerts.top, pack }) : emptySlot(t('nerts.empty')),
    countBadge(nerts.count, t('nerts.nerts_count', { n: nerts.count })),
    h('span.pilelabel', { text: t('nerts.nerts_pile') }));
  const work = (layout.work || []).map((cards, i) => pile(`work:${i}`, 'work', pileLabel('work', i + 1, cards.length, cards[cards.length - 1]),
    cards.length ? cards.map((c) => standardCard(c, { key: key(c), pack })) : emptySlot(),
    mine ? h('span.keyhint', { text: String(i + 1), 'aria-hidden': 'true' }) : null));
  const stockEl = pile('stock', 'stock', pileLabel('stock', null, stock.count, null),
    stock.count > 0 ? standardCard(null, { faceDown: true, pack }) : emptySlot('↻'),
    countBadge(stock.count, t('nerts.stock_count', { n: stock.count })),
    h('span.pilelabel', { text: t('nerts.stock') }));
  const wasteEl = pile('waste', 'waste', pileLabel('waste', null, waste.count, waste.top),
    waste.count > 0 ? standardCard(waste.top, { key: waste.top ? key(waste.top) : undefined, faceDown: !waste.top, pack }) : emptySlot(),
    countBadge(waste.count, t('nerts.waste_count', { n: waste.count })),
    h('span.pilelabel', { text: t('nerts.waste') }));
  const isMe = seat !== null && (layout.seats || []).includes(seat);
  return h('section.layout' + (mine ? '.mine' : '.other') + (layout.stuck ? '.stuck' : ''),
    { dataset: { pack: String(pack), seats: (layout.seats || []).join(',') }, style: { '--pack-hue': (Number(pack) * 67 + 210) % 360 },
      'aria-label': mine ? t('nerts.your_layout') : layoutName(layout, names) },
    h('header.lhead', {}, h('span.backswatch'), h('strong', {}, mine ? t('nerts.your_layout') : layoutNameEls(layout, names)),
      isMe && !mine ? h('em', { text: ` (${t('table.you')})` }) : null,
      layout.stuck ? h('span.badge.stuckbadge', { text: t('nerts.stuck_badge') }) : null),
    h('div.lbody', {}, h('div.side', {}, nertsEl), h('div.workrow', {}, work), h('div.side.sw', {}, stockEl, wasteEl)));
}

function renderFoundations(foundations, { live = false } = {}) {
  const active = (foundations || []).filter((f) => !f.finished);
  const done = (foundations || []).filter((f) => f.finished);
  const fEl = (f) => {
    const top = f.cards[f.cards.length - 1];
    const label = top ? t('nerts.foundation_label', { n: f.cards.length, card: cardName(top.as || top.card, 'nerts') }) : t('nerts.foundations');
    return h('div.pile.foundation' + (f.finished ? '.finished' : ''), { dataset: { pile: `foundation:${f.id}`, suit: f.suit || '' }, role: 'group', 'aria-label': label },
      top ? standardCard(top.card, { key: `${top.pack}:${top.card}`, pack: top.pack, as: top.as }) : emptySlot(),
      h('span.count', { text: String(f.cards.length), 'aria-hidden': 'true' }));
  };
  return h('section.foundations', { dataset: { drop: 'foundations' }, 'aria-label': t('nerts.foundations') },
    h('div.frow', {}, active.map(fEl),
      live ? h('div.pile.foundation.newfound', { dataset: { pile: 'foundation:new' }, role: 'group', 'aria-label': t('pile.new_foundation') }, emptySlot(t('nerts.new_foundation'))) : null,
      !active.length && !live ? h('span.muted', { text: t('nerts.no_foundations') }) : null),
    done.length ? h('div.finishedrow', { title: t('nerts.finished_foundations') },
      h('span', { text: t('nerts.finished_n', { n: done.length }) }),
      done.map((f) => h('span.fsuit', { text: SUIT_SYMBOL[f.suit] || '★', dataset: { suit: f.suit || '' } }))) : null);
}

/** The whole board for a view: used live (with handlers added by mountTable) and by the replay viewer. */
export function renderNertsBoard(view, names, { seat = null, live = false } = {}) {
  const layouts = view.layouts || [];
  const mine = seat === null ? null : layouts.find((l) => (l.seats || []).includes(seat));
  const others = layouts.filter((l) => l !== mine);
  return h('div.nboard' + (mine ? '.seated' : '.spectating'), {},
    h('div.others', {}, others.map((l) => (mine ? compactLayout(l, names) : renderLayout(l, names, { seat })))),
    renderFoundations(view.foundations, { live: live && !!mine }),
    mine ? renderLayout(mine, names, { mine: true, seat }) : null);
}

/** The smallest foundation card width (pixels) the board plans for: rank and suit stay legible on a phone. */
export const FOUNDATION_MIN_CW = 36;
/** Below this width (pixels) foundation cards take their compact face (shorter, rank and suit on one line). */
export const FOUNDATION_COMPACT_BELOW = 60;
const FOUND_GAP = 6;

/** A foundation card's height for its width (pixels): compact faces are shorter. */
export function foundationCardHeight(cw) { return Math.round(cw * (cw < FOUNDATION_COMPACT_BELOW ? 1.15 : 1.4)); }

/** The height (pixels) the foundations' area needs to hold `slots` piles at the smallest width in a `w` wide area. */
function foundationsNeed(slots, w) {
  const cols = Math.max(1, Math.floor((w - 12 + FOUND_GAP) / (FOUNDATION_MIN_CW + FOUND_GAP)));
  const rows = Math.ceil(slots / cols);
  return rows * (foundationCardHeight(FOUNDATION_MIN_CW) + FOUND_GAP) - FOUND_GAP + 12 + 6;
}

/**
 * Sizes for a seated board (pixels), from the board box's inner size, the other layouts' count, the work piles'
 * count and the packs' count (every ace out makes 4 foundations per pack): {portrait, cw (your card width),
 * mw (the others' card width), othersW, othersH, mineH, workH, ocols (columns of other layouts), oinline (the
 * others' names beside their cards rather than above), nohead (your layout without its title line)}.
 * The foundations' area keeps room for every pack's four foundations at FOUNDATION_MIN_CW; the other seats and
 * your layout give way first (yours down to 30 px cards).
 * Pure: the same window and table give the same sizes, whatever the cards.
 */
export function boardSizes(W, H, others, workPiles, packs = others + 1) {
  const gap = 8;
  const portrait = W < 640 || W < H;
  const wp = Math.max(1, workPiles);
  const slots = 4 * Math.max(1, packs) + 1;
  const label = 16, pad = 14;
  let head = 20;
  if (portrait) {
    const cols = others <= 1 ? 1 : 2;
    const colW = (W - gap * (cols - 1)) / cols;
    const mw = Math.max(16, Math.min(32, (colW - 22) / (wp + 2) - 4));
    const rows = others ? Math.ceil(others / cols) : 0;
    const othersH = rows ? rows * (mw * 1.4 + 26) + (rows - 1) * 4 : 0;
    const cwW = (W - pad - 8 * (wp - 1)) / wp;
    const foundMin = Math.max(110, H * 0.14, foundationsNeed(slots, W));
    const cwH = (H - othersH - foundMin - 2 * gap - head - label - pad - 8) / (1.4 * 2.75);
    const cw = Math.floor(Math.max(30, Math.min(cwW, cwH, 104)));
    const ch = cw * 1.4;
    const workH = Math.floor(ch * 1.75);
    const mineH = Math.ceil(head + ch + label + 8 + workH + pad);
    return { portrait, cw, mw: Math.floor(mw), othersW: W, othersH: Math.ceil(othersH), mineH, workH, ocols: cols, oinline: false, nohead: false };
  }
  // the other seats: one column, names above the cards; where that makes the cards too small (a phone held
  // sideways, many seats), names beside the cards; two columns only as a last resort. Their width is capped, so a
  // large window gives them larger cards, not a wider empty band.
  const mwCap = Math.min(72, (0.24 * W - 20) / (wp + 2) - 3);
  const nameW = 70;
  let ocols = 1;
  let oinline = false;
  let mw = others ? ((H - 4 * (others - 1)) / others - 30) / 1.4 : 0;
  if (others > 1 && mw < 22) {
    const inl = ((H - 3 * (others - 1)) / others - 8) / 1.4;
    if (inl >= 16) { oinline = true; mw = inl; } else {
      ocols = 2;
      mw = ((H - 4 * (Math.ceil(others / 2) - 1)) / Math.ceil(others / 2) - 30) / 1.4;
    }
  }
  mw = others ? Math.floor(Math.max(16, Math.min(Math.max(22, mwCap), mw))) : 0;
  const boxW = oinline ? nameW + (wp + 2) * (mw + 3) + 3 + 14 : Math.max(130, (wp + 2) * (mw + 3) + 20);
  const othersW = others ? Math.ceil(ocols * boxW + (ocols - 1) * 4) : 0;
  const availW = W - othersW - (others ? gap : 0);
  const cwW = (availW - pad - 8 * (wp - 1) - 2 * 22 - 10 - 8) / (wp + 3);
  const foundMin = Math.max(90, H * 0.26, foundationsNeed(slots, availW));
  if (H < 340) head = 6; // a short board: your layout without its title line (css: .nohead)
  const cwH = (H - foundMin - gap - head - pad) / (1.4 * 1.75);
  const cw = Math.floor(Math.max(30, Math.min(cwW, cwH, 120)));
  const ch = cw * 1.4;
  const workH = Math.floor(ch * 1.75);
  const mineH = Math.ceil(head + Math.max(workH, ch + label) + pad);
  return { portrait, cw, mw, othersW, othersH: H, mineH, workH, ocols, oinline, nohead: head < 20 };
}

/**
 * The largest foundation card width (pixels, at most max) that fits n piles into a w x h area; never below
 * FOUNDATION_MIN_CW while that fits, and 12 at the very least (a window smaller than any we support).
 */
export function foundationCardWidth(n, w, h, max) {
  for (let cw = Math.floor(max); cw > 12; cw -= 1) {
    const cols = Math.floor((w + FOUND_GAP) / (cw + FOUND_GAP));
    const rows = Math.floor((h + FOUND_GAP) / (foundationCardHeight(cw) + FOUND_GAP));
    if (cols * rows >= n) return cw;
  }
  return 12;
}

/** Apply a move or under to a copy of view, as far as this seat can see it; null when it cannot tell. */
function applyLocal(view, seat, action) {
  const v = clone(view);
  const lay = v.layouts.find((l) => (l.seats || []).includes(seat));
  if (!lay) return null;
  const take = (src, count) => {
    if (src === 'nerts') {
      if (!lay.nerts.top) return null;
      const c = lay.nerts.top; lay.nerts.count -= 1; lay.nerts.top = null; return [c];
    }
    if (src === 'waste') {
      if (!lay.waste.top) return null;
      const c = lay.waste.top; lay.waste.count -= 1; lay.waste.top = null; return [c];
    }
    const m = /^work:(\d+)$/.exec(src);
    if (!m) return null;
    const p = lay.work[Number(m[1])];
    if (!p || p.length < count) return null;
    return p.splice(p.length - count, count);
  };
  const cards = take(action.from, action.count || 1);
  if (!cards) return null;
  const to = action.to;
  const wm = /^work:(\d+)$/.exec(to);
  if (wm) {
    const p = lay.work[Number(wm[1])];
    if (!p) return null;
    if (action.type === 'under') p.unshift(...cards); else p.push(...cards);
    return v;
  }
  if (to === 'foundation:new') {
    v.foundations.push({ id: 'pending', suit: cards[0].slice(-1), cards: [{ card: cards[0], pack: lay.pack, as: action.as }], finished: false });
    return v;
  }
  const fm = /^foundation:(\d+)$/.exec(to);
  if (fm) {
    const f = v.foundations.find((x) => String(x.id) === fm[1]);
    if (!f) return null;
    f.cards.push({ card: cards[0], pack: lay.pack, as: action.as });
    return v;
  }
  return null;
}

/** The cards an action takes from this seat's layout (to know when the server has applied it). */
function movedCards(view, seat, action) {
  const lay = view.layouts.find((l) => (l.seats || []).includes(seat));
  if (!lay) return [];
  if (action.from === 'nerts') return [lay.nerts.top];
  if (action.from === 'waste') return [lay.waste.top];
  const m = /^work:(\d+)$/.exec(action.from || '');
  if (!m) return [];
  const p = lay.work[Number(m[1])] || [];
  return p.slice(p.length - (action.count || 1));
}

function stillAtSource(view, seat, action, cards) {
  const now = movedCards(view, seat, action);
  return now.length === cards.length && now.every((c, i) => c === cards[i]);
}

export function mountTable(root, ctx) {
  const { conn, seat } = ctx;
  let table = ctx.table;
  let view = null;
  let legal = [];
  let results = [];
  let totals = [];
  let handNo = 0;
  let pending = []; // {seq, action, cards}
  let overlay = null;
  let stallTimer = null;
  let stallUntil = 0;
  let sizes = null;
  let hintShown = null;
  let frame = 0;
  const bar = h('div.nbar');
  const boardBox = h('div.nboardbox' + (seat === null ? '' : '.fixed'));
  const boardSlot = h('div.nboardslot');
  const warnEl = h('div.stallwarn', { role: 'alert' });
  const hintEl = h('div.hintslot', { 'aria-live': 'polite' });
  const scoreBox = h('div.scoreslot');
  boardBox.append(boardSlot, warnEl);
  fill(root, h('div.nerts-table', { dataset: { seat: seat === null ? '' : String(seat) } }, bar, boardBox));
  const page = root.closest('main');
  if (seat !== null) page?.classList.add('fit');

  const has = (type) => legal.some((a) => a.type === type);
  const names = () => Object.assign(seatNames(table), { standins: standins(table) });

  function displayView() {
    let v = view;
    const keep = [];
    for (const p of pending) {
      if (!stillAtSource(view, seat, p.action, p.cards)) continue; // applied (or gone): the server view has it
      const nv = applyLocal(v, seat, p.action);
      if (nv) { v = nv; keep.push(p); }
    }
    pending = keep.filter((p) => !p.done);
    return v;
  }

  // ---- the bar: built once, its buttons updated in place (an open menu stays open) ----
  const info = h('div.hinfo');
  const btn = (id, key, title, onclick, cls = '') => h(`button${cls}#${id}`, { type: 'button', onclick, title: title ? t(title) : undefined }, t(key));
  const flipBtn = btn('flip', 'nerts.flip', 'nerts.key_space', () => act({ type: 'flip' }));
  const stuckBtn = btn('stuck', 'nerts.stuck', 'nerts.key_s', () => act({ type: 'stuck' }));
  const cycleBtn = btn('cycle', 'nerts.cycle', 'nerts.key_c', () => act({ type: 'cycle' }));
  const nertsBtn = btn('call-nerts', 'nerts.call', null, () => act({ type: 'nerts' }), '.primary.nertsbtn');
  const menu = h('details.tmenu', {},
    h('summary', { 'aria-label': t('table.menu') }, h('span', { 'aria-hidden': 'true', text: '☰' }), h('span.mlabel', { text: t('table.menu') })),
    h('div.menubox', {},
      h('h3', { text: t('nerts.keys') }),
      h('p.keyshelp', { text: t(touchScreen() ? 'nerts.touch_help' : 'nerts.keys_help') }),
      touchScreen() ? null : h('ul.keylist', {}, ['nerts.key_row_tab', 'nerts.key_row_arrows', 'nerts.key_row_enter', 'nerts.key_row_escape',
        'nerts.key_row_space', 'nerts.key_row_digits', 'nerts.key_row_stuck'].map((k) => h('li', { text: t(k) }))),
      scoreBox,
      h('div.menutoggles', {}, ctx.reactions?.menuItem, soundToggle()), // reactions.js, sound.js
      seat !== null ? h('button#leave-table', {
        type: 'button', text: t('table.leave_game'),
        onclick: async () => {
          try { await api.leave(ctx.id, ctx.token); navigate('/'); } catch (e) { toast(String(e.message || e), 'error', 4000); }
        },
      }) : null));
  const actions = h('div.actions', {}, flipBtn, stuckBtn, cycleBtn, nertsBtn);
  const stripBox = h('div.stripslot');
  fill(bar, info, stripBox, seat === null ? null : actions, ctx.reactions?.picker, menu);

  /** The score strip: the target score, then every seat's total (always on screen). */
  function drawStrip() {
    const target = table?.options?.target_score;
    fill(stripBox, scoreStrip(names(), totals, { goal: target ? t('table.strip_target', { n: target }) : null, me: seat }));
  }

  function drawBar() {
    fill(info, h('strong.gname', { text: t('game.nerts') }), h('span.handno', { text: t('table.hand_n', { n: handNo + 1 }) }),
      view?.called !== null && view?.called !== undefined ? h('span.badge.called', { text: t('nerts.called_by', { name: names()[view.called] ?? '' }) }) : null,
      seat === null ? h('span.badge', { text: t('table.spectating') }) : null);
    flipBtn.disabled = !has('flip');
    stuckBtn.disabled = !has('stuck');
    // while stuck the "top card to bottom" button takes the stuck button's place
    cycleBtn.hidden = !has('cycle');
    stuckBtn.hidden = has('cycle');
    nertsBtn.disabled = !has('nerts');
    drawStrip();
  }

  function drawScores() {
    const n = names();
    drawStrip();
    if (!results.length) { fill(scoreBox); return; }
    fill(scoreBox, h('h3', { text: t('table.scores_so_far', { totals: (totals || []).map((x, i) => `${n[i] ?? ''} ${x}`).join(' · ') }) }),
      scoreTable(n, results, totals, -1, dealCycle('nerts', table?.options, n.length)));
  }

  /** Size the board's places from the window and the table (not from the cards), once per hand and on resize. */
  function fit() {
    if (seat === null || !view) return;
    const cs = getComputedStyle(boardBox);
    const W = boardBox.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    const H = boardBox.clientHeight - parseFloat(cs.paddingTop) - parseFloat(cs.paddingBottom);
    const layouts = view.layouts || [];
    const mineL = layouts.find((l) => (l.seats || []).includes(seat));
    const wp = mineL ? (mineL.work || []).length : 4;
    sizes = boardSizes(W, H, Math.max(0, layouts.length - 1), wp, layouts.length);
    boardBox.classList.toggle('portrait', sizes.portrait);
    boardBox.classList.toggle('oinline', sizes.oinline);
    boardBox.classList.toggle('nohead', sizes.nohead);
    boardBox.classList.toggle('solo', layouts.length <= 1);
    for (const [k, v] of Object.entries({ cw: sizes.cw, mw: sizes.mw, 'others-w': sizes.othersW, 'others-h': sizes.othersH, 'mine-h': sizes.mineH, 'work-h': sizes.workH, ocols: sizes.ocols })) {
      if (k === 'ocols') { boardBox.style.setProperty('--ocols', String(v)); continue; }
      boardBox.style.setProperty(`--${k}`, `${v}px`);
    }
  }

  /** Shrink the foundation cards to fit their area, and close up long work piles inside their fixed height. */
  function fitInside() {
    if (!sizes) return;
    const area = boardBox.querySelector('.foundations');
    if (area) {
      const n = Math.max(1, area.querySelectorAll('.frow > .pile').length);
      const fin = area.querySelector('.finishedrow') ? 22 : 0;
      const max = Math.min(sizes.cw, boardBox.clientWidth >= 1500 ? 104 : 84); // larger on a large screen
      const w = area.clientWidth - 12, h = area.clientHeight - 12 - fin;
      // a hint takes room above the foundations while they are roomy; when they are not, it waits (css: .float)
      hintEl.classList.remove('float');
      const hint = area.contains(hintEl) ? hintEl.offsetHeight + 6 : 0;
      let fw = foundationCardWidth(n, w, h - hint, max);
      if (hint && fw < FOUNDATION_MIN_CW) {
        hintEl.classList.add('float');
        fw = foundationCardWidth(n, w, h, max);
      }
      area.style.setProperty('--cw', `${fw}px`);
      area.classList.toggle('compact', fw < FOUNDATION_COMPACT_BELOW);
    }
    const ch = sizes.cw * 1.4;
    for (const p of boardBox.querySelectorAll('.layout.mine .pile.work')) {
      const n = p.querySelectorAll('.card').length;
      const step = n > 1 ? Math.min(ch * 0.26, (sizes.workH - ch - 2) / (n - 1)) : ch * 0.26;
      p.style.setProperty('--step', `${step.toFixed(1)}px`);
    }
  }

  function drawHint() {
    if (seat === null || !view || view.over) { hintEl.replaceChildren(); hintShown = null; return; }
    const touch = touchScreen();
    const hint = hintsFor([
      { id: 'nerts.tofound', when: legal.some((a) => a.type === 'move' && String(a.to).startsWith('foundation')), text: t(touch ? 'hint.nerts_tap' : 'hint.nerts_dblclick') },
      { id: 'nerts.drag', when: legal.some((a) => a.type === 'move' && String(a.to).startsWith('work')), text: t('hint.nerts_drag') },
      { id: 'nerts.flip', when: has('flip') && !legal.some((a) => a.type === 'move'), text: t(touch ? 'hint.nerts_flip_touch' : 'hint.nerts_flip') },
      { id: 'nerts.keys', when: !touch && (handNo > 0 || legal.some((a) => a.type === 'move')), text: t('hint.nerts_keys') },
    ]);
    // the hint sits at the top of the foundations' area (their cards shrink to make room): never over your cards
    boardSlot.querySelector('.foundations')?.prepend(hintEl);
    if (hint?.id === hintShown) return;
    hintShown = hint?.id ?? null;
    fill(hintEl, hint ? hintBubble(hint, () => { hintShown = null; drawHint(); fitInside(); }) : null);
  }

  function render(animate = true) {
    if (!view) return;
    // the bar (and its score strip) first: the board is sized from what room the bar leaves
    if (!sizes) { drawBar(); fit(); }
    const before = animate ? flipBefore(boardSlot) : null;
    const v = displayView();
    const focused = roving.save();
    fill(boardSlot, renderNertsBoard(v, names(), { seat, live: true }));
    drawHint();
    fitInside();
    markKeys();
    roving.restore(focused);
    if (drag?.started) {
      // the board was redrawn mid-drag: keep the dragged cards hidden in their new elements
      const els = drag.keys.map((k) => boardSlot.querySelector(`.layout.mine [data-key="${CSS.escape(k)}"]`));
      if (els.every(Boolean)) { drag.els = els; for (const el of els) el.classList.add('dragging'); }
    }
    if (animate) flipAfter(boardSlot, before);
    drawBar();
  }

  const onResize = () => { if (view) { fit(); render(false); } };
  window.addEventListener('resize', onResize);

  /** Several declarations for a joker: ask which (once per drop); resolves to the chosen action or null. */
  function chooseDeclaration(options) {
    return new Promise((resolve) => {
      const close = (a) => { box.remove(); resolve(a); };
      const box = h('div.overlay.jokerpick', { role: 'dialog', 'aria-modal': 'true', 'aria-label': t('nerts.joker_as'), onclick: (e) => { if (e.target === box) close(null); } },
        h('div.dialog.small', {},
          h('h2', { text: t('nerts.joker_as') }),
          h('div.row', {}, options.map((a) => h('button.declare', { type: 'button', dataset: { as: a.as }, onclick: () => close(a) },
            standardCard(a.as, {}), h('span.sr', { text: cardName(a.as, 'nerts') })))),
          h('div.row', {}, h('button', { type: 'button', text: t('common.cancel'), onclick: () => close(null) }))));
      document.body.append(box);
      holdFocus(box, { onEscape: () => close(null), fallback: () => roving.focusGroup('mine') });
    });
  }

  /** Play one of several foundation moves that differ only in the joker's declaration. */
  async function playChoosing(options) {
    const decl = options.filter((a) => a.as);
    if (decl.length > 1) {
      const a = await chooseDeclaration(decl);
      if (a) act({ ...a });
      else render(true);
      return;
    }
    act({ ...options[0] });
  }

  async function act(action, { quiet = false } = {}) {
    if (seat === null || !view || view.over) return;
    let cards = null;
    let entry = null;
    if (action.type === 'move' || action.type === 'under') {
      cards = movedCards(view, seat, action);
      if (cards.every(Boolean) && applyLocal(displayView(), seat, action)) {
        entry = { action, cards };
        pending.push(entry);
        render(false);
      }
    }
    const res = await conn.act(action);
    if (entry) entry.done = res.ok;
    if (!res.ok) {
      if (entry) pending = pending.filter((p) => p !== entry);
      render(true); // the card slides back
      if ((res.reason || res.code) && !quiet) { toast(t('nerts.rejected', { reason: wordRefusal(res, 'nerts') }), 'error', 2600); cue('refused'); }
      boardBox.querySelector('.layout.mine')?.classList.add('shake');
      setTimeout(() => boardBox.querySelector('.layout.mine')?.classList.remove('shake'), 400);
    }
  }

  function foundationMovesFor(src, to = null) {
    return legal.filter((a) => a.type === 'move' && a.from === src && (a.count || 1) === 1
      && (to ? a.to === to : String(a.to).startsWith('foundation')));
  }

  /** The foundation moves for src that go to the same place as the first one (a joker's declarations). */
  function firstPlace(options) { return options.filter((a) => a.to === options[0].to); }

  function sendToFoundation(src) {
    const options = foundationMovesFor(src);
    if (options.length) playChoosing(firstPlace(options));
    else toast(t('nerts.no_foundation_fits'), 'info', 1600);
  }

  // ---- drag and drop (pointer events) ----
  let drag = null;
  function srcOf(cardEl) {
    const pileEl = cardEl.closest('.pile');
    if (!pileEl || !cardEl.closest('.layout.mine')) return null;
    const name = pileEl.dataset.pile;
    if (name === 'nerts' || name === 'waste') return { from: name, count: 1, els: [cardEl] };
    if (name.startsWith('work:')) {
      const cards = [...pileEl.querySelectorAll('.card[data-card]')];
      const i = cards.indexOf(cardEl);
      return { from: name, count: cards.length - i, els: cards.slice(i) };
    }
    return null;
  }

  function onDown(e) {
    if (seat === null || !view || view.over || e.button > 0) return;
    const cardEl = e.target.closest('.card[data-card]');
    if (!cardEl) return;
    const src = srcOf(cardEl);
    if (!src) return;
    e.preventDefault();
    drag = { ...src, x0: e.clientX, y0: e.clientY, id: e.pointerId, started: false, type: e.pointerType, ghost: null };
  }

  function startDrag(e) {
    drag.started = true;
    const r0 = drag.els[0].getBoundingClientRect();
    const ghost = h('div.dragghost', { style: { left: `${r0.left}px`, top: `${r0.top}px` } });
    for (const el of drag.els) {
      const r = el.getBoundingClientRect();
      const c = el.cloneNode(true);
      c.removeAttribute('data-key');
      Object.assign(c.style, { position: 'absolute', left: `${r.left - r0.left}px`, top: `${r.top - r0.top}px`, width: `${r.width}px`, height: `${r.height}px`, margin: '0' });
      ghost.append(c);
      el.classList.add('dragging');
    }
    drag.ghost = ghost;
    drag.keys = drag.els.map((el) => el.dataset.key);
    drag.gx = r0.left; drag.gy = r0.top;
    document.body.append(ghost);
    document.body.classList.add('is-dragging');
  }

  function onMove(e) {
    if (!drag || e.pointerId !== drag.id) return;
    const dx = e.clientX - drag.x0, dy = e.clientY - drag.y0;
    if (!drag.started && Math.hypot(dx, dy) > 5) startDrag(e);
    if (drag.started) {
      drag.ghost.style.transform = `translate(${dx}px, ${dy}px)`;
      const target = dropTarget(e.clientX, e.clientY);
      for (const el of boardBox.querySelectorAll('.drophover')) if (el !== target) el.classList.remove('drophover');
      target?.classList.add('drophover');
    }
  }

  function dropTarget(x, y) {
    const el = document.elementFromPoint(x, y);
    if (!el) return null;
    return el.closest('.layout.mine .pile, .foundation, .foundations, .layout.other, .nboard');
  }

  function endDrag(e, cancelled) {
    const d = drag; drag = null;
    if (!d) return;
    for (const el of boardBox.querySelectorAll('.drophover')) el.classList.remove('drophover');
    if (!d.started) {
      if (!cancelled && d.type !== 'mouse') sendToFoundation(d.from); // a tap
      return;
    }
    document.body.classList.remove('is-dragging');
    const target = cancelled ? null : dropTarget(e.clientX, e.clientY);
    const ghost = d.ghost;
    const action = target ? dropAction(d, target) : null;
    if (!action) {
      // slide back to where it came from
      const r = d.els[0].getBoundingClientRect();
      const gr = ghost.getBoundingClientRect();
      ghost.animate([{ transform: ghost.style.transform }, { transform: `translate(${r.left - d.gx}px, ${r.top - d.gy}px)` }],
        { duration: 220, easing: 'ease-out' }).finished.then(() => { ghost.remove(); for (const el of d.els) el.classList.remove('dragging'); });
      const onOwnPile = target && target.dataset.pile === d.from;
      if (target && !onOwnPile && Math.hypot(gr.left - r.left, gr.top - r.top) > 20) toast(t('nerts.cant_drop'), 'error', 1800);
      return;
    }
    if (action.choose) {
      ghost.remove();
      for (const el of d.els) el.classList.remove('dragging');
      playChoosing(action.choose);
      return;
    }
    // Land the move: remember where the ghost is so the card flies from there.
    const rects = new Map();
    const gcards = [...ghost.children];
    d.els.forEach((el, i) => { if (el.dataset.key && gcards[i]) rects.set(el.dataset.key, gcards[i].getBoundingClientRect()); });
    ghost.remove();
    act(action).then(() => {});
    // act() rendered the optimistic view without animation: animate from the drop point.
    flipAfter(boardSlot, rects, 160);
  }

  function dropAction(d, target) {
    const pile = target.dataset.pile;
    if (pile && pile.startsWith('foundation:')) {
      const exact = legal.filter((a) => a.type === 'move' && a.from === d.from && a.to === pile && (a.count || 1) === d.count);
      if (exact.length > 1) return { choose: exact };
      if (exact.length) return { ...exact[0] };
      const a = { type: 'move', from: d.from, to: pile };
      if (d.count > 1) a.count = d.count;
      return a;
    }
    if (target.classList.contains('foundations')) {
      const fits = foundationMovesFor(d.from);
      if (fits.length && d.count === 1) return { choose: firstPlace(fits) };
      const a = { type: 'move', from: d.from, to: 'foundation:new' };
      if (d.count > 1) a.count = d.count;
      return a;
    }
    if (pile && pile.startsWith('work:') && pile !== d.from) {
      const mv = legal.find((a) => a.type === 'move' && a.from === d.from && a.to === pile && (a.count || 1) === d.count);
      if (mv) return { ...mv };
      const under = legal.find((a) => a.type === 'under' && a.from === d.from && a.to === pile);
      if (under && d.count === 1) return { ...under };
      const a = { type: 'move', from: d.from, to: pile };
      if (d.from.startsWith('work:')) a.count = d.count;
      return a;
    }
    return null;
  }

  function onDbl(e) {
    const cardEl = e.target.closest('.layout.mine .card[data-card]');
    if (!cardEl) return;
    const src = srcOf(cardEl);
    if (src && src.count === 1) sendToFoundation(src.from);
  }

  function onClick(e) {
    if (seat === null) return;
    if (e.target.closest('.layout.mine .pile.stock')) act({ type: 'flip' });
  }

  function onKey(e) {
    if (seat === null || !view || e.target.closest('input, textarea, select') || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.repeat) { if (e.key === ' ') e.preventDefault(); return; } // a held key must not flood the table
    const k = e.key.toLowerCase();
    if (k === ' ') {
      if (e.target.closest('button, summary, a')) return; // Space presses the focused button instead
      e.preventDefault(); act({ type: 'flip' });
    }
    else if (/^[1-9]$/.test(k)) sendToFoundation(`work:${Number(k) - 1}`);
    else if (k === 'n') sendToFoundation('nerts');
    else if (k === 'w') sendToFoundation('waste');
    else if (k === 's' && has('stuck')) act({ type: 'stuck' });
    else if (k === 'c' && has('cycle')) act({ type: 'cycle' });
  }

  boardBox.addEventListener('pointerdown', onDown);
  boardBox.addEventListener('dblclick', onDbl);
  boardBox.addEventListener('click', onClick);
  window.addEventListener('pointermove', onMove);
  const up = (e) => { if (drag && e.pointerId === drag.id) endDrag(e, false); };
  const cancel = (e) => { if (drag && e.pointerId === drag.id) endDrag(e, true); };
  window.addEventListener('pointerup', up);
  window.addEventListener('pointercancel', cancel);
  window.addEventListener('keydown', onKey);

  function showStall(msg) {
    stallUntil = Date.now() + (msg.in_ms || 10000);
    clearInterval(stallTimer);
    const tick = () => {
      const s = Math.max(0, Math.ceil((stallUntil - Date.now()) / 1000));
      warnEl.textContent = t('nerts.stall_warning', { s });
      warnEl.classList.add('show');
      if (s <= 0) { clearInterval(stallTimer); warnEl.classList.remove('show'); }
    };
    tick();
    stallTimer = setInterval(tick, 250);
  }
  function clearStall() { clearInterval(stallTimer); warnEl.classList.remove('show'); }

  function showHandOver(msg) {
    overlay?.remove();
    const n = names();
    const last = { scores: msg.scores, ended: msg.ended };
    const hist = results.length && results.length > msg.hand ? results : [...results, last];
    overlay = handOverDialog(msg, n, hist, {
      note: msg.ended === 'nerts' && view?.called !== null && view?.called !== undefined
        ? t('ended.nerts_by', { name: n[view.called] ?? '' }) : msg.ended ? t(`ended.${msg.ended}`) : null,
      onClose: () => { overlay.remove(); overlay = null; },
      // the ready step (scores.js): the next hand starts once everyone here pressed Ready, or at the countdown
      game: 'nerts', options: table?.options, parts: nertsBreakdown(view, table?.options, n.length), seat,
      onReady: () => conn.send({ type: 'ready' }), onAgain: ctx.playAgain,
    });
    ctx.reactions?.intoDialog(overlay); // a row of reactions between hands (reactions.js)
    root.append(overlay);
    holdFocus(overlay, { onEscape: () => overlay?.querySelector('#continue')?.click(), fallback: () => roving.focusGroup('mine') });
  }

  // ---- keyboard play (keys.js): every pile and card of your layout is one group, the foundations another ----
  // Enter on a card picks it up (with the cards on it), Enter on another pile puts them down when `legal` allows
  // it (otherwise the server's refusal is shown and the cards stay picked up), Escape puts them back, Enter on
  // the stock flips. After a move the focus goes back to the pile the cards came from.
  const roving = new Roving(boardSlot);
  let held = null; // {from, count, card}: the cards picked up from the keyboard

  /** Mark the items of the two groups (after each redraw) and the picked-up cards. */
  function markKeys() {
    const mineEl = boardSlot.querySelector('.layout.mine');
    if (!mineEl) return;
    const item = (el, group, key, col) => {
      Object.assign(el.dataset, { nav: group, navKey: key, ...(col ? { navCol: col } : {}) });
      el.setAttribute('role', 'button');
    };
    for (const p of mineEl.querySelectorAll('.pile[data-pile]')) {
      const name = p.dataset.pile;
      const cards = [...p.querySelectorAll('.card[data-card]')];
      if (name.startsWith('work:') && cards.length) {
        p.setAttribute('role', 'group');
        for (const c of cards) item(c, 'mine', `${name}@${c.dataset.card}`, name);
      } else item(p, 'mine', name, name);
    }
    for (const f of boardSlot.querySelectorAll('.foundations .pile[data-pile]')) item(f, 'found', f.dataset.pile, undefined);
    if (!held) return;
    const src = mineEl.querySelector(`.pile[data-pile="${CSS.escape(held.from)}"]`);
    const cards = src ? [...src.querySelectorAll('.card[data-card]')] : [];
    const i = cards.findIndex((c) => c.dataset.card === held.card);
    if (i < 0 || (held.from.startsWith('work:') && cards.length - i !== held.count)) {
      // gone (not just shown on its way while the server decides): nothing is held any more
      if (!pending.some((x) => x.cards.includes(held.card))) held = null;
      return;
    }
    const heldEls = held.from.startsWith('work:') ? cards.slice(i) : [src];
    for (const el of heldEls) el.classList.add('held');
    heldEls[0].setAttribute('aria-label', t('nerts.picked_label', { card: cardName(held.card, 'nerts') }));
  }

  /** Focus the pile `name` of your layout (its top card). */
  function focusPile(name) {
    const items = navItems(boardSlot, 'mine').filter((el) => el.dataset.navCol === name);
    if (items.length) roving.focus(items[items.length - 1]);
  }

  function putBack() {
    if (!held) return;
    held = null;
    render(false);
    announce(t('nerts.put_back'));
  }

  function keyEnter(el) {
    const pileEl = el.closest('.pile');
    const pile = pileEl?.dataset.pile;
    if (!pile) return;
    if (el.dataset.nav === 'mine' && pile === 'stock') { held = null; act({ type: 'flip' }); return; }
    if (!held) {
      if (el.dataset.nav !== 'mine') { announce(t('nerts.pick_first')); toast(t('nerts.pick_first'), 'info', 1800); return; }
      const cards = [...pileEl.querySelectorAll('.card[data-card]')];
      const card = pile.startsWith('work:') ? el.dataset.card : cards[cards.length - 1]?.dataset.card;
      if (!card) return; // an empty pile
      const count = pile.startsWith('work:') ? cards.length - cards.findIndex((c) => c.dataset.card === card) : 1;
      held = { from: pile, count, card };
      render(false);
      const name = cardName(card, 'nerts');
      announce(count > 1 ? t('nerts.picked_up_run', { card: name, n: count - 1 }) : t('nerts.picked_up', { card: name }));
      return;
    }
    if (pile === held.from) { putBack(); return; }
    const d = held;
    const action = dropAction(d, pileEl);
    if (!action) { toast(t('nerts.cant_drop'), 'error', 1800); announce(t('nerts.cant_drop')); return; }
    if (action.choose) { held = null; playChoosing(action.choose); return; }
    const ok = legal.some((a) => sameAction(a, action));
    if (ok) held = null; // a refused move leaves the cards picked up: the player may try another pile
    act(action);
    if (ok) {
      focusPile(d.from);
      announce(t('nerts.put_down', { card: cardName(d.card, 'nerts'),
        pile: pile.startsWith('foundation') ? t('nerts.foundations') : pileName({ kind: 'work', number: Number(pile.slice(5)) + 1 }) }));
    }
  }

  boardSlot.addEventListener('keydown', (e) => {
    const el = e.target.closest?.('[data-nav]');
    if (!el || seat === null || !view || view.over || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === 'Escape' && held) { e.preventDefault(); putBack(); }
    else if (e.key === 'Enter') { e.preventDefault(); if (!e.repeat) keyEnter(el); }
  });

  return {
    snapshot(msg) {
      table = msg.table || table;
      view = msg.view; legal = msg.legal || []; pending = [];
      sizes = null; // a new hand (or a reconnection): size the board again
      results = msg.results || []; totals = msg.totals || []; handNo = msg.hand ?? 0;
      if (overlay?.showReady && !view.over && handNo > overlay.hand) { overlay.stop(); overlay.remove(); overlay = null; } // the next hand began
      clearStall();
      held = null;
      render(false);
      drawScores();
      // a new hand: the focus on your layout, unless the player is using something else on the page
      if (seat !== null && !view.over && roving.focusIsOurs() && !overlay) roving.focusGroup('mine');
      if (view.over && results.length > handNo && !overlay && msg.table?.status !== 'finished') {
        // reconnected after the hand ended: nothing to show beyond the board
      }
    },
    update(msg) {
      // another seat calling Nerts is said in the live region (their single moves are too fast to be read out)
      if (msg.view?.called !== null && msg.view?.called !== undefined && msg.view.called !== view?.called && msg.view.called !== seat) {
        announce(t('nerts.called_by', { name: names()[msg.view.called] ?? '' }));
      }
      view = msg.view; legal = msg.legal || [];
      if ((msg.events || []).some(isProgress)) clearStall();
      // at most one redraw per frame: a burst of updates from fast bots draws only the latest view
      if (!frame) frame = requestAnimationFrame(() => { frame = 0; render(true); });
    },
    handOver(msg) {
      totals = msg.totals || totals;
      showHandOver(msg);
      results = [...results.slice(0, msg.hand), { scores: msg.scores, ended: msg.ended }];
      drawScores();
      clearStall();
    },
    nextHand(msg) {
      const done = results[msg.hand - 1];
      if (!overlay && done && view?.over) showHandOver({ hand: msg.hand - 1, scores: done.scores, totals, ended: done.ended, winners: null });
      overlay?.showReady?.(msg);
    },
    warning(msg) { if (msg.kind === 'stall') showStall(msg); },
    table(tb) { table = tb; drawBar(); if (view) render(false); }, // a seat's stand-in comes or goes
    destroy() {
      clearAnnouncements();
      window.removeEventListener('pointermove', onMove);
      window.removeEventListener('pointerup', up);
      window.removeEventListener('pointercancel', cancel);
      window.removeEventListener('keydown', onKey);
      window.removeEventListener('resize', onResize);
      cancelAnimationFrame(frame);
      page?.classList.remove('fit');
      clearInterval(stallTimer);
      document.body.classList.remove('is-dragging');
      for (const g of document.querySelectorAll('.dragghost')) g.remove();
    },
  };
}
