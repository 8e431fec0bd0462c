// The page's polite live region (WAI-ARIA `role="log"`, `aria-live="polite"`): what other seats played, who won a
// trick, "your turn", and the keyboard's pick-up and put-down, said by screen readers without moving the focus.
// Visually hidden (css `.sr`); one region per page, kept across the table's redraws (they never touch it).
import { h } from './util.js';

/** How many lines the region keeps (older ones are dropped; a screen reader has said them already). */
const KEEP = 6;

let region = null;

/** The live region (`#announcer`), created and appended to the body on first use. */
export function liveRegion() {
  if (!region || !region.isConnected) {
    region = document.getElementById('announcer')
      || h('div#announcer.sr', { role: 'log', 'aria-live': 'polite', 'aria-relevant': 'additions', 'aria-atomic': 'false' });
    if (!region.isConnected) document.body.append(region);
  }
  return region;
}

/**
 * Say `text` politely: it is added as a new line of the region (so a burst of plays is said in order, none cut off
 * by the next), keeping the last KEEP lines. Empty text says nothing.
 */
export function announce(text) {
  if (!text) return;
  const el = liveRegion();
  el.append(h('p', { text }));
  while (el.childElementCount > KEEP) el.firstElementChild.remove();
}

/** Forget what was said (a table page closing): the next page starts with an empty region. */
export function clearAnnouncements() { region?.replaceChildren(); }
