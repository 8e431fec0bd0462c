// Reactions (docs/protocol.md, "Reactions"): a row of preset reactions a seated person sends (`react`), and each
// `reaction` the server sends back shown for a few seconds in a bubble by the sender's seat name. The server is the
// one truth: the sender's own bubble comes back from it too, and it refuses a spectator, an unknown id and a seat
// over its budget with a coded `error` (worded by table.js). A per-table mute, remembered by the browser: a muted
// client simply does not show them.
//
// The bubbles live in one fixed layer over the page (not inside the seats, which the games redraw on every update):
// each is placed by its seat's name, found again on every frame while it shows, so a redraw or a resize moves it along.
import { h } from './util.js';
import { t } from './i18n.js';
import { announce } from './announce.js';
import { seatNames } from './names.js';

/** The preset reactions, in the server's order (server/table/reactions.py, REACTIONS); labels are `reaction.<id>`. */
export const REACTIONS = [
  { id: 'hello', emoji: '👋' }, { id: 'nice', emoji: '👍' }, { id: 'wow', emoji: '😮' }, { id: 'oops', emoji: '😅' },
  { id: 'thinking', emoji: '🤔' }, { id: 'ready', emoji: '⏳' }, { id: 'well_played', emoji: '🎉' }, { id: 'laugh', emoji: '😂' },
];

/** How long a reaction shows by its seat, in milliseconds. */
export const SHOW_MS = 4000;

/** localStorage key: the ids of the tables whose reactions are muted (a JSON list, newest last, at most MUTED_KEEP). */
const MUTED_KEY = 'ct.mutedReactions';
const MUTED_KEEP = 100;

function mutedTables() {
  try {
    const list = JSON.parse(localStorage.getItem(MUTED_KEY) || '[]');
    return Array.isArray(list) ? list.filter((x) => typeof x === 'string') : [];
  } catch { return []; }
}

/** Whether this browser hides the reactions of table `tableId`. */
export function isMuted(tableId) { return mutedTables().includes(tableId); }

/** Hide (true) or show (false) the reactions of table `tableId` in this browser, from now on. */
export function setMuted(tableId, muted) {
  const list = mutedTables().filter((x) => x !== tableId);
  if (muted) list.push(tableId);
  localStorage.setItem(MUTED_KEY, JSON.stringify(list.slice(-MUTED_KEEP)));
}

/**
 * The element a seat's bubble sits by: Enemy Anemone's seat header, or the header of the Nerts layout the seat
 * plays (a layout may hold partners: `data-seats="0,2"`); null when the seat is not on screen (the waiting room).
 */
function seatAnchor(seat) {
  const anemone = document.querySelector(`.aseat[data-seat="${seat}"] > header`);
  if (anemone) return anemone;
  for (const el of document.querySelectorAll('section.layout[data-seats]')) {
    if (el.dataset.seats.split(',').includes(String(seat))) return el.querySelector('.lhead');
  }
  return null;
}

/** A reaction's emoji and translated label ("👍", "nice!"). */
export function reactionText(id) {
  const r = REACTIONS.find((x) => x.id === id);
  return r ? { emoji: r.emoji, label: t(`reaction.${id}`) } : null;
}

/**
 * The reactions of one table page: `picker` (the row, for a seated person; null for a spectator), `menuItem` (the
 * mute toggle for the ☰ menu), show(msg) for each `reaction` message, destroy().
 * ctx: { conn (TableConnection), seat (number or null), tableId, table: () => TABLE }.
 */
export class Reactions {
  constructor({ conn, seat, tableId, table }) {
    this.conn = conn;
    this.seat = seat;
    this.tableId = tableId;
    this.table = table;
    this.shown = new Map(); // seat -> { el, timer }
    this.frame = 0;
    this.layer = null;
    this.picker = seat === null ? null : this.buildPicker();
    this.menuItem = this.buildMuteToggle();
  }

  buildPicker() {
    const row = h('div.reactrow', { role: 'group', 'aria-label': t('reaction.send') },
      REACTIONS.map(({ id, emoji }) => h('button.reactbtn', {
        type: 'button', dataset: { reaction: id }, title: t(`reaction.${id}`), 'aria-label': t(`reaction.${id}`),
        onclick: () => { this.send(id); box.open = false; box.querySelector('summary')?.focus({ preventScroll: true }); },
      }, h('span.remoji', { 'aria-hidden': 'true', text: emoji }), h('span.rlabel', { 'aria-hidden': 'true', text: t(`reaction.${id}`) }))));
    const box = h('details.reactpick', {},
      h('summary', { title: t('reaction.send'), 'aria-label': t('reaction.send') }, h('span', { 'aria-hidden': 'true', text: '😀' })),
      row);
    // the row opens under the button, right-aligned, and is moved sideways as far as it must to stay in the window
    box.addEventListener('toggle', () => {
      if (!box.open) return;
      row.style.right = '';
      const r = row.getBoundingClientRect();
      if (r.left < 4) row.style.right = `${r.left - 4}px`;
      else if (r.right > window.innerWidth - 4) row.style.right = `${r.right - window.innerWidth + 4}px`;
    });
    box.addEventListener('keydown', (e) => { if (e.key === 'Escape' && box.open) { e.stopPropagation(); box.open = false; box.querySelector('summary')?.focus(); } });
    document.addEventListener('pointerdown', this.outside = (e) => { if (box.open && !box.contains(e.target)) box.open = false; });
    return box;
  }

  /**
   * Put a row of reactions in a dialog's `.dialog` (the hand-over dialog, which covers the bar between hands, when
   * "ready?" and "well played" are said most): a line of its own above the buttons, which stay in view while the
   * dialog scrolls; nothing for a spectator.
   */
  intoDialog(overlay) {
    const dialog = overlay?.querySelector('.dialog');
    if (this.seat === null || !dialog) return;
    const row = h('div.reactrow.indialog', { role: 'group', 'aria-label': t('reaction.send') },
      REACTIONS.map(({ id, emoji }) => h('button.reactbtn', {
        type: 'button', dataset: { reaction: id }, title: t(`reaction.${id}`), 'aria-label': t(`reaction.${id}`),
        onclick: () => this.send(id),
      }, h('span.remoji', { 'aria-hidden': 'true', text: emoji }))));
    const buttons = dialog.querySelector(':scope > .row:last-child'); // the buttons, kept in view as the dialog scrolls
    if (buttons) buttons.prepend(row); else dialog.append(row);
  }

  buildMuteToggle() {
    const input = h('input#mute-reactions', {
      type: 'checkbox', checked: isMuted(this.tableId),
      onchange: () => { setMuted(this.tableId, input.checked); if (input.checked) this.clear(); },
    });
    return h('label.menutoggle', { for: 'mute-reactions' }, input, h('span', { text: t('reaction.mute') }));
  }

  /** Send reaction `id` (the server answers with the `reaction` everyone sees, or an `error`). */
  send(id) { this.conn.send({ type: 'react', reaction: id }); }

  /** Show a `reaction` message by its seat for SHOW_MS (unless muted here); a newer one of that seat replaces it. */
  show(msg) {
    if (isMuted(this.tableId)) return;
    const text = reactionText(msg.reaction);
    if (!text || !Number.isInteger(msg.seat)) return;
    const names = seatNames(this.table?.() || { seats: [] });
    const name = names[msg.seat] ?? t('seat.player', { n: msg.seat + 1 });
    announce(t('reaction.said', { name, reaction: `${text.emoji} ${text.label}` }));
    if (!this.layer || !this.layer.isConnected) {
      this.layer = h('div.reactlayer', { 'aria-hidden': 'true' });
      document.body.append(this.layer);
    }
    this.drop(msg.seat);
    const el = h('div.reactbubble', { dataset: { seat: String(msg.seat), reaction: msg.reaction } },
      h('span.remoji', { text: text.emoji }), h('bdi.rname', { text: name }), h('span.rlabel', { text: text.label }));
    this.layer.append(el);
    const timer = setTimeout(() => this.drop(msg.seat), SHOW_MS);
    this.shown.set(msg.seat, { el, timer });
    this.place();
  }

  drop(seat) {
    const s = this.shown.get(seat);
    if (!s) return;
    clearTimeout(s.timer);
    s.el.remove();
    this.shown.delete(seat);
  }

  clear() { for (const seat of [...this.shown.keys()]) this.drop(seat); }

  /**
   * Put each bubble by its seat's name (right of it, clamped to the window), again on the next frame while any
   * shows. A seat not on screen, or covered (by a dialog, a menu), gets its bubble at the top of the window with the
   * sender's name in it ("loose"), one under the other.
   */
  place() {
    cancelAnimationFrame(this.frame);
    if (!this.shown.size) return;
    let loose = 0;
    for (const [seat, { el }] of this.shown) {
      const anchor = seatAnchor(seat);
      const name = anchor?.querySelector('strong') || anchor;
      const n = name?.getBoundingClientRect();
      const seen = n && anchor.contains(document.elementFromPoint(n.left + Math.min(8, n.width / 2), n.top + n.height / 2));
      el.classList.toggle('loose', !seen);
      if (!seen) {
        el.style.left = '';
        el.style.top = `${8 + loose * 44}px`;
        loose += 1;
        continue;
      }
      const a = anchor.getBoundingClientRect();
      const w = el.offsetWidth;
      const left = Math.max(4, Math.min(n.right + 6, window.innerWidth - w - 4));
      el.style.left = `${left}px`;
      el.style.top = `${Math.max(4, a.top + a.height / 2)}px`;
    }
    this.frame = requestAnimationFrame(() => this.place());
  }

  destroy() {
    cancelAnimationFrame(this.frame);
    this.clear();
    this.layer?.remove();
    if (this.outside) document.removeEventListener('pointerdown', this.outside);
  }
}
