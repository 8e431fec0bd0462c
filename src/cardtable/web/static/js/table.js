// A table page: join or watch, the waiting room before the start, then the game's own view
// (nerts.js or anemone.js), kept live through a TableConnection that reconnects by itself.
import { h, fill, toast } from './util.js';
import { t, wordRefusal } from './i18n.js';
import { api, errorText, getSeat, saveSeat, forgetSeat, getName, saveName } from './api.js';
import { TableConnection } from './conn.js';
import { gameTitle, seatNameEl, seatNames } from './names.js';
import { catchUpDialog } from './turns.js';
import { navigate } from './nav.js';
import { Reactions } from './reactions.js';
import { TableCues } from './sound.js';

/** Test and debugging hook: the latest state this page knows. */
const state = (window.__ct = { seat: null, view: null, legal: [], v: null, table: null, status: 'idle', hand: null });

/** Seats a person may still take: open ones, and bots keeping a seat warm until someone comes (replaceable). */
function takeable(s) { return s.kind === 'open' || (s.kind === 'bot' && s.replaceable); }

/** Milliseconds until the table starts by itself, or null (TABLE's starts_in_ms, else starts_at in ISO or ms). */
function startsIn(tb, receivedAt) {
  if (typeof tb.starts_in_ms === 'number') return Math.max(0, tb.starts_in_ms - (Date.now() - receivedAt));
  if (tb.starts_at) {
    const at = typeof tb.starts_at === 'number' ? tb.starts_at * (tb.starts_at < 1e12 ? 1000 : 1) : Date.parse(tb.starts_at);
    if (Number.isFinite(at)) return Math.max(0, at - Date.now());
  }
  return null;
}

function inviteUrl(id) { return `${location.origin}/?table=${encodeURIComponent(id)}`; }

function copyButton(text) {
  return h('button.copy', {
    type: 'button', text: t('table.copy_link'), dataset: { copy: '1' },
    onclick: async () => {
      try { await navigator.clipboard.writeText(text); toast(t('table.link_copied')); }
      catch { toast(t('table.copy_failed')); }
    },
  });
}

function joinPanel(main, id, tb) {
  const name = h('input#join-name', { type: 'text', value: getName(), maxlength: '24', placeholder: t('lobby.name_placeholder') });
  const openSeats = tb.seats.filter(takeable);
  fill(main, h('section.panel.narrow.joinbox', {},
    h('h2', { text: t('table.join_title', { game: gameTitle(tb.game) }) }),
    h('ul.seatlist', {}, tb.seats.map((s) => h('li', {}, `${t('lobby.seat_n', { n: s.seat + 1 })}: `, seatNameEl(s)))),
    openSeats.length && tb.status === 'open'
      ? h('form.inline', {
        onsubmit: async (e) => {
          e.preventDefault();
          saveName(name.value.trim());
          try {
            const res = await api.join(id, { name: name.value.trim() || t('lobby.default_name') });
            saveSeat(id, res.seat, res.token);
            navigate(`/?table=${encodeURIComponent(id)}`);
          } catch (err) { toast(t('table.join_failed', { reason: errorText(err) }), 'error', 5000); }
        },
      }, h('label.sr', { for: 'join-name', text: t('lobby.your_name') }), name, h('button.primary#join', { type: 'submit', text: t('lobby.join') }))
      : h('p', { text: t('table.no_open_seat') }),
    h('p', {}, h('button#watch', { type: 'button', text: t('lobby.watch'), onclick: () => navigate(`/?table=${encodeURIComponent(id)}&watch=1`) }))));
}

let countdown = null;

function waitingRoom(box, id, tb, seat, token) {
  const full = tb.seats.every((s) => s.kind !== 'open');
  const open = tb.seats.some(takeable);
  const link = inviteUrl(id);
  const receivedAt = Date.now();
  const auto = startsIn(tb, receivedAt) !== null;
  const startNote = h('p.startnote', { 'aria-live': 'polite' });
  clearInterval(countdown);
  if (auto) {
    const tick = () => {
      const ms = startsIn(tb, receivedAt);
      startNote.textContent = t('table.starts_in', { s: Math.ceil((ms ?? 0) / 1000) });
      if (!ms) clearInterval(countdown);
    };
    tick();
    countdown = setInterval(tick, 250);
  }
  fill(box, h('section.panel.narrow.waiting', {},
    h('h2', { text: t('table.waiting_title', { game: gameTitle(tb.game) }) }),
    auto ? startNote : null,
    // the invite link only while someone can still take a seat
    open ? h('p', { text: t('table.invite_help') }) : null,
    open ? h('div.invite', {}, h('input#invite', { type: 'text', readonly: true, value: link, 'aria-label': t('table.invite_link'), onfocus: (e) => e.target.select() }), copyButton(link)) : null,
    h('ul.seatlist', {}, tb.seats.map((s) => h('li' + (s.seat === seat ? '.me' : ''), {},
      `${t('lobby.seat_n', { n: s.seat + 1 })}: `, seatNameEl(s, { newTab: true }),
      s.kind === 'person' ? h('span.dot' + (s.connected ? '.on' : ''), { role: 'img', 'aria-label': t(s.connected ? 'table.connected' : 'table.disconnected'), title: t(s.connected ? 'table.connected' : 'table.disconnected') }) : null,
      s.kind === 'bot' && s.replaceable ? h('span.badge', { text: t('table.seat_free_for_person') }) : null,
      s.seat === seat ? h('em', { text: ` (${t('table.you')})` }) : null))),
    h('div.row', {},
      seat !== null && !auto ? h('button.primary#start', {
        type: 'button', disabled: !full, text: t('table.start'),
        onclick: async () => { try { await api.start(id, token); } catch (e) { toast(errorText(e), 'error', 4000); } },
      }) : null,
      !full && !auto ? h('span.muted', { text: t('table.waiting_for_seats') }) : null,
      seat !== null ? h('button#leave', {
        type: 'button', text: t('table.leave'),
        onclick: async () => { try { await api.leave(id, token); } catch { /* gone already */ } forgetSeat(id); navigate('/'); },
      }) : null)));
}

export function showTable(main, id, { watch = false } = {}) {
  main.className = 'table-page';
  let conn = null;
  let game = null; // the mounted game view
  let reactions = null; // reactions.js: the picker, the mute toggle and the bubbles by the seats
  let cues = null; // sound.js: the sounds and the "your turn" title
  let destroyed = false;
  let catchUpSeen = null; // the last "since your last move" summary shown (showCatchUp)
  const mine = watch ? null : getSeat(id);
  const statusEl = h('div.connstatus', { 'aria-live': 'polite' });
  const body = h('div.tablebody');

  /** Play again (docs/protocol.md, "Play again"): take this seat's place at the next table and go there. */
  async function playAgain(token) {
    try {
      const res = await api.again(id, token);
      saveSeat(res.table.id, res.seat, res.token);
      navigate(`/?table=${encodeURIComponent(res.table.id)}`);
    } catch (err) { toast(t('table.again_failed', { reason: errorText(err) }), 'error', 5000); }
  }

  /** The invitation of an `again` message: "ana wants to play again" with Join (a seat here) or Watch. */
  function showInvitation(msg, token) {
    document.querySelector('.invitation')?.remove();
    const follow = token
      ? h('button.primary#again-join', { type: 'button', text: t('lobby.join'), onclick: async (e) => { e.target.disabled = true; await playAgain(token); e.target.disabled = false; } })
      : h('button.primary#again-watch', { type: 'button', text: t('lobby.watch'), onclick: () => { box.remove(); navigate(`/?table=${encodeURIComponent(msg.table)}&watch=1`); } });
    const box = h('div.invitation', { role: 'alert' },
      h('span', { text: t('table.again_invite', { name: msg.name }) }), follow,
      h('button.dismiss', { type: 'button', text: '\u00d7', 'aria-label': t('common.close'), onclick: () => box.remove() }));
    document.body.append(box);
  }

  /** Coming back to a turn-based table: what happened since this seat's last move (turns.js), over the table. */
  function showCatchUp(msg, table) {
    // a reconnection gets the same summary again: shown once per page (until a move of this seat changes it)
    const key = JSON.stringify([msg.since, (msg.tricks || []).length, (msg.hands || []).length]);
    if (key === catchUpSeen) return;
    catchUpSeen = key;
    document.querySelector('.catchup-overlay')?.close?.();
    const box = catchUpDialog(msg, seatNames(table), { onClose: () => { state.catchUpShown = false; } });
    if (!box) return;
    document.body.append(box);
    state.catchUpShown = true;
  }

  function showFinished(tb) {
    main.querySelector('.finishedbar')?.remove();
    if (tb?.status !== 'finished') return;
    main.prepend(h('div.finishedbar', {},
      h('span', { text: t('table.finished_note') }),
      mine ? h('button.primary#again-bar', { type: 'button', text: t('table.play_again'), onclick: () => playAgain(mine.token) }) : null,
      h('button', { type: 'button', text: t('lobby.replay'), onclick: () => navigate(`/?replay=${encodeURIComponent(id)}`) }),
      h('button', { type: 'button', text: t('nav.lobby'), onclick: () => navigate('/') })));
  }

  function connect(token) {
    fill(main, statusEl, body);
    fill(body, h('p.muted.center', { text: t('common.connecting') }));
    let table = null;
    let seat = null;
    let mounting = null; // while a game's module loads: { snapshot, queued: [[method, msg], ...] }
    const handlers = {
      status(s) {
        state.status = s;
        statusEl.className = `connstatus ${s}`;
        statusEl.textContent = s === 'open' ? '' : t(s === 'connecting' ? 'common.connecting' : 'common.reconnecting');
      },
      welcome(msg) {
        seat = msg.seat; table = msg.table;
        state.seat = seat; state.table = table;
        reactions ??= new Reactions({ conn, seat, tableId: id, table: () => table });
        cues ??= new TableCues({ seat, game: table.game });
        if (token && seat === null) { forgetSeat(id); toast(t('table.token_lost')); }
      },
      async snapshot(msg) {
        table = msg.table || table;
        Object.assign(state, { table, view: msg.view, legal: msg.legal || [], v: msg.v, hand: msg.hand });
        cues?.snapshot(msg);
        if (mounting) { mounting.snapshot = msg; mounting.queued.length = 0; return; } // shown once the module is in
        if (!msg.view) {
          if (game) { game.destroy(); game = null; }
          clearInterval(countdown);
          waitingRoom(body, id, table, seat, token);
          return;
        }
        if (!game || game.kind !== table.game) {
          if (game) game.destroy();
          game = null;
          clearInterval(countdown);
          // While the game's module loads, what arrives waits here in order: the game then gets this snapshot and
          // every update after it, so none of them (a finished trick to hold, say) is skipped.
          mounting = { snapshot: msg, queued: [] };
          const mod = table.game === 'nerts' ? await import('./nerts.js') : await import('./anemone.js');
          const waited = mounting;
          mounting = null;
          if (destroyed) return;
          if (!waited.snapshot.view) { waitingRoom(body, id, table, seat, token); return; }
          fill(body);
          const again = token && seat !== null ? () => playAgain(token) : null; // the game-over dialog's Play again
          game = mod.mountTable(body, { conn, seat, table, id, token, tableState: state, playAgain: again, reactions });
          game.kind = table.game;
          game.snapshot(waited.snapshot);
          showFinished(table);
          for (const [kind, queuedMsg] of waited.queued) game[kind](queuedMsg);
          return;
        }
        game.snapshot(msg);
        showFinished(table);
      },
      update(msg) {
        Object.assign(state, { view: msg.view, legal: msg.legal || [], v: msg.v });
        cues?.update(msg);
        if (mounting) mounting.queued.push(['update', msg]);
        else game?.update(msg);
      },
      table(msg) {
        table = msg.table; state.table = table;
        showFinished(table);
        if (!state.view) waitingRoom(body, id, table, seat, token);
        game?.table(msg.table);
      },
      hand_over(msg) {
        state.handOver = msg;
        if (mounting) mounting.queued.push(['handOver', msg]);
        else game?.handOver(msg);
      },
      warning(msg) { if (mounting) mounting.queued.push(['warning', msg]); else game?.warning(msg); },
      next_hand(msg) { if (mounting) mounting.queued.push(['nextHand', msg]); else game?.nextHand?.(msg); }, // the ready step
      reaction(msg) { state.reaction = msg; reactions?.show(msg); }, // reactions.js: a bubble by the sender's seat, unless muted here
      again(msg) { if (seat === null || msg.seat !== seat) showInvitation(msg, seat === null ? null : token); }, // Play again
      catch_up(msg) { state.catchUp = msg; showCatchUp(msg, table); }, // a turn-based table: since your last move
      error(msg) { console.warn('server error', msg.code, msg.reason); if (msg.code) toast(wordRefusal(msg, table?.game), 'error', 4000); },
    };
    conn = new TableConnection(id, token, handlers);
    Object.defineProperty(window, '__ctConn', { value: conn, configurable: true, writable: true });
  }

  if (mine) {
    connect(mine.token);
  } else if (watch) {
    connect(null);
  } else {
    fill(main, h('p.muted.center', { text: t('common.loading') }));
    api.table(id).then((tb) => {
      if (destroyed) return;
      if (tb.status === 'open' && tb.seats.some(takeable)) joinPanel(main, id, tb);
      else { history.replaceState(null, '', `/?table=${encodeURIComponent(id)}&watch=1`); connect(null); }
    }).catch((e) => fill(main, h('section.panel.narrow', {}, h('p.error', { text: t('table.not_found', { reason: errorText(e) }) }),
      h('button', { type: 'button', text: t('nav.lobby'), onclick: () => navigate('/') }))));
  }

  return () => {
    destroyed = true;
    document.querySelector('.invitation')?.remove();
    document.querySelector('.catchup-overlay')?.close?.();
    clearInterval(countdown);
    game?.destroy();
    reactions?.destroy();
    cues?.destroy();
    conn?.close();
    Object.assign(state, { seat: null, view: null, legal: [], v: null, table: null, status: 'idle', catchUp: null, catchUpShown: false });
  };
}
