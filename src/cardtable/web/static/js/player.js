// A player's page (/?player=NAME): rating per game with its history drawn as an SVG chart, win rate, points per
// hand, Nerts calls and cards left (Nerts), anemones taken (Enemy Anemone), and recent matches with their replays.
import { h, fill } from './util.js';
import { bdi, botName, botSentence } from './names.js';
import { currentLanguage } from './i18n.js';
import { loadPlayersWords, tp, refusal, call, num } from './players_i18n.js';

const SVG = 'http://www.w3.org/2000/svg';

function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

/** A player's name as shown: a bot level as names.js's botName ("Bot (Intermediate)", or "Bot 2 (Intermediate)"
 * given the bot's `seat` in a match), a person as is, a deleted one as such. */
export function playerLabel(name, kind, seat = null) {
  if (kind === 'deleted' || name === null || name === undefined) return tp('player.deleted');
  return kind === 'bot' ? botName(name, { seat }) : name;
}

/** The rating over time: ordinals after each rated match (and 0 before the first), as an SVG line chart; `rated`
 * is the number of rated matches (more than the points when the history holds only the latest). */
export function ratingChart(history, label, width = 640, rated = history.length) {
  const W = Math.max(280, Math.round(width)), H = W < 500 ? 170 : 210, L = 40, R = 14, T = 14, B = 26;
  const values = [0, ...history.map((p) => p.ordinal)];
  let lo = Math.min(...values), hi = Math.max(...values);
  if (hi - lo < 2) { lo -= 1; hi += 1; }
  const pad = (hi - lo) * 0.08; lo -= pad; hi += pad;
  const x = (i) => L + (values.length === 1 ? 0 : (i * (W - L - R)) / (values.length - 1));
  const y = (v) => T + ((hi - v) * (H - T - B)) / (hi - lo);
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'ratingchart', role: 'img', 'aria-label': label, width: W, height: H });
  svg.append(s('title', {}, label));
  const raw = (hi - lo) / 4, mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((x) => x >= raw);
  const digits = step < 1 ? Math.ceil(-Math.log10(step)) : 0;
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9; v += step) {
    svg.append(s('line', { x1: L, x2: W - R, y1: y(v), y2: y(v), class: 'grid' }));
    svg.append(s('text', { x: L - 6, y: y(v) + 4, class: 'tick', 'text-anchor': 'end' }, num(Math.abs(v) < step / 2 ? 0 : v, digits)));
  }
  if (lo < 0 && hi > 0) svg.append(s('line', { x1: L, x2: W - R, y1: y(0), y2: y(0), class: 'zero' }));
  svg.append(s('text', { x: L, y: H - 6, class: 'tick', 'text-anchor': 'start' }, tp('player.chart_start')));
  svg.append(s('text', { x: W - R, y: H - 6, class: 'tick chartcount', 'text-anchor': 'end' }, rated > history.length
    ? tp('player.chart_last', { n: history.length, m: rated }) : tp('player.chart_matches', { n: history.length })));
  const pts = values.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
  svg.append(s('polyline', { points: pts, class: 'line' }));
  if (values.length <= 60) values.forEach((v, i) => svg.append(s('circle', { cx: x(i), cy: y(v), r: 3.5, class: i === values.length - 1 ? 'dot last' : 'dot' })));
  return svg;
}

function stat(label, value) {
  return h('div.stat', {}, h('span.statv', { text: value }), h('span.statl', { text: label }));
}

function pct(x) { return x === null || x === undefined ? '–' : `${num(x * 100, 0)}%`; }
function fig(x, d = 1) { return x === null || x === undefined ? '–' : num(x, d); }

function gamePanel(game, g, name, width) {
  const rated = g.rating ? g.rating.matches : 0;
  const unrated = Math.max(0, g.matches - rated);
  const stats = [
    stat(tp('player.rating'), g.rating ? num(g.rating.ordinal, 1) : '–'),
    stat(tp('player.matches'), String(g.matches)),
    stat(tp('player.win_rate'), pct(g.win_rate)),
    stat(tp('player.points_per_hand'), fig(g.points_per_hand)),
  ];
  if (game === 'nerts') {
    stats.push(stat(tp('player.nerts_calls'), String(g.nerts_calls)), stat(tp('player.cards_left'), fig(g.cards_left_per_hand)));
  } else if (game === 'anemone') {
    stats.push(stat(tp('player.anemones'), String(g.anemones)));
  }
  return h(`section.panel.gamepanel`, { dataset: { game } },
    h('h2', { text: tp(`game.${game}`) }),
    h('div.stats', {}, stats),
    g.history.length ? h('figure.chartbox', {}, ratingChart(g.history, tp('player.chart_label', { name, game: tp(`game.${game}`) }), width, rated),
      h('figcaption.muted.small', { text: tp('player.chart_caption') })) : h('p.muted', { text: tp('player.no_rating') }),
    unrated > 0 ? h('p.muted.small.unrated', { text: tp('player.unrated', { n: unrated, m: g.matches }) }) : null);
}

/** One match of the player's list: date, game, place (each seat's when the player held several), points, the
 * change of rating (labelled as such), the others at the table and the replay link. */
function matchRow(m, navigate) {
  const when = new Date(m.finished).toLocaleDateString(currentLanguage(), { month: 'short', day: 'numeric' });
  const delta = m.ordinal_after !== null && m.ordinal_before !== null ? m.ordinal_after - m.ordinal_before : null;
  const mine = m.mine || [m.seat];
  const own = m.seats.filter((x) => mine.includes(x.seat)).sort((x, y) => x.rank - y.rank || x.seat - y.seat);  // best first
  const others = m.seats.filter((x) => !mine.includes(x.seat)).map((x) => {
    const label = x.kind === 'guest' ? (x.name || tp('player.guest')) : playerLabel(x.name, x.kind, x.seat);
    if (x.kind === 'guest' || x.kind === 'deleted' || !x.name) return h('span.opp', {}, bdi(label));
    const href = `/?player=${encodeURIComponent(x.name)}`;
    return h('a.opp', { href, onclick: (e) => { e.preventDefault(); navigate(href); } }, bdi(label));
  });
  const place = own.length > 1
    ? tp('player.places', { ranks: own.map((x) => x.rank).join(', '), players: m.players })
    : tp('player.place', { rank: m.rank, players: m.players });
  const points = own.length > 1 ? own.map((x) => num(x.points, 0)).join(' / ') : num(m.points, 0);
  const signed = delta === null ? '' : `${delta >= 0 ? '+' : '−'}${num(Math.abs(delta), 1)}`;
  const replay = `/?replay=${encodeURIComponent(m.table)}`;
  return h('li.matchrow', { dataset: { table: m.table } },
    h('span.when', { text: when }),
    h('span.mgame', { text: tp(`game.${m.game}`) }),
    h('span.place' + (m.won ? '.won' : ''), { text: m.won ? `${tp('player.won')} · ${place}` : place }),
    h('span.pts', { text: tp('player.points', { points }) }),
    h('span.delta' + (delta === null ? '' : delta >= 0 ? '.up' : '.down'), { text: delta === null ? '' : tp('player.rating_change', { delta: signed }) }),
    h('span.opps', {}, tp('player.against'), ' ', others.flatMap((el, i) => (i ? [', ', el] : [el]))),
    h('a.replay', { href: replay, text: tp('player.replay'), onclick: (e) => { e.preventDefault(); navigate(replay); } }));
}

/** The chart's width in pixels: its panel's inner width (panels side by side when there is room). */
function chartWidth(main, panels) {
  const inner = Math.min(main.clientWidth || 360, 1100) - 2 * 16;
  const perPanel = panels > 1 && inner >= 2 * 340 + 16 ? (inner - 16) / 2 : inner;
  return perPanel - 2 * 19 - 2;
}

/** Draw the page of player `name` into main. */
export function showPlayer(main, name, navigate) {
  main.className = 'player-page';
  let live = true;
  (async () => {
    await loadPlayersWords();
    document.title = name;
    fill(main, h('p.muted', { text: tp('common.loading') }));
    let page, matches;
    try {
      [page, matches] = await Promise.all([
        call('GET', `/api/players/${encodeURIComponent(name)}`),
        call('GET', `/api/players/${encodeURIComponent(name)}/matches?limit=10`)]);
    } catch (err) {
      if (live) fill(main, h('section.panel', {}, h('p.error', { text: refusal(err) })));
      return;
    }
    if (!live) return;
    const title = playerLabel(page.name, page.kind);
    document.title = title;
    const games = Object.entries(page.games);
    const list = h('ul.matches', {}, matches.matches.length ? matches.matches.map((m) => matchRow(m, navigate)) : h('li.muted', { text: tp('player.no_matches') }));
    let next = matches.next;
    const more = h('button#more-matches', { type: 'button', text: tp('player.more'), hidden: !next,
      onclick: async () => {
        const older = await call('GET', `/api/players/${encodeURIComponent(name)}/matches?limit=10&before=${encodeURIComponent(next)}`);
        older.matches.forEach((m) => list.append(matchRow(m, navigate)));
        next = older.next; more.hidden = !next;
      } });
    fill(main, h('div.playerpage', {},
      h('header.playerhead', {}, h('h1', {}, bdi(title)),
        h('span.muted.small', { text: tp('player.since', { date: new Date(page.created).toLocaleDateString(currentLanguage()) }) }),
        page.kind === 'bot' && botSentence(page.name) ? h('p.muted.small.botdesc', { text: botSentence(page.name) }) : null),
      h('div.gamepanels', {}, games.length ? games.map(([g, info]) => gamePanel(g, info, title, chartWidth(main, games.length))) : h('section.panel', {}, h('p.muted', { text: tp('player.no_matches') }))),
      h('section.panel', {}, h('h2', { text: tp('player.recent') }), list, more)));
  })();
  return () => { live = false; };
}
