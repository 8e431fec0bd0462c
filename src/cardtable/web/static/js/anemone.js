// The Enemy Anemone table: your hand (playable cards marked), the trick with each card's value and anemones,
// anemones to add before playing, every seat's anemones, score pile and points, round and totals, whose turn.
import { h, fill, toast, flipBefore, flipAfter } from './util.js';
import { t, wordRefusal, cardName } from './i18n.js';
import { creatureCard, anemoneChip, parseCreature } from './cards.js';
import { seatNames, scoreTable, handOverDialog, dealCycle } from './scores.js';
import { hintsFor, hintBubble, touchScreen } from './hints.js';
import { api, errorText } from './api.js';
import { navigate } from './nav.js';
import { nameOf, bdi } from './names.js';
import { Roving, holdFocus, navItems } from './keys.js';
import { announce, clearAnnouncements } from './announce.js';
import { scoreStrip } from './strip.js';
import { cue, soundToggle } from './sound.js';
import { standins as standinsOf, standinEl } from './standin.js';
import { SeatClocks, seatTurnBadges, turnBased } from './turns.js';

/**
 * How long a finished trick stays on the table (milliseconds) before the next one shows, unless the player clicks:
 * localStorage `ct.trickHoldMs` (0 turns the pause off), else 1500.
 */
export function trickHoldMs() {
  const v = Number(localStorage.getItem('ct.trickHoldMs'));
  return localStorage.getItem('ct.trickHoldMs') !== null && Number.isFinite(v) && v >= 0 ? v : 1500;
}

/** A creature card as a screen reader says it: "Fish 3, +1 point" (3s, 5s and 8s score one more). */
export function creatureLabel(code) {
  const name = cardName(code, 'anemone');
  return [3, 5, 8].includes(parseCreature(code).rank) ? t('anemone.card_bonus', { card: name }) : name;
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

function labelled(el, label) { el.setAttribute('aria-label', label); return el; }

function trickView(entries, discards, names, { winner = null, lowest = null, last = false } = {}) {
  return h('div.trickcards', {},
    entries.map((e) => h('div.played' + (e.seat === winner ? '.winner' : '') + (e.seat === lowest ? '.lowest' : ''), { dataset: { seat: String(e.seat) } },
      labelled(creatureCard(e.card, { key: last ? undefined : e.card }),
        e.value !== undefined ? t('anemone.card_value', { card: creatureLabel(e.card), n: e.value }) : creatureLabel(e.card)),
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

/**
 * Every seat's public state, the trick and (when given) every hand: live table and replay viewer alike.
 * `now`: the view the seats show (whose turn, cards in hand, anemones, points) when the trick area shows an older
 * one (`view`: a finished trick held on the table), so the seats agree with the bar and your hand.
 * `standins`: per seat, null or `{ back }` where the stand-in bot plays a person's seat (standin.js).
 * `clocks`: at a turn-based table, its SeatClocks (turns.js): each seat's time bank, and the seats kept by a stand-in.
 */
export function renderAnemoneBoard(view, names, { seat = null, hands = null, totals = null, now = null, standins = null, clocks = null } = {}) {
  const sv = now || view;
  const n = view.players || names.length;
  const seats = [];
  for (let s = 0; s < n; s++) {
    const anem = (sv.anemones || [])[s] || [];
    const pile = (sv.score_piles || [])[s] || [];
    const handShown = hands ? hands[s] : null;
    const standin = standins?.[s] || null;
    const kept = !!clocks?.kept(s); // a turn-based seat its stand-in keeps for the match (3 timeouts)
    seats.push(h('section.aseat' + (sv.turn === s && !sv.over ? '.turn' : '') + (s === seat ? '.me' : '') + (standin || kept ? '.stoodin' : ''), { dataset: { seat: String(s) } },
      h('header', {}, standin && !kept ? standinEl(names, s, standin) : h('strong', {}, nameOf(names, s, t('seat.player', { n: s + 1 }))),
        s === seat ? h('em', { text: ` (${t('table.you')})` }) : null,
        sv.leader === s ? h('span.badge.lead', { text: t('anemone.leader') }) : null,
        sv.turn === s && !sv.over ? h('span.badge.turnb', { text: t('anemone.to_play') }) : null,
        seatTurnBadges(clocks, s)),
      h('div.stats', {},
        clocks ? clocks.el(s) : null,
        h('span', { text: t('anemone.cards_in_hand', { n: (sv.hand_counts || [])[s] ?? 0 }) }),
        h('span', { text: t('anemone.score_pile', { n: pile.length }) }),
        h('span', { text: t('anemone.points', { n: (sv.points || [])[s] ?? 0 }) }),
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
  // The moment the seats, the bar and your hand show: the newest view of the hand on the board (you may play while
  // a finished trick is still held), or the board's own while the newest is already a later hand, so that whose
  // turn it is, the cards in hand and the counts always agree; only the trick area may show a held, older trick.
  const now = () => (latest && view && latest.round === view.round ? latest : view);
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
  // a turn-based table: each seat's time bank, the seat to move counting down (turns.js)
  const clocks = turnBased(table) ? new SeatClocks(table) : null;

  function drawBar() {
    const keysFocus = [keysMenu, ctx.reactions?.picker].some((el) => el?.contains(document.activeElement)) ? document.activeElement : null;
    const live = now();
    const n = names();
    const rounds = table?.options?.rounds;
    const turnText = live.over ? t('anemone.hand_finished')
      : live.turn === seat ? t('anemone.your_turn') : t('anemone.turn_of', { name: n[live.turn] ?? '' });
    fill(bar,
      h('div.hinfo', {}, h('strong', { text: t('game.anemone') }), ' · ',
        rounds ? t('anemone.round_of', { n: handNo + 1, m: rounds }) : t('table.hand_n', { n: handNo + 1 }),
        seat === null ? h('span.badge', { text: t('table.spectating') }) : null),
      // at a turn-based table, your turn says what is left in your bank (turns.js keeps it counting down)
      h('div.turninfo' + (live.turn === seat && !live.over ? '.mine' : ''), {}, turnText,
        clocks && seat !== null && live.turn === seat && !live.over && clocks.left(seat) !== null ? [' · ', clocks.barEl(seat)] : null),
      h('div.meta', {},
        (live.players === 2 || live.deck_count > 0) && live.deck_count !== undefined && live.deck_count !== null ? h('span', { text: t('anemone.deck', { n: live.deck_count }) }) : null,
        live.supply !== undefined ? h('span', { text: t('anemone.supply', { n: live.supply }) }) : null,
        seat !== null && !live.over ? h('button.small#leave-table', {
          type: 'button', text: t('table.leave_game'),
          onclick: async () => { try { await api.leave(ctx.id, ctx.token); navigate('/'); } catch (e) { toast(errorText(e), 'error', 4000); } },
        }) : null),
      // the score strip: the rounds left (this one included until it ends), then every seat's total
      h('div.stripslot', {}, scoreStrip(n, totals, {
        goal: rounds ? t('table.strip_rounds_left', { n: Math.max(0, rounds - handNo - (live.over ? 1 : 0)) }) : null, me: seat,
      })));
    bar.querySelector('.meta')?.append(...[ctx.reactions?.picker, keysMenu].filter(Boolean)); // the same elements each time: an open menu stays open
    keysFocus?.focus({ preventScroll: true });
  }

  // the ☰ menu: every key of the table (the keys panel)
  const keysMenu = h('details.tmenu.keysmenu', {},
    h('summary', { 'aria-label': t('table.menu') }, h('span', { 'aria-hidden': 'true', text: '☰' }), h('span.mlabel', { text: t('table.menu') })),
    h('div.menubox', {}, h('h3', { text: t('nerts.keys') }),
      h('ul.keylist', {}, ['anemone.key_row_arrows', 'anemone.key_row_enter', 'anemone.key_row_digits', 'anemone.key_row_tab', 'anemone.key_row_escape']
        .map((k) => h('li', { text: t(k) }))),
      h('div.menutoggles', {}, ctx.reactions?.menuItem, soundToggle()))); // reactions.js, sound.js

  function myAnemones() { return ((now().anemones || [])[seat] || []); }

  // Your hand and the bar follow the latest view at once (you may play while a finished trick is still held);
  // the board shows `view`, which may lag behind while a trick is held.
  function drawHand() {
    if (seat === null) return;
    const live = now();
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
    const saved = roving.save();
    fill(handBox,
      h('div.handhead', {},
        h('h3', { text: t('anemone.your_hand') }),
        h('span.hint' + (myTurn ? '.go' : ''), { text: hint })),
      tip ? h('div.hintslot', {}, hintBubble(tip, () => drawHand())) : null,
      // anemones can be added only by their holder, on their turn, to a card played into the trick
      mineA.length && myTurn && !discarding ? h('div.chooser', {},
        h('span', { text: t('anemone.add_anemones') }),
        mineA.map((f, i) => h('button.anemchoice' + (chosen.includes(i) ? '.on' : ''), {
          type: 'button', 'aria-pressed': String(chosen.includes(i)), disabled: discarding || !myTurn, dataset: { face: String(f), index: String(i), nav: 'anemones', navKey: String(i) },
          onclick: () => { chosen = chosen.includes(i) ? chosen.filter((x) => x !== i) : [...chosen, i]; drawHand(); },
        }, anemoneChip(f, { selected: chosen.includes(i) }))),
        chosen.length ? h('span.bonusnote', { text: t('anemone.adds', { n: chosen.reduce((s, i) => s + mineA[i], 0) }) }) : null) : null,
      h('div.handcards', { role: 'toolbar', 'aria-label': t('anemone.your_hand') }, sortHand(live.hand || []).map((c) => {
        const ok = myTurn && (discarding || playable.has(c));
        const el = creatureCard(c, { key: c });
        if (tip?.id === 'anemone.playable' && ok) el.classList.add('pointed');
        el.classList.toggle('playable', ok && !discarding);
        el.classList.toggle('discardable', ok && discarding);
        el.classList.toggle('unplayable', !ok);
        // one tab stop for the hand (keys.js): the arrows move between the cards you can play; the others are
        // named as not playable and marked aria-disabled, so they are not announced as buttons you can press
        el.dataset.nav = 'hand';
        el.dataset.navKey = c;
        el.setAttribute('role', 'button');
        el.setAttribute('aria-disabled', String(!ok));
        el.setAttribute('aria-label', t(!ok ? 'anemone.card_unplayable' : discarding ? 'anemone.card_discardable' : 'anemone.card_playable', { card: creatureLabel(c) }));
        if (ok) {
          const go = () => playCard(c, discarding);
          el.addEventListener('click', go);
          el.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); go(); } });
        }
        return el;
      })));
    afterHand(saved, myTurn);
  }

  // ---- keyboard and screen readers (keys.js, announce.js) ----
  const roving = new Roving(handBox);
  let turnFocused = null; // the turn whose first playable card took the focus ("tricks/cards in hand")
  let turnSaid = false;

  /**
   * After the hand is redrawn: the focus back on the same card (or the nearest); on the first card you can play
   * when a turn of yours begins (a trick you won and lead again is a new turn too).
   */
  function afterHand(saved, myTurn) {
    roving.restore(saved);
    const live = now();
    const turn = myTurn ? `${(live.tricks || []).length}/${(live.hand || []).length}` : null;
    if (turn && turn !== turnFocused && roving.focusIsOurs()) {
      const first = navItems(handBox, 'hand').find((el) => el.getAttribute('aria-disabled') !== 'true');
      if (first) { roving.focus(first); turnFocused = turn; }
    }
  }

  /** Where the focus goes when a dialog closes: the hand; with no card left, the finished table's buttons or the menu. */
  function focusAfterDialog() {
    if (seat !== null && roving.focusGroup('hand')) return;
    (page?.querySelector('.finishedbar button') || keysMenu.querySelector('summary'))?.focus({ preventScroll: true });
  }

  /** Add or take back your i-th anemone (0-based) for the card you play next. */
  function toggleAnemone(i) {
    chosen = chosen.includes(i) ? chosen.filter((x) => x !== i) : [...chosen, i];
    drawHand();
    announce(t('anemone.adds', { n: chosen.reduce((sum, j) => sum + myAnemones()[j], 0) }));
  }

  handBox.addEventListener('keydown', (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || e.repeat) return;
    const live = now();
    const choosing = live && live.turn === seat && !live.over && !live.must_discard;
    if (choosing && /^[1-9]$/.test(e.key) && Number(e.key) <= myAnemones().length) { e.preventDefault(); toggleAnemone(Number(e.key) - 1); }
    else if (e.key === 'Escape' && chosen.length) { e.preventDefault(); chosen = []; drawHand(); announce(t('anemone.adds', { n: 0 })); }
  });

  /** Say what other seats played, who won a trick, and "your turn" when it begins (announce.js). */
  function say(events, v) {
    const n = names();
    const nm = (s) => n[s] ?? t('seat.player', { n: s + 1 });
    const lines = [];
    for (const e of events || []) {
      if (e.type === 'played' && e.seat !== seat) {
        lines.push((e.anemones || []).length
          ? t('anemone.said_played_with', { name: nm(e.seat), card: creatureLabel(e.card), anemones: e.anemones.map((f) => `+${f}`).join(' '), n: e.value })
          : t('anemone.said_played', { name: nm(e.seat), card: creatureLabel(e.card), n: e.value }));
      } else if (e.type === 'discarded' && e.seat !== seat) lines.push(t('anemone.said_discarded', { name: nm(e.seat), card: creatureLabel(e.card) }));
      else if (e.type === 'trick_won') lines.push(t('anemone.said_trick', { name: nm(e.winner), lowest: nm(e.lowest ?? e.winner) }));
    }
    const mine = seat !== null && !!v && v.turn === seat && !v.over;
    if (mine && !turnSaid) lines.push(v.must_discard ? t('anemone.must_discard') : t('anemone.said_your_turn'));
    turnSaid = mine;
    if (lines.length) announce(lines.join(' '));
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
    else if (res.reason || res.code) { toast(t('anemone.rejected', { reason: wordRefusal(res, 'anemone') }), 'error', 3000); cue('refused'); }
  }

  function render() {
    if (!view) return;
    const before = flipBefore(root);
    fill(boardBox, renderAnemoneBoard(view, names(), { seat, totals: totals.length ? totals : null, now: now(), standins: standinsOf(table), clocks }));
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
    if (kind === 'update') showUpdate(msg); else if (kind === 'nextHand') showNextHand(msg); else showHandOverNow(msg);
    if (!holdTimer && queue.length) drainTimer = setTimeout(drain, DRAIN_MS);
  }

  /** Must this message wait its turn (a trick is held, or earlier messages are still being shown)? */
  function waiting() { return !!holdTimer || !!drainTimer; }

  boardBox.addEventListener('click', () => release());

  function drawScores() {
    if (!results.length) { scoreBox.hidden = true; return; }
    scoreBox.hidden = false;
    const n = names();
    fill(scoreBox, h('details', {}, h('summary', { text: t('table.scores_so_far', { totals: totals.map((x, i) => `${n[i] ?? ''} ${x}`).join(' · ') }) }), scoreTable(n, results, totals, -1, dealCycle('anemone', table?.options, n.length))));
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
      // the ready step (scores.js): the next hand starts once everyone here pressed Ready, or at the countdown
      // a turn-based table has no ready step: its next hand is dealt at once
      game: 'anemone', options: table?.options, seat, onReady: clocks ? null : () => conn.send({ type: 'ready' }),
      onAgain: ctx.playAgain,
    });
    ctx.reactions?.intoDialog(overlay); // a row of reactions between hands (reactions.js)
    root.append(overlay);
    holdFocus(overlay, { onEscape: () => overlay?.querySelector('#continue')?.click(), fallback: focusAfterDialog });
  }

  function showNextHand(msg) {
    const done = results[msg.hand - 1];
    if (!overlay && done && view?.over) showHandOver({ hand: msg.hand - 1, scores: done.scores, totals, ended: done.ended, winners: null });
    if (!clocks) overlay?.showReady?.(msg); // a turn-based table has no ready step: its next hand is dealt at once
  }

  return {
    snapshot(msg) {
      table = msg.table || table;
      clocks?.setTable(table);
      clocks?.noteView(msg.view);
      clearTimeout(holdTimer); clearTimeout(drainTimer); holdTimer = null; drainTimer = null; queue.length = 0; // a snapshot replaces whatever waited
      view = msg.view; latest = msg.view; legal = msg.legal || [];
      results = msg.results || []; totals = msg.totals || []; handNo = msg.hand ?? 0;
      // the next hand began: its ready step is over (a turn-based table's scores stay until the player closes them)
      if (!clocks && overlay?.showReady && !view.over && handNo > overlay.hand) { overlay.stop(); overlay.remove(); overlay = null; }
      // a snapshot that lands on a trick just finished holds it too, like an update would
      const ms = trickHoldMs();
      if (ms > 0 && !view.over && !(view.trick || []).length && !(view.trick_discards || []).length && (view.tricks || []).length) {
        holdTimer = setTimeout(release, ms);
      }
      render(); drawScores();
      say([], msg.view);
    },
    update(msg) {
      say(msg.events, msg.view);
      latest = msg.view;
      clocks?.noteView(msg.view);
      if (waiting()) { queue.push(['update', msg]); render(); } // the held trick stays; seats, bar and hand move on
      else showUpdate(msg);
    },
    handOver(msg) {
      if (waiting()) queue.push(['handOver', msg]);
      else showHandOverNow(msg);
    },
    nextHand(msg) {
      if (waiting()) queue.push(['nextHand', msg]);
      else showNextHand(msg);
    },
    warning() {},
    table(tb) { table = tb; clocks?.setTable(tb); if (view) render(); }, // a seat's stand-in comes or goes; the banks
    destroy() { clocks?.destroy(); clearAnnouncements(); page?.classList.remove('afit'); overlay?.remove(); clearTimeout(holdTimer); clearTimeout(drainTimer); queue.length = 0; },
    get legal() { return legal; },
  };
}
