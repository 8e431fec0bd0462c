// The lobby: create a table (every option with its default, each seat a friend or a bot), join by link,
// open tables, tables in play to watch, finished games to replay.
import { h, fill, toast } from './util.js';
import { t, tOr } from './i18n.js';
import { api, saveSeat, getName, saveName, getSeat } from './api.js';
import { navigate } from './main.js';

export function gameTitle(game) { return tOr(`game.${game}`, game); }

export function botLabel(spec) {
  if (!spec) return '';
  const [name, level] = spec.split(':');
  const n = tOr(`bot.name.${name}`, name);
  return level ? `${n} (${tOr(`bot.level.${level}`, level)})` : n;
}

export function seatName(seat) {
  if (!seat) return '';
  if (seat.kind === 'open') return t('seat.open');
  if (seat.kind === 'bot') return `${seat.name || t('seat.bot')} · ${botLabel(seat.bot)}`;
  return seat.name || t('seat.player', { n: seat.seat + 1 });
}

function optionField(spec, game) {
  const id = `opt-${spec.name}`;
  const label = tOr(`opt.${spec.name}`, spec.name);
  const help = tOr(`opt.${spec.name}.help`, '');
  let input;
  if (spec.kind === 'bool') {
    input = h('input', { type: 'checkbox', id, name: spec.name, checked: !!spec.default });
  } else if (spec.kind === 'choice') {
    input = h('select', { id, name: spec.name },
      (spec.choices || []).map((c) => h('option', { value: JSON.stringify(c), selected: c === spec.default, text: String(c) })));
  } else {
    input = h('input', {
      type: 'number', id, name: spec.name, value: String(spec.default),
      min: spec.minimum ?? undefined, max: spec.maximum ?? undefined, step: '1', inputmode: 'numeric',
    });
  }
  input.dataset.kind = spec.kind;
  const defText = spec.kind === 'bool' ? t(spec.default ? 'common.on' : 'common.off') : String(spec.default);
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

function createPanel(games) {
  const box = h('section.panel.create', { 'aria-labelledby': 'create-h' });
  let game = games[0]?.game;
  const name = h('input#player-name', { type: 'text', value: getName(), maxlength: '24', placeholder: t('lobby.name_placeholder'), autocomplete: 'nickname' });
  const gamePick = h('div.segmented', { role: 'radiogroup', 'aria-label': t('lobby.game') });
  const optsBox = h('div.options');
  const seatsBox = h('div.seats-editor');
  const seed = h('input#seed', { type: 'number', placeholder: t('lobby.seed_placeholder'), min: '0' });
  const form = h('form', {
    onsubmit: async (e) => {
      e.preventDefault();
      const info = games.find((g) => g.game === game);
      const options = readOptions(optsBox, info.options);
      const seats = [...seatsBox.querySelectorAll('select.seat-kind')].map((sel, i) =>
        i === 0 || sel.value === 'open' ? { kind: 'open' } : { kind: 'bot', bot: sel.value });
      const body = { game, options, seats, name: name.value.trim() || t('lobby.default_name') };
      if (seed.value !== '') body.seed = Number(seed.value);
      saveName(name.value.trim());
      try {
        const res = await api.create(body);
        saveSeat(res.table.id, res.seat, res.token);
        navigate(`/?table=${encodeURIComponent(res.table.id)}`);
      } catch (err) {
        toast(t('lobby.create_failed', { reason: err.message }), 'error', 5000);
      }
    },
  });

  function seatCount() {
    const el = optsBox.querySelector('[name="players"]');
    const n = el ? Number(el.value) : 2;
    return Math.max(1, Math.min(8, Number.isFinite(n) ? n : 2));
  }

  function drawSeats() {
    const info = games.find((g) => g.game === game);
    const old = [...seatsBox.querySelectorAll('select.seat-kind')].map((s) => s.value);
    const bots = info.bots || [];
    const defBot = bots[Math.min(1, bots.length - 1)]?.spec;
    const rows = [];
    for (let i = 0; i < seatCount(); i++) {
      const sel = h('select.seat-kind', { 'aria-label': t('lobby.seat_n', { n: i + 1 }), dataset: { seat: String(i) }, disabled: i === 0 },
        i === 0 ? h('option', { value: 'open', text: t('lobby.you') }) : null,
        i > 0 ? h('option', { value: 'open', text: t('lobby.friend') }) : null,
        i > 0 ? bots.map((b) => h('option', { value: b.spec, text: t('lobby.bot_option', { bot: botLabel(b.spec) }) })) : null);
      if (i > 0) sel.value = old[i] ?? defBot ?? 'open';
      rows.push(h('div.seat-row', {}, h('span.seatno', { text: t('lobby.seat_n', { n: i + 1 }) }), sel));
    }
    fill(seatsBox, rows);
  }

  function drawOptions() {
    const info = games.find((g) => g.game === game);
    fill(optsBox, info.options.map((s) => optionField(s, game)));
    optsBox.querySelector('[name="players"]')?.addEventListener('input', drawSeats);
    seatsBox.replaceChildren();
    drawSeats();
  }

  function drawGames() {
    fill(gamePick, games.map((g) => h('button' + (g.game === game ? '.on' : ''), {
      type: 'button', role: 'radio', 'aria-checked': String(g.game === game), dataset: { game: g.game },
      onclick: () => { game = g.game; drawGames(); drawOptions(); },
    }, gameTitle(g.game))));
  }
  drawGames();
  drawOptions();

  fill(form,
    h('div.field', {}, h('label', { for: 'player-name', text: t('lobby.your_name') }), name),
    h('div.field', {}, h('span.label', { text: t('lobby.game') }), gamePick),
    h('fieldset', {}, h('legend', { text: t('lobby.seats') }), seatsBox),
    h('fieldset', {}, h('legend', { text: t('lobby.options') }), optsBox),
    h('details.advanced', {}, h('summary', { text: t('lobby.advanced') }),
      h('div.field', {}, h('label', { for: 'seed', text: t('lobby.seed') }), seed)),
    h('button.primary#create', { type: 'submit', text: t('lobby.create') }));
  fill(box, h('h2#create-h', { text: t('lobby.create_title') }), form);
  return box;
}

function tableRow(tb, kind) {
  const seats = (tb.seats || []).map(seatName).join(', ');
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
      const names = tb.winners.map((s) => tb.seats?.[s]?.name || t('seat.player', { n: s + 1 }));
      extra += ' · ' + t('table.winner', { names: names.join(', ') });
    }
  }
  return h('li.table-row', { dataset: { table: tb.id } },
    h('div.tinfo', {}, h('strong', { text: gameTitle(tb.game) }), h('span.tseats', { text: seats }),
      extra ? h('span.textra', { text: extra }) : null),
    h('div.tact', {}, actions));
}

function listPanel(titleKey, id) {
  return h(`section.panel.list#${id}`, {}, h('h2', { text: t(titleKey) }), h('ul.tables', {}, h('li.empty', { text: t('common.loading') })));
}

export function showLobby(main) {
  const left = h('div.col');
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

  api.games().then((games) => fill(left, createPanel(games)))
    .catch((e) => fill(left, h('section.panel', {}, h('p.error', { text: t('lobby.load_failed', { reason: e.message }) }))));

  async function refresh() {
    const parts = [[openP, () => api.tables('open'), 'open'], [playP, () => api.tables('playing'), 'playing'],
      [finP, () => api.finished(), 'finished']];
    for (const [panel, get, kind] of parts) {
      try {
        const rows = (await get()).slice(0, 20);
        fill(panel.querySelector('ul'), rows.length ? rows.map((r) => tableRow(r, kind)) : h('li.empty', { text: t('lobby.none') }));
      } catch {
        fill(panel.querySelector('ul'), h('li.empty', { text: t('common.unavailable') }));
      }
    }
  }
  refresh();
  const timer = setInterval(refresh, 5000);
  return () => clearInterval(timer);
}
