// The lobby: "Play now" per game at the top (a seat at a waiting table, or a new one against bots that starts by
// itself), a custom table behind "Custom table" (seats, house rules in groups, timing under "Advanced"), join by
// link, open tables, tables in play to watch, finished games to replay.
import { h, fill, toast } from './util.js';
import { t, tOr } from './i18n.js';
import { api, errorText, saveSeat, getName, saveName, getSeat } from './api.js';
import { navigate } from './nav.js';
import { gameTitle, botLabel, botSentence, seatNameEl, joinEls, tWith } from './names.js';
import { paceChoice, yourGamesPanel } from './turns.js';
import { whoAmI } from './players_i18n.js';

export { gameTitle, botLabel, seatName } from './names.js';

/** A choice as players read it: `opt.NAME.VALUE` where the catalogue words it (`deals`), else the value. */
function choiceText(spec, value) { return tOr(`opt.${spec.name}.${value}`, String(value)); }

function optionField(spec, game) {
  const id = `opt-${spec.name}`;
  const label = tOr(`opt.${spec.name}`, spec.name);
  const help = tOr(`opt.${spec.name}.help`, '');
  let input;
  if (spec.kind === 'bool') {
    input = h('input', { type: 'checkbox', id, name: spec.name, checked: !!spec.default });
  } else if (spec.kind === 'choice') {
    input = h('select', { id, name: spec.name },
      (spec.choices || []).map((c) => h('option', { value: JSON.stringify(c), selected: c === spec.default, text: choiceText(spec, c) })));
  } else {
    input = h('input', {
      type: 'number', id, name: spec.name, value: String(spec.default),
      min: spec.minimum ?? undefined, max: spec.maximum ?? undefined, step: '1', inputmode: 'numeric',
    });
  }
  input.dataset.kind = spec.kind;
  const defText = spec.kind === 'bool' ? t(spec.default ? 'common.on' : 'common.off') : choiceText(spec, spec.default);
  const range = spec.kind === 'int' && spec.minimum !== undefined && spec.maximum !== undefined
    ? t('lobby.range', { min: spec.minimum, max: spec.maximum }) : '';
  return h('div.field' + (spec.kind === 'bool' ? '.check' : ''), { dataset: { option: spec.name, game } },
    h('label', { for: id, text: label }), input,
    h('small.hint', { text: [t('lobby.default', { value: defText }), range, help].filter(Boolean).join(' · ') }));
}

function readOptions(form, specs) {
  const out = {};
  for (const spec of specs) {
    const el = form.querySelector(`[name="${spec.name}"]`);
    if (!el) continue;
    if (spec.kind === 'bool') out[spec.name] = el.checked;
    else if (spec.kind === 'choice') out[spec.name] = JSON.parse(el.value);
    else out[spec.name] = Number(el.value);
  }
  return out;
}

/** Which group of the custom form an option belongs to (unknown options are house rules). */
const OPTION_GROUP = {
  players: 'table', partnerships: 'table', rounds: 'table', target_score: 'table',
  nerts_pile_size: 'deal', work_piles: 'deal', flip_count: 'deal', jokers: 'deal', deals: 'deal',
  nerts_penalty: 'scoring', nerts_bonus: 'scoring',
  tie_window_ms: 'timing', in_flight_ms: 'timing', stall_seconds: 'timing',
};
const GROUPS = ['table', 'deal', 'scoring', 'house'];

/** The table id in a create/join/play answer (an id or a TABLE object). */
function tableIdOf(res) { return typeof res.table === 'string' ? res.table : res.table?.id ?? res.id; }

function playNowPanel(games, name) {
  const box = h('section.panel.playnow', { 'aria-labelledby': 'playnow-h' });
  const busy = new Set();
  fill(box, h('h2#playnow-h', { text: t('lobby.play_now_title') }),
    h('div.field', {}, h('label', { for: 'player-name', text: t('lobby.your_name') }), name),
    h('div.playbuttons', {}, games.map((g) => h('button.primary.playnow-btn', {
      type: 'button', dataset: { play: g.game },
      onclick: async (e) => {
        if (busy.has(g.game)) return;
        busy.add(g.game);
        e.currentTarget.disabled = true;
        saveName(name.value.trim());
        try {
          const res = await api.play({ game: g.game, name: name.value.trim() || t('lobby.default_name') });
          const id = tableIdOf(res);
          saveSeat(id, res.seat, res.token);
          navigate(`/?table=${encodeURIComponent(id)}`);
        } catch (err) {
          toast(t('lobby.play_failed', { reason: errorText(err) }), 'error', 5000);
          busy.delete(g.game);
          e.target.closest('button').disabled = false;
        }
      },
    }, h('span.pn-game', { text: t('lobby.play_game_now', { game: gameTitle(g.game) }) }),
    h('small.pn-note', { text: t(`lobby.play_now_note.${g.game}`) })))),
    h('p.muted.small', { text: t('lobby.play_now_help') }),
    // the daily deal of each game (daily.js): the same cards for everyone today, scored against everyone else
    h('p.dailylinks#daily-links', {}, h('strong', { text: t('lobby.daily_title') }), ' ',
      games.map((g) => h('a.dailylink', { href: `/?daily=${g.game}`, dataset: { daily: g.game }, text: gameTitle(g.game),
        onclick: (e) => { if (e.button === 0 && !e.ctrlKey && !e.metaKey) { e.preventDefault(); navigate(`/?daily=${g.game}`); } } })),
      h('small.muted', { text: t('lobby.daily_help') })));
  return box;
}

function createPanel(games, name, signedIn) {
  const box = h('details.panel.create#custom', {});
  let game = games[0]?.game;
  const pace = paceChoice(game, { signedIn }); // turns.js: Real time / Turn-based and the turn clock presets
  const gamePick = h('div.segmented', { role: 'radiogroup', 'aria-label': t('lobby.game') });
  const optsBox = h('div.optgroups');
  const timingBox = h('div.options.timing');
  const seatsBox = h('div.seats-editor');
  const seed = h('input#seed', { type: 'number', placeholder: t('lobby.seed_placeholder'), min: '0' });
  const form = h('form', {
    onsubmit: async (e) => {
      e.preventDefault();
      const info = games.find((g) => g.game === game);
      const options = readOptions(form, info.options);
      const seats = [...seatsBox.querySelectorAll('select.seat-kind')].map((sel, i) =>
        i === 0 || sel.value === 'open' ? { kind: 'open' } : { kind: 'bot', bot: sel.value });
      const body = { game, options, seats, name: name.value.trim() || t('lobby.default_name'), ...pace.body() };
      if (seed.value !== '') body.seed = Number(seed.value);
      saveName(name.value.trim());
      try {
        const res = await api.create(body);
        const id = tableIdOf(res);
        saveSeat(id, res.seat, res.token);
        navigate(`/?table=${encodeURIComponent(id)}`);
      } catch (err) {
        toast(t('lobby.create_failed', { reason: errorText(err) }), 'error', 5000);
      }
    },
  });

  function seatCount() {
    const el = form.querySelector('[name="players"]');
    const n = el ? Number(el.value) : 2;
    return Math.max(1, Math.min(8, Number.isFinite(n) ? n : 2));
  }

  function drawSeats() {
    const info = games.find((g) => g.game === game);
    const old = [...seatsBox.querySelectorAll('select.seat-kind')].map((s) => s.value);
    const bots = info.bots || [];
    const defBot = (bots.find((b) => /medium/.test(b.spec)) || bots[Math.min(1, bots.length - 1)])?.spec;
    const rows = [];
    for (let i = 0; i < seatCount(); i++) {
      const sel = h('select.seat-kind', { 'aria-label': t('lobby.seat_n', { n: i + 1 }), dataset: { seat: String(i) }, disabled: i === 0 },
        i === 0 ? h('option', { value: 'open', text: t('lobby.you') }) : null,
        i > 0 ? h('option', { value: 'open', text: t('lobby.friend') }) : null,
        i > 0 ? bots.map((b) => h('option', { value: b.spec, text: t('lobby.bot_option', { bot: botLabel(b.spec, b.level) }) })) : null);
      if (i > 0) sel.value = old[i] ?? defBot ?? 'open';
      const desc = h('small.botdesc', { text: botSentence(sel.value) });
      sel.addEventListener('change', () => { desc.textContent = botSentence(sel.value); });
      rows.push(h('div.seat-row', {}, h('span.seatno', { text: t('lobby.seat_n', { n: i + 1 }) }), sel, desc));
    }
    fill(seatsBox, rows);
  }

  function drawOptions() {
    const info = games.find((g) => g.game === game);
    const by = {};
    for (const spec of info.options) (by[OPTION_GROUP[spec.name] || 'house'] ||= []).push(spec);
    fill(optsBox, GROUPS.filter((g) => by[g]).map((g) => h('fieldset.optgroup', { dataset: { group: g } },
      h('legend', { text: t(`lobby.group.${g}`) }), h('div.options', {}, by[g].map((s) => optionField(s, game))))));
    fill(timingBox, (by.timing || []).map((s) => optionField(s, game)));
    form.querySelector('[name="players"]')?.addEventListener('input', drawSeats);
    seatsBox.replaceChildren();
    drawSeats();
  }

  function drawGames() {
    fill(gamePick, games.map((g) => h('button' + (g.game === game ? '.on' : ''), {
      type: 'button', role: 'radio', 'aria-checked': String(g.game === game), dataset: { game: g.game },
      onclick: () => { game = g.game; drawGames(); drawOptions(); pace.setGame(game); },
    }, gameTitle(g.game))));
  }

  fill(form,
    h('div.field', {}, h('span.label', { text: t('lobby.game') }), gamePick),
    pace.el,
    h('fieldset', {}, h('legend', { text: t('lobby.seats') }), seatsBox),
    h('h3.rules-h', { text: t('lobby.house_rules') }),
    optsBox,
    h('details.advanced', {}, h('summary', { text: t('lobby.advanced') }), timingBox,
      h('div.field', {}, h('label', { for: 'seed', text: t('lobby.seed') }), seed)),
    h('div.createbar', {}, h('button.primary#create', { type: 'submit', text: t('lobby.create') })));
  drawGames();
  drawOptions();
  fill(box, h('summary#create-h', {}, h('span', { text: t('lobby.custom_table') }), h('small.muted', { text: ` ${t('lobby.custom_help')}` })), form);
  return box;
}

function tableRow(tb, kind) {
  const seats = joinEls((tb.seats || []).map((s) => {
    const el = seatNameEl(s);
    if (s.kind === 'bot' && botSentence(s.bot)) el.title = botSentence(s.bot);
    return el;
  }));
  const mine = getSeat(tb.id);
  const actions = [];
  if (kind === 'open') {
    actions.push(h('button.primary', { type: 'button', text: mine ? t('lobby.return') : t('lobby.join'), dataset: { join: tb.id },
      onclick: () => navigate(`/?table=${encodeURIComponent(tb.id)}`) }));
  } else if (kind === 'playing') {
    if (mine) actions.push(h('button.primary', { type: 'button', text: t('lobby.return'), onclick: () => navigate(`/?table=${encodeURIComponent(tb.id)}`) }));
    actions.push(h('button', { type: 'button', text: t('lobby.watch'), dataset: { watch: tb.id },
      onclick: () => navigate(`/?table=${encodeURIComponent(tb.id)}&watch=1`) }));
  } else {
    actions.push(h('button', { type: 'button', text: t('lobby.replay'), dataset: { replay: tb.id },
      onclick: () => navigate(`/?replay=${encodeURIComponent(tb.id)}`) }));
  }
  let extra = '';
  if (kind === 'finished' && tb.totals) {
    extra = t('lobby.totals', { totals: tb.totals.join(' · ') });
    if (tb.winners && tb.winners.length) {
      const names = tb.winners.map((s) => (tb.seats?.[s] ? seatNameEl(tb.seats[s]) : t('seat.player', { n: s + 1 })));
      extra = [extra, ' · ', tWith('table.winner', 'names', joinEls(names))];
    }
  }
  return h('li.table-row', { dataset: { table: tb.id } },
    h('div.tinfo', {}, h('strong', { text: gameTitle(tb.game) }), h('span.tseats', {}, seats),
      extra ? h('span.textra', {}, extra) : null),
    h('div.tact', {}, actions));
}

/** Tables per page of each lobby list ("More" asks for the next page). */
const LOBBY_PAGE = 20;

function listPanel(titleKey, id) {
  return h(`section.panel.list#${id}`, {}, h('h2', { text: t(titleKey) }), h('ul.tables', {}, h('li.empty', { text: t('common.loading') })));
}

export function showLobby(main) {
  const yourGames = yourGamesPanel(); // turns.js: the signed-in player's turn-based games, and the count in the title
  const left = h('div.col', {}, yourGames.el);
  const openP = listPanel('lobby.open_tables', 'open-tables');
  const playP = listPanel('lobby.playing_tables', 'playing-tables');
  const finP = listPanel('lobby.finished_tables', 'finished-tables');
  const linkIn = h('input#join-link', { type: 'text', placeholder: t('lobby.link_placeholder') });
  const joinP = h('section.panel', {}, h('h2', { text: t('lobby.join_title') }),
    h('form.inline', {
      onsubmit: (e) => {
        e.preventDefault();
        const v = linkIn.value.trim();
        let id = v;
        try { const u = new URL(v, location.href); id = u.searchParams.get('table') || v; } catch { /* a bare id */ }
        if (id) navigate(`/?table=${encodeURIComponent(id)}`);
      },
    }, linkIn, h('button', { type: 'submit', text: t('lobby.go') })));
  const right = h('div.col', {}, joinP, openP, playP, finP);
  fill(main, h('div.lobby', {}, left, right));
  main.className = 'lobby-page';

  const name = h('input#player-name', { type: 'text', value: getName(), maxlength: '24', placeholder: t('lobby.name_placeholder'), autocomplete: 'nickname' });
  let signedIn = false; // a guest has no games to ask for
  const who = whoAmI();
  who.then((me) => { signedIn = !!me; if (me) yourGames.refresh(); });
  Promise.all([api.games(), who]).then(([games, me]) => fill(left, yourGames.el, playNowPanel(games, name), createPanel(games, name, !!me)))
    .catch((e) => fill(left, h('section.panel', {}, h('p.error', { text: t('lobby.load_failed', { reason: errorText(e) }) }))));

  // Each list shows as many pages as asked for with its "More" button (the server's X-Next-Cursor paging), all
  // of them again at each refresh, so a list read further down stays as long.
  const lists = [[openP, 'open'], [playP, 'playing'], [finP, 'finished']].map(([panel, kind]) => {
    const more = h('button.more', { type: 'button', hidden: true, dataset: { more: kind }, text: t('lobby.more') });
    panel.append(more);
    const list = { panel, kind, pages: 1, more, busy: false, again: false };
    more.addEventListener('click', () => { list.pages += 1; load(list); });
    return list;
  });

  async function load(list) {
    if (list.busy) { list.again = true; return; } // a load under way: run again once it ends
    list.busy = true;
    list.more.disabled = true;
    try {
      const rows = [];
      let next = null;
      for (let i = 0; i < list.pages; i++) {
        const got = await api.tablesPage(list.kind, LOBBY_PAGE, next);
        rows.push(...got.rows);
        next = got.next;
        if (!next) break;
      }
      const seen = new Set();
      const unique = rows.filter((r) => !seen.has(r.id) && seen.add(r.id));
      fill(list.panel.querySelector('ul'), unique.length ? unique.map((r) => tableRow(r, list.kind)) : h('li.empty', { text: t('lobby.none') }));
      list.more.hidden = !next;
    } catch {
      fill(list.panel.querySelector('ul'), h('li.empty', { text: t('common.unavailable') }));
      list.more.hidden = true;
    } finally {
      list.busy = false;
      list.more.disabled = false;
      if (list.again) { list.again = false; load(list); }
    }
  }

  async function refresh() {
    if (signedIn) yourGames.refresh(); // the "Your games" panel (turns.js)
    for (const list of lists) await load(list);
  }
  refresh();
  const timer = setInterval(refresh, 5000);
  return () => { clearInterval(timer); yourGames.stop(); };
}
