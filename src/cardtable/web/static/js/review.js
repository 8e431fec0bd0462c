// The review of a finished table in the replay page (GET /api/tables/{id}/review?seat=N, docs/protocol.md,
// "Review"): a seat picker (your seat if you played, else seat 0), a spinner that polls while the review is
// computed, then Enemy Anemone's marked decisions (loss >= 0.5 points: the card played, the one the search
// prefers) or Nerts' missed plays, each shown at its moment of the replay, and the summary whose entries jump the
// replay there.
import { h, fill, loadStyles } from './util.js';
import { t, cardName, currentLanguage } from './i18n.js';
import { call, errorText, getSeat } from './api.js';
import { whoAmI } from './players_i18n.js';

const POLL_MS = 1500;

/** GET the review of `seat`: {status: 'pending'} or the ready review; an ApiError on a refusal. */
function fetchReview(id, seat) {
  return call('GET', `/api/tables/${encodeURIComponent(id)}/review?seat=${seat}`);
}

function num(x, digits = 1) {
  return Number(x).toLocaleString(currentLanguage(), { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

/** Milliseconds as seconds with one decimal: 3100 -> "3.1". */
const secs = (ms) => num(ms / 1000, 1);

/** A time in the hand, m:ss: 68200 -> "1:08". */
function clock(ms) {
  const s = Math.floor(ms / 1000);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/**
 * The review section of a replay. `record` the replay's record, `steps` its steps (`{hand, index}` each),
 * `names` the seats' display names, `jump(hand, index)` moves the replay to that action. Returns
 * `{note, section, at(group), stop()}`: `note` (put beside the step's description) says what the review found
 * at the moment shown, `at(group)` is called with each group of steps the replay shows (`{hand, first, at, play}`),
 * `stop()` ends the polling when the page is left.
 */
export function reviewPanel({ id, game, record, steps, names, jump }) {
  loadStyles('review');
  const note = h('div.rvnote#review-note', { 'aria-live': 'polite', hidden: true });
  const body = h('div.rvbody', {}, h('p.muted', { text: t('common.loading') }));
  const picker = h('select#review-seat', { 'aria-label': t('review.seat') });
  const section = h('section.rvpanel#review', { 'aria-labelledby': 'review-h' },
    h('div.rvhead', {}, h('h3#review-h', { text: t('review.title') }),
      h('label.rvseat', {}, h('span', { text: t('review.seat') }), picker)),
    body);
  let seat = 0;
  let mine = null; // the seat this browser (or account) played, if any
  let review = null;
  let timer = null;
  let generation = 0;
  let current = null;
  let stopped = false;
  const actionsOf = (hand) => record?.hands?.[hand]?.actions || [];
  const msOf = (step) => (step.index === null || step.index === undefined ? 0 : actionsOf(step.hand)[step.index]?.ms ?? 0);
  const who = () => (seat === mine ? t('review.you') : names[seat] ?? '');
  const isYou = () => seat === mine;
  const aCard = (c) => cardName(c, game === 'anemone' ? 'anemone' : null);

  function decisionText(d) {
    return t(isYou() ? 'review.decision_you' : 'review.decision', { who: who(), played: aCard(d.played), best: aCard(d.best), loss: num(d.loss) });
  }

  function missText(m) {
    return t(`review.missed_${m.kind === 'free_nerts' ? 'free_nerts' : 'foundation'}${isYou() ? '_you' : ''}`,
      { who: who(), card: aCard(m.card), seconds: secs(m.waited_ms) });
  }

  /** The button that jumps the replay to an entry's moment. */
  function jumpButton(entry, text) {
    return h('button.rvjump', { type: 'button', dataset: { hand: String(entry.hand), index: String(entry.index) },
      onclick: () => jump(entry.hand, entry.index) }, text);
  }

  function decisionButton(d) {
    return jumpButton(d, t('review.jump_decision', { hand: d.hand + 1, played: aCard(d.played), best: aCard(d.best), loss: num(d.loss) }));
  }

  function missButton(m) {
    return jumpButton(m, t('review.jump_missed', { hand: m.hand + 1, time: clock(m.ms), card: aCard(m.card),
      kind: t(`review.kind.${m.kind === 'free_nerts' ? 'free_nerts' : 'foundation'}`), seconds: secs(m.waited_ms) }));
  }

  function drawAnemone(r) {
    const marked = (r.decisions || []).filter((d) => d.marked);
    const s = r.summary || {};
    fill(body,
      h('p.muted.small', { text: t('review.explain_anemone') }),
      h('div.rvstats', {},
        h('div.rvstat', {}, h('span.rvv', { text: String(s.decisions ?? (r.decisions || []).length) }), h('span.rvl', { text: t('review.decisions') })),
        h('div.rvstat', {}, h('span.rvv#review-average', { text: num(s.average_loss ?? 0, 2) }), h('span.rvl', { text: t('review.average_loss') })),
        h('div.rvstat', {}, h('span.rvv', { text: String(marked.length) }), h('span.rvl', { text: t('review.marked') }))),
      (s.largest || []).length ? [h('h4', { text: t('review.largest') }),
        h('ol.rvlist#review-largest', {}, s.largest.map((d) => h('li', {}, decisionButton(d))))] : null,
      marked.length ? h('details.rvall', {}, h('summary', { text: t('review.all_marked', { n: marked.length }) }),
        h('ol.rvlist', {}, marked.map((d) => h('li', {}, decisionButton(d)))))
        : h('p#review-none', { text: t('review.none_marked') }));
  }

  function drawNerts(r) {
    const missed = r.missed || [];
    const s = r.summary || {};
    fill(body,
      h('p.muted.small', { text: t('review.explain_nerts') }),
      h('div.rvstats', {},
        h('div.rvstat', {}, h('span.rvv#review-missed-count', { text: String(s.missed ?? missed.length) }), h('span.rvl', { text: t('review.missed') })),
        h('div.rvstat', {}, h('span.rvv', { text: t('review.seconds', { seconds: secs(s.stuck_ms ?? 0) }) }), h('span.rvl', { text: t('review.stuck') })),
        h('div.rvstat', {}, h('span.rvv', { text: String(s.cards_left ?? 0) }), h('span.rvl', { text: t('review.cards_left') }))),
      missed.length ? [h('h4', { text: t('review.missed_list') }), h('ol.rvlist#review-missed', {}, missed.map((m) => h('li', {}, missButton(m))))]
        : h('p#review-none', { text: t('review.none_missed') }));
  }

  /** What the review says at the moment `group` shows: marked decisions played there, misses under way. */
  function at(group) {
    current = group;
    if (!group || !review || review.status !== 'ready') { note.hidden = true; note.replaceChildren(); return; }
    let lines = [];
    if (game === 'anemone') {
      const named = steps[group.play];
      lines = (review.decisions || []).filter((d) => d.marked && d.hand === named.hand && d.index === named.index).map(decisionText);
    } else {
      const last = steps[group.at], first = steps[group.first];
      if (last.index !== null && last.index !== undefined) {
        const from = msOf(first), to = msOf(last);
        lines = (review.missed || []).filter((m) => m.hand === group.hand && last.index >= m.index
          && from <= m.ms + m.waited_ms && to >= m.ms).map(missText);
      }
    }
    note.hidden = !lines.length;
    fill(note, lines.map((line) => h('p', {}, h('span.rvmark', { 'aria-hidden': 'true', text: '!' }), ' ', line)));
  }

  function stopPolling() { clearTimeout(timer); timer = null; }

  async function load() {
    const gen = ++generation;
    stopPolling();
    review = null;
    at(current);
    const poll = async () => {
      if (stopped || gen !== generation) return;
      let r;
      try { r = await fetchReview(id, seat); } catch (err) {
        if (!stopped && gen === generation) fill(body, h('p.error#review-error', { text: t('review.failed', { reason: errorText(err, game) }) }));
        return;
      }
      if (stopped || gen !== generation || !section.isConnected) return; // the page was left meanwhile
      if (r.status !== 'ready') {
        if (!body.querySelector('.rvpending')) {
          fill(body, h('p.rvpending#review-pending', { role: 'status' }, h('span.spinner', { 'aria-hidden': 'true' }), ' ', t('review.pending')));
        }
        timer = setTimeout(poll, POLL_MS);
        return;
      }
      review = r;
      if (game === 'anemone') drawAnemone(r); else drawNerts(r);
      at(current);
    };
    await poll();
  }

  (async () => {
    const held = getSeat(id);
    if (held && Number.isInteger(held.seat)) mine = held.seat;
    else {
      const me = await whoAmI();
      const k = me ? (record?.seats || []).findIndex((s) => !s.bot && s.name === me.name) : -1;
      if (k >= 0) mine = k;
    }
    if (stopped) return;
    seat = mine ?? 0;
    fill(picker, names.map((nm, s) => h('option', { value: String(s), selected: s === seat,
      text: s === mine ? t('review.seat_you', { name: nm }) : nm })));
    picker.addEventListener('change', () => { seat = Number(picker.value); load(); });
    load();
  })();

  return { note, section, at, stop: () => { stopped = true; stopPolling(); } };
}
