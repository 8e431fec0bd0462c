// Card faces drawn with CSS and inline SVG: the standard pack (Nerts) and the creature cards of Enemy Anemone.
import { h } from './util.js';
import { t, cardName } from './i18n.js';

export const SUIT_SYMBOL = { S: '♠', H: '♥', D: '♦', C: '♣' };
const RED = new Set(['H', 'D']);

/** Split a standard code into {rank, suit, joker}. */
export function parseCard(code) {
  if (!code) return null;
  if (code.startsWith('JK')) return { rank: 'JK', suit: '', joker: true };
  return { rank: code.slice(0, -1), suit: code.slice(-1), joker: false };
}

/** Hue of a pack's card back, so packs (seats) are told apart on the foundations. */
export function packHue(pack) { return (Number(pack) * 67 + 210) % 360; }

/**
 * A standard card element. opts: {pack, key, faceDown, as (joker's declared card), small}.
 */
export function standardCard(code, opts = {}) {
  const attrs = { dataset: {}, role: 'img' };
  if (opts.key) attrs.dataset.key = opts.key;
  if (opts.pack !== undefined && opts.pack !== null) attrs.style = { '--pack-hue': packHue(opts.pack) };
  if (opts.faceDown || !code) {
    const el = h('div.card.back', attrs);
    el.setAttribute('aria-label', t('card.facedown'));
    return el;
  }
  attrs.dataset.card = code;
  const c = parseCard(code);
  if (c.joker) {
    const shown = opts.as ? parseCard(opts.as) : null;
    const el = h('div.card.joker' + (shown && RED.has(shown.suit) ? '.red' : ''), attrs,
      h('span.corner.tl', {}, shown ? shown.rank : '★', h('br'), shown ? SUIT_SYMBOL[shown.suit] : ''),
      h('span.pip', {}, '★'),
      h('span.jk', { text: t('card.joker') }),
      opts.pack !== undefined ? h('span.packmark') : null);
    el.setAttribute('aria-label', opts.as ? t('card.joker_as', { card: cardName(opts.as, 'nerts') }) : t('card.joker_name'));
    return el;
  }
  const sym = SUIT_SYMBOL[c.suit] || c.suit;
  const el = h('div.card' + (RED.has(c.suit) ? '.red' : '.black'), attrs,
    h('span.corner.tl', {}, c.rank, h('br'), sym),
    h('span.pip', {}, sym),
    h('span.corner.br', {}, c.rank, h('br'), sym),
    opts.pack !== undefined ? h('span.packmark') : null);
  el.setAttribute('aria-label', cardName(code, 'nerts'));
  return el;
}

/** An empty pile space; label is shown faintly inside it. */
export function emptySlot(label = '') { return h('div.card.slot', {}, label ? h('span', { text: label }) : null); }

// Enemy Anemone suits: each has a creature, a colour and a symbol, so colour is never the only clue.
export const CREATURE_SUITS = {
  A: { creature: 'crab', colour: '#c0392b', symbol: 'triangle' },
  B: { creature: 'fish', colour: '#1f5fa8', symbol: 'circle' },
  C: { creature: 'octopus', colour: '#7d3c98', symbol: 'square' },
  D: { creature: 'starfish', colour: '#b85c00', symbol: 'star' },
  E: { creature: 'turtle', colour: '#1e7b45', symbol: 'hexagon' },
  F: { creature: 'jellyfish', colour: '#0f6f80', symbol: 'diamond' },
};

const SHAPES = {
  triangle: '<polygon points="12,2.5 22,20.5 2,20.5"/>',
  circle: '<circle cx="12" cy="12" r="9.5"/>',
  square: '<rect x="3" y="3" width="18" height="18" rx="2"/>',
  star: '<polygon points="12,1.5 14.9,8.6 22.5,9.2 16.7,14.1 18.5,21.6 12,17.6 5.5,21.6 7.3,14.1 1.5,9.2 9.1,8.6"/>',
  hexagon: '<polygon points="12,1.5 21.5,7 21.5,17 12,22.5 2.5,17 2.5,7"/>',
  diamond: '<polygon points="12,1 22,12 12,23 2,12"/>',
};

/** The suit's symbol as an inline SVG element. */
export function suitSymbol(suit, cls = 'sym') {
  const s = CREATURE_SUITS[suit];
  const span = h(`span.${cls}`, { title: s ? t(`creature.${s.creature}`) : suit });
  span.innerHTML = `<svg viewBox="0 0 24 24" aria-hidden="true" fill="${s ? s.colour : '#555'}">${s ? SHAPES[s.symbol] : ''}</svg>`;
  return span;
}

export function parseCreature(code) {
  return { rank: Number(code.slice(0, -1)), suit: code.slice(-1) };
}

/** A creature card element: rank, symbol, creature name; opts {key, faceDown}. */
export function creatureCard(code, opts = {}) {
  if (opts.faceDown || !code) return h('div.ccard.back', { role: 'img', 'aria-label': t('card.facedown') });
  const c = parseCreature(code);
  const s = CREATURE_SUITS[c.suit] || { creature: c.suit, colour: '#555' };
  const el = h('div.ccard', {
    role: 'img',
    dataset: { card: code, suit: c.suit, ...(opts.key ? { key: opts.key } : {}) },
    style: { '--suit': s.colour },
  },
  h('span.crank', { text: String(c.rank) }),
  suitSymbol(c.suit, 'csym'),
  h('span.cname', { text: t(`creature.${s.creature}`) }),
  [3, 5, 8].includes(c.rank) ? h('span.bonus', { text: '+1', title: t('anemone.bonus_card') }) : null);
  el.setAttribute('aria-label', cardName(code, 'anemone'));
  return el;
}

/** An anemone card: its face value (+1 or +2). */
export function anemoneChip(face, opts = {}) {
  return h('span.anemone' + (face === 2 ? '.two' : '') + (opts.selected ? '.selected' : ''),
    { title: t('anemone.card'), ...(opts.attrs || {}) }, h('span.tent', { 'aria-hidden': 'true' }), `+${face}`);
}
