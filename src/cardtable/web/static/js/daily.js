// The daily deal page (/?daily=anemone, /?daily=nerts, /?daily=GAME&date=YYYY-MM-DD for a past day's standings):
// the day's deal (UTC date, its bots, how many played), a Play button (POST /api/daily/{game}/play, one try per
// account per day; guests play unranked), your result (score, rank, percent, streak), the standings with the
// spread of scores, and the best replay of the day once you have played (docs/web.md, "The daily deal").
import { h, fill, toast, loadStyles } from './util.js';
import { t, currentLanguage } from './i18n.js';
import { call, errorText, saveSeat, getName } from './api.js';
import { navigate } from './nav.js';
import { gameTitle, botName, bdi, tWith } from './names.js';
import { whoAmI } from './players_i18n.js';

export const DAILY_GAMES = ['anemone', 'nerts'];
const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** Load this page's stylesheet (css/daily.css) once. */
export function dailyStyles() { loadStyles('daily'); }

/** The daily API (docs/protocol.md, "Daily deal"). */
export const dailyApi = {
  /** {date, game, options, bots, played, you, streak, best} of today's deal. */
  today: (game) => call('GET', `/api/daily/${encodeURIComponent(game)}`),
  /** [{rank, name, score, percent, table}] of `date` (YYYY-MM-DD, UTC; today when null), best first. */
  standings: (game, date = null) => call('GET', `/api/daily/${encodeURIComponent(game)}/standings${date ? `?date=${encodeURIComponent(date)}` : ''}`),
  /** {table, seat, token}: a seat at a table dealt today's deal; 409 `daily.played` after the day's try. */
  play: (game, name) => call('POST', `/api/daily/${encodeURIComponent(game)}/play`, { name }),
};

/** A number in the page's language, at most `digits` decimals. */
function num(x, digits = 1) {
  return Number(x).toLocaleString(currentLanguage(), { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

/** A UTC date "2026-11-27" as the page's language writes it ("Friday, November 27, 2026"). */
export function dayText(date) {
  const [y, m, d] = date.split('-').map(Number);
  return new Date(Date.UTC(y, m - 1, d)).toLocaleDateString(currentLanguage(), {
    weekday: 'long', year: 'numeric', month: 'long', day: 'numeric', timeZone: 'UTC' });
}

/** A percentage of matchpoints: "62.5%". */
function pct(x) { return x === null || x === undefined ? '–' : `${num(x, 1)}%`; }

/** The median of numbers (sorted or not). */
function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const k = Math.floor(s.length / 2);
  return s.length % 2 ? s[k] : (s[k - 1] + s[k]) / 2;
}

/**
 * The spread of the day's scores: one bar per score (or per range of scores when they are many), the bar that
 * holds `mine` highlighted; a text alternative (`role="img"` with an `aria-label`: how many results, lowest,
 * median, highest, yours), also shown as the caption, and each bar's count in its title.
 */
export function spreadChart(scores, mine = null) {
  const lo = Math.min(...scores), hi = Math.max(...scores);
  const width = Math.max(1, Math.ceil((hi - lo + 1) / 16)); // at most 16 bars
  const bins = [];
  for (let from = lo; from <= hi; from += width) bins.push({ from, to: Math.min(hi, from + width - 1), n: 0 });
  for (const x of scores) bins[Math.floor((x - lo) / width)].n += 1;
  const top = Math.max(...bins.map((b) => b.n));
  const label = [t('daily.spread_label', { n: scores.length, min: num(lo, 0), max: num(hi, 0), median: num(median(scores), 1) }),
    mine === null ? '' : t('daily.spread_yours', { score: num(mine, 0) })].filter(Boolean).join(' ');
  const bars = bins.map((b) => {
    const yours = mine !== null && mine >= b.from && mine <= b.to;
    const range = b.from === b.to ? num(b.from, 0) : `${num(b.from, 0)}–${num(b.to, 0)}`;
    return h('div.sbar' + (yours ? '.mine' : ''), { title: t('daily.spread_bar', { score: range, n: b.n }), style: { '--h': `${(100 * b.n) / top}%` } },
      h('span.scount', { text: b.n ? String(b.n) : '' }), h('span.sfill'));
  });
  return h('figure.spreadbox', {},
    h('div.spread', { role: 'img', 'aria-label': label }, bars),
    h('div.saxis', { 'aria-hidden': 'true' }, h('span', { text: num(lo, 0) }), h('span', { text: num(hi, 0) })),
    h('figcaption.muted.small', { 'aria-hidden': 'true', text: label }));
}

/** The standings table: rank, name, score, percent; the signed-in player's row highlighted (`tr.mine`). */
function standingsTable(rows, me) {
  return h('table.dailytable', {},
    h('thead', {}, h('tr', {}, h('th.num', { scope: 'col', text: t('daily.rank') }), h('th', { scope: 'col', text: t('daily.player') }),
      h('th.num', { scope: 'col', text: t('daily.score') }), h('th.num', { scope: 'col', text: t('daily.percent') }))),
    h('tbody', {}, rows.map((r) => {
      const mine = !!me && r.name === me;
      return h('tr' + (mine ? '.mine' : ''), { dataset: { name: r.name }, 'aria-current': mine ? 'true' : undefined },
        h('td.num', { text: String(r.rank) }),
        h('td.name', {}, bdi(r.name), mine ? h('span.youmark', { text: ` ${t('daily.you_mark')}` }) : null),
        h('td.num', { text: num(r.score, 0) }),
        h('td.num.pct', { text: pct(r.percent) }));
    })));
}

function stat(label, value, cls = '') {
  return h(`div.dstat${cls}`, {}, h('span.dstatv', { text: value }), h('span.dstatl', { text: label }));
}

function go(href) {
  return (e) => { if (e.button === 0 && !e.ctrlKey && !e.metaKey) { e.preventDefault(); navigate(href); } };
}

/** Draw the daily page of `game` into main; `date` (YYYY-MM-DD) shows that day's standings. */
export function showDaily(main, game, date = null) {
  dailyStyles();
  main.className = 'daily-page';
  if (!DAILY_GAMES.includes(game)) game = 'anemone';
  if (date && !DATE.test(date)) date = null;
  let live = true;
  document.title = t('daily.title', { game: gameTitle(game) });
  const tabs = h('nav.segmented.dailytabs', { 'aria-label': t('daily.games') }, DAILY_GAMES.map((g) => h('a' + (g === game ? '.on' : ''), {
    href: `/?daily=${g}`, text: gameTitle(g), 'aria-current': g === game ? 'page' : undefined, onclick: go(`/?daily=${g}`),
  })));
  const dealBox = h('section.panel.dailydeal', { 'aria-labelledby': 'daily-h' }, h('p.muted', { text: t('common.loading') }));
  const youBox = h('section.panel.dailyyou#daily-you', { hidden: true, 'aria-labelledby': 'daily-you-h' });
  const standBox = h('section.panel.dailystand#daily-standings', { 'aria-labelledby': 'daily-stand-h' });
  fill(main, h('div.dailyhead', {}, h('h1#daily-h', { text: t('daily.title', { game: gameTitle(game) }) }), tabs),
    h('div.dailygrid', {}, h('div.dcol', {}, dealBox, youBox), h('div.dcol', {}, standBox)));

  (async () => {
    let info, me;
    try { [info, me] = await Promise.all([dailyApi.today(game), whoAmI()]); } catch (err) {
      if (live) fill(dealBox, h('p.error', { text: t('daily.failed', { reason: errorText(err, game) }) }));
      return;
    }
    if (!live) return;
    const shown = date || info.date;
    drawDeal(info, me);
    const rows = await drawStandings(info, me, shown);
    if (live) drawYou(info, shown === info.date && rows ? rows.length : info.played);
  })();

  function drawDeal(info, me) {
    const msg = h('p.dailymsg#daily-msg', { role: 'status' });
    const played = !!info.you && !!me;
    const btn = h('button.primary#daily-play', {
      type: 'button', disabled: played,
      text: played ? t('daily.played_today') : t('daily.play'),
      onclick: async () => {
        btn.disabled = true;
        msg.textContent = '';
        try {
          const res = await dailyApi.play(game, getName() || t('lobby.default_name'));
          const id = typeof res.table === 'string' ? res.table : res.table?.id;
          saveSeat(id, res.seat, res.token);
          navigate(`/?table=${encodeURIComponent(id)}`);
        } catch (err) {
          if (err.code === 'daily.played') { // one try a day: say so, and the button says it too
            msg.textContent = errorText(err, game);
            btn.textContent = t('daily.played_today');
          } else {
            msg.textContent = t('daily.play_failed', { reason: errorText(err, game) });
            btn.disabled = false;
            toast(msg.textContent, 'error', 5000);
          }
          msg.classList.add('error');
        }
      },
    });
    const bots = (info.bots || []).map((spec, k) => botName(spec, { seat: k + 1 }));
    fill(dealBox,
      h('h2', { text: t('daily.today_deal') }),
      h('p.dailydate', {}, h('time', { datetime: info.date, text: dayText(info.date) }), ' ', h('span.muted', { text: t('daily.utc') })),
      h('p', { text: t('daily.bots', { bots: bots.join(t('list.sep')) }) }),
      h('p#daily-count', { text: t('daily.played_n', { n: info.played ?? 0 }) }),
      h('div.dailyplay', {}, btn),
      msg,
      me ? h('p.muted.small', { text: t('daily.one_try') })
        : h('p.dailyguest#daily-guest', {}, t('daily.guest_note'), ' ',
          h('a', { href: '/?account=1', text: t('daily.sign_in'), onclick: go('/?account=1') })),
      h('p.muted.small', { text: t('daily.new_each_day') }));
  }

  /** Your result today; `results` the number of today's scored results (your rank is among them). */
  function drawYou(info, results) {
    const you = info.you;
    if (!you && !info.streak && !info.best) { youBox.hidden = true; return; }
    youBox.hidden = false;
    const items = [];
    if (you && you.finished && (you.score === null || you.score === undefined)) { // gone before the end: unscored
      items.push(h('p#daily-no-score', { text: t('daily.no_score') }));
      if (info.streak) items.push(h('div.dstats', {}, stat(t('daily.streak'), t('daily.streak_days', { n: info.streak }), '.streak')));
    } else if (you && you.finished) {
      items.push(h('div.dstats', {},
        stat(t('daily.score'), num(you.score, 0)),
        stat(t('daily.rank'), you.rank ? t('daily.rank_of', { rank: you.rank, n: Math.max(results ?? 0, you.rank) }) : '–'),
        stat(t('daily.percent'), pct(you.percent)),
        stat(t('daily.streak'), t('daily.streak_days', { n: info.streak ?? 0 }), '.streak')));
      items.push(h('p', {}, h('a#daily-your-replay', { href: `/?replay=${encodeURIComponent(you.table)}`, text: t('daily.your_replay'),
        onclick: go(`/?replay=${encodeURIComponent(you.table)}`) })));
    } else if (you) {
      items.push(h('p', { text: t('daily.in_play') }),
        h('p', {}, h('a.button#daily-return', { href: `/?table=${encodeURIComponent(you.table)}`, text: t('daily.return'),
          onclick: go(`/?table=${encodeURIComponent(you.table)}`) })));
      if (info.streak) items.push(h('div.dstats', {}, stat(t('daily.streak'), t('daily.streak_days', { n: info.streak }), '.streak')));
    } else if (info.streak) {
      items.push(h('div.dstats', {}, stat(t('daily.streak'), t('daily.streak_days', { n: info.streak }), '.streak')));
    }
    if (info.best) {
      const href = `/?replay=${encodeURIComponent(info.best.table)}`;
      items.push(h('p.dailybest', {}, h('a#daily-best', { href, onclick: go(href) },
        tWith('daily.best', 'name', bdi(info.best.name), { score: num(info.best.score, 0) }))));
    } else if (you) {
      items.push(h('p.muted.small', { text: t('daily.best_later') }));
    }
    fill(youBox, h('h2#daily-you-h', { text: t('daily.your_result') }), items);
  }

  async function drawStandings(info, me, shown) {
    const picker = h('input#daily-date', { type: 'date', value: shown, max: info.date, required: true,
      onchange: () => {
        const v = picker.value;
        if (DATE.test(v) && v <= info.date) navigate(v === info.date ? `/?daily=${game}` : `/?daily=${game}&date=${v}`);
      } });
    const body = h('div.standbody', {}, h('p.muted', { text: t('common.loading') }));
    fill(standBox,
      h('div.standhead', {}, h('h2#daily-stand-h', { text: shown === info.date ? t('daily.standings') : t('daily.standings_of', { date: dayText(shown) }) }),
        h('label.dailypick', {}, h('span', { text: t('daily.day') }), picker),
        shown !== info.date ? h('a#daily-today', { href: `/?daily=${game}`, text: t('daily.back_today'), onclick: go(`/?daily=${game}`) }) : null),
      body);
    let rows;
    try { rows = await dailyApi.standings(game, shown === info.date ? null : shown); } catch (err) {
      if (live) fill(body, h('p.error', { text: t('daily.failed', { reason: errorText(err, game) }) }));
      return null;
    }
    if (!live) return null;
    if (!rows.length) { fill(body, h('p.muted#daily-empty', { text: t('daily.no_results') })); return rows; }
    const mineRow = me ? rows.find((r) => r.name === me.name) : null;
    fill(body,
      h('div.tablewrap', {}, standingsTable(rows, me?.name)),
      h('p.muted.small', { text: t('daily.percent_explain') }),
      h('h3', { text: t('daily.spread') }),
      spreadChart(rows.map((r) => r.score), mineRow ? mineRow.score : null));
    return rows;
  }

  return () => { live = false; };
}
