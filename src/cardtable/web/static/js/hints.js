// First-hand hints: short tips shown while they apply, each dismissable and remembered in localStorage
// (key `ct.hint.ID`) so a player who has dismissed one never sees it again in this browser.
import { h } from './util.js';
import { t } from './i18n.js';

const STORE = 'ct.hint.';

/** Has the player dismissed hint id? */
export function dismissed(id) {
  try { return localStorage.getItem(STORE + id) === '1'; } catch { return false; }
}

/** Remember that hint id was dismissed. */
export function dismissHint(id) {
  try { localStorage.setItem(STORE + id, '1'); } catch { /* private mode: shown again next time */ }
}

/** Is this a touch screen (no fine pointer)? */
export function touchScreen() { return matchMedia('(pointer: coarse)').matches && !matchMedia('(pointer: fine)').matches; }

/**
 * The first of the candidate hints that applies and is not dismissed: candidates is a list of
 * {id, when: boolean, text}; returns one of them or null.
 */
export function hintsFor(candidates) {
  return candidates.find((c) => c.when && !dismissed(c.id)) || null;
}

/** A hint bubble with its text and a "Got it" button; onDismiss runs after the hint is remembered. */
export function hintBubble(hint, onDismiss) {
  return h('div.hintbubble', { role: 'note', dataset: { hint: hint.id } },
    h('span', { text: hint.text }),
    h('button.gotit', {
      type: 'button', text: t('hint.got_it'),
      onclick: (e) => { e.stopPropagation(); dismissHint(hint.id); onDismiss?.(); },
    }));
}
