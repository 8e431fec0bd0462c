// The replay viewer: step forward and back through GET /api/tables/{id}/replay, every card shown.
import { h, fill, flipBefore, flipAfter } from './util.js';
import { t } from './i18n.js';
import { api, errorText } from './api.js';
import { renderNertsBoard } from './nerts.js';
import { renderAnemoneBoard } from './anemone.js';
import { gameTitle } from './names.js';
import { CREATURE_SUITS, SUIT_SYMBOL } from './cards.js';
import { navigate } from './nav.js';

export function pileName(p) {
  if (!p) return '';
  if (p === 'nerts' || p === 'waste' || p === 'stock') return t(`pile.${p}`);
  if (p === 'foundation:new') return t('pile.new_foundation');
  const m = /^(work|foundation):(\d+)$/.exec(p);
  if (m) return t(`pile.${m[1]}`, { n: Number(m[2]) + 1 });
  return p;
}

/** A card code as words: `7C` -> "7 Octopus", `QH` -> "Q♥". */
export function cardLabel(code) {
  if (!code) return '';
  const suit = code.slice(-1);
  if (/^\d+[A-F]$/.test(code)) return `${code.slice(0, -1)} ${t(`creature.${CREATURE_SUITS[suit].creature}`)}`;
  return SUIT_SYMBOL[suit] ? `${code.slice(0, -1)}${SUIT_SYMBOL[suit]}` : code;
}

/** The cards a Nerts move or under takes, read from the view before it (bottom first). */
function movedCards(prev, step) {
  const a = step.action;
  const lay = (prev?.layouts || []).find((l) => (l.seats || []).includes(step.seat));
  if (!lay) return [];
  if (a.from === 'nerts') return [lay.nerts?.top];
  if (a.from === 'waste') return [lay.waste?.top];
  const m = /^work:(\d+)$/.exec(a.from || '');
  if (!m) return [];
  const pile = lay.work[Number(m[1])] || [];
  return pile.slice(pile.length - (a.count || 1));
}

export function describeAction(step, names, prev = null) {
  const a = step.action;
  if (!a) return t('replay.deal', { n: step.hand + 1 });
  const who = step.seat === null || step.seat === undefined ? t('replay.table') : (names[step.seat] ?? '');
  switch (a.type) {
    case 'move': case 'under': {
      const cards = movedCards(prev, step).filter(Boolean).map(cardLabel).join(' ') || t('replay.a_card');
      return t(`replay.${a.type}`, { who, card: cards, from: pileName(a.from), to: pileName(a.to) });
    }
    case 'play': return (a.anemones || []).length
      ? t('replay.play_with', { who, card: cardLabel(a.card), anemones: a.anemones.map((f) => `+${f}`).join(' ') })
      : t('replay.play', { who, card: cardLabel(a.card) });
    case 'discard': return t('replay.discard', { who, card: cardLabel(a.card) });
    case 'end_hand': return t('replay.end_hand', { reason: a.reason ? t(`ended.${a.reason}`) : '' });
    case 'flip': case 'stuck': case 'cycle': case 'nerts': case 'rotate':
      return t(`replay.${a.type}`, { who });
    default: return `${who}: ${a.type}`;
  }
}

export function showReplay(main, id) {
  main.className = 'replay-page';
  fill(main, h('p.muted.center', { text: t('common.loading') }));
  let i = 0;
  let steps = [];
  let names = [];
  let game = '';
  let playing = null;
  const board = h('div.rboard');
  const info = h('div.rinfo', { 'aria-live': 'polite' });
  const slider = h('input#replay-slider', { type: 'range', min: '0', value: '0', 'aria-label': t('replay.position') });
  const ICONS = {
    first: '<rect x="2" y="4" width="3" height="16"/><polygon points="13,4 13,20 5,12"/><polygon points="22,4 22,20 14,12"/>',
    back: '<rect x="4" y="4" width="3" height="16"/><polygon points="19,4 19,20 8,12"/>',
    play: '<polygon points="6,4 6,20 20,12"/>',
    pause: '<rect x="5" y="4" width="5" height="16"/><rect x="14" y="4" width="5" height="16"/>',
    forward: '<polygon points="5,4 5,20 16,12"/><rect x="17" y="4" width="3" height="16"/>',
    last: '<polygon points="2,4 2,20 10,12"/><polygon points="11,4 11,20 19,12"/><rect x="19" y="4" width="3" height="16"/>',
  };
  const icon = (name) => { const s = h('span.ico'); s.innerHTML = `<svg viewBox="0 0 24 24" aria-hidden="true">${ICONS[name]}</svg>`; return s; };
  const btn = (name, key, f, id) => h(`button#${id}`, { type: 'button', title: t(key), 'aria-label': t(key), onclick: f }, icon(name));
  const playBtn = btn('play', 'replay.play_pause', () => togglePlay(), 'replay-play');
  const setPlayIcon = (name) => playBtn.replaceChildren(icon(name));

  function show(n, animate = true) {
    i = Math.max(0, Math.min(steps.length - 1, n));
    const step = steps[i];
    slider.value = String(i);
    const before = animate ? flipBefore(board) : null;
    if (game === 'nerts') fill(board, renderNertsBoard(step.view, names, { seat: null }));
    else fill(board, renderAnemoneBoard(step.view, names, { hands: step.hands || null }));
    if (animate) flipAfter(board, before, 200);
    fill(info, h('span.stepno', { text: t('replay.step', { n: i + 1, m: steps.length }) }), ' · ',
      h('span', { text: t('table.hand_n', { n: step.hand + 1 }) }), ' · ', h('strong.what', { text: describeAction(step, names, i > 0 ? steps[i - 1].view : null) }));
  }

  function togglePlay() {
    if (playing) { clearInterval(playing); playing = null; setPlayIcon('play'); return; }
    if (i >= steps.length - 1) show(0, false);
    setPlayIcon('pause');
    playing = setInterval(() => {
      if (i >= steps.length - 1) { togglePlay(); return; }
      show(i + 1);
    }, game === 'nerts' ? 350 : 700);
  }

  function onKey(e) {
    if (e.target.closest('input, select, textarea')) return;
    if (e.key === 'ArrowRight') show(i + 1);
    else if (e.key === 'ArrowLeft') show(i - 1);
    else if (e.key === 'Home') show(0);
    else if (e.key === 'End') show(steps.length - 1);
  }
  window.addEventListener('keydown', onKey);

  api.replay(id).then((data) => {
    steps = data.steps || [];
    game = data.record?.game || '';
    names = (data.record?.seats || []).map((s, k) => s.name || t('seat.player', { n: k + 1 }));
    if (!steps.length) { fill(main, h('p.muted.center', { text: t('replay.empty') })); return; }
    slider.max = String(steps.length - 1);
    slider.addEventListener('input', () => show(Number(slider.value), false));
    fill(main,
      h('div.rhead', {}, h('h2', { text: t('replay.title', { game: gameTitle(game) }) }),
        h('div.controls', {},
          btn('first', 'replay.first', () => show(0), 'replay-first'),
          btn('back', 'replay.back', () => show(i - 1), 'replay-back'),
          playBtn,
          btn('forward', 'replay.forward', () => show(i + 1), 'replay-forward'),
          btn('last', 'replay.last', () => show(steps.length - 1), 'replay-last')),
        slider, info),
      board,
      h('p', {}, h('button', { type: 'button', text: t('nav.lobby'), onclick: () => navigate('/') })));
    show(0, false);
  }).catch((e) => fill(main, h('section.panel.narrow', {}, h('p.error', { text: t('replay.failed', { reason: errorText(e) }) }))));

  return () => { clearInterval(playing); window.removeEventListener('keydown', onKey); };
}
