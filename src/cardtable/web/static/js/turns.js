// Turn-based Enemy Anemone in the page (issue 29; docs/protocol.md, "Turn-based tables"): the Pace choice and the
// turn clock presets of the custom table, the lobby's "Your games" panel (GET /api/me/seats) with the count of
// tables where it is your turn in the page title and on the favicon, each seat's time bank at the table (the seat to
// move counting down), and the "Since your last move" summary of a `catch_up` message. Its stylesheet: css/turns.css.
import { h, fill, loadStyles } from './util.js';
import { t, currentLanguage } from './i18n.js';
import { call, saveSeat } from './api.js';
import { navigate } from './nav.js';
import { creatureCard } from './cards.js';
import { gameTitle, seatNames, nameOf, bdi, tWith } from './names.js';

/** Load this module's stylesheet (css/turns.css) once. */
export function turnsStyles() { loadStyles('turns'); }

/** Is this TABLE turn-based (`pace`)? */
export function turnBased(table) { return table?.pace === 'turn-based'; }

/**
 * A duration in milliseconds as a person reads it, in the page's language: "2 d 3 h" (a day or more), "5 h 20 min"
 * (an hour or more), "45 min", "30 s" (under a minute); never negative. Rounded down: "45 min" is 45 to 46 minutes.
 */
export function timeLeft(ms) {
  const s = Math.max(0, Math.floor((Number(ms) || 0) / 1000));
  const d = Math.floor(s / 86400), hr = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
  if (d) return hr ? t('turns.dur_dh', { d, h: hr }) : t('turns.dur_d', { d });
  if (hr) return m ? t('turns.dur_hm', { h: hr, m }) : t('turns.dur_h', { h: hr });
  if (m) return t('turns.dur_m', { m });
  return t('turns.dur_s', { s });
}

/** A moment (ISO 8601 or Unix ms) in the viewer's local time, as the page's language writes it: "Nov 27, 10:05". */
export function localTime(at) {
  const d = new Date(typeof at === 'number' ? at : Date.parse(at));
  if (Number.isNaN(d.getTime())) return '';
  return new Intl.DateTimeFormat(currentLanguage(), { month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit' }).format(d);
}

/** A `<time>` element of `at` (ISO) in local time, its machine-readable value kept. */
export function timeEl(at, cls = 'at') {
  return h(`time.${cls}`, { datetime: typeof at === 'number' ? new Date(at).toISOString() : at, text: localTime(at) });
}

// ---- the custom table: Pace and the turn clock ----

/** The turn clock presets of the custom table, in seconds (docs/protocol.md, "Creating a table": `turn_clock`). */
export const PRESETS = [
  { id: 'day1', start_s: 259200, per_move_s: 86400 },
  { id: 'day4', start_s: 86400, per_move_s: 21600 },
  { id: 'day12', start_s: 28800, per_move_s: 7200 },
];

/** Games that may be played turn-based (Nerts is a race: real time only). */
const TURN_GAMES = new Set(['anemone']);

/**
 * The custom table's Pace choice (Real time / Turn-based) and, for turn-based, the clock presets and the note that
 * a turn-based seat needs signing in. Returns `{el, setGame(game), body()}`: `body()` is what the create request
 * gains (`{}` for real time, else `{pace: 'turn-based', turn_clock: {start_s, per_move_s}}`).
 */
export function paceChoice(game, { signedIn = null } = {}) {
  turnsStyles();
  let pace = 'real-time';
  let preset = PRESETS[0].id;
  const pick = h('div.segmented.pacepick', { role: 'radiogroup', 'aria-label': t('turns.pace') });
  const note = h('small.hint.pacenote');
  const presets = h('fieldset.presets', { hidden: true },
    h('legend', { text: t('turns.clock') }),
    h('div.presetlist', {}, PRESETS.map((p) => h('label.preset', { dataset: { preset: p.id } },
      h('input', { type: 'radio', name: 'turn-preset', value: p.id, checked: p.id === preset, onchange: () => { preset = p.id; } }),
      h('span.pname', { text: t(`turns.preset.${p.id}`) }),
      h('small.pdesc', { text: t('turns.preset_help', { start: timeLeft(p.start_s * 1000), per: timeLeft(p.per_move_s * 1000) }) })))),
    h('p.signnote', {}, h('span', { text: t('turns.needs_sign_in') }), ' ',
      h('a.signlink', { href: '/?account=1', hidden: signedIn === true, text: t('turns.sign_in'),
        onclick: (e) => { if (e.button === 0 && !e.ctrlKey && !e.metaKey) { e.preventDefault(); navigate('/?account=1'); } } })));
  const el = h('div.pacebox', {}, h('div.field', {}, h('span.label', { text: t('turns.pace') }), pick, note), presets);

  function draw() {
    const allowed = TURN_GAMES.has(game);
    if (!allowed) pace = 'real-time';
    fill(pick, ['real-time', 'turn-based'].map((p) => h('button' + (p === pace ? '.on' : ''), {
      type: 'button', role: 'radio', 'aria-checked': String(p === pace), dataset: { pace: p },
      disabled: p === 'turn-based' && !allowed,
      onclick: () => { pace = p; draw(); },
    }, t(p === 'real-time' ? 'turns.real_time' : 'turns.turn_based'))));
    note.textContent = !allowed ? t('turns.nerts_real_time', { game: gameTitle(game) })
      : t(pace === 'turn-based' ? 'turns.turn_based_help' : 'turns.real_time_help');
    presets.hidden = pace !== 'turn-based';
  }
  draw();
  return {
    el,
    setGame(g) { game = g; draw(); },
    body() {
      if (pace !== 'turn-based') return {};
      const p = PRESETS.find((x) => x.id === preset) || PRESETS[0];
      return { pace: 'turn-based', turn_clock: { start_s: p.start_s, per_move_s: p.per_move_s } };
    },
  };
}

// ---- the count of tables where it is your turn: the page title and the favicon ----

let iconOriginal = null; // the page's own favicon (index.html's), put back at 0
let iconDrawn = 0; // the count the favicon shows
let iconAsk = 0; // the latest count asked for (a drawing that finishes late for an older count is dropped)

function iconLink() { return document.querySelector('link[rel="icon"]'); }

/**
 * Show `n` tables where it is your turn: the title "(n) cardtable" and a red badge with n on the favicon (drawn on
 * a canvas over the page's own icon); n = 0 puts both back. `title` is the page's own title.
 */
export function showTurnCount(n, title = t('app.title')) {
  document.title = n > 0 ? `(${n}) ${title}` : title;
  const link = iconLink();
  if (!link) return;
  iconOriginal ??= link.href;
  iconAsk = n;
  if (n <= 0) { link.href = iconOriginal; iconDrawn = 0; delete link.dataset.count; return; }
  if (n === iconDrawn) return;
  const img = new Image();
  img.onload = () => {
    if (iconAsk !== n) return;
    const size = 64;
    const canvas = Object.assign(document.createElement('canvas'), { width: size, height: size });
    const g = canvas.getContext('2d');
    g.drawImage(img, 0, 0, size, size);
    const r = 19;
    g.fillStyle = '#d42a1e';
    g.beginPath(); g.arc(size - r, r, r, 0, 2 * Math.PI); g.fill();
    g.lineWidth = 3; g.strokeStyle = '#ffffff'; g.stroke();
    g.fillStyle = '#ffffff';
    g.font = `bold ${n > 9 ? 22 : 28}px system-ui, sans-serif`;
    g.textAlign = 'center'; g.textBaseline = 'middle';
    g.fillText(n > 9 ? '9+' : String(n), size - r, r + 2);
    link.href = canvas.toDataURL('image/png');
    link.dataset.count = String(n);
    iconDrawn = n;
  };
  img.src = iconOriginal;
}

// ---- the lobby's "Your games" ----

/** The mini cards of a trick `[{seat, card}]`, each with its player's name under it; `discards` (cards thrown
 * face up by seats with no card of a new suit) after them, tilted. */
function trickCards(plays, names, { taker = null, discards = [] } = {}) {
  const one = (p, cls) => h(`figure.tplay${cls}`, { dataset: { seat: String(p.seat) } },
    creatureCard(p.card), h('figcaption', {}, bdi(names[p.seat] ?? t('seat.player', { n: p.seat + 1 }))));
  return h('div.ttrick', {}, plays.map((p) => one(p, p.seat === taker ? '.taker' : '')),
    (discards || []).map((p) => one(p, '.discarded')));
}

/** One seat of GET /api/me/seats as a row of the panel: game, whose turn, time left, the last trick, Open/Play. */
function gameRow(entry, receivedAt) {
  const tb = entry.table;
  const names = seatNames(tb);
  const href = `/?table=${encodeURIComponent(tb.id)}`;
  saveSeat(tb.id, entry.seat, entry.token); // this browser holds the seat too (as the account page does)
  const passed = Date.now() - receivedAt;
  let left = null;
  if (entry.turn && entry.deadline) left = Date.parse(entry.deadline) - Date.now();
  if ((left === null || Number.isNaN(left)) && typeof entry.bank_ms === 'number') left = entry.bank_ms - (entry.turn ? passed : 0);
  const mover = tb.turn?.seat;
  const status = entry.turn
    ? h('span.badge.yourturn', { text: t('anemone.your_turn') })
    : mover !== null && mover !== undefined ? h('span.waitfor', {}, tWith('turns.waiting_for', 'name', nameOf(names, mover)))
      : h('span.waitfor', { text: t('turns.between_hands') });
  const clock = left === null ? null : h('span.tleft' + (entry.turn ? '.running' : ''), {
    text: entry.turn ? t('turns.time_left', { time: timeLeft(left) }) : t('turns.your_bank', { time: timeLeft(left) }),
  });
  const trick = entry.last_trick && entry.last_trick.length
    ? h('div.lasttrick', {}, h('span.tlabel', { text: t('anemone.last_trick') }), trickCards(entry.last_trick, names))
    : h('div.lasttrick', {}, h('span.tlabel.muted', { text: t('turns.no_trick_yet') }));
  const open = h('a.btnlink' + (entry.turn ? '.primary' : ''), {
    href, dataset: { open: tb.id }, text: entry.turn ? t('turns.play') : t('turns.open'),
    onclick: (e) => { if (e.button === 0 && !e.ctrlKey && !e.metaKey) { e.preventDefault(); navigate(href); } },
  });
  const others = names.filter((_, s) => s !== entry.seat);
  return h('li.game-row' + (entry.turn ? '.mine' : ''), { dataset: { table: tb.id, turn: String(!!entry.turn) } },
    h('div.ginfo', {},
      h('div.gtop', {}, h('strong', { text: gameTitle(tb.game) }), status, clock),
      h('span.gseats', { text: t('turns.with', { names: others.join(t('list.sep')) }) }),
      trick),
    h('div.gact', {}, open));
}

/**
 * The lobby's "Your games" panel: the signed-in player's turn-based seats (GET /api/me/seats), those where it is
 * their turn first, each with the time left, the last trick and a link to the table; hidden for a guest.
 * `refresh()` loads it again (the lobby's refresh cycle) and shows the count of your turns in the title and favicon.
 * `stop()` puts the title's and favicon's count back to none.
 */
export function yourGamesPanel() {
  turnsStyles();
  const list = h('ul.games', {}, h('li.empty', { text: t('common.loading') }));
  const el = h('section.panel.yourgames#your-games', { hidden: true, 'aria-labelledby': 'your-games-h' },
    h('h2#your-games-h', {}, h('span', { text: t('turns.your_games') }), h('span.turncount#turn-count', { hidden: true })), list);
  let live = true;
  let busy = false;
  async function refresh() {
    if (busy || !live) return;
    busy = true;
    try {
      const seats = await call('GET', '/api/me/seats');
      if (!live) return;
      const receivedAt = Date.now();
      const games = seats.filter((s) => turnBased(s.table));
      // yours to move first; each group by deadline (soonest first), then table id, as the server orders them
      const when = (s) => (s.deadline ? Date.parse(s.deadline) : Infinity);
      games.sort((a, b) => (Number(!!b.turn) - Number(!!a.turn)) || (when(a) - when(b)) || String(a.table.id).localeCompare(String(b.table.id)));
      const mine = games.filter((s) => s.turn).length;
      el.hidden = false;
      const count = el.querySelector('#turn-count');
      count.hidden = !mine;
      count.textContent = mine ? t('turns.count', { n: mine }) : '';
      fill(list, games.length ? games.map((s) => gameRow(s, receivedAt)) : h('li.empty', { text: t('turns.no_games') }));
      showTurnCount(mine);
    } catch (err) {
      if (!live) return;
      if (err?.status === 401) { el.hidden = true; showTurnCount(0); } // signed out (or never signed in): no panel
      else if (!el.hidden) fill(list, h('li.empty', { text: t('common.unavailable') }));
    } finally {
      busy = false;
    }
  }
  return { el, refresh, stop() { live = false; showTurnCount(0); } };
}

// ---- at the table: each seat's time bank ----

/**
 * Each seat's time bank at a turn-based table, kept between the server's TABLE messages: `setTable(tb)` takes the
 * server's `turn` (`banks_ms`, `seat`, `deadline_ms`, `kept`, `timeouts`) as of the moment it arrived; `noteView(v)`
 * follows the turn as views come (the seat that moved gains `per_move_s`, never above `start_s`, and the next one
 * starts counting down) until the next TABLE message corrects it. `el(s)` is seat s's clock (an element updated
 * every second while it is on the page; none for a bot or a kept seat), `kept(s)` / `timeouts(s)` the seat's
 * stand-in state; `barEl(s)` the "Your turn" bar's time left in seat s's bank.
 */
export class SeatClocks {
  constructor(table) {
    turnsStyles();
    this.banks = [];
    this.mover = null;
    this.base = Date.now();
    this.turn = null;
    this.clock = null;
    this.setTable(table);
    this.timer = setInterval(() => this.tick(), 1000);
  }

  setTable(tb) {
    if (!tb?.turn) return;
    const turn = tb.turn;
    this.turn = turn;
    this.clock = tb.turn_clock || this.clock;
    this.bots = (tb.seats || []).map((x) => x.kind === 'bot'); // a bot never runs out of time: no clock shown
    this.base = Date.now(); // the time the message arrived: the banks are as of then
    this.banks = (turn.banks_ms || []).slice();
    this.mover = turn.seat ?? null;
    if (this.mover !== null && typeof this.banks[this.mover] !== 'number' && typeof turn.deadline_ms === 'number') {
      this.banks[this.mover] = turn.deadline_ms - Date.now();
    }
    this.tick();
  }

  /** Seat s's bank now (ms), or null when unknown. */
  left(s) {
    const b = this.banks[s];
    if (typeof b !== 'number') return null;
    return Math.max(0, s === this.mover ? b - (Date.now() - this.base) : b);
  }

  noteView(view) {
    if (!view || !this.turn) return;
    const next = view.over ? null : (view.turn ?? null);
    if (next === this.mover) return;
    if (this.mover !== null && typeof this.banks[this.mover] === 'number' && this.clock) {
      this.banks[this.mover] = Math.min(this.clock.start_s * 1000, this.left(this.mover) + this.clock.per_move_s * 1000);
    }
    this.mover = next;
    this.base = Date.now();
    this.tick();
  }

  kept(s) { return !!this.turn?.kept?.[s]; }

  timeouts(s) { return this.turn?.timeouts?.[s] ?? 0; }

  /** Seat s's clock, or null where a bank means nothing: a bot's seat, a seat its stand-in keeps. */
  el(s) {
    if (this.left(s) === null || this.bots?.[s] || this.kept(s)) return null;
    const span = h('span.seatclock', { dataset: { bankSeat: String(s) } });
    this.draw(span);
    return span;
  }

  /** The "Your turn" bar's note of the time left in seat s's bank ("12 min left in your bank"), kept up to date. */
  barEl(s) {
    if (this.left(s) === null) return null;
    const span = h('span.turnbank', { dataset: { barSeat: String(s) } });
    this.drawBar(span);
    return span;
  }

  drawBar(span) {
    const ms = this.left(Number(span.dataset.barSeat));
    if (ms === null) return;
    span.classList.toggle('low', ms < 3600 * 1000);
    span.textContent = t('turns.bar_bank', { time: timeLeft(ms) });
  }

  draw(span) {
    const s = Number(span.dataset.bankSeat);
    const ms = this.left(s);
    if (ms === null) return;
    const running = s === this.mover;
    span.classList.toggle('running', running);
    span.classList.toggle('low', running && ms < 3600 * 1000);
    span.replaceChildren(clockIcon(), timeLeft(ms));
    span.title = t(running ? 'turns.bank_running' : 'turns.bank', { time: timeLeft(ms) });
    span.setAttribute('aria-label', span.title);
  }

  tick() {
    for (const span of document.querySelectorAll('.seatclock[data-bank-seat]')) this.draw(span);
    for (const span of document.querySelectorAll('.turnbank[data-bar-seat]')) this.drawBar(span);
  }

  destroy() { clearInterval(this.timer); }
}

/** A small clock drawn in SVG (no font has to hold a clock glyph), hidden from screen readers. */
function clockIcon() {
  const span = h('span.clockico', { 'aria-hidden': 'true' });
  span.innerHTML = '<svg viewBox="0 0 16 16" width="12" height="12"><circle cx="8" cy="8" r="6.5" fill="none" stroke="currentColor" stroke-width="1.8"/>'
    + '<path d="M8 4.2V8l2.6 1.6" fill="none" stroke="currentColor" stroke-width="1.8" stroke-linecap="round"/></svg>';
  return span;
}

/** The badges of a turn-based seat: kept by its stand-in for the match (3 timeouts), or its timeouts so far. */
export function seatTurnBadges(clocks, s) {
  if (!clocks) return null;
  if (clocks.kept(s)) return h('span.badge.kept', { text: t('turns.kept'), title: t('turns.kept_long') });
  const n = clocks.timeouts(s);
  return n ? h('span.badge.timeouts', { text: t('turns.timeouts', { n }) }) : null;
}

// ---- coming back: "Since your last move" ----

/** A hand's score as players write it: "+12", "−4", "0". */
function signed(n) { return n > 0 ? `+${n}` : n < 0 ? `\u2212${-n}` : '0'; }

/**
 * The "Since your last move" summary of a `catch_up` message (docs/protocol.md, "Coming back"): the tricks played
 * since (their cards, who took anemones and how many), the hands that ended with their scores, and the totals now;
 * `names` the table's seat names (seatNames). Returns the overlay element (not yet attached), or null when no trick
 * was played since. `onClose` is called when the player dismisses it (its button, Escape or a click outside).
 */
export function catchUpDialog(msg, names, { onClose }) {
  turnsStyles();
  const tricks = msg?.tricks || [];
  if (!tricks.length) return null;
  const who = (s) => nameOf(names, s, t('seat.player', { n: s + 1 }));
  const byHand = [];
  for (const tr of tricks) {
    const last = byHand[byHand.length - 1];
    if (last && last.hand === tr.hand) last.tricks.push(tr); else byHand.push({ hand: tr.hand, tricks: [tr] });
  }
  const ended = new Map((msg.hands || []).map((x) => [x.hand, x]));
  // each seat's score kept on one line with its separator ("Bot 3 (Simple) +11 ·"), so a line never starts with one
  const perSeat = (values, show) => values.map((x, s) => [s ? ' ' : null, h('span.cuscore', {
    text: `${names[s] ?? t('seat.player', { n: s + 1 })} ${show(x)}${s < values.length - 1 ? ' ·' : ''}`,
  })]);
  const endLine = (x) => h('p.handend', { dataset: { hand: String(x.hand) } },
    tWith('turns.hand_ended', 'scores', perSeat(x.scores || [], signed), { n: x.hand + 1 }));
  const sections = byHand.map((g) => h('section.cuhand', { dataset: { hand: String(g.hand) } },
    h('h3', { text: t('table.hand_n', { n: g.hand + 1 }) }),
    h('ol.cutricks', {}, g.tricks.map((tr) => h('li.cutrick', {},
      trickCards(tr.plays || [], names, { taker: tr.anemones ? tr.taker : null, discards: tr.discards }),
      h('p.cutake', {}, tr.taker !== null && tr.taker !== undefined && tr.anemones
        ? tWith('turns.took', 'name', who(tr.taker), { n: tr.anemones })
        : t('turns.no_take'))))),
    ended.has(g.hand) ? endLine(ended.get(g.hand)) : null));
  // hands that ended since without a trick of theirs in the list (their last trick came before)
  const otherEnds = [...ended.values()].filter((x) => !byHand.some((g) => g.hand === x.hand)).map(endLine);
  const close = () => { document.removeEventListener('keydown', onKey); overlay.remove(); onClose?.(); };
  const onKey = (e) => { if (e.key === 'Escape') { e.preventDefault(); close(); } };
  const button = h('button.primary#catchup-close', { type: 'button', text: t('turns.got_it'), onclick: close });
  const overlay = h('div.overlay.catchup-overlay', {
    onclick: (e) => { if (e.target === overlay) close(); },
  }, h('section.dialog.catchup#catch-up', { role: 'dialog', 'aria-modal': 'true', 'aria-labelledby': 'catchup-title' },
    h('div.cuhead', {},
      h('h2#catchup-title', { text: t('turns.catch_up_title') }),
      h('button.dismiss', { type: 'button', text: '\u00d7', 'aria-label': t('common.close'), onclick: close })),
    h('p.muted.cusince', {}, msg.since ? [t('turns.since_label'), ' ', timeEl(msg.since)] : t('turns.since_start')),
    otherEnds, sections,
    (msg.totals || []).length
      ? h('p.cutotals', {}, tWith('turns.totals_now', 'totals', perSeat(msg.totals, (x) => (x < 0 ? `\u2212${-x}` : String(x)))))
      : null,
    h('div.row', {}, button)));
  document.addEventListener('keydown', onKey);
  requestAnimationFrame(() => { if (overlay.isConnected) button.focus({ preventScroll: true }); });
  overlay.close = close;
  return overlay;
}
