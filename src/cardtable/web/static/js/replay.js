// The replay viewer: step forward and back through GET /api/tables/{id}/replay, every card shown: by play (the
// actions between plays folded in) or by every action, jump to a hand, and each hand's scores with the running total.
import { h, fill, flipBefore, flipAfter } from './util.js';
import { t } from './i18n.js';
import { api, errorText } from './api.js';
import { renderNertsBoard } from './nerts.js';
import { renderAnemoneBoard } from './anemone.js';
import { gameTitle, recordSeatNames } from './names.js';
import { CREATURE_SUITS, SUIT_SYMBOL } from './cards.js';
import { navigate } from './nav.js';
import { scoreTable } from './scores.js';
import { reviewPanel } from './review.js';
import { timeEl } from './turns.js';

export function pileName(p) {
  if (!p) return '';
  if (p === 'nerts' || p === 'waste' || p === 'stock') return t(`pile.${p}`);
  if (p === 'foundation:new') return t('pile.new_foundation');
  const m = /^(work|foundation):(\d+)$/.exec(p);
  if (m) return t(`pile.${m[1]}`, { n: Number(m[2]) + 1 });
  return p;
}

/** A card code as words: `7C` -> "7 Octopus" (Enemy Anemone), `QH` -> "Q♥", `7D` -> "7♦" (Nerts: `game` 'nerts'). */
export function cardLabel(code, game = null) {
  if (!code) return '';
  const suit = code.slice(-1);
  if (game !== 'nerts' && /^\d+[A-F]$/.test(code)) return `${code.slice(0, -1)} ${t(`creature.${CREATURE_SUITS[suit].creature}`)}`;
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
      const cards = movedCards(prev, step).filter(Boolean).map((c) => cardLabel(c, 'nerts')).join(' ') || t('replay.a_card');
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

/** Is this action a play: a card (or cards) moved to a foundation or a work pile, or a Nerts call; every Enemy
 * Anemone action (a play or a discard)? Flips, stuck, cycles, rotates and the table's end of a hand are not. */
export function isPlay(action) {
  return !!action && ['move', 'under', 'nerts', 'play', 'discard'].includes(action.type);
}

/**
 * The steps the viewer walks through, as ranges of the server's steps (`{hand, first, at, play}`: the step shown is
 * `at`, `play` the step whose action it is named by, `first..at` what it takes in). `every`: one per step. Otherwise
 * one per hand start and one per play: the actions before a play (flips, stuck, rotates) are folded into it, and
 * those after a hand's last play into that play, so a hand's last step shows how it ended.
 */
export function groupSteps(steps, every = false) {
  if (every) return steps.map((step, k) => ({ hand: step.hand, first: k, at: k, play: k }));
  const out = [];
  let from = 0; // the first step not yet taken in by a group
  steps.forEach((step, k) => {
    if (!step.action || isPlay(step.action)) {
      out.push({ hand: step.hand, first: from, at: k, play: k });
      from = k + 1;
    } else if ((k + 1 === steps.length || steps[k + 1].hand !== step.hand) && out.length) {
      out[out.length - 1].at = k; // the hand's last actions after its last play: shown with that play
      from = k + 1;
    }
  });
  return out;
}

export function showReplay(main, id) {
  main.className = 'replay-page';
  fill(main, h('p.muted.center', { text: t('common.loading') }));
  let i = 0;
  let steps = [];
  let groups = [];
  let every = false;
  let results = []; // per hand: {scores, ended} (the server's, as `cardtable replay --json` gives them)
  let names = [];
  let game = '';
  let playing = null;
  let review = null; // the review section (review.js), once the replay is loaded
  const board = h('div.rboard');
  const info = h('div.rinfo', { 'aria-live': 'polite' });
  const handsNav = h('nav.rhands', { 'aria-label': t('replay.hands') });
  const scoresBox = h('div.rscores');
  const slider = h('input#replay-slider', { type: 'range', min: '0', value: '0', 'aria-label': t('replay.position') });
  const everyBox = h('input#replay-every', { type: 'checkbox', onchange: () => setEvery(everyBox.checked) });
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
  const handCount = () => (steps.length ? steps[steps.length - 1].hand + 1 : 0);

  /** Step by play (false) or by every action (true), staying at the same moment of the game. */
  function setEvery(on) {
    const at = groups.length ? groups[i].at : 0;
    every = on;
    groups = groupSteps(steps, every);
    slider.max = String(groups.length - 1);
    const k = groups.findIndex((g) => g.at >= at);
    show(k < 0 ? groups.length - 1 : k, false);
  }

  /** The first step of hand `n` (0-based). */
  function goHand(n) { const k = groups.findIndex((g) => g.hand === n); if (k >= 0) show(k, false); }

  /** Each hand's scores up to where the replay stands (a hand counts once its last step is reached) and the total. */
  function drawScores(group) {
    const done = handsDone(group);
    if (!done.length) { fill(scoresBox, h('p.muted', { text: t('replay.no_scores_yet') })); return; }
    const ended = done.length > group.hand; // this hand's own row is there: its last step
    fill(scoresBox, h('h3', { text: t('replay.scores') }), scoreTable(names, done, totalsOf(done), ended ? done.length - 1 : -1));
  }

  function show(n, animate = true) {
    i = Math.max(0, Math.min(groups.length - 1, n));
    const group = groups[i];
    const step = steps[group.at];
    slider.value = String(i);
    const before = animate ? flipBefore(board) : null;
    if (game === 'nerts') fill(board, renderNertsBoard(step.view, names, { seat: null }));
    else fill(board, renderAnemoneBoard(step.view, names, { hands: step.hands || null }));
    if (animate) flipAfter(board, before, 200);
    const named = steps[group.play];
    const folded = group.at - group.first; // the other actions this step takes in
    const ending = group.at !== group.play && steps[group.at].action?.type === 'end_hand' ? steps[group.at] : null;
    const result = step.view?.over && results[group.hand]?.ended ? results[group.hand] : null;
    fill(info, h('span.stepno', { text: t('replay.step', { n: i + 1, m: groups.length }) }), ' · ',
      h('span', { text: t('table.hand_n', { n: group.hand + 1 }) }), ' · ',
      h('strong.what', { text: describeAction(named, names, group.play > 0 ? steps[group.play - 1].view : null) }),
      folded > 0 ? h('span.folded', { text: ` (${t('replay.folded', { n: folded })})` }) : null,
      // when the move was made (a turn-based table's steps carry `at`), in the viewer's local time
      named.at ? h('span.stepat', {}, ' · ', h('span.sr', { text: t('turns.played_at') }), timeEl(named.at)) : null,
      ending ? h('span', { text: ` · ${describeAction(ending, names)}` }) : null,
      result && (!groups[i + 1] || groups[i + 1].hand !== group.hand) ? h('div.handresult', {
        text: t('replay.hand_scores', { n: group.hand + 1, scores: names.map((nm, s) => `${nm} ${signedScore((result.scores || [])[s] ?? 0)}`).join(' · ') }),
      }) : null,
      // the running total of the hands ended so far, always in view beside the step
      handsDone(group).length ? h('div.rtotals', {
        text: t('table.totals_short', { totals: totalsOf(handsDone(group)).map((x, s) => `${names[s]} ${x}`).join(' · ') }),
      }) : null);
    for (const b of handsNav.querySelectorAll('button')) {
      const on = Number(b.dataset.hand) === group.hand;
      b.classList.toggle('on', on);
      if (on) b.setAttribute('aria-current', 'step'); else b.removeAttribute('aria-current');
    }
    drawScores(group);
    review?.at(group);
  }

  /** Each hand's scores reached so far (a hand counts once its last step is shown). */
  function handsDone(group) {
    const lastOfHand = !groups[i + 1] || groups[i + 1].hand !== group.hand;
    return results.slice(0, group.hand + (lastOfHand && results[group.hand]?.ended ? 1 : 0));
  }

  function totalsOf(done) { return names.map((_, s) => done.reduce((sum, r) => sum + ((r.scores || [])[s] ?? 0), 0)); }

  function togglePlay() {
    if (playing) { clearInterval(playing); playing = null; setPlayIcon('play'); return; }
    if (i >= groups.length - 1) show(0, false);
    setPlayIcon('pause');
    playing = setInterval(() => {
      if (i >= groups.length - 1) { togglePlay(); return; }
      show(i + 1);
    }, game === 'nerts' ? 350 : 700);
  }

  function onKey(e) {
    if (e.target.closest('input, select, textarea')) return;
    if (e.key === 'ArrowRight') show(i + 1);
    else if (e.key === 'ArrowLeft') show(i - 1);
    else if (e.key === 'Home') show(0);
    else if (e.key === 'End') show(groups.length - 1);
    else if (e.key === 'PageDown' && groups.length) { e.preventDefault(); goHand(Math.min(handCount() - 1, groups[i].hand + 1)); }
    else if (e.key === 'PageUp' && groups.length) { e.preventDefault(); goHand(Math.max(0, groups[i].hand - 1)); }
  }
  window.addEventListener('keydown', onKey);

  api.replay(id).then((data) => {
    steps = data.steps || [];
    results = data.hands || [];
    game = data.record?.game || '';
    names = recordSeatNames(data.record?.seats);
    if (!steps.length) { fill(main, h('p.muted.center', { text: t('replay.empty') })); return; }
    groups = groupSteps(steps, every);
    slider.max = String(groups.length - 1);
    review = reviewPanel({ id, game, record: data.record, steps, names, jump: (hand, index) => {
      const k = steps.findIndex((st) => st.hand === hand && st.index === index);
      const g = groups.findIndex((gr) => gr.first <= k && k <= gr.at);
      if (k >= 0 && g >= 0) show(g, false);
    } });
    slider.addEventListener('input', () => show(Number(slider.value), false));
    fill(handsNav, h('span.rhlabel', { text: t('replay.hands') }),
      Array.from({ length: handCount() }, (_, n) => h('button.rhand', { type: 'button', dataset: { hand: String(n) }, onclick: () => goHand(n) },
        t('replay.hand_button', { n: n + 1 }))));
    fill(main,
      h('div.rhead', {}, h('h2', { text: t('replay.title', { game: gameTitle(game) }) }),
        h('div.controls', {},
          btn('first', 'replay.first', () => show(0), 'replay-first'),
          btn('back', 'replay.back', () => show(i - 1), 'replay-back'),
          playBtn,
          btn('forward', 'replay.forward', () => show(i + 1), 'replay-forward'),
          btn('last', 'replay.last', () => show(groups.length - 1), 'replay-last')),
        h('label.reverycheck', {}, everyBox, ' ', t('replay.every_action')),
        handsNav, slider, info, review.note),
      board, review.section, scoresBox,
      h('p', {}, h('button', { type: 'button', text: t('nav.lobby'), onclick: () => navigate('/') })));
    show(0, false);
  }).catch((e) => fill(main, h('section.panel.narrow', {}, h('p.error', { text: t('replay.failed', { reason: errorText(e) }) }))));

  return () => { clearInterval(playing); window.removeEventListener('keydown', onKey); review?.stop(); };
}

/** A hand's score as players write it: "+12", "−4" (a true minus sign), "0". */
function signedScore(n) { return n > 0 ? `+${n}` : n < 0 ? `\u2212${-n}` : '0'; }
