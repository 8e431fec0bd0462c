// The Enemy Anemone table: your hand (playable cards marked), the trick with each card's value and anemones,
// anemones to add before playing, every seat's anemones, score pile and points, round and totals, whose turn.
import { h, fill, toast, flipBefore, flipAfter } from './util.js';
import { t, wordRefusal } from './i18n.js';
import { creatureCard, anemoneChip, parseCreature } from './cards.js';
import { seatNames, scoreTable, handOverDialog } from './scores.js';
import { hintsFor, hintBubble, touchScreen } from './hints.js';
import { api, errorText } from './api.js';
import { navigate } from './nav.js';
import { nameOf, bdi } from './names.js';

/**
 * How long a finished trick stays on the table (milliseconds) before the next one shows, unless the player clicks:
 * localStorage `ct.trickHoldMs` (0 turns the pause off), else 1500.
 */
export function trickHoldMs() {
  const v = Number(localStorage.getItem('ct.trickHoldMs'));
  return localStorage.getItem('ct.trickHoldMs') !== null && Number.isFinite(v) && v >= 0 ? v : 1500;
}

function sortHand(cards) {
  return [...cards].sort((a, b) => {
    const x = parseCreature(a), y = parseCreature(b);
    return x.suit === y.suit ? x.rank - y.rank : x.suit.localeCompare(y.suit);
  });
}

function trickEntries(tr) {
  if (!tr) return { cards: [], discards: [], winner: null, lowest: null };
  if (Array.isArray(tr)) return { cards: tr, discards: [], winner: null, lowest: null };
  return {
    cards: tr.cards || tr.trick || tr.plays || [],
    discards: tr.discards || tr.trick_discards || [],
    winner: tr.winner ?? null,
    lowest: tr.lowest ?? tr.anemone_to ?? tr.taker ?? null,
  };
}

function trickView(entries, discards, names, { winner = null, lowest = null, last = false } = {}) {
  return h('div.trickcards', {},
    entries.map((e) => h('div.played' + (e.seat === winner ? '.winner' : '') + (e.seat === lowest ? '.lowest' : ''), { dataset: { seat: String(e.seat) } },
      creatureCard(e.card, { key: last ? undefined : e.card }),
      h('div.pinfo', {},
        h('span.who', {}, bdi(names[e.seat] ?? '')),
        (e.anemones || []).length ? h('span.used', {}, e.anemones.map((f) => anemoneChip(f))) : null,
        e.value !== undefined ? h('span.value', { title: t('anemone.value'), text: t('anemone.value_n', { n: e.value }) }) : null,
        e.seat === winner ? h('span.badge.win', { text: t('anemone.wins_trick') }) : null,
        e.seat === lowest ? h('span.badge.low', { text: t('anemone.takes_anemone') }) : null))),
    (discards || []).map((d) => h('div.played.discarded', { dataset: { seat: String(d.seat) } },
      creatureCard(d.card, { key: last ? undefined : d.card }),
      h('div.pinfo', {}, h('span.who', {}, bdi(names[d.seat] ?? '')), h('span.badge', { text: t('anemone.discarded') })))));
}

/** Every seat's public state, the trick and (when given) every hand: live table and replay viewer alike. */
export function renderAnemoneBoard(view, names, { seat = null, hands = null, totals = null } = {}) {
  const n = view.players || names.length;
  const seats = [];
  for (let s = 0; s < n; s++) {
    const anem = (view.anemones || [])[s] || [];
    const pile = (view.score_piles || [])[s] || [];
    const handShown = hands ? hands[s] : null;
    seats.push(h('section.aseat' + (view.turn === s && !view.over ? '.turn' : '') + (s === seat ? '.me' : ''), { dataset: { seat: String(s) } },
      h('header', {}, h('strong', {}, nameOf(names, s, t('seat.player', { n: s + 1 }))),
        s === seat ? h('em', { text: ` (${t('table.you')})` }) : null,
        view.leader === s ? h('span.badge.lead', { text: t('anemone.leader') }) : null,
        view.turn === s && !view.over ? h('span.badge.turnb', { text: t('anemone.to_play') }) : null),
      h('div.stats', {},
        h('span', { text: t('anemone.cards_in_hand', { n: (view.hand_counts || [])[s] ?? 0 }) }),
        h('span', { text: t('anemone.score_pile', { n: pile.length }) }),
        h('span', { text: t('anemone.points', { n: (view.points || [])[s] ?? 0 }) }),
        totals ? h('span', { text: t('anemone.total', { n: totals[s] ?? 0 }) }) : null),
      h('div.anems', { title: t('anemone.anemones') }, anem.length ? anem.map((f) => anemoneChip(f)) : h('span.muted', { text: t('anemone.no_anemones') })),
      pile.length ? h('details.pile', {}, h('summary', { text: t('anemone.show_pile') }), h('div.minicards', {}, sortHand(pile).map((c) => creatureCard(c)))) : null,
      handShown ? h('div.minicards.handshown', {}, sortHand(handShown).map((c) => creatureCard(c))) : null));
  }
  const cur = view.trick || [];
  const disc = view.trick_discards || [];
  const lastTr = (view.tricks || []).length ? trickEntries(view.tricks[view.tricks.length - 1]) : null;
  const showLast = !cur.length && !disc.length && lastTr && lastTr.cards.length;
  return h('div.aboard', {},
    h('div.aseats', {}, seats),
    h('section.trick', {},
      h('h3', { text: showLast ? t('anemone.last_trick') : t('anemone.trick') }),
      cur.length || disc.length ? trickView(cur, disc, names)
        : showLast ? trickView(lastTr.cards, lastTr.discards, names, { winner: lastTr.winner, lowest: lastTr.lowest, last: true })
          : h('p.muted', { text: t('anemone.trick_empty') })));
}

export function mountTable(root, ctx) {
  const { conn, seat } = ctx;
  let table = ctx.table;
  let view = null;
  let legal = [];
  let results = [];
  let totals = [];
  let handNo = 0;
  let chosen = []; // indexes into my anemones
  let busy = false;
  let overlay = null;
  // A finished trick is held on the table: later messages wait in `queue`, in order, until the hold ends.
  // After a hold the waiting messages are shown one by one, DRAIN_MS apart, so the next trick's cards are seen.
  let latest = null; // the newest view received (the hand and bar use it)
  let holdTimer = null;
  let drainTimer = null;
  const queue = [];
  const DRAIN_MS = 250;
  const bar = h('div.abar');
  const boardBox = h('div.aboardbox');
  const handBox = h('section.myhand');
  const scoreBox = h('aside.scoreboard');
  fill(root, h('div.anemone-table', {}, bar, boardBox, seat === null ? null : handBox, scoreBox));
  // in a short window (a phone held sideways) the table fills the window without scrolling (css: main.afit)
  const page = root.closest('main');
  page?.classList.add('afit');

  const names = () => seatNames(table);

  function drawBar() {
    const live = latest || view;
    const n = names();
    const rounds = table?.options?.rounds;
    const turnText = live.over ? t('anemone.hand_finished')
      : live.turn === seat ? t('anemone.your_turn') : t('anemone.turn_of', { name: n[live.turn] ?? '' });
    fill(bar,
      h('div.hinfo', {}, h('strong', { text: t('game.anemone') }), ' · ',
        rounds ? t('anemone.round_of', { n: handNo + 1, m: rounds }) : t('table.hand_n', { n: handNo + 1 }),
        seat === null ? h('span.badge', { text: t('table.spectating') }) : null),
      h('div.turninfo' + (live.turn === seat && !live.over ? '.mine' : ''), { text: turnText }),
      h('div.meta', {},
        (live.players === 2 || live.deck_count > 0) && live.deck_count !== undefined && live.deck_count !== null ? h('span', { text: t('anemone.deck', { n: live.deck_count }) }) : null,
        live.supply !== undefined ? h('span', { text: t('anemone.supply', { n: live.supply }) }) : null,
        seat !== null && !live.over ? h('button.small#leave-table', {
          type: 'button', text: t('table.leave_game'),
          onclick: async () => { try { await api.leave(ctx.id, ctx.token); navigate('/'); } catch (e) { toast(errorText(e), 'error', 4000); } },
        }) : null,
        totals.length ? h('span.totalsbar', { text: t('table.totals_short', { totals: totals.map((x, i) => `${n[i] ?? ''} ${x}`).join(' · ') }) }) : null));
  }

  function myAnemones() { return (((latest || view).anemones || [])[seat] || []); }

  // Your hand and the bar follow the latest view at once (you may play while a finished trick is still held);
  // the board shows `view`, which may lag behind while a trick is held.
  function drawHand() {
    if (seat === null) return;
    const live = latest || view;
    const mineA = myAnemones();
    chosen = chosen.filter((i) => i < mineA.length);
    const myTurn = live.turn === seat && !live.over;
    const playable = new Set(live.playable || []);
    const discarding = !!live.must_discard && myTurn;
    const hint = live.over ? t('anemone.hand_finished') : !myTurn ? t('anemone.wait_turn') : discarding ? t('anemone.must_discard')
      : mineA.length ? t('anemone.choose_card') : t('anemone.choose_card_plain');
    const tip = live.over ? null : hintsFor([
      { id: 'anemone.playable', when: myTurn && !discarding && playable.size > 0, text: t(touchScreen() ? 'hint.anemone_playable_touch' : 'hint.anemone_playable') },
      { id: 'anemone.holder', when: myTurn && !discarding && mineA.length > 0, text: t(touchScreen() ? 'hint.anemone_holder_touch' : 'hint.anemone_holder') },
    ]);
    fill(handBox,
      h('div.handhead', {},
        h('h3', { text: t('anemone.your_hand') }),
        h('span.hint' + (myTurn ? '.go' : ''), { text: hint })),
      tip ? h('div.hintslot', {}, hintBubble(tip, () => drawHand())) : null,
      // anemones can be added only by their holder, on their turn, to a card played into the trick
      mineA.length && myTurn && !discarding ? h('div.chooser', {},
        h('span', { text: t('anemone.add_anemones') }),
        mineA.map((f, i) => h('button.anemchoice' + (chosen.includes(i) ? '.on' : ''), {
          type: 'button', 'aria-pressed': String(chosen.includes(i)), disabled: discarding || !myTurn, dataset: { face: String(f), index: String(i) },
          onclick: () => { chosen = chosen.includes(i) ? chosen.filter((x) => x !== i) : [...chosen, i]; drawHand(); },
        }, anemoneChip(f, { selected: chosen.includes(i) }))),
        chosen.length ? h('span.bonusnote', { text: t('anemone.adds', { n: chosen.reduce((s, i) => s + mineA[i], 0) }) }) : null) : null,
      h('div.handcards', {}, sortHand(live.hand || []).map((c) => {
        const ok = myTurn && (discarding || playable.has(c));
        const el = creatureCard(c, { key: c });
        if (tip?.id === 'anemone.playable' && ok) el.classList.add('pointed');
        el.classList.toggle('playable', ok && !discarding);
        el.classList.toggle('discardable', ok && discarding);
        el.classList.toggle('unplayable', !ok);
        el.tabIndex = ok ? 0 : -1;
        el.setAttribute('role', 'button');
        if (ok) {
          const go = () => playCard(c, discarding);
          el.addEventListener('click', go);
          el.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); go(); } });
        }
        return el;
      })));
  }

  async function playCard(card, discarding) {
    if (busy) return;
    release();
    const faces = chosen.map((i) => myAnemones()[i]);
    const action = discarding ? { type: 'discard', card } : { type: 'play', card, anemones: faces };
    busy = true;
    const res = await conn.act(action);
    busy = false;
    if (res.ok) chosen = [];
    else if (res.reason || res.code) toast(t('anemone.rejected', { reason: wordRefusal(res, 'anemone') }), 'error', 3000);
  }

  function render() {
    if (!view) return;
    const before = flipBefore(root);
    fill(boardBox, renderAnemoneBoard(view, names(), { seat, totals: totals.length ? totals : null }));
    if (holdTimer) {
      const tr = boardBox.querySelector('section.trick');
      tr?.classList.add('held');
      tr?.append(h('p.holdnote', { text: t('anemone.click_to_go_on') }));
    }
    drawBar();
    drawHand();
    flipAfter(root, before);
  }

  /** Show an update; when it finishes a trick, hold that trick on the table for trickHoldMs(). */
  function showUpdate(msg) {
    const before = (view?.tricks || []).length;
    view = msg.view; legal = msg.legal || [];
    const finished = (view.tricks || []).length > before;
    const ms = trickHoldMs();
    if (finished && ms > 0) holdTimer = setTimeout(release, ms);
    render();
  }

  /** End the hold (timer or click) and show what waited, in order, until the next finished trick holds again. */
  function release() {
    if (!holdTimer) return;
    clearTimeout(holdTimer);
    holdTimer = null;
    render();
    drain();
  }

  function drain() {
    clearTimeout(drainTimer);
    drainTimer = null;
    if (holdTimer || !queue.length) return;
    const [kind, msg] = queue.shift();
    if (kind === 'update') showUpdate(msg); else showHandOverNow(msg);
    if (!holdTimer && queue.length) drainTimer = setTimeout(drain, DRAIN_MS);
  }

  /** Must this message wait its turn (a trick is held, or earlier messages are still being shown)? */
  function waiting() { return !!holdTimer || !!drainTimer; }

  boardBox.addEventListener('click', () => release());

  function drawScores() {
    if (!results.length) { scoreBox.hidden = true; return; }
    scoreBox.hidden = false;
    const n = names();
    fill(scoreBox, h('details', {}, h('summary', { text: t('table.scores_so_far', { totals: totals.map((x, i) => `${n[i] ?? ''} ${x}`).join(' · ') }) }), scoreTable(n, results, totals)));
  }

  function showHandOverNow(msg) {
    totals = msg.totals || totals;
    showHandOver(msg);
    results = [...results.slice(0, msg.hand), { scores: msg.scores, ended: msg.ended }];
    drawScores();
    render();
  }

  function showHandOver(msg) {
    overlay?.remove();
    const n = names();
    const hist = [...results.slice(0, msg.hand), { scores: msg.scores, ended: msg.ended }];
    overlay = handOverDialog(msg, n, hist, {
      note: t('anemone.scoring_note'),
      noteBelow: true,
      onClose: () => { overlay.remove(); overlay = null; },
    });
    root.append(overlay);
  }

  return {
    snapshot(msg) {
      table = msg.table || table;
      clearTimeout(holdTimer); clearTimeout(drainTimer); holdTimer = null; drainTimer = null; queue.length = 0; // a snapshot replaces whatever waited
      view = msg.view; latest = msg.view; legal = msg.legal || [];
      results = msg.results || []; totals = msg.totals || []; handNo = msg.hand ?? 0;
      // a snapshot that lands on a trick just finished holds it too, like an update would
      const ms = trickHoldMs();
      if (ms > 0 && !view.over && !(view.trick || []).length && !(view.trick_discards || []).length && (view.tricks || []).length) {
        holdTimer = setTimeout(release, ms);
      }
      render(); drawScores();
    },
    update(msg) {
      latest = msg.view;
      if (waiting()) { queue.push(['update', msg]); drawBar(); drawHand(); }
      else showUpdate(msg);
    },
    handOver(msg) {
      if (waiting()) queue.push(['handOver', msg]);
      else showHandOverNow(msg);
    },
    warning() {},
    table(tb) { table = tb; if (view) drawBar(); },
    destroy() { page?.classList.remove('afit'); overlay?.remove(); clearTimeout(holdTimer); clearTimeout(drainTimer); queue.length = 0; },
    get legal() { return legal; },
  };
}
