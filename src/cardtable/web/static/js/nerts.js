// The Nerts table: your layout large, the foundations in the middle, the other layouts small and live.
// Cards move by drag and drop (pointer events: mouse, pen and touch); a double-click (mouse) or a tap (touch)
// sends a card to a foundation when `legal` has one; keys: space flip, 1-6 work pile to foundation,
// n Nerts pile, w waste, s stuck, c cycle. Moves show at once; a rejected one slides back with its reason.
import { h, fill, toast, flipBefore, flipAfter } from './util.js';
import { t } from './i18n.js';
import { standardCard, emptySlot, SUIT_SYMBOL } from './cards.js';
import { seatNames, scoreTable, handOverDialog } from './scores.js';

const clone = (x) => JSON.parse(JSON.stringify(x));

/** An event that restarts the server's stall guard: a card to a foundation or off a Nerts pile, or a rotate. */
function isProgress(e) {
  if (e.type === 'rotated') return true;
  if (e.type !== 'moved' && e.type !== 'slid_under') return false;
  return e.from === 'nerts' || String(e.to).startsWith('foundation:');
}

function layoutName(layout, names) {
  return (layout.seats || []).map((s) => names[s] ?? t('seat.player', { n: s + 1 })).join(' & ');
}

function countBadge(n, label) { return h('span.count', { title: label, text: String(n) }); }

/** One layout (a pack's piles). big: your own; readonly: no handlers (replay, spectators). */
function renderLayout(layout, names, { mine = false, seat = null } = {}) {
  const pack = layout.pack;
  const key = (c) => `${pack}:${c}`;
  const nerts = layout.nerts || { count: 0, top: null };
  const waste = layout.waste || { count: 0, top: null };
  const stock = layout.stock || { count: 0 };
  const pile = (name, extra, ...kids) => h(`div.pile.${extra}`, { dataset: { pile: name, pack: String(pack) } }, kids);

  const nertsEl = pile('nerts', 'nertspile',
    nerts.count > 0 ? standardCard(nerts.top, { key: nerts.top ? key(nerts.top) : undefined, faceDown: !nerts.top, pack }) : emptySlot(t('nerts.empty')),
    countBadge(nerts.count, t('nerts.nerts_count', { n: nerts.count })),
    h('span.pilelabel', { text: t('nerts.nerts_pile') }));
  const work = (layout.work || []).map((cards, i) => pile(`work:${i}`, 'work',
    cards.length ? cards.map((c) => standardCard(c, { key: key(c), pack })) : emptySlot(),
    mine ? h('span.keyhint', { text: String(i + 1), 'aria-hidden': 'true' }) : null));
  const stockEl = pile('stock', 'stock',
    stock.count > 0 ? standardCard(null, { faceDown: true, pack }) : emptySlot('↻'),
    countBadge(stock.count, t('nerts.stock_count', { n: stock.count })),
    h('span.pilelabel', { text: t('nerts.stock') }));
  const wasteEl = pile('waste', 'waste',
    waste.count > 0 ? standardCard(waste.top, { key: waste.top ? key(waste.top) : undefined, faceDown: !waste.top, pack }) : emptySlot(),
    countBadge(waste.count, t('nerts.waste_count', { n: waste.count })),
    h('span.pilelabel', { text: t('nerts.waste') }));
  const isMe = seat !== null && (layout.seats || []).includes(seat);
  return h('section.layout' + (mine ? '.mine' : '.other') + (layout.stuck ? '.stuck' : ''),
    { dataset: { pack: String(pack), seats: (layout.seats || []).join(',') }, style: { '--pack-hue': (Number(pack) * 67 + 210) % 360 } },
    h('header.lhead', {}, h('span.backswatch'), h('strong', { text: layoutName(layout, names) }),
      isMe && !mine ? h('em', { text: ` (${t('table.you')})` }) : null,
      layout.stuck ? h('span.badge.stuckbadge', { text: t('nerts.stuck_badge') }) : null),
    h('div.lbody', {}, h('div.side', {}, nertsEl), h('div.workrow', {}, work), h('div.side.sw', {}, stockEl, wasteEl)));
}

function renderFoundations(foundations, { live = false } = {}) {
  const active = (foundations || []).filter((f) => !f.finished);
  const done = (foundations || []).filter((f) => f.finished);
  const fEl = (f) => {
    const top = f.cards[f.cards.length - 1];
    return h('div.pile.foundation' + (f.finished ? '.finished' : ''), { dataset: { pile: `foundation:${f.id}`, suit: f.suit || '' } },
      top ? standardCard(top.card, { key: `${top.pack}:${top.card}`, pack: top.pack, as: top.as }) : emptySlot(),
      h('span.count', { text: String(f.cards.length), title: t('nerts.foundation_count', { n: f.cards.length }) }));
  };
  return h('section.foundations', { dataset: { drop: 'foundations' } },
    h('h3.sr', { text: t('nerts.foundations') }),
    h('div.frow', {}, active.map(fEl),
      live ? h('div.pile.foundation.newfound', { dataset: { pile: 'foundation:new' } }, emptySlot(t('nerts.new_foundation'))) : null,
      !active.length && !live ? h('span.muted', { text: t('nerts.no_foundations') }) : null),
    done.length ? h('div.finishedrow', { title: t('nerts.finished_foundations') },
      h('span.muted', { text: t('nerts.finished_n', { n: done.length }) }),
      done.map((f) => h('span.fsuit', { text: SUIT_SYMBOL[f.suit] || '★', dataset: { suit: f.suit || '' } }))) : null);
}

/** The whole board for a view: used live (with handlers added by mountTable) and by the replay viewer. */
export function renderNertsBoard(view, names, { seat = null, live = false } = {}) {
  const layouts = view.layouts || [];
  const mine = seat === null ? null : layouts.find((l) => (l.seats || []).includes(seat));
  const others = layouts.filter((l) => l !== mine);
  return h('div.nboard' + (mine ? '' : '.spectating'), {},
    h('div.others', {}, others.map((l) => renderLayout(l, names, { seat }))),
    renderFoundations(view.foundations, { live: live && !!mine }),
    mine ? renderLayout(mine, names, { mine: true, seat }) : null);
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
  const bar = h('div.nbar');
  const boardBox = h('div.nboardbox');
  const warnEl = h('div.stallwarn', { role: 'alert' });
  const scoreBox = h('aside.scoreboard');
  fill(root, h('div.nerts-table', { dataset: { seat: seat === null ? '' : String(seat) } }, bar, warnEl, boardBox, scoreBox));

  const has = (type) => legal.some((a) => a.type === type);
  const names = () => seatNames(table);

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

  function drawBar() {
    const spectator = seat === null;
    fill(bar,
      h('div.hinfo', {}, h('strong', { text: t('game.nerts') }), ' · ', t('table.hand_n', { n: handNo + 1 }),
        view?.called !== null && view?.called !== undefined ? h('span.badge.called', { text: t('nerts.called_by', { name: names()[view.called] ?? '' }) }) : null,
        spectator ? h('span.badge', { text: t('table.spectating') }) : null),
      spectator ? null : h('div.actions', {},
        h('button#flip', { type: 'button', disabled: !has('flip'), onclick: () => act({ type: 'flip' }), title: t('nerts.key_space') }, t('nerts.flip')),
        h('button#stuck', { type: 'button', disabled: !has('stuck'), onclick: () => act({ type: 'stuck' }), title: t('nerts.key_s') }, t('nerts.stuck')),
        has('cycle') ? h('button#cycle', { type: 'button', onclick: () => act({ type: 'cycle' }), title: t('nerts.key_c') }, t('nerts.cycle')) : null,
        h('button.primary.nertsbtn#call-nerts', { type: 'button', disabled: !has('nerts'), onclick: () => act({ type: 'nerts' }) }, t('nerts.call'))),
      spectator ? null : h('details.keys', {}, h('summary', { text: t('nerts.keys') }), h('p', { text: t('nerts.keys_help') })));
  }

  function drawScores() {
    const n = names();
    if (!results.length) { fill(scoreBox); scoreBox.hidden = true; return; }
    scoreBox.hidden = false;
    fill(scoreBox, h('details', {}, h('summary', { text: t('table.scores_so_far', { totals: (totals || []).join(' · ') }) }),
      scoreTable(n, results, totals)));
  }

  function render(animate = true) {
    if (!view) return;
    const before = animate ? flipBefore(boardBox) : null;
    const v = displayView();
    fill(boardBox, renderNertsBoard(v, names(), { seat, live: true }));
    if (drag?.started) {
      // the board was redrawn mid-drag: keep the dragged cards hidden in their new elements
      const els = drag.keys.map((k) => boardBox.querySelector(`.layout.mine [data-key="${CSS.escape(k)}"]`));
      if (els.every(Boolean)) { drag.els = els; for (const el of els) el.classList.add('dragging'); }
    }
    if (animate) flipAfter(boardBox, before);
    drawBar();
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
      if (res.reason && !quiet) toast(t('nerts.rejected', { reason: res.reason }), 'error', 2600);
      boardBox.querySelector('.layout.mine')?.classList.add('shake');
      setTimeout(() => boardBox.querySelector('.layout.mine')?.classList.remove('shake'), 400);
    }
  }

  function foundationMoveFor(src) {
    return legal.find((a) => a.type === 'move' && a.from === src && String(a.to).startsWith('foundation') && (a.count || 1) === 1);
  }

  function sendToFoundation(src) {
    const a = foundationMoveFor(src);
    if (a) act({ ...a });
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
    // Land the move: remember where the ghost is so the card flies from there.
    const rects = new Map();
    const gcards = [...ghost.children];
    d.els.forEach((el, i) => { if (el.dataset.key && gcards[i]) rects.set(el.dataset.key, gcards[i].getBoundingClientRect()); });
    ghost.remove();
    act(action).then(() => {});
    // act() rendered the optimistic view without animation: animate from the drop point.
    flipAfter(boardBox, rects, 160);
  }

  function dropAction(d, target) {
    const pile = target.dataset.pile;
    if (pile && pile.startsWith('foundation:')) {
      const exact = legal.find((a) => a.type === 'move' && a.from === d.from && a.to === pile && (a.count || 1) === d.count);
      if (exact) return { ...exact };
      const a = { type: 'move', from: d.from, to: pile };
      if (d.count > 1) a.count = d.count;
      return a;
    }
    if (target.classList.contains('foundations')) {
      const fit = foundationMoveFor(d.from);
      if (fit && d.count === 1) return { ...fit };
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
      note: msg.ended ? t(`ended.${msg.ended}`) : null,
      onClose: () => { overlay.remove(); overlay = null; },
    });
    root.append(overlay);
  }

  return {
    snapshot(msg) {
      table = msg.table || table;
      view = msg.view; legal = msg.legal || []; pending = [];
      results = msg.results || []; totals = msg.totals || []; handNo = msg.hand ?? 0;
      clearStall();
      render(false);
      drawScores();
      if (view.over && results.length > handNo && !overlay && msg.table?.status !== 'finished') {
        // reconnected after the hand ended: nothing to show beyond the board
      }
    },
    update(msg) {
      view = msg.view; legal = msg.legal || [];
      if ((msg.events || []).some(isProgress)) clearStall();
      render(true);
    },
    handOver(msg) {
      totals = msg.totals || totals;
      showHandOver(msg);
      results = [...results.slice(0, msg.hand), { scores: msg.scores, ended: msg.ended }];
      drawScores();
      clearStall();
    },
    warning(msg) { if (msg.kind === 'stall') showStall(msg); },
    table(tb) { table = tb; drawBar(); },
    destroy() {
      window.removeEventListener('pointermove', onMove);
      window.removeEventListener('pointerup', up);
      window.removeEventListener('pointercancel', cancel);
      window.removeEventListener('keydown', onKey);
      clearInterval(stallTimer);
      document.body.classList.remove('is-dragging');
      for (const g of document.querySelectorAll('.dragghost')) g.remove();
    },
  };
}
