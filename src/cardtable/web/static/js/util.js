// Small DOM helpers shared by every page module.

/** Create an element: h('div.card.red', {dataset: {card: 'AS'}, onclick}, children...). */
export function h(spec, attrs = {}, ...children) {
  let id = null;
  const m = /#([\w-]+)/.exec(spec);
  if (m) { id = m[1]; spec = spec.replace(m[0], ''); }
  const [tag, ...classes] = spec.split('.');
  const el = document.createElement(tag || 'div');
  if (id) el.id = id;
  if (classes.length) el.className = classes.join(' ');
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'style' && typeof v === 'object') {
      for (const [sk, sv] of Object.entries(v)) {
        if (sk.startsWith('--')) el.style.setProperty(sk, String(sv)); else el.style[sk] = sv;
      }
    }
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = v;
    else if (k === 'html') el.innerHTML = v;
    else if (k in el && typeof v !== 'string') el[k] = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** Remove every child of el and append the given children. */
export function fill(el, ...children) {
  el.replaceChildren();
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** Load the page module stylesheet css/NAME.css once (its link's id: NAME-css). */
export function loadStyles(name) {
  if (document.getElementById(`${name}-css`)) return;
  document.head.append(Object.assign(document.createElement('link'), {
    id: `${name}-css`, rel: 'stylesheet', href: new URL(`../css/${name}.css`, import.meta.url).href,
  }));
}

let toastTimer = null;
/** Show a short message at the bottom of the screen for ms milliseconds. */
export function toast(text, kind = 'info', ms = 2600) {
  let box = document.getElementById('toast');
  if (!box) {
    box = h('div#toast', { role: 'status', 'aria-live': 'polite' });
    document.body.append(box);
  }
  box.textContent = text;
  box.className = `toast show ${kind}`;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { box.className = 'toast'; }, ms);
}

/** Same JSON value (cheap structural equality for small action objects). */
export function sameAction(a, b) {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) {
    const x = a[k], y = b[k];
    if (k === 'count' && (x ?? 1) === (y ?? 1)) continue;
    if (k === 'anemones' && JSON.stringify(x ?? []) === JSON.stringify(y ?? [])) continue;
    if (JSON.stringify(x) !== JSON.stringify(y)) return false;
  }
  return true;
}

/**
 * FLIP animation: call before(root) to remember where each [data-key] element is, re-render, then
 * after(root) to slide each moved element from its old place to its new one.
 */
export function flipBefore(root) {
  const rects = new Map();
  if (!root) return rects;
  for (const el of root.querySelectorAll('[data-key]')) rects.set(el.dataset.key, el.getBoundingClientRect());
  return rects;
}

export function flipAfter(root, rects, ms = 260) {
  if (!root || !rects || matchMedia('(prefers-reduced-motion: reduce)').matches) return;
  for (const el of root.querySelectorAll('[data-key]')) {
    const old = rects.get(el.dataset.key);
    if (!old) continue;
    const now = el.getBoundingClientRect();
    const dx = old.left - now.left, dy = old.top - now.top;
    if (Math.abs(dx) < 2 && Math.abs(dy) < 2) continue;
    el.animate([{ transform: `translate(${dx}px, ${dy}px)`, zIndex: 50 }, { transform: 'none', zIndex: 50 }],
      { duration: ms, easing: 'cubic-bezier(.2,.7,.3,1)' });
  }
}

export function escapeText(s) { return String(s ?? ''); }
