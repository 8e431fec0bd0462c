// Keyboard play shared by both tables: a roving tab index over groups of items and dialogs that take the focus and
// give it back (WAI-ARIA Authoring Practices: "Developing a Keyboard Interface", the toolbar and grid patterns,
// the modal dialog pattern).
//
// An item is any element with `data-nav="GROUP"` (and `data-nav-key`, a name that survives a redraw: a card code or
// a pile). Each group is one tab stop: the item last focused in it has tabindex 0, the others -1; the arrow keys
// move between a group's items. Items with `data-nav-col` form a grid of columns (Nerts: one column per pile, its
// cards top to bottom): Left and Right go to the next column's last item (a pile's top card), Up and Down move
// inside a column. Without columns a group is a row: every arrow moves along it. Home and End go to the first and
// last item. Items marked `aria-disabled="true"` are skipped by the arrows while the group has an enabled item.
// The tables redraw their board on every update, so focus is kept by key: save() before a redraw, restore() after.

const isOn = (el) => el.isConnected && !el.hidden && el.getClientRects().length > 0;
const enabled = (el) => el.getAttribute('aria-disabled') !== 'true';

/** A group's items inside root, in document order (only those on screen). */
export function navItems(root, group) {
  return [...root.querySelectorAll(`[data-nav="${CSS.escape(group)}"]`)].filter(isOn);
}

/** Where the focus was in a group, by key, column and position: {group, key, col, index}; null when elsewhere. */
function describe(root, el) {
  if (!el || !root.contains(el) || !el.dataset?.nav) return null;
  const group = el.dataset.nav;
  return { group, key: el.dataset.navKey ?? null, col: el.dataset.navCol ?? null, index: navItems(root, group).indexOf(el) };
}

/** The item for a description: the same key, else the same column's last item, else the item nearest its place. */
function find(root, d) {
  if (!d) return null;
  const items = navItems(root, d.group);
  if (!items.length) return null;
  return items.find((el) => d.key !== null && el.dataset.navKey === d.key)
    || (d.col !== null ? items.filter((el) => el.dataset.navCol === d.col).pop() : null)
    || items[Math.max(0, Math.min(items.length - 1, d.index))];
}

/**
 * A roving tab index over every group inside `root` (one instance per table). The caller marks items with
 * data-nav attributes when it draws, then calls refresh() (or save() before and restore() after a redraw).
 */
export class Roving {
  /** root: the element that holds the groups; its keydown listener handles the arrow keys, Home and End. */
  constructor(root) {
    this.root = root;
    this.stops = new Map(); // group -> description of its tab stop
    root.addEventListener('focusin', (e) => {
      const d = describe(root, e.target.closest?.('[data-nav]'));
      if (d) { this.stops.set(d.group, d); this.mark(d.group, e.target.closest('[data-nav]')); }
    });
    root.addEventListener('keydown', (e) => this.onKey(e));
  }

  /** Is the focus inside root, or nowhere (on the body)? Then a redraw may move it; otherwise leave it be. */
  focusIsOurs() {
    const a = document.activeElement;
    return !a || a === document.body || this.root.contains(a);
  }

  /** Remember where the focus is (call before a redraw); returns a token for restore(). */
  save() {
    const a = document.activeElement;
    return { had: !!a && this.root.contains(a), d: describe(this.root, a) };
  }

  /** After a redraw: set each group's tab stop and, when the focus was on an item before, put it back there. */
  restore(saved) {
    this.refresh();
    if (!saved?.had || !saved.d) return;
    const a = document.activeElement;
    if (a && a !== document.body && this.root.contains(a) && a.dataset?.nav) return; // still on an item
    const el = find(this.root, saved.d);
    if (el) this.focus(el);
  }

  /** Give each group one tab stop (its remembered item, else its first enabled item). */
  refresh() {
    const groups = new Set([...this.root.querySelectorAll('[data-nav]')].map((el) => el.dataset.nav));
    for (const g of groups) {
      const items = navItems(this.root, g);
      const stop = find(this.root, this.stops.get(g)) || items.find(enabled) || items[0];
      this.mark(g, stop);
    }
  }

  /** Make el its group's tab stop. */
  mark(group, el) {
    for (const it of this.root.querySelectorAll(`[data-nav="${CSS.escape(group)}"]`)) it.tabIndex = it === el ? 0 : -1;
  }

  /** Focus el (an item) and make it its group's tab stop. */
  focus(el) {
    if (!el) return;
    this.mark(el.dataset.nav, el);
    this.stops.set(el.dataset.nav, describe(this.root, el));
    el.focus({ preventScroll: true });
  }

  /** Focus a group's tab stop (its remembered item, else its first enabled item); false when it has no item. */
  focusGroup(group) {
    const items = navItems(this.root, group);
    const el = find(this.root, this.stops.get(group)) || items.find(enabled) || items[0];
    if (el) this.focus(el);
    return !!el;
  }

  onKey(e) {
    const el = e.target.closest?.('[data-nav]');
    if (!el || e.ctrlKey || e.metaKey || e.altKey) return;
    const next = this.step(el, e.key);
    if (next === undefined) return;
    e.preventDefault();
    if (next) this.focus(next);
  }

  /** The item an arrow key (or Home, End) goes to from el; undefined for any other key, null to stay. */
  step(el, key) {
    if (!['ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown', 'Home', 'End'].includes(key)) return undefined;
    let items = navItems(this.root, el.dataset.nav);
    if (items.some(enabled) && enabled(el)) items = items.filter(enabled);
    else if (items.some(enabled)) items = items.filter((x) => enabled(x) || x === el);
    const grid = items.some((x) => x.dataset.navCol !== undefined);
    if (!grid) {
      const i = items.indexOf(el);
      const n = items.length;
      if (key === 'Home') return items[0];
      if (key === 'End') return items[n - 1];
      const back = key === 'ArrowLeft' || key === 'ArrowUp';
      return items[(i + (back ? -1 : 1) + n) % n];
    }
    const cols = [];
    for (const x of items) {
      const c = x.dataset.navCol ?? '';
      if (!cols.length || cols[cols.length - 1].key !== c) cols.push({ key: c, items: [] });
      cols[cols.length - 1].items.push(x);
    }
    const ci = cols.findIndex((c) => c.items.includes(el));
    const col = cols[ci];
    if (key === 'Home') return cols[0].items[cols[0].items.length - 1];
    if (key === 'End') return cols[cols.length - 1].items[cols[cols.length - 1].items.length - 1];
    if (key === 'ArrowLeft' || key === 'ArrowRight') {
      const c = cols[(ci + (key === 'ArrowLeft' ? -1 : 1) + cols.length) % cols.length];
      return c.items[c.items.length - 1];
    }
    const i = col.items.indexOf(el) + (key === 'ArrowUp' ? -1 : 1);
    return col.items[i] || null;
  }
}

const FOCUSABLE = 'button:not([disabled]), [href], input:not([disabled]), select:not([disabled]), textarea, summary, [tabindex]:not([tabindex="-1"])';

/**
 * A dialog (already on the page) takes the focus: its `.primary` button, else its first control. Tab and Shift+Tab
 * stay inside it; Escape calls onEscape (when given). When the dialog leaves the page, the focus goes back to the
 * element that had it before, or (that element redrawn away) to fallback(); unless the player has put the focus
 * somewhere else meanwhile.
 */
export function holdFocus(dialog, { onEscape = null, fallback = null } = {}) {
  const before = document.activeElement;
  const controls = () => [...dialog.querySelectorAll(FOCUSABLE)].filter(isOn);
  (dialog.querySelector('button.primary:not([disabled])') || controls()[0] || dialog).focus({ preventScroll: true });
  dialog.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && onEscape) { e.preventDefault(); e.stopPropagation(); onEscape(); return; }
    if (e.key !== 'Tab') return;
    const f = controls();
    if (!f.length) { e.preventDefault(); return; }
    const i = f.indexOf(document.activeElement);
    if (e.shiftKey && i <= 0) { e.preventDefault(); f[f.length - 1].focus(); }
    else if (!e.shiftKey && (i === -1 || i === f.length - 1)) { e.preventDefault(); f[0].focus(); }
  });
  const parent = dialog.parentNode;
  if (!parent) return;
  const watch = new MutationObserver(() => {
    if (dialog.isConnected) return;
    watch.disconnect();
    const a = document.activeElement;
    if (a && a !== document.body) return; // the player is elsewhere already
    if (before && before !== document.body && before.isConnected) before.focus({ preventScroll: true });
    else fallback?.();
  });
  watch.observe(parent, { childList: true });
}
